"""Build artifacts that cannot break the contract's rules.

Format modules describe what they found (blocks, tables, coverage); the builder enforces the bounds the contract sets:
block ids, locator pairs, key and section-path truncation with their marks, coverage arithmetic, string validity.
``build()`` returns a plain dict ready for ``serialize()``; the shared validator still checks the bytes before they
leave the extractor.
"""

from __future__ import annotations

import functools
import itertools
import math
import operator
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final, cast, overload

import orjson

from shared.artifact.column_rows import ColumnRows, rows_of
from shared.artifact.row_runs import (
    RowRun,
    RunIdList,
    RunIds,
    compacting,
    row_blocks,
    row_blocks_json_len,
    run_ids,
    runnable,
)
from shared.contract import (
    BLOCK_TYPES,
    COLUMN_TYPES,
    INT64_MAX,
    INT64_MIN,
    LOST_EXACT_KEYS,
    LOST_SECTION_PATH,
    MAX_COLUMN_NAME_CHARS,
    MAX_COLUMNS,
    MAX_KEY_CHARS,
    MAX_KEYS,
    MAX_NESTING,
    MAX_SECTION_CHARS,
    MAX_SECTION_ENTRIES,
    MAX_SHEET_NAME_CHARS,
    SCHEMA_VERSION,
)

# One block for ``ArtifactBuilder.add_blocks``: id, type, text, parent, section path, locator, keys, attrs.
BlockRow = tuple[
    str, str, str, "str | None", Sequence[str], "dict[str, Any] | None", Sequence[str], "dict[str, Any] | None"
]

# Locator fields that come in (start, end) pairs, with the value an unused pair holds.
_LINE_LIKE = (("line_start", "line_end"), ("page_start", "page_end"), ("row_start", "row_end"))
_CHAR = ("char_start", "char_end")


def clean_str(value: str) -> str:
    """Replace lone surrogates (not valid Unicode, refused by the contract) with U+FFFD."""
    if value.isascii():
        return value
    try:
        value.encode("utf-8")
        return value
    except UnicodeEncodeError:
        # Through UTF-16: a pair held as two code points becomes its character, a lone one a single U+FFFD.
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def _check_int(name: str, value: object) -> None:
    if value.__class__ is not int:  # bool is an int subclass: refused too
        raise TypeError(f"{name} must be an int, got {value!r}")
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"{name} {value} is outside signed 64 bits")


def _check_depth(depth: int) -> None:
    _check_int("depth", depth)
    if depth < 0:
        raise ValueError("depth must be 0 or more")


def clean_value(value: Any, *, depth: int = 1, limit: int = MAX_NESTING) -> Any:
    """A free JSON value (attrs, options, a cell) made safe for the contract, or ValueError/TypeError.

    Strings lose lone surrogates, NaN and Infinity and ints past 64 bits are refused (orjson would write NaN as a
    silent null), and objects/arrays may nest at most ``limit`` deep, counting the value itself as 1.
    """
    cls = value.__class__
    if cls is str:
        return clean_str(value)
    if value is None or cls is bool:
        return value
    if cls is int:
        _check_int("a value", value)
        return value
    if cls is float:
        if not math.isfinite(value):
            raise ValueError(f"{value} is not a JSON number")
        return value
    if depth > limit:
        raise ValueError(f"attrs nest deeper than {limit}")
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"object keys must be strings, got {k!r}")
            vcls = v.__class__
            if vcls is str:  # the scalar cases above, inline: attrs are mostly short objects of scalars
                v = clean_str(v)  # noqa: PLW2901
            elif vcls is int:
                _check_int("a value", v)
            elif v is not None and vcls is not bool:
                v = clean_value(v, depth=depth + 1, limit=limit)  # noqa: PLW2901
            out[clean_str(k)] = v
        return out
    if isinstance(value, (list, tuple)):
        if set(map(type, value)) <= _TEXT_OR_NULL and all(map(str.isascii, filter(_not_none, value))):
            return list(value)  # a table row of ASCII text and nulls: what the walk below returns, at C speed
        return [clean_value(v, depth=depth + 1, limit=limit) for v in value]
    raise TypeError(f"{cls.__name__} is not a JSON value")


def _clean_cell(value: Any) -> Any:
    cls = value.__class__
    if cls is str:
        return value if value.isascii() else clean_str(value)
    if value is None or cls is bool:
        return value
    if cls is float:
        if value - value != 0.0:  # NaN or Infinity
            raise ValueError(f"table value {value} is not a JSON number (use null, or the text)")
        return value
    if cls is int:
        if not INT64_MIN <= value <= INT64_MAX:
            raise ValueError(f"table value {value} is past signed 64 bits (send its digits as a string)")
        return value
    if cls is dict and set(value) == {"error"} and isinstance(value["error"], str):
        return {"error": clean_str(value["error"])}
    raise TypeError(f"a table value must be a string, number, bool, null or {{'error': str}}, got {value!r}")


_NONE_TYPE: Final = type(None)
_not_none: Final = functools.partial(operator.is_not, None)
_TEXT_OR_NULL: Final = frozenset({str, _NONE_TYPE})


def _column_clean(column: Sequence[Any]) -> bool:
    """Whether ``_clean_cell`` would return every value of the column unchanged, decided at C speed (``map``,
    ``min``, ``sum``) for columns of strings, ints, floats, bools and nulls (one class or several, as a workbook's
    number column of ints and exact-digit strings); False (the caller cleans cell by cell) for anything else."""
    classes = set(map(type, column))
    plain = classes - _FREE_CELL_CLASSES
    if not plain:
        return True
    if len(plain) == 1:
        cls = next(iter(plain))
        if len(classes) == 1:
            return _values_clean(cls, column, column)
        if classes == {cls, _NONE_TYPE}:
            return _values_clean(cls, filter(_not_none, column), None)
    if not plain <= _PLAIN_CELL_CLASSES:
        return False
    return all(_values_clean(cls, [v for v in column if v.__class__ is cls], None) for cls in plain)


