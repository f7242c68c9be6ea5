"""TOML: a ``toml_table`` block per table header and a ``toml_key`` block per key/value pair.

Decisions (documented for the artifact's readers):

* **Decoding**: TOML is UTF-8 by definition. One UTF-8 byte-order mark at the very start is dropped (line numbers
  are unaffected). Bytes that are not UTF-8, a UTF-16/UTF-32 byte-order mark, UTF-16/32 text without one (the one
  wide-text policy, ``text_decoding.refuse_wide_text``), and a byte-order mark or a non-ASCII space character
  (U+3000, U+00A0, ...) where the parser stops are the ``encoding`` error. The ``encoding`` option may only name
  UTF-8 (``utf-8``, ``utf8``, ``utf-8-sig``...): any other codec is ``invalid_option``.
* **Validation and values** are ``tomllib``'s (TOML 1.0). A file it rejects is ``corrupt`` with its message,
  which names the line and column. Nesting too deep for it (a ``RecursionError``) is ``resource_limit``. An
  integer outside signed 64 bits, which TOML 1.0 forbids and tomllib accepts, is ``corrupt`` too. For speed the
  values are read with ``toml-rs`` (Rust, in its TOML 1.0 mode; ~8x faster) when it is installed: it reads the
  same values as tomllib on every toml-test case of the corpus and in differential fuzzing, and only its acceptance
  is trusted.
  Whatever it refuses (or raises on) is read again by tomllib, which decides the error and its message as before;
  text that starts with a second byte-order mark (which toml-rs would skip) and text whose brackets might nest
  deeper than ``limits.toml_rs_max_depth`` (toml-rs recurses without a limit and overflows the C stack past a few
  thousand
  levels) go straight to tomllib.
* **Positions** come from our own scanner over the validated text (it knows strings, multi-line strings holding
  ``[`` or ``=``, arrays and inline tables over several lines, and comments). Lines of the common shapes (a bare
  key with a one-line scalar or flat array, a plain ``[a.b]`` header) are read by one regular expression each.
* **Blocks** are added one per key or table by ``ArtifactBuilder.add_key_block`` (``add_block``'s block and checks,
  cheaper for the plain case; ``add_block`` itself for an array-of-tables element and a value left out), as the
  walk reads them; the common key's value is typed in the walk itself.
* **toml_table** block per ``[table]`` header and per ``[[array]]`` element: text is the header line as written
  (trimmed, a trailing comment kept), ``section_path`` and ``keys`` as below, ``parent`` the nearest enclosing table
  block written earlier. Tables never written as a header (``a`` in ``[a.b]``) get no block. An array-of-tables
  element has ``attrs`` ``{"array_of_tables": true, "index": i}``.
* **toml_key** block per ``key = value`` expression (top level or in a table; pairs inside an inline table are part
  of their key's value): text is ``<key_path> = <the value as written>`` with a trailing comment kept (so
  ``[server]`` ``port = 7777`` reads ``server.port = 7777``, as in the contract's example); ``parent`` the table
  block it is in (none at the top level); ``section_path`` that table's path segments; locator
  ``{line_start, line_end, key_path}`` (a multi-line value spans its lines); ``attrs`` ``{"value", "value_type"}``.
* **key_path**: the full dotted path of segments. A segment is written bare when it is a TOML bare key
  (``A-Za-z0-9_-``), else as a JSON/TOML basic string (``"a.b"``, ``""``, ``"ʎǝʞ"``, ``"tab\\there"``), so a path
  is unambiguous and, quotes included, reads as a TOML key. An array-of-tables element adds ``[i]`` (0-based) to
  its segment: ``products[0].name``. ``section_path`` is the table's segments in that spelling
  (``["fruits[1]", "varieties[0]"]``).
* **keys**: the key path; for a key under an array of tables also the path without indices (``products.name``);
  for an inline table also the paths of its members, nested inline tables included (``owner.name``). A table
  block's keys are its path (and, in an array of tables, the path without indices).
* **value** is JSON: strings, integers, floats, booleans as such; ``nan``, ``inf``, ``-inf`` floats (JSON has no
  such numbers) as the strings ``"nan"``, ``"inf"``, ``"-inf"`` (any NaN is ``"nan"``); offset date-times as
  RFC 3339 text with ``T`` and ``Z`` for UTC (``1979-05-27T07:32:00Z``, ``1979-05-27T00:32:00-07:00``), local
  date-times, dates and times as ISO text; arrays as lists and inline tables as objects of the same. A value
  nested deeper than the contract's attrs allow (16 levels, attrs itself counted) is left out: ``value`` null,
  ``value_omitted`` says why, and the key is a failed unit.
* **value_type** uses toml-test's names: ``string``, ``integer``, ``float``, ``bool``, ``datetime`` (offset
  date-time), ``datetime-local``, ``date-local``, ``time-local``, ``array``, ``table`` (inline table).
* **Coverage**: unit ``keys``; ``total`` the key/value expressions in the file (a dotted ``a.b.c = 1`` is one, an
  inline table is one), ``extracted`` those whose block carries its value. Keys left out at the output budget
  (``request.max_output_bytes``) are one failed entry.
"""

