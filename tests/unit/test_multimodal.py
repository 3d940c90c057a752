"""Multimodal ingestion on documents the tests generate: formats, tables, pictures, provenance, updates."""

from __future__ import annotations

import http.server
import json
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from rag_graphs.cli import app
from rag_graphs.ingestion import IngestOptions, ingest
from rag_graphs.ingestion.convert.captioning import (
    ChatCaptioner,
    FallbackCaptioner,
    PictureInput,
    load_captioner,
)
from rag_graphs.ingestion.convert.chunking import chunk_document
from rag_graphs.ingestion.convert.entry import UnsupportedFormatError, convert
from rag_graphs.store.embeddings import chunk_tokenizer
from tests import doc_fixtures as fx
from tests.conftest import recording_chat

VISION_REPLY = "A bar chart of glider dive depth against time, peaking at 1000 m."


def _chunks(path: Path, captioner=None):
    return chunk_document(
        convert(path), source=str(path), tokenizer=chunk_tokenizer("embedded"), captioner=captioner
    )


def _by_kind(chunks):
    out: dict[str, list] = {}
    for c in chunks:
        out.setdefault(c.metadata["kind"], []).append(c)
    return out


def _ingest(paths, index, **kw):
    return ingest(paths, index=index, options=IngestOptions(progress=False, **kw))


# -- formats -----------------------------------------------------------------------


def test_docx_yields_text_table_and_a_picture_described_by_the_vision_model(tmp_path):
    vision = recording_chat(VISION_REPLY)
    chunks = _by_kind(_chunks(fx.docx(tmp_path), ChatCaptioner(vision, name="fake-vision")))
    assert set(chunks) == {"text", "table", "picture"}
    (table,) = chunks["table"]
    assert "| Glider" in table.page_content and "| Kestrel" in table.page_content
    assert table.metadata["headings"] == ["Glider fleet"] and table.metadata["crefs"] == ["#/tables/0"]
    (picture,) = chunks["picture"]
    assert VISION_REPLY in picture.page_content  # the description is in what gets embedded
    assert picture.metadata["captioner"] == "fake-vision" and picture.metadata["crefs"] == ["#/pictures/0"]
    # The model saw the pixels and the text around the picture.
    (sent,) = vision.seen
    parts = sent[-1].content
    assert any(
        p.get("type") == "image_url" and p["image_url"]["url"].startswith("data:image/png") for p in parts
    )
    assert "Kestrel dives deeper" in parts[0]["text"]
    assert all(c.metadata["captioner"] is None for c in chunks["text"] + chunks["table"])


def test_pptx_and_xlsx_tables_and_slide_pages(tmp_path):
    deck = _by_kind(_chunks(fx.pptx(tmp_path)))
    assert set(deck) == {"text", "table", "picture"}
    assert all(c.metadata["page"] == 1 and c.metadata["pages"] == [1] for cs in deck.values() for c in cs)
    assert deck["text"][0].metadata["headings"] == ["Glider results"]
    sheet = _by_kind(_chunks(fx.xlsx(tmp_path)))
    assert list(sheet) == ["table"]
    assert "| Petrel" in sheet["table"][0].page_content and "200" in sheet["table"][0].page_content


def test_pdf_without_layout_models_reads_text_pages_and_pictures(tmp_path, caplog):
    chunks = _by_kind(_chunks(fx.pdf(tmp_path)))
    assert "Kestrel completed 14 missions" in chunks["text"][0].page_content
    assert chunks["text"][0].metadata["page"] == 1
    (picture,) = chunks["picture"]
    assert picture.metadata["page"] == 1 and picture.metadata["captioner"] == "fallback"
    assert fx.PICTURE_CAPTION in picture.page_content  # the fallback uses the text around it


def test_image_file_becomes_one_picture_chunk(tmp_path):
    vision = recording_chat(VISION_REPLY)
    (chunk,) = _chunks(fx.picture(tmp_path / "dive.png"), ChatCaptioner(vision, name="fake-vision"))
    assert chunk.metadata["kind"] == "picture" and VISION_REPLY in chunk.page_content
    assert chunk.metadata["pages"] == [1] and chunk.metadata["title"] == "dive"


