"""One trace per accepted file: OpenTelemetry spans for the orchestration and the extractor service.

``Tracing`` wraps one OpenTelemetry tracer. It is built once by an adapter (``Tracing.from_env``: the Azure Monitor
distro when ``APPLICATIONINSIGHTS_CONNECTION_STRING`` is set, a no-op tracer otherwise) and handed down through the
composition root (``Deps.tracing``, ``create_app(tracing=...)``); a test hands in an SDK ``TracerProvider`` with an
in-memory exporter. Nothing here is a mutable module global.

A job's trace context is W3C ``traceparent`` text: the accept span's, stored in the job row (``TraceParent``) and
carried by every poll message (``traceparent``), so every later span of the job (each poll, result handling, each
status event, the LOOM extract call and the extractor service's request) joins the same trace, whichever worker or
process runs it. ``span(name, job_id=..., traceparent=...)`` decides the parent:

- inside a span of the same job: that span (nesting within one handler run);
- else the given ``traceparent`` (the job's trace, or an incoming request's);
- else, for a job's span, a new trace (a job created before tracing, or with tracing off); else the current span.

A span that starts a new trace or continues a stored one while some other span is current (the Functions host's
invocation span) keeps a link to it. Attributes are the caller's plain facts (ids, kinds, formats, sizes, outcomes);
``url_origin`` gives a URL without its path, query (a SAS) or credentials. A span records an exception by its type
name only (a message might carry a URL). While a job's span is current, ``JobIdFilter`` puts its ``jobId`` on every
log record.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from typing import Final
from urllib.parse import urlsplit

from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Link, NoOpTracerProvider, Span, SpanKind, Status, StatusCode, TracerProvider
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from shared.settings_spec import Setting, optional_text, read

CONNECTION_STRING_SETTING: Final = "APPLICATIONINSIGHTS_CONNECTION_STRING"
# Microsoft's setting for Python function apps: the Functions worker configures the distro itself (then we must not).
WORKER_TELEMETRY_SETTING: Final = "PYTHON_APPLICATIONINSIGHTS_ENABLE_TELEMETRY"


def _worker_flag(raw: str) -> bool:
    return raw.lower() == "true"  # as the Functions Python worker reads it: anything else is off


_NO_TEXT: Final[str | None] = None
CONNECTION_STRING: Final = Setting(
    CONNECTION_STRING_SETTING, _NO_TEXT, optional_text, "Application Insights: tracing on when set", secret=True
)
WORKER_TELEMETRY: Final = Setting(
    WORKER_TELEMETRY_SETTING, False, _worker_flag, "the Functions Python worker configures the distro"
)
DECLARATIONS: Final = (CONNECTION_STRING, WORKER_TELEMETRY)
TRACER_NAME: Final = "loom"
TRACEPARENT: Final = "traceparent"
_TRACEPARENT_RE: Final = re.compile(r"^[0-9a-f]{2}-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$")
# The distro's instrumentations of HTTP libraries this app does not use for its calls (the transport is urllib3
# connections of its own, spanned here) stay off: nothing records a URL we did not clean.
DISABLED_INSTRUMENTATIONS: Final = (
    "requests",
    "urllib",
    "urllib3",
    "httpx",
    "httpx2",
    "django",
    "flask",
    "fastapi",
    "psycopg2",
)

AttributeValue = str | int | float | bool
Attributes = Mapping[str, AttributeValue | None]

_PROPAGATOR: Final = TraceContextTextMapPropagator()
_CURRENT_JOB: ContextVar[str | None] = ContextVar("loom_current_job", default=None)


def valid_traceparent(value: object) -> str | None:
    """``value`` if it is W3C traceparent text of version 00 with non-zero ids, else None (never an error)."""
    if not isinstance(value, str) or not _TRACEPARENT_RE.match(value):
        return None
    _, trace_id, span_id, _ = value.split("-")
    if value.startswith("ff") or set(trace_id) == {"0"} or set(span_id) == {"0"}:
        return None
    return value


def url_origin(url: str | None) -> str | None:
    """``scheme://host[:port]`` of a URL: no credentials, path, query string (a SAS signature) or fragment."""
    if not url:
        return None
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port
    except ValueError:
        return None
    if not parts.scheme or not host:
        return None
    shown = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{shown}" + (f":{port}" if port else "")


def current_job_id() -> str | None:
    """The job whose span is current in this thread or task (None outside one)."""
    return _CURRENT_JOB.get()


class JobIdFilter(logging.Filter):
    """Puts ``jobId`` on each record written while a job's span is current, so exported logs carry it as a dimension
    (a record outside any job gets none: an attribute without a value is not exported)."""

    def filter(self, record: logging.LogRecord) -> bool:
        job_id = _CURRENT_JOB.get()
        if job_id is not None and not hasattr(record, "jobId"):
            record.jobId = job_id
        return True


def install_job_id_filter(logger: logging.Logger | None = None) -> None:
    """Add ``JobIdFilter`` to every handler of ``logger`` (the root logger by default) that lacks one."""
    for handler in (logger or logging.getLogger()).handlers:
        if not any(isinstance(f, JobIdFilter) for f in handler.filters):
            handler.addFilter(JobIdFilter())


