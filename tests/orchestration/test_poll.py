"""Polling: status mapping, flapping, request errors, stop conditions, crashes, duplicates, result handling."""

from __future__ import annotations

import base64
from dataclasses import replace
from typing import Any

import orjson
import pytest

from shared.orchestration.jobs import JobState
from shared.orchestration.poll import Action, claim_attempt, handle_poll_message
from shared.orchestration.results import ResultError, download_result
from shared.orchestration.scheduling import PollMessage
from shared.orchestration.submit import handle_accepted_events
from tests.orchestration.conftest import Orch, Reply
from tests.timeouts import HANG_TIMEOUT_S


def _start(orch: Orch, config: dict[str, Any] | None = None, app: str = "app-1") -> str:
    orch.register(app, config or orch.docsai_config())
    [outcome] = handle_accepted_events([orjson.dumps(orch.event(app))], orch.deps).outcomes
    assert outcome.state == JobState.POLLING, outcome
    assert outcome.job_id is not None
    return outcome.job_id


def _job(orch: Orch, job_id: str) -> Any:
    job = orch.deps.store.get(job_id)
    assert job is not None
    return job


def test_docsai_flapping_statuses_and_request_errors_keep_polling(make_orch: Any) -> None:
    orch: Orch = make_orch(EXTRACTOR_HTTP_TIMEOUT_SECONDS=str(HANG_TIMEOUT_S))
    job_id = _start(orch)
    orch.docsai.poll_script["1001"] = [
        Reply(200, {"Status": "processing"}),
        Reply(200, {"Status": "complete-ish"}),  # unrecognized -> processing
        Reply(200, {"message": "no status"}),  # missing -> processing
        Reply(503, {"error": "busy"}),  # request error -> processing
        Reply(200, b"<html>oops</html>"),  # malformed body -> processing
        Reply(200, ["not", "an", "object"]),
        Reply(200, {"Status": "processing"}, hang=True),  # timeout -> processing
        Reply(200, {"Status": "PROCESSING"}),
        Reply(200, {"Status": "Complete", "Payload": {"ok": True}}),
    ]
    results = orch.drive()
    assert [r.action for r in results] == [Action.RESCHEDULED] * 8 + [Action.SUCCEEDED]
    assert [r.attempt for r in results] == list(range(1, 10))
    events = orch.events_of(job_id)
    processing = [e for e in events if e["status"] == "Processing"]
    assert [e["attempt"] for e in processing] == list(range(1, 9))
    assert [e["reason"] for e in processing][3:7] == [
        "polling request error: HTTP 503",
        "polling request error: the answer is not JSON",
        "polling request error: the answer is not a JSON object",
        f"polling request error: no complete answer within the whole-call timeout of {HANG_TIMEOUT_S:g} s",
    ]
    assert _job(orch, job_id).state == JobState.SUCCEEDED


def test_polling_connection_refused_is_processing(orch: Orch) -> None:
    config = orch.docsai_config(pollingUrl="http://127.0.0.1:9/poll", jobTrackingConfig={"maxPollingAttempts": 2})
    job_id = _start(orch, config)
    results = orch.drive()
    assert [r.action for r in results] == [Action.RESCHEDULED, Action.FAILED]
    job = _job(orch, job_id)
    assert job.reason == (
        "polling stopped: 2 attempts reached maxPollingAttempts 2 "
        "(last: polling request error: the connection was refused)"
    )


def test_never_completing_run_stops_at_max_polling_attempts(orch: Orch) -> None:
    job_id = _start(orch, orch.docsai_config(jobTrackingConfig={"maxPollingAttempts": 3}))
    orch.docsai.poll_script["1001"] = [Reply(200, {"Status": "processing"})]
    results = orch.drive()
    assert [r.action for r in results] == [Action.RESCHEDULED, Action.RESCHEDULED, Action.FAILED]
    assert len(orch.docsai.polls()) == 3
    job = _job(orch, job_id)
    assert job.state == JobState.FAILED
    assert job.reason == "polling stopped: 3 attempts reached maxPollingAttempts 3"
    assert [e["status"] for e in orch.events_of(job_id)] == [
        "Queued",
        "Started",
        "Processing",
        "Processing",
        "Failed",
    ]
    assert orch.poll_messages() == []


