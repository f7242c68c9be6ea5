"""The whole pipeline, locally: real corpus files accepted through the devhost, submitted as LOOM jobs to our own
extractor service (a real uvicorn process), polled, stored in Blob storage on Azurite, with their status events.

The host's triggers are driven one pass at a time (no threads), so each step is deterministic.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
import requests

from devhost.__main__ import accept_file, job_report
from devhost.host import LocalHost
from shared.artifact import validate_artifact
from shared.orchestration.composition import build_deps
from shared.orchestration.deps import Deps
from shared.orchestration.settings import OrchestrationSettings
from shared.orchestration.storage import blob_service
from tests.waiting import wait_until

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "pipeline-test-token"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def extractor_url() -> Iterator[str]:
    port = _free_port()
    env = dict(os.environ, EXTRACTOR_TOKENS=TOKEN, EXTRACTOR_WORKERS="2", EXTRACTOR_TIMEOUT_S="60")
    proc = subprocess.Popen(
        [sys.executable, "-m", "extract_fn", "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            requests.get(f"{url}/v1/capabilities", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=60)
            break
        except requests.RequestException:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("the extractor service did not start") from None
            time.sleep(0.1)
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture
def deps(azurite_connection_string: str, extractor_url: str, unique_name: str, monkeypatch: pytest.MonkeyPatch) -> Deps:
    # The devhost's own queue, container and table are this test's too (xdist runs tests side by side on one Azurite).
    monkeypatch.setenv("DEVHOST_ACCEPTED_QUEUE", f"{unique_name}-accepted")
    monkeypatch.setenv("ACCEPTED_FILES_CONTAINER", f"{unique_name}-accepted")
    monkeypatch.setenv("DEVHOST_EVENTS_TABLE", f"{unique_name}events")
    env = {
        "DataStorage": azurite_connection_string,
        "JOBS_TABLE": unique_name,
        "POLL_QUEUE": f"{unique_name}-poll",
        "CANCEL_QUEUE": f"{unique_name}-cancel",
        "RESULTS_CONTAINER": f"{unique_name}-results",
        "ACCEPTED_FILES_CONTAINER": f"{unique_name}-accepted",
        "ACCEPTED_FILES_POISON_CONTAINER": f"{unique_name}-poison",
        "JOB_STATUS_LOCAL_QUEUE": f"{unique_name}-status",
        "LOOM_DOCUMENT_EXTRACTOR_URL": extractor_url,
        "LOOM_DOCUMENT_EXTRACTOR_TOKEN": TOKEN,
        "LOOM_DOCUMENT_EXTRACTOR_TIMEOUT_S": "60",
        # Local use: the events carry their registration, naming the loopback extractor over plain http.
        "ALLOW_EVENT_REGISTRATION": "true",
        "EXTRACTOR_ALLOWED_HOSTS": "127.0.0.1",  # any loopback port: the tests start extractors of their own
        "OUTBOUND_ALLOW_HTTP": "true",
        "OUTBOUND_ALLOW_LOOPBACK": "true",
    }
    return build_deps(OrchestrationSettings.from_env(env))


def registration(extractor_url: str) -> dict[str, Any]:
    return {
        "features": [
            {
                "featureName": "extractor",
                "featureConfig": {
                    "extractors": [
                        {
                            "extractorType": "LOOM",
                            "extractionUrl": extractor_url,
                            "jobTrackingConfig": {"maxPollingAttempts": 5, "pollIntervalMs": 0, "maxDelayMs": 0},
                        }
                    ]
                },
            }
        ]
    }


def drive(host: LocalHost, job_ids: list[str], timeout_s: float = 120) -> None:
    """Run the host's triggers until every job is terminal."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        host.accepted_once()
        host.poll_once()
        host.status_once()
        jobs = [host.deps.store.get(j) for j in job_ids]
        if all(j is not None and j.terminal for j in jobs):
            while host.status_once():
                pass
            return
        time.sleep(0.05)
    raise AssertionError(f"jobs not terminal in time: {[(j, host.deps.store.get(j)) for j in job_ids]}")


