"""What the LangGraph server loads beside the method graphs (``langgraph.json``): the auth handler
that turns a caller's identity into the access every search of their runs applies, and the
indexing graph (add, delete, relabel) served next to the questions."""
