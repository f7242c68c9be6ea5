"""Polling backoff and stop conditions.

Per field, the first that is set wins: ``extractor.jobTrackingConfig.*``, then the app settings
``FLUXX_EXTRACTOR_MAX_POLLING_ATTEMPTS``, ``FLUXX_EXTRACTOR_POLL_INTERVAL_MS``, ``FLUXX_EXTRACTOR_MAX_DELAY_MS``,
``FLUXX_EXTRACTOR_MAX_POLL_DURATION_MS``, then the documented defaults (60 attempts, 10 000 ms, 120 000 ms,
7 200 000 ms).

The delay before poll attempt ``n`` (n = 1 is the first poll after submission)::

    delayMs = min(baseIntervalMs * 2^(n-1), effectiveMaxDelayMs)
    effectiveMaxDelayMs = maxDelayMs if maxDelayMs > 0 else baseIntervalMs

With full jitter (``POLL_JITTER=full``) the delay is drawn uniformly from [0, delayMs].

Polling stops and the job fails when, after a poll that did not finish the job, ``attemptNumber >=
maxPollingAttempts`` or ``jobAgeMs > maxDurationMs`` (the job's age counts from its creation).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from pydantic import AliasChoices, BaseModel, ConfigDict, Field, StrictInt

from shared.orchestration.settings import OrchestrationSettings


class JobTrackingConfig(BaseModel):
    """``extractor.jobTrackingConfig`` as registered; every field optional (the app settings fill the gaps)."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    max_polling_attempts: StrictInt | None = Field(
        default=None, ge=1, validation_alias=AliasChoices("maxPollingAttempts", "max_polling_attempts")
    )
    base_interval_ms: StrictInt | None = Field(
        default=None,
        ge=0,
        validation_alias=AliasChoices("baseIntervalMs", "pollIntervalMs", "base_interval_ms", "poll_interval_ms"),
    )
    max_delay_ms: StrictInt | None = Field(default=None, ge=0, validation_alias=AliasChoices("maxDelayMs"))
    max_duration_ms: StrictInt | None = Field(
        default=None,
        ge=1,
        validation_alias=AliasChoices("maxPollDurationMs", "maxDurationMs", "max_duration_ms"),
    )


@dataclass(frozen=True, slots=True)
class Tracking:
    """The resolved job tracking configuration of one job."""

    max_polling_attempts: int
    base_interval_ms: int
    max_delay_ms: int
    max_duration_ms: int
    jitter: bool = False

    @property
    def effective_max_delay_ms(self) -> int:
        return self.max_delay_ms if self.max_delay_ms > 0 else self.base_interval_ms

    def to_dict(self) -> dict[str, int | bool]:
        return {
            "maxPollingAttempts": self.max_polling_attempts,
            "baseIntervalMs": self.base_interval_ms,
            "maxDelayMs": self.max_delay_ms,
            "maxDurationMs": self.max_duration_ms,
            "jitter": self.jitter,
        }


def resolve_tracking(config: JobTrackingConfig | None, settings: OrchestrationSettings) -> Tracking:
    c = config or JobTrackingConfig()
    return Tracking(
        max_polling_attempts=(
            c.max_polling_attempts if c.max_polling_attempts is not None else settings.max_polling_attempts
        ),
        base_interval_ms=c.base_interval_ms if c.base_interval_ms is not None else settings.poll_interval_ms,
        max_delay_ms=c.max_delay_ms if c.max_delay_ms is not None else settings.max_delay_ms,
        max_duration_ms=c.max_duration_ms if c.max_duration_ms is not None else settings.max_poll_duration_ms,
        jitter=settings.poll_jitter == "full",
    )


def delay_ms(attempt_number: int, tracking: Tracking, rand: Callable[[], float] = random.random) -> int:
    """The delay before poll attempt ``attempt_number`` (>= 1)."""
    n = max(1, attempt_number)
    cap = tracking.effective_max_delay_ms
    # 2^(n-1) grows past any cap quickly: stop doubling once over it (and keep the exponent small).
    exponent = min(n - 1, 62)
    delay = min(tracking.base_interval_ms * (1 << exponent), cap)
    if tracking.jitter:
        delay = int(rand() * (delay + 1)) if delay > 0 else 0
        delay = min(delay, cap)
    return delay


def stop_reason(attempt_number: int, job_age_ms: float, tracking: Tracking) -> str | None:
    """Why polling stops after attempt ``attempt_number`` left the job unfinished; None to keep polling."""
    if attempt_number >= tracking.max_polling_attempts:
        return f"polling stopped: {attempt_number} attempts reached maxPollingAttempts {tracking.max_polling_attempts}"
    if job_age_ms > tracking.max_duration_ms:
        return f"polling stopped: job age {int(job_age_ms)} ms exceeds maxDurationMs {tracking.max_duration_ms}"
    return None
