"""Citations point where the model looked (RELIABILITY.md section 8): in every method, the
``[n]`` an answer writes resolves to the passage the model was shown as ``[n]``.

``CitingModel`` answers each prompt by its role (the template it was built from, known by the
template's first line). Asked for an answer, it reads the numbered passages out of the prompt it
received (the answer prompt's context, ReAct's observations in the scratchpad or tool messages)
and cites every number it was shown. The test then checks each citation against what the prompt
showed under that number: the chunk whose label and text were shown there, found in the store.
Runs cover one search and many (ReAct's three searches, its spent step budget, IRCoT's and the
iterative loop's fused hops), and the shared retrieval step's reranking (the model's listwise
ranking, reversed), neighbour expansion and compression (the model's extraction, or passages
dropped by an embeddings filter).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage
from langchain_core.outputs import ChatGeneration, ChatResult

from rag_graphs.catalog import METHODS
from rag_graphs.config.context import RagContext
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.ingestion.raptor import build_tree, tree_collection
from rag_graphs.methods import get_graph
from rag_graphs.prompts import list_prompts, load_prompt
from rag_graphs.prompts.fencing import defuse
from rag_graphs.store import ChunkIndex, open_index
from rag_graphs.text.citations import label
from tests.graphs import prepare

QUESTION = "In which town was the founder of the Velmora Institute born?"
PASSAGE = re.compile(r"\[(\d+)\]\n<passage>\n\(([^\n]*)\)\n(.*?)\n</passage>", re.DOTALL)
FENCED = re.compile(r"<passage>\n(.*?)\n</passage>", re.DOTALL)
SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")  # as rag_graphs.search.compress splits
SEARCHES = ["Velmora Institute founder", "Ilsa Brandt birthplace", "Korvik harbour town"]
ANSWER_ROLES = {
    "answer_with_citations",
    "answer_with_notes",
    "drag_answer",
    "graphrag_reduce",
    "step_back_answer",
}


def _opening(name: str) -> str:
    """The fixed text a template's first message starts with (up to its first placeholder)."""
    return str(load_prompt(name).messages[0].prompt.template).split("{")[0]  # type: ignore[attr-defined]


OPENINGS = {name: _opening(name) for name in list_prompts() if _opening(name).strip()}


def role_of(messages) -> str:
    """The template a prompt was built from: the longest fixed opening its first message has."""
    text = str(messages[0].content)
    return max((n for n, o in OPENINGS.items() if text.startswith(o)), key=lambda n: len(OPENINGS[n]))


def shown_passages(messages) -> dict[int, list[tuple[str, str]]]:
    """Number -> the (label, text) pairs a prompt showed under it (one per time it was shown)."""
    shown: dict[int, list[tuple[str, str]]] = {}
    for message in messages:
        for number, where, text in PASSAGE.findall(str(message.content)):
            shown.setdefault(int(number), []).append((where, text))
    return shown


def markers(shown: dict) -> str:
    return " ".join(f"[{n}]" for n in sorted(shown))


def _react_text(model: CitingModel, messages) -> str:
    turn = model.turns["react_text"]
    if turn <= model.searches:
        return f"Thought: look it up\nAction: search[{SEARCHES[turn - 1]}]"
    return f"Thought: done\nFinal Answer: Korvik {model.cite(messages)}"


def _react_tools(model: CitingModel, messages) -> AIMessage:
    turn = model.turns["react_tools"]
    if turn <= model.searches:
        call = {"name": "search", "args": {"query": SEARCHES[turn - 1]}, "id": f"call-{turn}"}
        return AIMessage(content="", tool_calls=[call])
    return AIMessage(content=f"Korvik {model.cite(messages)}")


def _rerank(model: CitingModel, messages) -> str:
    numbers = [int(n) for n in re.findall(r"^\[(\d+)\]$", str(messages[-1].content), re.MULTILINE)]
    return " > ".join(f"[{n}]" for n in reversed(numbers))  # the search's order, reversed


def _extract(model: CitingModel, messages) -> str:
    passage = FENCED.findall(str(messages[-1].content))[0]
    return max(SENTENCE.split(passage), key=len).strip() or "NO_OUTPUT"  # its longest sentence, copied


def _summary(model: CitingModel, messages) -> str:
    return f"Summary {model.turns['raptor_summary']}: {FENCED.findall(str(messages[-1].content))[0][:80]}"


def _iterdrag(model: CitingModel, messages) -> str:
    turn = model.turns["iterdrag_step"]
    if turn <= 2:
        return f"Follow up: {SEARCHES[turn - 1]}?"
    return f"So the final answer is: Korvik {model.cite(messages)}"


