"""The status event outbox: publish a job's recorded events, then forget them.

Events are recorded with their state change (``JobStore.save``); ``flush`` publishes whatever a job has pending, in
sequence order, and deletes what was published. A publishing failure leaves the events in place for the next handler
run on that job or the sweeper, so no event is lost; a crash between publishing and deleting publishes again, so
consumers de-duplicate by (jobId, sequence).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Final

from shared.orchestration.jobs import JobStore
from shared.orchestration.status import StatusPublisher

log = logging.getLogger(__name__)

CLAIM_SECONDS: Final = 60.0
CLAIM_TRIES: Final = 10
CLAIM_WAIT_S: Final = 0.1
CLAIM_BATCH: Final = 99


def flush(
    job_id: str, store: JobStore, publisher: StatusPublisher, *, sleep: Callable[[float], None] = time.sleep
) -> int:
    """Publish the job's pending events; return how many were published (0 when publishing failed).

    Concurrent flushers of one job do not publish the same events twice: each claims the entries it is about to
    publish (ETag-guarded, all or none); a flusher that finds entries claimed by another waits briefly, then leaves
    the rest to the next run (the sweeper). A claim whose publisher died expires after ``CLAIM_SECONDS``.
    """
    published = 0
    for _ in range(CLAIM_TRIES):
        pending = store.pending(job_id)
        if not pending:
            return published
        now = store.clock()
        if any(p.claimed_until is not None and p.claimed_until > now for p in pending):
            sleep(CLAIM_WAIT_S)  # another flusher is publishing; keep sequence order: never overtake it
            continue
        batch = pending[:CLAIM_BATCH]
        if not store.claim(job_id, batch, now + timedelta(seconds=CLAIM_SECONDS)):
            sleep(CLAIM_WAIT_S)
            continue
        events = [p.event for p in batch]
        try:
            publisher.publish(job_id, events)
        except Exception as exc:  # any publisher failure: keep the events (the claim expires) for a later attempt
            log.warning(
                "job %s: publishing %d status event(s) failed (%s); kept in the outbox",
                job_id,
                len(events),
                type(exc).__name__,
            )
            store.release(job_id, [ev.sequence for ev in events])
            return published
        store.delete_events(job_id, [ev.sequence for ev in events])
        published += len(events)
    return published


def settle(job_id: str, store: JobStore, publisher: StatusPublisher) -> bool:
    """Flush, and drop the job from the active index once it is terminal with nothing left to publish.

    Returns whether the job still needs attention (it stays in the index)."""
    flush(job_id, store, publisher)
    job = store.get(job_id)
    if job is None or not job.terminal:
        return job is not None
    if store.pending_events(job_id):
        return True
    store.remove_from_index(job_id)
    return False
