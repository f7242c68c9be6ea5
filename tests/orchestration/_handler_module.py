"""A module that registers a poll handler when imported (for the lazy-import test of the handler registry)."""

from __future__ import annotations

from typing import Any

from shared.orchestration.outcomes import PollOutcome, register_poll_handler


def handle(job: Any, config: Any, settings: Any) -> PollOutcome:
    return PollOutcome.processing("registered by import")


register_poll_handler("XTEST", handle)
