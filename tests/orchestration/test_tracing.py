"""One trace per accepted file: DOCSAI, DBRICKS and LOOM jobs from the accepted event to the stored result.

The orchestration runs on Azurite with the suite's real local HTTP fakes (tests/orchestration/conftest.py); the LOOM
job goes to the reference extractor service itself (extract_fn's app under a real uvicorn on a loopback socket), so
the ``traceparent`` the LOOM client sends is continued by the service. Spans go to an SDK ``TracerProvider`` with an
in-memory exporter handed in through the composition root: nothing is exported anywhere. Every attribute of every
span is scanned for the tokens, the SAS signature and the file content the test used.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Iterator
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest
import uvicorn
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from extract_fn.app import create_app
from extract_fn.settings import Settings
from shared.orchestration.composition import build_deps
from shared.orchestration.jobs import JobState
from shared.orchestration.outcomes import PollOutcome
from shared.orchestration.poll import Action, handle_poll_message
from shared.orchestration.scheduling import PollMessage
from shared.orchestration.submit import Outcome, handle_accepted_events
from shared.tracing import JobIdFilter, Tracing
from tests.orchestration.conftest import DBRICKS_TOKEN, DOCSAI_TOKEN, PALANTIR_TOKEN, Orch, Reply
from tests.orchestration.test_transaction_budget import LOOM_JOB_BUDGET, _count_table_requests
from tests.waiting import wait_until

LOOM_TOKEN = "loom-extractor-secret-token-value"
PDF_CONTENT = b"%PDF-1.7 trace-test CONTENT-MARKER-7f3a"
MARKDOWN_CONTENT = b"# Quarterly report\n\nThe body says CONTENT-MARKER-91c2 and nothing else.\n"


class Spans:
    """An SDK tracer provider whose finished spans stay in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracing = Tracing(self.provider)

    def finished(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.finished() if s.name == name]


@pytest.fixture
def spans() -> Iterator[Spans]:
    made = Spans()
    yield made
    made.provider.shutdown()


def traced(orch: Orch, spans: Spans) -> Orch:
    """The orchestration's parts again, with tracing on (as the Functions adapter builds them)."""
    orch.deps = build_deps(orch.settings, clock=orch.clock, tracing=spans.tracing)
    return orch


# ---------------------------------------------------------------------------------------------------------------
# What every traced job must show


def assert_one_trace(spans: Spans, orch: Orch, job_id: str) -> ReadableSpan:
    """Every span is in one trace rooted at the job's accept span, each one's parent in it; returns the root."""
    finished = spans.finished()
    assert finished, "no spans"
    trace_ids = {s.context.trace_id for s in finished}
    assert len(trace_ids) == 1, [(s.name, hex(s.context.trace_id)) for s in finished]
    roots = [s for s in finished if s.parent is None]
    assert [r.name for r in roots] == ["loom.accept"]
    [root] = roots
    ids = {s.context.span_id for s in finished}
    for s in finished:
        assert s.parent is None or s.parent.span_id in ids, f"{s.name}'s parent is not in the trace"
    for s in finished:
        if s.name.startswith("loom.") and s.name not in ("loom.extract", "loom.extractor.extract"):
            assert s.attributes is not None
            assert s.attributes.get("loom.job.id") == job_id, s.name
    # The job row holds the accept span's context: what any later worker continues.
    job = orch.deps.store.get(job_id)
    assert job is not None
    assert job.trace_parent is not None
    assert job.trace_parent.startswith(f"00-{root.context.trace_id:032x}-{root.context.span_id:016x}-")
    return root


def assert_no_secret(spans: Spans, secrets: list[str]) -> None:
    """No attribute of any span (nor its name, status, events or links) holds a secret; no URL keeps its query."""
    assert all(secrets), "an empty secret would match everything"
    for s in spans.finished():
        text = s.to_json()
        for secret in secrets:
            assert secret not in text, f"{s.name} holds a secret"
        for key, value in (s.attributes or {}).items():
            for item in value if isinstance(value, tuple) else (value,):
                if isinstance(item, str) and "://" in item:
                    assert "?" not in item, f"{s.name}.{key} holds a URL's query"


def status_event_spans(spans: Spans) -> list[tuple[str, str, int]]:
    found = []
    for s in spans.named("loom.status_event"):
        a = s.attributes or {}
        found.append((str(a["loom.event.type"]), str(a["loom.event.status"]), int(str(a["loom.event.sequence"]))))
    return sorted(found, key=lambda t: t[2])


