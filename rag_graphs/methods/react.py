"""ReAct (Yao et al. 2023): Thought / Action / Observation over tools, in a text protocol.

    START -> agent --(Action)--> act -> agent ...
                  \\--(Final Answer)--> END
                  \\--(step budget spent)--> generate -> END

Tools: ``search`` (the knowledge base, required), ``calculator`` (safe
arithmetic), and ``web_search`` when ``RagContext.web_search`` holds a
LangChain tool (off by default). The text protocol works with every chat
model, including the embedded one, whose llama.cpp runtime cannot choose
among tools; a native tool-calling mode is not built yet. A reply in no
form falls back safely: before any search it searches the question, after
one it ends the loop. When the loop ends without a Final Answer (no form,
or ``max_steps`` spent) the answer is generated from the passages gathered.
"""

from __future__ import annotations

import re
from typing import Literal

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from prompts import load_prompt
from rag_graphs.citations import extract_citations
from rag_graphs.context import RagContext, get_context
from rag_graphs.methods import new_builder
from rag_graphs.nodes import make_generate
from rag_graphs.nodes.common import call_chat, emit
from rag_graphs.nodes.retrieve import normalize_query
from rag_graphs.retrieval import search
from rag_graphs.state import RagState, usage
from rag_graphs.tools import calculate

_PROMPT = load_prompt("react_text")
_FINAL = re.compile(r"final\s+answer\s*:\s*(.+?)\s*$|finish\s*\[(.+?)\]", re.IGNORECASE | re.DOTALL)
_ACTION_BRACKET = re.compile(r"action\s*:\s*([a-z_]+)\s*\[(.*?)\]", re.IGNORECASE | re.DOTALL)
_ACTION_LINES = re.compile(r"action\s*:\s*([a-z_]+)\s*\n\s*action\s+input\s*:\s*(.+)", re.IGNORECASE)
TOOLS = {
    "search": "search[query]: search the document collection; returns numbered passages",
    "calculator": "calculator[expression]: arithmetic such as 1200000 / 850000",
    "web_search": "web_search[query]: search the web",
}


def parse_step(text: str) -> tuple[str, str, str]:
    """Parse a reply into ``("final", answer, "")``, ``("action", tool, input)`` or ``("invalid", "", "")``.

    An action wins over a final answer written after it (models often
    hallucinate the rest of the episode after their first action).
    """
    action = _ACTION_BRACKET.search(text) or _ACTION_LINES.search(text)
    final = _FINAL.search(text)
    if action and (not final or action.start() < final.start()):
        return "action", action.group(1).lower(), action.group(2).strip().strip("\"'")
    answer = final and (final.group(1) or final.group(2) or "").strip()
    if answer:
        return "final", answer, ""
    return "invalid", "", ""


def _tool_lines(ctx: RagContext) -> str:
    names = ["search", "calculator"] + (["web_search"] if ctx.web_search is not None else [])
    return "\n".join(f"- {TOOLS[n]}" for n in names)


def agent(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """One Thought/Action step; a Final Answer ends the run with citations."""
    ctx = get_context(runtime)
    scratchpad = "\n".join(state.get("notes", []))
    messages = _PROMPT.format_messages(
        tools=_tool_lines(ctx), question=state["question"], scratchpad=scratchpad
    )
    reply, used = call_chat(ctx, messages)
    text = str(reply.content).strip()
    kind, first, second = parse_step(text)
    turns = sum(1 for s in state.get("steps", []) if s["node"] == "agent") + 1
    step = {"node": "agent", "kind": "decide", "text": text}
    update: dict = {"usage": used, "steps": [step]}
    emit("agent", "end", step=kind)
    if kind == "final":
        docs = state.get("documents", [])
        update |= {"answer": first, "citations": extract_citations(first, docs), "stop_reason": "enough"}
    elif kind == "action":
        update |= {
            "notes": [text.split("Observation")[0].strip()],
            "tool_call": {"tool": first, "input": second},
        }
    elif not state.get("queries"):
        # Safe default for a reply in no form before any search: search the question.
        note = f"(step {turns} followed no form; searching the question)"
        update |= {"notes": [note], "tool_call": {"tool": "search", "input": state["question"]}}
    else:
        # After a search, a reply in no form ends the loop: answer from the passages.
        update |= {"tool_call": None, "stop_reason": "the agent's reply followed no protocol form"}
    if kind != "final" and not update.get("stop_reason") and turns >= ctx.max_steps:
        update["stop_reason"] = f"step budget reached ({ctx.max_steps} agent steps)"
    return update


def act(state: RagState, runtime: Runtime[RagContext]) -> dict:
    """Run the requested tool and append its observation (unknown tools are an observation too)."""
    ctx = get_context(runtime)
    tool, tool_input = state["tool_call"]["tool"], state["tool_call"]["input"]
    docs = state.get("documents", [])
    update: dict = {}
    if tool == "search":
        searched = {normalize_query(q) for q in state.get("queries", [])}
        if normalize_query(tool_input) in searched:
            observation = "already searched; use the passages above or try other words"
        else:
            found = search(ctx, tool_input)
            known = {d.id for d in docs}
            docs = docs + [d for d in found if d.id not in known]
            found_ids = {f.id for f in found}
            # Number passages by their place in ``documents`` so [n] in the answer resolves.
            observation = (
                "\n".join(f"[{i}] {d.page_content}" for i, d in enumerate(docs, start=1) if d.id in found_ids)
                or "no passages found"
            )
            update |= {
                "documents": found,
                "queries": [tool_input],
                "usage": usage(retrievals=1, hops=1),
            }
    elif tool == "calculator":
        observation = calculate(tool_input)
    elif tool == "web_search" and ctx.web_search is not None:
        observation = str(ctx.web_search.invoke(tool_input))[:2000]
    else:
        available = ", ".join(line.split("[")[0].lstrip("- ") for line in _tool_lines(ctx).splitlines())
        observation = f"unknown tool {tool!r}; available: {available}"
    step = {
        "node": "act",
        "kind": "retrieve" if tool == "search" else "note",
        "query": tool_input,
        "text": observation[:500],
        "doc_ids": [str(d.id) for d in update.get("documents", [])],
    }
    return update | {"notes": [f"Observation: {observation}"], "steps": [step], "tool_call": None}


def route_after_agent(state: RagState) -> Literal["act", "agent", "generate", "__end__"]:
    """Finish on a final answer; answer from the gathered passages when the budget is spent."""
    if state.get("stop_reason") == "enough":
        return END
    if state.get("stop_reason"):
        return "generate"
    return "act" if state.get("tool_call") else "agent"  # type: ignore[return-value]


def build() -> StateGraph:
    """The uncompiled graph."""
    builder = new_builder()
    builder.add_node("agent", agent)
    builder.add_node("act", act)
    builder.add_node("generate", make_generate("answer_with_notes"))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", route_after_agent, ["act", "agent", "generate", END])
    builder.add_edge("act", "agent")
    builder.add_edge("generate", END)
    return builder


graph = build().compile(name="react")