from __future__ import annotations

import codecs
import datetime as dt
import json
import math
import re
import sys
import tomllib
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.frame import FormatContext, format_module
from extract_fn.formats.output_budget import BudgetKind, OutputBudget, output_budget
from extract_fn.limits import Limits
from extract_fn.text_decoding import refuse_wide_text
from shared.artifact_builder import ArtifactBuilder, make_locator
from shared.contract import (
    INT64_MAX,
    INT64_MIN,
    MAX_NESTING,
    ErrorCode,
    ExtractionError,
)

try:
    import toml_rs
except ImportError:  # pragma: no cover - an install without it reads with tomllib alone
    toml_rs = None  # type: ignore[assignment]  # the module or None, read as such below

PARSER: Final = "loom-toml"
PARSER_VERSION: Final = f"1+tomllib-py{sys.version_info.major}.{sys.version_info.minor}" + (
    f"+toml-rs{toml_rs.__version__}" if toml_rs is not None else ""
)
MAX_VALUE_DEPTH: Final = MAX_NESTING - 1  # the value sits in attrs, which counts one level itself
# toml-rs recurses once per open array or inline table (~2 KiB of C stack each) with no limit of its own; deeper
# text goes to tomllib. Values past MAX_VALUE_DEPTH are left out of the artifact anyway.

_UTF8_NAMES: Final = frozenset({"utf-8", "utf-8-sig"})
_BARE_KEY_RE: Final = re.compile(r"[A-Za-z0-9_-]+")
_WS_COMMENTS_RE: Final = re.compile(r"(?:[ \t\r\n]+|#[^\n]*)*")
_SPACES_RE: Final = re.compile(r"[ \t]*")
_REST_OF_LINE_RE: Final = re.compile(r"[ \t]*(?:#[^\n]*)?")
_BASIC_KEY_RE: Final = re.compile(r'"((?:[^"\\\n]|\\.)*)"')
_LITERAL_KEY_RE: Final = re.compile(r"'([^'\n]*)'")
_BASIC_STRING_RE: Final = re.compile(r'"(?:[^"\\\n]|\\.)*"')
_ML_BASIC_RE: Final = re.compile(r'"""(?:[^"\\]|\\[\s\S]|"(?!""))*"{3,5}')
_DATETIME_RE: Final = re.compile(
    r"\d{4}-\d{2}-\d{2}(?:[Tt ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:[Zz]|[+-]\d{2}:\d{2})?)?"
)
_SCALAR_RE: Final = re.compile(r"[^\s,\]}#]+")
_BRACKET_SPECIAL_RE: Final = re.compile(r"[\[\]{}\"'#]")
_ESCAPE_RE: Final = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.DOTALL)
_SIMPLE_ESCAPES: Final = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}
_ERROR_POS_RE: Final = re.compile(r"\(at line (\d+), column (\d+)\)")

# One item of the common shapes, with the blank lines and comments before it (the scanner's fast path; anything
# else goes to TomlScanner.item). Over valid TOML: 1 what precedes the item, 2 a bare key, 3 its value as written
# (a basic string without escapes, a literal string, a scalar, which may be a date-time with a space, or a
# one-line array of those without nesting), 4 a plain table header's dotted bare keys, 5 a trailing comment with
# the blanks before it. The groups are possessive: a line that does not fit fails at once.
_ONE_LINE_STRING: Final = r"\"[^\"\\\n]*\"(?!\")|'[^'\n]*'(?!')"
_LINE_RE: Final = re.compile(
    r"((?:[ \t\r\n]|#[^\n]*)*+)"
    r"(?:([A-Za-z0-9_-]+)[ \t]*=[ \t]*"
    r"(" + _ONE_LINE_STRING + r"|\[(?:[^\[\]{}#'\"\n]|" + _ONE_LINE_STRING + r")*+\]"
    r"|[^\s,\[\]{}#\"']+(?: \d{2}:\d{2}[^\s#,\]}]*)?)"
    r"|\[([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)\])"
    r"([ \t]*#[^\n]*)?[ \t]*(?=\r?\n|\Z)"
)

