"""Side-by-side benchmark: our extractor (CLI, cold process; HTTP service, warm) vs Kreuzberg and MarkItDown, the raw
floor, then how cost grows with size and how the service does under concurrent clients.

Inputs are the standard ones from ../shared/bench/gen.py. Run with ``make bench`` or::

    .venv/bin/python -m benchmarks.compare [--inputs DIR] [--repeat N] [--only big.csv,doc200.pdf] [--no-others]
        [--no-markitdown] [--tables main,scale,concurrency] [--scales 1,4,16] [--clients 1,2,8]
        [--requests-per-client 12] [--scale-max-s 300]

Three tables, printed together at the end (progress goes to stderr):

- **main**: per standard input, the raw floor (``benchmarks.floors``: the parser alone, cold process), ours through the
  CLI (cold process), ours through the HTTP service (warm, per request), Kreuzberg cold (whole process) and warm (in
  one process, after a first call), MarkItDown (cold, 1 run); then ours/Kreuzberg cold (CLI) and warm (HTTP), with
  their geometric means over the inputs both handle. Cold figures are the median wall time of N processes with the
  largest peak RSS (and the median CPU time, user + system, which a busy machine disturbs less than wall time).
- **scale**: ours through the CLI on the input at 1x, 4x and 16x (``benchmarks.scale_inputs``): seconds and peak RSS
  per MB of input, which stay flat when cost grows linearly. A size is skipped (and says why) when the smaller one's
  peak RSS per MB predicts more than half the machine's available memory, or its time more than ``--scale-max-s``.
- **concurrency**: the HTTP service with as many workers as CPUs, 1, 2 and 8 clients each posting
  ``--requests-per-client`` files from a fixed mix of corpus files (every format, answers expected ``ok``, under
  1 MB): requests per second, p50 and p99 latency, and the non-200 answers.

Kreuzberg and MarkItDown run from ``.venv-bench`` (requirements-bench.txt), never from the runtime environment.
Ratios are ours / Kreuzberg's (below 1 is faster). Loopback only.
"""

from __future__ import annotations

import argparse
import collections
import compileall
import functools
import json
import math
import os
import py_compile
import random
import socket
import statistics
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import requests

from benchmarks.scale_inputs import scaled

ROOT = Path(__file__).resolve().parent.parent
BENCH_PY = ROOT / ".venv-bench" / "bin" / "python"
GEN = ROOT.parent / "shared" / "bench" / "gen.py"
CORPUS = ROOT.parent / "shared" / "corpus"
TOKEN = "bench-token"
MB = 1024 * 1024
_READ_BYTES = MB  # the benchmark client's reads of a reply body

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
# The scale table runs without the service's default bounds, so a 16x input is extracted whole, not cut.
UNBOUNDED = {
    "EXTRACTOR_MAX_BYTES": str(8 * 1024 * MB),
    "EXTRACTOR_MAX_OUTPUT_BYTES": str(16 * 1024 * MB),
    "EXTRACTOR_MEMORY_LIMIT_MB": "0",
    "EXTRACTOR_TIMEOUT_S": "3600",
}

# The benchmark measures, it does not limit: the time limit is lifted everywhere (a busy machine would turn the
# bigger inputs into timeouts), the size limit raised to fit the standard inputs.
MEASURE_ONLY = {"EXTRACTOR_TIMEOUT_S": "3600", "EXTRACTOR_MAX_BYTES": str(512 * MB)}

# Kreuzberg keeps a disk cache of results by default (~/.cache/kreuzberg): a cold process or a repeated call would
# otherwise time a cache lookup, not an extraction. Both figures extract, with use_cache=False.
KREUZBERG_COLD = (
    "import sys; from kreuzberg import ExtractionConfig, extract_file_sync; "
    "extract_file_sync(sys.argv[1], config=ExtractionConfig(use_cache=False))"
)
KREUZBERG_WARM = """
import json, statistics, sys, time
from kreuzberg import ExtractionConfig, extract_file_sync
path, n = sys.argv[1], int(sys.argv[2])
config = ExtractionConfig(use_cache=False)
extract_file_sync(path, config=config)
times = []
for _ in range(n):
    t = time.perf_counter(); extract_file_sync(path, config=config); times.append(time.perf_counter() - t)
print(json.dumps(statistics.median(times)))
"""


@dataclass
class Figure:
    seconds: float | None
    rss_mb: float | None
    note: str = ""
    cpu_s: float | None = None

    def cell(self) -> str:
        if self.seconds is None:
            return self.note or "n/a"
        rss = f" / {self.rss_mb:.0f} MB" if self.rss_mb else ""
        return f"{self.seconds:.2f} s{rss}"


