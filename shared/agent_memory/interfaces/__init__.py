"""What people use: the command line, the terminal chat, the MCP server and the memory inspector."""