_FREE_CELL_CLASSES: Final = frozenset({_NONE_TYPE, bool})  # need no cleaning
_PLAIN_CELL_CLASSES: Final = frozenset({str, int, float})


def _values_clean(cls: type, values: Iterable[Any], whole: Sequence[Any] | None) -> bool:
    """Whether values all of class ``cls`` need no cleaning (``whole``: the same values as a tuple, when they are)."""
    if cls is str:
        return all(map(str.isascii, values))
    if cls is int:
        ints = whole if whole is not None else list(values)
        return bool(min(ints) >= INT64_MIN and max(ints) <= INT64_MAX)
    if cls is float:
        return math.isfinite(sum(values))  # a NaN or an infinity makes the sum one (as does overflow: then False)
    return False


def _rows_clean(rows: list[list[Any]], width: int) -> bool:
    """Whether every row is a list of ``width`` cells that ``_clean_cell`` leaves as they are (so ``add_table`` can
    keep them); False sends the table through the cell-by-cell loop, which also raises the errors."""
    if not rows:
        return True
    if set(map(type, rows)) != {list} or set(map(len, rows)) != {width}:
        return False
    return all(_column_clean(tuple(map(operator.itemgetter(j), rows))) for j in range(width))


def make_locator(
    *,
    line_start: int | None = None,
    line_end: int | None = None,
    char_start: int | None = None,
    char_end: int | None = None,
    key_path: str | None = None,
    page_start: int | None = None,
    page_end: int | None = None,
    sheet: str | None = None,
    row_start: int | None = None,
    row_end: int | None = None,
) -> dict[str, Any]:
    """A locator whose pairs obey the contract. A pair given by its start only gets end = start.

    Raises ValueError for an impossible pair (a programming error in a format module, never the file's fault).
    """
    loc: dict[str, Any] = {}
    given = {
        "line_start": line_start,
        "line_end": line_end,
        "page_start": page_start,
        "page_end": page_end,
        "row_start": row_start,
        "row_end": row_end,
    }
    for s_name, e_name in _LINE_LIKE:
        s, e = given[s_name], given[e_name]
        if s is None and e is None:
            continue
        if s is None:
            raise ValueError(f"{e_name} without {s_name}")
        if e is None:
            e = s
        _check_int(s_name, s)
        _check_int(e_name, e)
        if not ((s == 0 and e == 0) or (1 <= s <= e)):
            raise ValueError(f"{s_name}/{e_name} must be both 0 or 1 <= start <= end, got {s}..{e}")
        loc[s_name], loc[e_name] = s, e
    if char_start is not None or char_end is not None:
        if char_start is None:
            raise ValueError("char_end without char_start")
        if char_end is None:
            char_end = char_start
        _check_int("char_start", char_start)
        _check_int("char_end", char_end)
        if not ((char_start == -1 and char_end == -1) or (0 <= char_start <= char_end)):
            raise ValueError(f"char_start/char_end must be both -1 or 0 <= start <= end, got {char_start}..{char_end}")
        loc["char_start"], loc["char_end"] = char_start, char_end
    if key_path is not None:
        loc["key_path"] = clean_str(key_path)
    if sheet is not None:
        loc["sheet"] = clean_str(sheet)[:MAX_SHEET_NAME_CHARS]
    return loc


def line_char_locator(line_start: int, line_end: int, char_start: int, char_end: int) -> dict[str, Any]:
    """``make_locator(line_start=..., line_end=..., char_start=..., char_end=...)`` for lines ``1 <= start <= end`` and
    offsets ``0 <= start <= end``, the pairs of a block of text (text, one per paragraph): the same dict, checked in
    one comparison, at about a sixth of the cost; any other pair (or a value that is not an int) is
    ``make_locator``'s to accept or refuse."""
    if (
        line_start.__class__ is int
        and line_end.__class__ is int
        and char_start.__class__ is int
        and char_end.__class__ is int
        and 1 <= line_start <= line_end <= INT64_MAX
        and 0 <= char_start <= char_end <= INT64_MAX
    ):
        return {"line_start": line_start, "line_end": line_end, "char_start": char_start, "char_end": char_end}
    return make_locator(line_start=line_start, line_end=line_end, char_start=char_start, char_end=char_end)


def cut_section_path(path: Sequence[str]) -> tuple[list[str], bool]:
    """A section path within the contract's bounds (cleaned, first entries, each cut), and whether it was cut."""
    if not path:
        return [], False
    head = path[:MAX_SECTION_ENTRIES]
    if all(map(str.isascii, head)) and max(map(len, head)) <= MAX_SECTION_CHARS:  # nothing to clean or cut
        return (head if head.__class__ is list else list(head)), len(path) > MAX_SECTION_ENTRIES
    out = [clean_str(p) for p in head]
    truncated = len(path) > MAX_SECTION_ENTRIES
    for i, p in enumerate(out):
        if len(p) > MAX_SECTION_CHARS:
            out[i] = p[:MAX_SECTION_CHARS]
            truncated = True
    return out, truncated


def cut_keys(keys: Iterable[str]) -> tuple[list[str], bool]:
    """Keys within the contract's bounds (cleaned, duplicates dropped, a longer key left out, the first
    ``MAX_KEYS`` kept), and whether any was left out."""
    out: list[str] = []
    seen: set[str] = set()
    truncated = False
    for raw in keys:
        k = clean_str(raw)
        if len(k) > MAX_KEY_CHARS:
            truncated = True
            continue
        if k in seen:
            continue
        if len(out) >= MAX_KEYS:
            truncated = True
            break
        seen.add(k)
        out.append(k)
    return out, truncated


