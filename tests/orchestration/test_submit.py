"""Submission: retries, failures, malformed answers, redelivery and duplicates, crashes, poison parking, batches."""

from __future__ import annotations

import base64
import threading
from typing import Any

import orjson
import pytest

from shared.orchestration.events import parse_accepted_event
from shared.orchestration.extractor_type import ExtractorType
from shared.orchestration.jobs import JobState
from shared.orchestration.submit import (
    UNKNOWN_OUTCOME,
    Outcome,
    RetryableBatchError,
    advance_job,
    begin_submission,
    handle_accepted_events,
    parked_events,
    replay_parked,
    run_accepted_batch,
)
from shared.orchestration.sweeper import sweep
from tests.orchestration.conftest import Orch, Reply
from tests.timeouts import HANG_TIMEOUT_S


def _submit(orch: Orch, *events: dict[str, Any]) -> list[Any]:
    return handle_accepted_events([orjson.dumps(e) for e in events], orch.deps).outcomes


def _statuses(orch: Orch, job_id: str) -> list[str]:
    return [e["status"] for e in orch.events_of(job_id)]


def test_four_failures_then_success_is_submitted(orch: Orch) -> None:
    orch.register("app-1", orch.docsai_config())
    orch.docsai.submit_script = [Reply(503), Reply(500), Reply(502, b"<html>bad gateway"), Reply(429)]
    [outcome] = _submit(orch, orch.event("app-1"))
    assert len(orch.docsai.posts()) == 5
    assert outcome.state == JobState.POLLING
    job = orch.deps.store.get(outcome.job_id)
    assert job is not None
    assert job.run_id == "1001"
    assert _statuses(orch, outcome.job_id) == ["Queued", "Started"]


def test_five_failures_fail_the_job(orch: Orch) -> None:
    orch.register("app-1", orch.docsai_config())
    orch.docsai.submit_script = [Reply(500)] * 4 + [Reply(404)]
    [outcome] = _submit(orch, orch.event("app-1"))
    assert len(orch.docsai.posts()) == 5
    assert outcome.state == JobState.FAILED
    assert outcome.reason == "submission failed after 5 attempts (last: HTTP 404)"
    events = orch.events_of(outcome.job_id)
    assert [e["status"] for e in events] == ["Queued", "Failed"]
    assert events[1]["reason"] == outcome.reason
    assert orch.poll_messages() == []
    assert orch.deps.store.active_index() == []


def test_timeouts_are_retried(make_orch: Any) -> None:
    orch: Orch = make_orch(EXTRACTOR_HTTP_TIMEOUT_SECONDS=str(HANG_TIMEOUT_S))
    orch.register("app-1", orch.docsai_config())
    orch.docsai.submit_script = [Reply(200, {"ExtractedEntityId": 1}, hang=True)] * 2
    [outcome] = _submit(orch, orch.event("app-1"))
    assert len(orch.docsai.posts()) == 3
    assert outcome.state == JobState.POLLING
    assert orch.deps.store.get(outcome.job_id).run_id == "1001"  # type: ignore[union-attr]


def test_timeouts_every_time_fail_the_job(make_orch: Any) -> None:
    orch: Orch = make_orch(EXTRACTOR_HTTP_TIMEOUT_SECONDS=str(HANG_TIMEOUT_S), SUBMIT_MAX_ATTEMPTS="3")
    orch.register("app-1", orch.docsai_config())
    orch.docsai.submit_script = [Reply(200, {}, hang=True)] * 3
    [outcome] = _submit(orch, orch.event("app-1"))
    assert len(orch.docsai.posts()) == 3
    assert outcome.state == JobState.FAILED
    assert outcome.reason == (
        "submission failed after 3 attempts (last: transport error: no complete answer within the whole-call "
        f"timeout of {HANG_TIMEOUT_S:g} s)"
    )


