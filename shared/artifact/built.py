"""The verdict on a built artifact (the dict a format module returns), without serializing and parsing it back.

``holds(doc, ...)`` answers whether ``check_artifact(orjson.dumps(doc), ...)`` would find the artifact valid, from
the objects themselves: ``msgspec.convert`` into ``schema``'s types (the ones ``schema.DECODER`` decodes bytes with,
generated from ``rules``) checks every field's type and bounds, then ``fast.holds`` the rules a type cannot say,
the same code the bytes' fast path runs. No rule is written here. The blocks and the tables' rows are converted
a chunk at a time as ``fast`` reaches them, so the check holds no typed copy of the artifact (only of a chunk).

It may say no where the bytes would pass (then ``check_built`` asks the bytes, which also report every violation),
never yes where they would not. What differs between the objects and their JSON, and why the yes still holds:

- orjson writes NaN and +-Infinity as ``null``: a float is taken only by a cell (null fits every column) or inside a
  free object (any value), and ``cells.column_ok`` refuses a NaN or an infinite number anyway;
- orjson writes a tuple as an array, a subclass of str/int/dict/list as its base, an enum as its value, a date as
  text, a dataclass as an object: ``convert`` turns typed fields into their exact types or refuses them, and the
  values of a free object (which ``convert`` leaves as they are) must be exact JSON types (``fast``) or it says no;
- what orjson refuses (a lone surrogate, an integer past 64 bits, a key that is not a string, an unknown type,
  nesting past 255) has no JSON to check: the caller serializes the artifact anyway and ``orjson.dumps`` raises.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Final, cast

import msgspec
import orjson

from shared.artifact import check_artifact, fast, schema
from shared.artifact.check import ROW_CHUNK
from shared.artifact.column_rows import ColumnRows, rows_of
from shared.artifact.fast import BLOCK_CHUNK
from shared.artifact.row_runs import RowRun, RunIdList, RunIds, run_json
from shared.artifact.rules import ARTIFACT, BLOCK, TABLE, Kind

_TYPE: Final = schema.typed_dict(ARTIFACT)
_BLOCKS: Final = list[schema.typed_dict(BLOCK)]  # type: ignore[misc]
_ROWS: Final = schema.type_of(next(f for f in TABLE.fields if f.kind is Kind.ROWS))


def holds(doc: Mapping[str, Any], *, format: str, original_size: int) -> bool:
    """True only if ``check_artifact(orjson.dumps(doc), format=..., original_size=...)`` passes (when orjson can
    serialize ``doc`` at all). The objects are not changed; the cyclic collector is paused for the call."""
    if original_size < 0:
        raise ValueError("original_size must be 0 or more")
    gc_was_enabled = gc.isenabled()
    gc.disable()  # as check_artifact: millions of new containers and no cycles
    try:
        return _holds(doc, format, original_size)
    except (msgspec.ValidationError, RecursionError):
        return False
    finally:
        if gc_was_enabled:
            gc.enable()


def _holds(doc: Mapping[str, Any], fmt: str, original_size: int) -> bool:
    """The artifact without its blocks and rows is converted at once; the blocks and each table's rows a chunk at
    a time, as ``fast`` tests them (never a typed copy of them all)."""
    blocks = doc.get("blocks") if isinstance(doc, dict) else None
    tables = doc.get("tables", []) if isinstance(doc, dict) else None
    if not (
        isinstance(blocks, list)
        and isinstance(tables, list)
        and all(isinstance(t, dict) and isinstance(t.get("rows"), list) for t in tables)
    ):  # not the usual shape: converted whole (and most likely refused)
        return fast.holds(msgspec.convert(doc, _TYPE), fmt, original_size, {})
    top: dict[str, Any] = {**doc, "blocks": []}
    if "tables" in doc:
        top["tables"] = [{**t, "rows": []} for t in tables]
    typed = msgspec.convert(top, _TYPE)
    typed["blocks"] = blocks  # the module's own lists, each converted a chunk at a time by chunks()
    for typed_table, table in zip(typed.get("tables", ()), tables, strict=True):
        typed_table["rows"] = table["rows"]

    def chunks(items: list[Any], size: int) -> Iterator[list[Any] | None]:
        kind = _BLOCKS if items is blocks else _ROWS
        for lo in range(0, len(items), size):
            try:
                yield msgspec.convert(items[lo : lo + size], kind)
            except msgspec.ValidationError:
                yield None

    return fast.holds(typed, fmt, original_size, {}, chunks=chunks)


def check_built(doc: Mapping[str, Any], *, format: str, original_size: int) -> None:
    """``check_artifact`` on the artifact's JSON, as ``orjson.dumps`` writes it: the same verdict and the same
    violations. An artifact ``holds`` passes is never serialized; any other is, and its bytes are checked (and
    reported). Raises ``InvalidArtifact``. For an artifact orjson cannot serialize (see the module's doc) the
    verdict means nothing: the caller serializes it anyway, and ``orjson.dumps`` refuses it there."""
    if not holds(doc, format=format, original_size=original_size):
        check_artifact(orjson.dumps(doc), format=format, original_size=original_size)


# -- checked as it is serialized ---------------------------------------------------------------------------------

Write = Callable[[bytes | memoryview], object]
# A value's JSON written at its depth in the artifact: orjson refuses nesting past its limit counting from the top,
# so a part serialized alone is wrapped in as many arrays as it has containers above it, and those brackets cut off
# (an artifact's value at depth 1 of it, a table's value at 3, a chunk of blocks stands for the blocks at 1, one of
# rows for the rows at 3). The pieces joined are then exactly ``orjson.dumps(doc)``, refusals included.
_TOP: Final = 1
_IN_TABLE: Final = 3


def _dumps_at(value: Any, depth: int, *, inner: bool = False) -> memoryview:
    """``value``'s JSON serialized at ``depth``; ``inner``: without its own brackets (a chunk of a list)."""
    for _ in range(depth):
        value = [value]
    raw = orjson.dumps(value)
    cut = depth + inner
    return memoryview(raw)[cut : len(raw) - cut]


def dump_checked(doc: dict[str, Any], *, format: str, original_size: int, write: Write) -> bool:
    """``orjson.dumps(doc)``, written through ``write`` a part at a time (the bytes joined are exactly those), and
    ``holds``' verdict on it, tested on each chunk of blocks and rows just before the chunk is serialized. Each
    chunk's objects leave ``doc``'s lists once written (they are set to None): the artifact's objects and its bytes
    never coexist whole. Raises ``orjson.JSONEncodeError`` as ``orjson.dumps(doc)`` does (after writing what comes
    before) and whatever ``write`` raises (a size limit); the cyclic collector is paused for the call."""
    if original_size < 0:
        raise ValueError("original_size must be 0 or more")
    if not _streamable(doc):  # not the usual shape: judged, then serialized, whole (and most likely refused)
        held = holds(doc, format=format, original_size=original_size)
        write(orjson.dumps(doc))
        return held
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _Pass(doc, format, original_size, write).run()
    finally:
        if gc_was_enabled:
            gc.enable()


def _plain_dict(value: Any) -> bool:
    return type(value) is dict and all(type(k) is str for k in value)


def _streamable(doc: Any) -> bool:
    """A dict of str keys whose blocks, tables and rows are lists: the shape written a part at a time."""
    if not _plain_dict(doc):
        return False
    tables = doc.get("tables", [])
    return (
        type(doc.get("blocks")) is list
        and type(tables) is list
        and all(_plain_dict(t) and type(t.get("rows")) in _ROWS_KINDS for t in tables)
    )


_ROWS_KINDS: Final = frozenset({list, ColumnRows})


class _Pass:
    """One pass over a streamable artifact: each part tested (while ``ok``), then written, then dropped."""

    def __init__(self, doc: dict[str, Any], fmt: str, original_size: int, write: Write) -> None:
        self.doc, self.write = doc, write
        self.bounds = fast.bounds_of(original_size)
        self.ids = fast.new_ids()
        self.runs = RunIds()  # the row runs' ids, as numbers (see ``row_runs``)
        # How many blocks of each run were written, by the run's id(): no reference, so a run written whole (one
        # that remakes its texts holds the table's rows) is let go with its last slot. Every run is alive when the
        # pass starts and none is made during it, so a later slot's id() is its own run's.
        self.run_done: dict[int, int] = {}
        self.known: dict[str, set[str]] = {}
        tables = doc.get("tables", [])
        top: dict[str, Any] = {**doc, "blocks": []}
        if "tables" in doc:
            top["tables"] = [{**t, "rows": []} for t in tables]
        self.typed: dict[str, Any] | None = _convert(top, _TYPE)
        self.ok = self.typed is not None and fast.head_holds(self.typed, fmt, self.bounds)

    def run(self) -> bool:
        self.write(b"{")
        for i, (key, value) in enumerate(self.doc.items()):
            self._key(key, first=i == 0)
            if key == "blocks":
                self._blocks(value)
            elif key == "tables":
                self._tables(value)
            else:
                self.write(_dumps_at(value, _TOP))
        self.write(b"}")
        return self.ok

    def _key(self, key: str, *, first: bool) -> None:
        self.write(orjson.dumps(key) + b":" if first else b"," + orjson.dumps(key) + b":")

    def _tables(self, tables: list[dict[str, Any]]) -> None:
        self.write(b"[")
        typed_tables = self.typed.get("tables", []) if self.typed is not None else []
        for n, table in enumerate(tables):
            types = fast.column_types(typed_tables[n]) if self.ok else []
            self.write(b"{" if n == 0 else b",{")
            for i, (key, value) in enumerate(table.items()):
                self._key(key, first=i == 0)
                if key == "rows" and value.__class__ is ColumnRows:
                    self._column_rows(value, types)
                elif key == "rows":
                    self._items(value, _IN_TABLE, ROW_CHUNK, functools.partial(self._rows_hold, types=types))
                else:
                    self.write(_dumps_at(value, _IN_TABLE))
            self.write(b"}")
        self.write(b"]")

    def _items(self, items: list[Any], depth: int, size: int, test: Callable[[list[Any]], bool]) -> None:
        """A list of blocks or rows at ``depth``: each chunk tested, written, and its objects dropped."""
        self.write(b"[")
        for lo in range(0, len(items), size):
            chunk = items[lo : lo + size]
            if self.ok:
                self.ok = test(chunk)
            if lo:
                self.write(b",")
            self.write(_dumps_at(chunk, depth, inner=True))  # the chunk stands for its list, at the list's depth
            items[lo : lo + size] = [None] * len(chunk)
            del chunk
        self.write(b"]")

    def _column_rows(self, table: ColumnRows, types: list[str]) -> None:
        """A table's rows kept by column, as ``_items`` writes a list of rows: each chunk's cells tested by column
        (``fast.columns_hold``, the test ``fast.rows_hold`` makes of rows once it has their columns), then its rows
        made (tuples: orjson writes the arrays lists make) and written."""
        self.write(b"[")
        for lo in range(0, len(table), ROW_CHUNK):
            hi = min(lo + ROW_CHUNK, len(table))
            cells = table.slices(lo, hi)
            if any(c.__class__ is not tuple or len(c) != hi - lo for c in cells):  # changed behind the builder
                orjson.dumps(table)  # raises orjson.JSONEncodeError, as dumps of the whole artifact would
            if self.ok:
                self.ok = fast.columns_hold(cells, types, self.known)
            if lo:
                self.write(b",")
            self.write(_dumps_at(rows_of(cells, hi - lo), _IN_TABLE, inner=True))
            del cells
        self.write(b"]")

    def _blocks(self, items: list[Any]) -> None:
        """The blocks, as ``_items`` writes a list, each chunk's row runs made into their blocks first."""
        self.write(b"[")
        for lo in range(0, len(items), BLOCK_CHUNK):
            chunk = items[lo : lo + BLOCK_CHUNK]
            parts = self._parts(chunk) if RowRun in set(map(type, chunk)) else None
            if self.ok:
                self.ok = self._blocks_hold(chunk, parts)
            if lo:
                self.write(b",")
            if parts is None:
                self.write(_dumps_at(chunk, _TOP, inner=True))
            else:  # each part's JSON, as the dumps of the chunk joins its blocks' (parts are never empty)
                self.write(
                    b",".join([p.json if p.json is not None else _dumps_at(p.blocks, _TOP, inner=True) for p in parts])
                )
            items[lo : lo + BLOCK_CHUNK] = [None] * len(chunk)
            del chunk, parts
        self.write(b"]")

    def _parts(self, chunk: list[Any]) -> list[_Part]:
        """A chunk's blocks: its dicts as they are, each run's stretch of slots as that stretch of its blocks. A
        run's slots are consecutive and as many as its blocks (``ArtifactBuilder.add_row_blocks``); slots that are
        not (a module rearranged ``blocks``) are refused as orjson refuses an object it does not know."""
        parts: list[_Part] = []
        n = len(chunk)
        i = 0
        while i < n:
            item = chunk[i]
            if item.__class__ is not RowRun:
                j = i + 1
                while j < n and chunk[j].__class__ is not RowRun:
                    j += 1
                parts.append(_Part(None, chunk[i:j]))
                i = j
                continue
            done = self.run_done.get(id(item), 0)
            m = min(len(item) - done, n - i)
            if m <= 0 or chunk[i : i + m].count(item) != m:
                orjson.dumps(item)  # raises orjson.JSONEncodeError, as dumps of the whole artifact would
            numbers = item.numbers[done : done + m]
            ids = RunIdList(item.prefix, numbers)
            texts = item.part_texts(done, done + m)
            raw = run_json(item, done, done + m, numbers, texts, dumps=_dumps_block)
            # With its JSON made from the run's values, only the first block is made (it stands for the rest in
            # the check); without, every block, which orjson writes.
            k = 1 if raw is not None else m
            blocks = item.blocks(done, done + k, ids[:k], texts)
            parts.append(_Part(item, blocks, ids, done, texts, raw))
            self.run_done[id(item)] = done + m
            i += m
        return parts

    def _blocks_hold(self, blocks: list[Any], parts: list[_Part] | None) -> bool:
        if parts is None:
            return fast.blocks_hold(_convert(blocks, _BLOCKS), self.ids, self.bounds, self.runs)
        for part in parts:
            run = part.run
            if run is None:
                held = fast.blocks_hold(_convert(part.blocks, _BLOCKS), self.ids, self.bounds, self.runs)
            else:  # a run's blocks: the first converted stands for what they share (fast.run_blocks_hold)
                ids = cast("RunIdList", part.ids)  # a run's part has its ids
                lo, hi = part.at, part.at + len(ids)
                if part.json is None:  # the texts and ids tested are the dicts' (those written)
                    texts, block_ids = list(map(_GET_TEXT, part.blocks)), list(map(_GET_ID, part.blocks))
                else:  # the JSON was written from the run's texts, and the ids from its numbers: the run's ids
                    texts, block_ids = list(part.texts), None
                held = fast.run_blocks_hold(
                    _convert(part.blocks[:1], _BLOCKS),
                    texts,
                    block_ids,
                    self.ids,
                    self.runs,
                    bounds=self.bounds,
                    ids=ids,
                    rows=run.rows[lo:hi],
                    lines=None if run.lines is None else (run.lines[0][lo:hi], run.lines[1][lo:hi]),
                )
            if not held:
                return False
        return True

    def _rows_hold(self, chunk: list[Any], types: list[str]) -> bool:
        return fast.rows_hold(_convert(chunk, _ROWS), types, self.known)


@dataclasses.dataclass(frozen=True, slots=True)
class _Part:
    """A stretch of a chunk of blocks: plain dicts (``run`` None), or blocks made from ``run``, of ``ids``."""

    run: RowRun | None
    blocks: list[Any]  # a run's: all its blocks, or only the first where ``json`` was made without them
    ids: RunIdList | None = None  # a run's: its blocks' ids (its prefix and their numbers)
    at: int = 0  # the run's index of the first of ``blocks``
    texts: Sequence[str] = ()
    json: bytes | None = None  # a run's blocks' JSON (``row_runs.run_json``), when made from its values


def _dumps_block(blocks: list[Any]) -> bytes:
    """A list of blocks' JSON as ``_blocks`` writes a chunk of them."""
    return bytes(_dumps_at(blocks, _TOP, inner=True))


_GET_ID: Final = operator.itemgetter("id")
_GET_TEXT: Final = operator.itemgetter("text")


def _convert(value: Any, kind: Any) -> Any:
    """``value`` converted to ``kind`` (None: it is not of that type)."""
    try:
        return msgspec.convert(value, kind)
    except (msgspec.ValidationError, RecursionError):
        return None
