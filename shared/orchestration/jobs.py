"""The job store: one job per accepted-file event, on Azure Table storage, changed only under ETag guard.

Table ``jobs`` (``JOBS_TABLE``) holds three kinds of entity:

=====================  ==================  =====================================================================
PartitionKey           RowKey              what
=====================  ==================  =====================================================================
``<jobId>``            ``job``             the job: ids, source file, state, extractor config, run id, attempt,
                                           next poll time, lease, reason, result, last event sequence, the
                                           trace context (``TraceParent``; absent on jobs made without tracing)
``<jobId>``            ``evt-<seq:010d>``  the outbox: a status event not yet published (deleted once published)
``active``             ``<jobId>``         the index of jobs that need attention: not terminal, or terminal with
                                           events still in the outbox (deleted when neither holds)
=====================  ==================  =====================================================================

Every state change writes the job entity (``If-Match`` its ETag) and its new events in one entity group transaction
(same partition), so an event is recorded exactly when its state change is, and a lost race (HTTP 412) changes
nothing. The same transaction may also claim earlier outbox entries for publishing (``If-Match`` their ETags) and
delete entries its writer has already published, so the outbox costs no transactions of its own while a handler
keeps changing the job. ``load`` reads the job and its outbox in one request (a query of the job's partition). The
sweeper reads the ``active`` partition only: finished jobs are never scanned.

The index entity is written before the job is created, and removed only once the job is terminal with an empty
outbox, so it always covers every job that needs attention (an index entry whose job does not exist is dropped by
the sweeper after a grace period).
"""

from __future__ import annotations

import contextlib
import enum
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Final

import orjson
from azure.core import MatchConditions
from azure.core.exceptions import ResourceExistsError, ResourceNotFoundError
from azure.data.tables import TableTransactionError, UpdateMode

from shared.orchestration.extractor_type import ExtractorType
from shared.orchestration.status import EventType, JobStatus, StatusEvent
from shared.orchestration.storage_protocols import EntityTable

if TYPE_CHECKING:
    from shared.orchestration.registration import ExtractorConfig

log = logging.getLogger(__name__)

JOB_ROW: Final = "job"
EVENT_ROW_PREFIX: Final = "evt-"
ACTIVE_PARTITION: Final = "active"
MAX_REASON_CHARS: Final = 2000
TX_LIMIT: Final = 100  # entity group transactions hold at most 100 operations
_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)


class JobState(enum.StrEnum):
    QUEUED = "Queued"  # recorded, not yet submitted
    SUBMITTING = "Submitting"  # a submission is (or was, if the lease ran out) in flight
    POLLING = "Polling"  # submitted (or LOOM: scheduled); a poll message for ``attempt`` is on its way
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    CANCELED = "Canceled"


TERMINAL_STATES: Final = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELED})


class JobConflict(Exception):
    """Someone else changed the job (or its outbox) since it was read (ETag mismatch, an entry gone)."""


class JobExists(Exception):
    """``insert`` found the job already there."""


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(ts: datetime) -> str:
    return ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ts.microsecond // 1000:03d}Z"


@dataclass(frozen=True)
class Job:
    job_id: str
    client_application_id: str
    file_id: str
    file_location_url: str
    created_at: datetime
    updated_at: datetime
    state: JobState = JobState.QUEUED
    event_id: str | None = None
    document_hash: str | None = None
    file_path: str | None = None
    file_name: str | None = None
    content_type: str | None = None
    size_bytes: int | None = None
    extractor_type: ExtractorType | None = None
    extractor_config: str | None = None  # the validated ExtractorConfig as JSON (a snapshot taken at submission)
    run_id: str | None = None
    attempt: int = 0  # the poll attempt the next poll message is for (1 = first poll); 0 until polling starts
    next_poll_at: datetime | None = None
    last_delay_ms: int = 0
    deadline: datetime | None = None
    lease_id: str | None = None
    lease_until: datetime | None = None
    reason: str | None = None
    result_location: str | None = None
    result_urls: tuple[str, ...] = ()
    result_failures: int = 0
    reschedules: int = 0
    sequence: int = 0  # the last status event sequence number given out
    trace_parent: str | None = None  # the job's trace context (W3C traceparent of its accept span; shared.tracing)
    etag: str | None = field(default=None, compare=False)

    @property
    def terminal(self) -> bool:
        return self.state in TERMINAL_STATES

    def lease_held(self, now: datetime) -> bool:
        return self.lease_until is not None and self.lease_until > now

    def config(self) -> ExtractorConfig:
        """The job's ``ExtractorConfig``."""
        from shared.orchestration.registration import ExtractorConfig

        if not self.extractor_config:
            raise ValueError(f"job {self.job_id} has no extractor configuration")
        return ExtractorConfig.from_json(self.extractor_config)

    def age_ms(self, now: datetime) -> float:
        return (now - self.created_at).total_seconds() * 1000