@pytest.mark.parametrize(
    ("kind", "answer", "missing"),
    [
        ("DOCSAI", b"<html>ok</html>", "ExtractedEntityId"),
        ("DOCSAI", {"status": "accepted", "message": "no id"}, "ExtractedEntityId"),
        ("DOCSAI", {"ExtractedEntityId": None}, "ExtractedEntityId"),
        ("DBRICKS", [1, 2], "id"),
        ("DBRICKS", {"id": "  ", "overall_status": "ENQUEUED"}, "id"),
    ],
)
def test_malformed_success_answer_fails_without_resubmitting(orch: Orch, kind: str, answer: Any, missing: str) -> None:
    config = orch.docsai_config() if kind == "DOCSAI" else orch.dbricks_config()
    server = orch.docsai if kind == "DOCSAI" else orch.dbricks
    orch.register("app-1", config)
    server.submit_script = [Reply(200, answer)]
    [outcome] = _submit(orch, orch.event("app-1"))
    assert len(server.posts()) == 1
    assert outcome.state == JobState.FAILED
    assert f"has no {missing} (run id)" in outcome.reason
    assert orch.poll_messages() == []


@pytest.mark.parametrize("agent", [None, "", "   "])
def test_dbricks_missing_or_blank_agent_fails_submission(orch: Orch, agent: str | None) -> None:
    config = orch.dbricks_config()
    if agent is None:
        del config["agent"]
    else:
        config["agent"] = agent
    orch.register("app-1", config)
    [outcome] = _submit(orch, orch.event("app-1"))
    assert orch.dbricks.posts() == []
    assert outcome.state == JobState.FAILED
    assert "agent is missing or blank" in outcome.reason
    assert _statuses(orch, outcome.job_id) == ["Queued", "Failed"]


def test_dbricks_without_azure_client_id_fails(make_orch: Any) -> None:
    orch: Orch = make_orch(AZURE_CLIENT_ID="")
    orch.register("app-1", orch.dbricks_config())
    [outcome] = _submit(orch, orch.event("app-1"))
    assert outcome.state == JobState.FAILED
    assert "AZURE_CLIENT_ID is not set" in outcome.reason
    assert orch.dbricks.posts() == []


def test_missing_token_setting_fails_and_never_leaks(make_orch: Any) -> None:
    orch: Orch = make_orch(DOCSAI_TOKEN="")
    orch.register("app-1", orch.docsai_config())
    [outcome] = _submit(orch, orch.event("app-1"))
    assert outcome.state == JobState.FAILED
    assert outcome.reason == "no bearer token for the extractor: the token setting DOCSAI_TOKEN is not set or blank"


def test_missing_polling_url_fails_after_submission(orch: Orch) -> None:
    config = orch.docsai_config()
    del config["pollingUrl"]
    orch.register("app-1", config)
    [outcome] = _submit(orch, orch.event("app-1"))
    assert len(orch.docsai.posts()) == 1
    assert outcome.state == JobState.FAILED
    assert "no pollingUrl" in outcome.reason
    assert _statuses(orch, outcome.job_id) == ["Queued", "Started", "Failed"]
    assert orch.poll_messages() == []


def test_no_usable_extractor_is_a_failed_job(orch: Orch) -> None:
    orch.registration.apps["app-none"] = {"clientApplicationId": "app-none", "features": []}
    orch.register("app-bad", {"extractorType": "OCRX", "extractionUrl": "ftp://x"}, how="extractors")
    none, bad = _submit(orch, orch.event("app-none"), orch.event("app-bad"))
    assert none.outcome == Outcome.CREATED
    assert none.state == JobState.FAILED
    assert none.reason == "client application app-none has no registered extractor"
    assert bad.state == JobState.FAILED
    assert bad.reason.startswith("the first registered extractor is invalid: extractorType:")
    assert "extractionUrl" in bad.reason
    for o in (none, bad):
        events = orch.events_of(o.job_id)
        assert [e["status"] for e in events] == ["Queued", "Failed"]
        assert events[1]["reason"] == o.reason
    assert orch.deps.store.active_index() == []