class Tracing:
    """The spans of the orchestration and the extractor service, on one tracer (no-op unless a provider is given)."""

    def __init__(self, provider: TracerProvider | None = None) -> None:
        self.enabled = provider is not None and not isinstance(provider, NoOpTracerProvider)
        self._tracer = (provider or NoOpTracerProvider()).get_tracer(TRACER_NAME)

    @classmethod
    def off(cls) -> Tracing:
        return cls(None)

    @classmethod
    def from_env(
        cls, env: Mapping[str, str], *, configure: Callable[[Mapping[str, str]], TracerProvider] | None = None
    ) -> Tracing:
        """On (the Azure Monitor distro, configured once per process) when the connection string is set, else off.

        ``configure``: what sets the exporting provider up (the distro by default; a test's own to see the call)."""
        if read(DECLARATIONS, env)[CONNECTION_STRING_SETTING] is None:
            return cls.off()
        return cls((configure or configure_distro)(env))

    # -- spans -------------------------------------------------------------------------------------------------

    def start(
        self,
        name: str,
        *,
        job_id: str | None = None,
        traceparent: str | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes | None = None,
    ) -> Span:
        """A started span that is not made current (the caller ends it); parent as the module docstring says."""
        parent_ctx, links = self._parent(job_id, traceparent)
        span = self._tracer.start_span(name, context=parent_ctx, kind=kind, links=links)
        set_attributes(span, {"loom.job.id": job_id, **(attributes or {})})
        return span

    @contextlib.contextmanager
    def span(
        self,
        name: str,
        *,
        job_id: str | None = None,
        traceparent: str | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: Attributes | None = None,
    ) -> Iterator[Span]:
        """A current span for the ``with`` block; an exception marks it failed (by type name) and goes on."""
        span = self.start(name, job_id=job_id, traceparent=traceparent, kind=kind, attributes=attributes)
        token = _CURRENT_JOB.set(job_id) if job_id is not None else None
        try:
            with trace.use_span(span, end_on_exit=True, record_exception=False, set_status_on_exception=False):
                try:
                    yield span
                except BaseException as exc:
                    fail(span, type(exc).__name__)
                    raise
        finally:
            if token is not None:
                _CURRENT_JOB.reset(token)

    def traceparent(self) -> str | None:
        """The current span's context as traceparent text (None when no span is recording: tracing off)."""
        return self.headers().get(TRACEPARENT)

    def headers(self) -> dict[str, str]:
        """W3C trace context headers of the current span, for an outgoing request (empty when tracing is off)."""
        carrier: dict[str, str] = {}
        if self.enabled and trace.get_current_span().get_span_context().is_valid:
            _PROPAGATOR.inject(carrier)
        return carrier

    def _parent(self, job_id: str | None, traceparent: str | None) -> tuple[otel_context.Context, list[Link]]:
        current = trace.get_current_span().get_span_context()
        if job_id is not None and _CURRENT_JOB.get() == job_id:
            return otel_context.get_current(), []
        links = [Link(current)] if current.is_valid else []
        valid = valid_traceparent(traceparent)
        if valid is not None:
            return _PROPAGATOR.extract({TRACEPARENT: valid}, context=otel_context.Context()), links
        if job_id is not None:
            return otel_context.Context(), links  # a job with no stored trace: its own, new trace
        return otel_context.get_current(), []


def set_attributes(span: Span, attributes: Attributes) -> None:
    """Set the attributes that have a value."""
    for key, value in attributes.items():
        if value is not None:
            span.set_attribute(key, value)


def fail(span: Span, what: str) -> None:
    """Mark ``span`` failed; ``what`` is a short description (an exception's type name, an error code)."""
    span.set_status(Status(StatusCode.ERROR, what[:200]))
    span.set_attribute("error.type", what[:200])


_CONFIGURE_LOCK: Final = threading.Lock()
_CONFIGURED: dict[str, TracerProvider] = {}  # the process's one exporting provider, once configured


def configure_distro(env: Mapping[str, str]) -> TracerProvider:
    """Set the Azure Monitor distro up once per process and return the tracer provider it installed.

    In a function app with ``PYTHON_APPLICATIONINSIGHTS_ENABLE_TELEMETRY=true`` the Python worker has configured the
    distro already (Microsoft's documented setup): its provider is used and nothing is configured twice."""
    values = read(DECLARATIONS, env)
    with _CONFIGURE_LOCK:
        if "provider" not in _CONFIGURED:
            if not values[WORKER_TELEMETRY_SETTING]:
                from azure.monitor.opentelemetry import configure_azure_monitor

                configure_azure_monitor(
                    connection_string=values[CONNECTION_STRING_SETTING],
                    instrumentation_options={name: {"enabled": False} for name in DISABLED_INSTRUMENTATIONS},
                )
            _CONFIGURED["provider"] = trace.get_tracer_provider()
            install_job_id_filter()
        return _CONFIGURED["provider"]
