"""ReAct (Yao et al. 2023): an agent that reasons, calls tools and reads their results.

    START -> agent --(tool calls)--> act -> agent ...
                  \\--(answer)--> END
                  \\--(step budget spent | reply in no form)--> generate -> END

Tools: ``search`` (the knowledge base, required), ``calculator`` (safe
arithmetic), and ``web_search`` when ``RagContext.web_search`` holds a
LangChain tool (off by default). Two protocols, chosen by
``RagContext.tool_calling``:

* native: the model's own tool-calling API (``bind_tools``); results come
  back as ``ToolMessage``s in ``messages``. For models that choose tools;
  with ``auto``, a model whose server rejects tools or that answers its first
  step without calling one is switched to the text protocol (learned once per
  model, see ``rag_graphs.llm.models.Capabilities``).
* text: ``Thought: / Action: tool[input] / Final Answer:`` lines parsed by a
  lenient parser, for every chat model, including the embedded one (whose
  llama.cpp runtime cannot choose among tools).

A reply in no form falls back safely: before any search it searches the
question, after one it ends the loop. When the loop ends without an answer
(no form, or ``max_steps`` spent) the answer is generated from the passages.

Passages are numbered once per run (``shown``): a search's observation shows
what the shared retrieval step kept, a passage seen before under its first
number, a new one under the next; the answer's ``[n]`` resolves against that
numbering, whichever answer ends the run.

When it pays: with a chat model that uses tools well: questions that need several searches, or
arithmetic on what was found.
Cost: one model call per agent step, up to ``max_steps`` (8), one search per search action, plus an
answer call when the loop ends without one.
"""

from __future__ import annotations

import operator
import re
from typing import Annotated, Literal

from langchain_core.documents import Document
from langchain_core.messages import AnyMessage, BaseMessage, HumanMessage, ToolMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import END, StateGraph
from langgraph.graph.message import add_messages
from typing_extensions import TypedDict

from rag_graphs.config.context import RagContext
from rag_graphs.llm.calls import Body, Call
from rag_graphs.llm.faults import rejected_as_invalid
from rag_graphs.llm.models import capabilities, chooses_tools
from rag_graphs.llm.tools import calculate
from rag_graphs.llm.web import web_tool
from rag_graphs.nodes import make_generate
from rag_graphs.nodes.builder import BEGIN, compile_method, new_builder
from rag_graphs.nodes.chat import chat_model, llm_usage
from rag_graphs.nodes.events import emit, step
from rag_graphs.nodes.generate import finish
from rag_graphs.nodes.inputs import format_notes
from rag_graphs.nodes.interrupts import DECLINED, confirm_web
from rag_graphs.nodes.loop import STOP_ENOUGH, Budget, Stop, already_searched, loop_stop, stop_update
from rag_graphs.nodes.model_node import model_node
from rag_graphs.nodes.reading import is_extract, read_answer
from rag_graphs.nodes.retrieve import fetch_k, found, keep, which_search
from rag_graphs.prompts import load_prompt
from rag_graphs.prompts.fencing import fence
from rag_graphs.search.retrieval import retriever_for
from rag_graphs.state import RagState, Step, Unset, add_usage
from rag_graphs.text.answers import clean_answer
from rag_graphs.text.citations import extract_citations, number_passages

_TEXT_PROMPT = load_prompt("react_text")
_TOOLS_PROMPT = load_prompt("react_tools")
_FINAL = re.compile(r"final\s+answer\s*:\s*(.+?)\s*$|finish\s*\[(.+?)\]", re.IGNORECASE | re.DOTALL)
_ACTION_BRACKET = re.compile(r"action\s*:\s*([a-z_]+)\s*\[(.*?)\]", re.IGNORECASE | re.DOTALL)
_ACTION_LINES = re.compile(r"action\s*:\s*([a-z_]+)\s*\n\s*action\s+input\s*:\s*(.+)", re.IGNORECASE)
_TO_TEXT = "native tool calls unused, switching to the text protocol: "
TOOLS = {
    "search": "search[query]: search the document collection; returns numbered passages",
    "calculator": "calculator[expression]: arithmetic such as 1200000 / 850000",
    "web_search": "web_search[query]: search the web",
}