def test_registration_api_down_fails_the_job_after_retries(orch: Orch) -> None:
    orch.registration.failures = [Reply(500)] * 5
    [outcome] = _submit(orch, orch.event("app-1"))
    assert outcome.state == JobState.FAILED
    assert "failed 5 times (last: HTTP 500)" in outcome.reason


# ---------------------------------------------------------------------------------------------------------------
# Redelivery and duplicates


def test_same_event_twice_makes_one_job_and_one_submission(orch: Orch) -> None:
    orch.register("app-1", orch.docsai_config())
    event = orch.event("app-1")
    [first] = _submit(orch, event)
    [second] = _submit(orch, event)
    assert first.outcome == Outcome.CREATED
    assert second.outcome == Outcome.DUPLICATE
    assert first.job_id == second.job_id
    assert len(orch.docsai.posts()) == 1
    assert _statuses(orch, first.job_id) == ["Queued", "Started"]
    assert len(orch.poll_messages()) == 1


def test_same_batch_twice_and_duplicates_inside_a_batch(orch: Orch) -> None:
    orch.register("app-1", orch.docsai_config())
    a, b = orch.event("app-1"), orch.event("app-1")
    batch = [a, b, a, a, b]
    first = _submit(orch, *batch)
    second = _submit(orch, *batch)
    assert sorted(o.outcome for o in first) == ["created", "created", "duplicate", "duplicate", "duplicate"]
    assert {o.outcome for o in second} == {Outcome.DUPLICATE}
    assert len({o.job_id for o in first + second}) == 2
    assert len(orch.docsai.posts()) == 2
    assert len(orch.poll_messages()) == 2
    for job_id in {o.job_id for o in first}:
        assert _statuses(orch, job_id) == ["Queued", "Started"]


def test_same_file_without_event_id_maps_to_one_job(orch: Orch) -> None:
    orch.register("app-1", orch.docsai_config())
    event = orch.event("app-1", id=None)
    other_delivery = dict(event, fileName="renamed.pdf")
    first, second = _submit(orch, event, other_delivery)
    assert first.job_id == second.job_id == parse_accepted_event(orjson.dumps(event)).job_id()
    assert len(orch.docsai.posts()) == 1


def test_crash_between_submission_and_recording_is_detected_not_resubmitted(orch: Orch) -> None:
    orch.register("app-1", orch.docsai_config())
    event = orch.event("app-1")
    job_id = parse_accepted_event(orjson.dumps(event)).job_id()
    # A worker records the job, claims it (Submitting) and POSTs ... then dies before recording the run id.
    stored, created = orch.deps.store.create(*_queued_job(orch, event))
    assert created
    assert stored.state == JobState.QUEUED
    claimed = begin_submission(job_id, orch.deps)
    assert claimed is not None
    assert claimed.state == JobState.SUBMITTING
    submitted = orch.deps.extractors[ExtractorType.DOCSAI].submit(claimed, claimed.config())
    assert submitted.run_id == "1001"  # the extractor has the run; the worker is gone

    # Redelivery while the lease still runs: nothing is submitted, the job waits.
    [again] = _submit(orch, event)
    assert again.outcome == Outcome.DUPLICATE
    assert again.state == JobState.SUBMITTING
    assert len(orch.docsai.posts()) == 1
    # After the lease: the next redelivery (or the sweeper) marks it failed with the unknown outcome.
    orch.clock.advance(seconds=orch.settings.submit_lease_s + 1)
    [late] = _submit(orch, event)
    assert late.state == JobState.FAILED
    assert late.reason == UNKNOWN_OUTCOME
    assert len(orch.docsai.posts()) == 1
    assert _statuses(orch, job_id) == ["Queued", "Failed"]
    [last] = _submit(orch, event)
    assert last.state == JobState.FAILED
    assert len(orch.docsai.posts()) == 1


