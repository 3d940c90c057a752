"""Where an ingest's wall time goes, per thread (issue 47, round 3): a sampler of each thread's CPU
time (``/proc/self/task/<tid>/stat``, Linux) and a text timeline joining it with the stages the
benchmark's wrappers saw each thread in.

Why sample CPU rather than trust the stage wrappers: a thread inside a stage can be blocked (the
main thread waiting on the names' embedding inside ``add_entities``, on the last chunk piece, on
a converted file), and only its CPU time tells busy from blocked. Used by
``bench/ingest_throughput.py --timeline``.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _thread_cpu() -> dict[int, float]:
    """CPU seconds (user + system) of each thread of this process, by native id."""
    out: dict[int, float] = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:  # the thread ended
            continue
        out[int(task.name)] = (int(fields[11]) + int(fields[12])) / TICK
    return out


class Sampler:
    """Each thread's CPU seconds every ``every`` seconds, from ``start()`` to ``stop()``; threads are
    named by Python's name when Python knows them (else ``native-<tid>``: torch's OpenMP workers,
    Milvus Lite's, the tokenizer's)."""

    def __init__(self, every: float = 0.25) -> None:
        self.every = every
        self.samples: list[tuple[float, dict[int, float]]] = []
        self.names: dict[int, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="timeline-sampler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()

    def _sample(self) -> None:
        for thread in threading.enumerate():
            if thread.native_id is not None:
                self.names.setdefault(thread.native_id, thread.name)
        self.samples.append((time.perf_counter(), _thread_cpu()))

    def _run(self) -> None:
        while not self._stop.is_set():
            self._sample()
            self._stop.wait(self.every)


def uncovered(spans: list[tuple[float, float]], cover: list[tuple[float, float]]) -> float:
    """Seconds of ``spans`` that no interval of ``cover`` overlaps: the main thread's time in
    ``add_entities`` while no thread embedded names (the entity rows' own reads and writes),
    whichever thread embeds the names and whether the main thread waits for them or helps."""
    ordered = sorted(cover)
    total = 0.0
    for start, end in spans:
        covered, edge = 0.0, start
        for lo, hi in ordered:
            lo, hi = max(lo, edge), min(hi, end)
            if hi > lo:
                covered, edge = covered + hi - lo, hi
        total += end - start - covered
    return total


def summary(
    sampler: Sampler, events: list[tuple[str, str, float, float]], start: float, bin_seconds: float = 1.0
) -> dict[str, Any]:
    """Per ``bin_seconds`` of wall time from ``start``: the cores in use (the process's CPU seconds
    over the bin), each named thread's CPU share and the stage each Python thread spent most of the
    bin in; and per thread its CPU seconds and stage seconds over the run."""
    first = sampler.samples[0][0]
    end = sampler.samples[-1][0]
    bins = int((end - start) / bin_seconds) + 1
    cpu_bins: dict[str, list[float]] = {}
    for (_, a), (t1, b) in zip(sampler.samples, sampler.samples[1:], strict=False):
        if t1 < start:
            continue
        slot = min(bins - 1, max(0, int((t1 - start) / bin_seconds)))
        for tid, seconds in b.items():
            name = sampler.names.get(tid, "native")
            name = "native" if name == "native" else name
            cpu_bins.setdefault(name, [0.0] * bins)[slot] += seconds - a.get(tid, seconds)
    stage_bins: dict[str, list[dict[str, float]]] = {}
    for thread, stage, s, e in events:
        row = stage_bins.setdefault(thread, [{} for _ in range(bins)])
        t = max(s, start)
        while t < e:
            slot = int((t - start) / bin_seconds)
            if slot >= bins:
                break
            edge = min(e, start + (slot + 1) * bin_seconds)
            row[slot][stage] = row[slot].get(stage, 0.0) + edge - t
            t = edge
    lines = []
    for slot in range(bins):
        total = sum(v[slot] for v in cpu_bins.values()) / bin_seconds
        threads = " ".join(
            f"{name}={v[slot] / bin_seconds:.2f}" for name, v in sorted(cpu_bins.items()) if v[slot] > 0.05
        )
        doing = " ".join(
            f"{thread}:{max(row[slot], key=row[slot].get)}"
            for thread, row in sorted(stage_bins.items())
            if row[slot]
        )
        lines.append(f"{slot * bin_seconds:6.1f}s cores {total:4.2f} | {threads} | {doing}")
    return {
        "sampled_from": first - start,
        "lines": lines,
        "cpu_seconds": {name: round(sum(v), 2) for name, v in cpu_bins.items()},
        "stage_seconds": {
            thread: {
                stage: round(sum(e - s for th, st, s, e in events if th == thread and st == stage), 2)
                for stage in {st for th, st, _, _ in events if th == thread}
            }
            for thread in stage_bins
        },
    }
