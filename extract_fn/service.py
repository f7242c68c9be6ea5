"""The extraction path shared by the HTTP app and the CLI: options -> sniff -> worker (extract, validate) -> bytes.

``ExtractorService.parse_query`` checks the request's parameters (``invalid_option``, ``unsupported_format``,
``format_unavailable``); ``extract`` checks the size (``too_large``) and the content (``format_mismatch``), runs the
format module in the worker pool (``timeout``, ``resource_limit``, the module's own codes, ``corrupt``), and checks
the artifact with the shared validator before it leaves. An artifact that fails the validator is our bug, never the
file's: it is logged with its violations and answered ``corrupt`` saying so, so the server does not get a 200 it
would refuse as ``invalid_artifact``.

Everything raises ``ExtractionError`` (a 422 error body) or ``PoolUnavailable`` (a 503: try again later).
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from extract_fn.formats import MODULES, available_formats, warm_imports
from extract_fn.formats.base import ExtractRequest
from extract_fn.settings import EXTRACTOR_NAME, Settings
from extract_fn.sniff import check_format
from extract_fn.text_decoding import known_codec
from extract_fn.workers import Admission, PoolUnavailable, SpooledReply, WorkerPool
from shared.contract import (
    CONTRACT_VERSION,
    FORMAT_OPTIONS,
    FORMATS,
    OPTION_ENCODING,
    OPTION_SQL_DIALECT,
    ErrorCode,
    ExtractionError,
)
from shared.version import package_version

if TYPE_CHECKING:  # the CLI never buffers a body: buffering (ctypes, mmap, tempfile) is the app's import
    from extract_fn.buffering import Body

log = logging.getLogger("extract_fn")

PARAM_FORMAT: Final = "format"
PARAM_NAME: Final = "name"
PARAMETERS: Final = (PARAM_FORMAT, PARAM_NAME, OPTION_ENCODING, OPTION_SQL_DIALECT)
MAX_NAME_CHARS: Final = 4096
MAX_PARAMETERS: Final = 64

__all__ = ["ExtractorService", "PoolUnavailable", "Query", "default_extractors", "sql_dialects"]


@dataclass(frozen=True, slots=True)
class Query:
    """The checked parameters of one POST /v1/extract."""

    format: str
    name: str = ""
    encoding: str | None = None
    sql_dialect: str | None = None


def default_extractors() -> dict[str, str]:
    """format -> "module:function" for every format whose module exists in this deployment."""
    return {fmt: f"{MODULES[fmt]}:extract" for fmt in available_formats()}


@functools.cache
def sql_dialects() -> tuple[str, ...]:
    """The ``sql_dialect`` values this service takes: sqlglot's dialect names (``extract_fn.sql_dialect_names``,
    checked against sqlglot by the suite; empty if sqlglot is missing). sqlglot itself is not imported here."""
    import importlib.util

    from extract_fn.sql_dialect_names import SQL_DIALECTS

    return SQL_DIALECTS if importlib.util.find_spec("sqlglot") is not None else ()


def _short(value: str, limit: int = 80) -> str:
    return repr(value if len(value) <= limit else value[:limit] + "...")


def _is_utf8(value: str) -> bool:
    """False for a value holding lone surrogates: bytes that were not UTF-8, kept by ``surrogateescape``."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _escaped(value: str, limit: int = 80) -> str:
    """The value for a message, its undecodable bytes as \\xNN."""
    head = value[:limit]
    try:
        shown = head.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate surrogateescape did not make
        shown = head.encode("utf-8", "backslashreplace").decode("utf-8")
    return f"'{shown}'" + ("..." if len(value) > limit else "")


def _invalid(message: str) -> ExtractionError:
    return ExtractionError(ErrorCode.INVALID_OPTION, message)


MAX_MESSAGE_CHARS: Final = 2000


def error_body(code: str, message: str) -> bytes:
    """The contract's error body ``{"error": {"code", "message"}}``."""
    import orjson

    message = message.encode("utf-8", "replace").decode("utf-8")[:MAX_MESSAGE_CHARS]
    return orjson.dumps({"error": {"code": code, "message": message}})


