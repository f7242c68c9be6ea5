"""The fast path's verdict: whether an artifact decoded by ``schema.DECODER`` (so every field has its type and
bounds) also keeps the rules a type cannot say, tested a field at a time over all blocks at once, each test one
C-speed pass (the set of the values' types, a min or a max, a lookup of each parent). It reads the same definitions
as the checker (``rules.PAIRS``, ``cells.COLUMN_RULES``, the ``unique``/``earlier`` fields) and only answers yes or
no: on no, ``check.Checker`` looks again and says what is wrong (or finds nothing, and the artifact is valid)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import chain, compress, repeat
from operator import eq, is_, itemgetter, le, lt
from typing import Any, Final

from shared.artifact import cells
from shared.artifact.check import MISSING, ROW_CHUNK
from shared.artifact.row_runs import RunIdList, RunIds
from shared.artifact.rules import PAIRS, Pair
from shared.contract import INT64_MAX, INT64_MIN, MAX_NESTING

_NO_PARENT: Final = object()  # stands for a parent left out: always among the ids seen
_GET_ID: Final = itemgetter("id")
_GET_LOCATOR: Final = itemgetter("locator")
_INT: Final = frozenset({int})
_STR: Final = frozenset({str})
_ROWS_PAIR: Final = next(p for p in PAIRS if p.start == "row_start")
_LINES_PAIR: Final = next(p for p in PAIRS if p.start == "line_start")
# The values a free object may hold as they are: decoded bytes hold nothing else; a built artifact's free objects
# (which ``built`` hands over as the module made them) may, and orjson writes those otherwise (a tuple, a dataclass)
_JSON_KINDS: Final = frozenset({dict, list, str, int, float, bool, type(None)})


BLOCK_CHUNK: Final = 2048  # blocks tested together: each pass costs little per block, and the chunk stays in cache


def _slices(items: list[Any], size: int) -> Iterator[list[Any]]:
    return (items[lo : lo + size] for lo in range(0, len(items), size))


Chunks = Callable[[list[Any], int], Iterable[list[Any] | None]]


def holds(
    doc: dict[str, Any],
    fmt: str,
    original_size: int,
    known: dict[str, set[str]],
    each_chunk: Callable[[list[dict[str, Any]]], object] | None = None,
    *,
    chunks: Chunks = _slices,
) -> bool:
    """Whether a decoded artifact keeps every rule across fields (see the module's doc). ``each_chunk`` is handed
    each chunk of blocks once it has passed, while it is still in the cache (the models are built there).
    ``chunks(items, size)``: the blocks (``doc["blocks"]``) and each table's rows, ``size`` at a time, as the
    tests read them; ``built`` passes each chunk converted to its type there (None: a chunk that is not)."""
    bounds = bounds_of(original_size)
    if not head_holds(doc, fmt, bounds):
        return False
    for table in doc.get("tables", ()):
        types = column_types(table)
        if not all(rows_hold(chunk, types, known) for chunk in chunks(table["rows"], ROW_CHUNK)):
            return False
    ids = new_ids()
    for chunk in chunks(doc["blocks"], BLOCK_CHUNK):
        if chunk is None or not blocks_hold(chunk, ids, bounds):
            return False
        if each_chunk is not None:
            each_chunk(chunk)
    return True


# The parts of ``holds``, for a caller that reaches the blocks and rows in its own order (``built.dump_checked``
# tests each chunk as it serializes it): the verdict is the same whatever the order of the parts.


def bounds_of(original_size: int) -> dict[str | None, int]:
    """The locators' bounds (``rules.PAIRS``' ``bound``) for an original of ``original_size`` bytes."""
    return {"lines": min(original_size + 1, INT64_MAX), "chars": min(original_size, INT64_MAX), None: INT64_MAX}


def head_holds(doc: dict[str, Any], fmt: str, bounds: dict[str | None, int]) -> bool:
    """Every rule but those of the blocks and the tables' rows: the format, the coverage, the free objects, the
    tables' ids and locators."""
    cov = doc["coverage"]
    if doc["format"] != fmt or cov["extracted"] > cov["total"]:
        return False
    complete = cov["extracted"] == cov["total"] and not cov["failed"] and not cov["lost"]
    if cov.get("complete", complete) != complete:
        return False
    tables = doc.get("tables", ())
    return (
        _frees_ok([doc["options"], doc["attrs"], *(t["attrs"] for t in tables if "attrs" in t)])
        and _ids_ok(tables, set(), parents=False)
        and _locators_ok(list(map(_GET_LOCATOR, tables)), bounds)
    )


