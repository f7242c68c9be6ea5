"""Benchmark the pdf, docx and pptx format modules on the standard inputs (shared/bench/gen.py).

usage: .venv/bin/python -m benchmarks.bench_office_pdf [INPUT_DIR] [--runs N]

INPUT_DIR holds doc200.pdf, big.docx and big.pptx (made by ``shared/bench/gen.py INPUT_DIR`` in a benchmark venv).
Each measurement runs in a fresh process (cold: imports included), like the reference figures in the bench README:

- whole process: wall seconds of ``python -c "<import, read, extract, serialize>"``, median of N runs;
- in module: seconds inside ``extract()`` alone, median;
- peak RSS of that process (ru_maxrss);
- for the PDF, the share of ``extract()`` spent in table detection (ruling lines, grids, aligned text), and, for
  the choice of library, plain text of every page through pdfium and through pypdf.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
INPUTS = {"pdf": "doc200.pdf", "docx": "big.docx", "pptx": "big.pptx"}
REFERENCE = {"pdf": "0.65 s / 52 MB", "docx": "0.19 s / 52 MB", "pptx": "0.15 s / 46 MB"}

CHILD = r"""
import json, resource, sys, time
sys.path.insert(0, {root!r})
t0 = time.perf_counter()
from extract_fn.formats import {fmt}_format as mod
from extract_fn.formats.base import ExtractRequest
from shared.artifact_builder import serialize
data = open({path!r}, "rb").read()
t1 = time.perf_counter()
artifact = mod.extract(data, ExtractRequest(format={fmt!r}))
t2 = time.perf_counter()
out = serialize(artifact)
t3 = time.perf_counter()
tables = getattr(mod, "TABLE_STATS", {{}}).get("seconds", 0.0)
print(json.dumps({{"import": t1 - t0, "extract": t2 - t1, "serialize": t3 - t2, "tables": tables,
                  "blocks": len(artifact["blocks"]), "bytes": len(out),
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}}))
"""

TEXT_ONLY = r"""
import json, resource, sys, time, io
path, lib = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
t0 = time.perf_counter()
if lib == "pdfium":
    import pypdfium2 as pdfium
    pdf = pdfium.PdfDocument(data)
    n = 0
    for i in range(len(pdf)):
        page = pdf[i]; tp = page.get_textpage(); n += len(tp.get_text_range()); tp.close(); page.close()
else:
    from pypdf import PdfReader
    n = sum(len(p.extract_text() or "") for p in PdfReader(io.BytesIO(data)).pages)
print(json.dumps({"seconds": time.perf_counter() - t0, "chars": n,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(fmt: str, path: Path, runs: int) -> dict[str, float]:
    walls, inner, rss, tables = [], [], [], []
    last: dict[str, float] = {}
    for _ in range(runs):
        code = CHILD.format(root=str(ROOT), fmt=fmt, path=str(path))
        t0 = time.perf_counter()
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        walls.append(time.perf_counter() - t0)
        last = json.loads(out.stdout)
        inner.append(last["extract"])
        rss.append(last["rss_mb"])
        tables.append(last["tables"])
    return {
        "whole_s": statistics.median(walls),
        "extract_s": statistics.median(inner),
        "tables_s": statistics.median(tables),
        "rss_mb": max(rss),
        "blocks": last["blocks"],
        "artifact_bytes": last["bytes"],
    }


def text_only(path: Path, lib: str, runs: int) -> dict[str, float]:
    secs, rss = [], []
    chars = 0
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", TEXT_ONLY, str(path), lib], capture_output=True, text=True, check=True
        )
        r = json.loads(out.stdout)
        secs.append(r["seconds"])
        rss.append(r["rss_mb"])
        chars = r["chars"]
    return {"seconds": statistics.median(secs), "rss_mb": max(rss), "chars": chars}


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    runs = 5
    if "--runs" in sys.argv:
        runs = int(sys.argv[sys.argv.index("--runs") + 1])
        args = [a for a in args if a != str(runs)]
    folder = Path(args[0]) if args else Path("/tmp/bench-in")
    print(f"inputs: {folder}  runs: {runs} (median; fresh process each)")
    print(f"{'input':<12} {'whole s':>8} {'extract s':>10} {'tables s':>9} {'peak MB':>8} {'blocks':>7}  reference")
    for fmt, name in INPUTS.items():
        path = folder / name
        if not path.exists():
            print(f"{name:<12} missing (run shared/bench/gen.py {folder})")
            continue
        m = measure(fmt, path, runs)
        tables = f"{m['tables_s']:.3f}" if fmt == "pdf" else "-"
        print(
            f"{name:<12} {m['whole_s']:>8.3f} {m['extract_s']:>10.3f} {tables:>9} {m['rss_mb']:>8.1f} "
            f"{m['blocks']:>7}  Kreuzberg {REFERENCE[fmt]}"
        )
    pdf = folder / INPUTS["pdf"]
    if pdf.exists():
        for lib in ("pdfium", "pypdf"):
            r = text_only(pdf, lib, max(1, runs // 2))
            line = f"plain text of {pdf.name} with {lib:<6}: {r['seconds']:.3f} s, {r['rss_mb']:.0f} MB"
            print(f"{line}, {r['chars']} chars")


if __name__ == "__main__":
    main()
