"""A real HTTP extractor service (contract v1) for the LOOM client's tests, that misbehaves on demand.

``FakeExtractor`` runs a ``QuietHTTPServer`` on a free 127.0.0.1 port. By default it serves a capabilities
document (``capabilities``, mutable) at every ``.../v1/capabilities`` path and a small valid artifact for the asked
format at every ``.../v1/extract`` path. ``reply(path, Reply(...))`` sets what one path answers instead: any status,
headers and body, no answer at all until the server closes (``hang``: a client timeout fires however slow the
machine is), a gzip-compressed body, a chunked body dripped slowly. Every request is
recorded (``received``, ``calls(...)``), headers and body included.
"""

from __future__ import annotations

import copy
import gzip
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

import orjson

from shared.contract import CONTRACT_VERSION, FORMAT_OPTIONS, FORMATS, SCHEMA_VERSION
from tests.quiet_http import QuietHTTPServer


def capabilities_doc(
    formats: tuple[str, ...] = FORMATS,
    *,
    max_bytes: int = 1024 * 1024,
    contract_version: int = CONTRACT_VERSION,
    name: str = "fake-extractor",
    options: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    """A capabilities document listing ``formats``, each with the contract's options unless ``options`` says."""
    opts = options or {}
    return {
        "contract_version": contract_version,
        "extractor": {"name": name, "version": "1"},
        "max_bytes": max_bytes,
        "formats": [{"format": f, "options": list(opts.get(f, FORMAT_OPTIONS[f]))} for f in formats],
    }


def minimal_artifact(fmt: str = "markdown", text: str = "hello") -> dict[str, Any]:
    """A small artifact that keeps every rule for an original of at least 5 bytes and 1 line."""
    return {
        "schema_version": SCHEMA_VERSION,
        "format": fmt,
        "parser": "fake-parser",
        "parser_version": "1",
        "options": {},
        "attrs": {},
        "warnings": [],
        "coverage": {"unit": "lines", "total": 1, "extracted": 1, "failed": [], "lost": [], "complete": True},
        "blocks": [
            {
                "id": "b0",
                "type": "paragraph",
                "text": text,
                "section_path": [],
                "locator": {"line_start": 1, "line_end": 1, "char_start": 0, "char_end": len(text)},
                "keys": [],
            }
        ],
    }


@dataclass
class Reply:
    """One answer. ``body`` may be bytes or a JSON-able value (sent as JSON)."""

    status: int = 200
    body: bytes | dict[str, Any] | list[Any] | str = b""
    headers: dict[str, str] = field(default_factory=dict)
    hang: bool = False  # send nothing until the server closes (the client's timeout must fire)
    gzip: bool = False  # gzip the body and say Content-Encoding: gzip
    chunked: bool = False  # Transfer-Encoding: chunked instead of Content-Length
    drip: tuple[int, float] | None = None  # chunked, this many bytes every this many seconds
    content_length: int | None = None  # a Content-Length that lies (the body is sent as is)

    def payload(self) -> bytes:
        if isinstance(self.body, bytes):
            return self.body
        if isinstance(self.body, str):
            return self.body.encode()
        return orjson.dumps(self.body)


def error_reply(code: str, message: str = "refused", status: int = 422) -> Reply:
    return Reply(status=status, body={"error": {"code": code, "message": message}})


@dataclass(frozen=True)
class Received:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]  # names lowercased
    body: bytes


Responder = Reply | Callable[[Received], Reply]


class FakeExtractor:
    """A contract v1 service on 127.0.0.1 whose every answer the test can set."""

    def __init__(self, capabilities: dict[str, Any] | None = None) -> None:
        self.capabilities: dict[str, Any] = capabilities if capabilities is not None else capabilities_doc()
        self.replies: dict[str, Responder] = {}
        self.received: list[Received] = []
        self._lock = threading.Lock()
        self.stopping = threading.Event()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def _serve(self) -> None:
                parts = urllib.parse.urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                rec = Received(
                    method=self.command,
                    path=parts.path,
                    query=urllib.parse.parse_qs(parts.query, keep_blank_values=True),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=body,
                )
                with fake._lock:
                    fake.received.append(rec)
                reply = fake._reply_for(rec)
                try:
                    self._send(reply)
                except OSError:  # the client gave up (a timeout test): nothing to do
                    self.close_connection = True

            def _send(self, reply: Reply) -> None:
                if reply.hang:
                    fake.stopping.wait()
                    self.close_connection = True
                    return
                payload = reply.payload()
                if reply.gzip:
                    payload = gzip.compress(payload)
                self.send_response(reply.status)
                headers = {"Content-Type": "application/json", **reply.headers}
                if reply.gzip:
                    headers["Content-Encoding"] = "gzip"
                chunked = reply.chunked or reply.drip is not None
                no_body = reply.status == 204 or 100 <= reply.status < 200 or reply.status == 304
                if chunked and not no_body:
                    headers["Transfer-Encoding"] = "chunked"
                elif not no_body:
                    size = reply.content_length if reply.content_length is not None else len(payload)
                    headers["Content-Length"] = str(size)
                for k, v in headers.items():
                    self.send_header(k, v)
                self.end_headers()
                if no_body:
                    return
                if not chunked:
                    self.wfile.write(payload)
                    if reply.content_length is not None and reply.content_length != len(payload):
                        self.close_connection = True
                    return
                step, pause = reply.drip if reply.drip is not None else (max(1, len(payload)), 0.0)
                for i in range(0, len(payload), step):
                    piece = payload[i : i + step]
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                    if pause and fake.stopping.wait(pause):
                        self.close_connection = True
                        return
                self.wfile.write(b"0\r\n\r\n")

        self._server = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name="fake-extractor", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def reply(self, path: str, responder: Responder) -> None:
        """Answer requests to ``path`` (e.g. ``/v1/extract`` or ``/svc-a/v1/capabilities``) with ``responder``."""
        self.replies[path] = responder

    def calls(self, suffix: str = "/v1/extract") -> list[Received]:
        with self._lock:
            return [r for r in self.received if r.path.endswith(suffix)]

    def _reply_for(self, rec: Received) -> Reply:
        responder = self.replies.get(rec.path)
        if responder is not None:
            return responder(rec) if callable(responder) else responder
        if rec.path.endswith("/v1/capabilities"):
            return Reply(body=copy.deepcopy(self.capabilities))
        if rec.path.endswith("/v1/extract"):
            fmt = (rec.query.get("format") or ["markdown"])[0]
            return Reply(body=minimal_artifact(fmt))
        return Reply(status=404, body={"error": {"code": "not_found", "message": rec.path}})

    def close(self) -> None:
        self.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeExtractor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
