"""The reference extractor's ASGI app: extractor contract v1 over HTTP (Starlette).

``create_app(settings)`` serves

- ``GET /v1/capabilities``: the formats this deployment extracts, with their options, and ``max_bytes``;
- ``POST /v1/extract?format=&name=&encoding=&sql_dialect=`` with the original as the body: 200 with the artifact's
  JSON bytes, or 422 with ``{"error": {"code", "message"}}`` carrying a contract error code.

Every request needs ``Authorization: Bearer <token>`` with one of ``EXTRACTOR_TOKENS``; a missing or wrong one is 401
(``unauthorized``, with ``WWW-Authenticate: Bearer``), before routing. Unknown paths are 404 (``not_found``), wrong
methods 405 (``method_not_allowed``; HEAD is allowed on capabilities, OPTIONS nowhere: no browser calls this API, so
there is no CORS), both JSON. A body that cannot be the original as it is, a multipart form or one under a
Content-Encoding, is 415 (``unsupported_media_type``); any other Content-Type is read as the file's bytes. The
service never answers 500: when it cannot serve at all (its worker pool is closed, saturated or cannot start a
worker, or an unexpected error in this code) it answers 503 with the code ``service_unavailable`` and
``Retry-After``, which the contract's server reads as "unavailable, try the file again later". No answer is ever
compressed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
from collections.abc import AsyncIterator, Mapping
from typing import Any, Final
from urllib.parse import parse_qsl

import orjson
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from extract_fn.service import MAX_PARAMETERS, ExtractorService, error_body
from extract_fn.settings import Settings
from extract_fn.workers import PoolUnavailable, WorkerPool
from shared.contract import ERROR_STATUS, ErrorCode, ExtractionError

log = logging.getLogger("extract_fn")

CODE_UNAUTHORIZED: Final = "unauthorized"
CODE_NOT_FOUND: Final = "not_found"
CODE_METHOD_NOT_ALLOWED: Final = "method_not_allowed"
CODE_UNSUPPORTED_MEDIA_TYPE: Final = "unsupported_media_type"  # with 415: a multipart or content-coded body
CODE_UNAVAILABLE: Final = "service_unavailable"  # with 503: the server tries the file again later
CODE_REQUEST_TIMEOUT: Final = "request_timeout"  # with 408: the upload stalled (the server tries again later)
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
        if len(header_values) != 1:
            return False
        scheme, _, token = header_values[0].strip().partition(b" ")
        token = token.strip(b" \t")
        if scheme.lower() != b"bearer" or not token:
            return False
        given = hashlib.sha256(token).digest()
        matched = False
        for digest in self._digests:
            matched |= hmac.compare_digest(given, digest)
        return matched

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        values = [v for k, v in scope["headers"] if k.lower() == b"authorization"]
        if not self.accepts(values):
            challenge = 'Bearer realm="loom-extractor"'
            if values:
                challenge += ', error="invalid_token"'
            message = "a bearer token is required" if not values else "the bearer token is not accepted"
            response = error_response(401, CODE_UNAUTHORIZED, message, {"WWW-Authenticate": challenge})
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
    as the file) or a body under a Content-Encoding (gzip, br, ...), which this service does not undo. Any other
    Content-Type is accepted: the contract sends ``application/octet-stream``, but the format parameter and the
    bytes decide what the file is, so ``text/plain`` or curl's default ``application/x-www-form-urlencoded`` are
    read the same."""
    content_type = (request.headers.get("content-type") or "").split(";", 1)[0].strip().lower()
    if content_type.startswith("multipart/"):
        return error_response(
            415,
            CODE_UNSUPPORTED_MEDIA_TYPE,
            f"the body is a {content_type} form, not the file: send the file's bytes as the whole body "
            "(Content-Type: application/octet-stream; with curl, --data-binary @FILE rather than -F)",
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


async def _read_body(request: Request, limit: int, service: ExtractorService) -> bytes:
    """The body, refused as too_large from Content-Length before reading it, or as soon as a stream passes it."""
    declared = (request.headers.get("content-length") or "").strip()
    if declared.isascii() and declared.isdigit():
        if len(declared) > 18:  # past any real size (and past int()'s digit limit for the longest)
            raise ExtractionError(ErrorCode.TOO_LARGE, f"the file is over this service's limit of {limit} bytes")
        service.check_size(int(declared))
    chunks: list[bytes] = []
    total = 0
    stream = request.stream().__aiter__()
    while True:
        try:
            chunk = await asyncio.wait_for(stream.__anext__(), BODY_IDLE_TIMEOUT_S)
        except StopAsyncIteration:
            break
        except TimeoutError:
            raise _UploadStalled from None
        total += len(chunk)
        if total > limit:
            raise ExtractionError(
                ErrorCode.TOO_LARGE, f"the file is over this service's limit of {limit} bytes (the upload was cut off)"
            )
        chunks.append(chunk)
    return b"".join(chunks)


async def extract(request: Request) -> Response:
    service = _service(request)
    try:
        query = service.parse_query(_query_items(request.scope.get("query_string", b"")))
        refusal = _body_refusal(request)
        if refusal is not None:
            return refusal
        if service.pool.saturated():
            return unavailable_response("every worker is busy and the queue is full; try again later")
        data = await _read_body(request, service.settings.max_bytes, service)
        raw = await service.extract(query, data)
    except _UploadStalled:
        return error_response(
            408, CODE_REQUEST_TIMEOUT, f"no part of the body arrived for {BODY_IDLE_TIMEOUT_S:g} s; send the file again"
        )
    except ExtractionError as exc:
        return extraction_error_response(exc)
    except PoolUnavailable as exc:
        return unavailable_response(str(exc))
    except ClientDisconnect:
        return error_response(400, "client_disconnected", "the client went away before the body was read")
    return Response(raw, media_type="application/json")


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
) -> Starlette:
    """The ASGI app. ``settings`` default to ``Settings.from_env()``; they must name at least one token.

    ``extractors`` (format -> "module:function") defaults to every format module in this deployment; ``pool`` to a
    pool the app owns (started at lifespan startup or first use, closed at lifespan shutdown). A pool passed in is
    the caller's to close.
    """
    settings = settings if settings is not None else Settings.from_env()
    settings.require_tokens()
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
            Middleware(BearerAuthMiddleware, tokens=settings.tokens),
        ],
        exception_handlers={HTTPException: _http_error},
        lifespan=lifespan,
    )
    app.router.redirect_slashes = False  # /v1/extract/ is a 404, not a redirect (a server reads 3xx as unavailable)
    app.state.service = service
    return app


def service_of(app: Any) -> ExtractorService:
    """The ``ExtractorService`` behind an app made by ``create_app`` (for tests and the CLI)."""
    service: ExtractorService = app.state.service
    return service