def column_types(table: dict[str, Any]) -> list[str]:
    """A table's column types, which ``rows_hold`` tests its rows against."""
    return [c["type"] for c in table["columns"]]


def rows_hold(chunk: list[Any] | None, types: list[str], known: dict[str, set[str]]) -> bool:
    """A chunk of a table's rows (None: one that is not of its type): each row as wide as the columns, and each
    column passing ``cells.column_ok``."""
    if chunk is None or set(map(len, chunk)) != {len(types)}:
        return False
    return columns_hold(list(zip(*chunk, strict=True)), types, known)


def columns_hold(columns: Sequence[Sequence[Any]], types: list[str], known: dict[str, set[str]]) -> bool:
    """A chunk of a table's rows given as its columns (``column_rows.ColumnRows``, each column as long): one column
    a column type, each passing ``cells.column_ok``."""
    return len(columns) == len(types) and all(map(cells.column_ok, columns, types, repeat(known)))


def new_ids() -> set[Any]:
    """The ids seen before the first chunk of blocks (``blocks_hold`` adds each chunk's)."""
    return {_NO_PARENT}


def blocks_hold(
    chunk: list[Any] | None, ids: set[Any], bounds: dict[str | None, int], runs: RunIds | None = None
) -> bool:
    """A chunk of blocks (None: one that is not of its type), after the earlier chunks, whose ids are ``ids`` (and
    ``runs``, those of the row runs before it: see ``row_runs``)."""
    return chunk is not None and (
        _ids_ok(chunk, ids, runs=runs)
        and _attrs_ok(list(filter(None, map(dict.get, chunk, repeat("attrs")))))  # an empty one holds nothing
        and _locators_ok(list(map(_GET_LOCATOR, chunk)), bounds)
    )


def run_blocks_hold(
    first: list[Any] | None,
    texts: Sequence[Any],
    block_ids: Sequence[Any] | None,
    seen: set[Any],
    runs: RunIds,
    *,
    bounds: dict[str | None, int],
    ids: RunIdList,
    rows: Sequence[int],
    lines: tuple[Sequence[int], Sequence[int]] | None,
) -> bool:
    """Blocks made from a row run (``row_runs.RowRun.blocks``, or their JSON by ``row_runs.run_json``: ``texts``
    and ``block_ids`` are those written, ``block_ids`` None where the JSON's ids were written from the run's
    numbers), as ``blocks_hold`` tests blocks, with what the run's making guarantees: every block is a copy of one
    template (the same type, section path, keys, attrs, locator head and no parent, the very objects), differing
    only by its id, text and row numbers (and line pair). So ``first`` (the first block converted to its type;
    None: it is not) stands for the shared values, and the rest is tested by column: the texts' type, the ids
    (``ids``: kept as the run's numbers in ``runs`` rather than as strings in ``seen``, none an earlier block's),
    and each number pair of ``rules.PAIRS`` over the run's own columns (``rows``, ``lines``: the part's stretch of
    them)."""
    if first is None or "parent" in first[0] or set(map(type, texts)) != _STR:
        return False
    if rows.__class__ is not range and set(map(type, rows)) != _INT:
        return False
    return (
        (block_ids is None or list(block_ids) == list(ids))
        and not ids.meets(seen)
        and runs.add(ids.prefix, ids.numbers)
        and _attrs_ok(list(filter(None, [first[0].get("attrs")])))
        and _locators_ok([first[0]["locator"]], bounds)
        and _pair_ok(_ROWS_PAIR, rows, rows, bounds)
        and (lines is None or _pair_ok(_LINES_PAIR, lines[0], lines[1], bounds))
    )


