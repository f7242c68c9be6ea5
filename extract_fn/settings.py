"""The reference extractor's settings, read from the environment once at start.

| Variable | Default | Meaning |
|---|---|---|
| ``EXTRACTOR_TOKENS`` | (required) | comma-separated bearer tokens the service accepts; several allow rotation |
| ``EXTRACTOR_MAX_BYTES`` | 67108864 | the largest original accepted (``max_bytes`` in capabilities) |
| ``EXTRACTOR_TIMEOUT_S`` | 60 | seconds one extraction may run in its worker before it is killed (``timeout``) |
| ``EXTRACTOR_MEMORY_LIMIT_MB`` | 2048 | each worker's heap limit (``resource_limit`` past it); 0: none |
| ``EXTRACTOR_MAX_OUTPUT_BYTES`` | 268435456 | the largest artifact a worker may return (``resource_limit`` past it) |
| ``EXTRACTOR_WORKERS`` | CPU count | worker processes, so extractions that run at once |
| ``EXTRACTOR_CALLER_MAX_REQUESTS`` | 0 (half the pool) | requests one caller (token) may have admitted at once |
| ``EXTRACTOR_CALLER_WORKERS`` | 0 (every worker) | workers one caller's requests may occupy at once |
| ``EXTRACTOR_BUFFER_BYTES`` | 67108864 | request bodies held in memory across all requests; past it they go to disk |
| ``EXTRACTOR_SPOOL_BYTES`` | 1048576 | a body or an artifact larger than this goes through a temporary file |
| ``EXTRACTOR_HEADER_TIMEOUT_S`` | 10 | the request line and headers must arrive within this (``serve``) |
| ``EXTRACTOR_BODY_TIMEOUT_S`` | 120 | the whole body must arrive within this (408 past it) |
| ``EXTRACTOR_MAX_CONNECTIONS`` | 0 (half the fd limit, at most 4096) | open connections ``serve`` holds |

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
ENV_CALLER_MAX_REQUESTS: Final = "EXTRACTOR_CALLER_MAX_REQUESTS"
ENV_CALLER_WORKERS: Final = "EXTRACTOR_CALLER_WORKERS"
ENV_BUFFER_BYTES: Final = "EXTRACTOR_BUFFER_BYTES"
ENV_SPOOL_BYTES: Final = "EXTRACTOR_SPOOL_BYTES"
ENV_HEADER_TIMEOUT_S: Final = "EXTRACTOR_HEADER_TIMEOUT_S"
ENV_BODY_TIMEOUT_S: Final = "EXTRACTOR_BODY_TIMEOUT_S"
ENV_MAX_CONNECTIONS: Final = "EXTRACTOR_MAX_CONNECTIONS"

DEFAULT_TIMEOUT_S: Final = 60.0
DEFAULT_MEMORY_LIMIT_MB: Final = 2048
DEFAULT_MAX_OUTPUT_BYTES: Final = 256 * 1024 * 1024
MIN_MEMORY_LIMIT_MB: Final = 128  # below this a worker cannot even start its interpreter and libraries
MAX_WORKERS: Final = 256
DEFAULT_BUFFER_BYTES: Final = 64 * 1024 * 1024
DEFAULT_SPOOL_BYTES: Final = 1024 * 1024
DEFAULT_HEADER_TIMEOUT_S: Final = 10.0
DEFAULT_BODY_TIMEOUT_S: Final = 120.0
MAX_DEFAULT_CONNECTIONS: Final = 4096
FD_RESERVE: Final = 64  # descriptors kept for the workers' pipes, temporary files, logs and the listener
KEY_VAULT_REFERENCE: Final = "@microsoft.keyvault("


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
    caller_max_requests: int = 0  # 0: all the pool admits but `workers` places, kept for the other callers
    caller_workers: int = 0  # 0: every worker (round-robin between callers still applies)
    buffer_bytes: int = DEFAULT_BUFFER_BYTES
    spool_bytes: int = DEFAULT_SPOOL_BYTES
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S
    max_connections: int = 0  # 0: max_connections_for(the process's fd limit)

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
        for name, value in (
            (ENV_CALLER_MAX_REQUESTS, self.caller_max_requests),
            (ENV_CALLER_WORKERS, self.caller_workers),
        ):
            if value < 0:
                raise SettingsError(f"{name} must be 0 (the default share) or a positive number, got {value}")
        if self.spool_bytes <= 0:
            raise SettingsError(f"{ENV_SPOOL_BYTES} must be a positive number of bytes, got {self.spool_bytes}")
        if self.buffer_bytes < self.spool_bytes:
            raise SettingsError(
                f"{ENV_BUFFER_BYTES} must be at least {ENV_SPOOL_BYTES} ({self.spool_bytes}), got {self.buffer_bytes}"
            )
        for name, seconds in ((ENV_HEADER_TIMEOUT_S, self.header_timeout_s), (ENV_BODY_TIMEOUT_S, self.body_timeout_s)):
            if not (math.isfinite(seconds) and seconds > 0):
                raise SettingsError(f"{name} must be a positive number of seconds, got {seconds}")
        if self.max_connections < 0:
            raise SettingsError(f"{ENV_MAX_CONNECTIONS} must be 0 (automatic) or positive, got {self.max_connections}")

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
        if KEY_VAULT_REFERENCE in raw_tokens.lower():
            # App Service leaves the reference text in place when it cannot resolve it; taken literally it would
            # become a token anyone reading the app's configuration knows, and no caller would have the real one.
            raise SettingsError(
                f"{ENV_TOKENS} is an unresolved Key Vault reference (@Microsoft.KeyVault(...)): the platform could "
                "not read the secret. Give the app's managed identity permission to get secrets from the vault, "
                "check the reference's SecretUri (or VaultName and SecretName), and restart; the extractor will "
                "not use the reference text as a token"
            )
        tokens = tuple(t.strip() for t in raw_tokens.split(",") if t.strip())
        settings = cls(
            tokens=tokens,
            max_bytes=_int(env, ENV_MAX_BYTES, DEFAULT_MAX_BYTES),
            timeout_s=_float(env, ENV_TIMEOUT_S, DEFAULT_TIMEOUT_S),
            memory_limit_mb=_int(env, ENV_MEMORY_LIMIT_MB, DEFAULT_MEMORY_LIMIT_MB),
            max_output_bytes=_int(env, ENV_MAX_OUTPUT_BYTES, DEFAULT_MAX_OUTPUT_BYTES),
            workers=_int(env, ENV_WORKERS, cpu_count()),
            caller_max_requests=_int(env, ENV_CALLER_MAX_REQUESTS, 0),
            caller_workers=_int(env, ENV_CALLER_WORKERS, 0),
            buffer_bytes=_int(env, ENV_BUFFER_BYTES, DEFAULT_BUFFER_BYTES),
            spool_bytes=_int(env, ENV_SPOOL_BYTES, DEFAULT_SPOOL_BYTES),
            header_timeout_s=_float(env, ENV_HEADER_TIMEOUT_S, DEFAULT_HEADER_TIMEOUT_S),
            body_timeout_s=_float(env, ENV_BODY_TIMEOUT_S, DEFAULT_BODY_TIMEOUT_S),
            max_connections=_int(env, ENV_MAX_CONNECTIONS, 0),
        )
        if require_tokens:
            settings.require_tokens()
        return settings


def max_connections_for(fd_limit: int) -> int:
    """The default connection cap: half the descriptors the process may open, at most 4096, so connections can
    never take the descriptors the workers' pipes, temporary files and the listener need."""
    return max(1, min(MAX_DEFAULT_CONNECTIONS, (fd_limit - FD_RESERVE) // 2))


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
