"""DOCSAI, DBRICKS and LOOM end to end: accepted event -> job -> submission -> polls -> result -> events."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any
from urllib.parse import urlsplit

import orjson
import requests
from azure.storage.blob import BlobClient

from shared.orchestration.jobs import JobState
from shared.orchestration.outcomes import PollOutcome
from shared.orchestration.poll import Action
from shared.orchestration.results import result_blob_name
from shared.orchestration.submit import Outcome, handle_accepted_events
from tests.orchestration.conftest import (
    CLIENT_ID,
    DATASET_RID,
    DBRICKS_TOKEN,
    DOCSAI_TOKEN,
    PALANTIR_TOKEN,
    Orch,
    Reply,
)


def _statuses(events: list[dict[str, Any]]) -> list[tuple[str, str, int]]:
    return [(e["eventType"], e["status"], e["sequence"]) for e in events]


def test_docsai_happy_path_end_to_end(make_orch: Any) -> None:
    orch: Orch = make_orch(FLUXX_EXTRACTOR_POLL_INTERVAL_MS="1000")  # first poll visible after 1 s
    orch.register("app-1", orch.docsai_config())
    event = orch.event("app-1")
    result = handle_accepted_events([orjson.dumps(event)], orch.deps)
    [outcome] = result.outcomes
    assert outcome.outcome == Outcome.CREATED
    job_id = outcome.job_id
    assert job_id is not None

    # The submission: exactly the spec's body, with a bearer token.
    [post] = orch.docsai.posts()
    assert post.headers["Authorization"] == f"Bearer {DOCSAI_TOKEN}"
    body = post.json()
    assert set(body) == {"jobId", "fileUrl", "DocumentHash", "FileLocationUrl"}
    assert body["jobId"] == job_id
    assert body["DocumentHash"] == event["documentHash"]
    assert body["FileLocationUrl"] == event["fileLocationUrl"]
    # fileUrl is a signed, read-only, time-limited URL of the source blob.
    sas = body["fileUrl"]
    query = dict(p.split("=", 1) for p in urlsplit(sas).query.split("&"))
    assert query["sp"] == "r"
    assert "se" in query
    assert "sig" in query
    assert requests.get(sas, timeout=5).content == b"%PDF-1.7 test file"
    assert BlobClient.from_blob_url(sas).get_blob_properties().size > 0
    refused = requests.put(sas, data=b"overwrite", headers={"x-ms-blob-type": "BlockBlob"}, timeout=5)
    assert refused.status_code == 403

    # The job is polling attempt 1, due after the backoff delay; its message is invisible until then.
    job = orch.deps.store.get(job_id)
    assert job is not None
    assert job.state == JobState.POLLING
    assert job.run_id == "1001"
    assert job.attempt == 1
    assert job.last_delay_ms == 1000
    assert job.next_poll_at is not None
    assert job.next_poll_at - job.updated_at == timedelta(milliseconds=1000)
    poll_queue = orch.queue(orch.settings.poll_queue)
    assert poll_queue.get_queue_properties().approximate_message_count == 1
    assert list(poll_queue.peek_messages()) == []  # not visible yet
    deadline = time.monotonic() + 120  # it must become visible (after 1 s); how soon does not matter
    messages: list[Any] = []
    while not messages and time.monotonic() < deadline:
        messages = list(poll_queue.receive_messages(max_messages=1, visibility_timeout=30))
        time.sleep(0.1)
    [message] = messages
    assert orjson.loads(message.content) == {"jobId": job_id, "attempt": 1}

    # Polls: processing, processing, complete with an inline object payload.
    payload = {"fields": {"total": 42}, "pages": 1}
    orch.docsai.poll_script["1001"] = [
        Reply(200, {"Status": "processing"}),
        Reply(200, {"Status": "processing"}),
        Reply(200, {"Status": "complete", "Payload": payload}),
    ]
    orch.reconfigure(poll_interval_ms=0)  # later polls due at once (the queue delay was shown above)
    from shared.orchestration.poll import handle_poll_message

    first = handle_poll_message(message.content, orch.deps)
    poll_queue.delete_message(message)
    assert first.action == Action.RESCHEDULED
    job = orch.deps.store.get(job_id)
    assert job is not None
    assert job.attempt == 2
    assert job.last_delay_ms == 0
    rest = orch.drive()
    assert [r.action for r in rest] == [Action.RESCHEDULED, Action.SUCCEEDED]
    for poll in orch.docsai.polls():
        assert poll.path == "/poll/1001"
        assert poll.headers["Authorization"] == f"Bearer {DOCSAI_TOKEN}"

    # The result blob, at <clientApplicationId>/<fileId>/<jobId>/result.json in container results.
    name = result_blob_name("app-1", event["fileId"], job_id)
    assert name == f"app-1/{event['fileId']}/{job_id}/result.json"
    stored = orch.blobs.get_blob_client(orch.settings.results_container, name).download_blob().readall()
    assert orjson.loads(stored) == payload
    job = orch.deps.store.get(job_id)
    assert job is not None
    assert job.state == JobState.SUCCEEDED
    assert job.result_location is not None
    assert job.result_location.endswith(f"/{orch.settings.results_container}/{name}")

    events = orch.events_of(job_id)
    assert _statuses(events) == [
        ("JobStatusChanged", "Queued", 1),
        ("JobStatusChanged", "Started", 2),
        ("JobStatusChanged", "Processing", 3),
        ("JobStatusChanged", "Processing", 4),
        ("JobStatusChanged", "Succeeded", 5),
        ("ExtractedResult", "Succeeded", 6),
    ]
    assert events[1]["runId"] == "1001"
    assert events[1]["extractorType"] == "DOCSAI"
    assert [e["attempt"] for e in events[2:5]] == [1, 2, 3]
    assert events[5]["resultLocation"] == job.result_location
    for e in events:
        assert e["fileId"] == event["fileId"]
        assert e["clientApplicationId"] == "app-1"
        assert e["schemaVersion"] == 1
        assert DOCSAI_TOKEN not in orjson.dumps(e).decode()
    # Finished: nothing left for the sweeper.
    assert orch.deps.store.active_index() == []
    assert orch.poll_messages() == []


def test_dbricks_happy_path_with_palantir_ingestion(orch: Orch) -> None:
    orch.register("app-db", orch.dbricks_config(), how="extractors")
    event = orch.event("app-db", filePath=None)
    [outcome] = handle_accepted_events([orjson.dumps(event)], orch.deps).outcomes
    job_id = outcome.job_id
    assert outcome.outcome == Outcome.CREATED
    assert job_id

    [post] = orch.dbricks.posts()
    assert post.headers["Authorization"] == f"Bearer {DBRICKS_TOKEN}"
    source = f"/{orch.source_container}/app-db/{urlsplit(event['fileLocationUrl']).path.rsplit('/', 1)[1]}"
    assert post.json() == {
        "name": f"extract-{event['fileId']}-{job_id}",
        "client_id": CLIENT_ID,
        "created_by": CLIENT_ID,
        "metadata": {"output_path": f"/results/app-db/{event['fileId']}/{job_id}"},
        "files": [{"file_path": source, "agent": "invoice-agent"}],
    }
    job = orch.deps.store.get(job_id)
    assert job is not None
    assert job.run_id == "run-1001"

    # The extractor writes its task results to the results container under the output path.
    prefix = f"app-db/{event['fileId']}/{job_id}"
    results = orch.blobs.get_container_client(orch.settings.results_container)
    results.upload_blob(f"{prefix}/task-0.json", b'{"task": 0}')
    results.upload_blob(f"{prefix}/task-1.json", b'{"task": 1}')
    blob_url = results.get_blob_client(f"{prefix}/task-1.json").url
    orch.dbricks.poll_script["run-1001"] = [
        Reply(200, {"id": "run-1001", "overall_status": "ENQUEUED"}),
        Reply(200, {"id": "run-1001", "overall_status": "PROCESSING"}),
        Reply(
            200,
            {
                "id": "run-1001",
                "overall_status": "COMPLETED",
                "tasks": [{"result_url": f"/results/{prefix}/task-0.json"}, {"result_url": blob_url}],
            },
        ),
    ]
    actions = [r.action for r in orch.drive()]
    assert actions == [Action.RESCHEDULED, Action.RESCHEDULED, Action.SUCCEEDED]
    assert {p.path for p in orch.dbricks.polls()} == {"/poll/run-1001"}

    uploads = orch.palantir.uploads()
    assert [u.query["filePath"] for u in uploads] == [[f"{prefix}/task-0.json"], [f"{prefix}/task-1.json"]]
    assert [u.body for u in uploads] == [b'{"task": 0}', b'{"task": 1}']
    for u in uploads:
        assert u.path == f"/api/v1/datasets/{DATASET_RID}/files:upload"
        assert u.headers["Authorization"] == f"Bearer {PALANTIR_TOKEN}"
        assert u.headers["Content-Type"] == "application/octet-stream"

    events = orch.events_of(job_id)
    assert _statuses(events) == [
        ("JobStatusChanged", "Queued", 1),
        ("JobStatusChanged", "Started", 2),
        ("JobStatusChanged", "Processing", 3),
        ("JobStatusChanged", "Processing", 4),
        ("JobStatusChanged", "Succeeded", 5),
        ("ExtractedResult", "Succeeded", 6),
    ]
    assert events[5]["resultUrls"] == [f"/results/{prefix}/task-0.json", blob_url]
    assert events[5]["runId"] == "run-1001"
    assert events[5]["extractorType"] == "DBRICKS"


def test_loom_job_is_not_submitted_and_its_first_poll_runs_the_loom_client(orch: Orch) -> None:
    calls: list[tuple[str, int, str]] = []

    def run_loom_attempt(job: Any, config: Any, settings: Any) -> PollOutcome:
        calls.append((job.job_id, job.attempt, config.extraction_url))
        if job.attempt == 1:
            return PollOutcome.processing("extractor busy")
        return PollOutcome.succeeded(b'{"artifact": true}')

    orch.use_loom(run_loom_attempt)
    orch.register("app-loom", {"extractorType": "loom", "extractionUrl": "http://127.0.0.1:9/v1", "routes": {"x": 1}})
    [outcome] = handle_accepted_events([orjson.dumps(orch.event("app-loom"))], orch.deps).outcomes
    job_id = outcome.job_id
    assert outcome.state == JobState.POLLING
    assert job_id
    assert orch.docsai.posts() == []
    assert orch.dbricks.posts() == []
    actions = [r.action for r in orch.drive()]
    assert actions == [Action.RESCHEDULED, Action.SUCCEEDED]
    assert calls == [(job_id, 1, "http://127.0.0.1:9/v1"), (job_id, 2, "http://127.0.0.1:9/v1")]
    job = orch.deps.store.get(job_id)
    assert job is not None
    assert job.state == JobState.SUCCEEDED
    assert job.config().model_extra == {"routes": {"x": 1}}
    assert job.result_location is not None
    events = orch.events_of(job_id)
    # Processing when the first extract call starts, again (with the reason) when it must be retried.
    assert [e["status"] for e in events] == ["Queued", "Started", "Processing", "Processing", "Succeeded", "Succeeded"]
    assert events[2]["reason"] is None
    assert events[3]["reason"] == "extractor busy"
