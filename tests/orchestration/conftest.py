"""Real parts for the orchestration tests: Azurite (from tests/conftest.py) and local HTTP servers that play DOCSAI,
DBRICKS, the registration API, Palantir, a result file host and a managed-identity endpoint, failures included."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

import orjson
import pytest
from azure.storage.blob import BlobServiceClient
from azure.storage.queue import QueueClient

from shared.loom.job import LoomExtractorClient
from shared.orchestration.composition import build_deps
from shared.orchestration.deps import Deps
from shared.orchestration.extractor_type import ExtractorType
from shared.orchestration.jobs import Job
from shared.orchestration.outcomes import PollOutcome
from shared.orchestration.poll import PollResult, handle_poll_message
from shared.orchestration.registration import ExtractorConfig
from shared.orchestration.settings import OrchestrationSettings
from shared.orchestration.status import QueueStatusPublisher
from tests.quiet_http import QuietHTTPServer

DOCSAI_TOKEN = "docsai-secret-token-value"
DBRICKS_TOKEN = "dbricks-secret-token-value"
PALANTIR_TOKEN = "palantir-secret-token-value"
CLIENT_ID = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"
DATASET_RID = "ri.foundry.main.dataset.0000-1111"


# ---------------------------------------------------------------------------------------------------------------
# A scriptable local HTTP server


@dataclass
class Reply:
    status: int = 200
    body: bytes | dict[str, Any] | list[Any] | str = b""
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False  # never answer until the server closes: the client's timeout fires, however slow the machine
    wait_for: threading.Event | None = None  # answer only once this is set (or the server closes)
    chunked: bool = False  # no Content-Length: stream the body in chunks

    def payload(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode()
        return orjson.dumps(self.body)


@dataclass
class Seen:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return orjson.loads(self.body)


Route = Callable[[Seen], Reply]


class LocalServer:
    """QuietHTTPServer on 127.0.0.1:<free port> in a thread; ``route`` decides each answer; requests recorded."""

    def __init__(self, route: Route | None = None) -> None:
        self.route: Route = route or (lambda seen: Reply(404))
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.released = threading.Event()  # set by close(): hanging replies end (without an answer)
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _handle(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                seen = Seen(
                    self.command,
                    unquote(parts.path),
                    parse_qs(parts.query),
                    dict(self.headers.items()),
                    body,
                )
                with server.lock:
                    server.seen.append(seen)
                reply = server.route(seen)
                if reply.hang:
                    server.released.wait()
                    self.close_connection = True
                    return
                if reply.wait_for is not None:
                    _wait_either(reply.wait_for, server.released)
                data = reply.payload()
                try:
                    self.send_response(reply.status)
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    if "Content-Type" not in reply.headers:
                        self.send_header("Content-Type", "application/json")
                    if reply.chunked:
                        self.send_header("Transfer-Encoding", "chunked")
                        self.end_headers()
                        for i in range(0, len(data), 1024):
                            piece = data[i : i + 1024]
                            self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                        self.wfile.write(b"0\r\n\r\n")
                    else:
                        self.send_header("Content-Length", str(len(data)))
                        self.end_headers()
                        self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = _handle
            do_POST = _handle
            do_PUT = _handle

        self.httpd = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self.thread.start()

    def requests(self, method: str | None = None, prefix: str = "") -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if (method is None or s.method == method) and s.path.startswith(prefix)]

    def close(self) -> None:
        self.released.set()
        self.httpd.shutdown()
        self.httpd.server_close()


def _wait_either(event: threading.Event, released: threading.Event) -> None:
    """Block until ``event`` is set or the server is closed (no deadline: what a test waits for must happen)."""
    while not event.wait(0.05) and not released.is_set():
        pass


class ScriptedExtractor(LocalServer):
    """DOCSAI or DBRICKS: POST /extract answers from ``submit_script`` (then success), GET /poll/<runId> answers from
    ``poll_script[runId]`` one by one (the last repeats). A successful submission gets run id 1001, 1002, ..."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.submit_script: list[Reply] = []
        self.poll_script: dict[str, list[Reply]] = {}
        self.default_poll: list[Reply] = []
        self.next_run = 1001
        self.accepted: list[Seen] = []
        super().__init__(self._route)

    @property
    def extraction_url(self) -> str:
        return f"{self.url}/extract"

    @property
    def polling_url(self) -> str:
        return f"{self.url}/poll"

    def _route(self, seen: Seen) -> Reply:
        with self.lock:
            if seen.method == "POST" and seen.path == "/extract":
                if self.submit_script:
                    return self.submit_script.pop(0)
                run = self.next_run
                self.next_run += 1
                self.accepted.append(seen)
                if self.kind == "DOCSAI":
                    return Reply(200, {"ExtractedEntityId": run, "status": "accepted", "message": "queued"})
                return Reply(
                    201,
                    {
                        "id": f"run-{run}",
                        "name": seen.json().get("name"),
                        "overall_status": "ENQUEUED",
                        "created_at": "2025-01-01T00:00:00Z",
                        "task_count": 1,
                    },
                )
            if seen.method == "GET" and seen.path.startswith("/poll/"):
                run_id = seen.path[len("/poll/") :]
                script = self.poll_script.get(run_id) or self.default_poll
                if not script:
                    return Reply(404, {"error": "unknown run"})
                return script.pop(0) if len(script) > 1 else script[0]
        return Reply(404)

    def polls(self) -> list[Seen]:
        return self.requests("GET", "/poll/")

    def posts(self) -> list[Seen]:
        return self.requests("POST", "/extract")


