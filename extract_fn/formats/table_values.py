"""Typed table values shared by the tabular formats (csv, xlsx, parquet).

What lives here, and the encodings every tabular artifact uses (the contract's tables section):

* **Column types** are what every non-null value of the column is: ``string``, ``number``, ``bool``, ``date``,
  ``datetime`` (dates and date-times together), ``time``, ``duration``, or ``mixed``. Nulls and cell errors
  (``{"error": "#DIV/0!"}``) fit every type and do not decide it. A column with no values at all is ``string``.
* **Numbers**: an integer within signed 64 bits is a JSON integer; a bigger one is its exact digits as a string
  (``"18446744073709551615"``); a decimal read from text (CSV, a workbook's stored number, a Parquet DECIMAL) is its
  exact digits as a string (``"12.345"``, never binary-float noise), in plain notation (``1.5E-3`` becomes
  ``"0.0015"``); a binary float (a Parquet FLOAT/DOUBLE) is a JSON number. NaN and infinities are never sent: they
  become null and the artifact carries a warning.
* **Dates and times** are ISO text: ``2021-01-01``, ``2021-01-01T10:30:00`` (with ``+01:00`` when the source has an
  offset), ``10:30:15[.ffffff]``; a duration is ``[-]H:MM:SS[.ffffff]`` with hours past a day (``36:00:00``).
* **Row blocks**: each data row is one ``paragraph`` block whose text is ``name: value | name: value`` over the
  row's non-null cells (a row of only nulls gets no block), ``attrs.table_id`` naming its table and a locator with
  ``row_start == row_end`` (and ``sheet`` for a workbook, the source lines for a CSV).

The output budget (``request.max_output_bytes``) is enforced while rows are added: table rows and their row blocks
are measured in chunks by serializing them (exact bytes, cheap with orjson) and a table is cut at the last row that
fits; the format module then reports rows extracted of total in coverage and a warning.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import math
import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Final, cast

import orjson

from extract_fn.formats.output_budget import OutputBudget
from shared.artifact.column_rows import rows_json_len, rows_of
from shared.artifact_builder import ArtifactBuilder, OfferedBlocks, clean_value
from shared.contract import (
    INT64_MAX,
    INT64_MIN,
    MAX_COLUMNS,
)

# ---------------------------------------------------------------------------------------------------------------
# Text values (CSV): which type a column of source text is, and its values in that type.

_INT = r"-?(?:0|[1-9][0-9]*)"
_DEC = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?"
# an exponent number: converted to plain exact digits when the exponent is small enough to write out
_EXP = r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]{1,2})?"
_BOOL = r"(?i:true|false)"
_DATE = r"[0-9]{4}-[0-9]{2}-[0-9]{2}"
_TIME = r"[0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,9})?)?"
_OFFSET = r"(?:Z|[+-][0-9]{2}:?[0-9]{2})"
_DATETIME = rf"{_DATE}(?:[T ]{_TIME}{_OFFSET}?)?"


def _all(item: str) -> re.Pattern[str]:
    """A pattern matching values joined by newlines, every one of them ``item`` (possessive: no backtracking)."""
    return re.compile(rf"(?:{item})(?:\n(?:{item}))*+")


_ALL_INT: Final = _all(_INT)
_ALL_DEC: Final = _all(_DEC)
_ALL_EXP: Final = _all(_EXP)
_ALL_BOOL: Final = _all(_BOOL)
_ALL_DATE: Final = _all(_DATE)
_ALL_DATETIME: Final = _all(_DATETIME)
_ALL_TIME: Final = _all(_TIME)
_ONE_EXP: Final = re.compile(_EXP)
_ONE_INT: Final = re.compile(_INT)
MAX_EXPONENT_DIGITS: Final = 40  # "1e40" written out is 41 digits; past that a value stays text


# The most characters an integer within int64 has ("-9223372036854775808"): a longer one is never converted, so
# int() never meets a value past its own limit of 4300 digits (a ValueError, sys.int_info.str_digits_check_threshold).
_INT64_CHARS: Final = 20


def _ints_fit(values: Sequence[str]) -> bool:
    return max(map(len, values)) < 19 or all(
        len(v) < 19 or (len(v) <= _INT64_CHARS and INT64_MIN <= int(v) <= INT64_MAX) for v in values
    )


def plain_decimal(text: str) -> str | None:
    """``"1.5E-3"`` -> ``"0.0015"``: a decimal in plain exact digits, or None when it is no finite decimal."""
    try:
        d = Decimal(text)
    except (InvalidOperation, ValueError):
        return None
    if not d.is_finite():
        return None
    exp = d.as_tuple().exponent
    if not isinstance(exp, int) or abs(exp) > MAX_EXPONENT_DIGITS + 20:
        return None
    out = format(d, "f")
    if out.startswith("-") and out.strip("-0.") == "":
        out = out[1:]  # "-0.0" is 0
    return out


def _number_text(v: str) -> int | str:
    """One value of a CSV number column: int when it is a plain integer within int64, else its exact digits."""
    if "." not in v and "e" not in v and "E" not in v:
        if len(v) > _INT64_CHARS:
            return v
        n = int(v)
        return n if INT64_MIN <= n <= INT64_MAX else v
    if "e" in v or "E" in v:
        p = plain_decimal(v)
        if p is None:  # cannot happen after the column matched _ALL_EXP, but never send a non-number
            return v
        if "." not in p:
            if len(p) > _INT64_CHARS:
                return p
            n = int(p)
            return n if INT64_MIN <= n <= INT64_MAX else p
        return p
    return v


def _valid_dates(values: Iterable[str]) -> bool:
    try:
        for v in values:
            _dt.date.fromisoformat(v[:10])
            if len(v) > 10:
                _dt.datetime.fromisoformat(v)
    except ValueError:
        return False
    return True


def _valid_times(values: Iterable[str]) -> bool:
    try:
        for v in values:
            _dt.time.fromisoformat(v[:15])
    except ValueError:
        return False
    return True


_DT_PARTS: Final = re.compile(
    r"([0-9]{4}-[0-9]{2}-[0-9]{2})[T ]([0-9]{2}:[0-9]{2})(:[0-9]{2}(?:\.[0-9]+)?)?(Z|[+-][0-9]{2}:?[0-9]{2})?"
)


def _normalize_datetime(v: str) -> str:
    """ISO as the contract spells it: ``T`` between date and time, seconds always, offsets ``+HH:MM``."""
    m = _DT_PARTS.fullmatch(v)
    if m is None:  # a plain date
        return v
    date, hm, sec, off = m.groups()
    if off and off != "Z" and ":" not in off:
        off = off[:3] + ":" + off[3:]
    return f"{date}T{hm}{sec or ':00'}{off or ''}"


def _normalize_time(v: str) -> str:
    return v + ":00" if len(v) == 5 else v


def infer_text_column(values: Sequence[str | None]) -> tuple[str, list[Any]]:
    """The type of a column of text cells and its values in that type (None and "" are null).

    Integers and decimals are ``number`` (an int within int64, else exact digits; an integer with a leading zero
    such as ``"007"`` is an identifier, not a number, and keeps the column text); ``true``/``false`` in any case are
    ``bool``; ISO dates ``date``; ISO date-times (with dates) ``datetime``; ``HH:MM[:SS[.f]]`` ``time``; anything
    else, or a column whose values are of several of these, ``string`` with the values as they are.
    """
    full = all(values)  # no empty cell: the values themselves, mapped in C
    present = cast("list[str]", values) if full else [v for v in values if v]
    if not present:
        return "string", [None] * len(values)
    joined = "\n".join(present)
    if joined.count("\n") != len(present) - 1:  # a value holds a newline: it is text (no typed value spans lines)
        return "string", [v or None for v in values]
    if _ALL_INT.fullmatch(joined) is not None:
        if _ints_fit(present):
            return "number", list(map(int, present)) if full else [int(v) if v else None for v in values]
        return "number", [_number_text(v) if v else None for v in values]
    if _ALL_DEC.fullmatch(joined) is not None:  # no exponent: a value with a point is its own digits
        return "number", [(v if "." in v else _number_text(v)) if v else None for v in values]
    if _ALL_EXP.fullmatch(joined) is not None:
        return "number", [_number_text(v) if v else None for v in values]
    # The checks below hold for a value or not: each distinct value is checked once.
    if _ALL_BOOL.fullmatch(joined) is not None:
        truth = {v: v.lower() == "true" for v in set(present)}
        return "bool", [truth[v] if v else None for v in values]
    nulled = list(values) if full else [v or None for v in values]
    if _ALL_DATE.fullmatch(joined) is not None and _valid_dates(set(present)):
        return "date", shared_texts(nulled)
    if _ALL_DATETIME.fullmatch(joined) is not None and _valid_dates(set(present)):
        return "datetime", shared_texts([_normalize_datetime(v) if v else None for v in values])
    if _ALL_TIME.fullmatch(joined) is not None and _valid_times(set(present)):
        return "time", shared_texts([_normalize_time(v) if v else None for v in values])
    return "string", shared_texts(nulled)


def respelled_rows(raw: Sequence[str | None], typed: Sequence[Any]) -> list[int]:
    """The rows of a text column whose typed value (``infer_text_column``'s) reads, as row-block text
    (``value_text``), otherwise than its cell is spelled: ``"+5"``, ``"TRUE"``, an exponent written out, a
    normalized date-time. Their block text must be kept from the source; any other row's can be made again from its
    typed values. All in C: the values' texts by one converter mapped over the column (``str`` for strings and
    ints, the bools' two words), compared with the cells as whole lists and, where they differ, element-wise
    (``compress`` over ``operator.ne``); a column whose nulls are not where its empty cells are is walked."""
    n = len(typed)
    if len(raw) == n and all(raw) and typed.count(None) == 0:  # no empty cell (the usual column): no positions
        filled: Sequence[int] = range(n)
        present: Sequence[str | None] = raw
        values = typed
    else:
        filled = list(itertools.compress(range(n), raw))  # the cells that are not empty ("" and None are)
        nonnull = list(itertools.compress(range(n), map(operator.is_not, typed, itertools.repeat(None))))
        if nonnull != filled:
            return [i for i in range(n) if (value_text(typed[i]) if typed[i] is not None else "") != (raw[i] or "")]
        present = [raw[i] for i in filled]
        values = [typed[i] for i in filled]
    classes = set(map(type, values))
    if classes <= {str, int}:  # ``value_text`` of both is ``str`` (a bool's type is bool, never int)
        texts: Sequence[Any] = values if classes <= {str} else list(map(str, values))
    elif classes == {bool}:
        texts = list(map(_BOOL_TEXT.__getitem__, values))
    else:
        texts = list(map(value_text, values))
    if texts == present:
        return []
    return list(itertools.compress(filled, map(operator.ne, texts, present)))


def shared_texts(values: list[Any]) -> list[Any]:
    """The same values (strings and nulls), each distinct one a single string object when the column repeats itself
    (codes, dates, categories): a parser makes a new string per cell, and a million "alpha"s cost 50 MB."""
    sample = values[:1000]
    if len(set(sample)) > len(sample) // 2:
        return values
    cache: dict[Any, Any] = {}
    return [cache.setdefault(v, v) for v in values]


# ---------------------------------------------------------------------------------------------------------------
# Typed values (xlsx, parquet).

ERROR_KEY: Final = "error"


def is_error(value: Any) -> bool:
    return type(value) is dict and ERROR_KEY in value


def kind_of(value: Any) -> str | None:
    """The column type a single JSON-ready value belongs to (None for null and cell errors, which fit any type)."""
    if value is None or type(value) is dict:
        return None
    t = type(value)
    if t is bool:
        return "bool"
    if t is int or t is float:
        return "number"
    return "string"


def column_type(kinds: set[str]) -> str:
    """The column type of a column whose values were of ``kinds``."""
    kinds = kinds - {"null"}
    if not kinds:
        return "string"
    if kinds <= {"date", "datetime"}:
        return "datetime" if "datetime" in kinds else "date"
    if len(kinds) == 1:
        return next(iter(kinds))
    return "mixed"


def _format_duration(total: int, per_second: int, digits: int) -> str:
    """``total`` units of ``1/per_second`` s as ``[-]H:MM:SS[.f]`` (hours may pass 24; trailing zeros dropped)."""
    sign = "-" if total < 0 else ""
    secs, frac = divmod(abs(total), per_second)
    mins, s = divmod(secs, 60)
    h, m = divmod(mins, 60)
    out = f"{sign}{h}:{m:02d}:{s:02d}"
    if frac:
        out += "." + f"{frac:0{digits}d}".rstrip("0")
    return out


def format_duration_us(total_us: int) -> str:
    """Microseconds as ``[-]H:MM:SS[.ffffff]`` (hours may pass 24; trailing zeros of the fraction dropped)."""
    return _format_duration(total_us, 1_000_000, 6)


def format_duration_ns(total_ns: int) -> str:
    """Nanoseconds as ``[-]H:MM:SS[.fffffffff]``."""
    return _format_duration(total_ns, 1_000_000_000, 9)


def format_timedelta(td: _dt.timedelta) -> str:
    return format_duration_us((td.days * 86_400 + td.seconds) * 1_000_000 + td.microseconds)


def format_time(t: _dt.time) -> str:
    out = f"{t.hour:02d}:{t.minute:02d}:{t.second:02d}"
    if t.microsecond:
        out += "." + f"{t.microsecond:06d}".rstrip("0")
    return out


def format_datetime(d: _dt.datetime) -> str:
    out = f"{d.year:04d}-{d.month:02d}-{d.day:02d}T{format_time(d.time())}"
    off = d.utcoffset()
    if off is not None:
        mins = int(off.total_seconds() // 60)
        sign = "-" if mins < 0 else "+"
        out += f"{sign}{abs(mins) // 60:02d}:{abs(mins) % 60:02d}"
    return out


def number_from_float(f: float, *, exact_text: bool) -> int | float | str | None:
    """A float as a table value: an integral value is an int (exact digits past int64); NaN/Inf are None.

    With ``exact_text`` (a workbook's stored decimal, whose shortest round-trip text is what the file holds) any
    other value is its plain digits (``0.1`` -> ``"0.1"``, ``1e-05`` -> ``"0.00001"``); else a JSON float.
    """
    if not math.isfinite(f):
        return None
    if f.is_integer():
        if abs(f) < 2**63:
            return int(f)
        return str(int(f)) if exact_text else f
    if not exact_text:
        return f
    r = repr(f)
    if "e" in r:
        p = plain_decimal(r)
        return p if p is not None else f
    return r


def exact_number(f: float) -> int | float | str | None:
    """``number_from_float(f, exact_text=True)`` of a float, without the keyword call (a workbook's number cells:
    the per-cell cost of its number columns)."""
    if f.is_integer():  # False for NaN and the infinities
        return int(f) if -_TWO_63 < f < _TWO_63 else str(int(f))
    if f - f != 0.0:  # NaN or an infinity
        return None
    r = repr(f)
    if "e" in r:
        p = plain_decimal(r)
        return p if p is not None else f
    return r


_TWO_63: Final = float(2**63)


def exact_numbers(values: Sequence[float]) -> list[int | float | str | None]:
    """``exact_number`` of each float, the usual column (finite values) in C: every value's ``repr`` mapped at once,
    then ``exact_number`` only of the values whose ``repr`` is not their exact text (integral ones, exponents)."""
    if not values or not math.isfinite(sum(values)):  # a NaN or an infinity (or a sum past a float's range)
        return list(map(exact_number, values))
    if all(map(float.is_integer, values)) and min(values) > -_TWO_63 and max(values) < _TWO_63:
        return list(map(int, values))  # a column of whole numbers (ids, counts)
    texts = list(map(repr, values))
    integral = itertools.compress(range(len(values)), map(float.is_integer, values))
    exponent = itertools.compress(range(len(values)), map(operator.contains, texts, itertools.repeat("e")))
    out: list[int | float | str | None] = list(texts)
    for i in itertools.chain(integral, exponent):
        out[i] = exact_number(values[i])
    return out


def json_number(value: int | float) -> int | float | str | None:
    """An int or float as JSON carries it (int64 stays, a bigger int its digits, NaN/Inf None)."""
    if type(value) is int:
        return value if INT64_MIN <= value <= INT64_MAX else str(value)
    return value if math.isfinite(value) else None


# ---------------------------------------------------------------------------------------------------------------
# Row blocks and the output budget.


def value_text(value: Any) -> str:
    """A table value as row-block text."""
    t = type(value)
    if t is str:
        return value
    if t is bool:
        return "true" if value else "false"
    if t is dict:
        return str(value.get(ERROR_KEY, ""))
    if t is float:
        return repr(value)
    return str(value)


def row_text(names: Sequence[str], row: Sequence[Any]) -> str:
    """``name: value | name: value`` over the row's non-null values ("" for a row of nulls)."""
    return _prefixed_text([f"{n}: " for n in names], row)


def _prefixed_text(prefixes: Sequence[str], row: Sequence[Any]) -> str:
    return " | ".join(
        [p + (v if type(v) is str else value_text(v)) for p, v in zip(prefixes, row, strict=False) if v is not None]
    )


_FORMAT_CLASSES: Final = frozenset({str, int, float})  # ``str.format`` writes them as ``value_text`` does
_BOOL_TEXT: Final = {True: "true", False: "false"}


def _chunk_texts(
    prefixes: Sequence[str], template: Callable[..., str], chunk: Sequence[list[Any]] | Columns
) -> list[str]:
    """``_prefixed_text`` of each row. A chunk whose columns each hold only strings, ints and floats, or only bools
    (no nulls, no errors), by ``template`` (``name: {} | name: {}``) mapped over its columns: one ``str.format``
    call a row, in C, instead of a concatenation per cell and a join."""
    if chunk.__class__ is Columns:
        cells: Iterable[Sequence[Any]] | None = chunk.cells
    else:
        cells = zip(*chunk, strict=True) if chunk and set(map(len, chunk)) == {len(prefixes)} else None
    if chunk and prefixes and cells is not None:
        columns: list[Iterable[Any]] = []
        for column in cells:
            classes = set(map(type, column))
            if classes <= _FORMAT_CLASSES:
                columns.append(column)
            elif classes == {bool}:
                columns.append(map(_BOOL_TEXT.__getitem__, column))
            else:
                break
        else:
            return list(map(template, *columns))
    return [_prefixed_text(prefixes, row) for row in chunk]


@dataclass(frozen=True, slots=True)
class _ChunkTexts:
    """A chunk's row-block texts made from the table's rows, when they are added and again when a row run is
    written (``ArtifactBuilder.add_row_blocks``' ``remake_texts``): ``_chunk_texts`` of ``chunk[lo:hi]`` (the rows
    from ``offset + lo``), with a ``respelled`` row's kept text in its place."""

    prefixes: Sequence[str]
    template: Callable[..., str]
    chunk: Sequence[list[Any]] | Columns
    offset: int
    respelled: Mapping[int, str]

    def __call__(self, lo: int, hi: int) -> list[str]:
        texts = _chunk_texts(self.prefixes, self.template, self.chunk[lo:hi])
        if self.respelled:
            first = self.offset + lo
            for i in range(hi - lo):
                kept = self.respelled.get(first + i)
                if kept is not None:
                    texts[i] = kept
        return texts


@dataclass
class RowBlockSpec:
    """How a table's row blocks are made."""

    table_id: str
    names: Sequence[str]
    section_path: list[str] = field(default_factory=list)
    sheet: str | None = None


CHUNK_ROWS: Final = 512


@dataclass(frozen=True, slots=True)
class Columns:
    """Rows as a columnar source holds them: ``cells[j][i]`` is row ``i``'s cell ``j`` (``n`` rows, each column as
    long). :func:`fit_rows` measures them by column (``column_rows.rows_json_len``) and :class:`TableStream` hands
    them to ``ArtifactBuilder.add_table_columns``: no list is made a row."""

    cells: list[Sequence[Any]]
    n: int

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, rows: slice) -> Columns:
        lo, hi, _ = rows.indices(self.n)
        return Columns([c[lo:hi] for c in self.cells], max(hi - lo, 0))

    def __iter__(self) -> Iterator[list[Any]]:
        return map(list, rows_of(self.cells, self.n))


def _json_len(rows: Any) -> int:
    """Bytes of table rows as JSON (``Columns`` measured by column). orjson refuses a lone surrogate (a CSV decoded
    as UTF-7 can hold one): such rows are measured as the builder's ``add_table`` will clean them."""
    try:
        if rows.__class__ is Columns:
            return rows_json_len(rows.cells, rows.n)
        return len(orjson.dumps(rows))
    except TypeError:
        return len(orjson.dumps(clean_value(list(rows) if rows.__class__ is Columns else rows)))


def _within(budget: OutputBudget, chunk: Sequence[list[Any]] | Columns) -> Callable[[OfferedBlocks], int]:
    """``ArtifactBuilder.add_row_blocks``'s ``fit`` for one chunk of rows: how many of them fit ``budget``, rows and
    row blocks measured by their JSON's length (the whole chunk at once, the blocks by column; row by row only when
    it crosses the budget)."""

    def fit(blocks: OfferedBlocks) -> int:
        size = _json_len(chunk) + blocks.json_len()
        if size <= budget.remaining:
            budget.charge(size)
            return len(chunk)
        take = 0
        for row, block in zip(chunk, blocks, strict=True):
            s = _json_len(row) + 1 + (len(orjson.dumps(block)) + 1 if block is not None else 0)
            if s > budget.remaining:
                budget.exhausted = True
                break
            budget.charge(s)
            take += 1
        return take

    return fit


def fit_rows(
    builder: ArtifactBuilder,
    budget: OutputBudget,
    spec: RowBlockSpec,
    rows: Sequence[list[Any]] | Columns,
    first_row: int,
    *,
    lines: Sequence[tuple[int, int]] | None = None,
    texts: Sequence[str | None] | None = None,
    respelled: Mapping[int, str] | None = None,
    index: int = 0,
) -> int:
    """Add row blocks for ``rows`` (in order) while they and the rows fit ``budget``; return how many fit.

    ``rows[i]`` is the source's row ``first_row + i``; its block (id ``r<table>.<i>``) is made by
    :meth:`ArtifactBuilder.add_row_blocks`, a chunk of rows at a time. The caller adds the table with
    ``rows[:n]``. ``texts[i]`` is row ``i``'s block text when the format has a better one than :func:`row_text` of
    the typed values (a CSV row's source text); an empty text, as a row of nulls, makes no block. Without
    ``texts``, ``respelled[i]`` is row ``i``'s text where the source has one the typed values do not give (a CSV
    cell ``"+5"``), and every other row's is made from its values. ``index`` is
    ``rows[0]``'s place among the table's rows when ``rows`` is a later part of them (:class:`TableStream`).
    ``rows`` may be ``Columns``.
    """
    prefixes = [f"{n}: " for n in spec.names]
    template = " | ".join(p.replace("{", "{{").replace("}", "}}") + "{}" for p in prefixes).format
    spelled = respelled or {}
    kept = 0
    n = len(rows)
    start = 0
    while start < n and not budget.exhausted:
        end = min(start + CHUNK_ROWS, n)
        chunk = rows[start:end]
        remake: Callable[[int, int], list[str]] | None = None
        if texts is not None:
            chunk_texts: Sequence[str | None] = texts[start:end]
        else:
            remake = _ChunkTexts(prefixes, template, chunk, start, spelled)
            chunk_texts = remake(0, len(chunk))
        take = builder.add_row_blocks(
            spec.table_id,
            chunk_texts,
            rows=range(first_row + start, first_row + end),
            first_index=index + start,
            lines=lines[start:end] if lines is not None else None,
            sheet=spec.sheet,
            section_path=spec.section_path,
            fit=_within(budget, chunk),
            remake_texts=remake,
        )
        kept += take
        start += take
    return kept


def add_table(
    builder: ArtifactBuilder,
    budget: OutputBudget,
    *,
    name: str,
    columns: list[tuple[str, str]],
    rows: Sequence[list[Any]] | Columns,
    first_row: int,
    header_rows: int,
    table_locator: dict[str, Any],
    attrs: dict[str, Any] | None = None,
    section_path: list[str] | None = None,
    sheet: str | None = None,
    lines: Sequence[tuple[int, int]] | None = None,
    texts: Sequence[str | None] | None = None,
    respelled: Mapping[int, str] | None = None,
) -> tuple[str, int]:
    """Add one table and its row blocks within the budget; return (table id, rows kept).

    ``rows[i]`` is the source's row ``first_row + i`` (``Columns``: the rows by column, added with
    ``ArtifactBuilder.add_table_columns``); ``lines``, ``texts`` and ``respelled`` are as :func:`fit_rows` takes
    them.
    """
    table_id = f"t{len(builder.tables)}"
    if len(columns) > MAX_COLUMNS:  # the contract's bound: keep the first ones and say what was left out
        n = len(columns)
        columns = columns[:MAX_COLUMNS]
        if rows.__class__ is Columns:
            rows = Columns(rows.cells[:MAX_COLUMNS], len(rows))
        else:
            rows = [r[:MAX_COLUMNS] for r in rows]
        builder.warn(f"table {name!r} has {n} columns; only the first {MAX_COLUMNS} are in the table")
        builder.fail(f"table {name!r} columns {MAX_COLUMNS + 1}-{n}", f"past the contract's {MAX_COLUMNS} columns")
    budget.require(len(orjson.dumps([columns, attrs or {}, table_locator, name])) + 128, f"table {name!r}")
    spec = RowBlockSpec(table_id, [c[0] for c in columns], section_path or [], sheet)
    kept = fit_rows(builder, budget, spec, rows, first_row, lines=lines, texts=texts, respelled=respelled)
    if rows.__class__ is Columns:
        kept_cells = (rows if kept == len(rows) else rows[:kept]).cells
        builder.add_table_columns(
            name, columns, kept_cells, kept, header_rows=header_rows, locator=table_locator, attrs=attrs, id=table_id
        )
        return table_id, kept
    kept_rows = rows if kept == len(rows) else rows[:kept]
    builder.add_table(
        name,
        columns,
        list(kept_rows),
        header_rows=header_rows,
        locator=table_locator,
        attrs=attrs,
        id=table_id,
    )
    return table_id, kept


class TableStream:
    """One table whose rows arrive a batch at a time (parquet's record batches): each batch's row blocks are made and
    measured against the budget as it comes, so nothing waits for the whole source, and ``push`` says when the
    budget is spent (read no more). ``finish`` adds the table of the rows kept.

    What it adds is what :func:`add_table` adds for all the rows at once, byte for byte: the rows are measured in
    the same chunks of ``CHUNK_ROWS`` counted from the table's first row, whatever the batches' sizes, and the
    table's own cost (columns, name, locator, attrs) is required before any row, as there. The one difference: it
    is required with the ``attrs`` and ``table_locator`` given here, and ``finish``'s (known only once the rows are
    read, as parquet's ``binary_columns``) are charged then, so rows near the budget's end may be measured against
    a few bytes more than ``add_table`` would have left them.
    """

    def __init__(
        self,
        builder: ArtifactBuilder,
        budget: OutputBudget,
        *,
        name: str,
        columns: list[tuple[str, str]],
        first_row: int,
        header_rows: int,
        table_locator: dict[str, Any],
        attrs: dict[str, Any] | None = None,
        section_path: list[str] | None = None,
        sheet: str | None = None,
    ) -> None:
        self.builder = builder
        self.budget = budget
        self.name = name
        self.all_columns = columns
        self.columns = columns[:MAX_COLUMNS]
        self.wide = len(columns) > MAX_COLUMNS
        self.first_row = first_row
        self.header_rows = header_rows
        self.table_id = f"t{len(builder.tables)}"
        self.header_cost = self._header_cost(table_locator, attrs)
        budget.require(self.header_cost, f"table {name!r}")
        self.spec = RowBlockSpec(self.table_id, [c[0] for c in self.columns], section_path or [], sheet)
        self.kept: list[Columns] = []  # rows measured and kept, as the chunks they were measured in
        self.kept_n = 0  # how many
        self.pending: list[list[Any]] = [[] for _ in self.columns]  # each column's cells not yet measured
        self.pending_n = 0  # how many rows they hold (less than a chunk's)
        self.pending_texts: list[str | None] = []
        self.done = False  # the budget is spent: later rows are not kept

    def _header_cost(self, table_locator: dict[str, Any], attrs: dict[str, Any] | None) -> int:
        return len(orjson.dumps([self.columns, attrs or {}, table_locator, self.name])) + 128

    def push(self, cells: Sequence[Sequence[Any]], n: int, texts: Sequence[str | None]) -> bool:
        """Take the next ``n`` rows, given by column (``cells[j][i]`` is row ``i``'s cell ``j``, one column for each
        of the table's; ``texts[i]`` row ``i``'s block text, as :func:`fit_rows`); False once the budget is spent
        (these rows and any later ones are not all kept)."""
        if self.done:
            return False
        if len(cells) != len(self.all_columns) or any(len(c) != n for c in cells) or len(texts) != n:
            raise ValueError(f"a batch needs {len(self.all_columns)} columns of {n} values and {n} texts")
        for pending, column in zip(self.pending, cells, strict=False):  # past MAX_COLUMNS: left out
            pending.extend(column)
        self.pending_n += n
        self.pending_texts.extend(texts)
        if self.pending_n >= CHUNK_ROWS:
            self._fit(self.pending_n - self.pending_n % CHUNK_ROWS)
        return not self.done

    def _fit(self, n: int) -> None:
        """Measure the first ``n`` pending rows (a multiple of ``CHUNK_ROWS`` unless it is the last of them)."""
        rows, texts = Columns([c[:n] for c in self.pending], n), self.pending_texts[:n]
        for pending in self.pending:
            del pending[:n]
        del self.pending_texts[:n]
        self.pending_n -= n
        start = self.kept_n
        kept = fit_rows(self.builder, self.budget, self.spec, rows, self.first_row + start, texts=texts, index=start)
        self.kept.append(rows if kept == n else rows[:kept])
        self.kept_n += kept
        if kept < n or self.budget.exhausted:
            self.done = True
            for pending in self.pending:
                pending.clear()
            self.pending_n = 0
            self.pending_texts.clear()

    def finish(self, *, table_locator: dict[str, Any], attrs: dict[str, Any] | None = None) -> tuple[str, int]:
        """Add the table of the rows kept (and its warnings); return (table id, rows kept)."""
        if self.pending_n and not self.done:
            self._fit(self.pending_n)
        if self.wide:
            n = len(self.all_columns)
            self.builder.warn(f"table {self.name!r} has {n} columns; only the first {MAX_COLUMNS} are in the table")
            self.builder.fail(
                f"table {self.name!r} columns {MAX_COLUMNS + 1}-{n}", f"past the contract's {MAX_COLUMNS} columns"
            )
        self.budget.charge(self._header_cost(table_locator, attrs) - self.header_cost)
        kept, self.kept, n = self.kept, [], self.kept_n
        cells = []
        for j in range(len(self.columns)):  # each column's chunks joined, and let go as they are
            cells.append(tuple(itertools.chain.from_iterable(part.cells[j] for part in kept)))
            for part in kept:
                part.cells[j] = ()
        del kept
        self.builder.add_table_columns(
            self.name,
            self.columns,
            cells,
            n,
            header_rows=self.header_rows,
            locator=table_locator,
            attrs=attrs,
            id=self.table_id,
        )
        return self.table_id, n


def report_cut(builder: ArtifactBuilder, what: str, kept: int, total: int, max_bytes: int, *, first_row: int) -> None:
    """A table cut to fit the artifact budget: a warning, and the rows left out as one failed unit (by row number,
    ``first_row`` being the number of the first data row), so coverage lists what was not extracted."""
    if kept >= total:
        return
    builder.warn(
        f"{what}: {kept} of {total} rows extracted; the rest did not fit the artifact budget of {max_bytes} bytes"
    )
    start, end = first_row + kept, first_row + total - 1
    rows = f"row {start}" if start == end else f"rows {start}-{end}"
    builder.fail(f"{what} {rows}", f"not extracted: the artifact reached its output limit ({max_bytes} bytes)")
