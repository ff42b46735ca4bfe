"""What the harness needs from a particular MCP server, one package per server family.

The generic harness (MCP client, tool view, agent loop, results store) talks to any MCP server.
Everything that makes a trial *safe and comparable* needs more than MCP: a sandbox per trial, a
way to read the branch's state before and after, and what the server's tools are for (`roles.py`).
For Neon (and servers that speak Neon's REST API, like `localneon`) that lives in `neon/`; for
Bytebase's DBHub, a server with no staging tool, in `dbhub/`. `family.py` is the interface the
trial runner uses, `registry.py` chooses a family and serves the scorers its roles.
"""