@dataclass(frozen=True, slots=True)
class EventDraft:
    """A status event before the store gives it its sequence number and time."""

    status: JobStatus
    event_type: EventType = EventType.STATUS
    reason: str | None = None
    attempt: int | None = None
    result_location: str | None = None
    result_urls: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class PendingEvent:
    event: StatusEvent
    etag: str | None
    claimed_until: datetime | None


@dataclass(frozen=True, slots=True)
class IndexEntry:
    job_id: str
    created_at: datetime | None


def _clip(reason: str | None) -> str | None:
    if reason is None:
        return None
    return reason if len(reason) <= MAX_REASON_CHARS else reason[: MAX_REASON_CHARS - 1] + "…"


def _to_entity(job: Job) -> dict[str, Any]:
    e: dict[str, Any] = {
        "PartitionKey": job.job_id,
        "RowKey": JOB_ROW,
        "State": str(job.state),
        "ClientApplicationId": job.client_application_id,
        "FileId": job.file_id,
        "FileLocationUrl": job.file_location_url,
        "CreatedAt": job.created_at,
        "UpdatedAt": job.updated_at,
        "EventId": job.event_id,
        "DocumentHash": job.document_hash,
        "FilePath": job.file_path,
        "FileName": job.file_name,
        "ContentType": job.content_type,
        "SizeBytes": job.size_bytes,
        "ExtractorType": str(job.extractor_type) if job.extractor_type is not None else None,
        "ExtractorConfig": job.extractor_config,
        "RunId": job.run_id,
        "Attempt": job.attempt,
        "NextPollAt": job.next_poll_at,
        "LastDelayMs": job.last_delay_ms,
        "Deadline": job.deadline,
        "LeaseId": job.lease_id,
        "LeaseUntil": job.lease_until,
        "Reason": _clip(job.reason),
        "ResultLocation": job.result_location,
        "ResultUrls": orjson.dumps(list(job.result_urls)).decode() if job.result_urls else None,
        "ResultFailures": job.result_failures,
        "Reschedules": job.reschedules,
        "Sequence": job.sequence,
        "TraceParent": job.trace_parent,
    }
    return {k: v for k, v in e.items() if v is not None}


def _dt(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value))


def _from_entity(e: Any) -> Job:
    def opt_int(key: str) -> int | None:
        v = e.get(key)
        return int(v) if v is not None else None

    return Job(
        job_id=e["PartitionKey"],
        client_application_id=e["ClientApplicationId"],
        file_id=e["FileId"],
        file_location_url=e["FileLocationUrl"],
        created_at=_dt(e["CreatedAt"]) or utcnow(),
        updated_at=_dt(e["UpdatedAt"]) or utcnow(),
        state=JobState(e["State"]),
        event_id=e.get("EventId"),
        document_hash=e.get("DocumentHash"),
        file_path=e.get("FilePath"),
        file_name=e.get("FileName"),
        content_type=e.get("ContentType"),
        size_bytes=opt_int("SizeBytes"),
        extractor_type=ExtractorType.parse(e.get("ExtractorType")),
        extractor_config=e.get("ExtractorConfig"),
        run_id=e.get("RunId"),
        attempt=int(e.get("Attempt") or 0),
        next_poll_at=_dt(e.get("NextPollAt")),
        last_delay_ms=int(e.get("LastDelayMs") or 0),
        deadline=_dt(e.get("Deadline")),
        lease_id=e.get("LeaseId"),
        lease_until=_dt(e.get("LeaseUntil")),
        reason=e.get("Reason"),
        result_location=e.get("ResultLocation"),
        result_urls=tuple(orjson.loads(e["ResultUrls"])) if e.get("ResultUrls") else (),
        result_failures=int(e.get("ResultFailures") or 0),
        reschedules=int(e.get("Reschedules") or 0),
        sequence=int(e.get("Sequence") or 0),
        trace_parent=e.get("TraceParent"),
        etag=e.metadata.get("etag") if hasattr(e, "metadata") else None,
    )


def _event_row(seq: int) -> str:
    return f"{EVENT_ROW_PREFIX}{seq:010d}"


