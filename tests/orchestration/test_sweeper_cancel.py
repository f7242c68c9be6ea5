"""The sweeper (lost messages, deadlines, outbox re-publishing, index upkeep) and cancellation."""

from __future__ import annotations

from typing import Any

import orjson

from shared.orchestration.cancel import CancelMessageError, cancel_job, parse_cancel_message
from shared.orchestration.jobs import JobState
from shared.orchestration.poll import Action, handle_poll_message
from shared.orchestration.scheduling import PollMessage
from shared.orchestration.submit import handle_accepted_events
from shared.orchestration.sweeper import sweep
from tests.orchestration.conftest import Orch, Reply


def _start(orch: Orch, **tracking: Any) -> str:
    config = orch.docsai_config(jobTrackingConfig=tracking) if tracking else orch.docsai_config()
    orch.register("app-1", config)
    [outcome] = handle_accepted_events([orjson.dumps(orch.event("app-1"))], orch.deps).outcomes
    assert outcome.job_id is not None
    return outcome.job_id


def test_lost_poll_message_is_rescheduled_once(orch: Orch) -> None:
    job_id = _start(orch)
    orch.docsai.poll_script["1001"] = [
        Reply(200, {"Status": "processing"}),
        Reply(200, {"Status": "complete", "Payload": {}}),
    ]
    assert len(orch.poll_messages()) == 1  # ... and the message is lost (received and deleted, never handled)
    assert sweep(orch.deps).rescheduled == []  # not overdue yet
    orch.clock.advance(seconds=orch.settings.sweeper_slack_s + 1)
    report = sweep(orch.deps)
    assert report.rescheduled == [job_id]
    assert sweep(orch.deps).rescheduled == []  # due again from now: not re-enqueued twice
    messages = orch.poll_messages()
    assert [orjson.loads(m.content) for m in messages] == [{"jobId": job_id, "attempt": 1}]
    first = handle_poll_message(messages[0].content, orch.deps)
    assert first.action == Action.RESCHEDULED
    assert [r.action for r in orch.drive()] == [Action.SUCCEEDED]
    job = orch.deps.store.get(job_id)
    assert job is not None
    assert job.state == JobState.SUCCEEDED
    assert job.reschedules == 1


def test_rescheduled_and_original_message_cannot_both_count(orch: Orch) -> None:
    job_id = _start(orch)
    orch.docsai.poll_script["1001"] = [Reply(200, {"Status": "processing"})]
    orch.clock.advance(seconds=orch.settings.sweeper_slack_s + 1)
    assert sweep(orch.deps).rescheduled == [job_id]  # the original was only late, not lost
    messages = orch.poll_messages()
    assert [orjson.loads(m.content) for m in messages] == [{"jobId": job_id, "attempt": 1}] * 2
    results = [handle_poll_message(m.content, orch.deps) for m in messages]
    assert [r.action for r in results] == [Action.RESCHEDULED, Action.DROPPED]
    assert results[1].reason == "job is Polling, expecting attempt 2"
    assert len(orch.docsai.polls()) == 1
    assert [orjson.loads(m.content) for m in orch.poll_messages()] == [{"jobId": job_id, "attempt": 2}]


def test_jobs_past_their_deadline_are_failed(orch: Orch) -> None:
    job_id = _start(orch, maxPollDurationMs=60_000)
    orch.poll_messages()  # lost
    orch.clock.advance(seconds=60 + orch.settings.sweeper_slack_s + 1)
    report = sweep(orch.deps)
    assert report.failed == [job_id]
    job = orch.deps.store.get(job_id)
    assert job is not None
    assert job.state == JobState.FAILED
    assert job.reason is not None
    assert job.reason.startswith("deadline passed")
    assert orch.events_of(job_id)[-1]["status"] == "Failed"
    assert orch.deps.store.active_index() == []


