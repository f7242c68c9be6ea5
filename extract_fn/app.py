"""The reference extractor's ASGI app: extractor contract v1 over HTTP (Starlette).

``create_app(settings)`` serves

- ``GET /v1/capabilities``: the formats this deployment extracts, with their options, and ``max_bytes``;
- ``POST /v1/extract?format=&name=&encoding=&sql_dialect=`` with the original as the body: 200 with the artifact's
  JSON bytes, or 422 with ``{"error": {"code", "message"}}`` carrying a contract error code.

Every request needs ``Authorization: Bearer <token>`` with one of ``EXTRACTOR_TOKENS``; a missing or wrong one is
401 (``unauthorized``, with ``WWW-Authenticate: Bearer``), before routing. The one exception is the liveness probe,
``GET /healthz`` (and HEAD), which answers 200 ``ok`` without a token and says nothing else: no version, no formats,
no pool state (a container's HEALTHCHECK or a platform probe cannot hold a token). Unknown paths are 404
(``not_found``), wrong methods 405 (``method_not_allowed``; HEAD is allowed on capabilities, OPTIONS nowhere: no
browser calls this API, so there is no CORS), both JSON. A body that cannot be the original as it is, a multipart or
urlencoded form or one under a Content-Encoding, is 415 (``unsupported_media_type``); any other Content-Type is read
as the file's bytes. A request with both Content-Length and Transfer-Encoding is 400 and its connection is closed
(RFC 9112 6.1: the framing is ambiguous, the way request smuggling starts). The service never answers 500: when it
cannot serve at all (its worker pool is closed, saturated, the caller's share is used, no worker became free within
the time limit, a worker cannot start, or an unexpected error in this code) it answers 503 with the code
``service_unavailable`` and ``Retry-After``, which the contract's server reads as "unavailable, try the file again
later". No answer is ever compressed.

Memory: a request takes its place in the pool (``WorkerPool.admit``) before its body is read, so a refused request
costs no upload; the body is buffered within a budget shared by all requests and spooled to a temporary file past
it (``extract_fn.buffering``); an artifact over ``spool_bytes`` comes from the worker through a temporary file and
is streamed to the socket. All of this is in the app, so it holds inside the Functions host as under ``serve``.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
import time
from collections.abc import AsyncIterator, Hashable, Mapping
from typing import Any, Final
from urllib.parse import parse_qsl

import orjson
from opentelemetry.trace import SpanKind
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from extract_fn import log_limits
from extract_fn.buffering import BufferBudget, Upload
from extract_fn.service import MAX_PARAMETERS, ExtractorService, error_body
from extract_fn.settings import Settings
from extract_fn.workers import PoolUnavailable, SpooledReply, WorkerPool
from shared.contract import ERROR_STATUS, FORMATS, ErrorCode, ExtractionError
from shared.tracing import TRACEPARENT, Tracing, fail, set_attributes

log = logging.getLogger("extract_fn")

CODE_UNAUTHORIZED: Final = "unauthorized"
CODE_NOT_FOUND: Final = "not_found"
CODE_METHOD_NOT_ALLOWED: Final = "method_not_allowed"
CODE_UNSUPPORTED_MEDIA_TYPE: Final = "unsupported_media_type"  # with 415: a multipart or content-coded body
CODE_UNAVAILABLE: Final = "service_unavailable"  # with 503: the server tries the file again later
CODE_REQUEST_TIMEOUT: Final = "request_timeout"  # with 408: the upload stalled (the server tries again later)
CODE_BAD_REQUEST: Final = "bad_request"  # with 400: framing this service will not guess at
HEALTH_PATH: Final = "/healthz"  # the unauthenticated liveness probe (HealthMiddleware)
CALLER_KEY: Final = "loom.caller"  # the scope key naming which accepted token the request used (its index)
_STREAM_CHUNK: Final = 1024 * 1024
# A client that stops sending its body for this long loses the request (408), so a stalled upload cannot hold a
# connection and its buffered bytes for ever.
BODY_IDLE_TIMEOUT_S: Final = 30.0


class _UploadStalled(Exception):
    pass


RETRY_AFTER_S: Final = "5"


def error_response(status: int, code: str, message: str, headers: Mapping[str, str] | None = None) -> Response:
    return Response(error_body(code, message), status_code=status, media_type="application/json", headers=headers)


def extraction_error_response(exc: ExtractionError) -> Response:
    return error_response(ERROR_STATUS, exc.code.value, exc.message)


def unavailable_response(message: str) -> Response:
    return error_response(503, CODE_UNAVAILABLE, message, {"Retry-After": RETRY_AFTER_S})


# ---------------------------------------------------------------------------------------------------------------
# Middleware (pure ASGI)


class GuardMiddleware:
    """The outermost guard: an exception that escapes the app becomes a 503 JSON answer, never a 500."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            log.exception("unexpected error serving %s %s", scope.get("method"), scope.get("path"))
            if not started:
                response = unavailable_response("the service failed unexpectedly; try again later")
                await response(scope, receive, send)


