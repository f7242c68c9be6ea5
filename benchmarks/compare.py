"""Side-by-side benchmark: our extractor (CLI, cold process; HTTP service, warm) vs Kreuzberg and MarkItDown.

Inputs are the standard ones from ../shared/bench/gen.py. Run with ``make bench`` or::

    .venv/bin/python -m benchmarks.compare [--inputs DIR] [--repeat N] [--only big.csv,doc200.pdf] [--no-others]

Kreuzberg and MarkItDown run from ``.venv-bench`` (requirements-bench.txt), never from the runtime environment.
Each cold figure is the median wall time of N whole processes, with the peak RSS of the largest; the warm HTTP
figure is the median of N requests to one running service. Ratios are ours / Kreuzberg's (below 1 is faster).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
BENCH_PY = ROOT / ".venv-bench" / "bin" / "python"
GEN = ROOT.parent / "shared" / "bench" / "gen.py"
TOKEN = "bench-token"

INPUTS: dict[str, str] = {
    "doc200.pdf": "pdf",
    "big.docx": "docx",
    "big.pptx": "pptx",
    "big.xlsx": "xlsx",
    "big.csv": "csv",
    "big.parquet": "parquet",
    "big.html": "html",
    "big.md": "markdown",
    "big.txt": "text",
    "big.sql": "sql",
    "big.toml": "toml",
}
KREUZBERG_SUPPORTS = {"pdf", "docx", "pptx", "xlsx", "csv", "html", "markdown", "text", "toml"}
MARKITDOWN_SUPPORTS = {"pdf", "docx", "pptx", "xlsx", "csv", "html", "markdown", "text", "sql", "toml"}


@dataclass
class Figure:
    seconds: float | None
    rss_mb: float | None
    note: str = ""

    def cell(self) -> str:
        if self.seconds is None:
            return self.note or "n/a"
        rss = f" / {self.rss_mb:.0f} MB" if self.rss_mb else ""
        return f"{self.seconds:.2f} s{rss}"


def run_process(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> Figure:
    """Median wall time of ``repeat`` runs, and the largest peak RSS. The RSS comes from /usr/bin/time, a small C
    parent: a child forked from this (large) process would report this process's high-water mark as its own."""
    times: list[float] = []
    peak = 0
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "MAXRSS_KB=%M", *cmd],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            check=False,
        )
        elapsed = time.perf_counter() - start
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        if proc.returncode != 0:
            detail = [line for line in err if not line.startswith(("MAXRSS_KB=", "Command exited"))]
            return Figure(None, None, f"fails ({detail[-1][:60] if detail else proc.returncode})")
        times.append(elapsed)
        rss = [int(line.split("=", 1)[1]) for line in err if line.startswith("MAXRSS_KB=")]
        peak = max(peak, rss[-1] if rss else 0)
    return Figure(statistics.median(times), peak / 1024)


def ours_cli(path: Path, fmt: str, repeat: int) -> Figure:
    return run_process([sys.executable, "-m", "extract_fn", "extract", str(path), "--format", fmt], repeat)


def kreuzberg(path: Path, repeat: int) -> Figure:
    code = "import sys; from kreuzberg import extract_file_sync; extract_file_sync(sys.argv[1])"
    return run_process([str(BENCH_PY), "-c", code, str(path)], repeat)


def markitdown(path: Path, repeat: int) -> Figure:
    code = "import sys; from markitdown import MarkItDown; MarkItDown().convert(sys.argv[1])"
    return run_process([str(BENCH_PY), "-c", code, str(path)], repeat)


class Service:
    """Our HTTP service under uvicorn on a free loopback port."""

    def __init__(self) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = dict(os.environ, EXTRACTOR_TOKENS=TOKEN, EXTRACTOR_MAX_BYTES=str(512 * 1024 * 1024))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "extract_fn", "serve", "--host", "127.0.0.1", "--port", str(self.port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        self.url = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                requests.get(f"{self.url}/v1/capabilities", headers=self.headers, timeout=2)
                return
            except requests.ConnectionError:
                time.sleep(0.2)
        raise RuntimeError("the extractor service did not start")

    @property
    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {TOKEN}", "Accept-Encoding": "identity"}

    def extract(self, path: Path, fmt: str, repeat: int) -> Figure:
        data = path.read_bytes()
        times = []
        for _ in range(repeat + 1):  # the first call warms the worker (imports) and is not counted
            start = time.perf_counter()
            r = requests.post(
                f"{self.url}/v1/extract",
                params={"format": fmt, "name": path.name},
                data=data,
                headers=self.headers,
                timeout=600,
            )
            times.append(time.perf_counter() - start)
            if r.status_code != 200:
                return Figure(None, None, f"HTTP {r.status_code} {r.text[:60]}")
        return Figure(statistics.median(times[1:]), None)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", type=Path, default=ROOT / "benchmarks" / "out" / "inputs")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-others", action="store_true", help="skip Kreuzberg and MarkItDown")
    args = ap.parse_args()
    if not (args.inputs / "big.toml").exists():
        if not BENCH_PY.exists():
            print(
                "create .venv-bench first: python3 -m venv .venv-bench && "
                ".venv-bench/bin/pip install -r requirements-bench.txt",
                file=sys.stderr,
            )
            return 2
        subprocess.run([str(BENCH_PY), str(GEN), str(args.inputs)], check=True)
    names = [n for n in INPUTS if not args.only or n in args.only.split(",")]
    others = not args.no_others and BENCH_PY.exists()
    service = Service()
    rows = []
    try:
        for name in names:
            path, fmt = args.inputs / name, INPUTS[name]
            cli = ours_cli(path, fmt, args.repeat)
            http = service.extract(path, fmt, args.repeat)
            kz = (
                kreuzberg(path, args.repeat)
                if others and fmt in KREUZBERG_SUPPORTS
                else Figure(None, None, "not supported")
            )
            md = markitdown(path, 1) if others and fmt in MARKITDOWN_SUPPORTS else Figure(None, None, "not supported")
            ratio = f"{cli.seconds / kz.seconds:.2f}" if cli.seconds and kz.seconds else "-"
            rows.append((name, cli.cell(), http.cell(), kz.cell(), md.cell(), ratio))
            print(
                f"{name}: ours cli {cli.cell()}, http {http.cell()}, kreuzberg {kz.cell()}, markitdown {md.cell()}",
                file=sys.stderr,
                flush=True,
            )
    finally:
        service.close()
    print(
        "| input | ours, CLI (cold process) | ours, HTTP (warm) | Kreuzberg 4.10.4 | MarkItDown 0.1.9 (1 run) "
        "| ours/Kreuzberg (CLI) |"
    )
    print("|---|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
