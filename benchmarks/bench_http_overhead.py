"""The warm HTTP request's overhead: a request's CPU time in the service and its worker against the same extraction
warm in one process, A/B across source trees.

    .venv/bin/python -m benchmarks.bench_http_overhead [ROOT ...] [--runs 15] [--files tiny,big.docx,big.pptx]
        [--inputs /tmp/bench-inputs] [--profile DIR]

Each ROOT (default: this checkout) is a source tree; its service runs as ``python -m benchmarks.bench_http_overhead
--serve`` from that tree (this file is copied into the tree's ``benchmarks`` when it has none), with one worker, on a
free loopback port. Per file it posts the file ``--runs`` times (after one warm-up request), the roots in turn, and
prints per request: the wall time (best, median), the CPU time the service process and its worker spent (their
threads' ``/proc/PID/task/*/schedstat``, in ns: a loaded machine stretches wall time, much less CPU time), the
worker's own CPU time for the extraction (``_handle`` warm in one process: module, check, ``orjson.dumps``), and the
overhead in CPU: service + worker - extraction (receive, buffer, hand over, the pipes, the answer back).

``--profile DIR``: the service process runs under cProfile (every thread: the event loop and the pool's slot
threads) and its worker under cProfile too (a wrapper interpreter given to ``WorkerPool(python=...)``); the stats
go to DIR/service.prof and DIR/worker.prof, and their top lines are printed. Profiling is this benchmark's alone:
nothing in the app reads a switch for it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "bench-token"
TINY_TEXT = "/tmp/bench-http-tiny.txt"
FORMATS = {".txt": "text", ".md": "markdown", ".docx": "docx", ".pptx": "pptx", ".pdf": "pdf", ".html": "html"}
FORMATS |= {".csv": "csv", ".toml": "toml", ".sql": "sql", ".xlsx": "xlsx", ".parquet": "parquet"}

WARM = """
import sys, time
from extract_fn.formats import MODULES
import inspect
from extract_fn.workers import _ChildState, _handle
path, fmt, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = open(path, "rb").read()
# a list the worker empties (older trees: the bytes themselves)
inbox = lambda: [data] if "inbox" in inspect.signature(_handle).parameters else data
header = {"extractor": MODULES[fmt] + ":extract", "format": fmt, "name": path.rsplit("/", 1)[-1],
          "encoding": None, "sql_dialect": None, "max_output_bytes": 256 * 1024 * 1024}
state = _ChildState(0)
status, _ = _handle(state, header, inbox())
assert status in (0, 3), status
times = []
for _ in range(n):
    c = time.process_time()
    _handle(state, header, inbox())
    times.append(time.process_time() - c)
print(" ".join(map(str, times)))
"""

WORKER_WRAPPER = """#!/bin/sh
exec "{python}" -m benchmarks.bench_http_overhead --profiled-worker "{out}" "$@"
"""


def _serve(port: int, profile_dir: str | None) -> None:
    """The service, as ``extract_fn serve`` runs it, optionally under cProfile (this process and its worker)."""
    from extract_fn.app import create_app
    from extract_fn.server import build_server
    from extract_fn.settings import Settings
    from extract_fn.workers import WorkerPool

    settings = Settings.from_env()
    python = sys.executable
    if profile_dir:
        wrapper = Path(profile_dir) / "worker.sh"
        wrapper.write_text(WORKER_WRAPPER.format(python=sys.executable, out=Path(profile_dir) / "worker.prof"))
        wrapper.chmod(0o755)
        python = str(wrapper)
    pool = WorkerPool(
        1,
        timeout_s=settings.timeout_s,
        memory_limit_bytes=settings.memory_limit_bytes,
        max_output_bytes=settings.max_output_bytes,
        spool_reply_bytes=settings.spool_bytes,
        python=python,
    )
    server = build_server(create_app(settings, pool=pool), settings, host="127.0.0.1", port=port, log_level="warning")
    if not profile_dir:
        pool.start()
        server.run()
        pool.close()
        return
    import cProfile
    import threading

    prof = cProfile.Profile()
    threading.setprofile(lambda *_: prof.enable())  # the slot threads too: one profile for the whole process
    prof.enable()
    pool.start()
    try:
        server.run()
    finally:
        prof.disable()
        prof.dump_stats(str(Path(profile_dir) / "service.prof"))
        pool.close()


def _profiled_worker(out: str, argv: list[str]) -> None:
    """``python -m extract_fn.workers PID LIMIT`` under cProfile, its stats written after every request."""
    import cProfile

    from extract_fn import workers

    assert argv[:2] == ["-m", "extract_fn.workers"], argv
    prof = cProfile.Profile()
    handle = workers._handle

    def profiled(*args: object) -> tuple[int, bytes]:
        prof.enable()
        try:
            return handle(*args)  # type: ignore[arg-type]
        finally:
            prof.disable()
            prof.dump_stats(out)

    workers._handle = profiled  # type: ignore[assignment]
    workers._child_main(argv[2:])


def _cpu_ns(pid: int) -> int:
    """CPU time of every thread of ``pid`` so far (threads that ended are not counted; the service's persist)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (OSError, ValueError):
            continue
    return total


def _children(pid: int) -> list[int]:
    out: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            out += [int(c) for c in (task / "children").read_text().split()]
        except OSError:
            continue
    return out


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _post(port: int, data: bytes, fmt: str, name: str) -> tuple[float, int, int]:
    """(seconds, status, body bytes) of one POST over a fresh loopback connection, read to the end."""
    import http.client

    start = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    conn.request(
        "POST",
        f"/v1/extract?format={fmt}&name={name}",
        body=data,
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/octet-stream"},
    )
    resp = conn.getresponse()
    body = resp.read()
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed, resp.status, len(body)


class _Service:
    def __init__(self, root: Path, profile_dir: Path | None) -> None:
        if not (root / "benchmarks" / "bench_http_overhead.py").exists():
            shutil.copy(__file__, root / "benchmarks" / "bench_http_overhead.py")
        self.port = _free_port()
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(EXTRACTOR_TOKENS=TOKEN, EXTRACTOR_TIMEOUT_S="600", EXTRACTOR_MAX_BYTES=str(512 * 1024 * 1024))
        cmd = [sys.executable, "-m", "benchmarks.bench_http_overhead", "--serve", str(self.port)]
        if profile_dir:
            cmd += ["--profile", str(profile_dir)]
        self.proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                    return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"the service of {root} did not start")

    def close(self) -> None:
        import signal

        self.proc.send_signal(signal.SIGINT)
        self.proc.wait(30)


