"""One poll message -> one poll attempt of one job.

A poll message says which attempt it is for (``{"jobId", "attempt"}``). ``handle_poll_message``:

1. drops it when the job is missing or terminal, is not polling, or expects another attempt (a duplicate or stale
   message can never start a second poll chain or count an attempt twice);
2. re-enqueues it with the remaining delay when it arrived before the job's next poll time (more than 1 s early);
3. re-enqueues it after the lease when another worker holds the job's poll lease (``POLL_LEASE_SECONDS``);
4. claims the attempt (ETag-guarded lease), polls with the job's ``ExtractorClient`` (``deps.extractors``);
5. on Succeeded has the client store its result (DBRICKS: ingest) and marks the job Succeeded (events Succeeded and
   ExtractedResult); on Failed marks it Failed; on Processing either stops (``attemptNumber >= maxPollingAttempts``
   or ``jobAgeMs > maxDurationMs``: Failed) or moves the job to the next attempt and enqueues its message with the
   backoff delay as visibility timeout (event Processing).

Every write is guarded by the job's ETag and the lease id, so a worker that lost its lease (it crashed, or ran past
the lease) changes nothing. A worker that dies mid-poll leaves the lease to run out; the queue redelivers the message
and the next worker polls that attempt again. A result that cannot be stored or ingested for a transient reason is
retried on the next attempts (at most ``RESULT_MAX_ATTEMPTS`` in a row), then the job fails with the reason.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import Final

from opentelemetry.trace import SpanKind

from shared.orchestration.backoff import delay_ms, resolve_tracking, stop_reason
from shared.orchestration.deps import Deps
from shared.orchestration.extractor_client import StoredResult
from shared.orchestration.jobs import Change, EventDraft, Job, JobState
from shared.orchestration.outbox import JobHandle
from shared.orchestration.outcomes import PollOutcome, PollStatus
from shared.orchestration.results import ResultError
from shared.orchestration.scheduling import PollMessage, PollMessageError, enqueue_poll
from shared.orchestration.status import EventType, JobStatus
from shared.tracing import fail, set_attributes

log = logging.getLogger(__name__)

EARLY_TOLERANCE_MS: Final = 1000


class Action:
    DROPPED: Final = "dropped"  # nothing to do: duplicate, stale, terminal, unknown job, malformed message
    EARLY: Final = "early"  # re-enqueued with the remaining delay
    BUSY: Final = "busy"  # another worker holds the lease: re-enqueued for when it runs out
    RESCHEDULED: Final = "rescheduled"  # polled, still processing: the next attempt is enqueued
    SUCCEEDED: Final = "succeeded"
    FAILED: Final = "failed"


@dataclass(frozen=True, slots=True)
class PollResult:
    action: str
    job_id: str | None = None
    attempt: int | None = None
    state: str | None = None
    reason: str | None = None
    next_delay_ms: int | None = None


def handle_poll_message(body: bytes | str, deps: Deps) -> PollResult:
    """Handle one ``poll-jobs`` message. Raises only on infrastructure errors (the queue then redelivers)."""
    try:
        msg = PollMessage.parse(body)
    except PollMessageError as exc:
        log.warning("dropping a malformed poll message: %s", exc)
        return PollResult(Action.DROPPED, reason=str(exc))
    handle = JobHandle.of(deps, msg.job_id)
    traceparent = msg.traceparent
    if traceparent is None and deps.tracing.enabled:
        # An older message (or one sent with tracing off): the job row may hold the trace. The claim below writes
        # through this read, so it costs no extra storage transaction.
        job = handle.load()
        traceparent = job.trace_parent if job is not None else None
    with deps.tracing.span(
        "loom.poll",
        job_id=msg.job_id,
        traceparent=traceparent,
        kind=SpanKind.CONSUMER,
        attributes={"loom.attempt": msg.attempt},
    ) as span:
        claim = claim_attempt(msg, deps, handle=handle)
        if isinstance(claim, PollResult):
            result = claim
        else:
            span.set_attribute("loom.extractor.type", str(claim.extractor_type))
            span.set_attribute("loom.client_application.id", claim.client_application_id)
            result = complete_attempt(claim, poll_once(claim, deps), deps, handle=handle)
        set_attributes(
            span,
            {"loom.outcome": result.action, "loom.job.state": result.state, "loom.next_delay_ms": result.next_delay_ms},
        )
        return result


def claim_attempt(msg: PollMessage, deps: Deps, *, handle: JobHandle | None = None) -> Job | PollResult:
    """Take the job's poll lease for ``msg.attempt``; a ``PollResult`` says why not (and re-enqueues if due).

    One read (the job and its outbox) and one write (the lease, with LOOM's Processing event, published at once)."""
    handle = handle or JobHandle.of(deps, msg.job_id)
    lease = uuid.uuid4().hex
    seen: list[str] = []

    def decide(job: Job) -> Change | None:
        now = deps.now()
        seen[:] = []
        if job.terminal or job.state != JobState.POLLING or job.attempt != msg.attempt:
            seen.append(Action.DROPPED)
            return None
        if job.next_poll_at is not None and _ms(job.next_poll_at - now) > EARLY_TOLERANCE_MS:
            seen.append(Action.EARLY)
            return None
        if job.lease_held(now):
            seen.append(Action.BUSY)
            return None
        until = now + timedelta(seconds=deps.settings.poll_lease_s)
        # A job that is not submitted (LOOM) does its work in its first attempt: from here the file is being processed.
        client = deps.extractor(job.extractor_type)
        starts_here = client is not None and not client.submits and job.attempt == 1
        events = (EventDraft(JobStatus.PROCESSING, attempt=1),) if starts_here else ()
        return Change(replace(job, lease_id=lease, lease_until=until, updated_at=now), events)

    job, changed = handle.mutate(decide)
    if job is None:
        return PollResult(Action.DROPPED, msg.job_id, msg.attempt, reason="no such job")
    if changed:
        return job
    now = deps.now()
    action = seen[0] if seen else Action.DROPPED
    if action == Action.EARLY:
        assert job.next_poll_at is not None
        remaining = _ms(job.next_poll_at - now)
        enqueue_poll(deps.poll_queue, job.job_id, msg.attempt, remaining, traceparent=job.trace_parent)
        return PollResult(Action.EARLY, job.job_id, msg.attempt, str(job.state), next_delay_ms=int(remaining))
    if action == Action.BUSY:
        assert job.lease_until is not None
        remaining = _ms(job.lease_until - now)
        enqueue_poll(deps.poll_queue, job.job_id, msg.attempt, remaining, traceparent=job.trace_parent)
        return PollResult(Action.BUSY, job.job_id, msg.attempt, str(job.state), next_delay_ms=int(remaining))
    handle.settle()  # finish publishing if an earlier run could not (and unindex a finished job)
    reason = f"job is {job.state}, expecting attempt {job.attempt}"
    return PollResult(Action.DROPPED, job.job_id, msg.attempt, str(job.state), reason=reason)


def poll_once(job: Job, deps: Deps) -> PollOutcome | ResultError:
    """Poll the job once with its extractor kind's client."""
    client = deps.extractor(job.extractor_type)
    if client is None:
        return PollOutcome.failed(f"no extractor client for extractor type {str(job.extractor_type)!r}")
    try:
        config = job.config()
    except ValueError as exc:
        return PollOutcome.failed(f"the job's extractor configuration is unusable: {exc}")
    try:
        outcome = client.poll(job, config)
    except ResultError as exc:
        return exc
    except Exception as exc:  # a client bug or an unexpected answer: count the attempt, keep polling
        log.exception("job %s: %s poll handler raised", job.job_id, client.kind)
        return PollOutcome.processing(f"poll handler error: {type(exc).__name__}")
    if not isinstance(outcome, PollOutcome):
        return PollOutcome.processing(f"poll handler returned {type(outcome).__name__}, not a PollOutcome")
    return outcome


def _store_result_spanned(job: Job, outcome: PollOutcome, deps: Deps) -> StoredResult:
    """``_store_result`` in a ``loom.result`` span: sizes and the outcome, never the result or its URLs."""
    with deps.tracing.span(
        "loom.result",
        job_id=job.job_id,
        traceparent=job.trace_parent,
        attributes={
            "loom.extractor.type": str(job.extractor_type),
            "loom.result.size_bytes": len(outcome.result) if outcome.result is not None else None,
            "loom.result.url_count": len(outcome.result_urls),
        },
    ) as span:
        try:
            stored = _store_result(job, outcome, deps)
        except ResultError as exc:
            span.set_attribute("loom.outcome", "failed" if exc.permanent else "retry")
            fail(span, "result_error")
            raise
        span.set_attribute("loom.outcome", "stored")
        return stored


def complete_attempt(
    job: Job, outcome: PollOutcome | ResultError, deps: Deps, *, handle: JobHandle | None = None
) -> PollResult:
    """Apply one attempt's outcome to the job (holding the lease taken by ``claim_attempt``).

    ``handle``: the one ``claim_attempt`` wrote through (it holds the claimed job and its ETag, so the outcome is
    written without reading the job again); without it the job is read first."""
    h = handle if handle is not None and handle.job_id == job.job_id else JobHandle.of(deps, job.job_id)
    if isinstance(outcome, PollOutcome) and outcome.status == PollStatus.SUCCEEDED:
        try:
            stored = _store_result_spanned(job, outcome, deps)
        except ResultError as exc:
            outcome_or_error: PollOutcome | ResultError = exc
        else:
            return _finish(job, deps, h, succeeded=stored)
    else:
        outcome_or_error = outcome
    if isinstance(outcome_or_error, ResultError):
        return _result_failure(job, outcome_or_error, deps, h)
    if outcome_or_error.status == PollStatus.FAILED:
        return _finish(job, deps, h, failed=outcome_or_error.reason or "the extractor reported failure")
    return _reschedule(job, outcome_or_error.reason or None, deps, h, result_failures=0)


def _store_result(job: Job, outcome: PollOutcome, deps: Deps) -> StoredResult:
    client = deps.extractor(job.extractor_type)
    if client is None:  # poll_once found it; a job's kind does not change
        raise ResultError(f"no extractor client for extractor type {str(job.extractor_type)!r}", permanent=True)
    return client.result(job, outcome)


def _guarded(job: Job, handle: JobHandle, build: Change) -> tuple[Job | None, bool]:
    """Write ``build`` only if the job is still polling this attempt under our lease."""

    def decide(current: Job) -> Change | None:
        if current.state != JobState.POLLING or current.lease_id != job.lease_id or current.attempt != job.attempt:
            return None
        return Change(replace(build.job, etag=current.etag, sequence=current.sequence), build.events)

    return handle.mutate(decide)


def _finish(
    job: Job,
    deps: Deps,
    handle: JobHandle,
    *,
    failed: str | None = None,
    succeeded: StoredResult | None = None,
) -> PollResult:
    now = deps.now()
    base = replace(job, lease_id=None, lease_until=None, updated_at=now)
    if succeeded is not None:
        location, urls = succeeded.location, succeeded.urls
        change = Change(
            replace(base, state=JobState.SUCCEEDED, result_location=location, result_urls=urls, reason=None),
            (
                EventDraft(JobStatus.SUCCEEDED, attempt=job.attempt),
                EventDraft(
                    JobStatus.SUCCEEDED,
                    event_type=EventType.RESULT,
                    attempt=job.attempt,
                    result_location=location,
                    result_urls=urls,
                ),
            ),
        )
        action = Action.SUCCEEDED
    else:
        change = Change(
            replace(base, state=JobState.FAILED, reason=failed),
            (EventDraft(JobStatus.FAILED, reason=failed, attempt=job.attempt),),
        )
        action = Action.FAILED
    stored, changed = _guarded(job, handle, change)
    handle.settle()  # publish, clear the outbox, unindex the finished job
    if not changed:
        return _lost(job, stored)
    return PollResult(action, job.job_id, job.attempt, str(stored.state) if stored else None, reason=failed)


def _result_failure(job: Job, error: ResultError, deps: Deps, handle: JobHandle) -> PollResult:
    failures = job.result_failures + 1
    if error.permanent or failures >= deps.settings.result_max_attempts:
        return _finish(job, deps, handle, failed=f"result handling failed: {error.reason}")
    return _reschedule(
        job, f"result handling failed, will retry: {error.reason}", deps, handle, result_failures=failures
    )


def _reschedule(job: Job, reason: str | None, deps: Deps, handle: JobHandle, *, result_failures: int) -> PollResult:
    now = deps.now()
    tracking = resolve_tracking(job.config().job_tracking_config, deps.settings)
    stop = stop_reason(job.attempt, job.age_ms(now), tracking)
    if stop is not None:
        return _finish(job, deps, handle, failed=stop + (f" (last: {reason})" if reason else ""))
    next_attempt = job.attempt + 1
    delay = delay_ms(next_attempt, tracking)
    change = Change(
        replace(
            job,
            attempt=next_attempt,
            next_poll_at=now + timedelta(milliseconds=delay),
            last_delay_ms=delay,
            lease_id=None,
            lease_until=None,
            result_failures=result_failures,
            updated_at=now,
        ),
        (EventDraft(JobStatus.PROCESSING, reason=reason, attempt=job.attempt),),
    )
    stored, changed = _guarded(job, handle, change)
    handle.settle()  # published and cleared before the next attempt can start
    if changed:
        enqueue_poll(deps.poll_queue, job.job_id, next_attempt, delay, traceparent=job.trace_parent)
    if not changed:
        return _lost(job, stored)
    return PollResult(Action.RESCHEDULED, job.job_id, job.attempt, str(JobState.POLLING), reason, next_delay_ms=delay)


def _lost(job: Job, current: Job | None) -> PollResult:
    state = str(current.state) if current else None
    return PollResult(
        Action.DROPPED, job.job_id, job.attempt, state, reason="the job changed meanwhile (canceled or lease lost)"
    )


def _ms(delta: timedelta) -> float:
    return delta.total_seconds() * 1000