def _ids_ok(
    items: Sequence[dict[str, Any]], seen: set[Any], *, parents: bool = True, runs: RunIds | None = None
) -> bool:
    """Ids unique (among these items and the ``seen`` ones of earlier chunks, to which they are added, and the
    ``runs``' ids); each parent the id of an earlier item: of this chunk (its index below the item's own) or of an
    earlier chunk."""
    ids = list(map(_GET_ID, items))
    n = len(ids)
    new = set(ids)
    if len(new) != n or not seen.isdisjoint(new) or (runs is not None and runs.meets(ids)):
        return False
    if parents:
        named = list(map(dict.get, items, repeat("parent"), repeat(_NO_PARENT)))
        if named.count(_NO_PARENT) != n:
            index = dict(zip(ids, range(n), strict=True))
            if not all(map(lt, map(index.get, named, repeat(-1)), range(n))):
                return False
            elsewhere = set(named).difference(index).difference(seen)
            if elsewhere and not (runs is not None and all(map(runs.__contains__, elsewhere))):
                return False
    seen |= new
    return True


def _attrs_ok(attrs: list[dict[str, Any]]) -> bool:
    """Alike attrs (a table's row blocks) are tested by one of them: equal free objects hold the same values at
    the same depths."""
    if not attrs:
        return True
    first = attrs[0]
    if all(map(eq, attrs, repeat(first))):
        return _frees_ok([first])
    return _frees_ok(attrs)


def _frees_ok(objects: list[Any]) -> bool:
    """Free objects nested at most MAX_NESTING deep, their integers within 64 bits: a level at a time, each level's
    values all together. Any value of another type (see ``_JSON_KINDS``) is a no."""
    dicts: list[Any] = objects
    lists: list[Any] = []
    for _depth in range(MAX_NESTING):  # the containers at depth 1, 2, ... MAX_NESTING
        values = list(chain(chain.from_iterable(map(dict.values, dicts)), chain.from_iterable(lists)))
        types = list(map(type, values))
        kinds = set(types)
        if not kinds <= _JSON_KINDS:
            return False
        if int in kinds:
            ints = list(_of_kind(values, types, int))
            if min(ints) < INT64_MIN or max(ints) > INT64_MAX:
                return False
        if dict not in kinds and list not in kinds:
            return True
        dicts = list(_of_kind(values, types, dict)) if dict in kinds else []
        lists = list(_of_kind(values, types, list)) if list in kinds else []
    return False  # containers nested deeper than MAX_NESTING


def _of_kind(values: list[Any], types: list[type], kind: type) -> Iterator[Any]:
    """The values whose type (``types``, in step with them) is ``kind``, picked at C speed."""
    return compress(values, map(is_, types, repeat(kind)))


def _locators_ok(locs: list[dict[str, Any]], bounds: dict[str | None, int]) -> bool:
    """Every ``rules.PAIRS`` pair of every locator, a pair at a time over all of them: both halves or neither,
    ``unused`` both, or ``unused < start <= end <= bound``."""
    present = set(chain.from_iterable(locs))
    for pair in PAIRS:
        if pair.start not in present and pair.end not in present:
            continue
        starts = list(map(dict.get, locs, repeat(pair.start), repeat(MISSING)))
        ends = list(map(dict.get, locs, repeat(pair.end), repeat(MISSING)))
        if set(map(type, starts)) != _INT or set(map(type, ends)) != _INT:
            # some locators hold the pair, some do not: each must hold both halves or neither
            if list(map(is_, starts, repeat(MISSING))) != list(map(is_, ends, repeat(MISSING))):
                return False
            starts = [v for v in starts if v is not MISSING]
            ends = [v for v in ends if v is not MISSING]
        if not _pair_ok(pair, starts, ends, bounds):
            return False
    return True


def _pair_ok(pair: Pair, starts: Sequence[int], ends: Sequence[int], bounds: dict[str | None, int]) -> bool:
    """One pair over locators that all hold it (``starts[i]``, ``ends[i]``, integers): ``unused`` both, or
    ``unused < start <= end <= bound``."""
    first = min(starts)
    if first < pair.unused or max(ends) > bounds[pair.bound] or not all(map(le, starts, ends)):
        return False
    # both halves unused, or neither: with start <= end and no start below unused, an unused end has an
    # unused start, so equal counts mean the same locators
    return not (first == pair.unused and starts.count(pair.unused) != ends.count(pair.unused))