CASES = [
    ("markdown/readme-sqlglot.md", "markdown"),
    ("pdf/pdfjs-tracemonkey.pdf", "pdf"),
    ("csv/csvkit-iris.csv", "csv"),
    ("docx/mammoth-tables.docx", "docx"),
    ("toml/real-sqlglot-pyproject.toml", "toml"),
    ("xlsx/calamine-date-1904.xlsx", "xlsx"),
]


def test_corpus_files_go_from_accepted_to_stored_artifact(deps: Deps, extractor_url: str, corpus: Path) -> None:
    host = LocalHost(deps)
    cases = [(corpus / rel, fmt) for rel, fmt in CASES]
    jobs = {
        accept_file(path, "demo-app", deps, registration=registration(extractor_url)): (path, fmt)
        for path, fmt in cases
    }
    drive(host, list(jobs))
    results = blob_service(deps.settings).get_container_client(deps.settings.results_container)
    for job_id, (path, fmt) in jobs.items():
        report = job_report(job_id, deps)
        assert report is not None
        assert report["status"] == "Succeeded", (path.name, report["reason"])
        # The artifact is stored at the spec's result path and is a valid artifact of the file's format.
        location = report["resultLocation"]
        job = deps.store.get(job_id)
        assert job is not None
        blob_name = f"demo-app/{job.file_id}/{job_id}/result.json"
        assert location.endswith(f"{deps.settings.results_container}/{blob_name}")
        stored = results.download_blob(blob_name).readall()
        artifact = validate_artifact(stored, format=fmt, original_size=path.stat().st_size)
        assert artifact.blocks, path.name
        # Events: in order, without gaps, from Queued to Succeeded, then the extracted result.
        events = report["events"]
        assert [e["sequence"] for e in events] == list(range(1, len(events) + 1))
        statuses = [(e["eventType"], e["status"]) for e in events]
        assert statuses[0][1] == "Queued"
        assert ("JobStatusChanged", "Started") in statuses
        assert ("JobStatusChanged", "Processing") in statuses
        assert ("ExtractedResult", "Succeeded") in statuses
        assert statuses[-1][1] == "Succeeded"
        assert any(e["resultLocation"] == location for e in events if e["status"] == "Succeeded")
        assert all(e["jobId"] == job_id and e["clientApplicationId"] == "demo-app" for e in events)
        assert TOKEN not in orjson.dumps(events).decode()


def test_a_corrupt_file_and_an_unregistered_app_end_failed(deps: Deps, extractor_url: str, corpus: Path) -> None:
    host = LocalHost(deps)
    corrupt = accept_file(
        corpus / "pdf/pdfjs-bug1020226-invalid.pdf", "demo-app", deps, registration=registration(extractor_url)
    )
    unregistered = accept_file(corpus / "text/" / sorted(os.listdir(corpus / "text"))[0], "nobody", deps)
    drive(host, [corrupt, unregistered])
    bad = job_report(corrupt, deps)
    assert bad is not None
    assert bad["status"] == "Failed"
    assert bad["reason"].startswith("corrupt")
    assert bad["events"][-1]["status"] == "Failed"
    nobody = job_report(unregistered, deps)
    assert nobody is not None
    assert nobody["status"] == "Failed"
    assert "extractor" in nobody["reason"].lower() or "registration" in nobody["reason"].lower()


def test_the_same_file_accepted_twice_with_one_event_id_is_one_job(
    deps: Deps, extractor_url: str, corpus: Path
) -> None:
    host = LocalHost(deps)
    path = corpus / "markdown/readme-sqlglot.md"
    first = accept_file(path, "demo-app", deps, event_id="evt-1", registration=registration(extractor_url))
    second = accept_file(path, "demo-app", deps, event_id="evt-1", registration=registration(extractor_url))
    assert first == second
    drive(host, [first])
    report = job_report(first, deps)
    assert report is not None
    assert report["status"] == "Succeeded"
    assert sum(1 for e in report["events"] if e["status"] == "Succeeded" and e["eventType"] == "JobStatusChanged") == 1


