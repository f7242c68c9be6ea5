"""TOML: a ``toml_table`` block per table header and a ``toml_key`` block per key/value pair.

Decisions (documented for the artifact's readers):

* **Decoding**: TOML is UTF-8 by definition. One UTF-8 byte-order mark at the very start is dropped (line numbers
  are unaffected). Bytes that are not UTF-8, a UTF-16/UTF-32 byte-order mark, UTF-16/32 text without one (NUL bytes
  in every other position), and a byte-order mark or a non-ASCII space character (U+3000, U+00A0, ...) where the
  parser stops are the ``encoding`` error. The ``encoding`` option may only name UTF-8 (``utf-8``, ``utf8``,
  ``utf-8-sig``...): any other codec is ``invalid_option``.
* **Validation and values** come from ``tomllib`` (TOML 1.0). A file it rejects is ``corrupt`` with its message,
  which names the line and column. Nesting too deep for it (a ``RecursionError``) is ``resource_limit``. An
  integer outside signed 64 bits, which TOML 1.0 forbids and tomllib accepts, is ``corrupt`` too.
* **Positions** come from our own scanner over the validated text (it knows strings, multi-line strings holding
  ``[`` or ``=``, arrays and inline tables over several lines, and comments).
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
import gc
import json
import math
import re
import sys
import tomllib
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Final

from extract_fn.formats.base import ExtractRequest
from shared.artifact_builder import ArtifactBuilder, make_locator
from shared.contract import INT64_MAX, INT64_MIN, MAX_NESTING, ErrorCode, ExtractionError

PARSER: Final = "loom-toml"
PARSER_VERSION: Final = f"1+tomllib-py{sys.version_info.major}.{sys.version_info.minor}"
OUTPUT_RESERVE: Final = 64 * 1024  # bytes of the output budget kept for coverage and the artifact's frame
MAX_VALUE_DEPTH: Final = MAX_NESTING - 1  # the value sits in attrs, which counts one level itself

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
# a bare key = a basic string without escapes or a plain scalar (a date-time may have a space), to the line's end
_SIMPLE_KV_RE: Final = re.compile(
    r"([A-Za-z0-9_-]+)[ \t]*=[ \t]*"
    r'("[^"\\\n]*"(?!")|[^\s,\[\]{}#"\']+(?: \d{2}:\d{2}[^\s#,\]}]*)?)'
    r"[ \t]*(#[^\n]*)?(?=\n|\r\n|$)"
)
_SIMPLE_HEADER_RE: Final = re.compile(r"\[([A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+)*)\][ \t]*(#[^\n]*)?(?=\n|\r\n|$)")
_SCALAR_RE: Final = re.compile(r"[^\s,\]}#]+")
_BRACKET_SPECIAL_RE: Final = re.compile(r"[\[\]{}\"'#]")
_ESCAPE_RE: Final = re.compile(r"\\(?:u([0-9A-Fa-f]{4})|U([0-9A-Fa-f]{8})|(.))", re.DOTALL)
_SIMPLE_ESCAPES: Final = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}
_ERROR_POS_RE: Final = re.compile(r"\(at line (\d+), column (\d+)\)")


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
        return [json_value(v, depth + 1)[0] for v in value], "array"
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


def decode_toml(data: bytes, encoding_option: str | None) -> tuple[str, bool]:
    """The text (without a leading UTF-8 BOM) and whether there was one."""
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
    if b"\x00" in body:
        even = body[0::2].count(0)
        odd = body[1::2].count(0)
        half = len(body) // 2
        if half and max(even, odd) * 2 >= half:
            raise ExtractionError(
                ErrorCode.ENCODING,
                f"the file is {max(even, odd)} NUL bytes in every other position: UTF-16 or UTF-32 text, "
                "but TOML must be UTF-8",
            )
    try:
        return body.decode("utf-8"), bom
    except UnicodeDecodeError as e:
        raise ExtractionError(
            ErrorCode.ENCODING,
            f"the file is not UTF-8 (TOML must be): invalid bytes at byte offset {e.start + (3 if bom else 0)}",
        ) from None


def _load(text: str) -> dict[str, Any]:
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
# The scanner (over text tomllib has accepted)


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
    """Positions of headers and key/value pairs in valid TOML text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.n = len(text)

    def items(self) -> Iterator[Header | KeyValue]:
        text, n = self.text, self.n
        pos = 0
        simple_kv = _SIMPLE_KV_RE.match
        simple_header = _SIMPLE_HEADER_RE.match
        while True:
            pos = _WS_COMMENTS_RE.match(text, pos).end()  # type: ignore[union-attr]
            if pos >= n:
                return
            m = simple_kv(text, pos)
            if m is not None:  # the common line: bare key = one-line value
                end = m.end(3) if m.group(3) is not None else m.end(2)
                yield KeyValue([m.group(1)], pos, m.start(2), m.end(2), self._trim(pos, end))
                pos = m.end()
                continue
            if text[pos] == "[":
                m = simple_header(text, pos)
                if m is not None:
                    end = m.end(2) if m.group(2) is not None else m.end(1) + 1
                    yield Header(m.group(1).split("."), False, pos, self._trim(pos, end))
                    pos = m.end()
                    continue
                is_array = text.startswith("[[", pos)
                p = pos + (2 if is_array else 1)
                parts, p = self.key(p)
                p = _SPACES_RE.match(text, p).end()  # type: ignore[union-attr]
                p += 2 if is_array else 1
                end = _REST_OF_LINE_RE.match(text, p).end()  # type: ignore[union-attr]
                yield Header(parts, is_array, pos, self._trim(pos, end))
                pos = end
                continue
            parts, p = self.key(pos)
            p = _SPACES_RE.match(text, p).end()  # type: ignore[union-attr]
            p += 1  # '='
            vstart = _SPACES_RE.match(text, p).end()  # type: ignore[union-attr]
            vend = self.value_end(vstart)
            end = _REST_OF_LINE_RE.match(text, vend).end()  # type: ignore[union-attr]
            yield KeyValue(parts, pos, vstart, vend, self._trim(vstart, end))
            pos = end

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
# Entry point