def test_sweeper_fails_a_job_stuck_submitting(orch: Orch) -> None:
    orch.register("app-1", orch.docsai_config())
    event = orch.event("app-1")
    job, _ = orch.deps.store.create(*_queued_job(orch, event))
    assert begin_submission(job.job_id, orch.deps) is not None
    assert sweep(orch.deps).failed == []  # lease still running
    orch.clock.advance(seconds=orch.settings.submit_lease_s + 1)
    report = sweep(orch.deps)
    assert report.failed == [job.job_id]
    assert orch.deps.store.get(job.job_id).reason == UNKNOWN_OUTCOME  # type: ignore[union-attr]
    assert orch.docsai.posts() == []


def test_sweeper_resumes_a_job_left_queued(orch: Orch) -> None:
    orch.register("app-1", orch.docsai_config())
    job, _ = orch.deps.store.create(*_queued_job(orch, orch.event("app-1")))
    assert sweep(orch.deps).resumed == []  # recent: its worker may still be on it
    orch.clock.advance(seconds=orch.settings.sweeper_slack_s + 1)
    report = sweep(orch.deps)
    assert report.resumed == [job.job_id]
    assert len(orch.docsai.posts()) == 1
    assert orch.deps.store.get(job.job_id).state == JobState.POLLING  # type: ignore[union-attr]
    assert advance_job(job.job_id, orch.deps).state == JobState.POLLING  # type: ignore[union-attr]
    assert len(orch.docsai.posts()) == 1


def _queued_job(orch: Orch, event: dict[str, Any]) -> tuple[Any, list[Any]]:
    """The job a worker records before submitting (what ``accept_event`` creates)."""
    from dataclasses import replace

    from shared.orchestration.jobs import EventDraft, Job
    from shared.orchestration.registration import validate_extractor
    from shared.orchestration.status import JobStatus

    parsed = parse_accepted_event(orjson.dumps(event))
    config = validate_extractor(orch.docsai_config())
    now = orch.clock()
    job = Job(
        job_id=parsed.job_id(),
        client_application_id=parsed.client_application_id,
        file_id=parsed.file_id,
        file_location_url=parsed.file_location_url,
        created_at=now,
        updated_at=now,
        document_hash=parsed.document_hash,
    )
    job = replace(job, extractor_type=config.extractor_type, extractor_config=config.to_json())
    return job, [EventDraft(JobStatus.QUEUED)]


# ---------------------------------------------------------------------------------------------------------------
# Batches: malformed events, CloudEvents, concurrency, infrastructure errors


def test_malformed_events_are_parked_while_the_rest_proceeds(orch: Orch) -> None:
    orch.register("app-1", orch.docsai_config())
    good1, good2 = orch.event("app-1"), orch.event("app-1")
    no_file = {"id": "evt-broken-1", "clientApplicationId": "app-1", "fileLocationUrl": good1["fileLocationUrl"]}
    bodies = [orjson.dumps(good1), b"{not json", orjson.dumps(no_file), orjson.dumps(good2), b"[1,2]"]
    outcomes = handle_accepted_events(bodies, orch.deps).outcomes
    assert [o.outcome for o in outcomes] == ["created", "parked", "parked", "created", "parked"]
    assert len(orch.docsai.posts()) == 2
    assert outcomes[2].parked_as is not None
    assert outcomes[2].parked_as.startswith("evt-broken-1-")
    assert "fileId: Field required" in outcomes[2].reason

    parked = dict(parked_events(orch))
    assert set(parked) == {o.parked_as for o in outcomes if o.outcome == "parked"}
    container = orch.blobs.get_container_client(orch.settings.poison_container)
    assert container.download_blob(outcomes[1].parked_as).readall() == b"{not json"
    assert parked[outcomes[1].parked_as].startswith("event body is not JSON")
    assert parked[outcomes[4].parked_as] == "event body is a JSON list, not an object"

    # An operator fixes one parked body and replays everything: the fixed one becomes a job and leaves the
    # container; the others stay parked with their reasons.
    fixed = dict(no_file, fileId="file-fixed")
    container.upload_blob(outcomes[2].parked_as, orjson.dumps(fixed), overwrite=True)
    replayed = {r.name: r for r in replay_parked(orch.deps)}
    assert replayed[outcomes[2].parked_as].outcome == "created"
    assert replayed[outcomes[2].parked_as].removed
    assert replayed[outcomes[1].parked_as].outcome == "parked"
    assert not replayed[outcomes[1].parked_as].removed
    assert len(orch.docsai.posts()) == 3
    assert set(dict(parked_events(orch))) == {outcomes[1].parked_as, outcomes[4].parked_as}


