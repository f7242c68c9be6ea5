"""The parts the handlers run on, built from settings: ``Deps``.

Function adapters call ``get_deps()`` (built from ``os.environ`` at first invocation, then reused); tests and the
local dev host call ``build_deps(settings)`` with their own settings (and may pass a publisher or a clock).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from azure.core.exceptions import AzureError, ResourceExistsError
from azure.storage.queue import QueueClient

from shared.orchestration.jobs import JobStore, utcnow
from shared.orchestration.registration import RegistrationResolver
from shared.orchestration.settings import OrchestrationSettings, get_settings
from shared.orchestration.status import StatusPublisher, build_publisher
from shared.orchestration.storage import blob_service, queue_service, table_service

log = logging.getLogger(__name__)


@dataclass
class Deps:
    settings: OrchestrationSettings
    store: JobStore
    poll_queue: QueueClient
    publisher: StatusPublisher
    registration: RegistrationResolver
    clock: Callable[[], datetime] = utcnow
    sleep: Callable[[float], None] = time.sleep

    def now(self) -> datetime:
        return self.clock()


def ensure_resources(settings: OrchestrationSettings) -> None:
    """Create the table, queues and containers if absent (idempotent; the infrastructure creates them in Azure).

    A resource that cannot be created (no right to create it, say) is logged, not fatal: the first real use of it
    reports the problem."""
    steps: list[tuple[str, Callable[[], object]]] = [
        (f"table {settings.jobs_table}", lambda: table_service(settings).create_table(settings.jobs_table))
    ]
    queues = [settings.poll_queue, settings.cancel_queue]
    if not settings.uses_event_hub:
        queues.append(settings.status_local_queue)
    for q in queues:
        steps.append((f"queue {q}", lambda q=q: queue_service(settings).create_queue(q)))  # type: ignore[misc]
    for c in (settings.results_container, settings.poison_container):
        steps.append((f"container {c}", lambda c=c: blob_service(settings).create_container(c)))  # type: ignore[misc]
    for what, create in steps:
        try:
            create()
        except ResourceExistsError:
            pass
        except AzureError as exc:
            log.warning("could not create %s (%s); expecting the infrastructure to have created it", what, exc)


def build_deps(
    settings: OrchestrationSettings,
    *,
    publisher: StatusPublisher | None = None,
    clock: Callable[[], datetime] = utcnow,
    sleep: Callable[[float], None] = time.sleep,
    ensure: bool = True,
) -> Deps:
    if ensure:
        ensure_resources(settings)
    store = JobStore(table_service(settings).get_table_client(settings.jobs_table), clock)
    return Deps(
        settings=settings,
        store=store,
        poll_queue=queue_service(settings).get_queue_client(settings.poll_queue),
        publisher=publisher or build_publisher(settings),
        registration=RegistrationResolver(settings, sleep=sleep),
        clock=clock,
        sleep=sleep,
    )


_deps: Deps | None = None
_lock = threading.Lock()


def get_deps() -> Deps:
    """The process's ``Deps`` from ``os.environ``, created at first use (settings are validated then)."""
    global _deps  # noqa: PLW0603 - one set of clients per worker process
    with _lock:
        if _deps is None:
            _deps = build_deps(get_settings())
        return _deps
