"""Console and secret helpers every layer may use: progress bars (``progress``), quiet third-party
loggers (``quiet``), terminal-safe text (``terminal``), secrets masked in URLs and logs
(``redaction``), exports loaded on first use (``lazy``) and one-holder file locks (``locks``).
Imports nothing else of ``rag_graphs``."""
