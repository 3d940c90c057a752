"""Search p50 with and without the replace-record filter (``IndexReads.visible``, issue 40 item 11):

    nice -n 19 .venv/bin/python bench/replace_filter.py [--rows 5000] [--searches 600]

On a Milvus Lite path (no filter there: the column is a control) and on a served Milvus Lite over
loopback gRPC, where every read adds one ``describe_collection``. 384-d fake embeddings, hybrid
``k=5``; the two variants alternate search by search, so load on the machine hits both alike.
"""

from __future__ import annotations

import argparse
import socket
import statistics
import subprocess
import sys
import tempfile
import time

from langchain_core.documents import Document
from langchain_core.embeddings import DeterministicFakeEmbedding

from rag_graphs.store import ChunkIndex
from rag_graphs.store.reads import IndexReads

WORDS = "harbour granite keeper north south institute founder born town river bridge".split()


def p50s(uri: str, rows: int, searches: int) -> dict[str, float]:
    """Median search milliseconds with the filter and without it, on a fresh collection at ``uri``."""
    index = ChunkIndex(uri=uri, collection="p50", embeddings=DeterministicFakeEmbedding(size=384))
    n = len(WORDS)
    index.add(
        [
            Document(
                page_content=f"{WORDS[i % n]} {WORDS[(i * 7) % n]} note {i} about {WORDS[(i * 3) % n]}",
                metadata={"chunk_id": f"c{i}", "source": f"/docs/f{i // 4}.md", "doc_hash": f"h{i // 4}"},
            )
            for i in range(rows)
        ]
    )
    index.flush()
    real = IndexReads.visible
    times: dict[str, list[float]] = {"without": [], "with": []}
    try:
        for i in range(searches):
            variant = "with" if i % 2 else "without"
            IndexReads.visible = real if variant == "with" else (lambda self, expr: expr)  # type: ignore[method-assign]
            start = time.perf_counter()
            index.search(f"who founded the {WORDS[i % n]} {i}", k=5)
            times[variant].append(time.perf_counter() - start)
    finally:
        IndexReads.visible = real  # type: ignore[method-assign]
    return {variant: statistics.median(t[10:]) * 1000 for variant, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--rows", type=int, default=5000)
    parser.add_argument("--searches", type=int, default=600)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="replace-filter-")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    command = [
        sys.executable,
        "-m",
        "milvus_lite",
        "server",
        "--data-dir",
        f"{folder}/served",
        "--port",
        str(port),
    ]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit("the milvus-lite server did not listen within 60 s") from None
                time.sleep(0.2)
        for name, uri in (("lite path", f"{folder}/lite.db"), ("served", f"http://127.0.0.1:{port}")):
            p = p50s(uri, args.rows, args.searches)
            print(f"{name:9s} {args.rows} rows: p50 without {p['without']:.2f} ms, with {p['with']:.2f} ms")
    finally:
        server.terminate()
        server.wait(timeout=30)


if __name__ == "__main__":
    main()
