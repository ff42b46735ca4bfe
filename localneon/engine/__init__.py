"""The Neon model on one PostgreSQL cluster, with nothing of MCP or HTTP in it.

``branching`` (the ``Neon`` class: projects, branches, databases, endpoints), ``catalog`` (their rows),
``ids``, ``errors``; what keeps one project's SQL from another's and from the cluster (``isolation``,
``guards``, ``bounds``), running a model's SQL (``sql``, ``explain_options``), comparing schemas
(``schema_diff``), Neon Auth's state (``neon_auth``) and collecting orphans (``gc``). The MCP tools
and the REST API are two faces of this package.
"""