def main() -> int:
    if sys.argv[1:2] == ["--profiled-worker"]:  # the wrapper interpreter of a profiled worker
        _profiled_worker(sys.argv[2], sys.argv[3:])
        return 0
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("roots", nargs="*", type=Path, default=[ROOT])
    ap.add_argument("--runs", type=int, default=15)
    ap.add_argument("--files", default="tiny,big.docx,big.pptx")
    ap.add_argument("--inputs", type=Path, default=Path("/tmp/bench-inputs"))
    ap.add_argument("--profile", type=Path, default=None)
    ap.add_argument("--serve", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve is not None:
        _serve(args.serve, str(args.profile) if args.profile else None)
        return 0
    Path(TINY_TEXT).write_text("A line of plain text for the warm request's benchmark.\n" * 20)
    files = [Path(TINY_TEXT) if f == "tiny" else args.inputs / f for f in args.files.split(",")]
    if args.profile:
        args.profile.mkdir(parents=True, exist_ok=True)
    roots = [r.resolve() for r in args.roots]
    services = {root: _Service(root, args.profile) for root in roots}
    print(f"# load {os.getloadavg()[0]:.2f}; ms per request, best and median of {args.runs} (one worker)")
    print(
        f"{'file':<22} {'root':<18} {'wall':>13} {'service cpu':>11} {'worker cpu':>10} {'extract cpu':>11}"
        f" {'overhead cpu':>12} {'bytes':>9}"
    )
    try:
        for path in files:
            fmt = FORMATS[path.suffix]
            data = path.read_bytes()
            times: dict[Path, list[float]] = {r: [] for r in roots}
            cpu: dict[Path, list[int]] = {r: [0, 0] for r in roots}
            sizes: dict[Path, int] = {}
            for i in range(args.runs + 1):
                for root in roots:
                    pid = services[root].proc.pid
                    kids = _children(pid)
                    before = (_cpu_ns(pid), sum(map(_cpu_ns, kids)))
                    t, status, size = _post(services[root].port, data, fmt, path.name)
                    if status != 200:
                        raise RuntimeError(f"{root}: HTTP {status} for {path}")
                    if _children(pid) != kids:
                        raise RuntimeError(f"{root}: the worker was replaced during the run; use a smaller file")
                    sizes[root] = size
                    if i:
                        times[root].append(t)
                        cpu[root][0] += _cpu_ns(pid) - before[0]
                        cpu[root][1] += sum(map(_cpu_ns, kids)) - before[1]
            for root in roots:
                env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
                out = subprocess.run(
                    [sys.executable, "-c", WARM, str(path), fmt, str(max(3, args.runs // 3))],
                    cwd=root,
                    env=env,
                    capture_output=True,
                    check=True,
                ).stdout
                extract = statistics.median(float(x) for x in out.split()) * 1e3
                req = times[root]
                service_ms, worker_ms = (ns / 1e6 / args.runs for ns in cpu[root])
                print(
                    f"{path.name[:22]:<22} {str(root)[-18:]:<18} {min(req) * 1e3:6.1f}"
                    f" {statistics.median(req) * 1e3:6.1f}"
                    f" {service_ms:11.1f} {worker_ms:10.1f} {extract:11.1f} {service_ms + worker_ms - extract:12.1f}"
                    f" {sizes[root]:>9}"
                )
            sys.stdout.flush()
    finally:
        for service in services.values():
            service.close()
    if args.profile:
        import pstats

        for name in ("service.prof", "worker.prof"):
            if (args.profile / name).exists():
                print(f"\n## {name} (tottime)")
                pstats.Stats(str(args.profile / name)).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    sys.exit(main())