class JobStore:
    def __init__(self, table: EntityTable, clock: Callable[[], datetime] = utcnow) -> None:
        self.table = table
        self.clock = clock

    def ensure(self) -> None:
        with contextlib.suppress(ResourceExistsError):
            self.table.create_table()

    # -----------------------------------------------------------------------------------------------------------
    def get(self, job_id: str) -> Job | None:
        try:
            return _from_entity(self.table.get_entity(job_id, JOB_ROW))
        except ResourceNotFoundError:
            return None

    def load(self, job_id: str) -> tuple[Job | None, list[PendingEvent]]:
        """The job and its outbox (in sequence order) in one request: a query of the job's partition."""
        job: Job | None = None
        pending: list[PendingEvent] = []
        for row in self.table.query_entities("PartitionKey eq @pk", parameters={"pk": job_id}):
            key = row["RowKey"]
            if key == JOB_ROW:
                job = _from_entity(row)
            elif key.startswith(EVENT_ROW_PREFIX):
                pending.append(_pending(row))
        return job, sorted(pending, key=lambda p: p.event.sequence)

    def add_to_index(self, job_id: str, created_at: datetime) -> None:
        """Put the job in the ``active`` index (before it is created, so the index covers it from the start)."""
        self.table.upsert_entity(
            {"PartitionKey": ACTIVE_PARTITION, "RowKey": job_id, "CreatedAt": created_at}, mode=UpdateMode.MERGE
        )

    def insert(
        self, job: Job, drafts: Sequence[EventDraft], *, claim_until: datetime | None = None
    ) -> tuple[Job, list[StatusEvent]]:
        """Create the job and its first events in one transaction; ``JobExists`` if it is there already.

        ``claim_until``: the new events are created claimed for publishing by the caller (see ``claim``)."""
        stored, events = self._with_events(job, drafts)
        ops: list[Any] = [("create", _to_entity(stored))]
        ops += [("create", self._event_entity(ev, claim_until)) for ev in events]
        try:
            result = self.table.submit_transaction(ops)
        except TableTransactionError as exc:
            if exc.status_code == 409:
                raise JobExists(job.job_id) from None
            raise
        return replace(stored, etag=result[0].get("etag")), events

    def create(self, job: Job, drafts: Sequence[EventDraft]) -> tuple[Job, bool]:
        """Index and create the job (and its first events) if absent. Returns (the stored job, whether created)."""
        self.add_to_index(job.job_id, job.created_at)
        try:
            stored, _ = self.insert(job, drafts)
        except JobExists:
            existing = self.get(job.job_id)
            if existing is None:
                raise
            return existing, False
        return stored, True

    def save(self, job: Job, drafts: Sequence[EventDraft] = ()) -> Job:
        """Replace the job entity if unchanged since ``job.etag`` was read, adding ``drafts`` to its outbox."""
        return self.commit(job, drafts)[0]

    def commit(
        self,
        job: Job,
        drafts: Sequence[EventDraft] = (),
        *,
        claim_until: datetime | None = None,
        claim: Sequence[PendingEvent] = (),
        delete: Sequence[int] = (),
    ) -> tuple[Job, list[StatusEvent]]:
        """One state change, in one transaction: replace the job ``If-Match`` ``job.etag``, create its events
        (claimed until ``claim_until`` if given), claim the earlier outbox entries ``claim`` (``If-Match`` their
        ETags) and delete the (already published) entries ``delete``.

        ``JobConflict`` when the job changed since it was read, or an entry to claim or delete changed or is gone:
        nothing was written. Returns the stored job (with its new ETag) and its new events."""
        if job.etag is None:
            raise ValueError("a state change needs the ETag of the job version it changes")
        stored, events = self._with_events(job, drafts)
        if 1 + len(events) + len(claim) + len(delete) > TX_LIMIT:
            raise ValueError("too many operations for one transaction")
        ops: list[Any] = [("update", _to_entity(stored), _if_match(job.etag))]
        ops += [("create", self._event_entity(ev, claim_until)) for ev in events]
        ops += [("update", self._event_entity(p.event, claim_until), _if_match(p.etag)) for p in claim]
        ops += [("delete", {"PartitionKey": job.job_id, "RowKey": _event_row(seq)}) for seq in delete]
        try:
            result = self.table.submit_transaction(ops)
        except TableTransactionError as exc:
            if exc.status_code in (404, 409, 412):
                raise JobConflict(f"job {job.job_id} changed concurrently ({exc.status_code})") from None
            raise
        return replace(stored, etag=result[0].get("etag")), events

    def _with_events(self, job: Job, drafts: Sequence[EventDraft]) -> tuple[Job, list[StatusEvent]]:
        now_iso = iso(job.updated_at)
        events: list[StatusEvent] = []
        seq = job.sequence
        for d in drafts:
            seq += 1
            events.append(
                StatusEvent(
                    job_id=job.job_id,
                    file_id=job.file_id,
                    client_application_id=job.client_application_id,
                    status=d.status,
                    sequence=seq,
                    time=now_iso,
                    event_type=d.event_type,
                    extractor_type=job.extractor_type,
                    run_id=job.run_id,
                    attempt=d.attempt,
                    reason=_clip(d.reason),
                    result_location=d.result_location,
                    result_urls=d.result_urls,
                )
            )
        if len(events) + 1 > TX_LIMIT:
            raise ValueError("too many events for one state change")
        return replace(job, sequence=seq), events

    def _event_entity(self, event: StatusEvent, claimed_until: datetime | None = None) -> dict[str, Any]:
        entity: dict[str, Any] = {
            "PartitionKey": event.job_id,
            "RowKey": _event_row(event.sequence),
            "Body": event.to_json().decode(),
        }
        if claimed_until is not None:
            entity["ClaimedUntil"] = claimed_until
        return entity

    # -----------------------------------------------------------------------------------------------------------
    def pending_events(self, job_id: str) -> list[StatusEvent]:
        return [p.event for p in self.pending(job_id)]

    def pending(self, job_id: str) -> list[PendingEvent]:
        """The job's outbox, in sequence order, with each entry's ETag and publishing claim."""
        rows = self.table.query_entities(
            "PartitionKey eq @pk and RowKey ge @lo and RowKey lt @hi",
            parameters={"pk": job_id, "lo": EVENT_ROW_PREFIX, "hi": EVENT_ROW_PREFIX[:-1] + "."},
        )
        return sorted((_pending(r) for r in rows), key=lambda p: p.event.sequence)

    def claim(self, job_id: str, entries: Sequence[PendingEvent], until: datetime) -> bool:
        """Mark outbox entries as being published by this caller (all or none, ETag-guarded)."""
        ops: list[Any] = [("update", self._event_entity(p.event, until), _if_match(p.etag)) for p in entries[:TX_LIMIT]]
        try:
            self.table.submit_transaction(ops)
        except TableTransactionError as exc:
            if exc.status_code in (404, 409, 412):
                return False
            raise
        return True

    def release(self, job_id: str, sequences: Sequence[int]) -> None:
        """Drop this caller's publishing claim (publishing failed): the entries are claimable again at once."""
        for start in range(0, len(sequences), TX_LIMIT):
            chunk = sequences[start : start + TX_LIMIT]
            entities = [{"PartitionKey": job_id, "RowKey": _event_row(seq), "ClaimedUntil": _EPOCH} for seq in chunk]
            try:
                self.table.submit_transaction([("update", e, {"mode": UpdateMode.MERGE}) for e in entities])
            except TableTransactionError:  # one is gone (a concurrent publisher): one by one
                for e in entities:
                    with contextlib.suppress(ResourceNotFoundError):
                        self.table.update_entity(e, mode=UpdateMode.MERGE)

    def delete_events(self, job_id: str, sequences: Sequence[int]) -> None:
        for start in range(0, len(sequences), TX_LIMIT):
            chunk = sequences[start : start + TX_LIMIT]
            try:
                self.table.submit_transaction(
                    [("delete", {"PartitionKey": job_id, "RowKey": _event_row(s)}) for s in chunk]
                )
            except TableTransactionError:  # one already deleted (a concurrent publisher): delete one by one
                for s in chunk:
                    self.table.delete_entity(job_id, _event_row(s))

    # -----------------------------------------------------------------------------------------------------------
    def active_index(self) -> list[IndexEntry]:
        rows = self.table.query_entities("PartitionKey eq @pk", parameters={"pk": ACTIVE_PARTITION})
        return [IndexEntry(r["RowKey"], _dt(r.get("CreatedAt"))) for r in rows]

    def remove_from_index(self, job_id: str) -> None:
        self.table.delete_entity(ACTIVE_PARTITION, job_id)  # a missing entry is no error


def _if_match(etag: str | None) -> dict[str, Any]:
    return {"mode": UpdateMode.REPLACE, "etag": etag, "match_condition": MatchConditions.IfNotModified}


def _pending(row: Any) -> PendingEvent:
    return PendingEvent(StatusEvent.from_json(row["Body"]), row.metadata.get("etag"), _dt(row.get("ClaimedUntil")))


@dataclass(frozen=True, slots=True)
class Change:
    job: Job
    events: tuple[EventDraft, ...] = ()


def lease_until(now: datetime, seconds: float) -> datetime:
    return now + timedelta(seconds=seconds)