Reply = str | Callable[["CitingModel", list], "str | AIMessage"] | list[str]
REPLIES: dict[str, Reply] = {
    "answer_directly": "Korvik.",
    "check_complete": '{"complete": true}',
    "check_grounded": '{"grounded": true}',
    "classify_question": '{"kind": "multi_hop"}',
    "compress_extract": _extract,
    "decide_enough": ['{"enough": false, "next_query": "Where was Ilsa Brandt born?"}', '{"enough": true}'],
    "decide_retrieval": '{"retrieve": true}',
    "decompose_question": "1. Who founded the Velmora Institute?\n2. Where was Ilsa Brandt born?",
    "first_subquestion": "Who founded the Velmora Institute",
    # the first passage graded out, the others kept: the answer's [1] is not ``documents[0]``
    "grade_correctness": ['{"relevance": "incorrect"}', '{"relevance": "correct"}'],
    "grade_relevance": ['{"score": 2}', '{"score": 8}'],
    "graphrag_map": '{"points": [{"description": "Ilsa Brandt was born in Korvik.", "score": 80}]}',
    "hyde_passage": "Ilsa Brandt founded the Velmora Institute. She was born in Korvik.",
    "intermediate_answer": "Ilsa Brandt.",
    "intermediate_with_background": "Ilsa Brandt.",
    "iterdrag_intermediate": "Ilsa Brandt.",
    "iterdrag_step": _iterdrag,
    "ircot_reason": [
        "Ilsa Brandt founded the Velmora Institute.",
        "Ilsa Brandt was born in Korvik.",
        "So the answer is: Korvik.",
    ],
    "multi_query": "1. Velmora founder\n2. Ilsa Brandt birthplace",
    "next_query": "Ilsa Brandt birthplace",
    "plan_retrieval_path": "Who founded the Velmora Institute?\nWhere was #1 born?",
    "rag_fusion_queries": "Velmora founder\nIlsa Brandt birthplace\nKorvik harbour",
    "raptor_summary": _summary,
    "react_text": _react_text,
    "react_tools": _react_tools,
    "rerank_listwise": _rerank,
    "rewrite_for_search": "Ilsa Brandt birthplace",
    "self_rag_follow_up": "Ilsa Brandt birthplace",
    "step_back_question": "What is the history of the Velmora Institute?",
}


class CitingModel(BaseChatModel):
    """Replies by role; an answer cites every passage number its prompt showed (``answers``)."""

    searches: int = 3  # ReAct: searches before the final answer
    turns: Counter = Counter()
    answers: list = []  # (what the answer prompt showed, the reply), in call order

    @property
    def _llm_type(self) -> str:
        return "citing"

    def cite(self, messages) -> str:
        shown = shown_passages(messages)
        self.answers.append(shown)
        return markers(shown)

    def _generate(self, messages, stop=None, run_manager=None, **kwargs) -> ChatResult:
        role = role_of(messages)
        self.turns[role] += 1
        if role in ANSWER_ROLES:
            reply: str | AIMessage = f"Korvik {self.cite(messages)}."
        else:
            script = REPLIES[role]
            if isinstance(script, list):
                reply = script[min(self.turns[role], len(script)) - 1]
            elif callable(script):
                reply = script(self, messages)
            else:
                reply = script
        message = reply if isinstance(reply, AIMessage) else AIMessage(content=reply)
        return ChatResult(generations=[ChatGeneration(message=message)])


class CitingToolModel(CitingModel):
    """The same, for ReAct's native tool-calling protocol."""

    def bind_tools(self, tools, **kwargs):
        return self


def citing(tools: bool = False, searches: int = 3) -> CitingModel:
    cls = CitingToolModel if tools else CitingModel
    return cls(searches=searches, turns=Counter(), answers=[])


CONFIGS = {
    "plain": {},
    # the shared retrieval step reorders (the model's ranking, reversed), adds neighbours and
    # shortens passages to their longest sentence, search by search
    "processed": {"reranker": "llm", "fetch_k": 6, "expand": "neighbours:1", "compress": "llm"},
    # compression drops passages (fake embeddings: the cosine to the query is arbitrary)
    "dropping": {"compress": "embeddings:0.1"},
}


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory, demo_corpus, fake_embeddings) -> ChunkIndex:
    """The demo corpus and its RAPTOR tree, ingested once for the module (runs only read it)."""
    uri = str(tmp_path_factory.mktemp("numbering") / "milvus.db")
    index = ChunkIndex(uri=uri, collection="test", embeddings=fake_embeddings)
    ingest([demo_corpus], index=index, options=IngestOptions(progress=False))
    build_tree(index, citing(), progress=False)
    prepare(index, "graphrag")  # graph search needs the entity graph, graphrag its reports
    return index


