"""Probes of the host for the security tests: did anything open a file or reach a server it should not have?

- ``OpenWatch`` asks the kernel (inotify, through libc) to report every open of the watched files and directories,
  by any process: the test process and the worker processes alike, C parsers included (a Python audit hook sees
  only Python's own opens). Events are queued inside the ``open`` call, so reading them after the answer has come
  back misses none.
- ``RecordingServer`` is an HTTP server on 127.0.0.1 that records every connection it accepts.
"""

from __future__ import annotations

import ctypes
import os
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from tests.quiet_http import QuietHTTPServer

_IN_ACCESS = 0x001
_IN_OPEN = 0x020
_IN_NONBLOCK = 0o4000
_IN_CLOEXEC = 0o2000000
_EVENT = struct.Struct("iIII")


class OpenWatch:
    """inotify watches on paths; ``opened()`` lists the watched paths opened (or read) since the last call."""

    def __init__(self, paths: list[Path]) -> None:
        self._libc = ctypes.CDLL(None, use_errno=True)
        self.fd = self._libc.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "inotify_init1")
        self._paths: dict[int, Path] = {}
        for path in paths:
            wd = self._libc.inotify_add_watch(self.fd, os.fsencode(path), _IN_OPEN | _IN_ACCESS)
            if wd < 0:
                raise OSError(ctypes.get_errno(), f"inotify_add_watch {path}")
            self._paths[wd] = path

    def opened(self) -> list[str]:
        out: list[str] = []
        while True:
            try:
                buf = os.read(self.fd, 65536)
            except BlockingIOError:
                return out
            pos = 0
            while pos < len(buf):
                wd, _mask, _cookie, length = _EVENT.unpack_from(buf, pos)
                name = buf[pos + _EVENT.size : pos + _EVENT.size + length].rstrip(b"\0").decode()
                out.append(str(self._paths[wd] / name) if name else str(self._paths[wd]))
                pos += _EVENT.size + length

    def close(self) -> None:
        os.close(self.fd)


@dataclass
class RecordingServer:
    url: str
    connections: list[str] = field(default_factory=list)


@contextmanager
def recording_server() -> Iterator[RecordingServer]:
    """An HTTP server on a free loopback port that records every connection (and answers a tiny DTD)."""
    record = RecordingServer("")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = b'<!ENTITY leak "reached">'
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    class Server(QuietHTTPServer):
        def process_request(self, request: Any, client_address: Any) -> None:
            record.connections.append(f"{client_address}")
            super().process_request(request, client_address)

    server = Server(("127.0.0.1", 0), Handler)
    record.url = f"http://127.0.0.1:{server.server_address[1]}/evil.dtd"
    thread = threading.Thread(target=server.serve_forever, name="recording-server", daemon=True)
    thread.start()
    try:
        yield record
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