class ToolRequest(TypedDict):
    tool: str
    input: str
    id: str | None  # the model's tool-call id (native protocol), None in the text protocol


class ReactState(RagState, total=False):
    messages: Annotated[list[AnyMessage], add_messages]  # the native protocol's conversation
    tool_calls: Annotated[list[ToolRequest], Unset([])]  # requests the next ``act`` runs
    scratchpad: Annotated[list[str], operator.add]  # the text protocol's Thought/Action/Observation lines
    turns: Annotated[int, operator.add]  # agent steps taken; ``RagContext.max_steps`` counts these
    web_declined: bool  # a person declined a web search (``RagContext.interrupts``): none this run


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


SEARCH_TOOL = {
    "title": "search",
    "description": "Search the document collection; returns numbered passages to cite as [n].",
    "type": "object",
    "properties": {"query": {"type": "string", "description": "what to search for"}},
    "required": ["query"],
}
"""The search tool as the model sees it: a schema only, since ``act`` runs the search itself
(into the run's documents, numbered as the answer cites them), not a function the model's
tool call could run."""


def native_tools(ctx: RagContext) -> list:
    """The tool schemas bound to a tool-calling model."""
    tools = [SEARCH_TOOL, StructuredTool.from_function(calculate, name="calculator")]
    web = web_tool(ctx.web_search)
    return tools + ([web] if web is not None else [])


def _text_tool_lines(ctx: RagContext) -> str:
    names = ["search", "calculator"] + (["web_search"] if ctx.web_search is not None else [])
    return "\n".join(f"- {TOOLS[n]}" for n in names)


def _native(ctx: RagContext) -> bool:
    return ctx.tool_calling == "native" or (ctx.tool_calling == "auto" and chooses_tools(chat_model(ctx)))


def _ask_native(state: ReactState, ctx: RagContext) -> Body[tuple[dict, str, str, list[ToolRequest]]]:
    """One tool-calling turn: (state update, kind, answer, requests).

    With ``tool_calling=auto`` a model that cannot do native tool calls is found
    out here, once per model (``Capabilities.tools``): a server that rejects the
    ``tools`` parameter, or a model that answers its first step without calling
    any tool (a chat format that never emits tool calls would otherwise answer
    from memory, with no retrieval and no citations). Such a turn comes back as
    kind ``"text"``: the agent asks again in the text protocol, now and from then on.
    """
    start = [] if state.get("messages") else _TOOLS_PROMPT.format_messages(question=state["question"])
    model = chat_model(ctx)
    auto = ctx.tool_calling == "auto"
    # The first step must search (as a reply in no form before any search does): small models
    # left to choose answer from memory. Later steps choose between a tool and the answer.
    first = {"tool_choice": "search"} if start and not state.get("searches") else {}
    try:
        reply = yield Call(model.bind_tools(native_tools(ctx), **first), [*state.get("messages", []), *start])
    except Exception as exc:
        if not (auto and rejected_as_invalid(exc)):
            raise
        capabilities(model).no_tools(f"the server rejected tools ({type(exc).__name__})")
        return {"steps": [step("decide", text=_TO_TEXT + capabilities(model).tools_note)]}, "text", "", []
    requests = [
        ToolRequest(tool=c["name"], input=str(next(iter(c["args"].values()), "")), id=c["id"])
        for c in getattr(reply, "tool_calls", [])
    ]
    text = str(reply.content).strip()
    if requests:
        capabilities(model).tools_work()
    elif auto and start and text and not state.get("searches") and capabilities(model).tools is None:
        capabilities(model).no_tools("it answered its first step without calling a tool")
        note = f"{_TO_TEXT}{capabilities(model).tools_note}: {text[:200]}"
        return {"usage": llm_usage(reply), "steps": [step("decide", text=note)]}, "text", "", []
    kind = "action" if requests else "final" if text else "invalid"
    shown = text or "; ".join(f"{r['tool']}({r['input']})" for r in requests)
    update = {"messages": [*start, reply], "usage": llm_usage(reply), "steps": [step("decide", text=shown)]}
    return update, kind, text, requests


