"""A small, bounded, time-limited memory of the inputs that ended a worker process, answered at once when sent again.

A file that crashes a native parser (or exhausts a worker's memory) costs a worker process and its restart every
time it is sent; one client looping such a file kept the pool restarting workers (201 deaths a minute, everyone's
throughput down 79%). The pool asks this memory before handing a file to a worker: an input that ended a worker less
than ``ttl_s`` ago gets the same error code (and its message, saying it was not tried again) without a worker.

What is remembered: the outcomes where the worker process ended, a death (signal, exit) or a ``MemoryError`` after
which the worker retires; and (``ended_worker=False``) refusals that cost a worker much time, answered again word for
word (the pool decides which: ``workers.COSTLY_REFUSAL_S``). Timeouts are not: they depend on the machine's load and
on the caller's deadline.
The key is the extractor, the options that change a parse (format, encoding, SQL dialect, output budget) and the
SHA-256 of the bytes; the name is left out (renaming a file does not make it parse differently). Hashing costs
nothing on the normal path: an input is hashed only when an entry of its size is remembered, or after it ended a
worker. The memory is bounded by ``max_entries`` (the oldest go first) and each entry by ``ttl_s``.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Final

DEFAULT_MAX_ENTRIES: Final = 256  # a few KB: each entry is a digest, a code and a message
DEFAULT_TTL_S: Final = 600.0  # long enough to stop a crash loop, short enough that a fixed parser gets retried


@dataclass(frozen=True, slots=True)
class Remembered:
    code: str  # the contract's error code the input got
    message: str  # the message it got
    at: float  # when (the memory's clock)
    ended_worker: bool = True  # a crash or MemoryError (else a costly, deterministic refusal)


def _digest(scope: tuple[object, ...], data: bytes | memoryview) -> bytes:
    import hashlib  # here, not at the top: the CLI builds a pool's memory it never asks (hashlib loads OpenSSL)

    h = hashlib.sha256(repr(scope).encode("utf-8", "backslashreplace"))
    h.update(data)
    return h.digest()


class CrashMemory:
    """``recall`` / ``remember`` by (scope, bytes); thread-safe; at most ``max_entries`` for at most ``ttl_s``."""

    def __init__(
        self,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        ttl_s: float = DEFAULT_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if max_entries < 0 or ttl_s < 0:
            raise ValueError("max_entries and ttl_s cannot be negative")
        self.max_entries = max_entries
        self.ttl_s = ttl_s
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: OrderedDict[bytes, Remembered] = OrderedDict()
        self._sizes: dict[int, int] = {}  # input length -> entries of that length (so most inputs are never hashed)
        self._length_of: dict[bytes, int] = {}
        self.hits = 0

    def __len__(self) -> int:
        with self._lock:
            self._expire()
            return len(self._entries)

    def recall(self, scope: tuple[object, ...], data: bytes | memoryview, *, count: bool = True) -> Remembered | None:
        """What ``data`` (under ``scope``) got when it was remembered, if that was less than ``ttl_s`` ago (a hit
        is counted in ``hits`` unless ``count`` is false)."""
        with self._lock:
            self._expire()
            if len(data) not in self._sizes:
                return None
        key = _digest(scope, data)  # outside the lock: hashing a big input takes a while (and releases the GIL)
        with self._lock:
            found = self._entries.get(key)
            if found is not None and count:
                self.hits += 1
            return found

    def remember(
        self,
        scope: tuple[object, ...],
        data: bytes | memoryview,
        code: str,
        message: str,
        *,
        ended_worker: bool = True,
    ) -> None:
        if self.max_entries == 0 or self.ttl_s == 0:
            return
        key = _digest(scope, data)
        with self._lock:
            self._drop(key)
            self._entries[key] = Remembered(code, message, self._clock(), ended_worker)
            self._length_of[key] = len(data)
            self._sizes[len(data)] = self._sizes.get(len(data), 0) + 1
            while len(self._entries) > self.max_entries:
                self._drop(next(iter(self._entries)))

    def _expire(self) -> None:
        horizon = self._clock() - self.ttl_s
        while self._entries:
            key, oldest = next(iter(self._entries.items()))
            if oldest.at > horizon:
                break
            self._drop(key)

    def _drop(self, key: bytes) -> None:
        if self._entries.pop(key, None) is None:
            return
        length = self._length_of.pop(key)
        left = self._sizes[length] - 1
        if left:
            self._sizes[length] = left
        else:
            del self._sizes[length]
