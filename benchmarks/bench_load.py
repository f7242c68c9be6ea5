"""Normal clients' throughput and latency while hostile clients loop hostile inputs (issue 13's load benchmark).

    .venv/bin/python -m benchmarks.bench_load [--clients 8 32] [--requests 200] [--workers N] [--timeout-s 60]
        [--repeat R] [--app-root CHECKOUT] [--byte-cost]

For each number of normal clients (and ``--repeat`` times), starts a fresh ``python -m extract_fn serve`` on a free
loopback port (its own process, the real format modules; ``--app-root`` runs another checkout's, for an A/B) and
runs, after a normal warm-up that is not counted: normal clients alone; the *first pass* with 2 hostile clients (the
hostile inputs are new to the service: nothing remembered, their modules not yet imported by any worker); the
*sustained* pass (the hostile clients start their loop again on the same service: the same inputs, now known); and
normal clients alone again. Each ratio is a pass's throughput over the mean of that run's two alone figures. The
issue's target holds only if both passes reach it. A normal client posts
small corpus files (text, markdown, csv, html, sql, toml under 8 KB) ``--requests`` times (see ``DEFAULT_REQUESTS``
for why 200), posting a file again
0.2 s after a 503 (latency counts from its first attempt; the retries are reported); a hostile client loops
the hostile inputs below, generated here (nothing is downloaded), until the normal clients are done, with a bound
on its loops. Normal clients share one token; each hostile client has its own (``--hostile-token shared`` gives them
the normal clients' token instead, the worst case for fairness by token). Reported per run: normal requests per
second, p50 and p99 latency, the normal answers by status, the hostile answers by status or code and their median
answer time per input, the CPU-seconds of the workers, the service process and the benchmark's own clients while the
normal clients ran, and the server's peak RSS; the CPU-seconds of one loop of the hostile clients alone (the hostile
work a pass holds); then the median and the spread over the runs. ``--byte-cost`` measures only the service's CPU per
byte carried (the fair share's ``DEFAULT_BYTE_COST_S``). The issue's
targets: with hostile clients, normal throughput at least 80% of the hostile-free figure and p99 under 2 s.
Loopback only; every loop is bounded.

Hostile inputs: markdown of 500 KB nested ``<div>``; 2 MB of nested brackets sent as markdown; a PDF whose page tree
lists one page a million times; a docx whose document part inflates from zeros (512 MiB); an xlsx declaring the
dimension A1:XFD1048576; a PDF with a 1 GiB flate bomb stream; a PDF page of 3 million text operators; and two at
the HTTP layer: a head that never completes (slowloris) and a body sent a byte at a time.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import io
import os
import socket
import statistics
import subprocess
import sys
import threading
import time
import zipfile
import zlib
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
NORMAL_TOKEN = "bench-normal"
HOSTILE_TOKENS = ("bench-hostile-1", "bench-hostile-2")
MAX_HOSTILE_LOOPS = 50
# Requests per normal client and pass. A hostile client goes once through its files per pass (its slowloris and its
# dribbled body then hold it until the pass ends, in passes under the service's 120 s body timeout), so a pass holds a
# fixed amount of hostile work (its first run in the first pass), and the normal work grows with the requests: with
# 40 a pass is about a second of normal work on 2 quiet cores, less than the hostile loop and the start of the pass,
# and the ratio says more about that fixed cost than about the service under load; with 200 (5 s with 8 clients,
# 20 s with 32 on 2 quiet cores) the fixed cost is a small part of the pass. The short-run figures stay in
# docs/extractor.md.
DEFAULT_REQUESTS = 200
MAX_RETRIES = 100


# ---------------------------------------------------------------------------------------------------------------
# Inputs


def normal_files() -> list[tuple[str, bytes]]:
    """(format, bytes) of small corpus files the contract expects to extract."""
    out = []
    for line in (CORPUS / "MANIFEST.tsv").read_text().splitlines()[1:]:
        path, fmt, size, _sha, expect = line.split("\t")[:5]
        if expect == "ok" and fmt in {"text", "markdown", "csv", "html", "sql", "toml"} and 300 < int(size) < 8000:
            out.append((fmt, (CORPUS / path).read_bytes()))
    return out


def _pdf(objects: list[bytes]) -> bytes:
    """A PDF of ``objects`` (numbered from 1; 1 is the catalog) with a correct xref table."""
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % i + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def _stream(data: bytes, *, compress: bool = True) -> bytes:
    body = zlib.compress(data, 9) if compress else data
    flt = b" /Filter /FlateDecode" if compress else b""
    return b"<< /Length %d%s >>\nstream\n" % (len(body), flt) + body + b"\nendstream"


def _page(content_ref: int) -> bytes:
    return (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
        b"/Resources << /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >> >>" % content_ref
    )


def hostile_files() -> list[tuple[str, str, bytes]]:
    """(name, format, bytes) of each hostile input."""
    files = [
        ("nested-divs", "markdown", b"<div>" * 50_000 + b"x" + b"</div>" * 50_000),
        ("nested-brackets", "markdown", b"[" * 1_000_000 + b"]" * 1_000_000),
    ]
    kids = b" ".join([b"3 0 R"] * 1_000_000)
    files.append(
        (
            "pdf-page-listed-1e6",
            "pdf",
            _pdf(
                [
                    b"<< /Type /Catalog /Pages 2 0 R >>",
                    b"<< /Type /Pages /Kids [" + kids + b"] /Count 1000000 >>",
                    _page(4),
                    _stream(b"BT /F1 12 Tf 72 720 Td (page) Tj ET"),
                ]
            ),
        )
    )
    zeros = zlib.compressobj(9)
    chunk = bytes(1 << 20)
    body = b"".join(zeros.compress(chunk) for _ in range(1024)) + zeros.flush()
    bomb = b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(body) + body + b"\nendstream"
    files.append(
        (
            "pdf-flate-bomb-1gib",
            "pdf",
            _pdf(
                [
                    b"<< /Type /Catalog /Pages 2 0 R >>",
                    b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                    _page(4),
                    bomb,
                ]
            ),
        )
    )
    files.append(
        (
            "pdf-3m-text-operators",
            "pdf",
            _pdf(
                [
                    b"<< /Type /Catalog /Pages 2 0 R >>",
                    b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                    _page(4),
                    _stream(b"BT /F1 1 Tf\n" + b"(a) Tj\n" * 3_000_000 + b"ET"),
                ]
            ),
        )
    )
    files.append(("docx-zeros-512mib", "docx", _docx_of_zeros(512 << 20)))
    files.append(("xlsx-dimension-A1-XFD1048576", "xlsx", _xlsx_huge_dimension()))
    return files


def _docx_of_zeros(size: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.'
            'wordprocessingml.document.main+xml"/></Types>',
        )
        z.writestr(
            "_rels/.rels",
            '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            '<Relationship Id="r1" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
            'officeDocument" Target="word/document.xml"/></Relationships>',
        )
        with z.open("word/document.xml", "w", force_zip64=True) as f:
            chunk = bytes(1 << 20)
            for _ in range(size >> 20):
                f.write(chunk)
    return out.getvalue()


def _xlsx_huge_dimension() -> bytes:
    out = io.BytesIO()
    ns = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
    rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.'
            'spreadsheetml.sheet.main+xml"/><Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/'
            'vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>',
        )
        z.writestr(
            "_rels/.rels",
            f'<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            f'<Relationship Id="r1" Type="{rel}/officeDocument" Target="xl/workbook.xml"/></Relationships>',
        )
        z.writestr(
            "xl/workbook.xml",
            f'<?xml version="1.0"?><workbook xmlns="{ns}" xmlns:r="{rel}"><sheets>'
            '<sheet name="S" sheetId="1" r:id="rId1"/></sheets></workbook>',
        )
        z.writestr(
            "xl/_rels/workbook.xml.rels",
            f'<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            f'<Relationship Id="rId1" Type="{rel}/worksheet" Target="worksheets/sheet1.xml"/></Relationships>',
        )
        z.writestr(
            "xl/worksheets/sheet1.xml",
            f'<?xml version="1.0"?><worksheet xmlns="{ns}"><dimension ref="A1:XFD1048576"/><sheetData>'
            '<row r="1"><c r="A1" t="inlineStr"><is><t>x</t></is></c></row></sheetData></worksheet>',
        )
    return out.getvalue()


# ---------------------------------------------------------------------------------------------------------------
# The service


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Service:
    def __init__(self, workers: int | None, timeout_s: float, root: Path = ROOT) -> None:
        self.port = _free_port()
        env = dict(os.environ)
        env["EXTRACTOR_TOKENS"] = ",".join((NORMAL_TOKEN, *HOSTILE_TOKENS))
        env["EXTRACTOR_TIMEOUT_S"] = str(timeout_s)
        if workers:
            env["EXTRACTOR_WORKERS"] = str(workers)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "extract_fn", "serve", "--port", str(self.port), "--log-level", "warning"],
            cwd=root,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,  # worker tracebacks from hostile files: not the benchmark's output
        )
        self.base = f"http://127.0.0.1:{self.port}"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if self.get_caps().status_code == 200:
                    return
            time.sleep(0.2)
        self.close()
        raise RuntimeError("the service did not start")

    def get_caps(self) -> httpx.Response:
        return httpx.get(f"{self.base}/v1/capabilities", headers={"Authorization": f"Bearer {NORMAL_TOKEN}"})

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def cpu_s(self) -> tuple[float, float]:
        """CPU-seconds used so far by the service process and by its workers (the live ones and those reaped)."""
        tick = os.sysconf("SC_CLK_TCK")

        def stat(pid: int | str) -> list[str]:
            raw = Path(f"/proc/{pid}/stat").read_text()
            return raw[raw.rindex(")") + 2 :].split()  # the fields after the command name (state is index 0)

        own = stat(self.proc.pid)
        service = (int(own[11]) + int(own[12])) / tick
        workers = (int(own[13]) + int(own[14])) / tick
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    fields = stat(entry.name)
                    if int(fields[1]) == self.proc.pid:
                        workers += (int(fields[11]) + int(fields[12])) / tick
        return service, workers

    def close(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


# ---------------------------------------------------------------------------------------------------------------
# Clients


def _post(http: httpx.Client, fmt: str, data: bytes, *, with_code: bool = False) -> str:
    """One extraction: its HTTP status (with the error code of a 422 or 503 when ``with_code``), or the error."""
    try:
        r = http.post(
            "/v1/extract", params={"format": fmt}, content=data, headers={"Content-Type": "application/octet-stream"}
        )
    except httpx.HTTPError as exc:
        return type(exc).__name__
    if with_code and r.status_code in (422, 503):
        return f"{r.status_code} {r.json()['error']['code']}"
    return str(r.status_code)


def normal_client(base: str, files: list[tuple[str, bytes]], n: int, offset: int, out: dict[str, Any]) -> None:
    """``n`` files, each posted until it gets an answer other than 503 (as a server retries later; here after
    0.2 s, at most ``MAX_RETRIES`` times); its latency counts from the first attempt."""
    with httpx.Client(base_url=base, timeout=120, headers={"Authorization": f"Bearer {NORMAL_TOKEN}"}) as http:
        for i in range(n):
            fmt, data = files[(offset + i) % len(files)]
            started = time.perf_counter()
            for _attempt in range(MAX_RETRIES):
                status = _post(http, fmt, data)
                if status != "503":
                    break
                out["retried"] += 1
                time.sleep(0.2)
            out["latencies"].append(time.perf_counter() - started)
            out["status"][status] += 1


def _slowloris(port: int, stop: threading.Event) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(b"POST /v1/extract?format=text HTTP/1.1\r\nHost: x\r\n")
        for _ in range(600):  # a header line every 0.1 s until the server closes (bounded: 60 s, or the run's end)
            if stop.is_set():
                return "stopped"
            try:
                s.sendall(b"X-Slow: 1\r\n")
                s.settimeout(0.1)
                if s.recv(4096) == b"":
                    return "closed"
            except TimeoutError:
                continue
            except OSError:
                return "closed"
    return "held"


def _dribble(port: int, token: str, stop: threading.Event) -> str:
    with socket.create_connection(("127.0.0.1", port), timeout=60) as s:
        s.sendall(
            b"POST /v1/extract?format=text HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "
            + token.encode()
            + b"\r\nContent-Length: 1000000\r\n\r\n"
        )
        said = b""
        for _ in range(3000):  # a byte every 0.1 s until the server answers (bounded: 300 s, or the run's end)
            if stop.is_set():
                return "stopped"
            try:
                s.sendall(b"x")
                s.settimeout(0.1)
                chunk = s.recv(4096)
                if not chunk:
                    break
                said += chunk
                if b"\r\n\r\n" in said:
                    break
            except TimeoutError:
                continue
            except OSError:
                break
    return said.split(b" ", 2)[1].decode() if said.startswith(b"HTTP/") else "closed"


def hostile_client(
    base: str, port: int, token: str, files: list[tuple[str, str, bytes]], stop: threading.Event, out: dict[str, Any]
) -> None:
    kinds: list[Any] = [*files, ("slowloris", None, b""), ("dribble", None, b"")]
    with httpx.Client(base_url=base, timeout=300, headers={"Authorization": f"Bearer {token}"}) as http:
        for loop in range(MAX_HOSTILE_LOOPS):
            for name, fmt, data in kinds:
                if stop.is_set():
                    return
                started = time.perf_counter()
                if name == "slowloris":
                    outcome = _slowloris(port, stop)
                elif name == "dribble":
                    outcome = _dribble(port, token, stop)
                else:
                    outcome = _post(http, fmt, data, with_code=True)
                    out["latency"][name].append(time.perf_counter() - started)
                out["status"][f"{name}: {outcome}"] += 1
            out["loops"] = loop + 1


def run(service: Service, clients: int, requests: int, hostile: list[tuple[str, str, bytes]] | None, shared: bool):
    files = normal_files()
    normal: dict[str, Any] = {"latencies": [], "status": collections.Counter(), "retried": 0}
    bad: dict[str, Any] = {"status": collections.Counter(), "loops": 0, "latency": collections.defaultdict(list)}
    stop = threading.Event()
    rss = [service.rss_mb()]

    def sample() -> None:
        while not stop.wait(0.2):
            rss.append(service.rss_mb())

    threads = [
        threading.Thread(target=normal_client, args=(service.base, files, requests, i * 7, normal))
        for i in range(clients)
    ]
    hostile_threads = []
    if hostile:
        for token in HOSTILE_TOKENS:
            t = NORMAL_TOKEN if shared else token
            hostile_threads.append(
                threading.Thread(target=hostile_client, args=(service.base, service.port, t, hostile, stop, bad))
            )
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    cpu_before, clients_before = service.cpu_s(), time.process_time()
    for t in hostile_threads:
        t.start()
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    cpu_after, clients_after = service.cpu_s(), time.process_time()
    stop.set()
    for t in hostile_threads:
        t.join(timeout=400)
    lat = sorted(normal["latencies"])
    ok = normal["status"].get("200", 0)
    return {
        "rps": ok / elapsed,
        "p50": statistics.median(lat),
        "p99": lat[min(len(lat) - 1, int(0.99 * len(lat)))],
        "status": dict(normal["status"]),
        "retried": normal["retried"],
        "hostile": dict(bad["status"]),
        "hostile_latency": {k: statistics.median(v) for k, v in bad["latency"].items()},
        "rss_peak_mb": max(rss),
        "elapsed": elapsed,
        # CPU-seconds while the normal clients ran: the service's process, its workers, this process's clients
        "cpu": (cpu_after[0] - cpu_before[0], cpu_after[1] - cpu_before[1], clients_after - clients_before),
    }


PHASES = ("alone", "first pass", "sustained", "alone again")


def hostile_loop_cost(service: Service, hostile: list[tuple[str, str, bytes]]) -> dict[str, float]:
    """CPU-seconds (workers, service, this process) and wall seconds of one loop of each hostile client through the
    hostile files on a service that already knows them, without normal clients: the hostile work a pass holds
    (a hostile client loops once a pass: its slowloris and dribble then hold it until the pass ends)."""
    cpu_before, own_before, started = service.cpu_s(), time.process_time(), time.perf_counter()

    def loop(token: str) -> None:
        with httpx.Client(base_url=service.base, timeout=300, headers={"Authorization": f"Bearer {token}"}) as http:
            for _name, fmt, data in hostile:
                _post(http, fmt, data)

    threads = [threading.Thread(target=loop, args=(t,)) for t in HOSTILE_TOKENS]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    cpu_after = service.cpu_s()
    return {
        "workers": cpu_after[1] - cpu_before[1],
        "service": cpu_after[0] - cpu_before[0],
        "clients": time.process_time() - own_before,
        "wall": time.perf_counter() - started,
    }


def byte_cost(workers: int | None, timeout_s: float, root: Path, runs: int = 5) -> None:
    """The service process's own CPU per byte carried (``--byte-cost``): text files of 1-8 MB (uploaded, sent to a
    worker, their artifact of about the same size spooled back and streamed to the client) against small ones."""
    service = Service(workers, timeout_s, root)
    try:
        with httpx.Client(base_url=service.base, timeout=300, headers={"Authorization": f"Bearer {NORMAL_TOKEN}"}) as h:

            def per_request(data: bytes) -> tuple[float, int]:
                r = h.post("/v1/extract", params={"format": "text"}, content=data)
                assert r.status_code == 200, r.text[:200]
                out = len(r.content)
                before = service.cpu_s()[0]
                for _ in range(runs):
                    h.post("/v1/extract", params={"format": "text"}, content=data)
                return (service.cpu_s()[0] - before) / runs, out

            small, small_out = per_request(b"a small file\n" * 40)
            print(f"small text: {small * 1000:.2f} ms of service CPU a request ({small_out} bytes out)")
            for mb in (1, 2, 4, 8):
                data = b"".join(
                    b"line %d of a text file that is a few megabytes long\n" % i for i in range(mb * 18_000)
                )
                cost, out = per_request(data)
                carried = len(data) + out
                per_mb = (cost - small) / (carried / (1024 * 1024))
                print(
                    f"{len(data) / 1e6:4.1f} MB in, {out / 1e6:4.1f} MB out: {cost * 1000:6.1f} ms of service CPU a "
                    f"request, {per_mb * 1000:.2f} ms per MB carried (in + out) over a small request"
                )
    finally:
        service.close()


def measure(args: argparse.Namespace, clients: int, hostile: list[tuple[str, str, bytes]]) -> dict[str, Any]:
    """One fresh service: a normal warm-up (not counted), then alone, first pass, sustained, alone again.

    *First pass*: the hostile inputs are new to the service (its crash memory is empty, no worker has imported their
    modules). *Sustained*: the same hostile clients start their loop again from its first file on the same service,
    so a short run is again all hostile files, now known (remembered refusals, modules imported). The hostile-free
    figure is the mean of the two alone runs around them (the machine may drift); each ratio is within this one run.
    """
    service = Service(args.workers, args.timeout_s, args.app_root)
    try:
        run(service, clients, args.requests, None, False)  # every worker has imported the normal files' modules
        shared = args.hostile_token == "shared"
        out = {
            "alone": run(service, clients, args.requests, None, False),
            "first pass": run(service, clients, args.requests, hostile, shared),
            "sustained": run(service, clients, args.requests, hostile, shared),
            "alone again": run(service, clients, args.requests, None, False),
        }
        out["hostile loop"] = hostile_loop_cost(service, hostile)
    finally:
        service.close()
    base = (out["alone"]["rps"] + out["alone again"]["rps"]) / 2
    for phase in PHASES:
        out[phase]["ratio"] = out[phase]["rps"] / base if base else 0.0
    return out


def _print_run(clients: int, results: dict[str, Any]) -> None:
    for phase in PHASES:
        r = results[phase]
        print(
            f"{clients:3d} normal clients, {phase:11s}: {r['rps']:7.1f} req/s ({r['ratio']:4.0%})  "
            f"p50 {r['p50'] * 1000:7.1f} ms  p99 {r['p99'] * 1000:8.1f} ms  {r['elapsed']:5.1f} s  "
            f"rss peak {r['rss_peak_mb']:5.0f} MB  {r['status']}  503s retried: {r['retried']}",
            flush=True,
        )
        service_s, workers_s, clients_s = r["cpu"]
        cores = os.cpu_count() or 1
        print(
            f"    CPU-seconds: workers {workers_s:.2f}, service {service_s:.2f}, benchmark clients {clients_s:.2f} "
            f"(the machine had {cores * r['elapsed']:.1f} on {cores} cores)"
        )
    h = results["hostile loop"]
    print(
        f"    one loop of each hostile client, alone (the inputs known): CPU-seconds workers {h['workers']:.2f}, "
        f"service {h['service']:.2f}, benchmark clients {h['clients']:.2f}, {h['wall']:.1f} s"
    )
    for phase in ("first pass", "sustained"):
        costs = ", ".join(f"{k} {v:.2f}" for k, v in sorted(results[phase]["hostile_latency"].items()))
        print(f"    hostile answer times (s, median), {phase}: {costs}")
        for outcome, count in sorted(results[phase]["hostile"].items()):
            print(f"      {outcome}: {count}")


def _spread(values: list[float], fmt: str) -> str:
    return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}-{fmt.format(max(values))}]"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, nargs="+", default=[8, 32])
    parser.add_argument("--requests", type=int, default=DEFAULT_REQUESTS, help="requests per normal client and pass")
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--timeout-s", type=float, default=60.0)
    parser.add_argument("--hostile-token", choices=["own", "shared"], default="own")
    parser.add_argument("--repeat", type=int, default=1, help="fresh services per number of clients")
    parser.add_argument("--app-root", type=Path, default=ROOT, help="the checkout whose service runs (A/B runs)")
    parser.add_argument("--byte-cost", action="store_true", help="measure the service's CPU per byte carried, only")
    args = parser.parse_args()
    if args.byte_cost:
        byte_cost(args.workers, args.timeout_s, args.app_root)
        return
    print("generating hostile inputs...", flush=True)
    hostile = hostile_files()
    for name, fmt, data in hostile:
        print(f"  {name} ({fmt}): {len(data):,} bytes")
    print(f"service from {args.app_root}, {args.workers or 'CPU-count'} workers, timeout {args.timeout_s:g} s")
    runs: dict[int, list[dict[str, Any]]] = collections.defaultdict(list)
    for i in range(args.repeat):
        for clients in args.clients:
            print(f"-- run {i + 1} of {args.repeat}", flush=True)
            results = measure(args, clients, hostile)
            runs[clients].append(results)
            _print_run(clients, results)
    print("\nmedian [min-max] over runs; ratio = throughput / the mean of the run's two alone figures (target: both")
    print("first pass and sustained >= 80%, p99 < 2 s)")
    for clients, rs in runs.items():
        alone = [r["alone"]["rps"] for r in rs] + [r["alone again"]["rps"] for r in rs]
        print(
            f"{clients:3d} clients x {len(rs)}: alone {_spread(alone, '{:.0f}')} req/s | "
            f"first pass {_spread([r['first pass']['ratio'] for r in rs], '{:.0%}')}, "
            f"p99 {_spread([r['first pass']['p99'] for r in rs], '{:.2f}')} s | "
            f"sustained {_spread([r['sustained']['ratio'] for r in rs], '{:.0%}')}, "
            f"p99 {_spread([r['sustained']['p99'] for r in rs], '{:.2f}')} s | "
            f"alone p99 {_spread([r['alone']['p99'] for r in rs], '{:.2f}')} s"
        )


if __name__ == "__main__":
    main()