def _key_attrs(value: Any, value_type: str) -> dict[str, Any]:
    """``add_key_block``'s attrs of a value that is not a plain scalar: kept when ``clean_value`` would keep them (a
    list of plain scalars, None), else ``clean_value``'s."""
    attrs = {"value": value, "value_type": value_type}
    cls = value.__class__
    plain = _plain_list(value) if cls is list else _plain_scalar(value, cls) if cls is not str else value.isascii()
    if plain and value_type.__class__ is str and value_type.isascii():
        return attrs
    return cast("dict[str, Any]", clean_value(attrs))


def _check_row_numbers(rows: Sequence[int]) -> None:
    """Each row number an int (not a bool) that makes the pair ``row_start == row_end`` valid: 0, or 1..int64."""
    if not rows:
        return
    if rows.__class__ is range:
        lo, hi = min(rows[0], rows[-1]), max(rows[0], rows[-1])
    else:
        if not set(map(type, rows)) <= {int}:
            bad = next(r for r in rows if r.__class__ is not int)
            raise TypeError(f"row_start must be an int, got {bad!r}")
        lo, hi = min(rows), max(rows)
    if lo < 0 or hi > INT64_MAX:
        bad = lo if lo < 0 else hi
        raise ValueError(f"row_start/row_end must be both 0 or 1 <= start <= end, got {bad}..{bad}")


def _check_line_ranges(lines: Sequence[tuple[int, int]]) -> None:
    """Each (line_start, line_end) pair as ``make_locator`` takes it: ints, both 0 or 1 <= start <= end <= int64."""
    for s, e in lines:  # a plain loop: ~4x cheaper than transposing the pairs with zip(*lines)
        if s.__class__ is not int or e.__class__ is not int:
            raise TypeError(f"line_start/line_end must be ints, got {s!r}..{e!r}")
        if not (1 <= s <= e <= INT64_MAX or s == 0 == e):
            raise ValueError(f"line_start/line_end must be both 0 or 1 <= start <= end, got {s}..{e}")


def json_safe_number(value: int | float) -> int | float | str | None:
    """A number as JSON can carry it: int64 stays, a bigger int becomes its exact digits, NaN/Infinity become None."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value if INT64_MIN <= value <= INT64_MAX else str(value)
    if math.isfinite(value):
        return value
    return None


class OfferedBlocks(Sequence["dict[str, Any] | None"]):
    """What ``add_row_blocks`` offers its ``fit``: per row, its block (None for a row that makes none), the dicts
    made only when first read; ``json_len()`` is ``len(orjson.dumps(the blocks that are not None))``, which a run
    (the worker's builders) measures by column without making them."""

    def __init__(
        self,
        n: int,
        kept: Sequence[int],
        make: Callable[[], list[dict[str, Any]]],
        json_len: Callable[[], int],
    ) -> None:
        self._n = n
        self._kept = kept
        self._make = make
        self._json_len = json_len
        self._offered: list[dict[str, Any] | None] | None = None

    def json_len(self) -> int:
        return self._json_len()

    def __len__(self) -> int:
        return self._n

    @overload
    def __getitem__(self, i: int) -> dict[str, Any] | None: ...
    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any] | None]: ...
    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any] | None] | None:
        return self._blocks()[i]

    def __iter__(self) -> Iterator[dict[str, Any] | None]:
        return iter(self._blocks())

    def _blocks(self) -> list[dict[str, Any] | None]:
        if self._offered is None:
            made = self._make()
            if len(made) == self._n:
                self._offered = list(made)
            else:
                self._offered = [None] * self._n
                for i, block in zip(self._kept, made, strict=True):
                    self._offered[i] = block
        return self._offered