def test_format_comes_from_content_not_only_the_name(tmp_path):
    pdf = fx.pdf(tmp_path)
    disguised = tmp_path / "minutes.docx"
    disguised.write_bytes(pdf.read_bytes())
    assert "Kestrel completed" in _chunks(disguised)[0].page_content  # read as the PDF it is
    binary = tmp_path / "notes.md"
    binary.write_bytes(b"\x00\x01\x02binary\x00" * 50)
    with pytest.raises(UnsupportedFormatError, match="notes.md.*binary"):
        convert(binary)
    truncated = tmp_path / "cut.pdf"
    truncated.write_bytes(pdf.read_bytes()[:300])
    with pytest.raises(ValueError, match="cut.pdf"):
        convert(truncated)
    fake_zip = tmp_path / "archive.docx"
    import zipfile

    with zipfile.ZipFile(fake_zip, "w") as z:
        z.writestr("readme.txt", "hello")
    with pytest.raises(UnsupportedFormatError, match="archive.docx.*not a DOCX"):
        convert(fake_zip)


def test_password_protected_pdf_gets_a_clear_error(tmp_path):
    locked = fx.pdf(tmp_path, name="locked.pdf", password="secret")
    with pytest.raises(ValueError, match="locked.pdf.*password-protected"):
        convert(locked)


# -- tables ------------------------------------------------------------------------


def test_a_table_over_the_token_budget_is_split_by_rows_with_its_header_repeated(tmp_path):
    rows = "\n".join(f"Glider {i},{i * 10},{i * 7} km range in the northern basin" for i in range(400))
    f = tmp_path / "fleet.csv"
    f.write_text("Name,Depth,Notes\n" + rows + "\n")
    tokenizer = chunk_tokenizer("embedded")
    pieces = chunk_document(convert(f), source=str(f), tokenizer=tokenizer)
    assert len(pieces) > 3 and {c.metadata["kind"] for c in pieces} == {"table"}
    for piece in pieces:
        lines = piece.page_content.splitlines()
        assert lines[0] == "fleet" and "Name" in lines[1] and set(lines[2]) <= set("|- ")
        assert tokenizer.count_tokens(piece.page_content) <= tokenizer.get_max_tokens()
    body = [line for c in pieces for line in c.page_content.splitlines()[3:]]
    assert len(body) == 400 and len({c.id for c in pieces}) == len(pieces)


# -- HTML never fetches ------------------------------------------------------------


class _Counter(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self):  # noqa: N802 - http.server's name
        _Counter.hits.append(self.path)
        self.send_response(404)
        self.end_headers()

    def log_message(self, *args):
        pass


def test_html_reads_inline_pictures_but_never_fetches_remote_or_local_files(tmp_path):
    server = http.server.HTTPServer(("127.0.0.1", 0), _Counter)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        page = fx.html(tmp_path, remote=f"http://127.0.0.1:{server.server_port}/pixel.png")
        chunks = _by_kind(_chunks(page))
    finally:
        server.shutdown()
    assert _Counter.hits == []
    assert "root:" not in "\n".join(c.page_content for cs in chunks.values() for c in cs)
    (picture,) = chunks["picture"]  # the inline one; the unfetched two have nothing to describe
    assert picture.metadata["caption"] == fx.PICTURE_CAPTION
    (table,) = chunks["table"]
    lines = table.page_content.splitlines()
    assert (
        lines[:2] == ["Glider depths", fx.TABLE_CAPTION] and table.page_content.count(fx.TABLE_CAPTION) == 1
    )
    assert lines[2].startswith("| Glider") and set(lines[3]) <= set("|- ") and "| Kestrel" in lines[4]
    assert table.metadata["caption"] == fx.TABLE_CAPTION


# -- captioners --------------------------------------------------------------------


def test_a_failing_captioner_falls_back_and_says_so(tmp_path):
    class Broken:
        name = "broken"

        def describe(self, picture):
            raise TimeoutError("vision endpoint timed out")

    (picture,) = _by_kind(_chunks(fx.docx(tmp_path), Broken()))["picture"]
    assert picture.metadata["captioner"] == "fallback" and "Kestrel" in picture.page_content


def test_captioner_specs_and_prompts_are_checked():
    assert isinstance(load_captioner(None), FallbackCaptioner)
    with pytest.raises(ValueError, match="captioner spec 'llava'"):
        load_captioner("llava")
    with pytest.raises(ValueError, match="caption prompt 'poem'"):
        load_captioner("fallback", prompt="poem")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="api:http"):
        load_captioner("api:localhost:8000")
    assert load_captioner("api:http://127.0.0.1:1/v1#granite").url == "http://127.0.0.1:1/v1/chat/completions"


def test_chat_captioner_uses_the_selected_prompt():
    vision = recording_chat("Kestrel 1000 m")
    image = __import__("PIL.Image", fromlist=["Image"]).new("RGB", (8, 8))
    caption = ChatCaptioner(vision, name="v", prompt="extract_text").describe(
        PictureInput(image, "Fig. 2", "depths")
    )
    assert caption.text == "Kestrel 1000 m"
    assert "transcribe" in vision.seen[0][0].content.lower()


