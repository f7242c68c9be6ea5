"""Stop requests by signal (SIGINT, SIGTERM, SIGHUP), noted and acted on by the main thread.

A Python signal handler runs in the main thread between two of its bytecodes, possibly while that thread holds a
lock: the handler that called ``threading.Event.set()`` deadlocked on a second SIGTERM (the Event's lock was held by
the ``Event.wait`` it interrupted). So the handler only counts; the main thread polls ``requested``.
"""

from __future__ import annotations

import signal
from types import FrameType

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopSignals:
    def __init__(self) -> None:
        self.count = 0  # written only by the handler
        self.last: int | None = None

    def install(self) -> StopSignals:
        for sig in STOP_SIGNALS:
            signal.signal(sig, self._note)
        return self

    def _note(self, signum: int, _frame: FrameType | None) -> None:
        self.count += 1
        self.last = signum

    @property
    def requested(self) -> bool:
        return self.count > 0

    @property
    def name(self) -> str:
        return signal.Signals(self.last).name if self.last is not None else "none"
