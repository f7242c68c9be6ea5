"""The composition root: the one place the orchestration's parts are built from settings and wired together.

``build_deps(settings)`` makes the storage clients, the one outbound transport (``shared.outbound.Outbound``), the
status publisher, the registration resolver and one ``ExtractorClient`` per ``ExtractorType``, and returns them as
``Deps``. ``LazyDeps`` builds them at the first invocation, from the environment, and keeps them for the process.
Only the adapters call this module (``function_app.py`` hands a ``LazyDeps`` to the blueprints of ``submit_fn`` and
``poll_fn``; the devhost, the tests and the benchmarks build their own): the domain never imports it, and nothing
registers itself anywhere by being imported.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime

from azure.core.exceptions import AzureError, ResourceExistsError

from shared.loom.job import LoomExtractorClient
from shared.orchestration.clients import DbricksClient, DocsaiClient
from shared.orchestration.deps import Deps
from shared.orchestration.extractor_client import ExtractorClient
from shared.orchestration.extractor_type import ExtractorType
from shared.orchestration.jobs import JobStore, utcnow
from shared.orchestration.registration import RegistrationResolver
from shared.orchestration.settings import OrchestrationSettings
from shared.orchestration.status import StatusPublisher, build_publisher
from shared.orchestration.storage import blob_service, queue_service, table_service
from shared.outbound import Outbound
from shared.tracing import Tracing

log = logging.getLogger(__name__)


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


def build_extractors(
    settings: OrchestrationSettings,
    outbound: Outbound,
    *,
    sleep: Callable[[float], None] = time.sleep,
    tracing: Tracing | None = None,
) -> dict[ExtractorType, ExtractorClient]:
    """One client per extractor kind, all on the same outbound transport (LOOM's extract call is spanned)."""
    clients: tuple[ExtractorClient, ...] = (
        DocsaiClient(settings, outbound, sleep=sleep),
        DbricksClient(settings, outbound, sleep=sleep),
        LoomExtractorClient(settings, outbound, tracing=tracing),
    )
    wired = {client.kind: client for client in clients}
    missing = set(ExtractorType) - set(wired)
    if missing:  # a kind added to the enum without its client
        raise RuntimeError(f"no extractor client for {', '.join(sorted(missing))}")
    return wired


def build_deps(
    settings: OrchestrationSettings,
    *,
    publisher: StatusPublisher | None = None,
    clock: Callable[[], datetime] = utcnow,
    sleep: Callable[[float], None] = time.sleep,
    ensure: bool = True,
    extractors: Mapping[ExtractorType, ExtractorClient] | None = None,
    tracing: Tracing | None = None,
) -> Deps:
    """Everything the handlers run on, from ``settings`` (``publisher``, ``extractors``: given parts instead;
    ``tracing``: the spans' tracer, off by default)."""
    if ensure:
        ensure_resources(settings)
    tracing = tracing or Tracing.off()
    outbound = settings.outbound()  # the one transport of every outbound call the orchestration makes
    return Deps(
        settings=settings,
        store=JobStore(table_service(settings).get_table_client(settings.jobs_table), clock),
        poll_queue=queue_service(settings).get_queue_client(settings.poll_queue),
        publisher=publisher or build_publisher(settings),
        registration=RegistrationResolver(settings, sleep=sleep, outbound=outbound),
        extractors=(
            dict(extractors)
            if extractors is not None
            else build_extractors(settings, outbound, sleep=sleep, tracing=tracing)
        ),
        clock=clock,
        sleep=sleep,
        tracing=tracing,
    )


class LazyDeps:
    """``Deps`` built at the first call (so a function app imports and indexes without any setting), then kept.

    ``LazyDeps.from_env(os.environ)`` reads and validates the settings at that first call; an invalid setting raises
    ``SettingsError`` naming each bad one, and the next invocation tries again."""

    def __init__(self, build: Callable[[], Deps]) -> None:
        self._build = build
        self._deps: Deps | None = None
        self._lock = threading.Lock()

    @classmethod
    def from_env(cls, env: Mapping[str, str], *, tracing: Tracing | None = None) -> LazyDeps:
        return cls(lambda: build_deps(OrchestrationSettings.from_env(env), tracing=tracing))

    @property
    def built(self) -> bool:
        return self._deps is not None

    def __call__(self) -> Deps:
        with self._lock:
            if self._deps is None:
                self._deps = self._build()
            return self._deps