def run_process(cmd: list[str], repeat: int, env: dict[str, str] | None = None) -> Figure:
    """Median wall time of ``repeat`` runs, the largest peak RSS and the median CPU time. The RSS comes from
    /usr/bin/time, a small C parent: a child forked from this (large) process would report this process's high-water
    mark as its own. Its figure is the largest of the process and the children it waited for (our CLI's fork)."""
    times: list[float] = []
    cpu: list[float] = []
    peak = 0
    for _ in range(repeat):
        start = time.perf_counter()
        proc = subprocess.run(
            ["/usr/bin/time", "-f", "MAXRSS_KB=%M CPU_S=%U+%S", *cmd],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env=env,
            cwd=ROOT,
            check=False,
        )
        elapsed = time.perf_counter() - start
        err = proc.stderr.decode(errors="replace").strip().splitlines()
        if proc.returncode != 0:
            detail = [line for line in err if not line.startswith(("MAXRSS_KB=", "Command exited"))]
            return Figure(None, None, f"fails ({detail[-1][:60] if detail else proc.returncode})")
        times.append(elapsed)
        stats = [line for line in err if line.startswith("MAXRSS_KB=")]
        if stats:
            rss, cpu_s = stats[-1].split()
            peak = max(peak, int(rss.split("=", 1)[1]))
            user, system = cpu_s.split("=", 1)[1].split("+")
            cpu.append(float(user) + float(system))
    return Figure(statistics.median(times), peak / 1024, cpu_s=statistics.median(cpu) if cpu else None)


def ours_cli(path: Path, fmt: str, repeat: int, env: dict[str, str] | None = None) -> Figure:
    env = env or dict(os.environ, **MEASURE_ONLY)
    return run_process([sys.executable, "-m", "extract_fn", "extract", str(path), "--format", fmt], repeat, env)


def floor(path: Path, fmt: str, repeat: int) -> Figure:
    return run_process([sys.executable, "-m", "benchmarks.floors", fmt, str(path)], repeat)


@functools.cache
def _offline_prefix() -> tuple[str, ...]:
    """The other tools run without a network where the machine allows it (``unshare -n``, as root): nothing they
    might fetch (models, tessdata) can leave the machine or make a figure depend on a download."""
    try:
        probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, check=False)
    except OSError:
        return ()
    return ("unshare", "-n") if probe.returncode == 0 else ()


def kreuzberg(path: Path, repeat: int) -> Figure:
    return run_process([*_offline_prefix(), str(BENCH_PY), "-c", KREUZBERG_COLD, str(path)], repeat)


def kreuzberg_warm(path: Path, repeat: int) -> Figure:
    proc = subprocess.run(
        [*_offline_prefix(), str(BENCH_PY), "-c", KREUZBERG_WARM, str(path), str(repeat)],
        capture_output=True,
        check=False,
        cwd=ROOT,
    )
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        return Figure(None, None, f"fails ({lines[-1][:60] if lines else proc.returncode})")
    return Figure(float(json.loads(proc.stdout)), None)


def markitdown(path: Path, repeat: int) -> Figure:
    code = "import sys; from markitdown import MarkItDown; MarkItDown().convert(sys.argv[1])"
    return run_process([*_offline_prefix(), str(BENCH_PY), "-c", code, str(path)], repeat)