# -- the store: updates, deletion, bad input --------------------------------------


def test_mixed_folder_ingest_is_idempotent_replaces_changed_files_and_reports_bad_ones(tmp_path, index):
    docs = tmp_path / "docs"
    docs.mkdir()
    fx.docx(docs), fx.xlsx(docs), fx.pdf(docs)
    (docs / "empty.pdf").write_bytes(b"")
    (docs / "broken.pdf").write_bytes(b"%PDF-1.7\n garbage")
    first = _ingest([docs], index)
    assert sorted(Path(f.path).name for f in first.failed) == ["broken.pdf", "empty.pdf"]
    assert all(Path(f.path).name in f.error for f in first.failed)
    assert first.kinds == {"text": 2, "table": 2, "picture": 2}
    assert "2 failed" in first.summary() and "2 picture" in first.summary()
    stored = index.count()
    again = _ingest([docs], index)
    assert again.added == 0 and index.count() == stored
    (docs / "gliders.xlsx").unlink()
    fx.TABLE.append(("Skua", "350", "90"))
    try:
        fx.xlsx(docs)
    finally:
        fx.TABLE.pop()
    changed = _ingest([docs], index)
    sheet = next(f for f in changed.files if f.path.endswith("gliders.xlsx"))
    assert sheet.added == 1 and sheet.removed_stale == 1 and index.count() == stored
    sources = index.sources()
    assert sources[str((docs / "gliders.xlsx").resolve())] == {"table": 1}
    assert sources[str((docs / "fleet.docx").resolve())] == {"text": 1, "table": 1, "picture": 1}


def test_a_failed_insert_leaves_nothing_of_the_file(tmp_path, index, monkeypatch):
    import rag_graphs.store.index as store

    monkeypatch.setattr(store, "_BATCH", 1)  # one insert per chunk
    real = index.store.add_embeddings
    calls = []

    def drops_from_the_second(*args, **kwargs):
        calls.append(kwargs["ids"])
        if len(calls) >= 2:
            raise ConnectionError("Milvus dropped the connection")
        return real(*args, **kwargs)

    monkeypatch.setattr(index.store, "add_embeddings", drops_from_the_second)
    report = _ingest([fx.docx(tmp_path)], index)
    assert report.failed and "dropped the connection" in report.failed[0].error
    # The group's insert stored one chunk, failed, removed it; the file's own retry failed too.
    assert len(calls) == 3 and index.count() == 0


def test_files_over_the_size_limit_are_refused_by_name(tmp_path, index):
    big = tmp_path / "big.md"
    big.write_text("# Big\n\n" + "word " * 5000)
    report = _ingest([big], index, max_file_bytes=1000)
    assert report.failed and "big.md" in report.failed[0].error and "limit" in report.failed[0].error


def test_cli_sources_lists_kinds_and_delete_removes_a_source(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    fx.docx(docs), fx.xlsx(docs)
    store = str(tmp_path / "cli.db")
    runner = CliRunner()
    result = runner.invoke(app, ["ingest", str(docs), "--store", store])
    assert result.exit_code == 0, result.output
    assert "1 picture" in result.output and "2 table" in result.output
    listed = runner.invoke(app, ["sources", "--store", store])
    assert listed.exit_code == 0 and "fleet.docx" in listed.output and "gliders.xlsx" in listed.output
    gone = runner.invoke(app, ["ingest", "--delete", str(docs / "gliders.xlsx"), "--store", store])
    assert gone.exit_code == 0 and "removed 1 chunks" in gone.output
    listed = runner.invoke(app, ["sources", "--store", store])
    assert "gliders.xlsx" not in listed.output and "fleet.docx" in listed.output
    missing = runner.invoke(app, ["ingest", "--delete", str(docs / "nope.pdf"), "--store", store])
    assert missing.exit_code == 1 and "not an indexed source" in " ".join(missing.output.split())
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "x.pdf").write_bytes(b"%PDF-1.4 broken")
    failed = runner.invoke(app, ["ingest", str(bad), "--store", store])
    assert failed.exit_code == 1 and "x.pdf" in failed.output


def test_ingest_takes_a_rag_context(tmp_path, make_context, demo_corpus):
    ctx = make_context()
    report = ingest([demo_corpus], index=ctx, options=IngestOptions(progress=False))
    assert not report.failed and report.total_chunks_in_store == report.chunks > 5
    from rag_graphs.search.retrieval import search

    assert search(ctx, "Velmora Institute")  # the graphs see what was ingested


