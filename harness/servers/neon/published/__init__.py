"""Neon's published MCP server (npm `@neondatabase/mcp-server-neon`) as a server under test.

`EVAL_SERVER=neon-npm` runs the version pinned in `package.json` / `package-lock.json` here,
installed on first use with `npm ci` (`install.py`), as a stdio server against the harness's
localneon (or the API `NEON_API_URL` names), with its SQL sent to that API's `/sql` by
`sql-endpoint.mjs`, a `node --import` preload (see docs/neon-server-code.md).
"""