@pytest.fixture(scope="module")
def chunks(store):
    """Every stored chunk (the corpus and its RAPTOR tree), to find what a prompt showed."""
    tree = open_index(store.uri, tree_collection(store.collection), store.embeddings)
    return [doc for index in (store, tree) for doc, _ in index.iter_chunks()]


def _in_order(part: list[str], whole: list[str]) -> bool:
    """``part``'s words appear in ``whole`` in the same order (sentences may be left out)."""
    words = iter(whole)
    return all(any(w == x for x in words) for w in part)


def shown_chunks(chunks, where: str, text: str) -> set[str]:
    """Ids of the stored chunks that could have been shown as ``(where)`` + ``text``: the
    label matches and the text is the chunk's; failing that, the chunk's words with some left
    out (compression's and CRAG's kept sentences)."""
    same_label = [d for d in chunks if label(d) == where]
    exact = {str(d.id) for d in same_label if defuse(d.page_content) == text}
    words = text.lower().split()
    return exact or {d.id for d in same_label if _in_order(words, defuse(d.page_content).lower().split())}


def check_citations_point_where_the_model_looked(out, model: CitingModel, chunks) -> None:
    assert model.answers, "the run asked for no answer"
    shown = model.answers[-1]  # the prompt that produced the run's answer
    cited = {c["marker"]: c for c in out["citations"]}
    # every number shown was cited, so every one must resolve (none dropped, none invented)
    assert sorted(cited) == sorted(shown), f"cited {sorted(cited)}, shown {sorted(shown)}"
    for number, seen in shown.items():
        candidates = set.intersection(*(shown_chunks(chunks, where, text) for where, text in seen))
        assert candidates, f"[{number}] was shown as different chunks: {seen}"
        citation = cited[number]
        assert citation["explicit"]
        assert citation["chunk_id"] in candidates, (
            f"[{number}] resolved to {citation['chunk_id']}, but the prompt showed {sorted(candidates)} "
            f"under it: {seen[0][1][:80]!r}"
        )


@pytest.fixture
def run(store):
    """Run a method on the module's store with a citing model and ``settings``."""

    def invoke(method: str, model: CitingModel, **settings):
        if method == "auto":  # the model routes the question (to a multi-hop method)
            settings["router"] = "llm"
        ctx = RagContext(
            chat_model=model,
            embeddings=store.embeddings,
            store_uri=store.uri,
            collection=store.collection,
            search_cache=0,
            max_concurrency=1,
            k=3,
            **settings,
        )
        return get_graph(method).invoke({"question": QUESTION}, context=ctx)

    return invoke


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("method", list(METHODS))
def test_every_citation_resolves_to_the_passage_shown_under_its_number(chunks, run, method, config):
    model = citing()
    out = run(method, model, **CONFIGS[config])
    check_citations_point_where_the_model_looked(out, model, chunks)


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("tools", [False, True], ids=["text", "native"])
def test_react_numbers_stay_valid_across_three_searches(chunks, run, tools, config):
    model = citing(tools=tools)
    # hybrid: its three searches share passages on this store (the walk's do not always), which
    # is what shows a passage keeping its number when a later search finds it again
    out = run("react", model, search_mode="hybrid", **CONFIGS[config])
    assert out["usage"]["retrievals"] == 3 and out["stop_reason"] == "enough"
    check_citations_point_where_the_model_looked(out, model, chunks)
    # a chunk keeps its number from one observation to the next (it was shown again: a later
    # search found it too, yet no chunk is shown under two numbers)
    numbers: dict[str, set[int]] = {}
    for number, seen in model.answers[-1].items():
        for where, text in seen:
            if len(found := shown_chunks(chunks, where, text)) == 1:
                numbers.setdefault(found.pop(), set()).add(number)
    assert all(len(n) == 1 for n in numbers.values()), numbers
    assert any(len(seen) > 1 for seen in model.answers[-1].values())


@pytest.mark.parametrize("config", list(CONFIGS))
def test_react_on_a_spent_step_budget_answers_under_the_numbers_it_showed(chunks, run, config):
    """The budget's answer prompt shows the observations (in its notes) and the passages: one
    numbering for both, never two passages under one number."""
    model = citing(searches=99)
    out = run("react", model, max_steps=3, **CONFIGS[config])
    assert out["outcome"] == "budget_exhausted" and [s["node"] for s in out["steps"]][-1] == "generate"
    check_citations_point_where_the_model_looked(out, model, chunks)


def test_react_keeps_the_notes_of_the_shared_retrieval_step(run):
    out = run("react", citing(), **CONFIGS["processed"])
    notes = [s["text"] for s in out["steps"] if s["kind"] == "note" and s["node"] == "act"]
    for what in ("llm: kept", "expand neighbours:1", "compress llm"):
        assert sum(what in n for n in notes) == 3, (what, notes)  # one per search
