"""How the HTTP server holds up against slow and piled-up connections: plain uvicorn against ``extract_fn serve``.

    .venv/bin/python -m benchmarks.bench_http_guard [--connections 5000] [--requests 3000]

For each server (``stock``: ``uvicorn.run`` with uvicorn's defaults, as ``serve`` ran before; ``guarded``: what
``extract_fn serve`` runs, ``extract_fn.server``), started as its own process on a free loopback port:

- slowloris: one connection sends a header line every 0.5 s; how long the server keeps it (bounded at 30 s);
- piled-up heads: ``--connections`` connections each send a partial head and wait; the server's open descriptors
  then, and how many connections it still holds after 12 s (past the 10 s header timeout);
- throughput: ``--requests`` small ``GET /v1/capabilities`` over 4 keep-alive clients, requests per second;
- what the server wrote to stderr meanwhile (lines, bytes). With ``--server-fd-limit 1024 --connections 1100`` the
  stock server runs out of descriptors.

Loopback only; every loop is bounded. Figures go in docs/extractor.md ("The HTTP server").
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import select
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "bench-guard-token"

_CHILD = """
import sys, uvicorn
from extract_fn.app import create_app
from extract_fn.settings import Settings
settings = Settings.from_env()
app = create_app(settings)
port = int(sys.argv[2])
if sys.argv[1] == "stock":
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="critical")
else:
    from extract_fn.server import build_server
    build_server(app, settings, host="127.0.0.1", port=port, log_level="critical").run()
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _start(kind: str, stderr: Any, fd_limit: int | None) -> tuple[subprocess.Popen[bytes], int]:
    port = _free_port()
    env = {**os.environ, "EXTRACTOR_TOKENS": TOKEN, "EXTRACTOR_WORKERS": "1"}

    def limit() -> None:
        if fd_limit:
            resource.setrlimit(resource.RLIMIT_NOFILE, (fd_limit, resource.getrlimit(resource.RLIMIT_NOFILE)[1]))

    proc = subprocess.Popen(
        [sys.executable, "-c", _CHILD, kind, str(port)],
        cwd=ROOT,
        env=env,
        stderr=stderr,
        preexec_fn=limit,  # noqa: PLW1509 (no threads yet)
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with contextlib.suppress(httpx.HTTPError):
            httpx.get(f"http://127.0.0.1:{port}/v1/capabilities", headers={"Authorization": f"Bearer {TOKEN}"})
            return proc, port
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"the {kind} server did not start")


def _fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def slowloris(port: int, bound_s: float = 30.0) -> float:
    started = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"GET /v1/capabilities HTTP/1.1\r\nHost: x\r\n")
        while time.monotonic() - started < bound_s:
            try:
                s.sendall(b"X-Slow: 1\r\n")
            except OSError:
                break
            readable, _, _ = select.select([s], [], [], 0.5)
            if readable:
                try:
                    if not s.recv(4096):
                        break
                except OSError:
                    break
    return time.monotonic() - started


def piled_heads(pid: int, port: int, n: int) -> tuple[int, int, int]:
    """(connections opened, server fds with them open, connections the server still holds after 12 s)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.sendall(b"GET /v1/capabilities HTTP/1.1\r\nHost: x\r\n")
                socks.append(s)
            except OSError:
                break
        time.sleep(1)
        fds_with = _fds(pid)
        time.sleep(11)
        held = 0
        for s in socks:
            s.setblocking(False)
            try:
                s.recv(4096)  # closed (b"") or answered (the 408): not held
            except BlockingIOError:
                held += 1  # nothing said, not closed: still held
            except OSError:
                pass
        return len(socks), fds_with, held
    finally:
        for s in socks:
            s.close()


def throughput(port: int, n: int) -> float:
    per = n // 4

    def client() -> None:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", headers={"Authorization": f"Bearer {TOKEN}"}) as h:
            for _ in range(per):
                h.get("/v1/capabilities").raise_for_status()

    threads = [threading.Thread(target=client) for _ in range(4)]
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return 4 * per / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--servers", nargs="+", default=["stock", "guarded"])
    parser.add_argument("--server-fd-limit", type=int, default=None, help="the server's ulimit -n (e.g. 1024)")
    args = parser.parse_args()
    for kind in args.servers:
        log = tempfile.TemporaryFile()  # noqa: SIM115  (read and closed in the finally below)
        proc, port = _start(kind, log, args.server_fd_limit)
        try:
            fds_idle = _fds(proc.pid)
            rps = throughput(port, args.requests)
            held_s = slowloris(port)
            opened, fds_with, held = piled_heads(proc.pid, port, args.connections)
            alive = proc.poll() is None
            print(
                f"{kind:8s}: {rps:6.0f} req/s small GETs; slowloris held {held_s:4.1f} s (bound 30); "
                f"{opened} partial heads: server fds {fds_idle} idle -> {fds_with}, still held after 12 s: {held}; "
                f"server alive: {alive}",
                flush=True,
            )
        finally:
            proc.terminate()
            proc.wait(timeout=30)
            log.seek(0)
            text = log.read()
            log.close()
            lines = text.count(b"\n")
            if os.environ.get("BENCH_SHOW_STDERR"):
                print(text.decode(errors="replace")[-3000:])
            print(f"          stderr: {lines} lines, {len(text):,} bytes", flush=True)


if __name__ == "__main__":
    main()
