"""The models and how nodes call them: chat and embedding models by spec (``models``), the
in-process llama.cpp chat model the embedded spec runs on (``llama``), the one
node-body driver, sync and async (``calls``), structured output (``structured``), run failures
(``faults``), agent tools (``tools``) and web search by spec (``web``).

May import ``prompts``, ``rag_graphs.state`` and ``rag_graphs.config``; never nodes, methods or
the commands.
"""