def test_never_completing_run_stops_at_max_duration(orch: Orch) -> None:
    job_id = _start(orch, orch.docsai_config(jobTrackingConfig={"maxPollDurationMs": 60_000}))
    orch.docsai.poll_script["1001"] = [Reply(200, {"Status": "processing"})]
    assert handle_poll_message(PollMessage(job_id, 1).to_text(), orch.deps).action == Action.RESCHEDULED
    orch.poll_messages()
    orch.clock.advance(seconds=61)
    result = handle_poll_message(PollMessage(job_id, 2).to_text(), orch.deps)
    assert result.action == Action.FAILED
    assert result.reason is not None
    assert result.reason.startswith("polling stopped: job age ")
    assert "exceeds maxDurationMs 60000" in result.reason


@pytest.mark.parametrize(
    ("kind", "answer", "reason"),
    [
        ("DOCSAI", {"Status": "failed", "message": "unreadable scan"}, "DOCSAI reported failed: unreadable scan"),
        ("DOCSAI", {"Status": "FAILED"}, "DOCSAI reported failed"),
        ("DBRICKS", {"overall_status": "FAILED", "error": "agent crashed"}, "DBRICKS reported FAILED: agent crashed"),
        ("DBRICKS", {"overall_status": "CANCELLED"}, "DBRICKS reported CANCELLED"),
    ],
)
def test_extractor_failure_fails_the_job(orch: Orch, kind: str, answer: dict[str, Any], reason: str) -> None:
    job_id = _start(orch, orch.docsai_config() if kind == "DOCSAI" else orch.dbricks_config())
    run = "1001" if kind == "DOCSAI" else "run-1001"
    server = orch.docsai if kind == "DOCSAI" else orch.dbricks
    server.poll_script[run] = [Reply(200, answer)]
    [result] = orch.drive()
    assert result.action == Action.FAILED
    assert result.reason == reason
    events = orch.events_of(job_id)
    assert events[-1]["status"] == "Failed"
    assert events[-1]["reason"] == reason


def test_dbricks_status_mapping(orch: Orch) -> None:
    job_id = _start(orch, orch.dbricks_config())
    orch.dbricks.poll_script["run-1001"] = [
        Reply(200, {"overall_status": "ENQUEUED"}),
        Reply(200, {"overall_status": "processing"}),
        Reply(200, {"overall_status": "WARMING_UP"}),
        Reply(200, {"id": "run-1001"}),
        Reply(200, {"overall_status": "COMPLETED", "tasks": []}),
    ]
    results = orch.drive()
    assert [r.action for r in results] == [Action.RESCHEDULED] * 4 + [Action.SUCCEEDED]
    events = orch.events_of(job_id)
    assert events[-1]["eventType"] == "ExtractedResult"
    assert events[-1]["resultUrls"] == []
    assert orch.palantir.uploads() == []


# ---------------------------------------------------------------------------------------------------------------
# Duplicates, early messages, crashes


def test_duplicated_message_never_doubles_the_chain(orch: Orch) -> None:
    job_id = _start(orch)
    orch.docsai.poll_script["1001"] = [Reply(200, {"Status": "processing"})]
    first = handle_poll_message(PollMessage(job_id, 1).to_text(), orch.deps)
    again = handle_poll_message(PollMessage(job_id, 1).to_text(), orch.deps)  # the same message, redelivered
    assert first.action == Action.RESCHEDULED
    assert again.action == Action.DROPPED
    assert again.reason == "job is Polling, expecting attempt 2"
    assert len(orch.docsai.polls()) == 1
    messages = [orjson.loads(m.content) for m in orch.poll_messages()]
    # The one enqueued by the submission (attempt 1) and the one for attempt 2: never two for attempt 2.
    assert sorted(m["attempt"] for m in messages) == [1, 2]
    assert _job(orch, job_id).attempt == 2