def published(orch: Orch, job_id: str) -> list[tuple[str, str, int]]:
    return [(e["eventType"], e["status"], e["sequence"]) for e in orch.events_of(job_id)]


def connection_secrets(orch: Orch) -> list[str]:
    key = dict(p.split("=", 1) for p in orch.connection_string.split(";") if "=" in p).get("AccountKey")
    return [key] if key else []


# ---------------------------------------------------------------------------------------------------------------
# DOCSAI, DBRICKS, LOOM


def test_a_docsai_job_is_one_trace_from_accept_to_stored_result(orch: Orch, spans: Spans) -> None:
    traced(orch, spans)
    orch.register("app-1", orch.docsai_config())
    source = orch.upload_source("app-1/traced.pdf", PDF_CONTENT)
    orch.docsai.poll_script["1001"] = [
        Reply(200, {"Status": "processing"}),
        Reply(200, {"Status": "complete", "Payload": {"fields": {"total": 42}}}),
    ]
    [outcome] = handle_accepted_events([orjson.dumps(orch.event("app-1", fileLocationUrl=source))], orch.deps).outcomes
    assert outcome.outcome == Outcome.CREATED
    job_id = outcome.job_id
    assert job_id is not None
    # The poll message carries the job's trace.
    [msg] = orch.queue(orch.settings.poll_queue).peek_messages()
    created = orch.deps.store.get(job_id)
    assert created is not None
    assert orjson.loads(msg.content)["traceparent"] == created.trace_parent
    assert [r.action for r in orch.drive()] == [Action.RESCHEDULED, Action.SUCCEEDED]

    root = assert_one_trace(spans, orch, job_id)
    assert root.attributes is not None
    assert root.attributes["loom.client_application.id"] == "app-1"
    assert root.attributes["loom.extractor.type"] == "DOCSAI"
    assert root.attributes["loom.file.format"] == "pdf"
    assert root.attributes["loom.outcome"] == Outcome.CREATED
    [submit] = spans.named("loom.submit")
    assert submit.attributes is not None
    assert (submit.attributes["loom.run.id"], submit.attributes["loom.outcome"]) == ("1001", "submitted")
    polls = spans.named("loom.poll")
    assert [(p.attributes or {}).get("loom.outcome") for p in polls] == [Action.RESCHEDULED, Action.SUCCEEDED]
    assert all(p.parent is not None and p.parent.span_id == root.context.span_id for p in polls)
    [result] = spans.named("loom.result")
    assert result.attributes is not None
    assert result.attributes["loom.outcome"] == "stored"
    assert result.attributes["loom.result.size_bytes"] == len(orjson.dumps({"fields": {"total": 42}}))
    # One span per status event, the same events that were published.
    assert status_event_spans(spans) == published(orch, job_id)
    assert status_event_spans(spans)[-1] == ("ExtractedResult", "Succeeded", 5)

    [post] = orch.docsai.posts()
    sas_signature = parse_qs(urlsplit(post.json()["fileUrl"]).query)["sig"][0]
    assert_no_secret(
        spans,
        [DOCSAI_TOKEN, sas_signature, PDF_CONTENT.decode(), "CONTENT-MARKER-7f3a", *connection_secrets(orch)],
    )


def test_a_dbricks_job_with_ingestion_is_one_trace(orch: Orch, spans: Spans) -> None:
    traced(orch, spans)
    orch.register("app-db", orch.dbricks_config(), how="extractors")
    event = orch.event("app-db", filePath=None)
    [outcome] = handle_accepted_events([orjson.dumps(event)], orch.deps).outcomes
    job_id = outcome.job_id
    assert job_id is not None
    prefix = f"app-db/{event['fileId']}/{job_id}"
    results = orch.blobs.get_container_client(orch.settings.results_container)
    results.upload_blob(f"{prefix}/task-0.json", b'{"task": "CONTENT-MARKER-d4e5"}')
    orch.dbricks.poll_script["run-1001"] = [
        Reply(200, {"id": "run-1001", "overall_status": "PROCESSING"}),
        Reply(
            200,
            {
                "id": "run-1001",
                "overall_status": "COMPLETED",
                "tasks": [{"result_url": f"/results/{prefix}/task-0.json"}],
            },
        ),
    ]
    assert [r.action for r in orch.drive()] == [Action.RESCHEDULED, Action.SUCCEEDED]
    assert len(orch.palantir.uploads()) == 1

    root = assert_one_trace(spans, orch, job_id)
    assert root.attributes is not None
    assert root.attributes["loom.extractor.type"] == "DBRICKS"
    assert [s.name for s in spans.finished()].count("loom.poll") == 2
    [result] = spans.named("loom.result")
    assert result.attributes is not None
    assert (result.attributes["loom.outcome"], result.attributes["loom.result.url_count"]) == ("stored", 1)
    assert status_event_spans(spans) == published(orch, job_id)
    assert_no_secret(spans, [DBRICKS_TOKEN, PALANTIR_TOKEN, "CONTENT-MARKER-d4e5", *connection_secrets(orch)])