class RegistrationServer(LocalServer):
    def __init__(self) -> None:
        self.apps: dict[str, Any] = {}
        self.extractors: dict[str, Any] = {}
        self.failures: list[Reply] = []
        super().__init__(self._route)

    def _route(self, seen: Seen) -> Reply:
        with self.lock:
            if self.failures:
                return self.failures.pop(0)
        prefix = "/v1/clientApplication/"
        if seen.method != "GET" or not seen.path.startswith(prefix):
            return Reply(404)
        rest = seen.path[len(prefix) :]
        if rest.endswith("/extractors"):
            app = rest[: -len("/extractors")]
            return Reply(200, self.extractors[app]) if app in self.extractors else Reply(404, {"error": "none"})
        return Reply(200, self.apps[rest]) if rest in self.apps else Reply(404, {"error": "no app"})


class PalantirServer(LocalServer):
    def __init__(self) -> None:
        self.script: list[Reply] = []
        super().__init__(self._route)

    def _route(self, seen: Seen) -> Reply:
        with self.lock:
            if self.script:
                return self.script.pop(0)
        if seen.method == "POST" and seen.path.endswith("/files:upload"):
            return Reply(200, {"path": seen.query.get("filePath", [""])[0]})
        return Reply(404)

    def uploads(self) -> list[Seen]:
        return [s for s in self.requests("POST") if s.path.endswith("/files:upload")]


class FileServer(LocalServer):
    """Serves ``files[path]``: a Reply, or bytes."""

    def __init__(self) -> None:
        self.files: dict[str, Reply | bytes | list[Reply]] = {}
        super().__init__(self._route)

    def _route(self, seen: Seen) -> Reply:
        with self.lock:
            item = self.files.get(seen.path)
            if isinstance(item, list):
                return item.pop(0) if len(item) > 1 else item[0]
        if item is None:
            return Reply(404, b"no such file")
        if isinstance(item, bytes):
            return Reply(200, item, {"Content-Type": "application/json"})
        return item


# ---------------------------------------------------------------------------------------------------------------
# A controllable clock (real time until told otherwise)


class Clock:
    def __init__(self) -> None:
        self.offset = timedelta(0)
        self.frozen: datetime | None = None

    def __call__(self) -> datetime:
        base = self.frozen or datetime.now(UTC)
        return base + self.offset

    def advance(self, **kw: float) -> None:
        self.offset += timedelta(**kw)


# ---------------------------------------------------------------------------------------------------------------
# The orchestration under test

LoomAttempt = Callable[[Job, ExtractorConfig, OrchestrationSettings], PollOutcome]


class ScriptedLoom(LoomExtractorClient):
    """The LOOM client with its extract attempts played by ``attempt`` (submission and result handling are real)."""

    def __init__(self, settings: OrchestrationSettings, attempt: LoomAttempt) -> None:
        super().__init__(settings, settings.outbound())
        self.attempt = attempt

    def poll(self, job: Job, config: ExtractorConfig) -> PollOutcome:
        return self.attempt(job, config, self.settings)


