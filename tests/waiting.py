"""One way for a test to wait for a condition it cannot be told about (a row in storage, a process's state in /proc):
ask again until it holds or a generous deadline passes. Never a fixed sleep standing in for the condition."""

from __future__ import annotations

import time
from collections.abc import Callable

POLL_S = 0.02


def wait_until(condition: Callable[[], object], timeout_s: float, what: str) -> None:
    """Return as soon as ``condition()`` is true; fail naming ``what`` if it is not within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout_s:g} s: {what}"
        time.sleep(POLL_S)