class _Lines:
    """1-based line numbers of increasing offsets."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1

    def at(self, offset: int) -> int:
        if offset < self.pos:
            self.pos, self.line = 0, 1
        self.line += self.text.count("\n", self.pos, offset)
        self.pos = offset
        return self.line


def _byte_estimate(s: str) -> int:
    return len(s) if s.isascii() else len(s.encode("utf-8"))


def extract(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    text, bom = decode_toml(data, request.encoding)
    # tomllib's values and the blocks are trees without cycles: the cyclic collector's passes over their many
    # containers would cost a third of the time and free nothing
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _extract(text, bom, request)
    finally:
        if gc_was_enabled:
            gc.enable()


def _extract(text: str, bom: bool, request: ExtractRequest) -> dict[str, Any]:
    doc = _load(text)
    builder = ArtifactBuilder(
        "toml", parser=PARSER, parser_version=PARSER_VERSION, unit="keys", options=request.options()
    )
    if bom:
        builder.warn("a UTF-8 byte-order mark at the start of the file was dropped")
    lines = _Lines(text)
    out_budget = max(0, request.max_output_bytes - OUTPUT_RESERVE)
    spent = 0
    total = 0
    extracted = 0
    cut_line: int | None = None
    # the current table: concrete path [(segment text, node)], its block id, its section path
    table_node: dict[str, Any] = doc
    table_path = ""
    generic_path = ""
    section: list[str] = []
    parent: str | None = None
    aot_index: dict[str, int] = {}  # concrete path of an array of tables -> its current element
    blocks_by_path: dict[str, str] = {}
    seg_cache: dict[str, str] = {}
    for item in TomlScanner(text).items():
        if isinstance(item, Header):
            node: Any = doc
            concrete: list[str] = []
            generic: list[str] = []
            last = len(item.parts) - 1
            for k, part in enumerate(item.parts):
                seg = segment(part)
                node = node[part]
                generic.append(seg)
                path_so_far = ".".join([*concrete, seg])
                if isinstance(node, list):
                    if k == last and item.is_array:
                        idx = aot_index.get(path_so_far, -1) + 1
                        aot_index[path_so_far] = idx
                    else:
                        idx = aot_index.get(path_so_far, len(node) - 1)
                    node = node[idx]
                    seg = f"{seg}[{idx}]"
                concrete.append(seg)
            table_node = node
            section = concrete
            table_path = ".".join(concrete)
            generic_path = ".".join(generic)
            if cut_line is not None:
                continue
            header_text = text[item.start : item.end]
            cost = _byte_estimate(header_text) + 2 * len(table_path) + 160
            if spent + cost > out_budget:
                cut_line = lines.at(item.start)
                continue
            spent += cost
            enclosing = None
            for k in range(len(concrete) - 1, 0, -1):
                enclosing = blocks_by_path.get(".".join(concrete[:k]))
                if enclosing is not None:
                    break
            keys = [table_path] if table_path == generic_path else [table_path, generic_path]
            line = lines.at(item.start)
            parent = builder.add_block(
                "toml_table",
                header_text,
                parent=enclosing,
                section_path=section,
                locator=make_locator(line_start=line, line_end=lines.at(item.end), key_path=table_path),
                keys=keys,
                attrs={"array_of_tables": True, "index": _last_index(concrete[-1])} if item.is_array else None,
            )
            blocks_by_path[table_path] = parent
            continue
        total += 1
        if cut_line is not None:
            continue
        value: Any = table_node
        for part in item.parts:
            value = value[part]
        key_segs = [seg_cache.get(p) or seg_cache.setdefault(p, segment(p)) for p in item.parts]
        key_path = ".".join([table_path, *key_segs]) if table_path else ".".join(key_segs)
        keys = [key_path]
        if generic_path != table_path:
            keys.append(".".join([generic_path, *key_segs]))
        block_text = f"{key_path} = {text[item.value_start : item.end]}"
        attrs: dict[str, Any]
        line_start = lines.at(item.start)
        try:
            jv, vtype = json_value(value)
            attrs = {"value": jv, "value_type": vtype}
            if type(value) is dict:
                _inline_keys(key_path, value, keys)
            ok = True
        except _BigInt:
            raise _big_int_error(line_start) from None
        except _TooDeep:
            if _big_int(value):
                raise _big_int_error(line_start) from None
            vtype = "array" if isinstance(value, list) else "table"
            attrs = {
                "value": None,
                "value_type": vtype,
                "value_omitted": f"nested deeper than the {MAX_VALUE_DEPTH} levels an artifact's attrs can hold",
            }
            ok = False
        cost = 2 * _byte_estimate(block_text) + (len(keys) + 2) * (len(key_path) + 8) + 200
        if spent + cost > out_budget:
            cut_line = line_start
            continue
        spent += cost
        builder.add_block(
            "toml_key",
            block_text,
            parent=parent if table_path else None,
            section_path=section,
            locator=make_locator(
                line_start=line_start,
                line_end=line_start + text.count("\n", item.start, item.value_end),
                key_path=key_path,
            ),
            keys=keys,
            attrs=attrs,
        )
        if ok:
            extracted += 1
        else:
            builder.fail(f"key {key_path} (line {line_start})", attrs["value_omitted"])
    if cut_line is not None:
        builder.fail(
            f"keys from line {cut_line} on",
            f"left out: the artifact reached its output limit ({request.max_output_bytes} bytes)",
        )
        builder.warn(f"the keys from line {cut_line} on were left out at the output limit")
    builder.coverage(total=total, extracted=extracted)
    return builder.build()


def _big_int_error(line: int) -> ExtractionError:
    return ExtractionError(
        ErrorCode.CORRUPT,
        f"not valid TOML: an integer outside signed 64 bits (at line {line}); TOML 1.0 integers are 64-bit",
    )


def _last_index(seg: str) -> int:
    return int(seg[seg.rindex("[") + 1 : -1])