class ArtifactBuilder:
    """Accumulates one artifact.

    Usage::

        b = ArtifactBuilder("markdown", parser="loom-markdown", parser_version="1+markdown-it-py4.3.0",
                            options={"encoding": "utf-8"}, unit="lines")
        h = b.add_block("heading", "Intro", depth=1, locator=make_locator(line_start=1, char_start=0, char_end=7))
        b.add_block("paragraph", "Hello", parent=h, section_path=["Intro"], locator=...)
        b.coverage(total=10, extracted=10)
        artifact = b.build()
    """

    def __init__(
        self,
        format: str,
        *,
        parser: str,
        parser_version: str,
        unit: str,
        options: dict[str, Any] | None = None,
        measure_blocks: bool = False,
    ) -> None:
        """``measure_blocks``: ``text_chars`` also counts each ``add_block`` block's section path, attrs and locator,
        for the formats that check their output budget against it (pdf, docx, pptx: a deep section path or a table
        in ``attrs`` repeats text in every block)."""
        if not parser or not parser_version or not unit:
            raise ValueError("parser, parser_version and unit must be non-empty")
        self.format = format
        self.parser = parser
        self.parser_version = parser_version
        self.unit = unit
        self.options: dict[str, Any] = dict(options or {})
        self.attrs: dict[str, Any] = {}
        self.warnings: list[str] = []
        self.blocks: list[dict[str, Any]] = []
        self.tables: list[dict[str, Any]] = []
        self._ids: set[str] = set()  # the blocks' ids, but for the runs'
        self._runs: RunIds | None = None  # the runs' ids (see ``row_runs``), once there is one
        self._compact = compacting()
        self._table_ids: set[str] = set()
        self._row_table_ids: set[str] = set()  # tables named by row blocks: build() checks each was added
        self._total = 0
        self._extracted = 0
        self._failed: list[dict[str, str]] = []
        self._lost: list[str] = []
        self.text_chars = 0  # a running estimate of the artifact's size, for output budgets
        self.measure_blocks = measure_blocks

    # -- blocks ---------------------------------------------------------------------------------------------------

    def add_block(
        self,
        type: str,
        text: str,
        *,
        locator: dict[str, Any] | None = None,
        section_path: Sequence[str] = (),
        keys: Iterable[str] = (),
        parent: str | None = None,
        depth: int | None = None,
        attrs: dict[str, Any] | None = None,
        id: str | None = None,
    ) -> str:
        """Append a block in reading order and return its id."""
        if type not in BLOCK_TYPES:
            raise ValueError(f"block type {type!r} is not one of the contract's seven")
        block_id = id if id is not None else f"b{len(self.blocks)}"
        if not block_id or self._known(block_id):
            raise ValueError(f"block id {block_id!r} is empty or not unique")
        if parent is not None and not self._known(parent):
            raise ValueError(f"parent {parent!r} is not an earlier block")
        if depth is not None and (depth.__class__ is not int or not 0 <= depth <= INT64_MAX):
            _check_depth(depth)
            raise ValueError("depth must be 0 or more")
        block_attrs = clean_value(attrs) if attrs else {}
        block: dict[str, Any] = {"id": block_id, "type": type, "text": clean_str(text)}
        if parent is not None:
            block["parent"] = parent
        if depth is not None:
            block["depth"] = depth
        # an empty path or key list (most blocks have no keys) is [] without the calls
        block["section_path"] = self._section_path(section_path, block_attrs) if section_path else []
        block["locator"] = locator if locator is not None else {}
        block["keys"] = self._keys(keys, block_attrs) if keys else []
        if block_attrs:
            block["attrs"] = block_attrs
        self._ids.add(block_id)
        self.blocks.append(block)
        self.text_chars += len(block["text"]) + 64
        if self.measure_blocks:
            self.text_chars += _measured_extra(block)
        return block_id

    def add_blocks(self, rows: Sequence[BlockRow], *, depths: Sequence[int | None] | None = None) -> None:
        """Append many blocks in reading order, each the block ``add_block`` makes of it, at a fraction of the cost.

        A row is ``(id, type, text, parent, section_path, locator, keys, attrs)``, as ``add_block``'s arguments (the
        id given, ``None`` for no parent or no attrs); ``depths``, if given, holds each row's ``depth`` (``None`` for
        none), as long as ``rows``. Every guarantee of ``add_block`` holds: a known type, ids
        unique among all blocks, a parent that is an earlier block (one before this call or an earlier row), lone
        surrogates in the text replaced, the section path and keys cleaned, cut and marked (``attrs`` and
        ``coverage.lost``, in the order ``add_block`` would mark them), attrs made JSON-safe (``clean_value``), and
        ``text_chars`` counted. Nothing is appended when a row is refused (ValueError or TypeError).

        For speed (markdown, pptx: many blocks per call), what needs no change is kept,
        not copied: a ``keys`` list that is empty or of one short ASCII key and an ``attrs`` dict of plain values
        (ASCII strings, int64 integers, finite floats, bools, nulls, and lists of those) become the block's own, so
        the caller must not change them afterwards; rows naming the same ``section_path`` object share one cleaned
        copy.
        """
        if not rows:
            return
        ids = [r[0] for r in rows]
        new_ids = set(ids)
        runs = self._runs
        if (
            len(new_ids) != len(ids)
            or not self._ids.isdisjoint(new_ids)
            or not all(ids)
            or (runs is not None and runs.meets(ids))
        ):
            dup = next((i for i in ids if not i or self._known(i) or ids.count(i) > 1), ids[0])
            raise ValueError(f"block id {dup!r} is empty or not unique")
        if not {r[1] for r in rows} <= BLOCK_TYPES:
            bad = next(r[1] for r in rows if r[1] not in BLOCK_TYPES)
            raise ValueError(f"block type {bad!r} is not one of the contract's seven")
        if depths is not None:
            if len(depths) != len(rows):
                raise ValueError(f"{len(rows)} rows but {len(depths)} depths")
            for depth in depths:
                if depth is not None:
                    _check_depth(depth)
        blocks = self._blocks_each(rows, depths)
        known = self._ids
        known.update(new_ids)
        self.blocks.extend(blocks)
        self.text_chars += sum(len(b["text"]) for b in blocks) + 64 * len(blocks)
        if self.measure_blocks:
            self.text_chars += sum(map(_measured_extra, blocks))

    # add_key_block's last section path object, and what it makes.
    _key_path_in: object = None
    _key_section: list[str] = []  # noqa: RUF012 (a class default replaced per instance, never mutated)
    _key_path_cut = False

    def add_key_block(  # noqa: PLR0917 (toml calls it once a key, by position: no keyword matching)
        self,
        type: str,
        text: str,
        line_start: int,
        line_end: int,
        key_path: str,
        parent: str | None,
        section_path: Sequence[str],
        keys: list[str],
        value: Any = None,
        value_type: str | None = None,
    ) -> str:
        """``add_block(type, text, parent=parent, section_path=section_path, locator=make_locator(line_start=line_start,
        line_end=line_end, key_path=key_path), keys=keys, attrs={"value": value, "value_type": value_type})`` (no
        attrs when ``value_type`` is None), the same block and id at about a third of the cost: the keyed formats'
        (toml's) one block per key. Every check of ``add_block`` is made, cheaply where the arguments are plain (an
        ASCII text, key path and value type, a ``keys`` list of one short ASCII key, a value that is an ASCII
        string, an int64, a finite float, a bool, None or a list of those), else by ``add_block``'s own helpers;
        a run of calls with the same ``section_path`` object cuts it once (so do not change that list between
        calls). A plain ``keys`` list and value become the block's own: do not change them afterwards."""
        blocks = self.blocks
        block_id = f"b{len(blocks)}"
        ids = self._ids
        if block_id in ids:
            raise ValueError(f"block id {block_id!r} is empty or not unique")
        if type not in BLOCK_TYPES:
            raise ValueError(f"block type {type!r} is not one of the contract's seven")
        if parent is not None and parent not in ids and not self._known(parent):
            raise ValueError(f"parent {parent!r} is not an earlier block")
        if section_path is not self._key_path_in:
            self._key_section, self._key_path_cut = cut_section_path(section_path)
            self._key_path_in = section_path
        plain_path = key_path.__class__ is str and key_path.isascii()
        if line_start.__class__ is int and line_end.__class__ is int and 1 <= line_start <= line_end <= INT64_MAX:
            locator: dict[str, Any] = {"line_start": line_start, "line_end": line_end, "key_path": key_path}
            if not plain_path:
                locator["key_path"] = clean_str(key_path)
        else:
            locator = make_locator(line_start=line_start, line_end=line_end, key_path=key_path)
        if (
            keys.__class__ is list
            and len(keys) == 1
            and (key := keys[0]).__class__ is str
            and len(key) <= MAX_KEY_CHARS
            and ((key is key_path and plain_path) or key.isascii())  # toml's one key is the key path, checked above
        ):
            keys_cut = False
        else:
            keys, keys_cut = cut_keys(keys)
        cls = value.__class__
        if value_type is None:
            attrs = None
        elif (
            (cls is str and value.isascii())
            or (cls is int and INT64_MIN <= value <= INT64_MAX)
            or (cls is float and value - value == 0.0)
            or cls is bool
        ) and (value_type.__class__ is str and value_type.isascii()):
            attrs = {"value": value, "value_type": value_type}
        else:
            attrs = _key_attrs(value, value_type)
        if text.__class__ is not str or not text.isascii():
            text = _row_text(block_id, text)
        if self._key_path_cut or keys_cut:
            attrs = self._key_marks(attrs, keys_cut)
        section = self._key_section
        if parent is None:
            block = {"id": block_id, "type": type, "text": text, "section_path": section, "locator": locator}
        else:
            block = {
                "id": block_id,
                "type": type,
                "text": text,
                "parent": parent,
                "section_path": section,
                "locator": locator,
            }
        block["keys"] = keys
        if attrs:
            block["attrs"] = attrs
        ids.add(block_id)
        blocks.append(block)
        self.text_chars += len(text) + 64
        if self.measure_blocks:
            self.text_chars += _measured_extra(block)
        return block_id

    def _key_marks(self, attrs: dict[str, Any] | None, keys_cut: bool) -> dict[str, Any]:
        """A key block's attrs with the truncation marks ``add_block`` sets, in its order (lost noted)."""
        marked = dict(attrs) if attrs else {}
        if self._key_path_cut:
            marked["section_truncated"] = True
            self.lose(LOST_SECTION_PATH)
        if keys_cut:
            marked["keys_truncated"] = True
            self.lose(LOST_EXACT_KEYS)
        return marked

    def _blocks_each(self, rows: Sequence[BlockRow], depths: Sequence[int | None] | None) -> list[dict[str, Any]]:
        """``add_blocks``' rows one by one, each checked, cleaned, cut and marked as ``add_block`` does."""
        known = self._ids
        earlier: set[str] = set()
        add_earlier = earlier.add
        # Rows of one table share their parent and section path objects: each is checked once per run of rows.
        last_parent: object = None
        last_path: object = None
        names: set[str] = set()  # attrs names seen to be ASCII strings
        section: list[str] = []
        path_cut = False
        lost: list[str] = []
        blocks: list[dict[str, Any]] = []
        append = blocks.append
        depth_at = depths.__getitem__ if depths is not None else None
        for n, (block_id, type_, text, parent, path, locator, keys, attrs) in enumerate(rows):
            if parent is not last_parent:
                if parent is not None and parent not in earlier and parent not in known and not self._known(parent):
                    raise ValueError(f"parent {parent!r} is not an earlier block")
                last_parent = parent
            if text.__class__ is not str or not text.isascii():
                text = _row_text(block_id, text)  # noqa: PLW2901 (the row's text, cleaned)
            if path is not last_path:
                section, path_cut = cut_section_path(path)
                last_path = path
            if keys.__class__ is list and (
                not keys
                or (
                    len(keys) == 1 and (key := keys[0]).__class__ is str and len(key) <= MAX_KEY_CHARS and key.isascii()
                )
            ):
                keys_cut = False
            else:
                keys, keys_cut = cut_keys(keys)  # noqa: PLW2901 (the row's keys, cut)
            if attrs:
                # whether clean_value(attrs) is attrs as it is, inlined (most of a row's cost), names checked once
                plain = False
                for name, v in attrs.items():
                    if name not in names and not _known_name(name, names):
                        break
                    cls = v.__class__
                    if cls is str:
                        if not v.isascii():
                            break
                    elif cls is int:
                        if not INT64_MIN <= v <= INT64_MAX:
                            break
                    elif cls is float:
                        if v - v != 0.0:
                            break
                    elif cls is list:
                        if not _plain_list(v):
                            break
                    elif v is not None and cls is not bool:
                        break
                else:
                    plain = True
                if not plain:  # a name or value that needs the careful walk
                    attrs = clean_value(attrs)  # noqa: PLW2901 (the row's attrs, cleaned)
                if path_cut or keys_cut:
                    attrs = dict(attrs)  # noqa: PLW2901 (a copy for the marks)
            elif path_cut or keys_cut:
                attrs = {}  # noqa: PLW2901 (for the marks)
            if path_cut:
                attrs["section_truncated"] = True  # type: ignore[index]
                lost.append(LOST_SECTION_PATH)
            if keys_cut:
                attrs["keys_truncated"] = True  # type: ignore[index]
                lost.append(LOST_EXACT_KEYS)
            block: dict[str, Any] = {"id": block_id, "type": type_, "text": text}
            if parent is not None:
                block["parent"] = parent
            if depth_at is not None and (depth := depth_at(n)) is not None:
                block["depth"] = depth
            block["section_path"] = section
            block["locator"] = locator if locator is not None else {}
            block["keys"] = keys
            if attrs:
                block["attrs"] = attrs
            append(block)
            add_earlier(block_id)
        for capability in lost:
            self.lose(capability)
        return blocks

    def _known(self, block_id: str) -> bool:
        """Whether ``block_id`` is an earlier block's (a run's too)."""
        return block_id in self._ids or (self._runs is not None and block_id in self._runs)

    def _section_path(self, path: Sequence[str], attrs: dict[str, Any]) -> list[str]:
        out, truncated = cut_section_path(path)
        if truncated:
            attrs["section_truncated"] = True
            self.lose(LOST_SECTION_PATH)
        return out

    def _keys(self, keys: Iterable[str], attrs: dict[str, Any]) -> list[str]:
        if keys == ():  # add_block's default: nothing to cut
            return []
        out, truncated = cut_keys(keys)
        if truncated:
            attrs["keys_truncated"] = True
            self.lose(LOST_EXACT_KEYS)
        return out

    def add_row_blocks(
        self,
        table_id: str,
        texts: Sequence[str | None],
        *,
        rows: Sequence[int],
        first_index: int | None = None,
        lines: Sequence[tuple[int, int]] | None = None,
        page: int | None = None,
        sheet: str | None = None,
        section_path: Sequence[str] = (),
        parent: str | None = None,
        attrs: dict[str, Any] | None = None,
        fit: Callable[[OfferedBlocks], int] | None = None,
        remake_texts: Callable[[int, int], Sequence[str | None]] | None = None,
    ) -> int:
        """Append row blocks of table ``table_id``, one per row with text, in order; return how many rows were taken.

        Row ``i`` (``texts[i]``, ``rows[i]``, ``lines[i]``) becomes the ``paragraph`` block that ``add_block`` makes
        of ``texts[i]`` with ``attrs={"table_id": table_id, **attrs}``, ``locator=make_locator(line_start=s,
        line_end=e, page_start=page, sheet=sheet, row_start=rows[i])`` (its keys in the order line, page, sheet,
        row), the same ``section_path`` and ``parent``, and no keys. An empty text (or None: a row of nulls) makes
        no block. It is ``add_block`` per row at about a quarter of the cost (under 1 us a block): every guarantee
        holds, checked once per call where it can be. Lone surrogates in a text become U+FFFD (ASCII
        text is not copied); the section path is cleaned, cut and marked (``attrs.section_truncated``,
        ``coverage.lost``); the sheet name is cleaned and cut; row numbers, line pairs and the page are checked as
        ``make_locator`` checks them, and ids for uniqueness, before anything is appended (ValueError or
        TypeError); ``text_chars`` counts each block. The blocks of one call share one ``section_path`` list, one
        ``attrs`` dict and one empty ``keys`` list: do not mutate them.

        ``table_id`` may name a table added already or one added later (a table cut to the rows that fit the
        output budget is added after its row blocks); ``build()`` refuses an artifact whose row blocks name a table
        that was never added.

        Ids: with ``first_index=None`` they continue ``add_block``'s numbering (``b<n>``, n the block's position);
        with ``first_index=k``, row ``i``'s is ``r<table_id>.<k + i>`` (its place among the table's rows, the same
        whatever comes before it).

        ``fit``, if given, is called once with the blocks the rows would make (an ``OfferedBlocks``: one entry per
        row, None for a row with no block, and their JSON's length) before anything is appended, and returns how
        many rows to take (``0..len(texts)``); only those rows' blocks are appended. It is for an output budget that
        measures what it admits; it must not add blocks itself.

        In a builder made under ``row_runs.compact_rows`` (the worker's), rows with ``first_index`` and no
        ``parent`` are kept as one ``row_runs.RowRun``, in ``blocks`` once per block it stands for, and only
        ``shared.artifact.built.dump_checked`` reads them (see ``row_runs``); the artifact's JSON is the same.
        ``remake_texts(lo, hi)``, if given, makes ``texts[lo:hi]`` again (the same strings, from what the table
        keeps: its rows); such a run holds no texts when every row has one, and ``dump_checked`` makes them with
        the blocks.
        """
        n = len(texts)
        if table_id.__class__ is not str or not table_id:
            raise ValueError(f"table id {table_id!r} is empty or not a string")
        clean_table_id = clean_str(table_id)
        if len(rows) != n:
            raise ValueError(f"{n} texts but {len(rows)} row numbers")
        if lines is not None and len(lines) != n:
            raise ValueError(f"{n} texts but {len(lines)} line ranges")
        if parent is not None and not self._known(parent):
            raise ValueError(f"parent {parent!r} is not an earlier block")
        block_attrs: dict[str, Any] = {"table_id": clean_table_id}
        if attrs:
            if "table_id" in attrs:
                raise ValueError("attrs.table_id is the table_id argument")
            block_attrs.update(clean_value(attrs))
        path, path_truncated = cut_section_path(section_path)
        if path_truncated:
            block_attrs["section_truncated"] = True
        head = make_locator(page_start=page, sheet=sheet)  # page checked as make_locator checks it, sheet cut
        _check_row_numbers(rows)
        if lines is not None:
            _check_line_ranges(lines)
        if first_index is not None:
            _check_int("first_index", first_index)
        if n == 0:
            return 0

        # The rows that make a block (all of them, but for rows of nulls), their texts cleaned, and their ids.
        if all(texts):
            kept_idx: Sequence[int] = range(n)
        else:
            kept_idx = [i for i, t in enumerate(texts) if t]
            texts = [texts[i] for i in kept_idx]
            rows = [rows[i] for i in kept_idx]
            if lines is not None:
                lines = [lines[i] for i in kept_idx]
        kept_texts = cast("Sequence[str]", texts)  # the falsy texts (None, "") were dropped just above
        if not all(map(str.isascii, kept_texts)):  # TypeError for a text that is not a str
            kept_texts = [clean_str(t) for t in kept_texts]
        compact = False  # kept as one RowRun (the worker's builders, see ``row_runs``), else as dicts
        if first_index is None:
            start = len(self.blocks)
            ids: Sequence[str] = [f"b{k}" for k in range(start, start + len(kept_texts))]
        else:
            prefix = f"r{clean_table_id}."
            numbers = (
                range(first_index, first_index + n) if len(kept_texts) == n else [first_index + i for i in kept_idx]
            )
            compact = self._compact and parent is None and first_index >= 0 and runnable(prefix)
            ids = RunIdList(prefix, numbers) if compact else run_ids(prefix, numbers)
        runs = self._runs
        clash = ids.meets(self._ids) if isinstance(ids, RunIdList) else not self._ids.isdisjoint(ids)
        if runs is not None and not clash:
            clash = not runs.fits(prefix, numbers) if compact else runs.meets(ids)
        if clash:
            raise ValueError(f"block id {next(i for i in ids if self._known(i))!r} is not unique")

        # Locators in the key order tabular artifacts have always had: line, page, sheet, row; the locators and
        # blocks are key-sharing dicts (see ``row_runs``), about half a literal's memory, made now unless the rows are
        # kept as a run (then only if ``fit`` reads them: it measures a run's JSON by column).
        args = (ids, kept_texts, rows, lines, head)
        kwargs: dict[str, Any] = {"parent": parent, "path": path, "keys": [], "attrs": block_attrs}
        make = functools.partial(row_blocks, *args, **kwargs)
        blocks: list[dict[str, Any]] = [] if compact else make()

        taken = n
        count = len(kept_texts)
        if fit is not None:
            if compact:  # measured by column, the dicts made only if fit reads them
                offered = OfferedBlocks(n, kept_idx, make, functools.partial(row_blocks_json_len, *args, **kwargs))
            else:
                offered = OfferedBlocks(
                    n, kept_idx, functools.partial(list, blocks), functools.partial(_json_length, blocks)
                )
            before = len(self.blocks)
            taken = fit(offered)
            del offered
            if taken.__class__ is not int or not 0 <= taken <= n:
                raise ValueError(f"fit returned {taken!r}, not a row count in 0..{n}")
            if len(self.blocks) != before:
                raise RuntimeError("fit added blocks while row blocks were pending")
            if taken < n:
                count = taken if count == n else sum(1 for i in kept_idx if i < taken)
                blocks, ids, kept_texts = blocks[:count], ids[:count], kept_texts[:count]
        if count == 0:
            return taken
        if path_truncated:
            self.lose(LOST_SECTION_PATH)
        if compact:
            del blocks, ids
            remake = None
            if remake_texts is not None and len(kept_idx) == n:  # every row a block: run index = row index
                remake = functools.partial(_remade_texts, remake_texts)
            run = RowRun(
                prefix=prefix,
                numbers=numbers[:count],
                texts=kept_texts[:count],
                rows=rows[:count],
                lines=lines[:count] if lines is not None else None,
                head=head,
                path=path,
                keys=[],
                attrs=block_attrs,
                remake=remake,
            )
            if runs is None:
                runs = self._runs = RunIds()
            runs.add(prefix, run.numbers)
            self.blocks.extend(itertools.repeat(run, count))  # type: ignore[arg-type]  # see row_runs
        else:
            self._ids.update(ids)
            self.blocks.extend(blocks)
        self._row_table_ids.add(table_id)
        self.text_chars += sum(map(len, kept_texts)) + 64 * count
        return taken

    # -- tables ---------------------------------------------------------------------------------------------------

    def add_table(
        self,
        name: str,
        columns: Sequence[tuple[str, str]],
        rows: list[list[Any]],
        *,
        header_rows: int = 1,
        locator: dict[str, Any] | None = None,
        attrs: dict[str, Any] | None = None,
        id: str | None = None,
    ) -> str:
        """Append a typed table. ``columns`` are (name, type); each row must be as long as ``columns``.

        Values must already be JSON-ready for their column type (see the contract's tables section); the validator
        checks them. Column names are cut to the contract's bound. Each cell is cleaned as ``_clean_cell`` says; a
        table whose cells need nothing (the usual case) keeps its row lists as they are (checked a column at a
        time, see ``_rows_clean``), so do not mutate them afterwards.
        """
        table_id, cols = self._table_head(columns, header_rows, id)
        width = len(cols)
        if not _rows_clean(rows, width):
            clean = _clean_cell
            for i, row in enumerate(rows):
                if len(row) != width:
                    raise ValueError(f"table {name!r} row {i} has {len(row)} values for {width} columns")
                rows[i] = [clean(v) for v in row]
        return self._put_table(
            table_id, name, cols=cols, rows=rows, header_rows=header_rows, locator=locator, attrs=attrs
        )

    def add_table_columns(
        self,
        name: str,
        columns: Sequence[tuple[str, str]],
        values: Sequence[Sequence[Any]],
        n_rows: int,
        *,
        header_rows: int = 1,
        locator: dict[str, Any] | None = None,
        attrs: dict[str, Any] | None = None,
        id: str | None = None,
    ) -> str:
        """``add_table`` of the ``n_rows`` rows whose cells ``values`` holds by column (``values[j][i]`` is row
        ``i``'s cell ``j``): each column checked and cleaned as it is, never transposed, and copied (the caller may
        reuse its lists). In the worker the table's ``rows`` is a ``ColumnRows`` of them (``column_rows``); anywhere
        else the row lists ``add_table`` would keep."""
        table_id, cols = self._table_head(columns, header_rows, id)
        if len(values) != len(cols) or any(len(v) != n_rows for v in values):
            raise ValueError(f"table {name!r} needs {len(cols)} columns of {n_rows} values")
        cells = [tuple(v) if _column_clean(v) else tuple(map(_clean_cell, v)) for v in values]
        rows: ColumnRows | list[list[Any]] = (
            ColumnRows(cells, n_rows) if self._compact else list(map(list, rows_of(cells, n_rows)))
        )
        return self._put_table(
            table_id, name, cols=cols, rows=rows, header_rows=header_rows, locator=locator, attrs=attrs
        )

    def _table_head(
        self, columns: Sequence[tuple[str, str]], header_rows: int, id: str | None
    ) -> tuple[str, list[dict[str, Any]]]:
        """A new table's id and its columns, checked."""
        table_id = id if id is not None else f"t{len(self.tables)}"
        if not table_id or table_id in self._table_ids:
            raise ValueError(f"table id {table_id!r} is empty or not unique")
        _check_int("header_rows", header_rows)
        if header_rows < 0:
            raise ValueError("header_rows must be 0 or more")
        if len(columns) > MAX_COLUMNS:
            raise ValueError(f"a table has at most {MAX_COLUMNS} columns, got {len(columns)}")
        cols = []
        for col_name, col_type in columns:
            if col_type not in COLUMN_TYPES:
                raise ValueError(f"column type {col_type!r} is not one of the contract's")
            cols.append({"name": clean_str(col_name)[:MAX_COLUMN_NAME_CHARS], "type": col_type})
        return table_id, cols

    def _put_table(
        self,
        table_id: str,
        name: str,
        *,
        cols: list[dict[str, Any]],
        rows: ColumnRows | list[list[Any]],
        header_rows: int,
        locator: dict[str, Any] | None,
        attrs: dict[str, Any] | None,
    ) -> str:
        width = len(cols)
        table: dict[str, Any] = {
            "id": table_id,
            "name": clean_str(name),
            "columns": cols,
            "rows": rows,
            "header_rows": header_rows,
            "locator": locator if locator is not None else {},
            "attrs": clean_value(attrs) if attrs else {},
        }
        self._table_ids.add(table_id)
        self.tables.append(table)
        self.text_chars += 16 * width * (len(rows) + 1)
        return table_id

    # -- coverage and notes ---------------------------------------------------------------------------------------

    def coverage(self, *, total: int, extracted: int) -> None:
        _check_int("coverage.total", total)
        _check_int("coverage.extracted", extracted)
        if not 0 <= extracted <= total:
            raise ValueError(f"coverage needs 0 <= extracted <= total, got {extracted}/{total}")
        self._total, self._extracted = total, extracted

    def fail(self, unit: str, reason: str) -> None:
        """Record one unit that was not extracted (a page, a statement, a shape...) and why."""
        self._failed.append({"unit": clean_str(unit), "reason": clean_str(reason)})

    def lose(self, capability: str) -> None:
        """Record a capability the artifact cannot serve (``sql_structure``, ``ocr``, ``exact_keys``...)."""
        if capability not in self._lost:
            self._lost.append(capability)

    def warn(self, message: str) -> None:
        self.warnings.append(clean_str(message))

    def build(self) -> dict[str, Any]:
        dangling = self._row_table_ids - self._table_ids
        if dangling:
            raise ValueError(f"row blocks name table(s) {sorted(dangling)} that were never added")
        complete = self._extracted == self._total and not self._failed and not self._lost
        artifact: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "format": self.format,
            "parser": self.parser,
            "parser_version": self.parser_version,
            "options": clean_value(self.options),
            "attrs": clean_value(self.attrs),
            "warnings": self.warnings,
            "coverage": {
                "unit": self.unit,
                "total": self._total,
                "extracted": self._extracted,
                "failed": self._failed,
                "lost": self._lost,
                "complete": complete,
            },
            "blocks": self.blocks,
        }
        if self.tables:
            artifact["tables"] = self.tables
        return artifact