class LiveExtractor:
    """The reference extractor service (extract_fn's app) under a real uvicorn on a loopback socket, in a thread."""

    def __init__(self, tracing: Tracing) -> None:
        settings = Settings.from_env({"EXTRACTOR_TOKENS": LOOM_TOKEN, "EXTRACTOR_WORKERS": "1"})
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        config = uvicorn.Config(create_app(settings, tracing=tracing), lifespan="on", log_level="warning")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def __enter__(self) -> LiveExtractor:
        self.thread.start()
        wait_until(lambda: self.server.started, 120, "the extractor service started")
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=60)
        self.sock.close()


def test_a_loom_job_is_one_trace_through_the_extractor_service(
    make_orch: Any, spans: Spans, caplog: pytest.LogCaptureFixture
) -> None:
    with LiveExtractor(spans.tracing) as service:
        orch = traced(
            make_orch(LOOM_DOCUMENT_EXTRACTOR_URL=service.url, LOOM_DOCUMENT_EXTRACTOR_TOKEN=LOOM_TOKEN), spans
        )
        orch.register("app-loom", {"extractorType": "LOOM", "extractionUrl": service.url})
        source = orch.upload_source("app-loom/notes.md", MARKDOWN_CONTENT)
        event = orch.event("app-loom", fileLocationUrl=source, fileName="notes.md", contentType="text/markdown")
        caplog.handler.addFilter(JobIdFilter())
        caplog.set_level(logging.INFO)
        [outcome] = handle_accepted_events([orjson.dumps(event)], orch.deps).outcomes
        job_id = outcome.job_id
        assert job_id is not None
        assert [r.action for r in orch.drive()] == [Action.SUCCEEDED]

    job = orch.deps.store.get(job_id)
    assert job is not None
    assert job.state == JobState.SUCCEEDED
    root = assert_one_trace(spans, orch, job_id)
    assert root.attributes is not None
    assert (root.attributes["loom.extractor.type"], root.attributes["loom.file.format"]) == ("LOOM", "markdown")
    [poll] = spans.named("loom.poll")
    [client] = spans.named("loom.extract")
    [server] = spans.named("loom.extractor.extract")
    # The LOOM client's call is in the poll; the service continued the traceparent the client sent.
    assert client.parent is not None
    assert client.parent.span_id == poll.context.span_id
    assert server.parent is not None
    assert server.parent.span_id == client.context.span_id
    assert server.parent.is_remote
    assert client.attributes is not None
    assert server.attributes is not None
    assert client.attributes["loom.outcome"] == "ok"
    assert client.attributes["loom.file.size_bytes"] == len(MARKDOWN_CONTENT)
    assert client.attributes["server.address"] == service.url
    assert (server.attributes["loom.file.format"], server.attributes["http.response.status_code"]) == ("markdown", 200)
    assert server.attributes["http.request.body.size"] == len(MARKDOWN_CONTENT)
    [result] = spans.named("loom.result")
    assert result.attributes is not None
    assert result.attributes["loom.outcome"] == "stored"
    assert status_event_spans(spans) == published(orch, job_id)
    assert_no_secret(spans, [LOOM_TOKEN, "CONTENT-MARKER-91c2", "Quarterly report", *connection_secrets(orch)])
    # Logs carry the job id: the LOOM client's line about the extract call was written inside the job's poll.
    extract_logs = [r for r in caplog.records if r.name == "shared.loom.client" and "loom extract" in r.getMessage()]
    assert extract_logs
    assert {getattr(r, "jobId", None) for r in extract_logs} == {job_id}