def _cli(deps: Deps, azurite_connection_string: str, *args: str) -> subprocess.CompletedProcess[bytes]:
    """``python -m devhost ARGS`` on this test's own storage names."""
    s = deps.settings
    env = dict(
        os.environ,
        AZURITE_CONNECTION_STRING=azurite_connection_string,
        DataStorage=azurite_connection_string,
        JOBS_TABLE=s.jobs_table,
        POLL_QUEUE=s.poll_queue,
        CANCEL_QUEUE=s.cancel_queue,
        RESULTS_CONTAINER=s.results_container,
        ACCEPTED_FILES_POISON_CONTAINER=s.poison_container,
        JOB_STATUS_LOCAL_QUEUE=s.status_local_queue,
    )
    return subprocess.run(
        [sys.executable, "-m", "devhost", *args], cwd=ROOT, env=env, capture_output=True, timeout=60, check=False
    )


def test_devhost_cli_status_json(deps: Deps, extractor_url: str, corpus: Path, azurite_connection_string: str) -> None:
    host = LocalHost(deps)
    job_id = accept_file(
        corpus / "markdown/readme-sqlglot.md", "demo-app", deps, registration=registration(extractor_url)
    )
    drive(host, [job_id])
    out = _cli(deps, azurite_connection_string, "status", job_id, "--json")
    assert out.returncode == 0, out.stderr
    doc = orjson.loads(out.stdout)
    assert doc["jobId"] == job_id
    assert doc["status"] == "Succeeded"
    assert doc["resultLocation"]
    assert [e["sequence"] for e in doc["events"]] == list(range(1, len(doc["events"]) + 1))
    done = _cli(deps, azurite_connection_string, "wait", job_id, "--timeout", "5")
    assert done.returncode == 0
    assert b"Succeeded" in done.stdout


def test_devhost_status_says_where_the_result_is_and_result_prints_it(
    deps: Deps, extractor_url: str, corpus: Path, azurite_connection_string: str, tmp_path: Path
) -> None:
    host = LocalHost(deps)
    source = corpus / "markdown/readme-sqlglot.md"
    job_id = accept_file(source, "demo-app", deps, registration=registration(extractor_url))
    drive(host, [job_id])
    job = deps.store.get(job_id)
    assert job is not None
    blob_name = f"demo-app/{job.file_id}/{job_id}/result.json"
    stored = blob_service(deps.settings).get_blob_client(deps.settings.results_container, blob_name)
    expected = stored.download_blob().readall()
    assert validate_artifact(expected, format="markdown", original_size=source.stat().st_size).blocks

    doc = orjson.loads(_cli(deps, azurite_connection_string, "status", job_id, "--json").stdout)
    assert doc["result"] == {
        "account": blob_service(deps.settings).account_name,
        "container": deps.settings.results_container,
        "blob": blob_name,
        "url": job.result_location,
    }
    text = _cli(deps, azurite_connection_string, "status", job_id)
    assert text.returncode == 0, text.stderr
    assert f"container '{deps.settings.results_container}', blob '{blob_name}'" in text.stdout.decode()
    assert f"python -m devhost result {job_id}" in text.stdout.decode()

    printed = _cli(deps, azurite_connection_string, "result", job_id)
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == expected  # the stored bytes, as they are
    out = tmp_path / "result.json"
    written = _cli(deps, azurite_connection_string, "result", job_id, "--out", str(out))
    assert written.returncode == 0, written.stderr
    assert out.read_bytes() == expected
    assert f"wrote {len(expected)} bytes".encode() in written.stderr
    assert list(tmp_path.iterdir()) == [out]  # no partial file left behind


def test_devhost_result_of_a_failed_or_unknown_job_says_so(
    deps: Deps, extractor_url: str, corpus: Path, azurite_connection_string: str, tmp_path: Path
) -> None:
    host = LocalHost(deps)
    corrupt = accept_file(
        corpus / "pdf/pdfjs-bug1020226-invalid.pdf", "demo-app", deps, registration=registration(extractor_url)
    )
    drive(host, [corrupt])
    failed = _cli(deps, azurite_connection_string, "result", corrupt, "--out", str(tmp_path / "r.json"))
    assert failed.returncode == 1
    assert failed.stdout == b""
    assert f"job {corrupt} is Failed: it has no stored result".encode() in failed.stderr
    assert list(tmp_path.iterdir()) == []  # nothing written
    status = _cli(deps, azurite_connection_string, "status", corrupt)
    assert "  result: -" in status.stdout.decode()
    unknown = _cli(deps, azurite_connection_string, "result", "no-such-job")
    assert unknown.returncode == 2
    assert b"no job no-such-job" in unknown.stderr