@dataclass
class Orch:
    settings: OrchestrationSettings
    deps: Deps
    env: dict[str, str]
    connection_string: str
    names: dict[str, str]
    docsai: ScriptedExtractor
    dbricks: ScriptedExtractor
    registration: RegistrationServer
    palantir: PalantirServer
    files: FileServer
    clock: Clock
    source_container: str
    counter: int = 0
    loom_attempt: LoomAttempt | None = None

    def reconfigure(self, **changes: Any) -> None:
        """New settings (dataclasses.replace) and Deps on the same storage, clock and servers."""
        self.settings = replace(self.settings, **changes)
        self.deps = build_deps(self.settings, clock=self.clock)
        if self.loom_attempt is not None:
            self.use_loom(self.loom_attempt)

    def use_loom(self, attempt: LoomAttempt) -> None:
        """Hand the handlers a LOOM client whose extract attempts are ``attempt`` (as the composition root would)."""
        self.loom_attempt = attempt
        self.deps.extractors = {**self.deps.extractors, ExtractorType.LOOM: ScriptedLoom(self.settings, attempt)}

    # -- storage helpers ---------------------------------------------------------------------------------------
    @property
    def blobs(self) -> BlobServiceClient:
        return BlobServiceClient.from_connection_string(self.connection_string)

    def queue(self, name: str) -> QueueClient:
        return QueueClient.from_connection_string(self.connection_string, name)

    def upload_source(self, name: str = "report.pdf", data: bytes = b"%PDF-1.7 test file") -> str:
        blob = self.blobs.get_blob_client(self.source_container, name)
        blob.upload_blob(data, overwrite=True)
        return blob.url

    def docsai_config(self, **extra: Any) -> dict[str, Any]:
        return {
            "extractorType": "DOCSAI",
            "extractionUrl": self.docsai.extraction_url,
            "pollingUrl": self.docsai.polling_url,
            "auth": {"setting": "DOCSAI_TOKEN"},
            **extra,
        }

    def dbricks_config(self, **extra: Any) -> dict[str, Any]:
        return {
            "extractorType": "DBRICKS",
            "extractionUrl": self.dbricks.extraction_url,
            "pollingUrl": self.dbricks.polling_url,
            "agent": "invoice-agent",
            "auth": {"setting": "DBRICKS_TOKEN"},
            **extra,
        }

    def register(self, app: str, extractor: dict[str, Any], how: str = "features") -> None:
        if how == "features":
            self.registration.apps[app] = {
                "clientApplicationId": app,
                "features": [{"featureName": "extractor", "featureConfig": {"extractors": [extractor]}}],
            }
        elif how == "extractors":
            self.registration.apps[app] = {"clientApplicationId": app, "extractors": [extractor]}
        else:
            self.registration.extractors[app] = [extractor]

    def event(self, app: str = "app-1", **fields: Any) -> dict[str, Any]:
        self.counter += 1
        doc = {
            "id": f"evt-{self.names['base']}-{self.counter}",
            "clientApplicationId": app,
            "fileId": f"file-{self.counter}",
            "documentHash": f"sha256:{self.counter:064x}",
            "fileLocationUrl": fields.pop("fileLocationUrl", None) or self.upload_source(f"{app}/f{self.counter}.pdf"),
            "fileName": "report.pdf",
            "contentType": "application/pdf",
        }
        doc.update(fields)
        return {k: v for k, v in doc.items() if v is not None}

    # -- reading what happened ---------------------------------------------------------------------------------
    def published(self) -> list[dict[str, Any]]:
        """Every status event published to the local status queue so far (drained), in publishing order."""
        q = self.queue(self.settings.status_local_queue)
        out: list[dict[str, Any]] = []
        while True:
            batch = list(q.receive_messages(messages_per_page=32, max_messages=32, visibility_timeout=60))
            if not batch:
                break
            for m in batch:
                out.append(orjson.loads(m.content))
                q.delete_message(m)
        self._published.extend(out)
        return list(self._published)

    _published: list[dict[str, Any]] = field(default_factory=list)

    def events_of(self, job_id: str) -> list[dict[str, Any]]:
        return [e for e in self.published() if e["jobId"] == job_id]

    def poll_messages(self) -> list[Any]:
        """Receive (and delete) every visible poll message."""
        q = self.queue(self.settings.poll_queue)
        out: list[Any] = []
        while True:
            batch = list(q.receive_messages(messages_per_page=32, max_messages=32, visibility_timeout=60))
            if not batch:
                return out
            for m in batch:
                out.append(m)
                q.delete_message(m)

    def drive(self, max_steps: int = 50) -> list[PollResult]:
        """Act as the Functions host for poll-jobs: take each visible message, run the handler, delete it."""
        q = self.queue(self.settings.poll_queue)
        results: list[PollResult] = []
        for _ in range(max_steps):
            batch = list(q.receive_messages(max_messages=1, visibility_timeout=60))
            if not batch:
                return results
            m = batch[0]
            results.append(handle_poll_message(m.content, self.deps))
            q.delete_message(m)
        raise AssertionError(f"poll chain still running after {max_steps} steps: {results[-3:]}")


