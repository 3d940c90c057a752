"""``RagContext``: the one typed run-time settings object of every graph.

Pass it as LangGraph's run-time context::

    graph.invoke({"question": q}, context=RagContext(k=6, chat_model="ollama:qwen3:8b"))

Fields left out take their defaults from environment variables (read when the
object is created, never cached globally), so a notebook, the CLI and
``langgraph dev`` can all be pointed at other models or stores without code.
Model and embedding fields also accept ready objects, which is how tests pass
scripted fake models.

The field types are the validation: it is a pydantic dataclass, so a value is
checked (and an environment string converted) against its annotation when the
object is created and when a field is assigned. A new setting is one annotated
field, e.g. ``knob: Fraction = _env("RAG_GRAPHS_KNOB", 0.5)`` (the types and ``_env`` are in
``rag_graphs.config.fields``); an error names the field, and the environment variable when the
value came from one.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import field, fields
from typing import Annotated, Any, Literal

from langchain_core.embeddings import Embeddings
from langchain_core.language_models import BaseChatModel
from langchain_core.retrievers import BaseRetriever
from langchain_core.vectorstores import VectorStore
from pydantic import ConfigDict, Field, InstanceOf, model_validator
from pydantic.dataclasses import dataclass
from pydantic.json_schema import SkipJsonSchema
from pydantic_core import ArgsKwargs, ErrorDetails, InitErrorDetails, PydanticCustomError, ValidationError

from rag_graphs.config.fields import (
    DEFAULT_COLLECTION,
    DEFAULT_STORE_URI,
    CachePath,
    CompressSpec,
    ExpandSpec,
    Fraction,
    Interrupts,
    Label,
    Labels,
    LoopBudget,
    NonNegative,
    Positive,
    RerankerSpec,
    Routes,
    SearchFilter,
    Seconds,
    TopK,
    WebSearchSpec,
    Weight,
    _env,
    _names,
)
from rag_graphs.config.graph_search import GraphSearchOptions
from rag_graphs.config.prompts import PromptTexts, from_env
from rag_graphs.config.specs import own_retriever_refusal

NESTED = ("graph_search",)
"""Fields holding a settings object of their own: an error names ``RagContext.<field>.<option>``."""


def _named(exc: ValidationError, data: Any) -> ValidationError:
    """``exc`` with one message per wrong value, naming ``RagContext.<field>=<value>``, and the
    environment variable when the value came from one (the field was not passed)."""
    passed = (data.kwargs or {}) if isinstance(data, ArgsKwargs) else None
    env = RagContext.env_vars()
    groups: dict[tuple[str | int, ...], list[ErrorDetails]] = {}
    for error in exc.errors():
        name, *rest = error["loc"] or ("",)
        if name in NESTED and rest and isinstance(rest[0], str):  # an option of a nested settings object
            name, rest = f"{name}.{rest[0]}", rest[1:]
        elif name in GraphSearchOptions.env_vars():  # raised by its own default, from the environment
            name = f"graph_search.{name}"
        # ints index a tuple; a str is the member of a union pydantic tried: one message per value
        groups.setdefault((name, *(p for p in rest if isinstance(p, int))), []).append(error)
    errors: list[InitErrorDetails] = []
    for loc, group in groups.items():
        first, name = group[0], str(loc[0])
        if first["type"] == "value_error":  # our validators' messages name the field themselves
            text = str(first["ctx"]["error"])
        elif first["type"] == "unexpected_positional_argument":
            text = f"RagContext takes keyword arguments only, got {first['input']!r}"
        else:
            where = name + "".join(f"[{p}]" for p in loc[1:])
            text = f"RagContext.{where}={first['input']!r}: " + "; or ".join(e["msg"] for e in group)
        variable = env.get(name)
        if passed is not None and variable and name.split(".")[0] not in passed and os.environ.get(variable):
            text += f" (from environment variable {variable}={os.environ[variable]!r})"
        errors.append({"type": PydanticCustomError(first["type"], text), "loc": loc, "input": None})
    return ValidationError.from_exception_data("RagContext", errors)


@dataclass(
    kw_only=True,
    config=ConfigDict(
        validate_default=True,  # environment strings are converted and checked like passed values
        validate_assignment=True,
        extra="forbid",  # a misspelt setting is an error, not silently ignored
        hide_input_in_errors=True,  # messages quote the value themselves
        use_attribute_docstrings=True,  # field docs become descriptions in LangGraph Studio
    ),
)
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

    retriever: SkipJsonSchema[InstanceOf[BaseRetriever] | InstanceOf[VectorStore]] | None = None
    """Your own LangChain ``BaseRetriever`` or ``VectorStore``: every method's retrieve step then
    searches through it instead of the Milvus store (``rag_graphs.search.own``: a vector store by
    ``similarity_search_with_score``; each hit gets a stable id, its own or a hash of its text,
    so citations resolve), ``begin`` skips the store checks, and ``search_mode`` defaults to
    ``dense``. Refused with options that read the store: hybrid/graph search, filters and access
    fields, ``search_unit='sentence'``, ``expand``, and the raptor and hipporag methods."""

    retriever_timeout: Seconds = _env("RAG_GRAPHS_RETRIEVER_TIMEOUT", 60.0)
    """Seconds your own ``retriever`` may take for one search; past it the run fails, naming this
    setting (a retriever that hangs used to hang the run forever). Not retried: a search that
    hung once is likely to hang again."""

    k: TopK = _env("RAG_GRAPHS_K", 4)
    """Chunks returned per retrieval (at most 16,384: Milvus's top-k limit)."""

    search_mode: Literal["auto", "dense", "hybrid", "graph"] = _env("RAG_GRAPHS_SEARCH_MODE", "auto")
    """``auto`` (the default) = ``graph`` when the collection has an entity graph (ingest builds
    one unless ``--no-graph``), else ``hybrid``; the first retrieve step of every run says which
    ran and why. ``hybrid`` = BM25 + dense fused by RRF in Milvus; ``dense`` = embeddings only;
    ``graph`` = Personalized PageRank over the entities chunks share, ordered under hybrid
    search's first hits (HippoRAG; refused without the entity graph: ``rag-graphs graph build``)."""

    search_unit: Literal["chunk", "sentence"] = _env("RAG_GRAPHS_SEARCH_UNIT", "chunk")
    """What dense and hybrid search match: ``chunk``, or ``sentence`` (small-to-big: the
    collection's sentence rows, ``rag_graphs.store.sentences``, are searched and their parent chunks
    returned, deduplicated, in the order of each one's best sentence; needs ``rag-graphs
    sentences build`` or ``rag-graphs ingest --children``). Graph search ignores it."""

    graph_search: GraphSearchOptions = field(default_factory=GraphSearchOptions)
    """Graph search's settings (``rag_graphs.config.graph_search``), each also read from
    ``RAG_GRAPHS_GRAPH_<NAME>``, e.g. ``RAG_GRAPHS_GRAPH_DAMPING=0.5``; in JSON (LangGraph Studio,
    the server) ``{"graph_search": {"damping": 0.5}}``."""

    search_filter: SearchFilter | None = _env("RAG_GRAPHS_SEARCH_FILTER", None)
    """A Milvus boolean expression every search must satisfy, e.g.
    ``source like "%annual_report%"`` or ``chunk_id in ["a", "b"]``; None searches all.
    Written by the operator, used as is: never build it from user input (use the
    access fields below, whose values are quoted). It must be one balanced expression
    (``rag_graphs.config.specs.check_filter``): it is parenthesised beside the access fields, and a
    filter such as ``1==1) or (1==1`` that would close that parenthesis is refused."""

    tenant: Label | None = _env("RAG_GRAPHS_TENANT", None, restricts=True)
    """Access control: search only chunks ingested with this tenant (``IngestOptions(tenant=...)``);
    chunks without one are then out of reach. None: no tenant restriction. An empty or blank
    value is refused, also from ``RAG_GRAPHS_TENANT=`` (unset it for no restriction), as are
    empty ``RAG_GRAPHS_TAGS``/``RAG_GRAPHS_SOURCES`` (``,``): an access setting fails closed."""

    tags: Labels = _env("RAG_GRAPHS_TAGS", (), _names, restricts=True)
    """Access control: search only chunks carrying at least one of these tags
    (``IngestOptions(tags=...)``; env: comma-separated). Empty: no tag restriction."""

    sources: Labels = _env("RAG_GRAPHS_SOURCES", (), _names, restricts=True)
    """Access control: search only chunks of these sources (the stored ``source``: a resolved
    file path or a URL; see ``rag-graphs sources``). Empty: every source."""

    num_queries: Positive = _env("RAG_GRAPHS_NUM_QUERIES", 3)
    """Queries the model writes for multi-query and RAG-Fusion (the question is searched too),
    and the most sub-questions decomposition keeps."""

    rrf_k: Positive = _env("RAG_GRAPHS_RRF_K", 60)
    """Reciprocal rank fusion constant: score = sum of 1 / (rrf_k + rank)."""

    first_hop_weight: Weight = _env("RAG_GRAPHS_FIRST_HOP_WEIGHT", 3.0)
    """Weight of the first retrieval round's searches when a run's rounds are fused into
    ``documents`` (weighted RRF; 1 = plain RRF). Later rounds search with model-written
    queries: on IRCoT + graph search (2Wiki dev, first 30, SmolLM2) plain RRF let them push
    the first round's hits down, R@2 53.3 -> 59.2 and R@5 85.0 -> 86.7 with 3 (BENCHMARKS.md).
    A run with one round (naive, RAG-Fusion's fan-out) is plain RRF whatever this is."""

    reranker: RerankerSpec = _env("RAG_GRAPHS_RERANKER", "none")
    """Reranker of every retrieval (``rag_graphs.search.rerank``): ``none``; ``mmr`` (diversity by the
    store's embeddings, no extra model); ``llm`` (listwise by the chat model, strong models
    only); ``cross-encoder:<local dir>`` (sentence-transformers);
    or a LangChain ``BaseDocumentCompressor``. Searches ``fetch_k`` candidates, keeps ``k``."""

    fetch_k: TopK = _env("RAG_GRAPHS_FETCH_K", 20)
    """Candidates each search fetches for the reranker (used only when ``reranker`` is set)."""

    mmr_lambda: Fraction = _env("RAG_GRAPHS_MMR_LAMBDA", 0.5)
    """MMR reranker: weight of relevance against diversity (1 = relevance only)."""

    search_cache: NonNegative = _env("RAG_GRAPHS_SEARCH_CACHE", 1024)
    """Entries of the process's cross-question search cache (``rag_graphs.search.cache``; 0 = off): the
    same normalised query on the same store, collection, generation, mode, filter and k is
    searched once. Any ingest or delete in this process invalidates the collection's entries."""

    search_cache_path: CachePath = _env("RAG_GRAPHS_SEARCH_CACHE_PATH", None)
    """SQLite file of the persistent search cache (``rag_graphs.search.disk_cache``; None / ``none`` =
    off), consulted on the process cache's misses and shared by every process naming it; keyed
    on the collection's fingerprint, so an ingest or delete in any process invalidates it."""

    expand: ExpandSpec = _env("RAG_GRAPHS_EXPAND", "none")
    """Expansion of every retrieval's kept hits (``rag_graphs.search.neighbours``): ``none``, or
    ``neighbours:N`` (the N chunks before and after each hit in the same file, reading order,
    placed right after it), or ``section`` (the other chunks under the hit's own heading path in
    the same file, reading order); a note step names what was added."""

    expand_max_tokens: Positive = _env("RAG_GRAPHS_EXPAND_MAX_TOKENS", 1024)
    """Token budget (four characters a token) of the chunks ``expand`` adds per search."""

    compress: CompressSpec = _env("RAG_GRAPHS_COMPRESS", "none")
    """Contextual compression of every retrieval's kept passages (``rag_graphs.search.compress``), after
    rerank and expand: ``none``, or filters chained with commas: ``embeddings:<t>`` (drop below
    cosine ``t`` to the query), ``redundant:<t>`` (drop near-duplicates of a higher-ranked
    passage), ``llm`` (keep the sentences the chat model says answer; strong models only).
    A note step names what was cut and the prompt tokens saved."""

    decomposition_mode: Literal["parallel", "recursive"] = _env("RAG_GRAPHS_DECOMPOSITION_MODE", "parallel")
    """``parallel``: answer sub-questions independently, then synthesise; ``recursive``: in order,
    each with the earlier question/answer pairs as background."""

    demonstrations: str | None = _env("RAG_GRAPHS_DEMONSTRATIONS", "builtin")
    """Solved examples DRAG and IterDRAG show (``rag_graphs.text.demonstrations``): ``builtin`` (the
    shipped ones, mined from MuSiQue dev questions, with IterDRAG follow-up chains), ``none``,
    or your own JSONL (question, answer, documents, optional chain); ``rag-graphs
    mine-demos`` writes one from a labelled set."""

    num_demos: NonNegative = _env("RAG_GRAPHS_NUM_DEMOS", 2)
    """In-context demonstrations (m) DRAG and IterDRAG show, from ``demonstrations``."""

    iterdrag_iterations: LoopBudget = _env("RAG_GRAPHS_ITERDRAG_ITERATIONS", 5)
    """Most follow-up sub-queries IterDRAG may ask (the paper's n; at most 50, like every loop budget)."""

    raptor_mode: Literal["collapsed", "traversal"] = _env("RAG_GRAPHS_RAPTOR_MODE", "collapsed")
    """RAPTOR query: ``collapsed`` searches every tree level at once; ``traversal`` descends from
    the top level, keeping the ``k`` best children at each level."""

    graphrag_search: Literal["auto", "global", "local"] = _env("RAG_GRAPHS_GRAPHRAG_SEARCH", "auto")
    """GraphRAG: ``global`` maps the community reports of ``graphrag_level`` to scored key points
    and answers from the best; ``local`` answers from the question's passages and its entities'
    community reports; ``auto`` takes global for ``global_summary`` questions, else local."""

    graphrag_level: NonNegative = _env("RAG_GRAPHS_GRAPHRAG_LEVEL", 1)
    """GraphRAG global search: the community level mapped (0 = finest; a level the hierarchy
    lacks reads the coarsest level below it). Level 1 brought as many themes into the context
    as level 0 or more, with a third to a half of its map calls (BENCHMARKS.md)."""

    graphrag_batch: Annotated[int, Field(ge=1, le=32)] = _env("RAG_GRAPHS_GRAPHRAG_BATCH", 8)
    """GraphRAG global search: community reports per map call (1-32)."""

    graphrag_context_tokens: Positive = _env("RAG_GRAPHS_GRAPHRAG_CONTEXT_TOKENS", 2000)
    """GraphRAG: token budget (four characters a token) of the answer's context, half for the
    key points or reports, half for the passages they cite."""

    routes: Routes = _env("RAG_GRAPHS_ROUTES", "single_hop=naive,multi_hop=ircot,global_summary=graphrag")
    """The ``auto`` router's method per question kind (``single_hop``, ``multi_hop``,
    ``global_summary``; ``no_retrieval`` answers directly; a kind left out goes to ``naive``;
    a route to ``graphrag`` runs ``raptor`` while the collection has no community reports, and a
    route to ``raptor`` runs ``rag_fusion`` while it has no RAPTOR tree).
    Also accepts the environment's string form ``"single_hop=naive,multi_hop=ircot"``."""

    router: Literal["examples", "llm"] = _env("RAG_GRAPHS_ROUTER", "examples")
    """How ``auto`` classifies a question: ``examples`` (nearest labelled example questions under
    the embedding model; no model call, works with the smallest chat models) or ``llm`` (the chat
    model chooses; for strong models)."""

    router_examples: str | None = _env("RAG_GRAPHS_ROUTER_EXAMPLES", None)
    """JSON file of labelled example questions per kind for ``router="examples"``; None: the
    shipped ``prompts/question_kinds.json``."""

    router_file: str | None = _env("RAG_GRAPHS_ROUTER_FILE", None)
    """A fitted router, the JSON ``rag-graphs eval --report RUN --fit-router router.json`` writes
    from a run over your labelled questions (``rag_graphs.text.routing``): ``auto`` then runs the
    method fitted for the question's segment (by its kind from ``router``, its words, its
    entities: the cheapest within the fit's margin of the best) instead of ``routes``, and its
    first step names the file and why. The fit reads kinds by ``router_examples``: with
    ``router="llm"`` the kind ``auto`` sees may differ from the one fitted on. None (the
    default): ``routes``. A file the server reads, so a served run takes it from its deployment
    only."""

    max_hops: LoopBudget = _env("RAG_GRAPHS_MAX_HOPS", 3)
    """Budget of retrieval hops for multi-hop methods (loop budgets are at most ``MAX_LOOP``, 50)."""

    fixed_hops: LoopBudget = _env("RAG_GRAPHS_FIXED_HOPS", 2)
    """Number of hops of the fixed-step method."""

    max_steps: LoopBudget = _env("RAG_GRAPHS_MAX_STEPS", 8)
    """Budget of loop iterations (agent steps, rewrites) for looping methods."""

    web_search: WebSearchSpec = _env("RAG_GRAPHS_WEB_SEARCH", None)
    """Web search for CRAG's web branch and ReAct's ``web_search`` tool: ``none``,
    ``duckduckgo``, ``tavily`` (needs ``TAVILY_API_KEY``), ``searxng:<http(s) url>``
    (``rag_graphs.llm.web``; the ``web`` extra), or any LangChain tool. Off when None / ``none``."""

    tool_calling: Literal["auto", "native", "text"] = _env("RAG_GRAPHS_TOOL_CALLING", "auto")
    """How the ReAct agent calls tools: ``native`` (the model's tool-calling API),
    ``text`` (Thought/Action lines, for any model) or ``auto`` (native when the
    model can choose among tools itself, else text)."""

    interrupts: Interrupts = _env("RAG_GRAPHS_INTERRUPTS", frozenset())
    """Where a run stops for a person (``rag_graphs.nodes.interrupts``; env: comma-separated, e.g.
    ``plan,web_search``): ``plan`` (approve or edit the sub-questions of ``planned`` and
    ``decomposition``), ``web_search`` (confirm ``crag``'s and ``react``'s web searches),
    ``clarify`` (``auto`` asks back when unsure of the question's kind). Empty (the default): none.
    A stopped run waits on its thread; resume it with a value (the kinds it began with hold)
    (``rag_graphs.run``'s ``resume=``, ``rag-graphs ask --resume``, LangGraph's ``Command(resume=...)``)."""

    reader: Literal["auto", "generate", "extract"] = _env("RAG_GRAPHS_READER", "auto")
    """How the final answer is read out of the run's passages (``rag_graphs.nodes.reading``):
    ``generate`` (the chat model writes it from the numbered passages), ``extract`` (no model
    call: ``rag_graphs.text.reader`` picks a typed short answer span, its evidence sentence(s) and
    their citations, or says ``no_evidence``) or ``auto`` (the default: ``extract`` when the chat
    model is the embedded SmolLM2-135M, whose generated answers were 0 exact matches of 100 even
    given the gold passages (issue 51), ``generate`` for any other model). Answer prompts without
    passages (``answer_directly``) and GraphRAG's global search always generate."""

    stop_rule: Literal["auto", "model", "reader"] = _env("RAG_GRAPHS_STOP_RULE", "auto")
    """Who says "enough" in the shared ``decide`` node of ``iterative``'s retrieval loop
    (``rag_graphs.nodes.decide``): ``model`` (the chat model's ``decide_enough`` judgement and
    next query), ``reader`` (first the extract reader: the loop stops with no model call when it
    finds an answer with at least ``STOP_CONFIDENCE`` in the gathered passages, fitted on the dev
    tune halves; otherwise the model decides as under ``model``) or ``auto`` (the default:
    ``reader`` when the run answers through the extract reader, see ``reader``, else ``model``)."""

    max_answer_tokens: Positive = _env("RAG_GRAPHS_MAX_ANSWER_TOKENS", 256)
    """Upper bound on tokens the chat model may generate per call."""

    max_concurrency: Positive = _env("RAG_GRAPHS_MAX_CONCURRENCY", 4)
    """Most model calls one node runs at once when it fans out (grading each passage, ...)."""

    relevance_threshold: Annotated[int, Field(ge=0, le=10)] = _env("RAG_GRAPHS_RELEVANCE_THRESHOLD", 5)
    """Self-RAG: a passage scored at least this (0-10) by the relevance grader is kept."""

    hyde_search: Literal["passage", "question+passage"] = _env("RAG_GRAPHS_HYDE_SEARCH", "passage")
    """HyDE: search the hypothetical passage alone (the paper's and LangChain's form) or the
    question followed by the passage (keeps the question's own words for BM25)."""

    prompts: PromptTexts = _env("RAG_GRAPHS_PROMPTS", {}, from_env)
    """This run's wording of prompt roles: template name under ``prompts/templates/`` -> replacement
    text in the template's format (``[system]``/``[human]`` sections, the same ``{placeholders}``;
    where the shipped one says fenced passages are data, so must it). Every node filling that role
    uses it. Env: a JSON object, or the path of a JSON file. A served graph's client may set it
    (``rag_graphs.config.prompts`` says why that widens nothing)."""

    @model_validator(mode="wrap")
    @classmethod
    def _name_the_field(cls, data: Any, handler: Callable[[Any], Any]) -> Any:
        passed = data.kwargs if isinstance(data, ArgsKwargs) and data.kwargs else {}
        if passed.get("retriever") is not None and "search_mode" not in passed:
            data = ArgsKwargs(data.args, {**passed, "search_mode": "dense"})  # own retriever: dense
        try:
            return handler(data)
        except ValidationError as exc:
            raise _named(exc, data) from None

    @model_validator(mode="after")
    def _own_retriever_fits(self) -> RagContext:
        if self.retriever is not None:
            if why := own_retriever_refusal(self):
                raise ValueError(why)
        return self

    @classmethod
    def env_vars(cls) -> dict[str, str]:
        """Field name -> environment variable that sets its default; ``graph_search.<option>`` for
        the options of graph search."""
        env = {f.name: f.metadata["env"] for f in fields(cls) if "env" in f.metadata}
        env.update((f"graph_search.{k}", v) for k, v in GraphSearchOptions.env_vars().items())
        return env
