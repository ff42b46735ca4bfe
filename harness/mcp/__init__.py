"""The MCP side of a trial: the client, the local server's process, the tool view, the tool-count probe."""
