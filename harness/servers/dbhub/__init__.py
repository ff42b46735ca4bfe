"""DBHub's family: Bytebase's DBHub MCP server (`EVAL_SERVER=dbhub`), a second family beside Neon's.

Only the conventions (tool names and roles) are light to import; import the rest from its module:
`family`, `backend`, `stdio`, `cases`, `published`.
"""
