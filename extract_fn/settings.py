"""The reference extractor's settings, read from the environment once at start.

| Variable | Default | Meaning |
|---|---|---|
| ``EXTRACTOR_TOKENS`` | (required) | comma-separated bearer tokens the service accepts; several allow rotation |
| ``EXTRACTOR_MAX_BYTES`` | 67108864 | the largest original accepted (``max_bytes`` in capabilities) |
| ``EXTRACTOR_TIMEOUT_S`` | 60 | seconds one extraction may run in its worker before it is killed (``timeout``) |
| ``EXTRACTOR_MEMORY_LIMIT_MB`` | 2048 | each worker's heap limit (``resource_limit`` past it); 0: none |
| ``EXTRACTOR_MAX_OUTPUT_BYTES`` | 268435456 | the largest artifact a worker may return (``resource_limit`` past it) |
| ``EXTRACTOR_WORKERS`` | CPU count | worker processes, so extractions that run at once |

An invalid value raises ``SettingsError`` whose message names the variable. The tokens never appear in a repr.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Final

from shared.contract import DEFAULT_MAX_BYTES

EXTRACTOR_NAME: Final = "loom-reference"
EXTRACTOR_VERSION: Final = "1.0.0"  # the package version (pyproject.toml)

ENV_TOKENS: Final = "EXTRACTOR_TOKENS"
ENV_MAX_BYTES: Final = "EXTRACTOR_MAX_BYTES"
ENV_TIMEOUT_S: Final = "EXTRACTOR_TIMEOUT_S"
ENV_MEMORY_LIMIT_MB: Final = "EXTRACTOR_MEMORY_LIMIT_MB"
ENV_MAX_OUTPUT_BYTES: Final = "EXTRACTOR_MAX_OUTPUT_BYTES"
ENV_WORKERS: Final = "EXTRACTOR_WORKERS"

DEFAULT_TIMEOUT_S: Final = 60.0
DEFAULT_MEMORY_LIMIT_MB: Final = 2048
DEFAULT_MAX_OUTPUT_BYTES: Final = 256 * 1024 * 1024
MIN_MEMORY_LIMIT_MB: Final = 128  # below this a worker cannot even start its interpreter and libraries
MAX_WORKERS: Final = 256


class SettingsError(ValueError):
    """A setting is missing or invalid; the message names the variable and says what it must be."""


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity mask where the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


@dataclass(frozen=True, slots=True)
class Settings:
    tokens: tuple[str, ...] = field(default=(), repr=False)
    max_bytes: int = DEFAULT_MAX_BYTES
    timeout_s: float = DEFAULT_TIMEOUT_S
    memory_limit_mb: int = DEFAULT_MEMORY_LIMIT_MB
    max_output_bytes: int = DEFAULT_MAX_OUTPUT_BYTES
    workers: int = field(default_factory=cpu_count)

    def __post_init__(self) -> None:
        # No tokens is a valid value for the CLI, which serves no HTTP; the HTTP app refuses it (require_tokens).
        for token in self.tokens:
            _check_token(token)
        if self.max_bytes <= 0:
            raise SettingsError(f"{ENV_MAX_BYTES} must be a positive number of bytes, got {self.max_bytes}")
        if not (math.isfinite(self.timeout_s) and self.timeout_s > 0):
            raise SettingsError(f"{ENV_TIMEOUT_S} must be a positive number of seconds, got {self.timeout_s}")
        if self.memory_limit_mb != 0 and self.memory_limit_mb < MIN_MEMORY_LIMIT_MB:
            raise SettingsError(
                f"{ENV_MEMORY_LIMIT_MB} must be 0 (no limit) or at least {MIN_MEMORY_LIMIT_MB}, "
                f"got {self.memory_limit_mb}"
            )
        if self.max_output_bytes <= 0:
            raise SettingsError(
                f"{ENV_MAX_OUTPUT_BYTES} must be a positive number of bytes, got {self.max_output_bytes}"
            )
        if not 1 <= self.workers <= MAX_WORKERS:
            raise SettingsError(f"{ENV_WORKERS} must be between 1 and {MAX_WORKERS}, got {self.workers}")

    @property
    def memory_limit_bytes(self) -> int | None:
        return self.memory_limit_mb * 1024 * 1024 if self.memory_limit_mb else None

    def require_tokens(self) -> None:
        """Raise ``SettingsError`` naming EXTRACTOR_TOKENS when no token is set: the HTTP service needs one."""
        if not self.tokens:
            raise SettingsError(
                f"{ENV_TOKENS} is not set: the extractor refuses to start without at least one bearer token "
                "(a comma-separated list, so a new token can be added before the old one is removed)"
            )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, require_tokens: bool = True) -> Settings:
        """Read and check every setting; ``SettingsError`` names the first bad one.

        ``require_tokens=False`` is for the CLI's ``extract``, which serves no HTTP and needs no token.
        """
        env = os.environ if environ is None else environ
        raw_tokens = env.get(ENV_TOKENS, "")
        tokens = tuple(t.strip() for t in raw_tokens.split(",") if t.strip())
        settings = cls(
            tokens=tokens,
            max_bytes=_int(env, ENV_MAX_BYTES, DEFAULT_MAX_BYTES),
            timeout_s=_float(env, ENV_TIMEOUT_S, DEFAULT_TIMEOUT_S),
            memory_limit_mb=_int(env, ENV_MEMORY_LIMIT_MB, DEFAULT_MEMORY_LIMIT_MB),
            max_output_bytes=_int(env, ENV_MAX_OUTPUT_BYTES, DEFAULT_MAX_OUTPUT_BYTES),
            workers=_int(env, ENV_WORKERS, cpu_count()),
        )
        if require_tokens:
            settings.require_tokens()
        return settings


def _check_token(token: str) -> None:
    # What can travel in an Authorization header unchanged: visible ASCII, no separators we split on.
    if not token or not all(33 <= ord(c) <= 126 for c in token) or "," in token:
        raise SettingsError(
            f"{ENV_TOKENS} holds a token with a character that cannot be sent in an Authorization header "
            "(tokens must be visible ASCII without spaces or commas)"
        )


def _int(env: Mapping[str, str], name: str, default: int) -> int:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        raise SettingsError(f"{name} must be an integer, got {raw!r}") from None
    if value < 0:
        raise SettingsError(f"{name} must not be negative, got {value}")
    return value


def _float(env: Mapping[str, str], name: str, default: float) -> float:
    raw = env.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise SettingsError(f"{name} must be a number of seconds, got {raw!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise SettingsError(f"{name} must be a positive number of seconds, got {raw!r}")
    return value
