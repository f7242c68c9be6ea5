"""A worker's start and its first requests, light (modules imported on first use) against warm (``preload``).

    .venv/bin/python -m benchmarks.bench_worker_start [--runs 3] [--memory-limit-mb 2048]

For each run and each mode, interleaved: a one-worker pool (the service's extractors, the default memory limit)
starts its child; reported are the wall time until the child said it is ready, the child's CPU-seconds, RSS and
VmData (what ``RLIMIT_DATA`` counts) at that point, and the wall time of one small corpus file per format, each the
first of its format on that worker (a light worker imports that format's module and its libraries then). Best of
``--runs`` for times, the last run's memory. Loopback and local processes only.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path
from typing import Any

from extract_fn.formats import warm_imports
from extract_fn.formats.base import ExtractRequest
from extract_fn.service import default_extractors
from extract_fn.workers import WorkerPool

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"


def first_files() -> dict[str, bytes]:
    """One small ``ok`` corpus file per format (the smallest over 300 bytes)."""
    best: dict[str, tuple[int, Path]] = {}
    formats = default_extractors()
    for line in (CORPUS / "MANIFEST.tsv").read_text().splitlines()[1:]:
        path, fmt, size, _sha, expect = line.split("\t")[:5]
        if fmt in formats and expect == "ok" and int(size) > 300 and (fmt not in best or int(size) < best[fmt][0]):
            best[fmt] = (int(size), CORPUS / path)
    return {fmt: p.read_bytes() for fmt, (_s, p) in sorted(best.items())}


def _proc(pid: int) -> dict[str, float]:
    status = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmData"):
            status[key] = int(value.split()[0]) / 1024
    raw = Path(f"/proc/{pid}/stat").read_text()
    fields = raw[raw.rindex(")") + 2 :].split()
    status["cpu_s"] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return status


def one(warm: bool, files: dict[str, bytes], memory_limit: int) -> dict[str, Any]:
    extractors = default_extractors()
    pool = WorkerPool(
        1,
        timeout_s=60,
        memory_limit_bytes=memory_limit,
        max_output_bytes=256 << 20,
        preload=warm_imports(extractors) if warm else (),
    )
    with pool:
        w = pool._workers[0]
        started = time.perf_counter()
        w.await_ready(time.monotonic() + 60)
        ready_s = time.perf_counter() - started
        pid = w.pid
        assert pid is not None
        at_ready = _proc(pid)
        firsts = {}
        for fmt, data in files.items():
            t = time.perf_counter()
            pool.run_sync(extractors[fmt], data, ExtractRequest(format=fmt, max_output_bytes=256 << 20))
            firsts[fmt] = time.perf_counter() - t
        after = _proc(pid)
    return {"ready_s": ready_s, **{f"ready_{k}": v for k, v in at_ready.items()}, "firsts": firsts, "after": after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--memory-limit-mb", type=int, default=2048)
    args = parser.parse_args()
    files = first_files()
    results: dict[bool, list[dict[str, Any]]] = {False: [], True: []}
    for _ in range(args.runs):
        for warm in (False, True):
            results[warm].append(one(warm, files, args.memory_limit_mb << 20))
    print(f"best of {args.runs} (memory: the last run); one-worker pool, memory limit {args.memory_limit_mb} MB")
    for warm, rs in results.items():
        last = rs[-1]
        print(
            f"{'warm' if warm else 'light':5s}: ready {min(r['ready_s'] for r in rs):.3f} s, child CPU at ready "
            f"{min(r['ready_cpu_s'] for r in rs):.2f} s, RSS {last['ready_VmRSS']:.0f} MB, VmData "
            f"{last['ready_VmData']:.0f} MB; after one file of each format: RSS {last['after']['VmRSS']:.0f} MB, "
            f"VmData {last['after']['VmData']:.0f} MB, CPU {last['after']['cpu_s']:.2f} s"
        )
        firsts = {fmt: min(r["firsts"][fmt] for r in rs) for fmt in files}
        print("       first request per format (s): " + ", ".join(f"{k} {v:.3f}" for k, v in firsts.items()))
        print(f"       sum {sum(firsts.values()):.3f} s, median {statistics.median(firsts.values()):.3f} s")


if __name__ == "__main__":
    main()
