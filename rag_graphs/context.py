"""``RagContext``: the one typed run-time settings object of every graph.

Pass it as LangGraph's run-time context::

    graph.invoke({"question": q}, context=RagContext(k=6, chat_model="ollama:qwen3:8b"))

Fields left out take their defaults from environment variables (read when the
object is created, never cached globally), so a notebook, the CLI and
``langgraph dev`` can all be pointed at other models or stores without code.
Model and embedding fields also accept ready objects, which is how tests pass
scripted fake models.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.tools import BaseTool
from pydantic import InstanceOf
from pydantic.json_schema import SkipJsonSchema

DEFAULT_STORE_URI = ".rag-graphs/milvus.db"
DEFAULT_COLLECTION = "rag_graphs"


def _names(raw: str) -> tuple[str, ...]:
    """``"a, b"`` -> ``("a", "b")``: list-valued settings in environment variables."""
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def _env(name: str, default: Any, cast: Any = str) -> Any:
    def factory() -> Any:
        raw = os.environ.get(name)
        if raw is None or raw == "":
            return default
        try:
            return cast(raw)
        except ValueError as exc:
            raise ValueError(f"environment variable {name}={raw!r}: expected {cast.__name__}") from exc

    return field(default_factory=factory, metadata={"env": name})


@dataclass(kw_only=True)
class RagContext:
    """Run-time settings shared by all methods.

    Every field can also be set by the environment variable named in its
    ``metadata["env"]`` (see ``RagContext.env_vars()``).
    """

    chat_model: str | SkipJsonSchema[InstanceOf[BaseChatModel]] = _env("RAG_GRAPHS_CHAT_MODEL", "embedded")
    """Chat model spec: ``embedded`` (SmolLM2-135M in process), ``ollama:qwen3:8b``,
    ``openai:gpt-4.1-mini`` (``OPENAI_BASE_URL`` for vLLM/compatible servers),
    ``hf:<local dir>``; or a ``BaseChatModel`` instance."""

    embeddings: str | SkipJsonSchema[InstanceOf[Embeddings]] = _env("RAG_GRAPHS_EMBEDDINGS", "embedded")
    """Embedding spec (``embedded`` = all-MiniLM-L6-v2) or an ``Embeddings`` instance.
    Must be the model the collection was built with."""

    store_uri: str = _env("RAG_GRAPHS_STORE_URI", DEFAULT_STORE_URI)
    """Milvus Lite path, or a Milvus/Zilliz server URI (``http://localhost:19530``)."""

    collection: str = _env("RAG_GRAPHS_COLLECTION", DEFAULT_COLLECTION)
    """Milvus collection name."""

    k: int = _env("RAG_GRAPHS_K", 4, int)
    """Chunks returned per retrieval."""

    search_mode: Literal["dense", "hybrid", "graph"] = _env("RAG_GRAPHS_SEARCH_MODE", "hybrid")
    """``hybrid`` = BM25 + dense fused by RRF in Milvus; ``dense`` = embeddings only; ``graph`` =
    hybrid hits re-ranked by Personalized PageRank over the entities chunks share (HippoRAG;
    needs the collection's entity graph: ``rag-graphs graph build``)."""

    graph_damping: float = _env("RAG_GRAPHS_GRAPH_DAMPING", 0.5, float)
    """Graph search: probability of following an edge at each PageRank step (HippoRAG: 0.5);
    the rest restarts at the question's entities."""

    graph_blend: float = _env("RAG_GRAPHS_GRAPH_BLEND", 0.5, float)
    """Graph search: weight of the PageRank score against the dense/hybrid score (1 = graph only)."""

    graph_neighbourhood: int = _env("RAG_GRAPHS_GRAPH_NEIGHBOURHOOD", 1000, int)
    """Graph search: most chunks fetched from the store around the question's entities and
    first hits (the walk never loads the whole store)."""

    graph_seeds: int = _env("RAG_GRAPHS_GRAPH_SEEDS", 20, int)
    """Graph search: most entities the walk restarts at (the best-matching question entities)."""

    graph_link_threshold: float = _env("RAG_GRAPHS_GRAPH_LINK_THRESHOLD", 0.75, float)
    """Graph search: cosine similarity a stored entity name needs to a question mention
    (or the question) to seed the walk. A MiniLM number: retune it for another embedding model."""

    search_filter: str | None = _env("RAG_GRAPHS_SEARCH_FILTER", None)
    """A Milvus boolean expression every search must satisfy, e.g.
    ``source like "%annual_report%"`` or ``chunk_id in ["a", "b"]``; None searches all.
    Written by the operator, used as is: never build it from user input (use the
    access fields below, whose values are quoted)."""

    tenant: str | None = _env("RAG_GRAPHS_TENANT", None)
    """Access control: search only chunks ingested with this tenant (``ingest(tenant=...)``);
    chunks without one are then out of reach. None: no tenant restriction."""

    tags: tuple[str, ...] = _env("RAG_GRAPHS_TAGS", (), _names)
    """Access control: search only chunks carrying at least one of these tags
    (``ingest(tags=...)``; env: comma-separated). Empty: no tag restriction."""

    sources: tuple[str, ...] = _env("RAG_GRAPHS_SOURCES", (), _names)
    """Access control: search only chunks of these sources (the stored ``source``: a resolved
    file path or a URL; see ``rag-graphs sources``). Empty: every source."""

    num_queries: int = _env("RAG_GRAPHS_NUM_QUERIES", 3, int)
    """Queries the model writes for multi-query and RAG-Fusion (the question is searched too),
    and the most sub-questions decomposition keeps."""

    rrf_k: int = _env("RAG_GRAPHS_RRF_K", 60, int)
    """Reciprocal rank fusion constant: score = sum of 1 / (rrf_k + rank)."""

    decomposition_mode: Literal["parallel", "recursive"] = _env("RAG_GRAPHS_DECOMPOSITION_MODE", "parallel")
    """``parallel``: answer sub-questions independently, then synthesise; ``recursive``: in order,
    each with the earlier question/answer pairs as background."""

    demonstrations: str | None = _env("RAG_GRAPHS_DEMONSTRATIONS", None)
    """JSONL of solved examples (question, answer, documents) for DRAG and IterDRAG;
    ``rag-graphs eval mine-demos`` writes one. None: no demonstrations."""

    num_demos: int = _env("RAG_GRAPHS_NUM_DEMOS", 2, int)
    """In-context demonstrations (m) DRAG and IterDRAG show, from ``demonstrations``."""

    iterdrag_iterations: int = _env("RAG_GRAPHS_ITERDRAG_ITERATIONS", 5, int)
    """Most follow-up sub-queries IterDRAG may ask (the paper's n)."""

    raptor_mode: Literal["collapsed", "traversal"] = _env("RAG_GRAPHS_RAPTOR_MODE", "collapsed")
    """RAPTOR query: ``collapsed`` searches every tree level at once; ``traversal`` descends from
    the top level, keeping the ``k`` best children at each level."""

    routes: str = _env("RAG_GRAPHS_ROUTES", "single_hop=naive,multi_hop=ircot,global_summary=rag_fusion")
    """The ``auto`` router's method per question kind (``no_retrieval`` answers directly)."""

    router: Literal["examples", "llm"] = _env("RAG_GRAPHS_ROUTER", "examples")
    """How ``auto`` classifies a question: ``examples`` (nearest labelled example questions under
    the embedding model; no model call, works with the smallest chat models) or ``llm`` (the chat
    model chooses; for strong models)."""

    router_examples: str | None = _env("RAG_GRAPHS_ROUTER_EXAMPLES", None)
    """JSON file of labelled example questions per kind for ``router="examples"``; None: the
    shipped ``prompts/question_kinds.json``."""

    max_hops: int = _env("RAG_GRAPHS_MAX_HOPS", 3, int)
    """Budget of retrieval hops for multi-hop methods."""

    fixed_hops: int = _env("RAG_GRAPHS_FIXED_HOPS", 2, int)
    """Number of hops of the fixed-step method."""

    max_steps: int = _env("RAG_GRAPHS_MAX_STEPS", 8, int)
    """Budget of loop iterations (agent steps, rewrites) for looping methods."""

    web_search: SkipJsonSchema[InstanceOf[BaseTool]] | None = None
    """A LangChain tool the ReAct agent may call as ``web_search``; off when None."""

    tool_calling: Literal["auto", "native", "text"] = _env("RAG_GRAPHS_TOOL_CALLING", "auto")
    """How the ReAct agent calls tools: ``native`` (the model's tool-calling API),
    ``text`` (Thought/Action lines, for any model) or ``auto`` (native when the
    model can choose among tools itself, else text)."""

    max_answer_tokens: int = _env("RAG_GRAPHS_MAX_ANSWER_TOKENS", 256, int)
    """Upper bound on tokens the chat model may generate per call."""

    max_concurrency: int = _env("RAG_GRAPHS_MAX_CONCURRENCY", 4, int)
    """Most model calls one node runs at once when it fans out (grading each passage, ...)."""

    def __post_init__(self) -> None:
        for name in ("tags", "sources"):  # a bare string is one value, not a sequence of letters
            value = getattr(self, name)
            setattr(self, name, (value,) if isinstance(value, str) else tuple(value or ()))
            if not all(isinstance(v, str) and v for v in getattr(self, name)):
                raise ValueError(f"RagContext.{name}={value!r}: expected non-empty strings")
        if self.tenant is not None and not isinstance(self.tenant, str):
            raise ValueError(f"RagContext.tenant={self.tenant!r}: expected a string")
        if self.search_mode not in ("dense", "hybrid", "graph"):
            raise ValueError(
                f"RagContext.search_mode={self.search_mode!r}: use 'dense', 'hybrid' or 'graph'"
            )
        for name in ("graph_damping", "graph_blend", "graph_link_threshold"):
            if not 0 <= getattr(self, name) <= 1:
                raise ValueError(f"RagContext.{name}={getattr(self, name)!r}: must be between 0 and 1")
        if self.tool_calling not in ("auto", "native", "text"):
            raise ValueError(f"RagContext.tool_calling={self.tool_calling!r}: use 'auto', 'native' or 'text'")
        if self.raptor_mode not in ("collapsed", "traversal"):
            raise ValueError(f"RagContext.raptor_mode={self.raptor_mode!r}: use 'collapsed' or 'traversal'")
        if self.router not in ("examples", "llm"):
            raise ValueError(f"RagContext.router={self.router!r}: use 'examples' or 'llm'")
        if self.decomposition_mode not in ("parallel", "recursive"):
            raise ValueError(
                f"RagContext.decomposition_mode={self.decomposition_mode!r}: use 'parallel' or 'recursive'"
            )
        for name in (
            "k",
            "num_queries",
            "rrf_k",
            "iterdrag_iterations",
            "max_hops",
            "fixed_hops",
            "max_steps",
            "max_answer_tokens",
            "max_concurrency",
            "graph_neighbourhood",
            "graph_seeds",
        ):
            if getattr(self, name) < 1:
                raise ValueError(f"RagContext.{name}={getattr(self, name)!r}: must be >= 1")
        if self.num_demos < 0:
            raise ValueError(f"RagContext.num_demos={self.num_demos!r}: must be >= 0")
        unknown = set(self.route_table()) - {"single_hop", "multi_hop", "global_summary"}
        if unknown:
            raise ValueError(
                f"RagContext.routes: unknown question kind(s) {sorted(unknown)}; "
                "use single_hop, multi_hop, global_summary"
            )

    def search_expr(self) -> str | None:
        """The Milvus expression every search of this run applies: ``search_filter`` and the
        access fields (tenant, tags, sources), all required. Applied inside the search, so a
        chunk outside it never reaches a prompt."""
        from ingestion.store import access_filter, all_of

        access = access_filter(tenant=self.tenant, tags=self.tags, sources=self.sources)
        return all_of(self.search_filter, access)

    def route_table(self) -> dict[str, str]:
        """``routes`` parsed: question kind -> method name."""
        table = {}
        for part in filter(None, (p.strip() for p in self.routes.split(","))):
            kind, sep, method = part.partition("=")
            if not sep or not method.strip():
                raise ValueError(f"RagContext.routes: {part!r} is not 'kind=method'")
            table[kind.strip()] = method.strip()
        return table

    @classmethod
    def env_vars(cls) -> dict[str, str]:
        """Field name -> environment variable that sets its default."""
        return {f.name: f.metadata["env"] for f in fields(cls) if "env" in f.metadata}


def get_context(runtime: Any) -> RagContext:
    """The run's ``RagContext``, or one built from the environment when none was passed."""
    ctx = getattr(runtime, "context", None)
    if isinstance(ctx, RagContext):
        return ctx
    if isinstance(ctx, dict):  # LangGraph Studio / the server pass context as JSON
        return RagContext(**ctx)
    return RagContext()
