"""CPU seconds and peak RSS of the TOML format module: in this process, and as a whole process like the reference
figures.

Run: ``.venv/bin/python -m benchmarks.bench_toml [FILE] [--runs N] [--cli]``; FILE defaults to the standard
benchmark input ``/tmp/bench-in/big.toml`` (write it with ``../shared/bench/gen.py /tmp/bench-in`` from a benchmark
venv).

Every figure is CPU time (``time.process_time``, or a child's rusage), the best of N runs: the machine is shared,
and the best run is the one least disturbed. Reported:

- ``extract``: ``toml_format.extract`` in this process, with its parts: ``nesting guard`` (the bound checked before
  toml-rs may read the text), ``toml-rs`` and ``tomllib`` (the parsers alone; the module uses tomllib only for what
  toml-rs refuses, or when toml-rs is not installed) and ``scan + blocks`` (the rest: positions, values, blocks);
- ``extract (tomllib only)``: the module with toml-rs switched off, as it reads without it;
- ``process``: a fresh interpreter that imports the module, reads the file, extracts and serializes the artifact
  (the way Kreuzberg's 0.23 s for big.toml in ``shared/bench/README.md`` was taken), CPU and wall seconds, peak RSS;
- ``--cli``: also ``python -m extract_fn extract FILE --format toml`` as a whole (its worker process, the artifact
  check and the output included), CPU of the process and its children, wall seconds, peak RSS.
"""

from __future__ import annotations

import argparse
import gc
import json
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

DEFAULT_INPUT = Path("/tmp/bench-in/big.toml")
KREUZBERG_BIG_TOML_S = 0.23
ROOT = Path(__file__).resolve().parent.parent

_CHILD = r"""
import resource, sys, time
wall = time.perf_counter()
from extract_fn.formats import toml_format
from extract_fn.formats.base import ExtractRequest
from shared.artifact_builder import serialize
if sys.argv[2] == "tomllib":
    toml_format.toml_rs = None
data = open(sys.argv[1], "rb").read()
raw = serialize(toml_format.extract(data, ExtractRequest("toml", name=sys.argv[1].rsplit("/", 1)[-1])))
ru = resource.getrusage(resource.RUSAGE_SELF)
# peak RSS from VmHWM: ru_maxrss can carry the parent's figure over fork and exec
hwm = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
print(ru.ru_utime + ru.ru_stime, time.perf_counter() - wall, len(raw), hwm)
"""


def best_cpu(fn: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        gc.collect()
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def process_run(path: Path, mode: str, runs: int) -> tuple[float, float, int, float]:
    """Best CPU seconds of a fresh interpreter (with the wall seconds of that run), artifact bytes, peak RSS (MB)."""
    results = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-c", _CHILD, str(path), mode], cwd=ROOT, capture_output=True, text=True, check=True
        )
        wall = time.perf_counter() - start
        cpu, _inner_wall, size, rss = proc.stdout.split()
        results.append((float(cpu), wall, int(size), int(rss) / 1024))
    return min(results)


_CLI_WRAPPER = r"""
import resource, subprocess, sys, time
start = time.perf_counter()
subprocess.run([sys.executable, "-m", "extract_fn", "extract", sys.argv[1], "--format", "toml"],
               stdout=subprocess.DEVNULL, check=True)
wall = time.perf_counter() - start
ru = resource.getrusage(resource.RUSAGE_CHILDREN)  # the CLI, and its worker once the CLI has reaped it
print(ru.ru_utime + ru.ru_stime, wall, ru.ru_maxrss)
"""


def cli_run(path: Path, runs: int) -> tuple[float, float, float]:
    """Best CPU seconds of the CLI with its worker (and that run's wall seconds), and the peak RSS (MB) of the
    larger of the two processes."""
    results = []
    for _ in range(runs):
        proc = subprocess.run(
            [sys.executable, "-c", _CLI_WRAPPER, str(path)], cwd=ROOT, capture_output=True, text=True, check=True
        )
        cpu, wall, rss = proc.stdout.split()
        results.append((float(cpu), float(wall), int(rss) / 1024))
    return min(results)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", type=Path, nargs="?", default=DEFAULT_INPUT)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--cli", action="store_true", help="also time the extract CLI as a whole")
    args = ap.parse_args()
    if not args.file.exists():
        sys.exit(f"{args.file}: missing (generate it with ../shared/bench/gen.py /tmp/bench-in)")
    import tomllib

    from extract_fn.formats import toml_format as tf
    from extract_fn.formats.base import ExtractRequest

    data = args.file.read_bytes()
    request = ExtractRequest("toml", name=args.file.name)
    max_depth = request.limits.toml_rs_max_depth
    text, _bom = tf.decode_toml(data, None, request.limits.wide_text_sample)
    runs = args.runs
    rs = tf.toml_rs

    artifact = tf.extract(data, request)
    print(
        f"{args.file}: {len(data) / 1e6:.2f} MB, {len(artifact['blocks'])} blocks; parser {tf.PARSER_VERSION}; "
        f"toml-rs used: {rs is not None and tf._rs_safe(text, max_depth)} (nesting bound {tf.nesting_bound(text)})"
    )
    gc_was = gc.isenabled()
    gc.disable()  # as extract runs
    try:
        t_extract = best_cpu(lambda: tf.extract(data, request), runs)
        t_guard = best_cpu(lambda: tf._rs_safe(text, max_depth), runs)
        t_rs = best_cpu(lambda: rs.loads(text, toml_version="1.0.0"), runs) if rs is not None else float("nan")
        t_tomllib = best_cpu(lambda: tomllib.loads(text), runs)
        tf.toml_rs = None
        try:
            reference = tf.extract(data, request)
            t_tomllib_only = best_cpu(lambda: tf.extract(data, request), runs)
        finally:
            tf.toml_rs = rs
    finally:
        if gc_was:
            gc.enable()
    same = {**artifact, "parser_version": ""} == {**reference, "parser_version": ""}
    rest = t_extract - (t_guard + t_rs if rs is not None and tf._rs_safe(text, max_depth) else t_tomllib)
    print(f"  extract                  {t_extract:.3f} s CPU (best of {runs})")
    print(f"    nesting guard          {t_guard:.3f} s")
    print(f"    toml-rs                {t_rs:.3f} s (parse alone)")
    print(f"    tomllib                {t_tomllib:.3f} s (parse alone, for comparison)")
    print(f"    scan + blocks          {rest:.3f} s (the rest)")
    print(f"  extract (tomllib only)   {t_tomllib_only:.3f} s; same artifact: {same}")
    for mode, label in (("default", "process"), ("tomllib", "process (tomllib only)")):
        cpu, wall, size, rss = process_run(args.file, mode, runs)
        print(
            f"  {label:24} {cpu:.3f} s CPU, {wall:.3f} s wall (Kreuzberg {KREUZBERG_BIG_TOML_S:.2f} s for "
            f"big.toml) | artifact {size / 1e6:.1f} MB, peak RSS {rss:.0f} MB"
        )
    result = {"extract_s": t_extract, "tomllib_only_extract_s": t_tomllib_only}
    if args.cli:
        cpu, wall, rss = cli_run(args.file, runs)
        print(
            f"  CLI                      {cpu:.3f} s CPU (with its worker), {wall:.3f} s wall | peak RSS {rss:.0f} MB"
        )
        result["cli_cpu_s"] = cpu
    print(f"  peak RSS (this process)  {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    print(json.dumps(result))


if __name__ == "__main__":
    main()