class Service:
    """Our HTTP service under uvicorn on a free loopback port."""

    def __init__(self, workers: int | None = None) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        env = dict(os.environ, **MEASURE_ONLY, EXTRACTOR_TOKENS=TOKEN)
        if workers:
            env["EXTRACTOR_WORKERS"] = str(workers)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "extract_fn", "serve", "--host", "127.0.0.1", "--port", str(self.port)],
            env=env,
            cwd=ROOT,
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

    def post(self, session: requests.Session, data: bytes, fmt: str, name: str) -> tuple[int, bytes]:
        """One extraction: the status and the whole body, read 1 MB at a time (``.content`` reads 10 KB at a time:
        about 0.4 s of big.parquet's 254 MB spent in the client, counted as the service's before session 15)."""
        with session.post(
            f"{self.url}/v1/extract",
            params={"format": fmt, "name": name},
            data=data,
            headers=self.headers,
            timeout=600,
            stream=True,
        ) as r:
            return r.status_code, b"".join(r.iter_content(_READ_BYTES))

    def extract(self, path: Path, fmt: str, repeat: int) -> Figure:
        data = path.read_bytes()
        times = []
        with requests.Session() as session:
            for _ in range(repeat + 1):  # the first call warms the worker (imports) and is not counted
                start = time.perf_counter()
                status, body = self.post(session, data, fmt, path.name)
                times.append(time.perf_counter() - start)
                if status != 200:
                    return Figure(None, None, f"HTTP {status} {body[:60].decode('utf-8', 'replace')}")
        return Figure(statistics.median(times[1:]), None)

    def close(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


def _ratio(a: Figure, b: Figure) -> float | None:
    return a.seconds / b.seconds if a.seconds and b.seconds else None


def _geomean(values: list[float]) -> str:
    return f"{math.exp(statistics.fmean(math.log(v) for v in values)):.2f}" if values else "-"


def main_table(names: list[str], inputs: Path, repeat: int, others: bool, with_markitdown: bool) -> list[str]:
    service = Service()
    rows = []
    cold_ratios: list[float] = []
    warm_ratios: list[float] = []
    try:
        for name in names:
            path, fmt = inputs / name, INPUTS[name]
            fl = floor(path, fmt, repeat)
            cli = ours_cli(path, fmt, repeat)
            http = service.extract(path, fmt, repeat)
            supported = others and fmt in KREUZBERG_SUPPORTS
            kz = kreuzberg(path, repeat) if supported else Figure(None, None, "not supported")
            kzw = kreuzberg_warm(path, repeat) if supported else Figure(None, None, "not supported")
            md = (
                markitdown(path, 1)
                if others and with_markitdown and fmt in MARKITDOWN_SUPPORTS
                else Figure(None, None, "not supported" if with_markitdown else "not run")
            )
            cold, warm = _ratio(cli, kz), _ratio(http, kzw)
            cold_ratios += [cold] if cold else []
            warm_ratios += [warm] if warm else []
            cpu = f"{cli.cpu_s:.2f} s" if cli.cpu_s is not None else "-"
            rows.append(
                (
                    name,
                    fl.cell(),
                    cli.cell(),
                    cpu,
                    http.cell(),
                    kz.cell(),
                    kzw.cell(),
                    md.cell(),
                    f"{cold:.2f}" if cold else "-",
                    f"{warm:.2f}" if warm else "-",
                )
            )
            print(f"{name}: " + " | ".join(rows[-1][1:]), file=sys.stderr, flush=True)
    finally:
        service.close()
    out = [
        "| input | raw floor | ours, CLI (cold) | ours, CLI CPU | ours, HTTP (warm) | Kreuzberg 4.10.4 (cold) "
        "| Kreuzberg (warm) | MarkItDown 0.1.9 (1 run) | ours/Kreuzberg cold | ours/Kreuzberg warm |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    out.append(f"| geometric mean | | | | | | | | {_geomean(cold_ratios)} | {_geomean(warm_ratios)} |")
    return out


def _available_mb() -> float:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) / 1024
    return 0.0


def scale_table(names: list[str], inputs: Path, factors: list[int], max_s: float) -> list[str]:
    env = dict(os.environ, **UNBOUNDED)
    out_dir = inputs / "scaled"
    head = "| input | " + " | ".join(f"{k}x: MB, s/MB, peak MB/MB" for k in factors) + " |"
    out = [head, "|---|" + "---|" * len(factors)]
    for name in names:
        cells: list[str] = []
        last: tuple[float, float] | None = None  # (s per MB, peak MB per MB) of the previous size
        for k in factors:
            path = scaled(inputs / name, out_dir, k)
            if path is None:
                cells.append("not scaled")
                continue
            size_mb = path.stat().st_size / MB
            if last is not None:
                if last[1] * size_mb > _available_mb() / 2:
                    cells.append(f"{size_mb:.1f} MB: skipped (about {last[1] * size_mb:.0f} MB of memory)")
                    continue
                if last[0] * size_mb > max_s:
                    cells.append(f"{size_mb:.1f} MB: skipped (about {last[0] * size_mb:.0f} s)")
                    continue
            fig = ours_cli(path, INPUTS[name], 1, env)
            if fig.seconds is None or fig.rss_mb is None:
                cells.append(f"{size_mb:.1f} MB: {fig.note}")
                continue
            last = (fig.seconds / size_mb, fig.rss_mb / size_mb)
            cells.append(f"{size_mb:.1f}, {last[0]:.3f}, {last[1]:.1f}")
            print(f"scale {name} x{k}: {size_mb:.1f} MB {fig.cell()}", file=sys.stderr, flush=True)
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out


def corpus_mix(max_bytes: int = MB) -> list[tuple[str, str, bytes]]:
    """(name, format, bytes) of every corpus input expected to extract, under ``max_bytes``, shuffled with a fixed
    seed (the same mix every run, every format early in it)."""
    out = []
    for line in (CORPUS / "MANIFEST.tsv").read_text().splitlines()[1:]:
        path, fmt, size, _sha, expect = line.split("\t")[:5]
        if expect == "ok" and fmt in INPUTS.values() and int(size) < max_bytes:
            out.append((Path(path).name, fmt, (CORPUS / path).read_bytes()))
    random.Random(17).shuffle(out)
    return out


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, math.ceil(q * len(ordered)) - 1))]