def test_cloudevents_envelope(orch: Orch) -> None:
    orch.register("app-1", orch.docsai_config())
    data = orch.event("app-1", id=None)
    envelope = {
        "specversion": "1.0",
        "id": "ce-0001",
        "source": "/accepted-files",
        "type": "com.example.file.accepted",
        "datacontenttype": "application/json",
        "data": data,
    }
    as_base64 = dict(envelope, data_base64=base64.b64encode(orjson.dumps(data)).decode())
    del as_base64["data"]
    first, second = _submit(orch, envelope, as_base64)  # concurrently: either may be the one that creates
    assert sorted([first.outcome, second.outcome]) == [Outcome.CREATED, Outcome.DUPLICATE]
    assert first.job_id == second.job_id
    assert first.job_id == parse_accepted_event(orjson.dumps({**data, "id": "ce-0001"})).job_id()
    assert orch.docsai.posts()[0].json()["jobId"] == first.job_id
    job = orch.deps.store.get(first.job_id)
    assert job is not None
    assert job.event_id == "ce-0001"


def test_one_slow_extractor_does_not_hold_up_the_batch(orch: Orch) -> None:
    """The slow extractor answers only after the fast one was called: sequential handling could never pass."""
    fast_called = threading.Event()
    orch.register("app-slow", orch.docsai_config())
    orch.register("app-fast", orch.dbricks_config())
    orch.docsai.submit_script = [Reply(200, {"ExtractedEntityId": 7}, wait_for=fast_called)]
    original = orch.dbricks.route

    def fast_route(seen: Any) -> Reply:
        fast_called.set()
        return original(seen)

    orch.dbricks.route = fast_route
    slow, fast = _submit(orch, orch.event("app-slow"), orch.event("app-fast"))
    assert slow.state == JobState.POLLING
    assert fast.state == JobState.POLLING
    assert orch.deps.store.get(slow.job_id).run_id == "7"  # type: ignore[union-attr]
    assert len(orch.docsai.posts()) == 1  # answered in time: the fast one ran meanwhile


def test_infrastructure_errors_retry_the_batch_then_park(orch: Orch) -> None:
    orch.register("app-1", orch.docsai_config())
    event = orch.event("app-1")
    orch.deps.store.table.delete_table()  # the jobs table is gone: every write fails
    with pytest.raises(RetryableBatchError, match="1 of 1 accepted-file events hit an infrastructure error"):
        run_accepted_batch([orjson.dumps(event)], orch.deps, retry_count=0, max_retry_count=5)
    assert parked_events(orch) == []
    result = run_accepted_batch([orjson.dumps(event)], orch.deps, retry_count=5, max_retry_count=5)
    [outcome] = result.outcomes
    assert outcome.outcome == Outcome.ERROR
    assert outcome.parked_as is not None
    [(name, reason)] = parked_events(orch)
    assert name == outcome.parked_as
    assert reason.startswith("could not be processed: ")
    # Storage is back: the operator replays; the event becomes its job.
    orch.deps.store.ensure()
    [replayed] = replay_parked(orch.deps)
    assert replayed.outcome == "created"
    assert replayed.removed
    assert len(orch.docsai.posts()) == 1
