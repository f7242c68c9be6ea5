"""shared/tracing.py on its own, and the extractor service continuing a caller's trace (no storage needed).

Spans go to an SDK provider with an in-memory exporter; the distro is never configured here (``from_env`` is given
its own ``configure``), so nothing is exported anywhere.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from starlette.testclient import TestClient

from extract_fn.app import create_app
from extract_fn.settings import Settings
from shared.tracing import (
    CONNECTION_STRING_SETTING,
    DISABLED_INSTRUMENTATIONS,
    JobIdFilter,
    Tracing,
    current_job_id,
    url_origin,
    valid_traceparent,
)

TOKEN = "tracing-test-token-Qx81"
CALLER = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


@pytest.fixture
def memory() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider, exporter
    provider.shutdown()


def test_tracing_is_off_without_the_connection_string_and_configures_once_with_it(
    memory: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = memory
    calls: list[Mapping[str, str]] = []

    def configure(env: Mapping[str, str]) -> TracerProvider:
        calls.append(env)
        return provider

    off = Tracing.from_env({CONNECTION_STRING_SETTING: "  "}, configure=configure)
    assert not off.enabled
    assert calls == []
    with off.span("loom.accept", job_id="job-1"):
        assert off.traceparent() is None  # nothing to store or send
        assert off.headers() == {}
    env = {CONNECTION_STRING_SETTING: "InstrumentationKey=00000000-0000-0000-0000-000000000000"}
    on = Tracing.from_env(env, configure=configure)
    assert on.enabled
    assert calls == [env]
    with on.span("loom.accept", job_id="job-1"):
        assert valid_traceparent(on.traceparent()) is not None
    assert [s.name for s in exporter.get_finished_spans()] == ["loom.accept"]


def test_the_instrumentations_turned_off_are_ones_the_distro_knows() -> None:
    """A name the distro does not know would be ignored silently, leaving that instrumentation on."""
    from azure.monitor.opentelemetry._constants import _ALL_SUPPORTED_INSTRUMENTED_LIBRARIES

    assert set(DISABLED_INSTRUMENTATIONS) <= set(_ALL_SUPPORTED_INSTRUMENTED_LIBRARIES)
    assert "azure_sdk" not in DISABLED_INSTRUMENTATIONS  # storage calls stay visible (azure-core redacts queries)


def test_a_jobs_spans_nest_within_a_run_and_continue_its_stored_trace_elsewhere(
    memory: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = memory
    tracing = Tracing(provider)
    with tracing.span("loom.accept", job_id="job-1") as accept:
        stored = tracing.traceparent()
        with tracing.span("loom.submit", job_id="job-1", traceparent="ignored: nested"):
            assert current_job_id() == "job-1"
    assert current_job_id() is None
    with tracing.span("functions.invocation") as invocation:  # another trace is current (the host's invocation)
        with tracing.span("loom.poll", job_id="job-1", traceparent=stored) as poll:
            pass
        with tracing.span("loom.poll", job_id="job-2") as other:  # a job with no stored trace: a new one
            pass
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert spans["loom.submit"].parent is not None
    assert spans["loom.submit"].parent.span_id == accept.get_span_context().span_id
    finished_poll = [s for s in exporter.get_finished_spans() if s.context.span_id == poll.get_span_context().span_id]
    [p] = finished_poll
    assert p.context.trace_id == accept.get_span_context().trace_id
    assert p.parent is not None
    assert p.parent.span_id == accept.get_span_context().span_id
    assert [link.context.span_id for link in p.links] == [invocation.get_span_context().span_id]
    assert other.get_span_context().trace_id not in (
        accept.get_span_context().trace_id,
        invocation.get_span_context().trace_id,
    )


def test_an_exception_fails_the_span_by_type_name_only(memory: tuple[TracerProvider, InMemorySpanExporter]) -> None:
    provider, exporter = memory
    tracing = Tracing(provider)
    with pytest.raises(RuntimeError), tracing.span("loom.poll", job_id="job-1"):
        raise RuntimeError("https://acct.blob.core.windows.net/c/b?sig=SECRETSIG")
    [span] = exporter.get_finished_spans()
    assert span.status.status_code == StatusCode.ERROR
    assert "SECRETSIG" not in span.to_json()
    assert span.events == ()


def test_url_origin_drops_credentials_path_and_query() -> None:
    assert url_origin("https://user:pw@acct.blob.core.windows.net:8443/c/b.pdf?sv=1&sig=abc#x") == (
        "https://acct.blob.core.windows.net:8443"
    )
    assert url_origin("http://[::1]:8790/v1") == "http://[::1]:8790"
    assert url_origin("not a url") is None
    assert url_origin(None) is None


def test_log_records_in_a_jobs_span_carry_its_id(
    memory: tuple[TracerProvider, InMemorySpanExporter], caplog: pytest.LogCaptureFixture
) -> None:
    tracing = Tracing(memory[0])
    caplog.handler.addFilter(JobIdFilter())
    caplog.set_level(logging.INFO)
    log = logging.getLogger("shared.test_tracing")
    with tracing.span("loom.poll", job_id="job-7"):
        log.info("inside")
    log.info("outside")
    assert [(r.getMessage(), getattr(r, "jobId", "missing")) for r in caplog.records] == [
        ("inside", "job-7"),
        ("outside", "missing"),
    ]


# ---------------------------------------------------------------------------------------------------------------
# The extractor service


def _client(provider: TracerProvider) -> TestClient:
    settings = Settings.from_env({"EXTRACTOR_TOKENS": TOKEN, "EXTRACTOR_WORKERS": "1"})
    return TestClient(create_app(settings, tracing=Tracing(provider)))


def test_the_extractor_service_continues_the_callers_traceparent(
    memory: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    provider, exporter = memory
    body = b"plain text CONTENT-MARKER-aa11\n"
    with _client(provider) as client:
        answer = client.post(
            "/v1/extract?format=text&name=notes.txt",
            content=body,
            headers={"Authorization": f"Bearer {TOKEN}", "traceparent": CALLER, "Content-Type": "text/plain"},
        )
        assert answer.status_code == 200
        refused = client.post(
            "/v1/extract?format=nonsense-" + "x" * 100,
            content=b"x",
            headers={"Authorization": f"Bearer {TOKEN}", "traceparent": "garbage"},
        )
        assert refused.status_code >= 400
    first, second = exporter.get_finished_spans()
    assert first.name == "loom.extractor.extract"
    assert first.kind == SpanKind.SERVER
    assert f"{first.context.trace_id:032x}" == CALLER.split("-")[1]
    assert first.parent is not None
    assert f"{first.parent.span_id:016x}" == CALLER.split("-")[2]
    assert first.attributes is not None
    assert first.attributes["loom.file.format"] == "text"
    assert first.attributes["http.request.body.size"] == len(body)
    assert first.attributes["http.response.status_code"] == 200
    assert first.attributes["http.response.body.size"] == len(answer.content)
    # A traceparent that is not one starts a trace of its own; a format that is not one is not recorded as sent.
    assert second.parent is None
    assert second.attributes is not None
    assert second.attributes["loom.file.format"] == "other"
    assert second.status.status_code == StatusCode.ERROR
    for span in (first, second):
        text = span.to_json()
        assert TOKEN not in text
        assert "CONTENT-MARKER-aa11" not in text
        assert "x" * 100 not in text


@pytest.mark.parametrize(
    ("header", "expected"),
    [("1234", 1234), (" 12 ", 12), (None, None), ("", None), ("-1", None), ("²", None), ("9" * 5000, None)],
)
def test_a_span_records_only_a_plain_byte_count_from_a_header(header: str | None, expected: int | None) -> None:
    """A caller's Content-Length reaches a span attribute only as 1-18 ASCII digits: "²" passes ``isdigit`` and
    5,000 digits make ``int`` raise; neither may turn an extraction into an error."""
    from extract_fn.app import _int_or_none

    assert _int_or_none(header) == expected
