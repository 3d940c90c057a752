"""Step-back prompting (Zheng et al. 2023): retrieve for a more general question too.

    START -> step_back -> retrieve_many (question + step-back question) -> generate -> END

The step-back question asks about the concept or entity behind the
question ("What was X's education history?" for "Which school did X attend
in 1954?"); its passages give the background the specific ones lack.
"""

from __future__ import annotations

from langgraph.graph import StateGraph

from rag_graphs.methods import compile_method, linear_builder
from rag_graphs.nodes import make_expand, make_generate, make_retrieve_many


def build() -> StateGraph:
    """The uncompiled graph."""
    return linear_builder(
        ("step_back", make_expand("step_back_question", name="step_back", limit=1)),
        ("retrieve_many", make_retrieve_many()),
        ("generate", make_generate()),
    )


graph = compile_method(build(), "step_back")
