"""``extract_fn serve``: uvicorn with the connection limits it lacks, as an h11 protocol subclass.

uvicorn 0.54 (h11 protocol; httptools is not installed) times out only idle keep-alive connections: a request head
that arrives a byte at a time, or never completes, holds its connection and descriptor for ever, and it accepts
connections until the process runs out of descriptors. ``GuardedH11Protocol`` adds, per connection:

- a header timeout (``EXTRACTOR_HEADER_TIMEOUT_S``): the request line and headers must be complete within it, from
  the connection's start and again after each response; else 408 and the connection is closed;
- a whole-request deadline: header timeout + body timeout + extraction limit + a margin; past it the connection is
  closed (the app answers 408/503 well before, so this is the backstop for what the app cannot see);
- a connection answered before its request body was read whole (too_large, 408, 503) is closed, so a client
  cannot keep sending into it;
- a connection cap (``EXTRACTOR_MAX_CONNECTIONS``, default half the descriptor limit, at most 4096): a connection
  past it is closed at once, so connections can never take the descriptors the workers' pipes and temporary files
  need.

The app itself refuses Content-Length together with Transfer-Encoding (400, ``Connection: close``), bounds the body
(idle and whole-body timeouts, size, buffering) and is the same inside the Functions host; the warnings a storm
causes are rate-limited (``extract_fn.log_limits``). ``GuardStats`` counts what the guards did, for tests and the
benchmark.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import resource
from typing import Any, Final

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from extract_fn import log_limits
from extract_fn.settings import ENV_MAX_CONNECTIONS, FD_RESERVE, Settings, SettingsError, max_connections_for

log = logging.getLogger("extract_fn")

REQUEST_DEADLINE_MARGIN_S: Final = 30.0
_HEADER_TIMEOUT_BODY: Final = (
    b'{"error":{"code":"request_timeout","message":"the request line and headers did not arrive in time; '
    b'send the request again"}}'
)
_HEADER_TIMEOUT_ANSWER: Final = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\nconnection: close\r\n"
    b"content-length: %d\r\n\r\n%s" % (len(_HEADER_TIMEOUT_BODY), _HEADER_TIMEOUT_BODY)
)


@dataclasses.dataclass(slots=True)
class GuardStats:
    refused_connections: int = 0  # closed at once: over the connection cap
    header_timeouts: int = 0
    request_timeouts: int = 0


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header timeout, a whole-request deadline and a connection cap (set on a
    subclass by ``protocol_for``)."""

    header_timeout_s: float = 10.0
    request_deadline_s: float = 300.0
    max_connections: int = 1000
    stats: GuardStats = GuardStats()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._refused = False
        self._header_timer: asyncio.TimerHandle | None = None
        self._request_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        if len(self.server_state.connections) >= self.max_connections:
            self._refused = True
            self.stats.refused_connections += 1
            log.warning("connection refused: %d connections are open, the cap", self.max_connections)
            transport.abort()
            return
        super().connection_made(transport)
        self._arm_header_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._refused:
            return
        self._cancel_timers()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self._header_timer is not None and self.conn.their_state is not h11.IDLE:
            self._header_timer.cancel()
            self._header_timer = None
            if self._request_timer is None:
                self._request_timer = self.loop.call_later(self.request_deadline_s, self._request_timed_out)

    def on_response_complete(self) -> None:
        if self._request_timer is not None:
            self._request_timer.cancel()
            self._request_timer = None
        if self.conn.their_state not in (h11.DONE, h11.IDLE) and not self.transport.is_closing():
            # Answered before the body was read (too_large, 408, 503...): the rest of it is never read, so the
            # connection cannot be reused; closing it also stops a client that keeps sending.
            self.transport.close()
        if not self.transport.is_closing():
            self._arm_header_timer()  # the next request's head gets the same time
        super().on_response_complete()

    def _arm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._header_timed_out)

    def _cancel_timers(self) -> None:
        for timer in (self._header_timer, self._request_timer):
            if timer is not None:
                timer.cancel()
        self._header_timer = self._request_timer = None

    def _header_timed_out(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE:
            return
        self.stats.header_timeouts += 1
        if self.conn.our_state is h11.IDLE:  # nothing said yet on this connection's current cycle
            self.transport.write(_HEADER_TIMEOUT_ANSWER)
        self.transport.close()

    def _request_timed_out(self) -> None:
        self._request_timer = None
        if self.transport.is_closing():
            return
        self.stats.request_timeouts += 1
        log.warning("a request passed its %g s deadline: its connection is closed", self.request_deadline_s)
        self.transport.abort()


def fd_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def connection_cap(settings: Settings, limit: int | None = None) -> int:
    """The connection cap for this process; ``SettingsError`` when the setting leaves too few descriptors."""
    limit = fd_limit() if limit is None else limit
    if not settings.max_connections:
        return max_connections_for(limit)
    if settings.max_connections > limit - FD_RESERVE:
        raise SettingsError(
            [
                (
                    ENV_MAX_CONNECTIONS,
                    f"{ENV_MAX_CONNECTIONS} is {settings.max_connections}, but this process may open only {limit} "
                    f"files: keep it at most {limit - FD_RESERVE} (or raise the limit with ulimit -n)",
                )
            ]
        )
    return settings.max_connections


def protocol_for(settings: Settings, *, max_connections: int, stats: GuardStats | None = None) -> type:
    """A ``GuardedH11Protocol`` subclass with these settings' limits."""
    return type(
        "ExtractorH11Protocol",
        (GuardedH11Protocol,),
        {
            "header_timeout_s": settings.header_timeout_s,
            "request_deadline_s": settings.header_timeout_s
            + settings.body_timeout_s
            + settings.timeout_s
            + REQUEST_DEADLINE_MARGIN_S,
            "max_connections": max_connections,
            "stats": stats if stats is not None else GuardStats(),
        },
    )


def build_server(
    app: Any, settings: Settings, *, host: str = "127.0.0.1", port: int = 8790, log_level: str = "info"
) -> uvicorn.Server:
    """The uvicorn server ``serve`` runs (tests start it on their own socket with ``server.run(sockets=...)``)."""
    cap = connection_cap(settings)
    protocol = protocol_for(settings, max_connections=cap)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        http=protocol,
        server_header=False,
        proxy_headers=False,
        timeout_keep_alive=5,
        # asyncio accepts up to ``backlog`` connections at a time before any is seen (and refused past the cap):
        # a quarter of the cap keeps that burst within the descriptors the cap leaves free.
        backlog=max(16, min(2048, cap // 4)),
        timeout_graceful_shutdown=int(settings.timeout_s) + 5,
    )
    log_limits.install()  # after uvicorn's logging setup, on the loggers a storm makes speak
    server = uvicorn.Server(config)
    server.guard_stats = protocol.stats  # type: ignore[attr-defined]
    return server