def _client(
    service: Service,
    files: list[tuple[str, str, bytes]],
    offset: int,
    stride: int,
    n: int,
    latencies: list[float],
    statuses: collections.Counter[int],
) -> None:
    """One client: ``n`` files of the mix, one after the other, into its own list and counter."""
    with requests.Session() as session:
        for i in range(n):
            name, fmt, data = files[(offset + i * stride) % len(files)]
            start = time.perf_counter()
            status, _ = service.post(session, data, fmt, name)
            latencies.append(time.perf_counter() - start)
            statuses.update([status])


def concurrency_table(clients_list: list[int], per_client: int) -> list[str]:
    files = corpus_mix()
    workers = os.cpu_count() or 1
    service = Service(workers=workers)
    out = [
        f"| clients (service: {workers} workers; mix of {len(files)} corpus files) | requests | requests/s "
        "| p50 | p99 | non-200 |",
        "|---|---|---|---|---|---|",
    ]
    try:
        with requests.Session() as warm:  # every format module imported in the workers before the clock starts
            for name, fmt, data in {f[1]: f for f in files}.values():
                for _ in range(workers):
                    service.post(warm, data, fmt, name)
        for clients in clients_list:
            results = [([], collections.Counter()) for _ in range(clients)]
            threads = [
                threading.Thread(target=_client, args=(service, files, c * 7, clients, per_client, *results[c]))
                for c in range(clients)
            ]
            started = time.perf_counter()
            for t in threads:
                t.start()
            for t in threads:
                t.join()
            wall = time.perf_counter() - started
            latencies = [t for lat, _ in results for t in lat]
            statuses = sum((st for _, st in results), collections.Counter[int]())
            bad = ", ".join(f"{k}: {v}" for k, v in sorted(statuses.items()) if k != 200) or "0"
            row = (
                f"| {clients} | {len(latencies)} | {len(latencies) / wall:.1f} | {_percentile(latencies, 0.5):.3f} s "
                f"| {_percentile(latencies, 0.99):.3f} s | {bad} |"
            )
            print(f"concurrency {clients}: {row}", file=sys.stderr, flush=True)
            out.append(row)
    finally:
        service.close()
    return out


def compile_bytecode() -> None:
    """Our packages' bytecode, as a deployment has it (the Dockerfile's compileall step): without it a process in an
    environment that sets PYTHONDONTWRITEBYTECODE (this one, the image) compiles every module at each start, 50-170
    ms of CPU that the cold CLI would count and Kreuzberg's installed package never pays."""
    for package in ("extract_fn", "shared"):
        compileall.compile_dir(ROOT / package, quiet=1, invalidation_mode=py_compile.PycInvalidationMode.CHECKED_HASH)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", type=Path, default=ROOT / "benchmarks" / "out" / "inputs")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="")
    ap.add_argument("--no-others", action="store_true", help="skip Kreuzberg and MarkItDown")
    ap.add_argument("--no-markitdown", action="store_true", help="skip MarkItDown (minutes an input)")
    ap.add_argument("--tables", default="main,scale,concurrency")
    ap.add_argument("--scales", default="1,4,16")
    ap.add_argument("--scale-max-s", type=float, default=300.0, help="skip a size predicted to take longer")
    ap.add_argument("--clients", default="1,2,8")
    ap.add_argument("--requests-per-client", type=int, default=12)
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
    compile_bytecode()
    names = [n for n in INPUTS if not args.only or n in args.only.split(",")]
    others = not args.no_others and BENCH_PY.exists()
    tables = set(args.tables.split(","))
    printed: list[str] = []
    if "main" in tables:
        printed += [*main_table(names, args.inputs, args.repeat, others, not args.no_markitdown), ""]
    if "scale" in tables:
        factors = [int(k) for k in args.scales.split(",")]
        printed += [*scale_table(names, args.inputs, factors, args.scale_max_s), ""]
    if "concurrency" in tables:
        printed += concurrency_table([int(c) for c in args.clients.split(",")], args.requests_per_client)
    print("\n".join(printed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