# The guard before toml-rs: an upper bound of how deep its parser can nest, from the tokens its lexer (toml_parser's:
# context-free, a quote, '#' or bracket always starts a token of its own) sees. Plain text, comments and strings are
# skipped whole, as that lexer skips them: a string where one can start (after a blank, a newline, '=', '[', '{',
# ',' or '.', or at the start) and well formed (TOML's characters and escapes, closed on its line); a comment up to
# a newline. Brackets that hold no bracket are skipped as a pair too (they add one level at most). What is left is
# returned: the other brackets, and any other quote or '#', which make the text go to tomllib (it is invalid there,
# and where exactly toml-rs's lexer resumes after it would be guesswork).
_CTRL: Final = r"\x00-\x08\x0a-\x1f\x7f"  # control characters (tab allowed) TOML refuses in strings and comments
_CTRL_ML: Final = r"\x00-\x08\x0b-\x1f\x7f"  # the same less the newline (a CR only as CRLF)
_HEX_ESC: Final = r"u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}"
_SKIPPED: Final = (
    r"[^\"'#\[\]{}]++"
    rf"|#[^{_CTRL}]*+(?=\r?\n|\Z)"
    r"|(?<![^ \t\n=\[{,.])(?:"
    rf'"""(?:[^"\\{_CTRL_ML}]++|\r\n|\\(?:[btnfr"\\]|{_HEX_ESC}|[ \t]*\r?\n)|"(?!""))*+"{{3,5}}'
    rf"|'''(?:[^'{_CTRL_ML}]++|\r\n|'(?!''))*+'{{3,5}}"
    rf'|"(?:[^"\\{_CTRL}]++|\\(?:[btnfr"\\]|{_HEX_ESC}))*+"'
    rf"|'[^'{_CTRL}]*+'"
    r")"
)
_NEST_RE: Final = re.compile(rf"(?:{_SKIPPED}|\[(?:{_SKIPPED})*+\]|\{{(?:{_SKIPPED})*+\}})*+([\[\]{{}}\"'#]|\Z)")
_OPENER_OF: Final = {"]": "[", "}": "{"}


# ---------------------------------------------------------------------------------------------------------------
# Key paths


def segment(key: str) -> str:
    """One key path segment: bare when TOML allows it bare, else a basic string (JSON escapes, DEL escaped)."""
    if _BARE_KEY_RE.fullmatch(key):
        return key
    return json.dumps(key, ensure_ascii=False).replace("\x7f", "\\u007f")


def _unescape(raw: str) -> str:
    if "\\" not in raw:
        return raw

    def repl(m: re.Match[str]) -> str:
        if m.group(1) or m.group(2):
            return chr(int(m.group(1) or m.group(2), 16))
        return _SIMPLE_ESCAPES.get(m.group(3), m.group(3))

    return _ESCAPE_RE.sub(repl, raw)


# ---------------------------------------------------------------------------------------------------------------
# Values


