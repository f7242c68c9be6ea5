"""The status event outbox: events are recorded with their state change, published right after it, then deleted.

A handler run works on a job through a ``JobHandle``: the job as it last read or wrote it (with its ETag) and what it
knows of the job's outbox. The handle spends no transaction of its own on the outbox while the run keeps changing
the job:

- ``load`` reads the job and its outbox in one request;
- ``create`` / ``mutate`` write a state change (ETag-guarded; ``mutate`` decides on the job the handle holds and
  re-reads only when the write loses, HTTP 412). The same transaction creates the change's events already claimed
  for publishing by this run, claims any earlier unpublished entries (``If-Match`` their ETags, so they are published
  first, in sequence order), and deletes the entries this run published after its previous change;
- the new (and claimed) events are then published at once, from memory: no query;
- ``settle`` ends the run's work on the job: it publishes what is still publishable, deletes what the run published
  (one transaction), and drops the job from the ``active`` index once it is terminal with an empty outbox.

No event is lost: an event exists in the outbox from the transaction of its state change until after it was
published. A publishing failure releases the claim, so the next handler run on the job or the sweeper publishes it;
a crash leaves the claim to run out (``CLAIM_SECONDS``, or the poll lease for events written under one: the lease
holder publishes the events it wrote). Events are at-least-once: a crash between publishing and deleting publishes
again, so consumers de-duplicate by (jobId, sequence). A run never publishes an event while an earlier one is claimed
by someone else (that would overtake it): it waits briefly, then leaves its events to the claimer's ``settle``, the
next handler run or the sweeper.
"""

from __future__ import annotations

import enum
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Final

from opentelemetry.trace import SpanKind

from shared.orchestration.jobs import (
    TX_LIMIT,
    Change,
    EventDraft,
    Job,
    JobConflict,
    JobExists,
    JobStore,
    PendingEvent,
)
from shared.orchestration.status import StatusEvent, StatusPublisher
from shared.tracing import Tracing, fail

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from shared.orchestration.deps import Deps

log = logging.getLogger(__name__)

CLAIM_SECONDS: Final = 60.0
CLAIM_TRIES: Final = 10
CLAIM_WAIT_S: Final = 0.1
CLAIM_BATCH: Final = 99
MUTATE_TRIES: Final = 8


class _State(enum.Enum):
    PENDING = "pending"  # in the outbox, not published by this run (claimed by someone else, or by nobody)
    CLAIMED = "claimed"  # claimed by this run, about to be published
    PUBLISHED = "published"  # published by this run, still to be deleted


@dataclass(slots=True)
class _Entry:
    event: StatusEvent
    etag: str | None
    claimed_until: datetime | None
    state: _State

    def claimed_by_other(self, now: datetime) -> bool:
        return self.state == _State.PENDING and self.claimed_until is not None and self.claimed_until > now

    def as_pending(self) -> PendingEvent:
        return PendingEvent(self.event, self.etag, self.claimed_until)


