"""Accepted-file events -> jobs -> submissions -> the first poll.

``handle_accepted_events(bodies, deps)`` handles a batch concurrently (one slow extractor never holds up the rest);
each body becomes exactly one job whatever the redelivery:

1. parse (plain or CloudEvents); a malformed body is parked in the poison container with its reason;
2. the job id is derived from the event (see ``events``); an existing job is not created again;
3. the registration is looked up; the job is created (with its ``Queued`` event) or, with no usable extractor,
   created as ``Failed`` with the reason;
4. ``advance_job``: a kind whose client ``submits`` (DOCSAI/DBRICKS) is submitted (``Submitting`` is recorded
   *before* the POST, under a lease); the run id is recorded and the first poll message is enqueued with the backoff
   delay (``Started``). A kind whose client does not (LOOM) is created ``Polling`` (events Queued and Started in the
   creating transaction) and its first poll, enqueued at once, performs the extract call.

Exactly-once submission: at most once, with detection. A job is submitted only by the caller that moved it from
``Queued`` to ``Submitting`` (ETag-guarded, so only one of any number of concurrent duplicates). If that caller
dies after the POST and before recording the run id, the job stays ``Submitting``; once its lease
(``SUBMIT_LEASE_SECONDS``) has run out, a redelivery or the sweeper marks it ``Failed`` with the reason "submission
outcome unknown" instead of submitting again (DOCSAI and DBRICKS have no idempotency key; the body carries the job
id, so the extractor-side run can be found). Within one submission the spec's retries of transport errors can reach
the extractor twice when an answer is lost; both requests carry the same job id.
"""

from __future__ import annotations

import contextvars
import logging
import uuid
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Final

from azure.core.exceptions import AzureError, ResourceNotFoundError
from opentelemetry.trace import SpanKind

from shared.orchestration.backoff import delay_ms, resolve_tracking
from shared.orchestration.deps import Deps
from shared.orchestration.events import AcceptedFileEvent, EventError, parse_accepted_event, poison_blob_name
from shared.orchestration.extractor_client import SubmissionError
from shared.orchestration.jobs import Change, EventDraft, Job, JobState
from shared.orchestration.outbox import JobHandle
from shared.orchestration.registration import ExtractorConfig, NoUsableExtractor, RegistrationUnavailable
from shared.orchestration.scheduling import enqueue_poll
from shared.orchestration.status import JobStatus
from shared.orchestration.storage import blob_service
from shared.tracing import fail, set_attributes

log = logging.getLogger(__name__)

UNKNOWN_OUTCOME: Final = (
    "submission outcome unknown: the submitting worker stopped after Submitting was recorded and before the run id "
    "was; not resubmitted (at-most-once); the extractor may hold a run for this jobId"
)


class Outcome:
    CREATED: Final = "created"  # a new job
    DUPLICATE: Final = "duplicate"  # the job already existed (redelivery / duplicate)
    PARKED: Final = "parked"  # malformed: parked in the poison container
    ERROR: Final = "error"  # infrastructure failure: retry the batch (or parked on the last try)


@dataclass(frozen=True, slots=True)
class EventOutcome:
    index: int
    outcome: str
    job_id: str | None = None
    state: str | None = None
    reason: str | None = None
    parked_as: str | None = None


@dataclass(frozen=True)
class BatchResult:
    outcomes: list[EventOutcome] = field(default_factory=list)

    @property
    def retry_needed(self) -> bool:
        return any(o.outcome == Outcome.ERROR and o.parked_as is None for o in self.outcomes)


class RetryableBatchError(RuntimeError):
    """Raised by ``run_accepted_batch`` so the Functions host retries the batch (every step is idempotent)."""


# ---------------------------------------------------------------------------------------------------------------
# Batches


