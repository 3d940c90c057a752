"""What the LangGraph server loads beside the method graphs (``langgraph.json``): the auth handler
that turns a caller's identity into the access every search of their runs applies, the
indexing graph (add, delete, relabel) served next to the questions, and the MCP endpoint that
offers every graph to an agent as a tool (``mcp_server``; what the tools say and return:
``mcp_tools``)."""
