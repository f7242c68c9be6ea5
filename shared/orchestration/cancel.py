"""Operator cancellation: ``POST /jobs/{jobId}/cancel`` (function key) or a message on the ``cancel-jobs`` queue.

A canceled job is terminal: poll messages for it are dropped, a submission that was in flight is not recorded (the
extractor's run is left alone: DOCSAI and DBRICKS have no cancel call in the spec), and a Canceled event is published.
Canceling a finished job changes nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import orjson

from shared.orchestration.deps import Deps
from shared.orchestration.jobs import Change, EventDraft, Job, JobState
from shared.orchestration.outbox import JobHandle
from shared.orchestration.status import JobStatus

DEFAULT_REASON = "canceled by an operator"


@dataclass(frozen=True, slots=True)
class CancelResult:
    job_id: str
    found: bool
    changed: bool
    state: str | None


def cancel_job(job_id: str, deps: Deps, reason: str | None = None) -> CancelResult:
    text = (reason or "").strip()[:500] or DEFAULT_REASON

    def decide(job: Job) -> Change | None:
        if job.terminal:
            return None
        now = deps.now()
        return Change(
            replace(job, state=JobState.CANCELED, reason=text, lease_id=None, lease_until=None, updated_at=now),
            (EventDraft(JobStatus.CANCELED, reason=text),),
        )

    handle = JobHandle.of(deps, job_id)
    job, changed = handle.mutate(decide)
    if job is None:
        return CancelResult(job_id, False, False, None)
    handle.settle()
    return CancelResult(job_id, True, changed, str(job.state))


class CancelMessageError(ValueError):
    pass


def parse_cancel_message(body: bytes | str) -> tuple[str, str | None]:
    """A ``cancel-jobs`` message: ``{"jobId": ..., "reason": ...}`` or just the job id as text."""
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    text = text.strip()
    if text.startswith("{"):
        try:
            doc = orjson.loads(text)
        except orjson.JSONDecodeError:
            raise CancelMessageError("cancel message is not JSON") from None
        job_id = doc.get("jobId") if isinstance(doc, dict) else None
        reason = doc.get("reason") if isinstance(doc, dict) else None
        if not isinstance(job_id, str) or not job_id.strip():
            raise CancelMessageError("cancel message has no jobId")
        return job_id.strip(), reason if isinstance(reason, str) else None
    if not text or len(text) > 200 or any(c.isspace() for c in text):
        raise CancelMessageError("cancel message is neither JSON nor a job id")
    return text, None