class JobHandle:
    """One handler run's view of one job: the job (with its ETag) and its outbox entries. Not thread-safe."""

    def __init__(
        self,
        store: JobStore,
        publisher: StatusPublisher,
        job_id: str,
        *,
        sleep: Callable[[float], None] = time.sleep,
        tracing: Tracing | None = None,
    ) -> None:
        self.store = store
        self.publisher = publisher
        self.job_id = job_id
        self.sleep = sleep
        self.tracing = tracing or Tracing.off()
        self.job: Job | None = None
        self.known = False  # the job and outbox are known (read, or written by this handle since)
        self.published = 0  # events this handle published
        self._entries: dict[int, _Entry] = {}
        self._publish_failed = False

    @classmethod
    def of(cls, deps: Deps, job_id: str) -> JobHandle:
        return cls(deps.store, deps.publisher, job_id, tracing=deps.tracing)

    # -- reading -------------------------------------------------------------------------------------------------
    def load(self) -> Job | None:
        """Read the job and its outbox (one request). Entries this run published stay marked for deletion."""
        job, pending = self.store.load(self.job_id)
        mine = {seq for seq, e in self._items() if e.state == _State.PUBLISHED}
        self._entries = {
            p.event.sequence: _Entry(
                p.event,
                p.etag,
                p.claimed_until,
                _State.PUBLISHED if p.event.sequence in mine else _State.PENDING,
            )
            for p in pending
        }
        self.job, self.known = job, True
        return job

    def current(self) -> Job | None:
        """The job as this handle knows it (read first if it knows nothing yet)."""
        return self.job if self.known else self.load()

    def pending_count(self) -> int:
        """Entries in the outbox that this run has not published (as far as it knows)."""
        return sum(1 for _, e in self._items() if e.state != _State.PUBLISHED)

    # -- writing -------------------------------------------------------------------------------------------------
    def create(self, job: Job, drafts: Sequence[EventDraft]) -> tuple[Job, bool]:
        """Index the job, create it with its first events (claimed), publish them. (stored job, whether created)."""
        self.store.add_to_index(job.job_id, job.created_at)
        try:
            stored, events = self.store.insert(job, drafts, claim_until=self._claim_until(job))
        except JobExists:
            existing = self.load()
            if existing is None:  # jobs are never deleted
                raise
            return existing, False
        self.job, self.known = stored, True
        self._entries = {ev.sequence: _Entry(ev, None, None, _State.CLAIMED) for ev in events}
        self.publish()
        return stored, True

    def mutate(self, decide: Callable[[Job], Change | None], *, tries: int = MUTATE_TRIES) -> tuple[Job | None, bool]:
        """Decide on the job this handle holds and write the change (ETag-guarded) with the outbox work above;
        after a lost race re-read and re-decide. Publishes the change's events. Returns (job now, whether changed).
        """
        for _ in range(tries):
            job = self.current()
            if job is None:
                return None, False
            change = decide(job)
            if change is None:
                return job, False
            now = self.store.clock()
            pending = sorted((e for _, e in self._items() if e.state == _State.PENDING), key=_seq)
            delete = sorted(seq for seq, e in self._items() if e.state == _State.PUBLISHED)
            room = TX_LIMIT - 1 - len(change.events)
            blocked = (
                any(e.claimed_by_other(now) or e.etag is None for e in pending)
                or len(pending) + len(delete) > room
                or self._publish_failed
            )
            claim = [] if blocked else pending
            delete = delete[: max(0, room - len(claim))]
            until = None if blocked else self._claim_until(change.job, now)
            try:
                stored, events = self.store.commit(
                    change.job,
                    change.events,
                    claim_until=until,
                    claim=[e.as_pending() for e in claim],
                    delete=delete,
                )
            except JobConflict:
                self.load()
                continue
            self.job = stored
            for seq in delete:
                self._entries.pop(seq, None)
            for e in claim:
                e.state, e.claimed_until = _State.CLAIMED, until
            for ev in events:  # the ETag of a new entry is unknown: a later claim of it needs a read first
                self._entries[ev.sequence] = _Entry(ev, None, until, _State.PENDING if blocked else _State.CLAIMED)
            self.publish()
            return stored, True
        raise JobConflict(f"job {self.job_id}: gave up after {tries} concurrent changes")

    # -- publishing ----------------------------------------------------------------------------------------------
    def publish(self) -> int:
        """Publish the entries this run claimed, in sequence order. On failure release them (claimable again)."""
        claimed = sorted((e for _, e in self._items() if e.state == _State.CLAIMED), key=_seq)
        if not claimed:
            return 0
        events = [e.event for e in claimed]
        spans = [self._event_span(ev) for ev in events]  # one per status event, in the job's trace
        try:
            self.publisher.publish(self.job_id, events)
        except Exception as exc:  # any publisher failure: keep the events for a later attempt
            for span in spans:
                span.set_attribute("loom.outcome", "kept")
                fail(span, type(exc).__name__)
                span.end()
            log.warning(
                "job %s: publishing %d status event(s) failed (%s); kept in the outbox",
                self.job_id,
                len(events),
                type(exc).__name__,
            )
            self._publish_failed = True  # not again in this run: the next run or the sweeper retries
            self.known = False  # the released entries' ETags changed: read before the next write
            try:
                self.store.release(self.job_id, [ev.sequence for ev in events])
            except Exception:  # the claim runs out on its own
                log.warning("job %s: releasing the claim failed; it runs out after %ss", self.job_id, CLAIM_SECONDS)
            for e in claimed:
                e.state = _State.PENDING
            return 0
        for e in claimed:
            e.state = _State.PUBLISHED
        for span in spans:
            span.set_attribute("loom.outcome", "published")
            span.end()
        self.published += len(events)
        return len(events)

    def _event_span(self, event: StatusEvent) -> Span:
        return self.tracing.start(
            "loom.status_event",
            job_id=self.job_id,
            traceparent=self.job.trace_parent if self.job is not None else None,
            kind=SpanKind.PRODUCER,
            attributes={
                "loom.event.type": str(event.event_type),
                "loom.event.status": str(event.status),
                "loom.event.sequence": event.sequence,
                "loom.attempt": event.attempt,
                "loom.client_application.id": event.client_application_id,
                "loom.extractor.type": str(event.extractor_type) if event.extractor_type is not None else None,
            },
        )

    def settle(self, *, wait: bool = True) -> bool:
        """End this run's work on the job: publish what it may, delete what it published, and drop the job from the
        ``active`` index once it is terminal with an empty outbox. Returns whether the job still needs attention.

        Entries claimed by someone else are waited for briefly (``wait``), unless a lease holder claimed them (it
        deletes or publishes them with its next write, or its lease and claim run out and the sweeper does)."""
        for _ in range(CLAIM_TRIES):
            job = self.current()
            if job is None or self._publish_failed:
                break
            pending = sorted((e for _, e in self._items() if e.state == _State.PENDING), key=_seq)
            if not pending:
                break
            now = self.store.clock()
            blocking = [e for e in pending if e.claimed_by_other(now)]
            if blocking:
                # Keep sequence order: never overtake an entry someone else claimed. A run that is publishing right
                # now is done in moments: wait for it. A lease holder keeps its claim until its next write: leave it.
                soon = now + timedelta(seconds=CLAIM_SECONDS)
                held = job.lease_held(now) or any(
                    e.claimed_until is not None and e.claimed_until > soon for e in blocking
                )
                if not wait or held:
                    break
                self.sleep(CLAIM_WAIT_S)
                self.load()
                continue
            batch = pending[:CLAIM_BATCH]
            until = now + timedelta(seconds=CLAIM_SECONDS)
            if any(e.etag is None for e in batch) or not self.store.claim(
                self.job_id, [e.as_pending() for e in batch], until
            ):
                self.load()
                continue
            for e in batch:
                e.state, e.claimed_until = _State.CLAIMED, until
            self.publish()
            if len(pending) <= len(batch):
                break
        self._delete_published()
        job = self.job
        if job is None:
            return False
        if job.terminal and self.pending_count() == 0:
            # Terminal is final (no change adds events to a terminal job) and the outbox is empty: done.
            self.store.remove_from_index(self.job_id)
            return False
        return True

    def _delete_published(self) -> None:
        mine = sorted(seq for seq, e in self._items() if e.state == _State.PUBLISHED)
        if mine:
            self.store.delete_events(self.job_id, mine)
            for seq in mine:
                self._entries.pop(seq, None)

    # -- helpers -------------------------------------------------------------------------------------------------
    def _claim_until(self, job: Job, now: datetime | None = None) -> datetime:
        """How long the claim on a change's events lasts: ``CLAIM_SECONDS``, or, when the change takes a lease (a poll
        attempt, a submission), as long as the lease: the lease holder publishes the events it wrote, and if it dies
        both run out together."""
        until = (now or self.store.clock()) + timedelta(seconds=CLAIM_SECONDS)
        return max(until, job.lease_until) if job.lease_until is not None else until

    def _items(self) -> list[tuple[int, _Entry]]:
        return list(self._entries.items())


def _seq(entry: _Entry) -> int:
    return entry.event.sequence
