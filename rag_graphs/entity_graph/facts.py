"""Facts for graph search: the stored sentences most similar to a question, and the entities they name.

HippoRAG 2 (query-to-triple linking) and LinearRAG (semantic bridging) found the same thing: a
question says more about where its answer is through the *facts* most like it than through the
names it mentions (a 2-hop question rarely names the bridge entity, but the fact "X was directed
by Y" that matches its first hop names Y). Our facts are the sentence rows that
``search_unit=sentence`` already stores (``rag_graphs.store.sentences``: ``<collection>_sentences``,
one embedded row per sentence, ``parent_id`` its chunk, the chunk's metadata copied so access
filters apply to it as to the chunk). A fact's entities are its chunk's entity keys that the
sentence itself names (whole words of its normalised text), so no second NER pass and no new
rows: the graph stays what the chunk rows say, and a deleted chunk's sentences lead nowhere
because search reads every parent through the chunk collection with the caller's filter.

Cost grows with the question, not the store: one vector search over the sentences (top
``k``), then key look-ups of their parents (``rag_graphs.entity_graph.ppr`` reads them with the
neighbourhood).
"""

from __future__ import annotations

import re
import unicodedata
from concurrent.futures import Future
from dataclasses import dataclass, field

from rag_graphs.entity_graph.linking import search_with_vector
from rag_graphs.store.index import ChunkIndex
from rag_graphs.store.sentences import children_of, sentence_collection


@dataclass
class Fact:
    """One sentence row found for a question: its chunk, its text and its cosine to the question."""

    id: str
    parent: str
    text: str
    similarity: float
    entities: list[str] = field(default_factory=list)  # filled once the parent's keys are read


def has_facts(index: ChunkIndex) -> bool:
    """True when ``index`` has a sentence collection to draw facts from (one cheap existence check)."""
    return bool(index.client.has_collection(sentence_collection(index.collection)))


def search_facts(
    index: ChunkIndex, query: str, vector: list[float], *, k: int, expr: str | None
) -> Future | None:
    """The ``k`` sentences most similar to the question (dense, through ``expr``), searched in a
    worker thread so it overlaps the entity look-ups; None when there are no sentence rows."""
    if k <= 0 or not has_facts(index):
        return None
    return search_with_vector(children_of(index), query, vector, k=k, mode="dense", expr=expr)


def to_facts(hits) -> list[Fact]:
    """``search_facts``' result as facts (rows without a parent id are skipped)."""
    out = []
    for doc, score in hits:
        parent = doc.metadata.get("parent_id")
        if parent:
            out.append(Fact(str(doc.id), str(parent), doc.page_content, float(score)))
    return out


def named_in(text: str, keys: list[str]) -> list[str]:
    """The entity ``keys`` that ``text`` names as whole words of its normalised form (order kept).

    >>> named_in("He married Ilsa Brandt in Korvik.", ["korvik", "ilsa brandt", "velm"])
    ['korvik', 'ilsa brandt']
    """
    words = f" {normalize_text(text)} "
    return [key for key in keys if f" {key} " in words]


_NON_WORD = re.compile(r"[^0-9a-z]+")
_POSSESSIVE = re.compile(r"['’]s\b")


def normalize_text(text: str) -> str:
    """A sentence folded the way entity keys are (``rag_graphs.entity_graph.entities.normalize``: accents,
    case, possessives and punctuation), without its length cap or article rule, so a key
    is found in it as a run of whole words."""
    folded = unicodedata.normalize("NFKD", str(text))
    folded = "".join(ch for ch in folded if not unicodedata.combining(ch)).casefold()
    return _NON_WORD.sub(" ", _POSSESSIVE.sub("", folded)).strip()


def link_facts(facts: list[Fact], parent_keys: dict[str, list[str]]) -> list[Fact]:
    """The facts whose parent chunk is readable (``parent_keys``: chunk id -> its entity keys,
    read through the caller's filter), each given the entities its sentence names."""
    kept = []
    for fact in facts:
        keys = parent_keys.get(fact.parent)
        if keys is None:  # deleted since the sentences were built, or hidden from this caller
            continue
        fact.entities = named_in(fact.text, keys)
        kept.append(fact)
    return kept


def fact_seed_weights(facts: list[Fact], *, floor: float = 0.0, relative: bool = False) -> dict[str, float]:
    """Entity key -> its best fact similarity above ``floor`` (a name in several matching facts
    counts by its best one, so a long list of weak facts cannot outvote one close fact).

    ``relative``: similarities min-max normalised over ``facts`` first (HippoRAG 2 normalises its
    query-to-fact scores): the closest fact counts 1, the least close 0, so a question's weak
    facts seed nothing however high their raw cosine (one embedder's unrelated sentences
    still score ~0.4).

    >>> facts = [Fact("a", "p", "", 0.8, ["x"]), Fact("b", "p", "", 0.6, ["y"])]
    >>> facts.append(Fact("c", "p", "", 0.7, ["z"]))
    >>> {k: round(v, 2) for k, v in fact_seed_weights(facts, relative=True).items()}
    {'x': 1.0, 'z': 0.5}
    """
    similarity = [fact.similarity for fact in facts]
    low, high = (min(similarity), max(similarity)) if similarity else (0.0, 0.0)
    weights: dict[str, float] = {}
    for fact, value in zip(facts, similarity, strict=True):
        if relative:
            value = (value - low) / (high - low) if high > low else 1.0
        strength = value - floor
        if strength <= 0:
            continue
        for key in fact.entities:
            weights[key] = max(weights.get(key, 0.0), strength)
    return weights