def test_early_message_is_re_enqueued_with_the_remaining_delay(orch: Orch) -> None:
    job_id = _start(orch, orch.docsai_config(jobTrackingConfig={"pollIntervalMs": 30_000}))
    result = handle_poll_message(PollMessage(job_id, 1).to_text(), orch.deps)  # e.g. a copy delivered early
    assert result.action == Action.EARLY
    assert result.next_delay_ms is not None
    assert 28_000 < result.next_delay_ms <= 30_000
    assert orch.docsai.polls() == []
    q = orch.queue(orch.settings.poll_queue)
    assert q.get_queue_properties().approximate_message_count == 2  # the scheduled one and the re-enqueued copy
    assert list(q.peek_messages()) == []  # both invisible until the job is due
    assert _job(orch, job_id).attempt == 1


def test_crash_mid_poll_lets_the_redelivered_message_poll_again_after_the_lease(orch: Orch) -> None:
    job_id = _start(orch)
    orch.docsai.poll_script["1001"] = [Reply(200, {"Status": "complete", "Payload": {"n": 1}})]
    claimed = claim_attempt(PollMessage(job_id, 1), orch.deps)  # a worker claims attempt 1 ... and dies
    assert not isinstance(claimed, type(None))
    assert _job(orch, job_id).lease_id is not None
    orch.poll_messages()
    busy = handle_poll_message(PollMessage(job_id, 1).to_text(), orch.deps)  # the queue redelivers
    assert busy.action == Action.BUSY
    assert busy.next_delay_ms is not None
    assert busy.next_delay_ms > 0
    assert orch.docsai.polls() == []
    orch.clock.advance(seconds=orch.settings.poll_lease_s + 1)
    done = handle_poll_message(PollMessage(job_id, 1).to_text(), orch.deps)
    assert done.action == Action.SUCCEEDED
    assert len(orch.docsai.polls()) == 1
    # The re-enqueued copy (from the busy answer) arrives later and is dropped.
    late = handle_poll_message(PollMessage(job_id, 1).to_text(), orch.deps)
    assert late.action == Action.DROPPED
    assert [e["status"] for e in orch.events_of(job_id)].count("Succeeded") == 2  # status + extracted-result


def test_a_worker_that_lost_its_lease_changes_nothing(orch: Orch) -> None:
    from shared.orchestration.outcomes import PollOutcome
    from shared.orchestration.poll import complete_attempt

    job_id = _start(orch)
    orch.docsai.poll_script["1001"] = [Reply(200, {"Status": "processing"})]
    slow = claim_attempt(PollMessage(job_id, 1), orch.deps)
    assert not isinstance(slow, type(None))
    orch.clock.advance(seconds=orch.settings.poll_lease_s + 1)
    fast = handle_poll_message(PollMessage(job_id, 1).to_text(), orch.deps)  # takes over attempt 1
    assert fast.action == Action.RESCHEDULED
    late = complete_attempt(slow, PollOutcome.processing(), orch.deps)  # type: ignore[arg-type]
    assert late.action == Action.DROPPED
    assert _job(orch, job_id).attempt == 2
    assert [e["status"] for e in orch.events_of(job_id)].count("Processing") == 1


def test_malformed_and_unknown_messages_are_dropped(orch: Orch) -> None:
    assert handle_poll_message(b"nonsense", orch.deps).action == Action.DROPPED
    assert handle_poll_message(b'{"jobId": "x"}', orch.deps).action == Action.DROPPED
    assert handle_poll_message(PollMessage("no-such-job", 1).to_text(), orch.deps).reason == "no such job"


# ---------------------------------------------------------------------------------------------------------------
# Result handling


def _complete_with(orch: Orch, payload: Any, **settings: Any) -> tuple[str, Any]:
    if settings:
        orch.reconfigure(**settings)
    job_id = _start(orch)
    orch.docsai.poll_script[_job(orch, job_id).run_id] = [Reply(200, {"Status": "complete", "Payload": payload})]
    results = orch.drive()
    return job_id, results[-1]


