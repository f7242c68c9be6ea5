"""One protocol for every extractor kind: submit, poll, result.

The composition root (``shared.orchestration.composition``) builds one client per ``ExtractorType`` from the
settings and hands them to the handlers in ``Deps.extractors``; the handlers look the job's kind up there and never
compare kind strings. The implementations: ``clients.DocsaiClient``, ``clients.DbricksClient`` (HTTP submission and
polling, as the extractor-service spec shows) and ``shared.loom.job.LoomExtractorClient`` (extractor contract v1:
nothing is submitted, each poll attempt is one extract call).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from shared.orchestration.extractor_type import ExtractorType

if TYPE_CHECKING:
    from shared.orchestration.jobs import Job
    from shared.orchestration.outcomes import PollOutcome
    from shared.orchestration.registration import ExtractorConfig


class SubmissionError(Exception):
    """The submission failed; ``reason`` goes on the Failed job (never a token)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Submitted:
    """A submission the extractor took: its run id, the answer's status code, how many attempts it needed."""

    run_id: str
    status_code: int
    attempts: int


@dataclass(frozen=True, slots=True)
class StoredResult:
    """Where a succeeded job's result went: the result blob's URL and/or the URLs ingested (DBRICKS)."""

    location: str | None = None
    urls: tuple[str, ...] = ()


class ExtractorClient(Protocol):
    """What the handlers need of one extractor kind. None of it touches the job's state: the handlers own state,
    attempts, backoff and events."""

    @property
    def kind(self) -> ExtractorType:
        """The ``extractorType`` this client serves."""
        ...

    @property
    def submits(self) -> bool:
        """True: a job is submitted (``submit``) before it is polled. False (LOOM): the job is created polling and its
        first poll attempt does the work."""
        ...

    def submit(self, job: Job, config: ExtractorConfig) -> Submitted:
        """Send the job to the extractor; raise ``SubmissionError`` when it was not taken."""
        ...

    def poll(self, job: Job, config: ExtractorConfig) -> PollOutcome:
        """One poll attempt. Never raises for anything the extractor does (an exception counts as Processing); may
        raise ``results.ResultError`` for a result that could not be had."""
        ...

    def result(self, job: Job, outcome: PollOutcome) -> StoredResult:
        """Store (or ingest) a Succeeded outcome's result; raise ``results.ResultError`` when it cannot be."""
        ...
