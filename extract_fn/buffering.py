"""The service's memory for request bodies: a budget shared by every request, temporary files past it.

An upload is held in memory while it is small (up to ``spool_bytes``) and the budget of ``buffer_bytes`` for all
requests together has room; otherwise it goes to an anonymous temporary file, mapped read-only (``MappedFile``) for
the sniffing and for the worker's pipe, so its bytes live in the page cache rather than the service's heap. Only
the part in memory is ever counted against the budget, so the heap taken by bodies never passes ``buffer_bytes``
(``BufferBudget.peak`` says how far it went). After a large request the allocator is asked to give freed memory
back to the system (``release_memory``).
"""

from __future__ import annotations

import contextlib
import ctypes
import mmap
import tempfile
import threading
import time
from typing import IO, Final

_TRIM_EVERY_S: Final = 1.0


class BufferBudget:
    """Bytes of request bodies held in memory across all requests, never more than ``limit``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.peak = 0
        self.spooled = 0  # uploads that went to a temporary file
        self._lock = threading.Lock()

    def take(self, n: int) -> bool:
        """Reserve ``n`` bytes; False (nothing reserved) if that would pass the limit."""
        with self._lock:
            if self.used + n > self.limit:
                return False
            self.used += n
            self.peak = max(self.peak, self.used)
            return True

    def give(self, n: int) -> None:
        with self._lock:
            self.used -= n


class MappedFile(mmap.mmap):
    """A read-only map of a spooled upload: bytes-like (slicing, ``find``, ``len``, the buffer protocol) plus the
    ``startswith`` the sniffer uses, without the file's bytes on the heap."""

    def startswith(self, prefix: bytes | tuple[bytes, ...]) -> bool:
        if isinstance(prefix, tuple):
            return any(self.startswith(p) for p in prefix)
        return self[: len(prefix)] == prefix


Body = bytes | bytearray | MappedFile  # what a request's body is handed on as


class Upload:
    """One request's body as it arrives: in memory within the budget, else in a temporary file."""

    def __init__(self, budget: BufferBudget, spool_bytes: int, expected: int | None = None) -> None:
        self._budget = budget
        self._spool_bytes = spool_bytes
        self._memory = bytearray()
        self._reserved = 0
        self._file: IO[bytes] | None = None
        self._map: MappedFile | None = None
        self.size = 0
        if expected is not None and (expected > spool_bytes or not self._reserve(expected)):
            self._spool()

    def _reserve(self, total: int) -> bool:
        if total <= self._reserved:
            return True
        if not self._budget.take(total - self._reserved):
            return False
        self._reserved = total
        return True

    def _spool(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="extract-upload-")  # noqa: SIM115  (closed by close())
        self._file.write(self._memory)
        self._memory = bytearray()
        self._budget.give(self._reserved)
        self._reserved = 0
        self._budget.spooled += 1

    @property
    def spooled(self) -> bool:
        return self._file is not None

    def write(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self._file is None and (self.size > self._spool_bytes or not self._reserve(self.size)):
            self._spool()
        if self._file is not None:
            self._file.write(chunk)
        else:
            self._memory += chunk

    def data(self) -> Body:
        """The whole body (call once it is complete)."""
        if self._file is None:
            return self._memory
        if self.size == 0:
            return b""
        self._file.flush()
        if self._map is None:
            self._map = MappedFile(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        return self._map

    def close(self) -> None:
        """Give the memory and the file back (the caller must hold no view of ``data()`` any more)."""
        big = self.size >= self._spool_bytes
        if self._map is not None:
            with contextlib.suppress(BufferError):  # a view still exported: the map goes with the last one
                self._map.close()
            self._map = None
        if self._file is not None:
            self._file.close()
            self._file = None
        self._memory = bytearray()
        self._budget.give(self._reserved)
        self._reserved = 0
        if big:
            release_memory()


class _Trimmer:
    """``malloc_trim`` through ctypes, at most once a second."""

    def __init__(self) -> None:
        self.last = 0.0
        self.libc: ctypes.CDLL | None = None

    def __call__(self) -> None:
        now = time.monotonic()
        if now - self.last < _TRIM_EVERY_S:
            return
        self.last = now
        try:
            if self.libc is None:
                self.libc = ctypes.CDLL("libc.so.6")
            self.libc.malloc_trim(0)
        except (OSError, AttributeError):  # not glibc: nothing to ask
            pass


release_memory = _Trimmer()
release_memory.__doc__ = "Ask glibc to return freed heap to the system (``malloc_trim``); a no-op elsewhere."
