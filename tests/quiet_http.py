"""The test servers' ``ThreadingHTTPServer``, quiet when a client goes away.

Clients in the suite close connections on purpose (timeouts, refused answers, a test that ends); the standard
server prints a traceback for each reset to stderr, which reads like a failure in a passing run. Any other error is
still printed."""

from __future__ import annotations

import sys
from http.server import ThreadingHTTPServer
from typing import Any

_CLIENT_GONE = (ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class QuietHTTPServer(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        if isinstance(sys.exc_info()[1], _CLIENT_GONE):
            return
        super().handle_error(request, client_address)