def _ask_text(state: ReactState, ctx: RagContext) -> Body[tuple[dict, str, str, list[ToolRequest]]]:
    """One Thought/Action turn in the text protocol: (state update, kind, answer, requests)."""
    messages = _TEXT_PROMPT.format_messages(
        tools=_text_tool_lines(ctx),
        question=state["question"],
        scratchpad="\n".join(state.get("scratchpad", [])),
    )
    reply = yield Call(chat_model(ctx), messages)
    text = str(reply.content).strip()
    kind, first, second = parse_step(text)
    update: dict = {"usage": llm_usage(reply), "steps": [step("decide", text=text)]}
    if kind == "action":
        update["scratchpad"] = [text.split("Observation")[0].strip()]
        return update, kind, "", [ToolRequest(tool=first, input=second, id=None)]
    return update, kind, first, []


@model_node
def agent(state: ReactState, ctx: RagContext) -> Body[dict]:
    """One reasoning step: tool requests for ``act``, or the answer with citations."""
    ask = _ask_native if _native(ctx) else _ask_text
    update, kind, answer, requests = yield from ask(state, ctx)
    if kind == "text":  # native tool calls do not work with this model: the text protocol instead
        first = update
        update, kind, answer, requests = yield from _ask_text(state, ctx)
        update |= {
            "usage": add_usage(first.get("usage"), update.get("usage")),
            "steps": [*first["steps"], *update["steps"]],
        }
    turns = state.get("turns", 0) + 1
    update["turns"] = 1
    emit("end", step=kind)
    if kind == "final":
        docs = state.get("documents", [])
        if is_extract(ctx):  # the reader reads the gathered passages in the run's numbering instead
            read = read_answer(state, ctx, docs, state.get("shown", []))
            read["steps"] = [*update["steps"], *read["steps"]]
            return update | read | finish(state, read["answer"], docs, stop=STOP_ENOUGH)
        answer = clean_answer(answer)  # the agent's own final answer gets the same cut as generate's
        # [n] is the passage an observation showed as [n]: the run's numbering, not ``documents``'
        # order (which each search's fusion re-ranks)
        return (
            update
            | {"citations": extract_citations(answer, state.get("shown", []))}
            | finish(state, answer, docs, stop=STOP_ENOUGH)
        )
    if kind == "invalid" and not state.get("searches"):
        # Safe default for a reply in no form before any search: search the question.
        update["scratchpad"] = [f"(step {turns} followed no form; searching the question)"]
        requests = [ToolRequest(tool="search", input=state["question"], id=None)]
    if kind == "invalid" and state.get("searches"):
        # After a search, a reply in no form ends the loop: answer from the passages.
        update |= stop_update(Stop("no_form", "the agent's reply followed no protocol form"))
    else:
        update |= stop_update(loop_stop(state, Budget(turns, ctx.max_steps, "agent step")))
    return update | {"tool_calls": requests}


def _run_tool(
    ctx: RagContext, state: ReactState, request: ToolRequest
) -> Body[tuple[str | None, list[Document]]]:
    """The observation of one tool request; for a search that ran, ``None`` and its hits (the
    observation shows what the shared retrieval step keeps of them, numbered in ``act``)."""
    tool, tool_input = request["tool"], request["input"]
    web = _web(ctx, tool)
    if tool == "search":
        if already_searched(state, tool_input):
            return "already searched; use the passages above or try other words", []
        hits = yield Call(retriever_for(ctx, k=fetch_k(ctx)), tool_input)
        return None, hits
    if tool == "calculator":
        return calculate(tool_input), []
    if web is not None and state.get("web_declined"):
        return f"{DECLINED}; search the documents instead", []
    if web is not None:
        results = yield Call(web, tool_input)
        return fence(str(results)[:2000]), []
    available = ["search", "calculator"] + (["web_search"] if ctx.web_search is not None else [])
    return f"unknown tool {tool!r}; available: {', '.join(available)}", []


def _web(ctx: RagContext, tool: str) -> BaseTool | None:
    """The web search tool when ``tool`` names it (and the context has one)."""
    web = web_tool(ctx.web_search)
    return web if web is not None and tool in ("web_search", web.name) else None