def _stored(orch: Orch, job_id: str) -> bytes:
    job = _job(orch, job_id)
    name = f"{job.client_application_id}/{job.file_id}/{job_id}/result.json"
    return orch.blobs.get_blob_client(orch.settings.results_container, name).download_blob().readall()


def test_data_url_results_are_decoded(orch: Orch) -> None:
    raw = b'{"text": "h\xc3\xa9llo"}'
    job_id, last = _complete_with(orch, "data:application/json;base64," + base64.b64encode(raw).decode())
    assert last.action == Action.SUCCEEDED
    assert _stored(orch, job_id) == raw
    job_id2, last2 = _complete_with(orch, "data:,plain%20text%21")
    assert last2.action == Action.SUCCEEDED
    assert _stored(orch, job_id2) == b"plain text!"


def test_malformed_data_url_fails(orch: Orch) -> None:
    _, last = _complete_with(orch, "data:application/json;base64,@@@not-base64@@@")
    assert last.action == Action.FAILED
    assert last.reason.startswith("result handling failed: the data URL's base64 does not decode")


def test_http_result_is_downloaded_following_same_host_redirects(orch: Orch) -> None:
    orch.files.files["/results/r1.json"] = b'{"downloaded": 1}'
    orch.files.files["/moved"] = Reply(302, b"", {"Location": "/results/r1.json"})
    job_id, last = _complete_with(orch, f"{orch.files.url}/moved")
    assert last.action == Action.SUCCEEDED
    assert _stored(orch, job_id) == b'{"downloaded": 1}'


def test_result_url_forbidden_hosts_are_refused(orch: Orch) -> None:
    # Not in the allow list (localhost is not 127.0.0.1).
    _, last = _complete_with(orch, f"http://localhost:{orch.files.port}/x")
    assert last.action == Action.FAILED
    assert last.reason == (
        f"result handling failed: result host localhost:{orch.files.port} is not in RESULT_DOWNLOAD_ALLOWED_HOSTS; "
        "refused"
    )
    # A redirect to another host.
    orch.files.files["/hop"] = Reply(302, b"", {"Location": f"http://localhost:{orch.files.port}/x"})
    _, last = _complete_with(orch, f"{orch.files.url}/hop")
    assert last.reason == (
        f"result handling failed: result URL redirected to another origin (http://localhost:{orch.files.port}); "
        "refused (a redirect must keep the scheme, host and port)"
    )


def test_loopback_and_http_are_refused_unless_allowed(orch: Orch) -> None:
    orch.files.files["/r.json"] = b"{}"
    # One outbound policy for every call: with loopback off the extractor itself is out of reach, so the download
    # is asked for directly.
    with pytest.raises(ResultError) as info:
        download_result(f"{orch.files.url}/r.json", replace(orch.settings, outbound_allow_loopback=False))
    assert info.value.permanent
    assert info.value.reason == (
        "result host 127.0.0.1 resolves to a loopback address; refused (OUTBOUND_ALLOW_LOOPBACK is off)"
    )
    assert orch.files.requests() == []
    with pytest.raises(ResultError) as info:
        download_result(f"{orch.files.url}/r.json", replace(orch.settings, outbound_allow_http=False))
    assert info.value.reason == "result URL is plain http; refused (OUTBOUND_ALLOW_HTTP is off)"
    assert orch.files.requests() == []


@pytest.mark.parametrize("chunked", [False, True])
def test_oversized_results_are_refused(orch: Orch, chunked: bool) -> None:
    orch.files.files["/big.json"] = Reply(200, b"x" * 5000, chunked=chunked)
    _, last = _complete_with(orch, f"{orch.files.url}/big.json", result_download_max_bytes=1000)
    assert last.action == Action.FAILED
    assert "over the 1000 byte limit" in last.reason
    _, last = _complete_with(orch, "data:;base64," + base64.b64encode(b"y" * 5000).decode())
    assert last.reason == "result handling failed: the data URL result is over 1000 bytes"


