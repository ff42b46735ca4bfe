"""localneon: a local Neon-compatible MCP server and Neon-shaped REST API over an embedded PostgreSQL.

Rooms, lowest first (``tests/test_architecture.py`` keeps each to what it may import):

- ``settings``: every environment variable localneon reads, with its default.
- ``cluster/``: the PostgreSQL cluster (``pg``), its leases and advisory locks.
- ``engine/``: the Neon model on that cluster (projects, branches, the catalog, SQL bounds and
  isolation, schema diffs, Neon Auth's state, orphan collection); no MCP, no HTTP.
- ``mcp/``: the MCP server and its tools; ``rest/``: the REST API; ``sql_http/``: SQL over HTTP.
- ``serve/``: the command line and the ASGI app joining the faces; ``measure/``: timings.

The top-level modules are the commands: ``python -m localneon`` (the server) and
``python -m localneon.{pg,gc,snapshot,bench}``, each a thin entry into its room (and
``python -m localneon.measure.least_work``, the database work a trial cannot avoid).
"""