def handle_accepted_events(bodies: Sequence[bytes], deps: Deps, *, park_errors: bool = True) -> BatchResult:
    """Handle a batch of accepted-file event bodies concurrently; never raises for one bad event.

    ``park_errors``: an event that failed on an infrastructure error (storage down, ...) is parked with its reason
    (True), or reported as ``error`` so the caller can retry the batch (False).
    """
    if not bodies:
        return BatchResult([])
    workers = max(1, min(len(bodies), deps.settings.submit_concurrency))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="submit") as pool:
        # Each event in a copy of the caller's context: its accept span links to the invocation's span, if any.
        futures = [
            pool.submit(
                contextvars.copy_context().run, handle_accepted_event, body, deps, index=i, park_errors=park_errors
            )
            for i, body in enumerate(bodies)
        ]
        return BatchResult([f.result() for f in futures])


def run_accepted_batch(bodies: Sequence[bytes], deps: Deps, *, retry_count: int, max_retry_count: int) -> BatchResult:
    """The Event Hub adapter's call: retry the batch through the host while retries remain, park on the last."""
    final = retry_count >= max_retry_count
    result = handle_accepted_events(bodies, deps, park_errors=final)
    if result.retry_needed:
        failed = [o for o in result.outcomes if o.outcome == Outcome.ERROR]
        raise RetryableBatchError(
            f"{len(failed)} of {len(bodies)} accepted-file events hit an infrastructure error "
            f"(retry {retry_count} of {max_retry_count}): {failed[0].reason}"
        )
    return result


def handle_accepted_event(body: bytes, deps: Deps, *, index: int = 0, park_errors: bool = True) -> EventOutcome:
    try:
        event = parse_accepted_event(body)
    except EventError as exc:
        name = _park_quietly(body, exc.reason, deps, exc.event_id)
        return EventOutcome(index, Outcome.PARKED, reason=exc.reason, parked_as=name)
    try:
        job, created = accept_event(event, deps)
        return EventOutcome(
            index, Outcome.CREATED if created else Outcome.DUPLICATE, job.job_id, str(job.state), job.reason
        )
    except Exception as exc:  # infrastructure failure: storage, queue, ...
        reason = f"could not be processed: {type(exc).__name__}: {str(exc)[:300]}"
        log.exception("accepted-file event %s (job %s) failed", event.event_id, event.job_id())
        parked = _park_quietly(body, reason, deps, event.event_id) if park_errors else None
        return EventOutcome(index, Outcome.ERROR, event.job_id(), reason=reason, parked_as=parked)


# ---------------------------------------------------------------------------------------------------------------
# One event


def accept_event(event: AcceptedFileEvent, deps: Deps) -> tuple[Job, bool]:
    """Record the event's job if it is new, then move it forward. Returns (job, whether this call created it).

    The job is created without reading first (a redelivery finds out from the create-if-absent transaction, then
    reads the job once). A LOOM job is created ``Polling`` for attempt 1, with its Queued and Started events, in that
    one transaction: it has nothing to be submitted, so its first poll message follows the creation at once.

    The ``loom.accept`` span starts the job's trace; its context is stored with the job (``trace_parent``) and sent
    with every poll message. (A redelivery of an existing job's event makes a short trace of its own.)
    """
    from shared.loom.job import detect_format

    job_id = event.job_id()
    attributes = {
        "loom.client_application.id": event.client_application_id,
        "loom.file.id": event.file_id,
        "loom.file.content_type": event.content_type,
        "loom.file.format": detect_format(event.content_type, [n for n in (event.file_name, event.file_path) if n]),
        "loom.file.size_bytes": event.size_bytes,
    }
    with deps.tracing.span("loom.accept", job_id=job_id, kind=SpanKind.CONSUMER, attributes=attributes) as span:
        job, created = _accept(event, job_id, deps)
        set_attributes(
            span,
            {
                "loom.outcome": Outcome.CREATED if created else Outcome.DUPLICATE,
                "loom.job.state": str(job.state),
                "loom.extractor.type": str(job.extractor_type) if job.extractor_type is not None else None,
            },
        )
        return job, created


