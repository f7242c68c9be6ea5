"""What one poll attempt of a job found, and the registry of poll handlers by extractor type.

A poll handler is ``handler(job, config, settings) -> PollOutcome``:

- ``job`` is the ``shared.orchestration.jobs.Job`` being polled (ids, source file, run id, attempt number),
- ``config`` is its validated ``shared.orchestration.registration.ExtractorConfig`` (extra registration fields are
  kept on it, ``config.model_extra``),
- ``settings`` is the ``OrchestrationSettings``.

It must not raise for anything the extractor does (an exception is logged and counted as a Processing attempt), and
it must not touch the job's state: the poll loop owns state, attempts, backoff, result storage and events.

DOCSAI and DBRICKS register here from ``shared.orchestration.clients``. The LOOM handler lives in
``shared.loom.job`` (or ``shared.loom_job``) and registers itself on import::

    from shared.orchestration.outcomes import register_poll_handler
    register_poll_handler("LOOM", run_loom_attempt)

The poll loop imports that module the first time it needs a "LOOM" handler that is not registered yet.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from shared.orchestration.jobs import Job
    from shared.orchestration.registration import ExtractorConfig
    from shared.orchestration.settings import OrchestrationSettings


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


PollHandler = Callable[["Job", "ExtractorConfig", "OrchestrationSettings"], PollOutcome]

POLL_HANDLERS: dict[str, PollHandler] = {}
"""Poll handlers by extractorType ("DOCSAI", "DBRICKS", "LOOM")."""

_lock = threading.Lock()

# Modules that register a handler when imported, by extractor type (the first that exists is imported).
HANDLER_MODULES: dict[str, tuple[str, ...]] = {
    "DOCSAI": ("shared.orchestration.clients",),
    "DBRICKS": ("shared.orchestration.clients",),
    "LOOM": ("shared.loom.job", "shared.loom_job"),
}


def register_poll_handler(extractor_type: str, handler: PollHandler) -> None:
    with _lock:
        POLL_HANDLERS[extractor_type.upper()] = handler


def poll_handler_for(extractor_type: str) -> PollHandler | None:
    """The registered handler, importing the module that registers it the first time; None if there is none."""
    key = extractor_type.upper()
    handler = POLL_HANDLERS.get(key)
    if handler is None:
        import importlib

        for module in HANDLER_MODULES.get(key, ()):
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as exc:
                if exc.name is None or not module.startswith(exc.name):  # the module exists; an import inside failed
                    raise
                continue
            handler = POLL_HANDLERS.get(key)
            if handler is not None:
                break
    return handler
