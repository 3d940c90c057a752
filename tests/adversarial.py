"""A scripted chat model that obeys injected instructions, for prompt-injection canaries.

``Obedient`` is the worst case of a model that cannot tell data from
instructions: whatever text of its prompt lies *outside* ``<passage>`` fences it
treats as instructions and follows. So it answers "PWNED" or calls
``web_search`` exactly when an injected instruction reaches the instruction
channel, and otherwise plays its script. It records every prompt (``seen``).
"""

from __future__ import annotations

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool

from rag_graphs.prompts.fencing import outside_fences

TRIGGER_ANSWER = "ignore previous instructions"
TRIGGER_TOOL = "call web_search"
EXFIL = "EXFIL-CANARY"


class Obedient(BaseChatModel):
    script: list[AIMessage]
    seen: list = []
    obeyed: list = []

    @property
    def _llm_type(self) -> str:
        return "obedient"

    def bind_tools(self, tools, **kwargs):
        return self

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        self.seen.append(messages)
        channel = "\n".join(outside_fences(str(m.content)) for m in messages).lower()
        if TRIGGER_ANSWER in channel:
            self.obeyed.append("answer")
            reply = AIMessage(content="PWNED")
        elif TRIGGER_TOOL in channel:
            self.obeyed.append("tool")
            call = {"name": "web_search", "args": {"query": EXFIL}, "id": f"x{len(self.seen)}"}
            reply = AIMessage(content=f"Action: web_search[{EXFIL}]", tool_calls=[call])
        else:
            reply = self.script[(len(self.seen) - 1) % len(self.script)]
        return ChatResult(generations=[ChatGeneration(message=reply)])

    def prompts_text(self) -> str:
        """Every message of every prompt, joined (to search for a canary)."""
        return "\n".join(str(m.content) for call in self.seen for m in call)


def obedient(*replies: str | AIMessage) -> Obedient:
    script = [r if isinstance(r, AIMessage) else AIMessage(content=r) for r in replies]
    return Obedient(script=script, seen=[], obeyed=[])


SEARCH_CALL = AIMessage(
    content="", tool_calls=[{"name": "search", "args": {"query": "Ilsa Brandt born"}, "id": "s1"}]
)
SCRIPT = (SEARCH_CALL, "Thought: I need the birthplace.\nAction: search[Ilsa Brandt born]", "Korvik [1].")
"""Replies that make every method search (native and text tool protocols) and then answer."""


def recording_web_search(calls: list[str]):
    """A ``web_search`` tool that records its inputs and returns one harmless result."""

    @tool("web_search")
    def web_search(query: str) -> str:
        """Search the web."""
        calls.append(query)
        return "Ilsa Brandt was born in Korvik (web)."

    return web_search