def _accept(event: AcceptedFileEvent, job_id: str, deps: Deps) -> tuple[Job, bool]:
    handle = JobHandle.of(deps, job_id)
    now = deps.now()
    job = Job(
        job_id=job_id,
        client_application_id=event.client_application_id,
        file_id=event.file_id,
        file_location_url=event.file_location_url,
        created_at=now,
        updated_at=now,
        event_id=event.event_id,
        document_hash=event.document_hash,
        file_path=event.file_path,
        file_name=event.file_name,
        content_type=event.content_type,
        size_bytes=event.size_bytes,
        trace_parent=deps.tracing.traceparent(),
    )
    drafts = [EventDraft(JobStatus.QUEUED)]
    try:
        config = deps.registration.resolve(event.client_application_id, event.registration)
    except (NoUsableExtractor, RegistrationUnavailable) as exc:
        job = replace(job, state=JobState.FAILED, reason=exc.reason)
        drafts.append(EventDraft(JobStatus.FAILED, reason=exc.reason))
    else:
        tracking = resolve_tracking(config.job_tracking_config, deps.settings)
        job = replace(
            job,
            extractor_type=config.extractor_type,
            extractor_config=config.to_json(),
            deadline=now + timedelta(milliseconds=tracking.max_duration_ms),
        )
        if not _submits(config, deps):
            job = replace(job, state=JobState.POLLING, attempt=1, next_poll_at=now, last_delay_ms=0)
            drafts.append(EventDraft(JobStatus.STARTED))
    stored, created = handle.create(job, drafts)
    if not created:
        return advance_job(job_id, deps, handle=handle) or stored, False
    if stored.state == JobState.QUEUED:  # submit (the submission's first write deletes the published Queued)
        return advance_job(job_id, deps, handle=handle) or stored, True
    handle.settle()  # delete the published events (and unindex a job that failed at once)
    if stored.state == JobState.POLLING:  # LOOM: after the events, so the first poll finds a clean outbox
        enqueue_poll(deps.poll_queue, job_id, stored.attempt, 0, traceparent=stored.trace_parent)
    return stored, True


def advance_job(job_id: str, deps: Deps, *, handle: JobHandle | None = None) -> Job | None:
    """Move a Queued job forward (submit, or schedule LOOM's first poll); fail a Submitting job whose lease ran out.

    Safe to call any number of times, concurrently: only the caller that wins the ETag race acts.
    """
    handle = handle or JobHandle.of(deps, job_id)
    job = handle.current()
    if job is None:
        return None
    if job.state == JobState.QUEUED:
        if not _submits(job.config(), deps):
            return start_polling(job_id, deps, handle=handle)
        return submit_job(job_id, deps, handle=handle)
    if job.state == JobState.SUBMITTING and not job.lease_held(deps.now()):
        return fail_job(
            job_id,
            UNKNOWN_OUTCOME,
            deps,
            only_states=(JobState.SUBMITTING,),
            require_lease_expired=True,
            handle=handle,
        )
    handle.settle()
    return handle.job


def _submits(config: ExtractorConfig, deps: Deps) -> bool:
    """Whether the kind's jobs are submitted before polling (a kind with no client is: its submission fails)."""
    client = deps.extractor(config.extractor_type)
    return client is None or client.submits


def start_polling(job_id: str, deps: Deps, *, handle: JobHandle | None = None) -> Job | None:
    """Queued -> Polling for attempt 1, due now, for a kind that is not submitted: the first poll does the work.

    (New LOOM jobs are created Polling; this moves a LOOM job that was recorded Queued, by an older version.)"""
    handle = handle or JobHandle.of(deps, job_id)

    def decide(job: Job) -> Change | None:
        if job.state != JobState.QUEUED:
            return None
        now = deps.now()
        return Change(
            replace(job, state=JobState.POLLING, attempt=1, next_poll_at=now, last_delay_ms=0, updated_at=now),
            (EventDraft(JobStatus.STARTED),),
        )

    job, changed = handle.mutate(decide)
    handle.settle()
    if changed and job is not None:
        enqueue_poll(deps.poll_queue, job_id, 1, 0, traceparent=job.trace_parent)
    return job


