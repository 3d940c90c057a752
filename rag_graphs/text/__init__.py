"""What models read and write besides prompts: answers (``answers``), numbered passages and
citations (``citations``), few-shot demonstrations (``demonstrations``), the ``auto`` router's
question kinds (``question_kinds``) and JSONL files a user gives (``jsonl``).

May import ``prompts``, ``rag_graphs.store.index`` and ``rag_graphs.state``; never nodes, methods or
the commands.
"""
