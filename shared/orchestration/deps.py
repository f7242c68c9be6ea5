"""``Deps``: what the handlers run on, handed to every handler call by the composition root.

Built only by ``shared.orchestration.composition.build_deps`` (the adapters, the devhost, the tests and the
benchmarks call that); the domain reads it and never builds a client itself. Every field is a protocol or a plain
object, so a test can hand in its own part (a publisher, a clock, an extractor client).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime

from shared.orchestration.extractor_client import ExtractorClient
from shared.orchestration.extractor_type import ExtractorType
from shared.orchestration.jobs import JobStore, utcnow
from shared.orchestration.registration import RegistrationResolver
from shared.orchestration.settings import OrchestrationSettings
from shared.orchestration.status import StatusPublisher
from shared.orchestration.storage_protocols import MessageQueue
from shared.tracing import Tracing


@dataclass
class Deps:
    settings: OrchestrationSettings
    store: JobStore
    poll_queue: MessageQueue
    publisher: StatusPublisher
    registration: RegistrationResolver
    extractors: Mapping[ExtractorType, ExtractorClient]
    clock: Callable[[], datetime] = utcnow
    sleep: Callable[[float], None] = time.sleep
    tracing: Tracing = field(default_factory=Tracing.off)

    def now(self) -> datetime:
        return self.clock()

    def extractor(self, kind: ExtractorType | None) -> ExtractorClient | None:
        """The client of an extractor kind; None for a job with no (or an unknown) kind."""
        return self.extractors.get(kind) if kind is not None else None