def _offset_text(value: dt.datetime | dt.time) -> str:
    off = value.utcoffset()
    if off is None:
        return ""
    if not off:
        return "Z"
    minutes = int(off.total_seconds() // 60)
    sign = "+" if minutes >= 0 else "-"
    minutes = abs(minutes)
    return f"{sign}{minutes // 60:02d}:{minutes % 60:02d}"


class _TooDeep(Exception):
    pass


class _BigInt(Exception):
    pass


def json_value(value: Any, depth: int = 1) -> tuple[Any, str]:
    """A tomllib value as (JSON value, toml-test type name). Raises _TooDeep past ``MAX_VALUE_DEPTH`` and _BigInt
    for an integer outside signed 64 bits."""
    if isinstance(value, bool):
        return value, "bool"
    if isinstance(value, str):
        return value, "string"
    if isinstance(value, int):
        if not INT64_MIN <= value <= INT64_MAX:
            raise _BigInt
        return value, "integer"
    if isinstance(value, float):
        if math.isnan(value):
            return "nan", "float"
        if math.isinf(value):
            return ("inf" if value > 0 else "-inf"), "float"
        return value, "float"
    if isinstance(value, dt.datetime):
        base = value.replace(tzinfo=None).isoformat()
        if value.tzinfo is None:
            return base, "datetime-local"
        return base + _offset_text(value), "datetime"
    if isinstance(value, dt.date):
        return value.isoformat(), "date-local"
    if isinstance(value, dt.time):
        return value.isoformat(), "time-local"
    if depth > MAX_VALUE_DEPTH:
        raise _TooDeep
    if isinstance(value, list):
        out = []
        for v in value:  # the common elements without a call each
            cls = v.__class__
            if cls is str or (cls is int and INT64_MIN <= v <= INT64_MAX):
                out.append(v)
            else:
                out.append(json_value(v, depth + 1)[0])
        return out, "array"
    if isinstance(value, dict):
        return {k: json_value(v, depth + 1)[0] for k, v in value.items()}, "table"
    raise TypeError(f"unexpected TOML value {type(value).__name__}")  # pragma: no cover


def _big_int(value: Any) -> bool:
    """Whether a value holds an integer outside signed 64 bits (TOML 1.0 forbids them; tomllib reads them)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            if not INT64_MIN <= v <= INT64_MAX:
                return True
        elif isinstance(v, list):
            stack.extend(v)
        elif isinstance(v, dict):
            stack.extend(v.values())
    return False


def _inline_keys(prefix: str, value: dict[str, Any], out: list[str], depth: int = 0) -> None:
    if depth > MAX_VALUE_DEPTH:
        return
    for k, v in value.items():
        path = f"{prefix}.{segment(k)}"
        out.append(path)
        if isinstance(v, dict):
            _inline_keys(path, v, out, depth + 1)


# ---------------------------------------------------------------------------------------------------------------
# Decoding


_WIDE_ADVICE: Final = "TOML must be UTF-8 (TOML 1.0): convert the file from {codec} to UTF-8"


def decode_toml(data: bytes, encoding_option: str | None, wide_sample: int) -> tuple[str, bool]:
    """The text (without a leading UTF-8 BOM) and whether there was one; UTF-16/32 without a BOM is refused by the
    one wide-text policy (``text_decoding.refuse_wide_text``, on the first ``wide_sample`` bytes)."""
    if encoding_option is not None:
        try:
            name = codecs.lookup(encoding_option).name
        except LookupError:
            name = ""
        if name not in _UTF8_NAMES:
            raise ExtractionError(
                ErrorCode.INVALID_OPTION,
                f"TOML files are UTF-8 by definition (TOML 1.0), so the encoding option can only be utf-8 here, "
                f"not {encoding_option!r}; leave it out",
            )
    if data.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):
        raise ExtractionError(ErrorCode.ENCODING, "the file starts with a UTF-32 byte-order mark: TOML must be UTF-8")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise ExtractionError(ErrorCode.ENCODING, "the file starts with a UTF-16 byte-order mark: TOML must be UTF-8")
    bom = data.startswith(codecs.BOM_UTF8)
    body = data[3:] if bom else data
    refuse_wide_text(body, "default", wide_sample, _WIDE_ADVICE)
    try:
        return body.decode("utf-8"), bom
    except UnicodeDecodeError as e:
        raise ExtractionError(
            ErrorCode.ENCODING,
            f"the file is not UTF-8 (TOML must be): invalid bytes at byte offset {e.start + (3 if bom else 0)}",
        ) from None


# ---------------------------------------------------------------------------------------------------------------
# Parsing


def nesting_bound(text: str) -> int | None:
    """An upper bound of how deep arrays and inline tables nest in ``text`` as toml-rs's lexer reads it, or None
    where that cannot be told without its error recovery (stray quotes, unclosed strings, unmatched brackets)."""
    open_: list[str] = []
    deepest = 0
    for ch in "".join(_NEST_RE.findall(text)):
        if ch in "[{":
            open_.append(ch)
            deepest = max(deepest, len(open_))
        elif open_ and open_[-1] == _OPENER_OF.get(ch):
            open_.pop()
        else:
            return None
    return deepest + 1  # a pair skipped whole may sit on the deepest


def _rs_safe(text: str, max_depth: int) -> bool:
    if text.startswith("\ufeff"):  # a second BOM: toml-rs skips one, TOML allows none here
        return False
    if text.count("[") + text.count("{") <= max_depth:
        return True
    bound = nesting_bound(text)
    return bound is not None and bound <= max_depth


def _load(text: str, limits: Limits) -> dict[str, Any]:
    if toml_rs is not None and _rs_safe(text, limits.toml_rs_max_depth):
        try:
            return toml_rs.loads(text, toml_version="1.0.0")
        except Exception:  # noqa: S110 - tomllib decides every refusal and words its message
            pass
    return _load_tomllib(text)


def _load_tomllib(text: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        msg = str(e)
        bad = _char_at_error(text, msg)
        if bad is not None and (bad == "\ufeff" or (not bad.isascii() and (bad.isspace() or _is_space_like(bad)))):
            what = "a byte-order mark (U+FEFF) not at the start" if bad == "\ufeff" else f"U+{ord(bad):04X}"
            raise ExtractionError(
                ErrorCode.ENCODING,
                f"the text holds {what} where TOML allows no such character: {msg}",
            ) from None
        raise ExtractionError(ErrorCode.CORRUPT, f"not valid TOML: {msg}") from None
    except RecursionError:
        raise ExtractionError(
            ErrorCode.RESOURCE_LIMIT, "the TOML values are nested deeper than the parser can follow"
        ) from None
    except ValueError:  # not a TOMLDecodeError: int() refused an integer of over 4300 digits (sys.int_info)
        digits = _LONG_DIGITS_RE.search(text)
        raise _big_int_error(text.count("\n", 0, digits.start()) + 1 if digits else None) from None


def _is_space_like(ch: str) -> bool:
    return unicodedata.category(ch) in ("Zs", "Zl", "Zp")


def _char_at_error(text: str, msg: str) -> str | None:
    m = _ERROR_POS_RE.search(msg)
    if m is None:
        return None
    line, col = int(m.group(1)), int(m.group(2))
    pos = 0
    for _ in range(line - 1):
        nl = text.find("\n", pos)
        if nl < 0:
            return None
        pos = nl + 1
    pos += col - 1
    return text[pos] if 0 <= pos < len(text) else None


# ---------------------------------------------------------------------------------------------------------------
# The scanner (over text the parser has accepted)


@dataclass(slots=True)
class Header:
    parts: list[str]
    is_array: bool
    start: int  # the '[' position
    end: int  # end of the line's content (comment included, trailing blanks excluded)


@dataclass(slots=True)
class KeyValue:
    parts: list[str]
    start: int  # the key's first character
    value_start: int
    value_end: int
    end: int  # end of the line's content after the value (comment included, trailing blanks excluded)


class TomlScanner:
    """Positions of headers and key/value pairs in valid TOML text (the general case: the extraction loop reads
    the common lines with ``_LINE_RE``)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)

    def item(self, pos: int) -> tuple[Header | KeyValue, int]:
        """The header or key/value pair at ``pos`` (its first character) and where the scan goes on."""
        text = self.text
        if text[pos] == "[":
            is_array = text.startswith("[[", pos)
            p = pos + (2 if is_array else 1)
            parts, p = self.key(p)
            p = _SPACES_RE.match(text, p).end()  # type: ignore[union-attr]
            p += 2 if is_array else 1
            end = _REST_OF_LINE_RE.match(text, p).end()  # type: ignore[union-attr]
            return Header(parts, is_array, pos, self._trim(pos, end)), end
        parts, p = self.key(pos)
        p = _SPACES_RE.match(text, p).end()  # type: ignore[union-attr]
        p += 1  # '='
        vstart = _SPACES_RE.match(text, p).end()  # type: ignore[union-attr]
        vend = self.value_end(vstart)
        end = _REST_OF_LINE_RE.match(text, vend).end()  # type: ignore[union-attr]
        return KeyValue(parts, pos, vstart, vend, self._trim(vstart, end)), end

    def _trim(self, start: int, end: int) -> int:
        text = self.text
        while end > start and text[end - 1] in " \t\r":
            end -= 1
        return end

    def key(self, pos: int) -> tuple[list[str], int]:
        text = self.text
        parts: list[str] = []
        while True:
            pos = _SPACES_RE.match(text, pos).end()  # type: ignore[union-attr]
            c = text[pos]
            if c == '"':
                m = _BASIC_KEY_RE.match(text, pos)
                assert m is not None
                parts.append(_unescape(m.group(1)))
            elif c == "'":
                m = _LITERAL_KEY_RE.match(text, pos)
                assert m is not None
                parts.append(m.group(1))
            else:
                m = _BARE_KEY_RE.match(text, pos)
                assert m is not None
                parts.append(m.group())
            pos = _SPACES_RE.match(text, m.end()).end()  # type: ignore[union-attr]
            if pos < self.n and text[pos] == ".":
                pos += 1
                continue
            return parts, pos

    def string_end(self, pos: int) -> int:
        text = self.text
        if text.startswith('"""', pos):
            m = _ML_BASIC_RE.match(text, pos)
            assert m is not None
            return m.end()
        if text.startswith("'''", pos):
            j = text.find("'''", pos + 3)
            end = j + 3
            while end < self.n and text[end] == "'" and end - j < 5:
                end += 1
            return end
        if text[pos] == '"':
            m = _BASIC_STRING_RE.match(text, pos)
            assert m is not None
            return m.end()
        return text.find("'", pos + 1) + 1

    def value_end(self, pos: int) -> int:
        text = self.text
        c = text[pos]
        if c in "\"'":
            return self.string_end(pos)
        if c in "[{":
            depth = 0
            p = pos
            while True:
                m = _BRACKET_SPECIAL_RE.search(text, p)
                assert m is not None
                ch = m.group()
                q = m.start()
                if ch in "[{":
                    depth += 1
                    p = q + 1
                elif ch in "]}":
                    depth -= 1
                    p = q + 1
                    if depth == 0:
                        return p
                elif ch == "#":
                    nl = text.find("\n", q)
                    p = self.n if nl < 0 else nl
                else:
                    p = self.string_end(q)
        m = _DATETIME_RE.match(text, pos)
        if m is not None:
            return m.end()
        m = _SCALAR_RE.match(text, pos)
        assert m is not None
        return m.end()