class HealthMiddleware:
    """``GET``/``HEAD /healthz`` -> 200 ``ok`` (text/plain), before authentication: the process and its event loop
    answer. It reveals nothing (no version, formats, limits or pool state); any other method on the path goes on to
    authentication like every other request."""

    _BODY: Final = b"ok"

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == HEALTH_PATH and scope["method"] in ("GET", "HEAD"):
            response = Response(self._BODY, media_type="text/plain", headers={"Cache-Control": "no-store"})
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)


class BearerAuthMiddleware:
    """401 unless the request carries ``Authorization: Bearer <token>`` with an accepted token.

    Tokens are compared as SHA-256 digests with ``hmac.compare_digest`` against every accepted token, without
    stopping at a match, so neither the time taken nor anything logged tells which token matched or how long it is.
    The scheme is case-insensitive (RFC 7235); the token is compared exactly.
    """

    def __init__(self, app: ASGIApp, tokens: tuple[str, ...]) -> None:
        self.app = app
        self._digests = [hashlib.sha256(t.encode("utf-8")).digest() for t in tokens]

    def accepts(self, header_values: list[bytes]) -> bool:
        return self.caller(header_values) is not None

    def caller(self, header_values: list[bytes]) -> int | None:
        """The index of the accepted token the header carries, or None. The index (never the token) is what
        names the caller for the pool's fairness."""
        if len(header_values) != 1:
            return None
        scheme, _, token = header_values[0].strip().partition(b" ")
        token = token.strip(b" \t")
        if scheme.lower() != b"bearer" or not token:
            return None
        given = hashlib.sha256(token).digest()
        found = -1
        for i, digest in enumerate(self._digests):
            found = max(found, i if hmac.compare_digest(given, digest) else -1)
        return found if found >= 0 else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        values = [v for k, v in scope["headers"] if k.lower() == b"authorization"]
        caller = self.caller(values)
        if caller is None:
            challenge = 'Bearer realm="loom-extractor"'
            if values:
                challenge += ', error="invalid_token"'
            message = "a bearer token is required" if not values else "the bearer token is not accepted"
            response = error_response(401, CODE_UNAUTHORIZED, message, {"WWW-Authenticate": challenge})
            await response(scope, receive, send)
            return
        # With one token there is one caller, who has the whole pool (None: no share of its own).
        scope = {**scope, CALLER_KEY: caller if len(self._digests) > 1 else None}
        await self.app(scope, receive, send)


