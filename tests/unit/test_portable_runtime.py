"""The embedded runtime fits the CPUs it is given, and progress fits where it is written."""

from __future__ import annotations

import io
import logging
import os

import pytest

from rag_graphs.llm import models
from rag_graphs.support import quiet
from rag_graphs.support.progress import PlainProgress, progress_bar


@pytest.fixture
def two_cpus(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(models, "CPU_QUOTA_FILE", models.Path("/nonexistent/cpu.max"))
    monkeypatch.delenv(models.LLAMA_THREADS_ENV, raising=False)


def test_llama_threads_are_half_the_affinity_mask_not_the_host(two_cpus, monkeypatch):
    assert models.llama_threads() == 1
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(8)))
    assert models.llama_threads() == 4
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3})  # taskset -c 3
    assert models.llama_threads() == 1


def test_a_cgroup_cpu_quota_lowers_the_thread_count(two_cpus, tmp_path, monkeypatch):
    quota = tmp_path / "cpu.max"
    quota.write_text("100000 100000\n")  # docker run --cpus 1
    monkeypatch.setattr(models, "CPU_QUOTA_FILE", quota)
    assert models.usable_cpus() == 1
    quota.write_text("max 100000\n")
    assert models.usable_cpus() == 2


def test_the_thread_count_is_settable_and_never_above_the_usable_cpus(two_cpus, monkeypatch):
    monkeypatch.setenv(models.LLAMA_THREADS_ENV, "2")
    assert models.llama_threads() == 2
    monkeypatch.setenv(models.LLAMA_THREADS_ENV, "64")
    assert models.llama_threads() == 2
    for bad in ("0", "-2", "two", "1.5"):
        monkeypatch.setenv(models.LLAMA_THREADS_ENV, bad)
        with pytest.raises(ValueError, match=models.LLAMA_THREADS_ENV):
            models.llama_threads()


def test_progress_in_a_file_is_one_line_per_tenth_never_a_carriage_return():
    out = io.StringIO()
    bar = progress_bar(total=1000, desc="eval demo", unit="run", file=out)
    assert isinstance(bar, PlainProgress)
    for i in range(1000):
        bar.update(1)
        bar.set_postfix_str(f"last: q{i} " + "x" * 50)  # redraws on every row in a terminal
    bar.close()
    text = out.getvalue()
    lines = text.splitlines()
    assert "\r" not in text and "\x1b" not in text
    assert 10 <= len(lines) <= 12, lines  # the start, each tenth, nothing twice
    assert lines[-1].startswith("eval demo: 1000/1000 (100%)")
    assert max(len(line) for line in lines) < 200


def test_progress_over_an_iterable_in_a_file_and_without_a_total():
    out = io.StringIO()
    assert list(progress_bar(range(7), desc="ingest", file=out)) == list(range(7))
    assert out.getvalue().splitlines()[-1].startswith("ingest: 7/7 (100%)")
    out = io.StringIO()
    bar = progress_bar(desc="entities", file=out)
    bar.update(120)
    bar.close()
    assert [line.split(" [")[0] for line in out.getvalue().splitlines()] == ["entities: 0", "entities: 120"]


def test_a_disabled_bar_writes_nothing():
    out = io.StringIO()
    for _ in progress_bar(range(5), file=out, disable=True):
        pass
    assert out.getvalue() == ""


@pytest.mark.embedded
def test_the_embedded_model_runs_on_the_chosen_thread_count():
    runtime = models.load_chat_model("embedded").client  # the llama_cpp.Llama behind it
    assert runtime.n_threads == runtime.n_threads_batch == models.llama_threads()


@pytest.fixture
def pymilvus_screen():
    """What pymilvus's own stderr handler would show (pointed at a buffer for the test)."""
    import pymilvus  # noqa: F401 - installs pymilvus's stderr handler, as a real run does

    screen = io.StringIO()
    # pymilvus's own stderr handler: exactly a StreamHandler (pytest's capture handler subclasses it,
    # and one left on this logger by an earlier test in the worker would write caplog's records here)
    handlers = [h for h in logging.getLogger("pymilvus").handlers if type(h) is logging.StreamHandler]
    assert handlers, "pymilvus no longer installs a stderr handler: revisit ingestion.quiet"
    before = [h.setStream(screen) for h in handlers]
    yield screen
    for handler, stream in zip(handlers, before, strict=True):
        handler.setStream(stream)


def _plumbing_noise() -> None:
    """What pymilvus and Milvus Lite's gRPC server log about the timestamps Lite lacks."""
    query_iterator = logging.getLogger("pymilvus.client.iterator.query_iterator")
    query_iterator.warning("failed to get mvccTs from milvus server, use client-side ts instead")
    try:
        raise NotImplementedError("Method not implemented!")
    except NotImplementedError:
        logging.getLogger("grpc._server").exception("Exception calling application: Method not implemented!")
    logging.getLogger("pymilvus").warning("collection demo: a real problem")


def test_milvus_lite_plumbing_noise_goes_to_the_debug_log_not_the_screen(
    pymilvus_screen, caplog, monkeypatch
):
    monkeypatch.delenv(quiet.VERBOSE_ENV, raising=False)
    quiet.quiet_milvus_lite()
    with caplog.at_level(logging.DEBUG):
        _plumbing_noise()
    shown = pymilvus_screen.getvalue()
    assert "mvccTs" not in shown and "a real problem" in shown
    seen = [(r.name, r.levelno) for r in caplog.records]
    assert ("grpc._server", logging.ERROR) not in seen
    kept = [r for r in caplog.records if r.name == "rag_graphs.ingestion.thirdparty"]
    assert [r.levelno for r in kept] == [logging.DEBUG, logging.DEBUG]
    assert "mvccTs" in kept[0].getMessage() and kept[1].exc_info[0] is NotImplementedError


def test_verbose_lets_the_noise_through(pymilvus_screen, caplog, monkeypatch):
    monkeypatch.setenv(quiet.VERBOSE_ENV, "1")
    quiet.quiet_milvus_lite()
    with caplog.at_level(logging.DEBUG):
        _plumbing_noise()
    assert "mvccTs" in pymilvus_screen.getvalue()
    assert ("grpc._server", logging.ERROR) in [(r.name, r.levelno) for r in caplog.records]


def test_a_local_store_connects_without_keepalive_pings(store_uri, fake_embeddings):
    """Keepalive every 10 s against a server that allows one per 5 min ends in GOAWAY too_many_pings."""
    from rag_graphs.store import ChunkIndex

    index = ChunkIndex(uri=store_uri, collection="quiet", embeddings=fake_embeddings)
    handler = index.client._get_connection()
    assert handler._grpc_options == quiet.LOCAL_GRPC_OPTIONS
