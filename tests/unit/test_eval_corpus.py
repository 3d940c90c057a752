"""The evaluator's corpus in Milvus: keyed by content, passages over the store's limit split, and
the distractor and oracle settings narrowing the operator's filter (never replacing it)."""

from __future__ import annotations

import itertools
import json

import pytest
from langchain_core.messages import AIMessage

from rag_graphs.eval import EvalOptions, evaluate, load_dataset, read_rows
from rag_graphs.eval.corpus import collection_name, corpus_documents
from rag_graphs.store.fields import MAX_CHUNK_CHARS
from tests.conftest import RecordingChat, write_jsonl


def _recording() -> RecordingChat:
    return RecordingChat(messages=itertools.cycle([AIMessage(content="Korvik [1].")]), seen=[])


def _evaluate(dataset, ctx, tmp_path, run: str, **kwargs):
    kwargs.setdefault("methods", ["naive"])
    methods = kwargs.pop("methods")
    where = {"run_dir": tmp_path / run, "eval_store": str(tmp_path / "eval.db"), "progress": False}
    return evaluate(dataset, methods, context=ctx, options=EvalOptions(**where, **kwargs))


def _prompts(model: RecordingChat) -> str:
    return "\n".join(str(m.content) for call in model.seen for m in call)


def test_an_edited_corpus_of_the_same_size_is_indexed_again(tiny, make_context, tmp_path):
    first = _recording()
    _evaluate(tiny, make_context(chat_model=first, k=2), tmp_path, "a", setting="oracle", limit=1)
    assert "born in Korvik." in _prompts(first)
    corpus = tiny / "corpus.jsonl"
    edited = corpus.read_text().replace("born in Korvik.", "born in Korvak.")
    assert len(edited) == len(corpus.read_text())  # same size, same path: only the content differs
    corpus.write_text(edited)
    second = _recording()
    _evaluate(tiny, make_context(chat_model=second, k=2), tmp_path, "b", setting="oracle", limit=1)
    assert "born in Korvak." in _prompts(second) and "born in Korvik." not in _prompts(second)


def test_the_collection_is_named_by_content_not_by_path(tiny, tmp_path):
    moved = tmp_path / "elsewhere" / "tiny"
    moved.parent.mkdir()
    tiny.rename(moved)
    same = collection_name(load_dataset(moved), "spec-a")
    copy = tmp_path / "tiny"
    copy.mkdir()
    for name in ("dev.jsonl", "corpus.jsonl"):
        (copy / name).write_text((moved / name).read_text())
    assert collection_name(load_dataset(copy), "spec-a") == same  # a copy reuses its index
    assert collection_name(load_dataset(copy), "spec-b") != same  # another embedding model does not


@pytest.fixture
def long_passage_set(tmp_path):
    """Two questions; the first's supporting passage is 72,005 characters (Milvus keeps 65,535)."""
    words = " ".join(f"word{i % 97}" for i in range(12_000))
    text = f"Ilsa Brandt was born in Korvik. {words}"
    title = "Ilsa Brandt"
    text = text[: 72_005 - len(title) - 1]
    passages = [
        {"id": "long", "title": title, "text": text},
        {"id": "short", "title": "Korvik", "text": "Korvik is a harbour town."},
        {"id": "other", "title": "Halden", "text": "Halden has a tide mill."},
    ]
    folder = tmp_path / "longset"
    folder.mkdir()
    questions = [
        {"id": "q0", "question": "Where was Ilsa born?", "answer": "Korvik", "supporting_ids": ["long"]},
        {"id": "q1", "question": "What is in Halden?", "answer": "tide mill", "supporting_ids": ["other"]},
    ]
    write_jsonl(folder / "dev.jsonl", questions)
    write_jsonl(folder / "corpus.jsonl", passages)
    assert len(f"{title}\n{text}") == 72_005
    return folder


def test_a_passage_over_the_store_limit_is_split_and_still_counts_for_recall(
    long_passage_set, make_context, tmp_path
):
    ctx = make_context(chat_model=_recording(), k=20)
    run = _evaluate(long_passage_set, ctx, tmp_path, "run", retrieval_only=True)
    rows = {r["id"]: r for r in read_rows(run)}
    assert all(r["error"] is None for r in rows.values())
    assert rows["q0"]["recall"] == 1.0  # every piece still names its passage
    pieces = [i for i in rows["q0"]["retrieved_ids"] if i == "long" or i.startswith("long#")]
    assert len(pieces) == 5  # 72,005 characters in pieces of at most 16,000
    # the oracle setting finds every piece of the gold passage (and nothing else)
    run = _evaluate(long_passage_set, ctx, tmp_path, "oracle", retrieval_only=True, setting="oracle")
    oracle = {r["id"]: r for r in read_rows(run)}
    assert sorted(oracle["q0"]["retrieved_ids"]) == sorted(pieces) and oracle["q0"]["recall"] == 1.0


def test_pieces_keep_the_title_and_id_and_fit_the_store(long_passage_set):
    docs = corpus_documents(load_dataset(long_passage_set))
    pieces = [d for d in docs if d.metadata["passage_id"] == "long"]
    assert [d.metadata["chunk_id"] for d in pieces] == ["long", "long#2", "long#3", "long#4", "long#5"]
    assert all(d.page_content.startswith("Ilsa Brandt\n") for d in pieces)
    assert all(len(d.page_content) <= MAX_CHUNK_CHARS for d in pieces)
    assert all(len(d.page_content.encode()) <= 65_535 for d in pieces)
    body = "".join(d.page_content.removeprefix("Ilsa Brandt\n") for d in pieces).replace(" ", "")
    original = json.loads((long_passage_set / "corpus.jsonl").read_text().splitlines()[0])["text"]
    assert body == original.replace(" ", "")  # nothing lost at the cuts


def test_a_passage_title_over_the_limit_is_refused_naming_file_and_line(tmp_path):
    folder = tmp_path / "set"
    folder.mkdir()
    write_jsonl(folder / "dev.jsonl", [{"question": "Q?", "answer": "A"}])
    passages = [{"id": "a", "text": "x"}, {"id": "b", "title": "t" * 1001, "text": "y"}]
    write_jsonl(folder / "corpus.jsonl", passages)
    with pytest.raises(ValueError, match=r"corpus.jsonl:2: field 'title' is over 1,000 characters"):
        corpus_documents(load_dataset(folder))


def test_distractor_and_oracle_settings_keep_the_operators_filter(tiny, make_context, tmp_path):
    ctx = make_context(chat_model=_recording(), k=4, search_filter='title != "noise"')
    for setting in ("distractor", "oracle", "open"):
        run = _evaluate(tiny, ctx, tmp_path, setting, setting=setting, retrieval_only=True)
        for row in read_rows(run):
            assert row["retrieved_ids"], (setting, row)
            assert not any(i.endswith("c") for i in row["retrieved_ids"]), (setting, row)  # p?c: "noise"
            if setting != "open":
                assert set(row["retrieved_ids"]) <= {f"p{row['id'][1]}{x}" for x in "ab"}