@pytest.fixture
def servers() -> Iterator[dict[str, LocalServer]]:
    made = {
        "docsai": ScriptedExtractor("DOCSAI"),
        "dbricks": ScriptedExtractor("DBRICKS"),
        "registration": RegistrationServer(),
        "palantir": PalantirServer(),
        "files": FileServer(),
    }
    yield made
    for s in made.values():
        s.close()


def base_env(connection_string: str, base: str, servers: dict[str, Any]) -> dict[str, str]:
    return {
        "DataStorage": connection_string,
        "JOBS_TABLE": base.replace("-", ""),
        "POLL_QUEUE": f"{base}-poll",
        "CANCEL_QUEUE": f"{base}-cancel",
        "RESULTS_CONTAINER": f"{base}-results",
        "ACCEPTED_FILES_POISON_CONTAINER": f"{base}-poison",
        "JOB_STATUS_LOCAL_QUEUE": f"{base}-status",
        "REGISTRATION_API_URL": servers["registration"].url,
        "AZURE_CLIENT_ID": CLIENT_ID,
        "DOCSAI_TOKEN": DOCSAI_TOKEN,
        "DBRICKS_TOKEN": DBRICKS_TOKEN,
        "SUBMIT_RETRY_DELAY_MS": "5",
        "EXTRACTOR_HTTP_TIMEOUT_SECONDS": "60",  # must not fire: the tests of timeouts set their own
        "FLUXX_EXTRACTOR_POLL_INTERVAL_MS": "0",
        "FLUXX_EXTRACTOR_MAX_DELAY_MS": "0",
        "FLUXX_EXTRACTOR_MAX_POLLING_ATTEMPTS": "20",
        "RESULT_DOWNLOAD_ALLOWED_HOSTS": "127.0.0.1",
        # The local servers are plain http on loopback: the outbound policy allows both only when told to.
        "OUTBOUND_ALLOW_HTTP": "true",
        "OUTBOUND_ALLOW_LOOPBACK": "true",
        "EXTRACTOR_ALLOWED_HOSTS": "127.0.0.1",
        "ACCEPTED_FILES_CONTAINER": f"{base}-accepted",
        "RESULT_DOWNLOAD_TIMEOUT_SECONDS": "60",
        "PALANTIR_INGEST_URL": servers["palantir"].url,
        "PALANTIR_DATASET_RID": DATASET_RID,
        "PALANTIR_TOKEN": PALANTIR_TOKEN,
        "REGISTRATION_CACHE_TTL_SECONDS": "0",
    }


@pytest.fixture
def make_orch(azurite_connection_string: str, unique_name: str, servers: dict[str, Any]) -> Callable[..., Orch]:
    made: list[Orch] = []

    def make(**overrides: str) -> Orch:
        base = f"{unique_name}{len(made) or ''}"
        env = base_env(azurite_connection_string, base, servers)
        env.update(overrides)
        env = {k: v for k, v in env.items() if v is not None}
        settings = OrchestrationSettings.from_env(env)
        clock = Clock()
        deps = build_deps(settings, clock=clock)
        source_container = f"{base}-accepted"
        BlobServiceClient.from_connection_string(azurite_connection_string).create_container(source_container)
        orch = Orch(
            settings=settings,
            deps=deps,
            env=env,
            connection_string=azurite_connection_string,
            names={"base": base},
            docsai=servers["docsai"],
            dbricks=servers["dbricks"],
            registration=servers["registration"],
            palantir=servers["palantir"],
            files=servers["files"],
            clock=clock,
            source_container=source_container,
        )
        made.append(orch)
        return orch

    return make


@pytest.fixture
def orch(make_orch: Callable[..., Orch]) -> Orch:
    return make_orch()


def publisher_of(orch: Orch) -> QueueStatusPublisher:
    pub = orch.deps.publisher
    assert isinstance(pub, QueueStatusPublisher)
    return pub
