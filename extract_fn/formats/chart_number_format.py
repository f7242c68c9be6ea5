"""Numbers and dates as a chart prints them with an Excel number format code (``c:formatCode``, ``c:numFmt``)."""

from __future__ import annotations

import datetime as dt
import re

EPOCH_1900 = dt.date(1899, 12, 30)  # serial day 0 as Excel counts (its 1900 leap-year bug folded in past day 60)
EPOCH_1904 = dt.date(1904, 1, 1)  # c:date1904 (a Mac workbook's date system)
_DATE_TOKEN = re.compile(r"yyyy|yy|mmmm|mmm|mm|m|dddd|ddd|dd|d", re.IGNORECASE)
_QUOTED = re.compile(r'"[^"]*"|\\.|\[[^\]]*\]')
_PLACEHOLDER = re.compile(r"[0#?]")
MAX_DECIMALS = 30  # Excel shows at most 30 decimal places


def is_date_format(code: str) -> bool:
    bare = _QUOTED.sub("", code).lower()
    return "general" not in bare and bool(re.search(r"[dy]", bare))


def format_date(value: str, code: str, epoch: dt.date = EPOCH_1900) -> str:
    """A serial day number shown with a number format's date parts (``m/d/yy`` -> ``1/5/02``); else as cached."""
    try:
        serial = float(value)
        day = epoch + dt.timedelta(days=int(serial))
    except (ValueError, OverflowError):
        return value
    parts = {
        "yyyy": f"{day.year:04d}",
        "yy": f"{day.year % 100:02d}",
        "mmmm": day.strftime("%B"),
        "mmm": day.strftime("%b"),
        "mm": f"{day.month:02d}",
        "m": str(day.month),
        "dddd": day.strftime("%A"),
        "ddd": day.strftime("%a"),
        "dd": f"{day.day:02d}",
        "d": str(day.day),
    }
    fmt = _QUOTED.sub(lambda m: m.group().strip('"[]').lstrip("\\"), code.split(";", 1)[0])
    return _DATE_TOKEN.sub(lambda m: parts[m.group().lower()], fmt)


def format_number(value: float, code: str, epoch: dt.date = EPOCH_1900) -> str:
    """A number shown with a (simple) number format: General, ``0``, ``0.0``, ``#,##0.00``, ``0%``, literal text
    around the digits, dates; a format beyond these is shown as General."""
    sections = code.split(";")
    section = sections[1] if value < 0 and len(sections) > 1 else sections[0]
    if value < 0 and len(sections) > 1:
        value = -value
    if is_date_format(section):
        return format_date(repr(value), section, epoch)
    bare = _QUOTED.sub("", section)
    if "general" in section.lower() or not _PLACEHOLDER.search(bare):
        return _general(value)
    if "%" in bare:
        value *= 100
    digits = bare.split(".", 1)[1] if "." in bare else ""
    places = re.match(r"[0#?]*", digits)
    decimals = min(MAX_DECIMALS, len(places.group()) if places else 0)
    grouping = "," in bare.split(".", 1)[0]
    number = f"{value:,.{decimals}f}" if grouping else f"{value:.{decimals}f}"
    if number.startswith("-") and round(value, decimals) == 0:  # -0.001 as "0.00" is "0.00", not "-0.00"
        number = number[1:]
    first = _PLACEHOLDER.search(section)
    last = max(i for i, ch in enumerate(section) if ch in "0#?")
    prefix = _QUOTED.sub(
        lambda m: m.group().strip('"[]').lstrip("\\") if not m.group().startswith("[") else "",
        section[: first.start()] if first else "",
    )
    suffix = _QUOTED.sub(lambda m: m.group().strip('"').lstrip("\\"), section[last + 1 :])
    return f"{prefix}{number}{suffix}".strip()


def _general(value: float) -> str:
    """Excel's General: an integer without decimals, else up to 10 significant digits."""
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.10g}"
