"""Extractor contract v1: the one source of truth for its names, limits and answer classification.

Everything that speaks the contract (the reference extractor in ``extract_fn``, the LOOM client in ``shared``,
the artifact validator and builder) imports its facts from here. See ``../shared/specs/extractor-contract-v1.txt``.
"""

from __future__ import annotations

import enum
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

CONTRACT_VERSION: Final = 1
SCHEMA_VERSION: Final = 1

# The format names, in the contract's order.
FORMATS: Final[tuple[str, ...]] = (
    "markdown",
    "html",
    "text",
    "sql",
    "toml",
    "pdf",
    "docx",
    "pptx",
    "xlsx",
    "csv",
    "parquet",
)
TEXT_FORMATS: Final[frozenset[str]] = frozenset({"markdown", "html", "text", "sql", "toml", "csv"})
TABULAR_FORMATS: Final[frozenset[str]] = frozenset({"csv", "xlsx", "parquet"})

# The media types each format answers to (routing keys in LOOM_DOCUMENT_EXTRACTORS_JSON, the content type of an
# accepted-file event). The first is the canonical one.
MEDIA_TYPES: Final[dict[str, tuple[str, ...]]] = {
    "markdown": ("text/markdown", "text/x-markdown"),
    "html": ("text/html", "application/xhtml+xml"),
    "text": ("text/plain",),
    "sql": ("application/sql", "text/x-sql"),
    "toml": ("application/toml", "text/x-toml"),
    "pdf": ("application/pdf",),
    "docx": ("application/vnd.openxmlformats-officedocument.wordprocessingml.document",),
    "pptx": ("application/vnd.openxmlformats-officedocument.presentationml.presentation",),
    "xlsx": ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",),
    "csv": ("text/csv",),
    "parquet": ("application/vnd.apache.parquet", "application/x-parquet"),
}
MEDIA_TYPE_FORMAT: Final[dict[str, str]] = {mt: fmt for fmt, mts in MEDIA_TYPES.items() for mt in mts}

# File-name extensions, for events that carry only a name.
EXTENSIONS: Final[dict[str, str]] = {
    ".md": "markdown",
    ".markdown": "markdown",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".txt": "text",
    ".text": "text",
    ".sql": "sql",
    ".toml": "toml",
    ".pdf": "pdf",
    ".docx": "docx",
    ".pptx": "pptx",
    ".xlsx": "xlsx",
    ".xlsm": "xlsx",
    ".csv": "csv",
    ".parquet": "parquet",
}

# Options of POST /v1/extract beyond format and name, and which formats take each.
OPTION_ENCODING: Final = "encoding"
OPTION_SQL_DIALECT: Final = "sql_dialect"
OPTIONS: Final[tuple[str, ...]] = (OPTION_ENCODING, OPTION_SQL_DIALECT)
FORMAT_OPTIONS: Final[dict[str, tuple[str, ...]]] = {
    fmt: ((OPTION_ENCODING, OPTION_SQL_DIALECT) if fmt == "sql" else (OPTION_ENCODING,) if fmt in TEXT_FORMATS else ())
    for fmt in FORMATS
}

BLOCK_TYPES: Final[frozenset[str]] = frozenset(
    {"heading", "paragraph", "list", "code", "sql_statement", "toml_table", "toml_key"}
)
COLUMN_TYPES: Final[frozenset[str]] = frozenset(
    {"string", "number", "bool", "date", "datetime", "time", "duration", "mixed"}
)

# Bounds the contract sets on an artifact.
MAX_NESTING: Final = 16  # options and attrs objects
MAX_SECTION_ENTRIES: Final = 64
MAX_SECTION_CHARS: Final = 500
MAX_KEYS: Final = 10_000
MAX_KEY_CHARS: Final = 1_024
MAX_COLUMNS: Final = 16_384
MAX_COLUMN_NAME_CHARS: Final = 500
MAX_SHEET_NAME_CHARS: Final = 500
INT64_MIN: Final = -(2**63)
INT64_MAX: Final = 2**63 - 1

# coverage.lost entries the reference extractor uses.
LOST_EXACT_KEYS: Final = "exact_keys"
LOST_SECTION_PATH: Final = "section_path"
LOST_SQL_STRUCTURE: Final = "sql_structure"
LOST_OCR: Final = "ocr"
LOST_TABLES: Final = "tables"  # a PDF page's table detection gave up (past a bound): its tables are read as paragraphs
LOST_ATTACHMENTS: Final = "attachments"  # a PDF's embedded files (attachments, a portfolio's documents): not read

DEFAULT_MAX_BYTES: Final = 64 * 1024 * 1024
ERROR_STATUS: Final = 422  # the status of every contract error body
MAX_ERROR_BODY_BYTES: Final = 64 * 1024
ERROR_CODE_RE: Final = re.compile(r"[a-z_]{1,40}")
CAPABILITIES_TTL_S: Final = 60.0


