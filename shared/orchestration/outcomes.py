"""What one poll attempt of a job found: ``PollOutcome``.

Every ``ExtractorClient.poll`` (``shared.orchestration.extractor_client``) returns one. It must not raise for
anything the extractor does (an exception is logged and counted as a Processing attempt), and it must not touch the
job's state: the poll loop owns state, attempts, backoff, result storage and events.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any


class PollStatus(enum.StrEnum):
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    PROCESSING = "Processing"


@dataclass(frozen=True, slots=True)
class PollOutcome:
    """The outcome of one poll attempt.

    - ``SUCCEEDED``: ``result`` holds the result document's bytes, stored by the poll loop as
      ``results/<clientApplicationId>/<fileId>/<jobId>/result.json``; or, for DBRICKS, ``result_urls`` lists the
      ``tasks[].result_url`` values whose blobs the poll loop sends to Palantir ingestion (``result`` is then None).
    - ``FAILED``: the run failed for good; ``reason`` says why (shown in the Failed event; never a secret).
    - ``PROCESSING``: not finished (or the poll request failed); the loop schedules the next attempt with backoff.
      ``reason`` may say why (for example the polling request error).

    ``extractor_status`` is the status string the extractor reported, for logs and events.
    """

    status: PollStatus
    result: bytes | None = None
    reason: str = ""
    result_urls: tuple[str, ...] = ()
    extractor_status: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def succeeded(cls, result: bytes | None = None, *, result_urls: tuple[str, ...] = (), **kw: Any) -> PollOutcome:
        return cls(PollStatus.SUCCEEDED, result=result, result_urls=result_urls, **kw)

    @classmethod
    def failed(cls, reason: str, **kw: Any) -> PollOutcome:
        return cls(PollStatus.FAILED, reason=reason, **kw)

    @classmethod
    def processing(cls, reason: str = "", **kw: Any) -> PollOutcome:
        return cls(PollStatus.PROCESSING, reason=reason, **kw)