class ExtractorService:
    """The reference extractor without HTTP. ``extractors`` maps format -> "module:function" (default: every format
    module this deployment has); a format missing from it is ``format_unavailable``."""

    def __init__(
        self,
        settings: Settings,
        *,
        extractors: Mapping[str, str] | None = None,
        pool: WorkerPool | None = None,
    ) -> None:
        self.settings = settings
        self.extractors = dict(default_extractors() if extractors is None else extractors)
        unknown = sorted(set(self.extractors) - set(FORMATS))
        if unknown:
            raise ValueError(f"extractors name formats outside the contract: {unknown}")
        self.owns_pool = pool is None
        self.pool = pool or WorkerPool(
            settings.workers,
            timeout_s=settings.timeout_s,
            memory_limit_bytes=settings.memory_limit_bytes,
            max_output_bytes=settings.max_output_bytes,
            caller_max_requests=settings.caller_max_requests or None,
            caller_workers=settings.caller_workers or None,
            spool_reply_bytes=settings.spool_bytes,
            preload=warm_imports(self.extractors),
        )

    def start(self) -> None:
        self.pool.start()

    def close(self) -> None:
        if self.owns_pool:
            self.pool.close()

    # -- GET /v1/capabilities ---------------------------------------------------------------------------------------

    def capabilities(self) -> dict[str, Any]:
        """The capabilities document. ``limits`` and ``docs`` are extra fields (a server drops them)."""
        formats = [fmt for fmt in FORMATS if fmt in self.extractors]
        s = self.settings
        return {
            "contract_version": CONTRACT_VERSION,
            "extractor": {"name": EXTRACTOR_NAME, "version": package_version()},
            "max_bytes": s.max_bytes,
            "formats": [{"format": fmt, "options": list(FORMAT_OPTIONS[fmt])} for fmt in formats],
            "limits": {
                "timeout_s": s.timeout_s,
                "memory_limit_mb": s.memory_limit_mb,
                "max_output_bytes": s.max_output_bytes,
                "workers": self.pool.size,
            },
            "docs": {
                "sql_dialects": list(sql_dialects()) if "sql" in self.extractors else [],
                "encoding": "the name of a Python text codec a file can be written in, e.g. latin-1, cp1252, "
                "shift_jis, utf-16-le (not undefined, unicode_escape, raw_unicode_escape, idna or punycode); it "
                "applies only to text without a byte-order mark or a charset declaration of its own; TOML takes "
                "only utf-8",
                "sql_dialect": "one of sql_dialects (sqlglot's dialect names); without it SQL is parsed with "
                "sqlglot's default dialect",
                "unavailable": "a 503 answer (code service_unavailable) means the service cannot serve now: try the "
                "file again later",
            },
        }

    # -- POST /v1/extract -------------------------------------------------------------------------------------------

    def parse_query(self, items: Iterable[tuple[str, str]]) -> Query:
        """Check the query's parameters in the contract's order of concern; raise the matching ExtractionError."""
        values: dict[str, str] = {}
        for i, (key, value) in enumerate(items):
            if i >= MAX_PARAMETERS:
                raise _invalid(f"the query has more than {MAX_PARAMETERS} parameters")
            if not _is_utf8(key):
                raise _invalid(f"a query parameter's name is not UTF-8: {_escaped(key)}")
            if key not in PARAMETERS:
                if not key:
                    raise _invalid(
                        "a query parameter has no name (an empty name before '=', or '&&'): this service takes "
                        "format, name, encoding and sql_dialect"
                    )
                raise _invalid(
                    f"unknown query parameter {_short(key)}: this service takes format, name, encoding and sql_dialect"
                )
            if key in values:
                raise _invalid(f"the {key} parameter is given more than once")
            if not _is_utf8(value):
                raise _invalid(
                    f"the {key} parameter is not UTF-8 ({_escaped(value)}): send the value's UTF-8 bytes "
                    "(percent-encoded in the URL)"
                )
            values[key] = value
        fmt = values.get(PARAM_FORMAT, "")
        if not fmt:
            raise _invalid(f"the format parameter is missing: name one of {', '.join(FORMATS)}")
        if fmt not in FORMATS:
            raise ExtractionError(
                ErrorCode.UNSUPPORTED_FORMAT,
                f"{_short(fmt)} is not a format of extractor contract v1 (the formats are {', '.join(FORMATS)})",
            )
        if fmt not in self.extractors:
            raise ExtractionError(ErrorCode.FORMAT_UNAVAILABLE, f"this service does not extract {fmt}")
        name = values.get(PARAM_NAME, "")
        if len(name) > MAX_NAME_CHARS:
            raise _invalid(f"the name is {len(name)} characters long, over this service's limit of {MAX_NAME_CHARS}")
        takes = FORMAT_OPTIONS[fmt]
        encoding = values.get(OPTION_ENCODING) or None
        dialect = values.get(OPTION_SQL_DIALECT) or None
        for option, given in ((OPTION_ENCODING, encoding), (OPTION_SQL_DIALECT, dialect)):
            if given is not None and option not in takes:
                which = "the text formats" if option == OPTION_ENCODING else "sql"
                raise _invalid(f"the {fmt} format takes no {option} option (only {which} do)")
        if encoding is not None and known_codec(encoding) is None:
            raise _invalid(f"encoding {_short(encoding)} is not a known text codec")
        if dialect is not None and dialect not in sql_dialects():
            raise _invalid(
                f"sql_dialect {_short(dialect)} is not one this service knows; GET /v1/capabilities lists them "
                "under docs.sql_dialects (lowercase sqlglot names such as postgres, mysql, tsql)"
            )
        return Query(format=fmt, name=name, encoding=encoding, sql_dialect=dialect)

    def check_size(self, size: int) -> None:
        """``too_large`` for an original over ``max_bytes`` (called before reading it, when its size is known)."""
        if size > self.settings.max_bytes:
            raise ExtractionError(
                ErrorCode.TOO_LARGE,
                f"the file is {size} bytes, over this service's limit of {self.settings.max_bytes} bytes",
            )

    def prepare(self, query: Query, data: Body) -> ExtractRequest:
        """Check the original against the size limit and the format asked for; the request for a worker."""
        self.check_size(len(data))
        check_format(data, query.format, encoding=query.encoding)  # type: ignore[arg-type]  # a MappedFile reads as bytes
        return ExtractRequest(
            format=query.format,
            name=query.name,
            encoding=query.encoding,
            sql_dialect=query.sql_dialect,
            max_output_bytes=self.settings.max_output_bytes,
        )

    async def extract(
        self,
        query: Query,
        data: Body,
        *,
        admission: Admission | None = None,
        caller: object = None,
    ) -> bytes | SpooledReply:
        """The artifact's JSON bytes, checked by the shared validator (a ``SpooledReply`` past ``spool_bytes``).

        ``admission`` is the pool place taken before the body was read (``WorkerPool.admit``); without it one is
        taken now for ``caller``.
        """
        started = time.perf_counter()
        outcome = "ok"
        try:
            request = self.prepare(query, data)
            try:
                raw = await self.pool.run(
                    self.extractors[query.format],
                    data,  # type: ignore[arg-type]  # a MappedFile is a read-only buffer the pool sends as bytes
                    request,
                    admission=admission,
                    caller=caller,
                )
            except ExtractionError as exc:
                if exc.code == ErrorCode.INVALID_ARTIFACT:  # the server's verdict, not a service's code
                    raise ExtractionError(ErrorCode.CORRUPT, exc.message) from None
                raise
            return raw  # checked by the shared validator in the worker (extract_fn.workers)
        except ExtractionError as exc:
            outcome = exc.code.value
            raise
        except PoolUnavailable:
            outcome = "unavailable"
            raise
        finally:
            log.info(
                "extract format=%s bytes=%d outcome=%s ms=%.1f",
                query.format,
                len(data),
                outcome,
                (time.perf_counter() - started) * 1000,
            )