def test_publishing_failure_then_republish_from_the_outbox(orch: Orch) -> None:
    status_queue = orch.queue(orch.settings.status_local_queue)
    status_queue.delete_queue()  # the status channel is down: every publish fails
    job_id = _start(orch)
    orch.docsai.poll_script["1001"] = [Reply(200, {"Status": "complete", "Payload": {"x": 1}})]
    assert [r.action for r in orch.drive()] == [Action.SUCCEEDED]
    job = orch.deps.store.get(job_id)
    assert job is not None
    assert job.state == JobState.SUCCEEDED  # state moved on; the events wait in the outbox
    pending = orch.deps.store.pending_events(job_id)
    assert [(e.status, e.sequence) for e in pending] == [
        ("Queued", 1),
        ("Started", 2),
        ("Succeeded", 3),
        ("Succeeded", 4),
    ]
    assert [i.job_id for i in orch.deps.store.active_index()] == [job_id]  # so the sweeper finds it

    status_queue.create_queue()  # the channel is back
    report = sweep(orch.deps)
    assert report.published == 4
    assert report.removed == [job_id]
    events = orch.events_of(job_id)
    assert [(e["eventType"], e["status"], e["sequence"]) for e in events] == [
        ("JobStatusChanged", "Queued", 1),
        ("JobStatusChanged", "Started", 2),
        ("JobStatusChanged", "Succeeded", 3),
        ("ExtractedResult", "Succeeded", 4),
    ]
    assert orch.deps.store.pending_events(job_id) == []
    assert orch.deps.store.active_index() == []
    assert sweep(orch.deps).examined == 0  # finished jobs are never scanned


def test_next_handler_run_republishes_pending_events(orch: Orch) -> None:
    status_queue = orch.queue(orch.settings.status_local_queue)
    status_queue.delete_queue()
    job_id = _start(orch)
    status_queue.create_queue()
    orch.docsai.poll_script["1001"] = [Reply(200, {"Status": "processing"})]
    handle_poll_message(PollMessage(job_id, 1).to_text(), orch.deps)
    assert [e["status"] for e in orch.events_of(job_id)] == ["Queued", "Started", "Processing"]


def test_orphan_index_entries_are_dropped_after_a_grace_period(orch: Orch) -> None:
    orch.deps.store.table.upsert_entity({"PartitionKey": "active", "RowKey": "ghost", "CreatedAt": orch.clock()})
    assert sweep(orch.deps).removed == []
    orch.clock.advance(seconds=orch.settings.sweeper_slack_s + 1)
    assert sweep(orch.deps).removed == ["ghost"]


# ---------------------------------------------------------------------------------------------------------------
# Cancellation


def test_cancel_a_polling_job(orch: Orch) -> None:
    job_id = _start(orch)
    result = cancel_job(job_id, orch.deps, "no longer needed")
    assert (result.found, result.changed, result.state) == (True, True, "Canceled")
    # The pending poll message is dropped: the job is never polled again.
    assert [r.action for r in orch.drive()] == [Action.DROPPED]
    assert orch.docsai.polls() == []
    events = orch.events_of(job_id)
    assert [e["status"] for e in events] == ["Queued", "Started", "Canceled"]
    assert events[-1]["reason"] == "no longer needed"
    again = cancel_job(job_id, orch.deps)
    assert (again.changed, again.state) == (False, "Canceled")
    assert cancel_job("no-such-job", orch.deps).found is False
    assert orch.deps.store.active_index() == []


def test_cancel_during_submission_wins_over_the_late_submission(orch: Orch) -> None:
    from shared.orchestration.extractor_type import ExtractorType
    from shared.orchestration.submit import begin_submission, record_submission
    from tests.orchestration.test_submit import _queued_job

    orch.register("app-1", orch.docsai_config())
    job, _ = orch.deps.store.create(*_queued_job(orch, orch.event("app-1")))
    claimed = begin_submission(job.job_id, orch.deps)
    assert claimed is not None
    assert claimed.lease_id is not None
    submitted = orch.deps.extractors[ExtractorType.DOCSAI].submit(claimed, claimed.config())
    assert cancel_job(job.job_id, orch.deps).changed
    after = record_submission(job.job_id, claimed.lease_id, submitted.run_id, orch.deps)
    assert after is not None
    assert after.state == JobState.CANCELED
    assert after.run_id is None
    assert orch.poll_messages() == []


def test_cancel_message_parsing() -> None:
    assert parse_cancel_message(b'{"jobId": "j-1", "reason": "dup upload"}') == ("j-1", "dup upload")
    assert parse_cancel_message(b"  j-2 \n") == ("j-2", None)
    for bad in (b"", b"{", b'{"reason": "x"}', b"two words"):
        try:
            parse_cancel_message(bad)
        except CancelMessageError:
            continue
        raise AssertionError(f"{bad!r} was accepted")
