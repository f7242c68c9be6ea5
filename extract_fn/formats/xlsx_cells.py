"""What calamine's value of a cell loses, taken back from the cell's own XML (``xlsx_format``'s second look).

calamine applies the number formats itself, and three of its answers are not what Excel shows:

* **A serial below 1 under a date format** becomes a time of day (``00:00:00`` for 0, and for a negative serial
  too, whose time it makes up). Excel shows a date: 1904-01-01 for serial 0 under the 1904 system; under the 1900
  system serial 0 is the day Excel calls ``1900-01-00``. A negative serial Excel shows as ``########``.
* **Serial 60 under the 1900 system** is Excel's fictitious 1900-02-29 (Lotus's leap-year bug): calamine makes it
  1900-02-28, the day serial 59 is, so two cells Excel shows apart would read alike.
* **A whole number past 2^53** is a double in calamine (123456789012345678 -> 123456789012345680), where the cell's
  stored text holds its digits.

Only cells whose calamine value may be one of these are looked up (a time value, 1900-02-28, a float of magnitude
2^53 or more), and only then is the sheet's XML read again: a forward sweep of ``bytes.find`` for each cell's
reference (cells are stored in row order), so a sheet with none costs one check of each column's values.

The decisions: a date-part format (one showing days, months or years; ``styles.xml``'s ``cellXfs``) over a serial
in [0, 1) gives, under the 1904 system, its date (a date-time when it has a fraction); under the 1900 system, the
text ``1900-01-00`` (``1900-01-00T12:00:00`` with a fraction), the day Excel shows, which is no ISO date. Serial
60 to 61 under the 1900 system gives the text ``1900-02-29`` (with its time when it has a fraction). A negative
serial under a date format is kept as the number it is. Each text and number put in place of a date makes the
column ``mixed``, and a warning counts them and names the first cells. A time format keeps calamine's time (below
1 that is what Excel shows; a negative one, which Excel shows as ``########``, is not looked at): only cells of a
date-part style are read (a time column in a workbook with date formats costs ~1 us a cell; the first look, each
column's values checked, 14 ms on the 100,000 x 10 benchmark).
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from extract_fn.formats.table_values import format_time, plain_decimal

_PREFIX = rb"(?:[A-Za-z_][\w.-]*:)?"
_V = re.compile(rb"<" + _PREFIX + rb"v(?:\s[^>]*)?>(.*?)</" + _PREFIX + rb"v>", re.DOTALL)
_CELL_BODY = re.compile(rb"(.*?)</" + _PREFIX + rb"c>", re.DOTALL)
_CELL_TAG = re.compile(rb"<" + _PREFIX + rb"c\s")
_STYLE_ATTR = re.compile(rb"\ss\s*=\s*[\"']([0-9]{1,9})[\"']")
_TYPE_ATTR = re.compile(rb"\st\s*=\s*[\"']([A-Za-z]*)[\"']")

FEB28: Final = _dt.date(1900, 2, 28)
TWO_53: Final = float(2**53)
_DATES: Final = frozenset({_dt.date})
_DATE_PART: Final = frozenset({"date", "datetime"})
LISTED: Final = 5  # cells named in a warning

# Built-in number formats (ECMA-376 18.8.30, and the East Asian ones Excel maps to dates and times).
_BUILTIN_DATE: Final = frozenset({14, 15, 16, 17, 27, 28, 29, 30, 31, 34, 35, 36, 50, 51, 52, 53, 54, 57, 58})
_BUILTIN_TIME: Final = frozenset({18, 19, 20, 21, 32, 33, 45, 47, 55, 56})
_BUILTIN_DATETIME: Final = frozenset({22})
_BUILTIN_DURATION: Final = frozenset({46})
_LITERALS = re.compile(r'"[^"]*"|\\.|_.|\*.')
_ELAPSED = re.compile(r"\[(?:h+|m+|s+)\]", re.IGNORECASE)
_BRACKETS = re.compile(r"\[[^\]]*\]")


def format_class(code: str) -> str | None:
    """A number format's kind: ``date`` (a date part and no time part), ``datetime``, ``time``, ``duration`` (an
    elapsed ``[h]``), or None (no date or time at all). Only the first section (before ``;``) is read."""
    text = _LITERALS.sub("", code).split(";", 1)[0]
    if _ELAPSED.search(text):
        return "duration"
    text = _BRACKETS.sub("", text).lower().replace("general", "")
    has_time = "h" in text or "s" in text
    has_date = "d" in text or "y" in text or ("m" in text and not has_time)
    if has_date:
        return "datetime" if has_time else "date"
    return "time" if has_time else None


def style_classes(root: Any) -> list[str | None]:
    """Each cell style's (``cellXfs`` index) number-format kind, from ``styles.xml``'s parsed root."""

    def local(tag: Any) -> str:
        return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""

    codes: dict[int, str] = {}
    xfs: list[int] = []
    for el in root.iter():
        name = local(el.tag)
        if name == "numFmt":
            try:
                codes[int(el.get("numFmtId") or "")] = el.get("formatCode") or ""
            except ValueError:
                continue
        elif name == "cellXfs":
            for xf in el:
                if local(xf.tag) == "xf":
                    try:
                        xfs.append(int(xf.get("numFmtId") or "0"))
                    except ValueError:
                        xfs.append(0)
    out: list[str | None] = []
    for fmt in xfs:
        if fmt in codes:
            out.append(format_class(codes[fmt]))
        elif fmt in _BUILTIN_DATE:
            out.append("date")
        elif fmt in _BUILTIN_TIME:
            out.append("time")
        elif fmt in _BUILTIN_DATETIME:
            out.append("datetime")
        elif fmt in _BUILTIN_DURATION:
            out.append("duration")
        else:
            out.append(None)
    return out


def suspect_rows(values: Sequence[Any], types: set[type], date1904: bool) -> list[int]:
    """The rows of one column whose calamine value may not be what Excel shows (see the module's docstring)."""
    out: list[int] = []
    if _dt.time in types:
        out += [i for i, v in enumerate(values) if type(v) is _dt.time]
    if not date1904:
        if types == _DATES:  # a column of dates (the usual): their earliest, in C
            if min(values) <= FEB28:
                out += [i for i, v in enumerate(values) if v == FEB28]
        elif _dt.date in types and FEB28 in values:
            out += [i for i, v in enumerate(values) if type(v) is _dt.date and v == FEB28]
        if _dt.datetime in types:
            out += [i for i, v in enumerate(values) if type(v) is _dt.datetime and v.date() == FEB28]
    if float in types:
        if len(types) == 1:  # (a sum past 2^53 is needed for a value past it: one pass in C, 2.5 ms a 100,000)
            big = sum(map(abs, values)) >= TWO_53 and (max(values) >= TWO_53 or min(values) <= -TWO_53)
        else:
            big = any(type(v) is float and abs(v) >= TWO_53 for v in values)
        if big:
            out += [i for i, v in enumerate(values) if type(v) is float and TWO_53 <= abs(v) < float("inf")]
    if len(out) > 1:
        out.sort()
    return out


def date_part_styles(classes: Sequence[str | None]) -> frozenset[int]:
    """The cell styles whose number format shows a date (a day, a month or a year)."""
    return frozenset(i for i, kind in enumerate(classes) if kind in _DATE_PART)


@dataclass
class CellSource:
    style: int
    kind: str  # the cell's t attribute ("" when none)
    text: str | None  # the <v> text


def column_sources(
    xml: bytes, letters: str, rows: Sequence[int], styles: frozenset[int] | None = None
) -> dict[int, CellSource]:
    """Sheet row (1-based, ascending) -> ``CellSource`` of the cell in column ``letters`` of that row, for the cells
    ``xml`` holds with an ``r`` attribute (and, given ``styles``, of one of those styles): one forward sweep of
    ``bytes.find``."""
    out: dict[int, CellSource] = {}
    pos = 0
    col = letters.encode("ascii")
    elsewise: dict[bytes, int] | None = None  # the column's cells by r, however quoted: indexed at the first miss
    for row in rows:
        name = col + str(row).encode("ascii")
        hit = xml.find(b' r="' + name + b'"', pos) if elsewise is None else -1
        if hit < 0:  # (after a first miss, the index only: a find to the end at each would be quadratic)
            if elsewise is None:
                elsewise = _find_anywhere(xml, col)
            hit = elsewise.get(name, -1)
            if hit < 0:
                continue
        start = xml.rfind(b"<", 0, hit)
        gt = xml.find(b">", hit)
        if start < 0 or gt < 0 or _CELL_TAG.match(xml, start) is None:
            continue
        tag = xml[start:gt]
        pos = gt
        s = _STYLE_ATTR.search(tag)
        style = int(s.group(1)) if s else 0
        if styles is not None and style not in styles:
            continue
        t = _TYPE_ATTR.search(tag) if b"t" in tag[2:] else None
        text = None
        if xml.startswith(b"<v>", gt + 1):  # the usual cell: <c r=".." s=".."><v>45366</v></c>
            close = xml.find(b"</v>", gt + 4)
            if close >= 0:
                text = xml[gt + 4 : close].decode("utf-8", "replace").strip()
        elif not tag.endswith(b"/"):
            body = _CELL_BODY.match(xml, gt + 1)
            v = _V.search(body.group(1)) if body is not None else None
            if v is not None:
                text = v.group(1).decode("utf-8", "replace").strip()
        out[row] = CellSource(style, t.group(1).decode() if t else "", text)
    return out


def _find_anywhere(xml: bytes, col: bytes) -> dict[bytes, int]:
    """Cell name (``A1``) -> where its first ``r`` attribute is, for column ``col``'s cells, however written
    (single quotes, spaces): one pass over the sheet (not one a cell, which is quadratic)."""
    out: dict[bytes, int] = {}
    for m in re.finditer(rb"\sr\s*=\s*[\"'](" + re.escape(col) + rb"[0-9]+)[\"']", xml):
        out.setdefault(m.group(1), m.start())
    return out


@dataclass
class Restored:
    """What a sheet's second look changed, for its warnings."""

    negative: list[str] = field(default_factory=list)  # cells: a negative serial under a date or time format
    fictitious: list[tuple[str, str]] = field(default_factory=list)  # (cell, text): 1900-01-00, 1900-02-29

    def warnings(self, sheet: str) -> list[str]:
        out = []
        if self.negative:
            out.append(
                f"sheet {sheet!r}: {len(self.negative)} cell(s) with a date format hold a negative serial "
                f"({_listed(self.negative)}), which Excel shows as ########: sent as the numbers"
            )
        if self.fictitious:
            named = _listed([f"{c} {t}" for c, t in self.fictitious])
            out.append(
                f"sheet {sheet!r}: {len(self.fictitious)} cell(s) hold a date serial Excel shows as a day that does "
                f"not exist ({named}): sent as that text"
            )
        return out


def _listed(items: list[str]) -> str:
    more = len(items) - LISTED
    return ", ".join(items[:LISTED]) + (f" and {more} more" if more > 0 else "")


def restore(
    value: Any, src: CellSource, styles: Sequence[str | None], *, date1904: bool, where: str, notes: Restored
) -> Any:
    """The value Excel shows for a cell calamine read as ``value`` (``value`` itself when it stands)."""
    if src.text is None:
        return value
    if type(value) is float:  # past 2^53: the stored digits
        if src.kind not in ("", "n"):
            return value
        digits = plain_decimal(src.text)
        if digits is None:
            return value
        if "." in digits:
            whole, decimals = digits.split(".", 1)
            if decimals.strip("0"):
                return value
            digits = whole
        n = int(digits)
        return n if float(n) == value else value
    try:
        serial = float(src.text)
    except ValueError:
        return value
    kind = styles[src.style] if 0 <= src.style < len(styles) else None
    if kind not in _DATE_PART:  # a time format's value below 1 is its time, as Excel shows it
        return value
    if serial < 0:
        notes.negative.append(where)
        return serial
    if not (serial < 1 or (not date1904 and 60 <= serial < 61)):
        return value
    day, frac = divmod(serial, 1.0)
    if date1904:
        moment = _dt.datetime(1904, 1, 1) + _dt.timedelta(days=serial)
        return moment.date() if moment.time() == _dt.time() else moment
    text = "1900-01-00" if day == 0 else "1900-02-29"
    if frac:
        text += "T" + format_time((_dt.datetime(2000, 1, 1) + _dt.timedelta(days=frac)).time())
    notes.fictitious.append((where, text))
    return text