class FramingMiddleware:
    """400 and ``Connection: close`` for a request that has both Content-Length and Transfer-Encoding: which one
    frames the body is ambiguous (RFC 9112 6.1), so the connection is not reused for whatever follows."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            names = {k.lower() for k, _ in scope["headers"]}
            if b"content-length" in names and b"transfer-encoding" in names:
                response = error_response(
                    400,
                    CODE_BAD_REQUEST,
                    "the request has both Content-Length and Transfer-Encoding; send exactly one of them",
                    {"Connection": "close"},
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


# ---------------------------------------------------------------------------------------------------------------
# Endpoints


def _service(request: Request) -> ExtractorService:
    service: ExtractorService = request.app.state.service
    return service


async def capabilities(request: Request) -> Response:
    return Response(orjson.dumps(_service(request).capabilities()), media_type="application/json")


def _query_items(raw: bytes) -> list[tuple[str, str]]:
    """The query's (name, value) pairs, percent-decoded as UTF-8; bytes that are not UTF-8 stay as lone surrogates
    (``surrogateescape``), which ``ExtractorService.parse_query`` refuses as ``invalid_option`` naming the parameter,
    rather than being replaced silently."""
    try:
        return parse_qsl(
            raw.decode("utf-8", "surrogateescape"),
            keep_blank_values=True,
            encoding="utf-8",
            errors="surrogateescape",
            max_num_fields=MAX_PARAMETERS,
        )
    except ValueError:
        raise ExtractionError(
            ErrorCode.INVALID_OPTION, f"the query has more than {MAX_PARAMETERS} parameters"
        ) from None


def _body_refusal(request: Request) -> Response | None:
    """415 for a body that cannot be the original's bytes as they are: a multipart form (its envelope would be read
    as the file), a urlencoded form (what ``curl -d @FILE`` sends, having stripped the file's line breaks), or a
    body under a Content-Encoding (gzip, br, ...), which this service does not undo. Any other Content-Type is
    accepted: the contract sends ``application/octet-stream``, but the format parameter and the bytes decide what
    the file is, so ``text/plain`` is read the same."""
    content_type = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if content_type.startswith("multipart/"):
        return error_response(
            415,
            CODE_UNSUPPORTED_MEDIA_TYPE,
            f"the body is a {content_type[:60]} form, not the file: send the file's bytes as the whole body "
            "(Content-Type: application/octet-stream; with curl, --data-binary @FILE rather than -F)",
        )
    if content_type == "application/x-www-form-urlencoded":
        return error_response(
            415,
            CODE_UNSUPPORTED_MEDIA_TYPE,
            "the body is sent as a urlencoded form (curl -d does this, and strips the file's line breaks): send "
            "the file's bytes as they are with Content-Type: application/octet-stream (with curl, "
            "--data-binary @FILE -H 'Content-Type: application/octet-stream')",
        )
    listed = [c.strip().lower() for value in request.headers.getlist("content-encoding") for c in value.split(",")]
    codings = [c for c in listed if c and c != "identity"]
    if codings:
        return error_response(
            415,
            CODE_UNSUPPORTED_MEDIA_TYPE,
            f"the body has Content-Encoding {', '.join(codings)[:100]}: this service takes the file's bytes "
            "as they are, without a content coding",
            {"Accept-Encoding": "identity"},
        )
    return None


def _declared_length(request: Request, service: ExtractorService) -> int | None:
    """The Content-Length, refused as too_large before reading when it passes the limit."""
    declared = (request.headers.get("content-length") or "").strip()
    if not (declared.isascii() and declared.isdigit()):
        return None
    if len(declared) > 18:  # past any real size (and past int()'s digit limit for the longest)
        limit = service.settings.max_bytes
        raise ExtractionError(ErrorCode.TOO_LARGE, f"the file is over this service's limit of {limit} bytes")
    size = int(declared)
    service.check_size(size)
    return size


async def _read_body(request: Request, service: ExtractorService, budget: BufferBudget) -> Upload:
    """The body, in memory within the shared budget or in a temporary file; refused as too_large from
    Content-Length before reading it, or as soon as a stream passes it; ``_UploadStalled`` when no part arrives
    for ``BODY_IDLE_TIMEOUT_S`` or the whole body has not arrived within ``body_timeout_s``."""
    limit = service.settings.max_bytes
    upload = Upload(budget, service.settings.spool_bytes, _declared_length(request, service))
    deadline = time.monotonic() + service.settings.body_timeout_s
    stream = request.stream().__aiter__()
    try:
        while True:
            wait = min(BODY_IDLE_TIMEOUT_S, deadline - time.monotonic())
            try:
                if wait <= 0:
                    raise TimeoutError
                chunk = await asyncio.wait_for(stream.__anext__(), wait)
            except StopAsyncIteration:
                break
            except TimeoutError:
                raise _UploadStalled from None
            if upload.size + len(chunk) > limit:
                raise ExtractionError(
                    ErrorCode.TOO_LARGE,
                    f"the file is over this service's limit of {limit} bytes (the upload was cut off)",
                )
            if chunk:
                await _write(upload, chunk)
    except BaseException:
        upload.close()
        raise
    return upload


async def _write(upload: Upload, chunk: bytes) -> None:
    if upload.spooled:  # a file write may block on a slow disk: off the event loop
        await asyncio.to_thread(upload.write, chunk)
    else:
        upload.write(chunk)


def _artifact_response(raw: bytes | SpooledReply) -> Response:
    if isinstance(raw, bytes):
        return Response(raw, media_type="application/json")

    async def chunks() -> AsyncIterator[bytes]:
        try:
            left = raw.size  # the announced length, whatever the file holds past it
            while left > 0:
                chunk = await asyncio.to_thread(raw.file.read, min(_STREAM_CHUNK, left))
                if not chunk:
                    break
                left -= len(chunk)
                yield chunk
        finally:
            raw.close()

    return StreamingResponse(chunks(), media_type="application/json", headers={"Content-Length": str(raw.size)})


async def extract(request: Request) -> Response:
    tracing: Tracing = request.app.state.tracing
    # Continue the caller's trace (the LOOM client sends the job's traceparent); facts only, never the body or token.
    with tracing.span(
        "loom.extractor.extract",
        traceparent=request.headers.get(TRACEPARENT),
        kind=SpanKind.SERVER,
        attributes={
            "loom.file.format": _known_format(request),
            "http.request.body.size": _int_or_none(request.headers.get("content-length")),
        },
    ) as span:
        response = await _extract_answer(request)
        set_attributes(
            span,
            {
                "http.response.status_code": response.status_code,
                "http.response.body.size": _int_or_none(response.headers.get("content-length")),
            },
        )
        if response.status_code >= 400:
            fail(span, f"HTTP {response.status_code}")
        return response


def _known_format(request: Request) -> str | None:
    """The asked format if it is one of the contract's (a caller's other text is not recorded)."""
    try:
        items = _query_items(request.scope.get("query_string", b""))
    except ExtractionError:
        return None
    for key, value in items:
        if key == "format":
            return value if value in FORMATS else "other"
    return None


def _int_or_none(value: str | None) -> int | None:
    """A header's byte count for a span attribute; None unless it is 1-18 ASCII digits (``isdigit`` alone admits
    "²", and a 5,000-digit value would make ``int`` raise)."""
    value = value.strip() if value is not None else ""
    return int(value) if value.isascii() and value.isdigit() and len(value) <= 18 else None


async def _extract_answer(request: Request) -> Response:
    response, body_read = await _extract(request)
    if not body_read and _declares_body(request):
        # Answered before the body was read: the rest of it is never read, so the connection cannot carry another
        # request; saying so lets a keep-alive client open a new one instead of writing into a closing socket.
        response.headers["connection"] = "close"
    return response


def _declares_body(request: Request) -> bool:
    length = (request.headers.get("content-length") or "").strip()
    return "transfer-encoding" in request.headers or (length not in ("", "0"))


async def _extract(request: Request) -> tuple[Response, bool]:
    """The answer, and whether the whole body was read."""
    service = _service(request)
    budget: BufferBudget = request.app.state.budget
    caller: Hashable = request.scope.get(CALLER_KEY)
    admission = None
    upload: Upload | None = None
    try:
        query = service.parse_query(_query_items(request.scope.get("query_string", b"")))
        refusal = _body_refusal(request)
        if refusal is not None:
            return refusal, False
        admission = service.pool.admit(caller)  # before the body: a refused request costs no upload
        upload = await _read_body(request, service, budget)
        raw = await service.extract(query, upload.data(), admission=admission)
    except _UploadStalled:
        message = (
            f"the body did not arrive in time (no part for {BODY_IDLE_TIMEOUT_S:g} s, or not all of it within "
            f"{service.settings.body_timeout_s:g} s); send the file again"
        )
        return error_response(408, CODE_REQUEST_TIMEOUT, message), False
    except ExtractionError as exc:
        return extraction_error_response(exc), upload is not None
    except PoolUnavailable as exc:
        return unavailable_response(str(exc)), upload is not None
    except ClientDisconnect:
        return error_response(400, "client_disconnected", "the client went away before the body was read"), False
    finally:
        if admission is not None:
            admission.release()  # a no-op once the pool has it (it is released when the extraction ends)
        if upload is not None:
            upload.close()
    return _artifact_response(raw), True


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return error_response(404, CODE_NOT_FOUND, f"no such endpoint: {request.url.path[:200]}")
    if exc.status_code == 405:
        headers = dict(exc.headers or {})
        return error_response(
            405, CODE_METHOD_NOT_ALLOWED, f"{request.method} is not allowed on {request.url.path}", headers
        )
    return error_response(exc.status_code, "http_error", str(exc.detail))


# ---------------------------------------------------------------------------------------------------------------
# The app


def create_app(
    settings: Settings | None = None,
    *,
    extractors: Mapping[str, str] | None = None,
    pool: WorkerPool | None = None,
    tracing: Tracing | None = None,
) -> Starlette:
    """The ASGI app. ``settings`` default to ``Settings.from_env()``; they must name at least one token.

    ``extractors`` (format -> "module:function") defaults to every format module in this deployment; ``pool`` to a
    pool the app owns (started at lifespan startup or first use, closed at lifespan shutdown). A pool passed in is
    the caller's to close. ``tracing``: each extract request is a server span continuing the caller's
    ``traceparent`` (off by default; the adapters pass ``Tracing.from_env``).
    """
    settings = settings if settings is not None else Settings.from_env()
    settings.require_tokens()
    log_limits.install()
    service = ExtractorService(settings, extractors=extractors, pool=pool)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await asyncio.to_thread(service.start)
        try:
            yield
        finally:
            await asyncio.to_thread(service.close)

    app = Starlette(
        routes=[
            Route("/v1/capabilities", capabilities, methods=["GET"]),
            Route("/v1/extract", extract, methods=["POST"]),
        ],
        middleware=[
            Middleware(GuardMiddleware),
            Middleware(FramingMiddleware),
            Middleware(HealthMiddleware),
            Middleware(BearerAuthMiddleware, tokens=settings.tokens),
        ],
        exception_handlers={HTTPException: _http_error},
        lifespan=lifespan,
    )
    app.router.redirect_slashes = False  # /v1/extract/ is a 404, not a redirect (a server reads 3xx as unavailable)
    app.state.service = service
    app.state.tracing = tracing or Tracing.off()
    app.state.budget = BufferBudget(settings.buffer_bytes)
    return app


def service_of(app: Any) -> ExtractorService:
    """The ``ExtractorService`` behind an app made by ``create_app`` (for tests and the CLI)."""
    service: ExtractorService = app.state.service
    return service
