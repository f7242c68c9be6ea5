"""CPU seconds of the Markdown format module: in this process, and as a whole process like the reference figures.

Run: ``.venv/bin/python -m benchmarks.bench_markdown [FILE] [--runs N]``; FILE defaults to the standard benchmark
input ``/tmp/bench-in/big.md`` (write it with ``../shared/bench/gen.py /tmp/bench-in`` from a benchmark venv).

Every figure is CPU time (``time.process_time``, or the child's rusage), the best of N runs: the machine is shared,
and the best run is the one least disturbed. Reported:

- ``extract``: ``markdown_format.extract`` in this process, with the parse split out: ``fast blocks``
  (markdown-it-pyrs's tree and the walk that turns it into block events), ``reference blocks`` (markdown-it-py's
  block parse, the fallback) and ``walk`` (events to artifact: inline text, locators, the builder);
- ``extract (markdown-it-py only)``: the module with the fast parser off, as it was before it had one;
- ``process``: a fresh interpreter that imports the module, reads the file, extracts and serializes the artifact (the
  way Kreuzberg's 0.22 s for big.md in ``shared/bench/README.md`` was taken), with and without the fast parser.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from extract_fn.formats.frame import GcPolicy, gc_policy

DEFAULT_INPUT = Path("/tmp/bench-in/big.md")
KREUZBERG_BIG_MD_S = 0.22

_CHILD = r"""
import resource, sys
from extract_fn.formats import markdown_format
from extract_fn.formats.base import ExtractRequest
from shared.artifact_builder import serialize
data = open(sys.argv[1], "rb").read()
request = ExtractRequest("markdown", name=sys.argv[1].rsplit("/", 1)[-1])
if sys.argv[2] == "fast":
    artifact = markdown_format.extract(data, request)
else:
    with gc_policy(GcPolicy.PAUSE):
        artifact = markdown_format._extract(data, request, fast=False)
raw = serialize(artifact)
ru = resource.getrusage(resource.RUSAGE_SELF)
print(ru.ru_utime + ru.ru_stime, len(raw), ru.ru_maxrss)
"""


def best_cpu(fn: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        gc.collect()
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def process_cpu(path: Path, mode: str, runs: int) -> tuple[float, int, float]:
    """Best CPU seconds of a whole process, the artifact's size and the peak RSS (MB)."""
    root = Path(__file__).resolve().parent.parent
    results = []
    for _ in range(runs):
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, str(path), mode], cwd=root, capture_output=True, text=True, check=True
        )
        cpu, size, rss = proc.stdout.split()
        results.append((float(cpu), int(size), int(rss) / 1024))
    return min(results)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", type=Path, nargs="?", default=DEFAULT_INPUT)
    ap.add_argument("--runs", type=int, default=5)
    args = ap.parse_args()
    if not args.file.exists():
        sys.exit(f"{args.file}: missing (generate it with ../shared/bench/gen.py /tmp/bench-in)")
    # Whole processes first, while this one is small: a child's peak RSS counts the parent's pages it started with.
    processes = {mode: process_cpu(args.file, mode, args.runs) for mode in ("fast", "reference")}

    from extract_fn.formats import markdown_format as mf
    from extract_fn.formats.base import ExtractRequest
    from extract_fn.formats.output_budget import BudgetKind, output_budget
    from extract_fn.formats.textblocks import LineIndex
    from shared.artifact_builder import ArtifactBuilder

    data = args.file.read_bytes()
    request = ExtractRequest("markdown", name=args.file.name)
    text = data.decode("utf-8-sig")
    runs = args.runs

    fast = mf._fast_events(text)
    artifact = mf.extract(data, request)
    reference = mf._extract(data, request, fast=False)
    print(f"{args.file}: {len(data) / 1e6:.1f} MB, {len(artifact['blocks'])} blocks")
    print(f"  fast parser used: {fast is not None}; artifact identical to markdown-it-py's: {artifact == reference}")

    def walk() -> None:
        builder = ArtifactBuilder("markdown", parser="p", parser_version="v", unit="lines")
        mf._Walker(builder, LineIndex(text), output_budget(request, BudgetKind.TEXT), {}, request.limits).walk(events)

    with gc_policy(GcPolicy.PAUSE):
        t_extract = best_cpu(lambda: mf.extract(data, request), runs)
        t_reference = best_cpu(lambda: mf._extract(data, request, fast=False), runs)
        t_fast_blocks = best_cpu(lambda: mf._fast_events(text), runs) if fast is not None else float("nan")
        t_ref_blocks = best_cpu(lambda: mf._reference_events(mf._parser().parse(text, {})), runs)
        events = fast if fast is not None else mf._reference_events(mf._parser().parse(text, {}))
        t_walk = best_cpu(walk, runs)
    print(f"  extract                    {t_extract:.3f} s CPU (best of {runs})")
    print(f"    fast blocks              {t_fast_blocks:.3f} s (markdown-it-pyrs tree + events)")
    print(f"    reference blocks         {t_ref_blocks:.3f} s (markdown-it-py block parse + events)")
    print(f"    walk                     {t_walk:.3f} s (events -> blocks)")
    print(f"  extract (markdown-it-py)   {t_reference:.3f} s")
    for mode, (cpu, size, rss) in processes.items():
        label = "process" if mode == "fast" else "process (markdown-it-py)"
        print(
            f"  {label:26} {cpu:.3f} s CPU (Kreuzberg {KREUZBERG_BIG_MD_S:.2f} s for big.md) | "
            f"artifact {size / 1e6:.1f} MB, peak RSS {rss:.0f} MB"
        )
    print(
        json.dumps(
            {
                "extract_s": t_extract,
                "reference_extract_s": t_reference,
                "process_s": processes["fast"][0],
                "reference_process_s": processes["reference"][0],
            }
        )
    )


if __name__ == "__main__":
    main()
