"""OCR: seconds per page, peak RSS per worker, word recall/precision at 200 and 300 dpi, ours beside Kreuzberg.

    python -m benchmarks.bench_ocr [--dpi 200 300] [--kinds clean skew2 ...] [--out benchmarks/out/ocr]

Pages come from ``tests/ocr_pages.py`` (seeded), written as PNG with their text. Each engine runs in its own
process pinned to one core (``taskset -c 0`` where present): ours (``extract_fn.ocr.engine``, this venv) and
Kreuzberg 4 with its Tesseract OCR (``.venv-bench``; the Debian ``tesseract-ocr`` package), each page given as a
PNG file. Per page: CPU seconds of the process (the machine is shared, so wall time is printed apart) and recall /
precision; per engine: the peak RSS the engine added (ru_maxrss after the pages minus before loading anything).
Outbound connections are refused in the worker processes: run as root they get an empty network namespace
(``unshare -n``), and the Python socket guard refuses non-loopback connects in any case.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH_PY = ROOT / ".venv-bench" / "bin" / "python"


def _refuse_outbound() -> None:
    real_connect = socket.socket.connect

    def connect(self: socket.socket, address: Any) -> None:
        host = address[0] if isinstance(address, tuple) else ""
        if isinstance(address, tuple) and host not in ("127.0.0.1", "::1", "localhost"):
            raise OSError(f"outbound connection refused by the benchmark: {address!r}")
        real_connect(self, address)

    socket.socket.connect = connect  # type: ignore[method-assign]


def _cpu_s() -> float:
    """User + system CPU of this process and its finished children (an engine may run Tesseract as a child)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def worker(engine_name: str, pages: list[str]) -> None:
    """Runs in the engine's interpreter: one JSON line per page, then one for the engine."""
    _refuse_outbound()
    rss0 = _rss_mb()
    t0 = _cpu_s()
    if engine_name == "ours":
        from PIL import Image

        from extract_fn.ocr import engine

        def read(path: str) -> str:
            with Image.open(path) as img:
                return engine.read_image(img, dpi=int(Path(path).stem.split("-")[-1])).text

        version = engine.version()
    else:
        import kreuzberg

        config = kreuzberg.ExtractionConfig(
            force_ocr=True, use_cache=False, ocr=kreuzberg.OcrConfig(backend="tesseract", language="eng")
        )

        def read(path: str) -> str:
            return str(kreuzberg.extract_file_sync(path, config=config).content)

        version = f"kreuzberg {kreuzberg.__version__}"
    for path in pages:
        c, w = _cpu_s(), time.perf_counter()
        text = read(path)
        print(json.dumps({"page": path, "cpu_s": _cpu_s() - c, "wall_s": time.perf_counter() - w,
                          "text": text}), flush=True)  # fmt: skip
    print(json.dumps({"engine": version, "rss_added_mb": _rss_mb() - rss0, "cpu_total_s": _cpu_s() - t0}))


def _run(engine_name: str, python: Path, pages: list[Path]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    cmd = [str(python), "-m", "benchmarks.bench_ocr", "--worker", engine_name, *map(str, pages)]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    if shutil.which("unshare") and os.geteuid() == 0:
        cmd = ["unshare", "-n", *cmd]  # no network at all: Kreuzberg's Rust core is not under the Python guard
    env = {**os.environ, "OMP_THREAD_LIMIT": "1", "PYTHONPATH": str(ROOT)}
    out = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, check=True, timeout=3600).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    return rows[-1], rows[:-1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--dpi", type=int, nargs="+", default=[200, 300])
    ap.add_argument("--kinds", nargs="+", default=None)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "ocr")
    ap.add_argument("--no-kreuzberg", action="store_true")
    ap.add_argument("pages", nargs="*")
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.pages)
        return
    from tests import ocr_pages

    args.out.mkdir(parents=True, exist_ok=True)
    expected: dict[str, str] = {}
    paths: list[Path] = []
    for dpi in args.dpi:
        for kind in args.kinds or ocr_pages.KINDS:
            pg = ocr_pages.page(kind, dpi=dpi, seed=dpi + len(kind))
            path = args.out / f"{kind}-{dpi}.png"
            pg.image.save(path)
            expected[str(path)] = pg.text
            paths.append(path)
    engines: list[tuple[str, Path]] = [("ours", Path(sys.executable))]
    if not args.no_kreuzberg and BENCH_PY.exists():
        engines.append(("kreuzberg", BENCH_PY))
    print("| engine | page | dpi | recall | precision | CPU s | wall s |")
    print("|---|---|---|---|---|---|---|")
    summary = []
    for name, python in engines:
        info, rows = _run(name, python, paths)
        for row in rows:
            r, p = ocr_pages.recall_precision(expected[row["page"]], row["text"])
            kind, dpi = Path(row["page"]).stem.rsplit("-", 1)
            print(
                f"| {info['engine']} | {kind} | {dpi} | {r:.3f} | {p:.3f} | {row['cpu_s']:.2f} | {row['wall_s']:.2f} |"
            )
            row.update(recall=r, precision=p, dpi=int(dpi), kind=kind)
        for dpi in args.dpi:
            sel = [x for x in rows if x["dpi"] == dpi]
            n = max(1, len(sel))
            summary.append(
                f"{info['engine']} @ {dpi} dpi: recall {sum(x['recall'] for x in sel) / n:.3f}, precision "
                f"{sum(x['precision'] for x in sel) / n:.3f}, {sum(x['cpu_s'] for x in sel) / n:.2f} CPU s/page, "
                f"{sum(x['wall_s'] for x in sel) / n:.2f} wall s/page"
            )
        summary.append(f"{info['engine']}: peak RSS added {info['rss_added_mb']:.0f} MB")
    print()
    print("\n".join(summary))


if __name__ == "__main__":
    main()