class _StandInServe(http.server.BaseHTTPRequestHandler):
    """Docling Serve's ``POST /v1/convert/file``, answering with a document converted here."""

    seen: list[dict] = []
    reply: dict = {}

    def do_POST(self):  # noqa: N802 - http.server's name
        body = self.rfile.read(int(self.headers["Content-Length"]))
        _StandInServe.seen.append({"path": self.path, "body": body, "key": self.headers.get("X-Api-Key")})
        payload = json.dumps(_StandInServe.reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):
        pass


def test_conversion_can_be_delegated_to_docling_serve(tmp_path, index, monkeypatch):
    source = fx.docx(tmp_path)
    converted = convert(source).export_to_dict()  # what the server would send back
    server = http.server.HTTPServer(("127.0.0.1", 0), _StandInServe)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}"
    monkeypatch.setenv("DOCLING_SERVE_API_KEY", "k-123")
    monkeypatch.setenv("RAG_GRAPHS_DOCLING_SERVE_OPTIONS", '{"pipeline": "vlm", "do_ocr": false}')
    try:
        _StandInServe.reply = {
            "document": {"filename": "fleet.docx", "json_content": converted},
            "status": "success",
        }
        report = _ingest([source], index, docling_serve=url)
        _StandInServe.reply = {"document": {"filename": "fleet.docx"}, "status": "failure",
                               "errors": [{"error_message": "pipeline crashed"}]}  # fmt: skip
        (tmp_path / "other.md").write_text("# Other\n\nText.\n")
        failed = _ingest([tmp_path / "other.md"], index, docling_serve=url)
    finally:
        server.shutdown()
    assert report.kinds == {"text": 1, "table": 1, "picture": 1} and not report.failed
    first = _StandInServe.seen[0]
    assert first["path"] == "/v1/convert/file" and first["key"] == "k-123"
    assert b'filename="fleet.docx"' in first["body"] and b"json" in first["body"]
    assert b'name="pipeline"\r\n\r\nvlm' in first["body"] and b'name="do_ocr"\r\n\r\nfalse' in first["body"]
    assert (
        failed.failed
        and "other.md" in failed.failed[0].error
        and "pipeline crashed" in failed.failed[0].error
    )


def test_chunks_of_several_files_are_embedded_in_one_call_and_never_twice(demo_corpus, store_uri):
    from langchain_core.embeddings import DeterministicFakeEmbedding

    from rag_graphs.store import ChunkIndex

    calls: list[int] = []

    class Counting(DeterministicFakeEmbedding):
        def embed_documents(self, texts):
            calls.append(len(texts))
            return super().embed_documents(texts)

    index = ChunkIndex(uri=store_uri, collection="counted", embeddings=Counting(size=32))
    first = _ingest([demo_corpus], index, entities=None)  # chunks only: entity names embed apart
    assert len(first.files) == 5 and calls == [first.chunks]  # 5 files, one embedding call
    assert [Path(f.path).name for f in first.files] == sorted(p.name for p in demo_corpus.iterdir())
    _ingest([demo_corpus], index, entities=None)
    assert calls == [first.chunks]  # nothing new: nothing embedded


def test_tesseract_captioner_reads_the_picture_and_names_the_package_when_missing(tmp_path, monkeypatch):
    from PIL import Image

    from rag_graphs.ingestion.convert.captioning import TesseractCaptioner

    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(RuntimeError, match="tesseract-ocr"):
        load_captioner("tesseract")
    # A stand-in `tesseract` program: checks it was given a PNG and prints what it "read".
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    program = bin_dir / "tesseract"
    program.write_text(
        f"#!{sys.executable}\nimport sys\n"
        "print('KESTREL  1000 m' if open(sys.argv[1], 'rb').read(4) == b'\\x89PNG' else '')\n"
    )
    program.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))
    caption = TesseractCaptioner().describe(PictureInput(Image.new("RGB", (8, 8)), "Fig. 3", ""))
    assert caption.captioner == "tesseract" and caption.text == "Fig. 3. Text in the picture: KESTREL 1000 m"
    assert TesseractCaptioner().describe(PictureInput(None, "Fig. 4", "")).captioner == "fallback"


@pytest.mark.parametrize("value", ["{not json", '["vlm"]', '{"pipeline": {"nested": 1}}'])
def test_bad_docling_serve_options_name_the_variable(value, monkeypatch):
    from rag_graphs.ingestion.convert.serve import request_options

    monkeypatch.setenv("RAG_GRAPHS_DOCLING_SERVE_OPTIONS", value)
    with pytest.raises(ValueError, match="RAG_GRAPHS_DOCLING_SERVE_OPTIONS"):
        request_options()