# ---------------------------------------------------------------------------------------------------------------
# Blocks


# ---------------------------------------------------------------------------------------------------------------
# Entry point


def _byte_estimate(s: str) -> int:
    return len(s) if s.isascii() else len(s.encode("utf-8"))


def _body(ctx: FormatContext) -> dict[str, Any]:
    text, bom = decode_toml(ctx.data, ctx.request.encoding, ctx.limits.wide_text_sample)
    return _extract(text, bom, ctx.request)


extract = format_module(_body)


def _open_table(
    doc: dict[str, Any], item_parts: list[str], is_array: bool, aot_index: dict[str, int]
) -> tuple[Any, list[str], list[str]]:
    """The node a header names, its concrete path segments (with array-of-tables indices) and generic ones."""
    node: Any = doc
    concrete: list[str] = []
    generic: list[str] = []
    last = len(item_parts) - 1
    for k, part in enumerate(item_parts):
        seg = segment(part)
        node = node[part]
        generic.append(seg)
        if isinstance(node, list):
            path_so_far = ".".join([*concrete, seg])
            if k == last and is_array:
                idx = aot_index.get(path_so_far, -1) + 1
                aot_index[path_so_far] = idx
            else:
                idx = aot_index.get(path_so_far, len(node) - 1)
            node = node[idx]
            seg = f"{seg}[{idx}]"
        concrete.append(seg)
    return node, concrete, generic