def _web_allowed(state: ReactState, ctx: RagContext) -> tuple[bool, list[Step]]:
    """(declined?, steps): a person confirms this turn's web searches (``RagContext.interrupts``);
    a decline holds for the rest of the run."""
    asked = [r["input"] for r in state.get("tool_calls", []) if _web(ctx, r["tool"]) is not None]
    if not asked or state.get("web_declined"):
        return bool(state.get("web_declined")), []
    go, steps = confirm_web(ctx, state["question"], asked, state.get("stops_for", ()))
    return not go, steps


@model_node
def act(state: ReactState, ctx: RagContext) -> Body[dict]:
    """Run every pending tool request; observations go back as tool messages or notes.

    A search's observation shows the passages the shared retrieval step kept (reranked,
    expanded, compressed), numbered in the run's numbering (``shown``): a passage keeps
    the number it was first shown with, a new one gets the next, so every [n] the agent
    reads stays valid to the end of the run, whatever order ``documents`` takes.
    Web searches wait for a person's approval first when ``RagContext.interrupts`` asks."""
    declined, steps = _web_allowed(state, ctx)
    outcomes: list[tuple[ToolRequest, str | None]] = []
    queries: list[str] = []
    rankings: list[list[Document]] = []
    for request in state.get("tool_calls", []):
        seen = {  # later requests of this turn see this turn's searches
            **state,
            "web_declined": declined,
            "searches": [*state.get("searches", []), *({"query": q, "doc_ids": []} for q in queries)],
        }
        observation, hits = yield from _run_tool(ctx, seen, request)  # type: ignore[arg-type]
        if observation is None:
            queries.append(request["input"])
            rankings.append(hits)
        outcomes.append((request, observation))
    kept = keep(ctx, queries, rankings) if queries else None
    searched = iter(kept.rankings if kept is not None else [])
    numbering = state.get("shown", [])
    messages: list[BaseMessage] = []
    scratchpad: list[str] = []
    why = which_search(state, ctx) if queries else ""  # the run's first search says which ran, why
    for request, observation in outcomes:
        kind, passages = "note", []
        if observation is None:  # a search that ran
            kind, passages = "retrieve", next(searched)
            numbered = number_passages(passages, numbering)
            numbering = numbered.shown
            observation = numbered.text if passages else "no passages found"
        if request["id"]:
            messages.append(ToolMessage(observation, tool_call_id=request["id"]))
        elif _native(ctx):  # the fallback search answers a reply that made no tool call
            messages.append(HumanMessage(f"Observation: {observation}"))
        scratchpad.append(f"Observation: {observation}")
        ids = [str(d.id) for d in passages]
        text = observation
        if why and kind == "retrieve":  # the first search's step names which search ran
            text, why = f"{why}\n{observation}", ""
        steps.append(step(kind, query=request["input"], text=text[:500], doc_ids=ids))
    update: dict = {"messages": messages, "scratchpad": scratchpad, "tool_calls": [], "shown": numbering}
    update |= {"web_declined": True} if declined else {}
    if kept is None:
        return update | {"steps": steps}
    retrieved = found(state, ctx, queries, rankings, kept)
    return update | retrieved | {"steps": steps + kept.notes}  # the retrieval step's notes, kept


def route_after_agent(state: ReactState) -> Literal["act", "generate", "__end__"]:
    """Finish on an answer; answer from the gathered passages when the loop was stopped."""
    if state.get("stop_kind") == "enough":
        return "__end__"
    if state.get("stop_kind"):
        return "generate"
    return "act" if state.get("tool_calls") else "generate"


def _scratchpad(state: ReactState) -> str:
    return format_notes(state.get("scratchpad", []))


def build() -> StateGraph:
    """The uncompiled graph."""
    builder = new_builder(ReactState)
    builder.add_node("agent", agent)
    builder.add_node("act", act)
    builder.add_node("generate", make_generate("answer_with_notes", notes=_scratchpad, carry_numbers=True))
    builder.add_edge(BEGIN, "agent")
    builder.add_conditional_edges("agent", route_after_agent, ["act", "generate", END])
    builder.add_edge("act", "agent")
    builder.add_edge("generate", END)
    return builder


graph = compile_method(build(), "react")
