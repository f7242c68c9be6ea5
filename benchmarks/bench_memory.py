"""Peak memory of the service and its worker against the artifact's size (issue 17's bound: at most 2x the artifact
plus a fixed 150 MB, for every format).

    .venv/bin/python -m benchmarks.bench_memory [--inputs /tmp/bench-inputs] [--only big.csv,big.toml]
        [--interval-ms 5]

For each standard input (``../shared/bench/gen.py DIR``) a fresh ``python -m extract_fn serve`` with one worker
(``EXTRACTOR_WORKERS=1``, warm as in production: every format module imported before it is ready) on a free
loopback port; after the worker is ready, the input is posted once and the answer read. While the request runs, the
service's and the worker's RSS are sampled every ``--interval-ms`` (``/proc/PID/status``; the worker is the
service's child, found by ``/proc/PID/task/*/children``, and may retire right after a big answer). Reported per input:
the artifact's size; the service's and the worker's RSS before the request (idle, warm); the peak of their sum over
the samples; the sum of their high-water marks (``VmHWM``, read at the last sample each was alive: an upper bound of
the peak of the sum, since the two need not peak at the same moment; each process's is shown, the service's first);
the bound 2 x artifact + 150 MB; and whether
the peak is within it. Limits are lifted for the measurement (``MEASURE_ONLY``: time and size), not the memory limit.
MB here is 10^6 bytes, as the artifact's size is counted. Loopback only.
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import requests

from benchmarks.compare import INPUTS, MEASURE_ONLY

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "bench-memory"
MB = 1_000_000
FIXED_MB = 150


def _status_kb(pid: int, field: str) -> int | None:
    """A ``/proc/PID/status`` field in kB (VmRSS, VmHWM), or None once the process is gone."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def _children(pid: int) -> list[int]:
    out: list[int] = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children", encoding="ascii") as fh:
                out.extend(int(c) for c in fh.read().split())
    except FileNotFoundError:
        pass
    return out


@dataclass
class Sampled:
    peak_sum_kb: int = 0
    hwm_kb: dict[int, int] | None = None  # pid -> last VmHWM seen


def _sample(service: int, stop: threading.Event, interval: float, out: Sampled) -> None:
    hwm: dict[int, int] = {}
    while not stop.is_set():
        total = 0
        for pid in (service, *_children(service)):
            rss = _status_kb(pid, "VmRSS")
            peak = _status_kb(pid, "VmHWM")
            if rss is not None:
                total += rss
            if peak is not None:
                hwm[pid] = peak
        out.peak_sum_kb = max(out.peak_sum_kb, total)
        time.sleep(interval)
    out.hwm_kb = hwm


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def measure(path: Path, fmt: str, interval: float) -> str:
    port = _free_port()
    env = dict(os.environ, **MEASURE_ONLY, EXTRACTOR_TOKENS=TOKEN, EXTRACTOR_WORKERS="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "extract_fn", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept-Encoding": "identity"}
    try:
        deadline = time.monotonic() + 120
        while True:  # up, and its worker started and warm (its RSS stops growing)
            try:
                requests.get(f"{url}/v1/capabilities", headers=headers, timeout=2)
                break
            except requests.ConnectionError:
                if time.monotonic() > deadline:
                    return f"| {path.name} | the service did not start | | | | | | |"
                time.sleep(0.2)
        last = -1
        while time.monotonic() < deadline:
            kids = _children(proc.pid)
            rss = sum(_status_kb(p, "VmRSS") or 0 for p in kids)
            if kids and rss == last:
                break
            last = rss
            time.sleep(0.5)
        idle_service = (_status_kb(proc.pid, "VmRSS") or 0) / 1000
        idle_worker = sum(_status_kb(p, "VmRSS") or 0 for p in _children(proc.pid)) / 1000
        data = path.read_bytes()
        sampled = Sampled()
        stop = threading.Event()
        sampler = threading.Thread(target=_sample, args=(proc.pid, stop, interval, sampled), daemon=True)
        sampler.start()
        try:
            r = requests.post(
                f"{url}/v1/extract",
                params={"format": fmt, "name": path.name},
                data=data,
                headers=headers,
                timeout=3600,
            )
        finally:
            stop.set()
            sampler.join()
        if r.status_code != 200:
            return f"| {path.name} | HTTP {r.status_code} {r.text[:60]} | | | | | | |"
        artifact_mb = len(r.content) / MB
        del r
        peak = sampled.peak_sum_kb * 1024 / MB
        marks = sampled.hwm_kb or {}
        hwm = sum(marks.values()) * 1024 / MB
        each = " + ".join(f"{kb * 1024 / MB:.0f}" for _, kb in sorted(marks.items()))  # the service first (lowest pid)
        bound = 2 * artifact_mb + FIXED_MB
        verdict = "yes" if peak <= bound else f"no ({peak / bound:.2f}x)"
        return (
            f"| {path.name} | {artifact_mb:.1f} | {idle_service:.0f} + {idle_worker:.0f} | {peak:.0f} "
            f"| {hwm:.0f} ({each}) "
            f"| {bound:.0f} | {verdict} |"
        )
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--inputs", type=Path, default=Path("/tmp/bench-inputs"))
    ap.add_argument("--only", default="", help="comma-separated input names")
    ap.add_argument("--interval-ms", type=float, default=5.0)
    args = ap.parse_args()
    names = [n for n in INPUTS if not args.only or n in args.only.split(",")]
    print("| input | artifact MB | idle RSS MB: service + worker | peak MB (service + worker, sampled) "
          "| sum of high-water marks MB (service + workers) | bound: 2 x artifact + 150 MB | within |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for name in names:
        path = args.inputs / name
        if not path.exists():
            print(f"| {name} | missing (run ../shared/bench/gen.py {args.inputs}) | | | | | |")
            continue
        print(measure(path, INPUTS[name], args.interval_ms / 1000), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