def _json_length(value: Any) -> int:
    return len(orjson.dumps(value))


def _remade_texts(remake: Callable[[int, int], Sequence[str | None]], lo: int, hi: int) -> list[str]:
    """A run's texts ``lo..hi-1`` made again, cleaned as ``add_row_blocks`` cleans them."""
    texts = list(remake(lo, hi))
    if len(texts) != hi - lo or not all(texts):
        raise ValueError(f"remake_texts gave {len(texts)} texts (or an empty one) for rows {lo}..{hi - 1}")
    plain = cast("list[str]", texts)
    return plain if all(map(str.isascii, plain)) else [clean_str(t) for t in plain]


def _row_text(block_id: str, text: object) -> str:
    if text.__class__ is not str:
        raise TypeError(f"block {block_id!r}: the text must be a str, got {text!r}")
    return clean_str(text)


def _known_name(name: object, names: set[str]) -> bool:
    """Whether an attrs name needs no cleaning (an ASCII str), remembered in ``names``."""
    if name.__class__ is str and name.isascii():
        names.add(name)
        return True
    return False


def _plain_list(values: list[Any]) -> bool:
    for v in values:
        cls = v.__class__
        if cls is str:
            if not v.isascii():
                return False
        elif not _plain_scalar(v, cls):
            return False
    return True


def _plain_scalar(v: Any, cls: type) -> bool:
    if cls is int:
        return bool(INT64_MIN <= v <= INT64_MAX)
    if cls is float:
        return bool(v - v == 0.0)  # not NaN or Infinity
    return v is None or cls is bool


def _measured_extra(block: dict[str, Any]) -> int:
    """What ``measure_blocks`` adds to ``text_chars`` for a block beyond its text."""
    path = block["section_path"]
    extra = 48 + sum(map(len, path)) + 4 * len(path)
    if "attrs" in block:
        extra += len(orjson.dumps(block["attrs"]))
    if block["locator"]:
        extra += 24 * len(block["locator"])
    return extra


def serialize(artifact: dict[str, Any]) -> bytes:
    """The artifact as JSON bytes.

    orjson writes NaN and Infinity as null without a word, so the builder refuses them where values enter (attrs,
    options, table cells); a dict made elsewhere must be checked by the validator, as the extractor does.
    """
    return orjson.dumps(artifact)