class ErrorCode(enum.StrEnum):
    """The contract's error codes, plus the server-side ``invalid_artifact``."""

    UNSUPPORTED_FORMAT = "unsupported_format"
    FORMAT_UNAVAILABLE = "format_unavailable"
    FORMAT_MISMATCH = "format_mismatch"
    ENCODING = "encoding"
    CORRUPT = "corrupt"
    INVALID_OPTION = "invalid_option"
    TOO_LARGE = "too_large"
    TIMEOUT = "timeout"
    RESOURCE_LIMIT = "resource_limit"
    INVALID_ARTIFACT = "invalid_artifact"  # the server's verdict on a 200 whose artifact breaks a rule


class ExtractionError(Exception):
    """A source the extractor cannot extract: becomes a 422 error body ``{"error": {"code", "message"}}``.

    The message is for a person: it says what is wrong and, where it can, what to do about it. It never holds a
    secret or a traceback.
    """

    def __init__(self, code: ErrorCode | str, message: str) -> None:
        super().__init__(message)
        self.code = ErrorCode(code)
        self.message = message

    def body(self) -> dict[str, dict[str, str]]:
        return {"error": {"code": self.code.value, "message": self.message}}


def normalize_media_type(value: str) -> str:
    """``Text/CSV; charset=utf-8`` -> ``text/csv``: the one spelling a media type is compared by."""
    return value.split(";", 1)[0].strip().lower()


def format_for_media_type(value: str) -> str | None:
    return MEDIA_TYPE_FORMAT.get(normalize_media_type(value))


# ---------------------------------------------------------------------------------------------------------------
# How a server reads an answer of POST /v1/extract (and GET /v1/capabilities).

UNAVAILABLE_STATUSES: Final[frozenset[int]] = frozenset({401, 403, 407, 408, 429})


class Verdict(enum.StrEnum):
    OK = "ok"  # a 200: the artifact still has to pass validation (else invalid_artifact)
    UNAVAILABLE = "unavailable"  # try the source again later
    REFUSED = "refused"  # the source is refused; ``code`` says why


@dataclass(frozen=True, slots=True)
class Answer:
    verdict: Verdict
    code: str | None = None  # the service's error code when it is one the server keeps
    message: str = ""


REFUSED_CODE: Final = "refused"  # the failure code of a refusal whose body names no code the server keeps


def classify_answer(status: int, content_encoding: str | None, body: bytes) -> Answer:
    """Classify an extractor's answer exactly as the contract says (the artifact itself is checked elsewhere)."""
    import orjson

    if content_encoding and content_encoding.strip().lower() not in ("", "identity"):
        return Answer(Verdict.UNAVAILABLE, message=f"the service compressed its answer ({content_encoding})")
    if status == 200:
        return Answer(Verdict.OK)
    if status in UNAVAILABLE_STATUSES or status >= 500 or not 400 <= status < 500:
        return Answer(Verdict.UNAVAILABLE, message=f"the service answered HTTP {status}")
    if len(body) > MAX_ERROR_BODY_BYTES:
        return Answer(Verdict.REFUSED, REFUSED_CODE, f"HTTP {status} with an error body over 64 KiB")
    code: str | None = None
    message = ""
    try:
        doc = orjson.loads(body)
        err = doc.get("error") if isinstance(doc, dict) else None
        if isinstance(err, dict):
            if isinstance(err.get("code"), str) and ERROR_CODE_RE.fullmatch(err["code"]):
                code = err["code"]
            if isinstance(err.get("message"), str):
                message = err["message"][:1000]
    except orjson.JSONDecodeError:
        pass
    if code == ErrorCode.FORMAT_UNAVAILABLE:
        return Answer(Verdict.UNAVAILABLE, code, message or "the service does not extract this format")
    if code is None:
        return Answer(Verdict.REFUSED, REFUSED_CODE, message or f"the service refused the source (HTTP {status})")
    return Answer(Verdict.REFUSED, code, message)


# ---------------------------------------------------------------------------------------------------------------
# GET /v1/capabilities: the document's pydantic models live in shared.capabilities (pydantic costs ~0.15 s to
# import, which every worker process would pay); ``from shared.contract import Capabilities`` still works.

_CAPABILITY_MODELS: Final = frozenset({"Capabilities", "ExtractorInfo", "FormatCapability"})

if TYPE_CHECKING:  # the names __getattr__ serves, for the type checker only
    from shared.capabilities import Capabilities as Capabilities  # noqa: PLC0414 (explicit re-export)
    from shared.capabilities import ExtractorInfo as ExtractorInfo  # noqa: PLC0414 (explicit re-export)
    from shared.capabilities import FormatCapability as FormatCapability  # noqa: PLC0414 (explicit re-export)


def __getattr__(name: str) -> object:
    if name in _CAPABILITY_MODELS:
        from shared import capabilities

        return getattr(capabilities, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
