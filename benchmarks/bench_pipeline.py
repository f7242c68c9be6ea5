"""Jobs per second through the local pipeline, and the storage transactions and HTTP calls each job costs.

    .venv/bin/python -m benchmarks.bench_pipeline [--jobs 200]

Starts its own Azurite and a fast in-process contract server (a tiny valid artifact, no parsing), accepts N small
text files as LOOM jobs through the devhost, and drives the host's triggers in one thread until every job is
terminal. Every HTTP request the pipeline makes (the Azure SDKs' and the LOOM client's both go through requests) is
counted by service, table or queue, and operation; the producer's upload and event, the idle polls of empty queues and
the benchmark's own completion checks are not the pipeline's per-job cost and are left out where they can be (empty
receives are counted: they are real transactions, amortized over the batch). The devhost's stand-ins are named apart:
queue ``accepted-files-local`` plays the accepted-files Event Hub, table ``devhostevents`` is the host's own log of
the status events it saw (for ``devhost status``), queue ``job-status-local`` plays the job-status Event Hub. The
time of each trigger is shown apart: the status consumer (a downstream reader of the Event Hub in Azure) runs in the
same loop, so "jobs/s of handler time" leaves it out.
docs/orchestration.md ("Storage transactions per job") explains each jobs-table call.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson
import requests

TOKEN = "bench-token"

ARTIFACT = {
    "schema_version": 1,
    "format": "text",
    "parser": "fast",
    "parser_version": "1",
    "options": {},
    "attrs": {},
    "warnings": [],
    "coverage": {"unit": "lines", "total": 1, "extracted": 1, "failed": [], "lost": [], "complete": True},
    "blocks": [
        {
            "id": "b0",
            "type": "paragraph",
            "text": "hello",
            "section_path": [],
            "locator": {"line_start": 1, "line_end": 1},
            "keys": [],
        }
    ],
}
CAPABILITIES = {
    "contract_version": 1,
    "extractor": {"name": "fast", "version": "1"},
    "max_bytes": 1 << 20,
    "formats": [{"format": "text", "options": ["encoding"]}],
}


class FastExtractor(BaseHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass

    def _send(self, doc: dict[str, Any]) -> None:
        body = orjson.dumps(doc)
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self._send(CAPABILITIES)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self._send(ARTIFACT)


ACCOUNT = "devstoreaccount1"  # Azurite's account: the first path segment of its URLs
COUNTS: collections.Counter[str] = collections.Counter()
PORTS: dict[int, str] = {}
COUNTING = threading.Event()
_original_send = requests.Session.send


def _table_of(request: requests.PreparedRequest, path: str) -> str:
    """The table a Table storage request is for: in the URL, or (an entity group transaction) in its body."""
    m = re.match(r"/(?:[^/]+/)?([A-Za-z][A-Za-z0-9]*)\(", path)
    if m:
        return m.group(1)
    body = request.body if isinstance(request.body, bytes) else (request.body or "").encode()
    m = re.search(rb"\n(?:POST|PUT|PATCH|MERGE|DELETE) \S*?/([A-Za-z][A-Za-z0-9]*)(?:\(| HTTP)", body)
    return m.group(1).decode() if m else "?"


def counting_send(self: requests.Session, request: requests.PreparedRequest, **kw: Any) -> requests.Response:
    if not COUNTING.is_set():
        return _original_send(self, request, **kw)
    m = re.match(r"https?://[^:/]+:(\d+)(/[^?]*)?(\?.*)?", request.url or "")
    service = PORTS.get(int(m.group(1)), "other") if m else "other"
    path = m.group(2) or "/" if m else "/"
    query = m.group(3) or "" if m else ""
    if service == "table":
        op = "batch" if "$batch" in path else ("query" if request.method == "GET" else request.method)
        op = f"{_table_of(request, path)} {op}"
    elif service == "queue":
        op = {"GET": "receive", "POST": "send", "DELETE": "delete", "PUT": "update"}.get(request.method or "", "?")
        if "comp=" in query or path.count("/") <= 2:
            op = f"{request.method} queue"  # create queue / metadata
        parts = [p for p in path.split("/") if p]
        name = parts[1] if len(parts) > 1 and parts[0] == ACCOUNT else (parts[0] if parts else "?")
        op = f"{name} {op}"
    elif service == "blob":
        op = request.method or "?"
        if "restype=container" in query:
            op = f"{op} container"
    else:
        op = f"{request.method} {path}"
    COUNTS[f"{service} {op}"] += 1
    return _original_send(self, request, **kw)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--jobs", type=int, default=200)
    args = ap.parse_args()

    from tools.azurite import start_azurite

    az = start_azurite()
    server = ThreadingHTTPServer(("127.0.0.1", 0), FastExtractor)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    ports = [int(p) for p in re.findall(r"127\.0\.0\.1:(\d+)", az.connection_string)]
    PORTS.update({ports[0]: "blob", ports[1]: "queue", ports[2]: "table", server.server_address[1]: "extractor"})
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        os.environ["AZURITE_CONNECTION_STRING"] = az.connection_string
        from devhost import config as devhost_config
        from devhost.__main__ import accept_file
        from devhost.host import LocalHost
        from shared.orchestration.composition import build_deps
        from shared.orchestration.settings import OrchestrationSettings

        env = {
            "DataStorage": az.connection_string,
            "LOOM_DOCUMENT_EXTRACTOR_URL": url,
            "LOOM_DOCUMENT_EXTRACTOR_TOKEN": TOKEN,
            # As the devhost's local environment: the event carries its registration, the fast server is plain
            # http on loopback (without these every job fails at once and the numbers measure nothing).
            "ALLOW_EVENT_REGISTRATION": "true",
            "EXTRACTOR_ALLOWED_HOSTS": f"127.0.0.1:{server.server_address[1]}",
            "OUTBOUND_ALLOW_HTTP": "true",
            "OUTBOUND_ALLOW_LOOPBACK": "true",
        }
        deps = build_deps(OrchestrationSettings.from_env(env))
        host = LocalHost(deps)
        registration = {
            "extractors": [
                {
                    "extractorType": "LOOM",
                    "extractionUrl": url,
                    "jobTrackingConfig": {"pollIntervalMs": 0, "maxDelayMs": 0},
                }
            ]
        }
        with tempfile.TemporaryDirectory() as tmp:
            files = []
            for i in range(args.jobs):
                p = Path(tmp) / f"f{i}.txt"
                p.write_text(f"file {i}\n")
                files.append(p)
            job_ids = [accept_file(p, "bench-app", deps, registration=registration) for p in files]
        requests.Session.send = counting_send  # type: ignore[method-assign]
        start = time.perf_counter()
        pending = set(job_ids)
        spent = {"submit": 0.0, "poll": 0.0, "status": 0.0}
        steps = {"submit": host.accepted_once, "poll": host.poll_once, "status": host.status_once}
        while pending:
            COUNTING.set()
            for name, step in steps.items():
                t0 = time.perf_counter()
                step()
                spent[name] += time.perf_counter() - t0
            COUNTING.clear()  # the benchmark's own completion checks are not the pipeline's
            pending = {j for j in pending if not (job := deps.store.get(j)) or not job.terminal}
        elapsed = time.perf_counter() - start
        COUNTING.set()
        while host.status_once():
            pass
        COUNTING.clear()
        requests.Session.send = _original_send  # type: ignore[method-assign]
        states = collections.Counter(str(deps.store.get(j).state) for j in job_ids)  # type: ignore[union-attr]
        print(f"{args.jobs} jobs in {elapsed:.2f} s: {args.jobs / elapsed:.1f} jobs/s, states {dict(states)}")
        handlers = spent["submit"] + spent["poll"]
        print(
            f"  time in the submit handler {spent['submit']:.2f} s, the poll handler {spent['poll']:.2f} s, "
            f"the devhost's status consumer {spent['status']:.2f} s: {args.jobs / handlers:.1f} jobs/s of handler time"
        )
        print("calls per job:")
        for key, n in sorted(COUNTS.items()):
            print(f"  {key:<46} {n / args.jobs:6.2f}")
        total = sum(COUNTS.values())
        print(f"  {'total':<46} {total / args.jobs:6.2f}")
        jobs_table = sum(n for k, n in COUNTS.items() if k.startswith(f"table {deps.settings.jobs_table} "))
        stand_ins = sum(
            n
            for k, n in COUNTS.items()
            if k.startswith((f"table {devhost_config.EVENTS_TABLE} ", f"queue {devhost_config.ACCEPTED_QUEUE} "))
        )
        print(f"  {'of which Table storage, the jobs table':<46} {jobs_table / args.jobs:6.2f}")
        print(f"  {'of which devhost-only (no such call in Azure)':<46} {stand_ins / args.jobs:6.2f}")
        print("  (devhost-only: the accepted-files-local queue, the devhostevents log table)")
    finally:
        server.shutdown()
        az.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
