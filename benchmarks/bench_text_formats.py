"""Seconds and peak RSS of the text-like format modules (markdown, html, text) on the standard benchmark inputs.

Run: ``.venv/bin/python -m benchmarks.bench_text_formats DIR [--runs N]`` where DIR holds ``big.md``, ``big.html``
and ``big.txt`` as written by ``../shared/bench/gen.py DIR`` (it needs packages that are not in the runtime venv:
generate the inputs from a separate venv).

Each run is a fresh interpreter, timed from outside as a whole process (start-up, imports, reading the file,
``extract``, serializing the artifact; wall and CPU seconds, CPU being the steadier figure on a busy machine),
which is how the reference figures in ``shared/bench/README.md`` (Kreuzberg
0.22 s for big.md, 0.49 s for big.html, 0.34 s for big.txt) were taken. It also reports the seconds inside
``extract``, the artifact's size and the process's peak RSS. The median of the runs is printed.

``--parsers`` also times the Markdown parsers that were candidates (markdown-it-py, and mistletoe,
markdown-it-pyrs, cmarkgfm when they are importable) on big.md, parse only, in this process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

_CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
import importlib
from extract_fn.formats.base import ExtractRequest
from shared.artifact_builder import serialize
fmt, path = sys.argv[1], sys.argv[2]
mod = importlib.import_module(f"extract_fn.formats.{fmt}_format")
t1 = time.perf_counter()
data = open(path, "rb").read()
t2 = time.perf_counter()
art = mod.extract(data, ExtractRequest(fmt, name=path.rsplit("/", 1)[-1]))
t3 = time.perf_counter()
raw = serialize(art)
t4 = time.perf_counter()
ru = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"cpu_s": ru.ru_utime + ru.ru_stime, "import_s": t1 - t0, "extract_s": t3 - t2,
                  "serialize_s": t4 - t3, "blocks": len(art["blocks"]),
                  "artifact_mb": len(raw) / 1e6, "complete": art["coverage"]["complete"],
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

INPUTS = (("markdown", "big.md"), ("html", "big.html"), ("text", "big.txt"))
KREUZBERG_S = {"big.md": 0.22, "big.html": 0.49, "big.txt": 0.34}


def run_one(fmt: str, path: Path) -> dict[str, float]:
    root = Path(__file__).resolve().parent.parent
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, fmt, str(path)], cwd=root, capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{fmt} {path}: {proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    out["process_s"] = wall
    return out


def time_parsers(path: Path) -> None:
    src = path.read_text(encoding="utf-8")
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark").enable("table")
    t = time.perf_counter()
    md.parse(src)
    print(f"markdown-it-py (commonmark + table): {time.perf_counter() - t:.3f} s parse")
    candidates = {
        "mistletoe": "import mistletoe; f = mistletoe.Document",
        "markdown-it-pyrs": "import markdown_it_pyrs as m; f = m.MarkdownIt('commonmark').enable('table').tree",
        "cmarkgfm (html+sourcepos)": "import cmarkgfm; f = lambda s: cmarkgfm.markdown_to_html(s, options=2)",
    }
    for name, code in candidates.items():
        scope: dict[str, object] = {}
        try:
            exec(code, scope)  # fixed benchmark snippets
        except ImportError:
            print(f"{name}: not installed")
            continue
        fn = scope["f"]
        t = time.perf_counter()
        fn(src)  # type: ignore[operator]
        print(f"{name}: {time.perf_counter() - t:.3f} s parse")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", type=Path)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--parsers", action="store_true")
    args = ap.parse_args()
    for fmt, name in INPUTS:
        path = args.dir / name
        if not path.exists():
            print(f"{name}: missing (generate it with shared/bench/gen.py)")
            continue
        runs = [run_one(fmt, path) for _ in range(args.runs)]
        keys = ("process_s", "cpu_s", "import_s", "extract_s", "serialize_s")
        med = {k: statistics.median(r[k] for r in runs) for k in keys}
        rss = max(r["peak_rss_mb"] for r in runs)
        print(
            f"{name:9} process {med['process_s']:.3f} s wall, {med['cpu_s']:.3f} s CPU (Kreuzberg "
            f"{KREUZBERG_S[name]:.2f} s) | imports "
            f"{med['import_s']:.3f} s, extract {med['extract_s']:.3f} s, serialize {med['serialize_s']:.3f} s | "
            f"{runs[0]['blocks']} blocks, {runs[0]['artifact_mb']:.1f} MB artifact, complete={runs[0]['complete']} | "
            f"peak RSS {rss:.0f} MB"
        )
    if args.parsers and (args.dir / "big.md").exists():
        time_parsers(args.dir / "big.md")


if __name__ == "__main__":
    main()
