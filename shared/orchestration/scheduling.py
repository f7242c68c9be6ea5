"""Poll messages: ``{"jobId": ..., "attempt": n}`` on the ``poll-jobs`` queue, invisible for the backoff delay.

A message may also carry ``"traceparent"``: the job's trace context (``shared.tracing``), so the poll joins the job's
trace. It is optional both ways: a message without it (an older sender, tracing off) is read as before, and one with
a value that is not W3C traceparent text is read without it.

The queue's visibility timeout has whole seconds: the delay is rounded up (a message is never visible early), and
capped at the queue's 7-day maximum. Bodies are plain JSON text (host.json sets ``messageEncoding`` to none).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import orjson

from shared.orchestration.settings import MAX_VISIBILITY_SECONDS
from shared.orchestration.storage_protocols import MessageQueue
from shared.tracing import TRACEPARENT, valid_traceparent


class PollMessageError(ValueError):
    pass


@dataclass(frozen=True, slots=True)
class PollMessage:
    job_id: str
    attempt: int
    traceparent: str | None = None

    def to_text(self) -> str:
        doc: dict[str, object] = {"jobId": self.job_id, "attempt": self.attempt}
        if self.traceparent is not None:
            doc[TRACEPARENT] = self.traceparent
        return orjson.dumps(doc).decode()

    @classmethod
    def parse(cls, body: bytes | str) -> PollMessage:
        try:
            doc = orjson.loads(body)
        except orjson.JSONDecodeError:
            raise PollMessageError("poll message is not JSON") from None
        if not isinstance(doc, dict):
            raise PollMessageError("poll message is not a JSON object")
        job_id, attempt = doc.get("jobId"), doc.get("attempt")
        if not isinstance(job_id, str) or not job_id or len(job_id) > 200:
            raise PollMessageError("poll message has no jobId")
        if not isinstance(attempt, int) or isinstance(attempt, bool) or attempt < 1:
            raise PollMessageError("poll message has no attempt number >= 1")
        return cls(job_id, attempt, valid_traceparent(doc.get(TRACEPARENT)))


def visibility_seconds(delay_ms: float) -> int:
    return min(MAX_VISIBILITY_SECONDS, max(0, math.ceil(delay_ms / 1000)))


def enqueue_poll(
    queue: MessageQueue, job_id: str, attempt: int, delay_ms: float, *, traceparent: str | None = None
) -> Any:
    """Send the poll message for ``attempt``; it becomes visible after ``delay_ms`` (rounded up to seconds).

    ``traceparent``: the job's trace context (its ``Job.trace_parent``), carried so the poll joins its trace."""
    return queue.send_message(
        PollMessage(job_id, attempt, valid_traceparent(traceparent)).to_text(),
        visibility_timeout=visibility_seconds(delay_ms),
        time_to_live=-1,
    )
