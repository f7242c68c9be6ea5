"""The reference extractor's settings, read from the environment once at start.

| Variable | Default | Meaning |
|---|---|---|
| ``EXTRACTOR_TOKENS`` | required | comma-separated bearer tokens the service accepts; several allow rotation |
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
| ``EXTRACTOR_OCR`` | on | ``off``: no OCR (pages without a text layer are failed units and ``ocr`` is lost) |
| ``EXTRACTOR_OCR_MAX_PAGES`` | 40 | pages and pictures one file may have read by OCR; past it they are failed units |
| ``EXTRACTOR_OCR_BUDGET_S`` | 30 | seconds of OCR one file may use (at most half the timeout); pages past it fail |

Each variable is a ``Setting`` declaration (``shared.settings_spec``; its default written once, the table above
checked against it by tests/test_settings_spec.py). Invalid values raise one ``SettingsError`` whose message names
every bad variable. The tokens never appear in a repr or a message.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Final

from shared.contract import DEFAULT_MAX_BYTES
from shared.settings_spec import Problem, Setting, declared, read_all, setting_field
from shared.settings_spec import SettingsError as SettingsError  # noqa: PLC0414 - the one error, re-exported
from shared.version import package_version

EXTRACTOR_NAME: Final = "loom-reference"


def __getattr__(name: str) -> str:
    """``EXTRACTOR_VERSION``: pyproject.toml's version (``shared.version``), read when first asked for, not at
    import (the CLI's ``extract`` never reports it, and reading it costs a cold start tomllib and a file)."""
    if name == "EXTRACTOR_VERSION":
        return package_version()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
ENV_OCR: Final = "EXTRACTOR_OCR"
ENV_OCR_MAX_PAGES: Final = "EXTRACTOR_OCR_MAX_PAGES"
ENV_OCR_BUDGET_S: Final = "EXTRACTOR_OCR_BUDGET_S"

MIN_MEMORY_LIMIT_MB: Final = 128  # below this a worker cannot even start its interpreter and libraries
MAX_WORKERS: Final = 256
MAX_DEFAULT_CONNECTIONS: Final = 4096
FD_RESERVE: Final = 64  # descriptors kept for the workers' pipes, temporary files, logs and the listener
KEY_VAULT_REFERENCE: Final = "@microsoft.keyvault("


def cpu_count() -> int:
    """The CPUs this process may run on (its affinity mask where the platform has one)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def _integer(raw: str) -> int:
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        raise ValueError(f"must be an integer, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"must not be negative, got {value}")
    return value


def _seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"must be a number of seconds, got {raw!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"must be a positive number of seconds, got {raw!r}")
    return value


def _on_off(raw: str) -> bool:
    value = raw.lower()
    if value in ("on", "true", "1"):
        return True
    if value in ("off", "false", "0"):
        return False
    raise ValueError(f"must be on or off, got {raw!r}")


def _tokens(raw: str) -> tuple[str, ...]:
    if KEY_VAULT_REFERENCE in raw.lower():
        # App Service leaves the reference text in place when it cannot resolve it; taken literally it would
        # become a token anyone reading the app's configuration knows, and no caller would have the real one.
        raise ValueError(
            f"{ENV_TOKENS} is an unresolved Key Vault reference (@Microsoft.KeyVault(...)): the platform could "
            "not read the secret. Give the app's managed identity permission to get secrets from the vault, "
            "check the reference's SecretUri (or VaultName and SecretName), and restart; the extractor will "
            "not use the reference text as a token"
        )
    return tuple(t.strip() for t in raw.split(",") if t.strip())


TOKENS: Final[Setting[tuple[str, ...]]] = Setting(
    ENV_TOKENS,
    (),
    _tokens,
    "comma-separated bearer tokens the service accepts; several allow rotation",
    secret=True,
    default_doc="required",
)
MAX_BYTES: Final = Setting(ENV_MAX_BYTES, DEFAULT_MAX_BYTES, _integer, "the largest original accepted")
TIMEOUT_S: Final = Setting(ENV_TIMEOUT_S, 60.0, _seconds, "seconds one extraction may run in its worker")
MEMORY_LIMIT_MB: Final = Setting(ENV_MEMORY_LIMIT_MB, 2048, _integer, "each worker's heap limit; 0: none")
MAX_OUTPUT_BYTES: Final = Setting(
    ENV_MAX_OUTPUT_BYTES, 256 * 1024 * 1024, _integer, "the largest artifact a worker may return"
)
WORKERS: Final = Setting(ENV_WORKERS, 1, _integer, "worker processes", factory=cpu_count, default_doc="CPU count")
CALLER_MAX_REQUESTS: Final = Setting(
    ENV_CALLER_MAX_REQUESTS,
    0,
    _integer,
    "requests one caller may have admitted at once",
)
CALLER_WORKERS: Final = Setting(ENV_CALLER_WORKERS, 0, _integer, "workers one caller may occupy at once")
BUFFER_BYTES: Final = Setting(ENV_BUFFER_BYTES, 64 * 1024 * 1024, _integer, "request bodies held in memory")
SPOOL_BYTES: Final = Setting(ENV_SPOOL_BYTES, 1024 * 1024, _integer, "bodies and artifacts past it go to a file")
HEADER_TIMEOUT_S: Final = Setting(ENV_HEADER_TIMEOUT_S, 10.0, _seconds, "request line and headers deadline")
BODY_TIMEOUT_S: Final = Setting(ENV_BODY_TIMEOUT_S, 120.0, _seconds, "whole body deadline")
MAX_CONNECTIONS: Final = Setting(
    ENV_MAX_CONNECTIONS,
    0,
    _integer,
    "open connections serve holds",
)

# OCR (extract_fn.ocr): the defaults fit TIMEOUT_S: ~1 s an upright page on one core, so 30 s reads ~25-30 pages and
# leaves half the minute for the rest of the file (the budget used is at most half of TIMEOUT_S, whatever it says).
OCR: Final = Setting(ENV_OCR, True, _on_off, "OCR of scanned pages and pictures", default_doc="on")
OCR_MAX_PAGES: Final = Setting(ENV_OCR_MAX_PAGES, 40, _integer, "pages and pictures one file may have read by OCR")
OCR_BUDGET_S: Final = Setting(ENV_OCR_BUDGET_S, 30.0, _seconds, "seconds of OCR one file may use")

# The defaults by name, for the modules that use them (written once, in the declarations above).
DEFAULT_TIMEOUT_S: Final = TIMEOUT_S.default
DEFAULT_MEMORY_LIMIT_MB: Final = MEMORY_LIMIT_MB.default
DEFAULT_MAX_OUTPUT_BYTES: Final = MAX_OUTPUT_BYTES.default
DEFAULT_BUFFER_BYTES: Final = BUFFER_BYTES.default
DEFAULT_SPOOL_BYTES: Final = SPOOL_BYTES.default
DEFAULT_HEADER_TIMEOUT_S: Final = HEADER_TIMEOUT_S.default
DEFAULT_BODY_TIMEOUT_S: Final = BODY_TIMEOUT_S.default


@dataclass(frozen=True, slots=True)
class Settings:
    tokens: tuple[str, ...] = setting_field(TOKENS)
    max_bytes: int = setting_field(MAX_BYTES)
    timeout_s: float = setting_field(TIMEOUT_S)
    memory_limit_mb: int = setting_field(MEMORY_LIMIT_MB)
    max_output_bytes: int = setting_field(MAX_OUTPUT_BYTES)
    workers: int = setting_field(WORKERS)
    caller_max_requests: int = setting_field(CALLER_MAX_REQUESTS)  # 0: all but `workers` places, kept for others
    caller_workers: int = setting_field(CALLER_WORKERS)  # 0: every worker (the fair share by worker time still applies)
    buffer_bytes: int = setting_field(BUFFER_BYTES)
    spool_bytes: int = setting_field(SPOOL_BYTES)
    header_timeout_s: float = setting_field(HEADER_TIMEOUT_S)
    body_timeout_s: float = setting_field(BODY_TIMEOUT_S)
    max_connections: int = setting_field(MAX_CONNECTIONS)  # 0: max_connections_for(the process's fd limit)
    ocr: bool = setting_field(OCR)
    ocr_max_pages: int = setting_field(OCR_MAX_PAGES)
    ocr_budget_s: float = setting_field(OCR_BUDGET_S)

    def __post_init__(self) -> None:
        # No tokens is a valid value for the CLI, which serves no HTTP; the HTTP app refuses it (require_tokens).
        problems = _out_of_range(self)
        if problems:
            raise SettingsError(problems)

    @property
    def memory_limit_bytes(self) -> int | None:
        return self.memory_limit_mb * 1024 * 1024 if self.memory_limit_mb else None

    def require_tokens(self) -> None:
        """Raise ``SettingsError`` naming EXTRACTOR_TOKENS when no token is set: the HTTP service needs one."""
        if not self.tokens:
            raise SettingsError([_NO_TOKENS])

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, *, require_tokens: bool = True) -> Settings:
        """Read and check every setting; ``SettingsError`` names every bad one.

        ``require_tokens=False`` is for the CLI's ``extract``, which serves no HTTP and needs no token.
        """
        env = os.environ if environ is None else environ
        fields = declared(cls)
        read, problems = read_all([decl for _, decl in fields], env)
        values = {name: read[decl.name] for name, decl in fields}
        unparsed = {p.setting for p in problems}
        # The range checks on the values as read, so out-of-range settings are listed with the unparsable ones.
        problems += [p for p in _out_of_range(SimpleNamespace(**values)) if p.setting not in unparsed]
        if require_tokens and not values["tokens"] and ENV_TOKENS not in unparsed:
            problems.append(_NO_TOKENS)
        if problems:
            raise SettingsError(problems)
        return cls(**values)


DECLARATIONS: Final = tuple(decl for _, decl in declared(Settings))
"""Every extractor setting, once each (the docs table in docs/extractor.md is checked against it)."""

_NO_TOKENS: Final = Problem(
    ENV_TOKENS,
    f"{ENV_TOKENS} is not set: the extractor refuses to start without at least one bearer token "
    "(a comma-separated list, so a new token can be added before the old one is removed)",
)


def _out_of_range(s: Settings | SimpleNamespace) -> list[Problem]:
    """Every out-of-range value (each naming its setting): of a ``Settings`` or of the values ``from_env`` read."""
    problems: list[Problem] = []

    def bad(name: str, what: str) -> None:
        problems.append(Problem(name, what))

    if any(not _token_ok(token) for token in s.tokens):
        bad(
            ENV_TOKENS,
            f"{ENV_TOKENS} holds a token with a character that cannot be sent in an Authorization header "
            "(tokens must be visible ASCII without spaces or commas)",
        )
    if s.max_bytes <= 0:
        bad(ENV_MAX_BYTES, f"{ENV_MAX_BYTES} must be a positive number of bytes, got {s.max_bytes}")
    if not (math.isfinite(s.timeout_s) and s.timeout_s > 0):
        bad(ENV_TIMEOUT_S, f"{ENV_TIMEOUT_S} must be a positive number of seconds, got {s.timeout_s}")
    if s.memory_limit_mb != 0 and s.memory_limit_mb < MIN_MEMORY_LIMIT_MB:
        bad(
            ENV_MEMORY_LIMIT_MB,
            f"{ENV_MEMORY_LIMIT_MB} must be 0 (no limit) or at least {MIN_MEMORY_LIMIT_MB}, got {s.memory_limit_mb}",
        )
    if s.max_output_bytes <= 0:
        bad(
            ENV_MAX_OUTPUT_BYTES,
            f"{ENV_MAX_OUTPUT_BYTES} must be a positive number of bytes, got {s.max_output_bytes}",
        )
    if not 1 <= s.workers <= MAX_WORKERS:
        bad(ENV_WORKERS, f"{ENV_WORKERS} must be between 1 and {MAX_WORKERS}, got {s.workers}")
    for name, value in (
        (ENV_CALLER_MAX_REQUESTS, s.caller_max_requests),
        (ENV_CALLER_WORKERS, s.caller_workers),
    ):
        if value < 0:
            bad(name, f"{name} must be 0 (the default share) or a positive number, got {value}")
    if s.spool_bytes <= 0:
        bad(ENV_SPOOL_BYTES, f"{ENV_SPOOL_BYTES} must be a positive number of bytes, got {s.spool_bytes}")
    elif s.buffer_bytes < s.spool_bytes:
        bad(
            ENV_BUFFER_BYTES,
            f"{ENV_BUFFER_BYTES} must be at least {ENV_SPOOL_BYTES} ({s.spool_bytes}), got {s.buffer_bytes}",
        )
    for name, seconds in ((ENV_HEADER_TIMEOUT_S, s.header_timeout_s), (ENV_BODY_TIMEOUT_S, s.body_timeout_s)):
        if not (math.isfinite(seconds) and seconds > 0):
            bad(name, f"{name} must be a positive number of seconds, got {seconds}")
    if s.max_connections < 0:
        bad(
            ENV_MAX_CONNECTIONS,
            f"{ENV_MAX_CONNECTIONS} must be 0 (automatic) or positive, got {s.max_connections}",
        )
    if s.ocr_max_pages < 0:
        bad(ENV_OCR_MAX_PAGES, f"{ENV_OCR_MAX_PAGES} must be 0 (no OCR) or a positive number, got {s.ocr_max_pages}")
    if not (math.isfinite(s.ocr_budget_s) and s.ocr_budget_s >= 0):
        bad(ENV_OCR_BUDGET_S, f"{ENV_OCR_BUDGET_S} must be a number of seconds (0 or more), got {s.ocr_budget_s}")
    return problems


def max_connections_for(fd_limit: int) -> int:
    """The default connection cap: half the descriptors the process may open, at most 4096, so connections can
    never take the descriptors the workers' pipes, temporary files and the listener need."""
    return max(1, min(MAX_DEFAULT_CONNECTIONS, (fd_limit - FD_RESERVE) // 2))


def _token_ok(token: str) -> bool:
    # What can travel in an Authorization header unchanged: visible ASCII, no separators we split on.
    return bool(token) and all(33 <= ord(c) <= 126 for c in token) and "," not in token
