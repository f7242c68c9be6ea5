"""The sweeper (timer): what the handlers could not finish on their own.

It reads only the ``active`` index partition (jobs not terminal, or with unpublished events) and, per job, reads the
job with its outbox (one request), then:

- publishes events left in the outbox (a publishing failure earlier; events claimed by a worker that holds the
  job's lease are that worker's to publish until the lease runs out);
- drops the index entry of a terminal job with an empty outbox (and, after a grace period, of a job that was never
  created);
- fails a job past its deadline (created + maxDurationMs, plus ``SWEEPER_SLACK_SECONDS``) that no worker holds;
- re-drives a ``Queued`` job idle for longer than the slack (its submitting worker died before ``Submitting``);
- fails a ``Submitting`` job whose lease ran out ("submission outcome unknown", see ``submit``);
- re-enqueues the poll message of a ``Polling`` job whose next poll time is long past (more than twice its last
  delay plus the slack): the message was lost (or went to the poison queue). The message is for the attempt the job
  expects, so even if the original turns up, only one of them can claim that attempt.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from shared.orchestration.deps import Deps
from shared.orchestration.jobs import Change, Job, JobState
from shared.orchestration.outbox import JobHandle
from shared.orchestration.scheduling import enqueue_poll
from shared.orchestration.submit import advance_job, fail_job

log = logging.getLogger(__name__)


@dataclass
class SweepReport:
    examined: int = 0
    published: int = 0
    rescheduled: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def sweep(deps: Deps) -> SweepReport:
    report = SweepReport()
    for entry in deps.store.active_index():
        report.examined += 1
        try:
            _sweep_one(entry.job_id, entry.created_at, deps, report)
        except Exception as exc:  # one job's trouble must not stop the sweep
            log.exception("sweeper: job %s", entry.job_id)
            report.errors.append(f"{entry.job_id}: {type(exc).__name__}")
    return report


def _sweep_one(job_id: str, indexed_at: datetime | None, deps: Deps, report: SweepReport) -> None:
    s = deps.settings
    now = deps.now()
    slack = timedelta(seconds=s.sweeper_slack_s)
    handle = JobHandle.of(deps, job_id)
    job = handle.load()
    if job is None:
        if indexed_at is None or now - indexed_at > slack:
            deps.store.remove_from_index(job_id)
            report.removed.append(job_id)
        return
    needs_attention = handle.settle()
    report.published += handle.published
    job = handle.job or job
    if job.terminal:
        if not needs_attention:
            report.removed.append(job_id)
        return
    if job.lease_held(now):
        return
    if job.deadline is not None and now > job.deadline + slack:
        reason = f"deadline passed: the job is older than its maxDurationMs (deadline {job.deadline.isoformat()})"
        failed = fail_job(job_id, reason, deps, require_lease_expired=True, handle=handle)
        if failed is not None and failed.state == JobState.FAILED:
            report.failed.append(job_id)
        return
    if job.state == JobState.QUEUED and now - job.updated_at > slack:
        advance_job(job_id, deps, handle=handle)
        report.resumed.append(job_id)
    elif job.state == JobState.SUBMITTING:
        after = advance_job(job_id, deps, handle=handle)
        if after is not None and after.state == JobState.FAILED:
            report.failed.append(job_id)
    elif (
        job.state == JobState.POLLING
        and _poll_message_lost(job, now, slack)
        and reschedule_lost(job, deps, handle=handle)
    ):
        report.rescheduled.append(job_id)


def _poll_message_lost(job: Job, now: datetime, slack: timedelta) -> bool:
    if job.next_poll_at is None:
        return True
    return now - job.next_poll_at > timedelta(milliseconds=2 * job.last_delay_ms) + slack


def reschedule_lost(job: Job, deps: Deps, *, handle: JobHandle | None = None) -> bool:
    """Re-enqueue the poll message for the attempt the job expects, due now (ETag-guarded on that attempt)."""
    handle = handle or JobHandle.of(deps, job.job_id)

    def decide(current: Job) -> Change | None:
        if (
            current.state != JobState.POLLING
            or current.attempt != job.attempt
            or current.next_poll_at != job.next_poll_at
            or current.lease_held(deps.now())
        ):
            return None
        now = deps.now()
        return Change(replace(current, next_poll_at=now, reschedules=current.reschedules + 1, updated_at=now))

    stored, changed = handle.mutate(decide)
    handle.settle()
    if changed and stored is not None:
        enqueue_poll(deps.poll_queue, job.job_id, stored.attempt, 0, traceparent=stored.trace_parent)
        log.warning("sweeper: job %s: poll message for attempt %d was lost; re-enqueued", job.job_id, stored.attempt)
    return changed
