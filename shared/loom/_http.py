"""One HTTP call with one deadline for the whole of it: connect, send, and read the answer up to a byte limit.

``requests``' timeout bounds each socket operation, not the call: a server that drips a byte every few seconds never
trips it. So the call runs in a worker thread and the caller waits on it for the deadline; when the deadline passes
the caller answers at once, the worker is told to stop and the socket of an answer already under way is shut down, so
the worker's blocked read returns. (A worker still connecting or sending ends at its per-operation timeout, which is the
whole-call timeout; its late result is dropped.) The body is read raw (``decode_content=False``): urllib3 never
decompresses anything, and a connection whose body was not read to its end is closed, never pooled.
"""

from __future__ import annotations

import contextlib
import http.client
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import requests
import urllib3.exceptions
from requests.structures import CaseInsensitiveDict

_CHUNK: Final = 64 * 1024

# How many bytes of an answer to read, decided once its status and headers are in (0: none).
BodyLimit = Callable[[int, Mapping[str, str]], int]


class CallFailed(Exception):
    """The call produced no complete answer: it timed out, could not connect, or the connection broke."""


@dataclass(frozen=True, slots=True)
class RawAnswer:
    status: int
    headers: CaseInsensitiveDict[str]
    body: bytes  # at most ``limit`` bytes
    overflow: bool  # the answer is longer than the limit (by its Content-Length or by what was read)


class BearerAuth(requests.auth.AuthBase):
    """``Authorization: Bearer <token>``, as an auth object so a .netrc entry can never replace it."""

    def __init__(self, token: str | None) -> None:
        self._token = token

    def __call__(self, r: requests.PreparedRequest) -> requests.PreparedRequest:
        if self._token:
            r.headers["Authorization"] = f"Bearer {self._token}"
        else:
            r.headers.pop("Authorization", None)
        return r

    def __repr__(self) -> str:
        return "BearerAuth(**********)"


_TRANSPORT_ERRORS: Final = (
    requests.RequestException,
    urllib3.exceptions.HTTPError,
    http.client.HTTPException,
    OSError,
)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, requests.ConnectTimeout | urllib3.exceptions.ConnectTimeoutError):
        return "the connection timed out"
    if isinstance(exc, requests.Timeout | TimeoutError | urllib3.exceptions.TimeoutError):
        return "the call timed out"
    if isinstance(exc, requests.ConnectionError) and "refused" in str(exc).lower():
        return "the connection was refused"
    if isinstance(exc, requests.ConnectionError) and not isinstance(exc, requests.exceptions.ChunkedEncodingError):
        return f"the connection failed ({type(exc).__name__})"
    return f"the answer broke off ({type(exc).__name__})"


@dataclass(frozen=True, slots=True)
class _Request:
    session: requests.Session
    method: str
    url: str
    params: Sequence[tuple[str, str]]
    data: bytes | None
    headers: Mapping[str, str]
    auth: BearerAuth
    timeout_s: float
    body_limit: BodyLimit


class _Call:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.done = threading.Event()
        self._cancelled = False
        self._response: requests.Response | None = None
        self.answer: RawAnswer | None = None
        self.error: BaseException | None = None

    def run(self, req: _Request) -> None:
        try:
            resp = req.session.request(
                req.method,
                req.url,
                params=list(req.params),
                data=req.data,
                headers=dict(req.headers),
                auth=req.auth,
                timeout=(req.timeout_s, req.timeout_s),
                stream=True,
                allow_redirects=False,
            )
        except BaseException as exc:  # handed to the caller, which decides what is a transport failure
            self._finish(error=exc)
            return
        with self._lock:
            if self._cancelled:
                _abort(resp)
                return
            self._response = resp
        try:
            self._finish(answer=self._read(resp, req.body_limit))
        except BaseException as exc:
            self._finish(error=exc)
        finally:
            resp.close()

    def _read(self, resp: requests.Response, body_limit: BodyLimit) -> RawAnswer:
        headers = resp.headers
        limit = max(0, body_limit(resp.status_code, headers))
        declared = headers.get("Content-Length", "").strip()
        if limit == 0 or (declared.isdigit() and int(declared) > limit):
            return RawAnswer(resp.status_code, headers, b"", overflow=limit > 0)
        body = bytearray()
        while len(body) <= limit:
            chunk = resp.raw.read(min(_CHUNK, limit + 1 - len(body)), decode_content=False)
            if not chunk:
                break
            body += chunk
            if self._cancelled:
                raise CallFailed("cancelled")
        overflow = len(body) > limit
        return RawAnswer(resp.status_code, headers, bytes(body[:limit]), overflow=overflow)

    def _finish(self, *, answer: RawAnswer | None = None, error: BaseException | None = None) -> None:
        with self._lock:
            if self._cancelled:
                return
            self.answer = answer
            self.error = error
            self.done.set()

    def cancel(self) -> bool:
        """Stop the call unless it has just finished; ``True`` when it was stopped."""
        with self._lock:
            if self.done.is_set():
                return False
            self._cancelled = True
            resp = self._response
        if resp is not None:
            _shut(resp)  # the worker's blocked read returns; the worker closes the response itself
        return True


def _abort(resp: requests.Response) -> None:
    """Drop an answer nobody waits for: shut its socket and close it (the connection is never pooled)."""
    _shut(resp)
    with contextlib.suppress(Exception):
        resp.close()


def _shut(resp: requests.Response) -> None:
    """Shut the answer's socket so a read blocked on it in another thread returns at once.

    Only the socket is touched: closing the response here could wait on the reading thread's buffer lock.
    """
    raw = resp.raw
    try:
        raw.shutdown()
    except (ValueError, RuntimeError, OSError, AttributeError):
        conn = getattr(raw, "connection", None)
        sock = getattr(conn, "sock", None)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def call(
    session: requests.Session,
    method: str,
    url: str,
    *,
    params: Sequence[tuple[str, str]] = (),
    data: bytes | None = None,
    headers: Mapping[str, str],
    token: str | None,
    timeout_s: float,
    body_limit: BodyLimit,
) -> RawAnswer:
    """Make one call with ``timeout_s`` for the whole of it; raise ``CallFailed`` when no complete answer came."""
    job = _Call()
    worker = threading.Thread(
        target=job.run,
        args=(_Request(session, method, url, params, data, headers, BearerAuth(token), timeout_s, body_limit),),
        name="loom-call",
        daemon=True,
    )
    worker.start()
    if not job.done.wait(timeout_s) and job.cancel():
        raise CallFailed(f"no complete answer within the whole-call timeout of {timeout_s:g} s")
    if job.error is not None:
        if isinstance(job.error, (*_TRANSPORT_ERRORS, CallFailed)):
            raise CallFailed(_describe(job.error)) from None
        raise job.error
    assert job.answer is not None
    return job.answer