def test_transient_result_errors_are_retried_then_fail(orch: Orch) -> None:
    orch.files.files["/flaky.json"] = [Reply(500), Reply(503), Reply(200, b'{"finally": true}')]
    job_id, last = _complete_with(orch, f"{orch.files.url}/flaky.json")
    assert last.action == Action.SUCCEEDED
    assert _stored(orch, job_id) == b'{"finally": true}'
    reasons = [e["reason"] for e in orch.events_of(job_id) if e["status"] == "Processing"]
    assert reasons == [
        "result handling failed, will retry: result URL answered HTTP 500",
        "result handling failed, will retry: result URL answered HTTP 503",
    ]
    orch.files.files["/down.json"] = [Reply(500)]
    job_id, last = _complete_with(orch, f"{orch.files.url}/down.json")
    assert last.action == Action.FAILED
    assert last.reason == "result handling failed: result URL answered HTTP 500"
    assert len([r for r in orch.files.requests() if r.path == "/down.json"]) == 3  # RESULT_MAX_ATTEMPTS


def test_missing_payload_fails(orch: Orch) -> None:
    _, last = _complete_with(orch, None)
    assert last.reason == "result handling failed: the extractor reported complete without a Payload"


# ---------------------------------------------------------------------------------------------------------------
# DBRICKS results and Palantir


def _dbricks_completed(orch: Orch, urls: list[str]) -> tuple[str, list[Any]]:
    job_id = _start(orch, orch.dbricks_config(), app="app-db")
    job = _job(orch, job_id)
    prefix = f"app-db/{job.file_id}/{job_id}"
    orch.blobs.get_container_client(orch.settings.results_container).upload_blob(f"{prefix}/out.json", b'{"r": 1}')
    orch.dbricks.poll_script[job.run_id] = [
        Reply(200, {"overall_status": "COMPLETED", "tasks": [{"result_url": u.format(prefix=prefix)} for u in urls]})
    ]
    return job_id, orch.drive()


def test_palantir_ingestion_failure_is_retried_then_fails(orch: Orch) -> None:
    orch.palantir.script = [Reply(500)] * 5 + [Reply(200)]  # one full retry round fails, the next succeeds
    job_id, results = _dbricks_completed(orch, ["/results/{prefix}/out.json"])
    assert [r.action for r in results] == [Action.RESCHEDULED, Action.SUCCEEDED]
    assert len(orch.palantir.uploads()) == 6
    path = f"app-db/{_job(orch, job_id).file_id}/{job_id}/out.json"
    reasons = [e["reason"] for e in orch.events_of(job_id) if e["status"] == "Processing"]
    assert reasons == [f"result handling failed, will retry: Palantir ingestion of {path} failed 5 times (HTTP 500)"]
    assert [u.query["filePath"] for u in orch.palantir.uploads()] == [[path]] * 6


def test_palantir_refusal_fails_the_job(orch: Orch) -> None:
    orch.palantir.script = [Reply(403, {"errorCode": "PERMISSION_DENIED"})]
    job_id, results = _dbricks_completed(orch, ["/results/{prefix}/out.json"])
    assert results[-1].action == Action.FAILED
    assert results[-1].reason.endswith("/out.json refused: HTTP 403")
    assert _job(orch, job_id).state == JobState.FAILED


def test_dbricks_result_outside_the_output_path_is_refused(orch: Orch) -> None:
    _, results = _dbricks_completed(orch, ["/results/other-app/f/j/out.json"])
    assert results[-1].action == Action.FAILED
    assert "lies outside the job's output path" in results[-1].reason
    assert orch.palantir.uploads() == []
    _, results = _dbricks_completed(orch, ["/elsewhere/{prefix}/out.json"])
    assert "does not name a blob in container" in results[-1].reason


def test_missing_result_blob_is_retried_then_fails(orch: Orch) -> None:
    _, results = _dbricks_completed(orch, ["/results/{prefix}/never-written.json"])
    assert [r.action for r in results] == [Action.RESCHEDULED, Action.RESCHEDULED, Action.FAILED]
    assert results[-1].reason.endswith("never-written.json does not exist (yet)")
