"""Step-back prompting (Zheng et al. 2023): retrieve for a more general question too.

    START -> step_back -> retrieve_many (question + step-back question) -> generate -> END

The step-back question asks about the concept or entity behind the
question ("What is Jan Sindel's personal history?" for "Jan Sindel was born in
what country?"); its passages give the background the specific ones lack. As in
the paper, the step-back prompt shows two few-shot turns, and the answer prompt
(``step_back_answer``) lets the model use its own world knowledge where the
passages are silent, as long as it does not contradict them (the other methods'
answers are passage-only). Deviation: one numbered context for both questions'
passages, so citations work as everywhere else (the paper shows two blocks).

When it pays: specific questions that need background on the concept or entity behind them; the
answer may use the model's own knowledge where the passages are silent.
Cost: two model calls (the step-back question, the answer) and two searches.
"""

from __future__ import annotations

from langgraph.graph import StateGraph

from rag_graphs.nodes import make_expand, make_generate, make_retrieve_many
from rag_graphs.nodes.builder import compile_method, linear_builder


def build() -> StateGraph:
    """The uncompiled graph."""
    return linear_builder(
        ("step_back", make_expand("step_back_question", name="step_back", limit=1)),
        ("retrieve_many", make_retrieve_many()),
        ("generate", make_generate("step_back_answer")),
    )


graph = compile_method(build(), "step_back")
