"""MCP server: PRME tools for agents over stdio and streamable HTTP."""