def begin_submission(job_id: str, deps: Deps, *, handle: JobHandle | None = None) -> Job | None:
    """Queued -> Submitting under a fresh lease; the returned job (with ``lease_id``) is this caller's to submit.

    None when the job is not Queued any more (someone else is submitting, or it is finished)."""
    handle = handle or JobHandle.of(deps, job_id)
    lease = uuid.uuid4().hex

    def decide(job: Job) -> Change | None:
        if job.state != JobState.QUEUED:
            return None
        now = deps.now()
        return Change(
            replace(
                job,
                state=JobState.SUBMITTING,
                lease_id=lease,
                lease_until=now + timedelta(seconds=deps.settings.submit_lease_s),
                updated_at=now,
            )
        )

    job, changed = handle.mutate(decide)
    # Normally nothing to do (the write deleted what creation had published); if it published events left over
    # from an earlier run, delete them now, not after the (long) submission.
    handle.settle()
    return job if changed else None


def record_submission(
    job_id: str, lease_id: str, run_id: str, deps: Deps, *, handle: JobHandle | None = None
) -> Job | None:
    """Submitting (our lease) -> Polling with the run id and attempt 1 due after the backoff delay; enqueue it.

    If the extractor has no pollingUrl the job fails (polling cannot start). A job canceled meanwhile stays
    canceled (the extractor's run is left to finish on its own)."""
    handle = handle or JobHandle.of(deps, job_id)
    scheduled: list[int] = []

    def decide(job: Job) -> Change | None:
        if job.state != JobState.SUBMITTING or job.lease_id != lease_id:
            return None
        now = deps.now()
        config: ExtractorConfig = job.config()
        submitted = replace(job, run_id=run_id, lease_id=None, lease_until=None, updated_at=now)
        if not config.polling_url:
            reason = "the extractor has no pollingUrl: polling cannot start"
            return Change(
                replace(submitted, state=JobState.FAILED, reason=reason),
                (EventDraft(JobStatus.STARTED), EventDraft(JobStatus.FAILED, reason=reason)),
            )
        tracking = resolve_tracking(config.job_tracking_config, deps.settings)
        first_delay = delay_ms(1, tracking)
        scheduled[:] = [first_delay]
        return Change(
            replace(
                submitted,
                state=JobState.POLLING,
                attempt=1,
                next_poll_at=now + timedelta(milliseconds=first_delay),
                last_delay_ms=first_delay,
            ),
            (EventDraft(JobStatus.STARTED),),
        )

    job, changed = handle.mutate(decide)
    handle.settle()  # published and cleared before the first poll can start
    if changed and job is not None and job.state == JobState.POLLING:
        enqueue_poll(deps.poll_queue, job_id, 1, scheduled[0], traceparent=job.trace_parent)
    return job


def submit_job(job_id: str, deps: Deps, *, handle: JobHandle | None = None) -> Job | None:
    handle = handle or JobHandle.of(deps, job_id)
    claimed = begin_submission(job_id, deps, handle=handle)
    if claimed is None:
        return handle.job
    assert claimed.lease_id is not None
    config = claimed.config()
    client = deps.extractor(config.extractor_type)
    kind = str(config.extractor_type)
    with deps.tracing.span(
        "loom.submit",
        job_id=job_id,
        traceparent=claimed.trace_parent,
        kind=SpanKind.CLIENT,
        attributes={"loom.extractor.type": kind, "loom.client_application.id": claimed.client_application_id},
    ) as span:
        try:
            if client is None:
                raise SubmissionError(f"no extractor client for extractor type {kind!r}")
            submitted = client.submit(claimed, config)
        except SubmissionError as exc:
            span.set_attribute("loom.outcome", "refused")
            fail(span, "submission_refused")
            return fail_job(
                job_id, exc.reason, deps, only_states=(JobState.SUBMITTING,), lease_id=claimed.lease_id, handle=handle
            )
        set_attributes(
            span,
            {
                "loom.outcome": "submitted",
                "loom.run.id": submitted.run_id,
                "http.response.status_code": submitted.status_code,
                "loom.submit.attempts": submitted.attempts,
            },
        )
    return record_submission(job_id, claimed.lease_id, submitted.run_id, deps, handle=handle)