def test_the_devhost_queue_and_container_are_the_tests_own(deps: Deps, extractor_url: str, corpus: Path) -> None:
    # Two xdist workers share one Azurite: a host must never take another test's accepted-file events.
    from devhost import config
    from devhost.host import queue

    assert config.accepted_queue() != config.ACCEPTED_QUEUE
    accept_file(corpus / "markdown/readme-sqlglot.md", "demo-app", deps, registration=registration(extractor_url))
    own = queue(deps, config.accepted_queue()).peek_messages(max_messages=32)
    assert len(own) == 1
    container = blob_service(deps.settings).get_container_client(config.accepted_container())
    assert [b.name.rsplit("/", 1)[-1] for b in container.list_blobs()] == ["readme-sqlglot.md"]


class _Hanging:
    """An extractor that takes every request and answers none until released (then 503)."""

    def __init__(self) -> None:
        import threading
        from http.server import BaseHTTPRequestHandler

        from tests.quiet_http import QuietHTTPServer

        self.release = threading.Event()
        self.received = threading.Event()  # set by the first request it takes
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                outer.received.set()
                outer.release.wait(600)  # bounded, and released by the test long before
                self.send_error(503)

            do_POST = do_GET

            def log_message(self, *args: object) -> None:
                pass

        self.server = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


def test_a_hanging_extractor_holds_only_its_own_job(deps: Deps, extractor_url: str, corpus: Path) -> None:
    import threading

    hanging = _Hanging()
    host = LocalHost(deps)
    runner = threading.Thread(target=host.run_forever, daemon=True)
    runner.start()
    try:
        path = corpus / "markdown/readme-sqlglot.md"
        held = accept_file(path, "demo-app", deps, registration=registration(hanging.url))
        assert hanging.received.wait(120), "the hanging extractor got no poll"  # in flight, and it hangs
        normal = accept_file(path, "demo-app", deps, registration=registration(extractor_url))
        wait_until(lambda: (j := deps.store.get(normal)) is not None and j.terminal, 120, "the normal job ends")
        job = deps.store.get(normal)
        assert job is not None
        assert job.terminal, job
        assert str(job.state) == "Succeeded", job.reason
        assert not hanging.release.is_set()
        held_job = deps.store.get(held)
        assert held_job is not None
        assert not held_job.terminal  # still held by its extractor while the other job finished
        assert host.polls_in_flight >= 1
    finally:
        hanging.close()
        host.stop.set()
        runner.join(60)


def test_devhost_result_reads_only_the_results_container(deps: Deps, extractor_url: str, corpus: Path) -> None:
    import io
    from dataclasses import replace

    from devhost.results import NoResult, write_result
    from shared.orchestration.storage import blob_url

    host = LocalHost(deps)
    job_id = accept_file(
        corpus / "markdown/readme-sqlglot.md", "demo-app", deps, registration=registration(extractor_url)
    )
    drive(host, [job_id])
    job = deps.store.get(job_id)
    assert job is not None
    out = io.BytesIO()
    assert write_result(job, deps.settings, out) == len(out.getvalue()) > 0
    # A job row naming another container (the accepted file itself) is refused, and nothing is read.
    accepted = blob_url(deps.settings, deps.settings.accepted_container, f"demo-app/{job.file_id}/readme-sqlglot.md")
    elsewhere = io.BytesIO()
    with pytest.raises(NoResult, match="not in this account's results container"):
        write_result(replace(job, result_location=accepted), deps.settings, elsewhere)
    assert elsewhere.getvalue() == b""
    # A DBRICKS-like job stores no result.json: its result blobs are listed instead.
    dbricks = replace(job, result_location=None, result_urls=("/results/demo-app/f/j/part-0.json",))
    with pytest.raises(NoResult, match=r"part-0\.json"):
        write_result(dbricks, deps.settings, io.BytesIO())
    # A result blob that has gone.
    gone = replace(
        job, result_location=blob_url(deps.settings, deps.settings.results_container, "demo-app/x/y/result.json")
    )
    with pytest.raises(NoResult, match="is gone"):
        write_result(gone, deps.settings, io.BytesIO())