def _list_value(value: list[Any]) -> list[Any]:
    """``json_value`` of a top-level array, its common elements without a call each."""
    out = []
    for v in value:
        cls = v.__class__
        if cls is str or (cls is int and INT64_MIN <= v <= INT64_MAX):
            out.append(v)
        else:
            out.append(json_value(v, 2)[0])
    return out


def _datetime_value(value: dt.datetime, offsets: dict[Any, tuple[int, str]]) -> tuple[str, str]:
    """``json_value`` of a date-time: ISO text, with the offset spelled as ``_offset_text`` does (kept per time
    zone: the parsers give fixed offsets)."""
    tz = value.tzinfo
    if tz is None:
        return value.isoformat(), "datetime-local"
    if tz.__class__ is not dt.timezone:
        return json_value(value)
    iso = value.isoformat()
    known = offsets.get(tz)
    if known is None:
        base = value.replace(tzinfo=None).isoformat()
        known = offsets[tz] = (len(iso) - len(base), _offset_text(value))
    return iso[: -known[0]] + known[1], "datetime"


def _extract(text: str, bom: bool, request: ExtractRequest) -> dict[str, Any]:
    doc = _load(text, request.limits)
    builder = ArtifactBuilder(
        "toml", parser=PARSER, parser_version=PARSER_VERSION, unit="keys", options=request.options()
    )
    if bom:
        builder.warn("a UTF-8 byte-order mark at the start of the file was dropped")
    keys = _Keys(text, doc, builder, output_budget(request, BudgetKind.KEYED))
    total, extracted = _walk(keys)
    keys.settle()
    if keys.cut_line is not None:
        builder.fail(
            f"keys from line {keys.cut_line} on",
            f"left out: the artifact reached its output limit ({request.max_output_bytes} bytes)",
        )
        builder.warn(f"the keys from line {keys.cut_line} on were left out at the output limit")
    builder.coverage(total=total, extracted=extracted)
    return builder.build()


@dataclass(slots=True)
class _Table:
    """The table the keys that follow are in."""

    node: dict[str, Any]
    prefix: str  # its path + "." ("" at the top level)
    gprefix: str | None  # its generic path + "." when that differs (under an array of tables)
    section: list[str]
    parent: str | None  # its block


class _Keys:
    """One extraction's state: the builder (``add_key_block`` adds each block, cutting and marking what passes the
    contract's bounds), the output budget, the current table, and the line the budget ran out at."""

    def __init__(self, text: str, doc: dict[str, Any], builder: ArtifactBuilder, budget: OutputBudget) -> None:
        self.text = text
        self.doc = doc
        self.builder = builder
        self.budget = budget
        self.table = _Table(doc, "", None, [], None)
        self.aot_index: dict[str, int] = {}  # concrete path of an array of tables -> its current element
        self.blocks_by_path: dict[str, str] = {}
        self.seg_cache: dict[str, str] = {}
        self.cut_line: int | None = None
        self.left = budget.remaining  # what ``take`` may still spend

    def take(self, cost: int, line: int) -> bool:
        """Spend ``cost`` of the budget for a block at ``line``; False (the cut noted) when it does not fit: the
        budget's ``take_bytes`` on ``left`` (its ``remaining`` at the start, settled by ``settle``), kept here
        because the walk spends it once per key (a call each was ~3% of big.toml's instructions)."""
        if cost <= self.left:
            self.left -= cost
            return True
        self.cut_line = line
        return False

    def settle(self) -> None:
        """Charge the budget what ``take`` spent, exhausted when something did not fit (as ``take_bytes`` leaves it)."""
        self.budget.charge(self.budget.remaining - self.left)
        if self.cut_line is not None:
            self.budget.exhausted = True