def fail_job(
    job_id: str,
    reason: str,
    deps: Deps,
    *,
    only_states: tuple[JobState, ...] | None = None,
    lease_id: str | None = None,
    require_lease_expired: bool = False,
    handle: JobHandle | None = None,
) -> Job | None:
    """Mark a job Failed (with its event) unless it is already terminal or fails the given guards."""
    handle = handle or JobHandle.of(deps, job_id)

    def decide(job: Job) -> Change | None:
        now = deps.now()
        if job.terminal or (only_states is not None and job.state not in only_states):
            return None
        if lease_id is not None and job.lease_id != lease_id:
            return None
        if require_lease_expired and job.lease_held(now):
            return None
        return Change(
            replace(job, state=JobState.FAILED, reason=reason, lease_id=None, lease_until=None, updated_at=now),
            (EventDraft(JobStatus.FAILED, reason=reason, attempt=job.attempt or None),),
        )

    job, _ = handle.mutate(decide)
    handle.settle()
    return job


# ---------------------------------------------------------------------------------------------------------------
# Poison container


def park_event(body: bytes, reason: str, deps: Deps, event_id: str | None = None) -> str:
    """Store a body that could not be handled in the poison container: the raw body, the reason in metadata."""
    name = poison_blob_name(body, event_id)
    container = blob_service(deps.settings).get_container_client(deps.settings.poison_container)
    metadata = {
        "reason": _metadata_text(reason),
        "parkedat": deps.now().isoformat(),
    }
    if event_id:
        metadata["eventid"] = _metadata_text(event_id)
    container.upload_blob(name, body, overwrite=True, metadata=metadata)
    log.warning("parked accepted-file event as %s/%s: %s", deps.settings.poison_container, name, reason)
    return name


def _park_quietly(body: bytes, reason: str, deps: Deps, event_id: str | None) -> str | None:
    try:
        return park_event(body, reason, deps, event_id)
    except AzureError:
        log.exception("could not park an accepted-file event (%s)", reason)
        return None


def _metadata_text(text: str) -> str:
    ascii_text = text.encode("ascii", "backslashreplace").decode("ascii")
    return " ".join(ascii_text.split())[:2000]


@dataclass(frozen=True, slots=True)
class ReplayOutcome:
    name: str
    outcome: str
    job_id: str | None
    reason: str | None
    removed: bool


def parked_events(deps: Deps) -> list[tuple[str, str]]:
    """(blob name, reason) of every parked event."""
    container = blob_service(deps.settings).get_container_client(deps.settings.poison_container)
    return [(b.name, (b.metadata or {}).get("reason", "")) for b in container.list_blobs(include=["metadata"])]


def replay_parked(deps: Deps, names: Sequence[str] | None = None) -> list[ReplayOutcome]:
    """Run parked events (all, or the named ones) through ``handle_accepted_event`` again.

    An operator fixes the cause (or edits the blob's body) and replays. A body that now becomes a job (or finds its
    job) is removed from the poison container; one that is still malformed stays, with the new reason.
    """
    container = blob_service(deps.settings).get_container_client(deps.settings.poison_container)
    chosen = list(names) if names is not None else [n for n, _ in parked_events(deps)]
    results: list[ReplayOutcome] = []
    for name in chosen:
        blob = container.get_blob_client(name)
        try:
            body = blob.download_blob().readall()
        except ResourceNotFoundError:
            results.append(ReplayOutcome(name, "missing", None, "no such parked event", False))
            continue
        outcome = handle_accepted_event(body, deps, park_errors=False)
        removed = False
        if outcome.outcome in (Outcome.CREATED, Outcome.DUPLICATE):
            blob.delete_blob()
            removed = True
        elif outcome.outcome == Outcome.PARKED and outcome.parked_as and outcome.parked_as != name:
            blob.delete_blob()  # re-parked under its canonical name
            removed = True
        results.append(ReplayOutcome(name, outcome.outcome, outcome.job_id, outcome.reason, removed))
    return results
