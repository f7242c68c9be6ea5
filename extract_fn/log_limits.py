"""Rate-limited warnings and errors, so an abuse storm cannot write its weight in tracebacks.

``install()`` puts one ``RateLimitFilter`` on the loggers that a storm of bad connections or failing requests makes
speak (the service's own, asyncio's, uvicorn's): records below WARNING pass; of the others, at most ``burst`` per
logger and message template in each ``period`` seconds, and the first one let through after some were dropped says
how many. It works the same under ``extract_fn serve`` and inside the Functions host (logger filters, not handlers).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Final

LIMITED_LOGGERS: Final = ("extract_fn", "extract_fn.workers", "asyncio", "uvicorn", "uvicorn.error")
DEFAULT_BURST: Final = 20
DEFAULT_PERIOD_S: Final = 60.0
_MAX_KEYS: Final = 1000


class RateLimitFilter(logging.Filter):
    def __init__(
        self,
        burst: int = DEFAULT_BURST,
        period_s: float = DEFAULT_PERIOD_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.burst = burst
        self.period_s = period_s
        self.clock = clock
        self.dropped_total = 0
        self._windows: dict[tuple[str, str], list[float]] = {}  # key -> [window start, passed, dropped]
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING:
            return True
        key = (record.name, str(record.msg)[:200])
        now = self.clock()
        with self._lock:
            window = self._windows.get(key)
            if window is None or now - window[0] >= self.period_s:
                dropped = int(window[2]) if window is not None else 0
                if len(self._windows) >= _MAX_KEYS:
                    self._windows.clear()
                self._windows[key] = [now, 1, 0]
            elif window[1] < self.burst:
                window[1] += 1
                dropped = 0
            else:
                window[2] += 1
                self.dropped_total += 1
                return False
        if dropped:
            record.msg = f"{record.msg} [{dropped} more like this were not logged in the last {self.period_s:g} s]"
        return True


_FILTER = RateLimitFilter()


def install(logger_names: tuple[str, ...] = LIMITED_LOGGERS) -> RateLimitFilter:
    """Put the shared filter on each named logger (idempotent); it is returned for tests and counters."""
    for name in logger_names:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)
    return _FILTER