def _walk(st: _Keys) -> tuple[int, int]:
    """Read every line of the text into blocks; return (keys, keys whose block carries the value).

    The common line (a bare key with a one-line value, or a plain ``[a.b]`` header) is read by ``_LINE_RE`` and,
    for a key, made into its block here, with the state in locals (it is most of the work); anything else goes to
    the general scanner (``TomlScanner``) and ``_header`` / ``_key_value``."""
    text = st.text
    add = st.builder.add_key_block
    offsets: dict[Any, tuple[int, str]] = {}
    scanner = TomlScanner(text)
    line_match: Callable[..., re.Match[str] | None] = _LINE_RE.match
    n = len(text)
    pos = 0
    line = 1  # the line ``pos`` is on
    total = extracted = 0
    t = st.table
    item: Header | KeyValue | None
    while True:
        m = line_match(text, pos)
        if m is not None:
            before, key, value_text, header, comment = m.groups()
            if before == "\n":
                line += 1
            elif before:
                line += before.count("\n")
            pos = m.end()
            if key is not None:  # ---- the common key: bare, with a one-line value
                total += 1
                if st.cut_line is not None:
                    continue
                if comment is not None:
                    value_text += comment.rstrip(" \t\r")
                value = t.node[key]
                cls = value.__class__  # the common scalars here, the rest in _simple_value
                if cls is str:
                    vtype = "string"
                elif cls is int and INT64_MIN <= value <= INT64_MAX:
                    vtype = "integer"
                elif cls is bool:
                    vtype = "bool"
                elif cls is float and value - value == 0.0:  # finite
                    vtype = "float"
                else:
                    value, vtype = _simple_value(value, line, offsets)
                key_path = t.prefix + key
                block_text = f"{key_path} = {value_text}"
                if t.gprefix is None:
                    keys = [key_path]
                    cost = 3 * (len(key_path) + 8) + 200
                else:
                    keys = [key_path, t.gprefix + key]
                    cost = 4 * (len(key_path) + 8) + 200
                cost += 2 * (len(block_text) if block_text.isascii() else len(block_text.encode()))
                if cost > st.left:
                    st.cut_line = line
                    continue
                st.left -= cost
                add("toml_key", block_text, line, line, key_path, t.parent, t.section, keys, value, vtype)
                extracted += 1
                continue
            item = _plain_header(st, m, header, comment, line)
            t = st.table
            if item is None:
                continue
            item_line = line
        else:  # ---- anything else: the general scanner
            p = _WS_COMMENTS_RE.match(text, pos).end()  # type: ignore[union-attr]
            line += text.count("\n", pos, p)
            if p >= n:
                break
            item, pos = scanner.item(p)
            item_line = line
            line += text.count("\n", p, pos)
        if isinstance(item, Header):
            _header(st, item, item_line)
            t = st.table
            continue
        total += 1
        if st.cut_line is None and _key_value(st, item, item_line):
            extracted += 1
    return total, extracted


def _simple_value(value: Any, line: int, offsets: dict[Any, tuple[int, str]]) -> tuple[Any, str]:
    """``json_value`` of a one-line value (never an inline table: ``_LINE_RE`` takes no '{'), its common kinds
    without the general walk."""
    cls = value.__class__
    if cls is str:
        return value, "string"
    if cls is int:
        if not INT64_MIN <= value <= INT64_MAX:
            raise _big_int_error(line)
        return value, "integer"
    if cls is bool:
        return value, "bool"
    if cls is float and value - value == 0.0:  # finite
        return value, "float"
    if cls is list:  # one line, no nesting: never too deep
        try:
            return _list_value(value), "array"
        except _BigInt:
            raise _big_int_error(line) from None
    if cls is dt.datetime:
        return _datetime_value(value, offsets)
    return json_value(value)  # a date, a time, NaN or an infinity


def _plain_header(st: _Keys, m: re.Match[str], header: str, comment: str | None, line: int) -> Header | None:
    """A ``[a.b]`` header read by ``_LINE_RE``: its table opened and its block added (None), or the ``Header`` for
    ``_header`` when it is under an array of tables."""
    start = m.start(4) - 1
    tail = comment.rstrip(" \t\r") if comment is not None else ""
    parts = header.split(".")
    node: Any = st.doc
    for part in parts:
        node = node[part]
        if node.__class__ is list:  # under an array of tables: the general path
            return Header(parts, False, start, start + len(header) + 2 + len(tail))
    # bare segments only: the path is the header as written
    st.table = _Table(node, header + ".", None, parts, st.table.parent)
    if st.cut_line is not None:
        return None
    header_text = f"[{header}]{tail}"
    if not st.take(_byte_estimate(header_text) + 2 * len(header) + 160, line):
        return None
    enclosing = None
    path = header
    while "." in path:
        path = path.rpartition(".")[0]
        enclosing = st.blocks_by_path.get(path)
        if enclosing is not None:
            break
    block_id = st.table.parent = st.builder.add_key_block(
        "toml_table", header_text, line, line, header, parent=enclosing, section_path=parts, keys=[header]
    )
    st.blocks_by_path[header] = block_id
    return None


