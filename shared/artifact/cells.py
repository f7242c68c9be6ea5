"""Table cells: what a cell may be, and what fits each column type (the contract's tables section).

``COLUMN_RULES`` is the one definition: per column type, the Python types of the values that fit it and, for text,
the pattern the text must match. Null and a cell error ``{"error": text}`` fit every column. Two readers of it:
``column_ok`` tests a column of many rows as a whole (the set of its values' types, the largest size of its numbers,
one regex run over its texts joined by line breaks), and ``cell_problem`` looks at one cell and says what is wrong;
a column ``column_ok`` does not pass is looked at cell by cell.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Final

from shared.artifact.rules import NOT_FINITE, OUT_OF_RANGE
from shared.contract import INT64_MAX, INT64_MIN

# The cell texts, each a pattern that holds only a real value (a date names a real day: month lengths and leap years
# are spelled out, so no date parsing is needed), none matching a line break (see _all_match).
_DECIMAL: Final = r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?"
_MONTH_DAY: Final = (
    r"(?:(?:0[13578]|1[02])-(?:0[1-9]|[12][0-9]|3[01])"  # months of 31 days
    r"|(?:0[469]|11)-(?:0[1-9]|[12][0-9]|30)"  # of 30
    r"|02-(?:0[1-9]|1[0-9]|2[0-8]))"  # February, the 29th apart
)
_LEAP_YEAR: Final = r"(?:[0-9]{2}(?:0[48]|[2468][048]|[13579][26])|(?:[02468][048]|[13579][26])00)"
_DATE: Final = r"(?!0000)(?:[0-9]{4}-" + _MONTH_DAY + "|" + _LEAP_YEAR + r"-02-29)"  # years 0001 to 9999
_TIME: Final = r"(?:[01][0-9]|2[0-3]):[0-5][0-9]:(?:[0-5][0-9]|60)(?:\.[0-9]{1,9})?"
_DATETIME: Final = _DATE + r"(?:T" + _TIME + r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])?)?"
_DURATION: Final = r"-?[0-9]+:[0-5][0-9]:[0-5][0-9](?:\.[0-9]{1,9})?"
# Below 2^63: a double at or past it may be an integer literal orjson could not hold (see check.Checker.big_float).
BIG_FLOAT: Final = 9.2e18
_NONE: Final = type(None)


@dataclass(frozen=True, slots=True)
class ColumnRule:
    kinds: frozenset[type]  # the types of the values that fit (null and cell errors apart)
    text: str | None  # the pattern a text value must match (None: any text, when str is among the kinds)
    says: str  # what a value that does not fit is told the column holds
    distinct: bool = False  # a column that repeats its texts (a day per row): each distinct text is matched once

    # The patterns are compiled when first matched, not at import: 16 regexes were a fifth of the validator's import,
    # which every extraction's cold start pays, and most artifacts have no table.
    @property
    def one(self) -> re.Pattern[str]:
        return _compiled(self.text or ".*")

    @property
    def lines(self) -> re.Pattern[str]:
        """Texts joined by line breaks, each matching (``_all_match``): one possessive regex run over a column's
        texts (the engine keeps no state per text, ~3x faster than a call per text)."""
        text = self.text or ".*"
        return _compiled(f"(?:{text}\n)*+{text}")


@functools.cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


COLUMN_RULES: Final[dict[str, ColumnRule]] = {
    "string": ColumnRule(frozenset({str}), None, "a string"),
    "number": ColumnRule(frozenset({int, float, str}), _DECIMAL, "a number, or a string of its exact decimal digits"),
    "bool": ColumnRule(frozenset({bool}), None, "a bool"),
    "date": ColumnRule(frozenset({str}), _DATE, "ISO date text YYYY-MM-DD", distinct=True),
    "datetime": ColumnRule(
        frozenset({str}), _DATETIME, "ISO date or date-time text YYYY-MM-DD[THH:MM:SS[.f][Z|+HH:MM]]"
    ),
    "time": ColumnRule(frozenset({str}), _TIME, "ISO time text HH:MM:SS[.f]"),
    "duration": ColumnRule(frozenset({str}), _DURATION, "duration text [-]H:MM:SS[.f] (hours may pass 24)"),
    "mixed": ColumnRule(frozenset({int, float, str, bool}), None, "any cell value"),
}
CELL_KINDS: Final = 'a string, a number, a bool, null or a cell error {"error": text}'
_MAX_KNOWN: Final = 200_000  # distinct texts remembered per column type, so each is matched once


def is_date(s: str) -> bool:
    return COLUMN_RULES["date"].one.fullmatch(s) is not None


def is_datetime(s: str) -> bool:
    return COLUMN_RULES["datetime"].one.fullmatch(s) is not None


def _all_match(lines: re.Pattern[str], texts: Sequence[str]) -> bool:
    """Whether every text fully matches (see ColumnRule.lines). No pattern matches a line break, and the count of
    breaks in the joined text proves that none of the texts holds one, so each line is exactly one text."""
    if not texts:
        return True
    joined = "\n".join(texts)
    return joined.count("\n") == len(texts) - 1 and lines.fullmatch(joined) is not None


def column_ok(col: Sequence[Any], ctype: str, known: dict[str, set[str]]) -> bool:
    """Whether every cell of a column (a chunk of its rows) is a valid cell that fits ``ctype`` and needs no
    cleaning. False sends the cells to ``cell_problem`` one by one, which says what is wrong (or finds nothing, as
    for an integer past 2^63 that is a double, or a cell error with more members to drop)."""
    rule = COLUMN_RULES[ctype]
    kinds = set(map(type, col))
    only = len(kinds) == 1  # one type, no null, no cell error: the column is the list of its values
    if dict in kinds:
        errors = [v for v in col if type(v) is dict]
        if set(map(len, errors)) != {1} or set(map(type, map(dict.get, errors, repeat("error")))) != {str}:
            return False
        kinds.discard(dict)
    kinds.discard(_NONE)
    if not kinds <= rule.kinds:
        return False
    if int in kinds or float in kinds:
        nums: Iterable[Any] = col if only else _numbers(col)
        if not max(map(abs, nums), default=0) < BIG_FLOAT:  # abs(INT64_MIN) fails: the careful look passes it
            return False
    if rule.text is None or str not in kinds:
        return True
    texts = col if only else [v for v in col if type(v) is str]
    if not rule.distinct:
        return _all_match(rule.lines, texts)
    good = known.setdefault(ctype, set())
    new = set(texts) - good
    if not _all_match(rule.lines, list(new)):
        return False
    if len(good) < _MAX_KNOWN:
        good |= new
    return True


def _numbers(col: Sequence[Any]) -> list[Any]:
    return [v for v in col if type(v) is int or type(v) is float]


def cell_problem(v: Any, ctype: str | None, known: dict[str, set[str]]) -> str | None:
    """What is wrong with one cell in a column of ``ctype`` (None: the column's type is itself broken, so the cell
    need only be a cell), or None."""
    if v is None:
        return None
    if isinstance(v, dict):
        if not isinstance(v.get("error"), str):
            return f'a cell object must be a cell error {{"error": text}}; a cell is {CELL_KINDS}'
        return None
    if isinstance(v, int) and not isinstance(v, bool):
        if not INT64_MIN <= v <= INT64_MAX:
            return OUT_OF_RANGE + ("; in a number column put its exact digits in a string" if ctype == "number" else "")
    elif isinstance(v, float):
        if not math.isfinite(v):
            return NOT_FINITE
    elif not isinstance(v, bool | str):
        return f"a cell is {CELL_KINDS}, got {type(v).__name__}"
    if ctype is None or _fits(v, ctype, known):
        return None
    shown = repr(v)
    shown = shown if len(shown) <= 60 else shown[:57] + "..."
    return f"does not fit the {ctype} column: must be {COLUMN_RULES[ctype].says}, got {shown}"


def _fits(v: Any, ctype: str, known: dict[str, set[str]]) -> bool:
    rule = COLUMN_RULES[ctype]
    kind = bool if isinstance(v, bool) else str if isinstance(v, str) else float if isinstance(v, float) else int
    if kind not in rule.kinds:
        return False
    if kind is not str or rule.text is None:
        return True
    good = known.setdefault(ctype, set())
    if v in good:
        return True
    if rule.one.fullmatch(v) is None:
        return False
    if len(good) < _MAX_KNOWN:
        good.add(v)
    return True


def clean_cell(v: Any) -> Any:
    """A valid cell as the model holds it: a cell error with its other members dropped."""
    return {"error": v["error"]} if isinstance(v, dict) and len(v) != 1 else v