def test_each_file_of_a_batch_is_its_own_trace_linked_to_the_invocation(orch: Orch, spans: Spans) -> None:
    traced(orch, spans)
    orch.use_loom(lambda job, config, settings: PollOutcome.succeeded(b'{"artifact": true}'))
    orch.register("app-loom", {"extractorType": "LOOM", "extractionUrl": "http://127.0.0.1:9/v1"})
    bodies = [orjson.dumps(orch.event("app-loom")) for _ in range(3)]
    with spans.tracing.span("functions.invocation") as invocation:  # as the Functions worker's span would be
        outcomes = handle_accepted_events(bodies, orch.deps).outcomes
    assert [o.outcome for o in outcomes] == [Outcome.CREATED] * 3
    accepts = spans.named("loom.accept")
    assert len(accepts) == 3
    assert all(a.parent is None for a in accepts)
    assert len({a.context.trace_id for a in accepts} | {invocation.get_span_context().trace_id}) == 4
    for a in accepts:
        assert [link.context.span_id for link in a.links] == [invocation.get_span_context().span_id]


# ---------------------------------------------------------------------------------------------------------------
# Old messages and rows, the budget, tracing off


def _scripted_loom(orch: Orch) -> None:
    orch.use_loom(lambda job, config, settings: PollOutcome.succeeded(b'{"artifact": true}'))
    orch.register("app-loom", {"extractorType": "LOOM", "extractionUrl": "http://127.0.0.1:9/v1"})


def test_a_poll_message_without_trace_context_joins_the_trace_the_job_row_holds(orch: Orch, spans: Spans) -> None:
    traced(orch, spans)
    _scripted_loom(orch)
    [outcome] = handle_accepted_events([orjson.dumps(orch.event("app-loom"))], orch.deps).outcomes
    job_id = outcome.job_id
    assert job_id is not None
    [sent] = orch.poll_messages()
    assert set(orjson.loads(sent.content)) == {"jobId", "attempt", "traceparent"}
    old_format = orjson.dumps({"jobId": job_id, "attempt": 1})  # as an older version sent it
    assert handle_poll_message(old_format, orch.deps).action == Action.SUCCEEDED
    assert_one_trace(spans, orch, job_id)
    assert len(spans.named("loom.poll")) == 1


def test_a_job_row_without_trace_context_still_runs_its_polls_in_a_trace_of_their_own(orch: Orch, spans: Spans) -> None:
    _scripted_loom(orch)  # tracing off: the row and the message carry no trace context
    [outcome] = handle_accepted_events([orjson.dumps(orch.event("app-loom"))], orch.deps).outcomes
    job_id = outcome.job_id
    assert job_id is not None
    job = orch.deps.store.get(job_id)
    assert job is not None
    assert job.trace_parent is None
    [sent] = orch.poll_messages()
    assert orjson.loads(sent.content) == {"jobId": job_id, "attempt": 1}  # the old format, byte for byte
    loom = orch.deps.extractors
    traced(orch, spans)  # a newer version, tracing on, picks the job up
    orch.deps.extractors = loom
    assert handle_poll_message(sent.content, orch.deps).action == Action.SUCCEEDED
    [poll] = spans.named("loom.poll")
    assert poll.parent is None  # a new trace for this job, not a stranger's
    assert {s.context.trace_id for s in spans.finished()} == {poll.context.trace_id}
    done = orch.deps.store.get(job_id)
    assert done is not None
    assert done.state == JobState.SUCCEEDED


def test_tracing_keeps_a_loom_job_within_its_table_transaction_budget(orch: Orch, spans: Spans) -> None:
    traced(orch, spans)
    _scripted_loom(orch)
    counter = _count_table_requests(orch)
    [outcome] = handle_accepted_events([orjson.dumps(orch.event("app-loom"))], orch.deps).outcomes
    [sent] = orch.poll_messages()
    assert outcome.job_id is not None
    old_format = orjson.dumps({"jobId": outcome.job_id, "attempt": 1})  # the job row's trace is read through the claim
    assert handle_poll_message(old_format, orch.deps).action == Action.SUCCEEDED
    assert sent.content
    assert counter.count() <= LOOM_JOB_BUDGET, counter.since(0)
    assert counter.since(0)["read"] <= 1


def test_poll_messages_read_and_write_trace_context_compatibly() -> None:
    tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    assert PollMessage("job-1", 2).to_text() == '{"jobId":"job-1","attempt":2}'
    assert PollMessage.parse('{"jobId":"job-1","attempt":2}') == PollMessage("job-1", 2)
    with_context = PollMessage("job-1", 2, tp)
    assert PollMessage.parse(with_context.to_text()) == with_context
    for junk in ("not-a-traceparent", 17, None, "00-" + "0" * 32 + "-b7ad6b7169203331-01", tp + "-extra"):
        doc = {"jobId": "job-1", "attempt": 2, "traceparent": junk}
        assert PollMessage.parse(orjson.dumps(doc)) == PollMessage("job-1", 2)