def _header(st: _Keys, item: Header, line: int) -> None:
    """A table header in general (quoted or dotted with spaces, an array of tables, a table under one)."""
    node, concrete, generic = _open_table(st.doc, item.parts, item.is_array, st.aot_index)
    table_path = ".".join(concrete)
    generic_path = ".".join(generic)
    gprefix = None if generic_path == table_path else generic_path + "."
    st.table = _Table(node, table_path + ".", gprefix, concrete, st.table.parent)
    if st.cut_line is not None:
        return
    text = st.text
    header_text = text[item.start : item.end]
    if not st.take(_byte_estimate(header_text) + 2 * len(table_path) + 160, line):
        return
    enclosing = None
    for k in range(len(concrete) - 1, 0, -1):
        enclosing = st.blocks_by_path.get(".".join(concrete[:k]))
        if enclosing is not None:
            break
    lines = (line, line + text.count("\n", item.start, item.end))
    keys = [table_path] if gprefix is None else [table_path, generic_path]
    if item.is_array:
        block_id = st.builder.add_block(
            "toml_table",
            header_text,
            locator=make_locator(line_start=lines[0], line_end=lines[1], key_path=table_path),
            section_path=concrete,
            keys=keys,
            parent=enclosing,
            attrs={"array_of_tables": True, "index": _last_index(concrete[-1])},
        )
    else:
        block_id = st.builder.add_key_block(
            "toml_table", header_text, *lines, table_path, parent=enclosing, section_path=concrete, keys=keys
        )
    st.table.parent = block_id
    st.blocks_by_path[table_path] = block_id


def _key_value(st: _Keys, item: KeyValue, line: int) -> bool:
    """A key/value pair in general (dotted or quoted key, multi-line value, inline table, deep value): its block
    added; whether the block carries the value (False: nested too deep for attrs, a failed unit)."""
    t = st.table
    value = t.node
    for part in item.parts:
        value = value[part]
    seg_cache = st.seg_cache
    key_segs = [seg_cache.get(p) or seg_cache.setdefault(p, segment(p)) for p in item.parts]
    key_path = t.prefix + ".".join(key_segs)
    keys = [key_path]
    if t.gprefix is not None:
        keys.append(t.gprefix + ".".join(key_segs))
    text = st.text
    block_text = f"{key_path} = {text[item.value_start : item.end]}"
    try:
        jv, vtype = json_value(value)
        if type(value) is dict:
            _inline_keys(key_path, value, keys)
        ok = True
    except _BigInt:
        raise _big_int_error(line) from None
    except _TooDeep:
        if _big_int(value):
            raise _big_int_error(line) from None
        jv, vtype = None, "array" if isinstance(value, list) else "table"
        ok = False
    cost = 2 * _byte_estimate(block_text) + (len(keys) + 2) * (len(key_path) + 8) + 200
    if not st.take(cost, line):
        return False
    lines = (line, line + text.count("\n", item.start, item.value_end))
    parent = t.parent if t.section else None
    if ok:
        st.builder.add_key_block(
            "toml_key",
            block_text,
            *lines,
            key_path,
            parent=parent,
            section_path=t.section,
            keys=keys,
            value=jv,
            value_type=vtype,
        )
        return True
    omitted = f"nested deeper than the {MAX_VALUE_DEPTH} levels an artifact's attrs can hold"
    st.builder.add_block(
        "toml_key",
        block_text,
        locator=make_locator(line_start=lines[0], line_end=lines[1], key_path=key_path),
        section_path=t.section,
        keys=keys,
        parent=parent,
        attrs={"value": None, "value_type": vtype, "value_omitted": omitted},
    )
    st.builder.fail(f"key {key_path} (line {line})", omitted)
    return False


def _big_int_error(line: int | None) -> ExtractionError:
    where = f" (at line {line})" if line is not None else ""
    return ExtractionError(
        ErrorCode.CORRUPT, f"not valid TOML: an integer outside signed 64 bits{where}; TOML 1.0 integers are 64-bit"
    )


# An integer past Python's int() limit of 4300 digits; matched only from a run's start, so each run is read once.
_LONG_DIGITS_RE: Final = re.compile(r"(?<![0-9_])(?:[0-9]_?){4301,}")


def _last_index(seg: str) -> int:
    return int(seg[seg.rindex("[") + 1 : -1])
