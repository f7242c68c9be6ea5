"""Row blocks: the key-sharing dicts a table's rows become, and the compact runs the worker keeps them as.

A table of a million rows makes a million row blocks. As dicts they cost about 370 bytes a row on top of their
text (the block and its locator, the id string, the row numbers): 371 MB of big.parquet's 752 MB when ``extract``
returns. In the worker nothing reads those dicts but the serializer, so there ``ArtifactBuilder.add_row_blocks``
keeps each call's rows as one ``RowRun`` (the texts, the row numbers, the few values all its blocks share) and puts
that one object in ``builder.blocks`` once per block it stands for: ``len(builder.blocks)``, positions and the ``b<n>``
ids of later blocks stay what they are. ``shared.artifact.built.dump_checked`` makes a run's dicts a chunk at a time
(``RowRun.blocks``, the same function the builder makes them with anywhere else), tests them and writes them, and
keeps the run's ids as number spans (``RunIds``) rather than strings. Only the worker asks for runs
(``compact_rows``); everywhere else ``builder.blocks`` holds the dicts themselves.

A run's ids are ``prefix + str(k)`` for strictly increasing ``k >= 0`` and a prefix that does not end in a digit
(``r<table id>.``): such an id names its (prefix, number) pair alone (its number is its longest run of trailing
digits, written without a leading zero), so two runs' ids meet only where they share a prefix and a number, and a
plain id meets a run's only if it parses to one of the run's pairs.
"""

from __future__ import annotations

import bisect
import contextlib
import contextvars
import operator
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Final, cast, overload

import orjson

# -- key-sharing dicts ---------------------------------------------------------------------------------------------
# Row blocks and their locators are key-sharing dicts, not dict literals: all of a table's have the same keys in the
# same order. A literal holds its own keys table (a 2-key locator 184 bytes, a 7-key block 272); dicts that share one
# keys table (PEP 412's split tables) hold only their values: about 216 MB less for a million rows. The one way Python
# makes such a dict is an instance's ``__dict__``; ``dict.copy`` of one is another that shares its keys (CPython
# copies a split table as a split table), so each call makes one template (an instance's ``__dict__`` with every key
# set, in order) and copies it per row, setting only the values that differ: a C call and two or three stores a row
# instead of an instance and an attribute store per key. They are plain ``dict`` objects (``type(d) is dict``):
# orjson, msgspec and every reader see the same keys, values and order; one that later gains or loses a key becomes
# an ordinary dict.


class _RowLocator:
    """Its instances' ``__dict__`` are the templates of row locators ``{row_start, row_end}``."""


class _RowBlock:
    """Its instances' ``__dict__`` are the templates of row blocks."""


class _ChildRowBlock:
    """Its instances' ``__dict__`` are the templates of row blocks with a parent."""


_SETTLING: Final = 40
_SETTLED: set[type] = set()


def _template(cls: type, items: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    """A key-sharing dict of ``items`` (in order): the ``__dict__`` of an instance of ``cls`` given them.

    A class's first instances are given room for its keys table's full size (30 values, 336 bytes a dict), and so
    are copies of their dicts; each instance made leaves the next less room, down to the keys set. So a class's first
    template is made after ``_SETTLING`` throwaway ones (a few microseconds, once per class)."""
    if cls not in _SETTLED:
        for _ in range(_SETTLING):
            _template_of(cls, items)
        _SETTLED.add(cls)
    return _template_of(cls, items)


def _template_of(cls: type, items: Sequence[tuple[str, Any]]) -> dict[str, Any]:
    o = cls()
    for k, v in items:
        setattr(o, k, v)
    return cast("dict[str, Any]", o.__dict__)


_LOCATOR_CLASSES: dict[tuple[tuple[str, ...], bool], type] = {}


def _locator_class(head: tuple[str, ...], with_lines: bool) -> type:
    """One class per locator layout (its instances share one keys table only when they set the same keys)."""
    key = (head, with_lines)
    cls = _LOCATOR_CLASSES.get(key)
    if cls is None:
        cls = _LOCATOR_CLASSES[key] = type("_RowLocatorWith", (), {"__doc__": f"{head} {with_lines}"})
    return cls


def row_locators(
    rows: Sequence[int], lines: Iterable[tuple[int, int]] | None, head: dict[str, Any]
) -> list[dict[str, Any]]:
    """``{line_start, line_end, **head, row_start, row_end}`` per row (line pair only with ``lines``)."""
    out: list[dict[str, Any]] = []
    append = out.append
    cls = _RowLocator if not head and lines is None else _locator_class(tuple(head), lines is not None)
    pair = (("line_start", 0), ("line_end", 0)) if lines is not None else ()
    copy = _template(cls, [*pair, *head.items(), ("row_start", 0), ("row_end", 0)]).copy
    if lines is None:
        for r in rows:
            d = copy()
            d["row_start"] = r
            d["row_end"] = r
            append(d)
    else:
        for (s, e), r in zip(lines, rows, strict=True):
            d = copy()
            d["line_start"] = s
            d["line_end"] = e
            d["row_start"] = r
            d["row_end"] = r
            append(d)
    return out


def row_block_dicts(
    ids: Sequence[str],
    texts: Sequence[str],
    locs: list[dict[str, Any]],
    *,
    parent: str | None,
    path: list[str],
    keys: list[str],
    attrs: dict[str, Any],
) -> list[dict[str, Any]]:
    """The row blocks, in ``add_block``'s key order: id, type, text, [parent], section_path, locator, keys, attrs."""
    out: list[dict[str, Any]] = []
    append = out.append
    cls = _RowBlock if parent is None else _ChildRowBlock
    head = (("id", ""), ("type", "paragraph"), ("text", ""))
    tail = (("section_path", path), ("locator", None), ("keys", keys), ("attrs", attrs))
    copy = _template(cls, [*head, *([("parent", parent)] if parent is not None else []), *tail]).copy
    for i, t, loc in zip(ids, texts, locs, strict=True):
        d = copy()
        d["id"] = i
        d["text"] = t
        d["locator"] = loc
        append(d)
    return out


def row_blocks(
    ids: Sequence[str],
    texts: Sequence[str],
    rows: Sequence[int],
    lines: Iterable[tuple[int, int]] | None,
    head: dict[str, Any],
    *,
    parent: str | None,
    path: list[str],
    keys: list[str],
    attrs: dict[str, Any],
) -> list[dict[str, Any]]:
    """The row blocks of ``rows``: ``row_block_dicts`` of the locators ``row_locators`` makes of them, their line
    pairs and ``head``."""
    locs = row_locators(rows, lines, head)
    return row_block_dicts(ids, texts, locs, parent=parent, path=path, keys=keys, attrs=attrs)


def row_blocks_json_len(
    ids: Sequence[str],
    texts: Sequence[str],
    rows: Sequence[int],
    lines: Sequence[tuple[int, int]] | None,
    head: dict[str, Any],
    *,
    parent: str | None,
    path: list[str],
    keys: list[str],
    attrs: dict[str, Any],
) -> int:
    """``len(orjson.dumps(row_blocks(...)))`` of the same arguments, without making the dicts: one block's JSON (of
    an empty id and text and zero numbers) plus, by column, what each row's id, text and numbers add to it (each
    column's list serialized once: ``len(dumps(xs))`` is the items' lengths, their commas and the brackets). The
    rows and line pairs are ints (``add_row_blocks`` checked them)."""
    n = len(ids)
    if n == 0:
        return 2  # []
    one = row_blocks(
        [""], [""], [0], None if lines is None else [(0, 0)], head, parent=parent, path=path, keys=keys, attrs=attrs
    )
    base = len(orjson.dumps(one[0]))  # with "" twice (2 characters each) and 0 as each number (1 each)
    extra = (json_list_len(ids) - n - 1 - 2 * n) + (json_list_len(texts) - n - 1 - 2 * n)
    extra += 2 * (json_list_len(rows) - n - 1 - n)  # row_start and row_end
    if lines is not None:  # [s,e] a pair: its digits, 3 characters, and a comma between pairs
        extra += json_list_len(lines) - n - 1 - 3 * n - 2 * n
    return n * base + extra + n + 1  # the blocks, their commas and the list's brackets


def json_list_len(items: Sequence[Any]) -> int:
    """The length of a sequence's JSON array (a range or other sequence listed first: orjson writes lists, tuples;
    a ``RunIdList`` is measured from its numbers)."""
    if items.__class__ is RunIdList:
        return items.json_len()
    return len(orjson.dumps(items if items.__class__ in _JSON_SEQUENCES else list(items)))


_JSON_SEQUENCES: Final = frozenset({list, tuple})


def run_ids(prefix: str, numbers: Sequence[int]) -> list[str]:
    """A run's ids: ``prefix + str(k)`` for each number."""
    return [f"{prefix}{k}" for k in numbers]


class RunIdList(Sequence[str]):
    """A run's ids, ``run_ids(prefix, numbers)``, kept as the prefix and the numbers: the strings are made only when
    read (a row block's dict needs its id), while the checks that need not read them do not (a million rows' ids
    cost ~0.1 s to make, as much again to hash and measure). ``prefix`` is runnable (``runnable``) and ``numbers``
    are ints (the builder checked them), so an id names its (prefix, number) pair alone."""

    __slots__ = ("numbers", "prefix")

    def __init__(self, prefix: str, numbers: Sequence[int]) -> None:
        if not runnable(prefix):
            raise ValueError(f"run ids need a prefix that ends in no digit, not {prefix!r}")
        self.prefix, self.numbers = prefix, numbers

    def __len__(self) -> int:
        return len(self.numbers)

    @overload
    def __getitem__(self, i: int) -> str: ...
    @overload
    def __getitem__(self, i: slice) -> RunIdList: ...
    def __getitem__(self, i: int | slice) -> str | RunIdList:
        if isinstance(i, slice):
            return RunIdList(self.prefix, self.numbers[i])
        return f"{self.prefix}{self.numbers[i]}"

    def __iter__(self) -> Iterator[str]:
        return iter(run_ids(self.prefix, self.numbers))

    def __eq__(self, other: object) -> bool:
        if other.__class__ is RunIdList:
            return self.prefix == other.prefix and list(self.numbers) == list(other.numbers)
        return other.__class__ is list and run_ids(self.prefix, self.numbers) == other

    __hash__ = None  # type: ignore[assignment]  # a sequence compared by value, as a list is

    def json_len(self) -> int:
        """``json_list_len`` of the strings: each id's JSON is the prefix's (quotes and escapes included) with its
        number's digits before the closing quote, so the list's is the numbers' list's plus the prefix's per id."""
        return json_list_len(self.numbers) + len(self.numbers) * len(orjson.dumps(self.prefix))

    def meets(self, ids: AbstractSet[Any]) -> bool:
        """Whether any of these ids is in ``ids`` (other blocks' ids): by the strings where they are the fewer,
        else by parsing each of ``ids`` into its (prefix, number) pair (``_pair``) and looking its number up."""
        if len(self.numbers) <= len(ids):
            return not ids.isdisjoint(run_ids(self.prefix, self.numbers))
        prefix = self.prefix
        found = {pair[1] for pair in map(_pair, ids) if pair is not None and pair[0] == prefix}
        if not found:
            return False
        numbers = self.numbers
        if numbers.__class__ is range:
            return any(k in numbers for k in found)
        return not found.isdisjoint(numbers)


# -- compact runs ----------------------------------------------------------------------------------------------------

_FIRST: Final = operator.itemgetter(0)
_SECOND: Final = operator.itemgetter(1)
_COMPACT: contextvars.ContextVar[bool] = contextvars.ContextVar("compact_rows", default=False)


@contextlib.contextmanager
def compact_rows() -> Iterator[None]:
    """Builders made inside keep row blocks as ``RowRun`` s (the worker, around the module's ``extract``: only
    ``dump_checked`` reads what it returns)."""
    token = _COMPACT.set(True)
    try:
        yield
    finally:
        _COMPACT.reset(token)


def compacting() -> bool:
    """Whether a builder made now keeps row blocks as runs."""
    return _COMPACT.get()


class RowRun:
    """The row blocks of one ``add_row_blocks`` call, as the values they differ by and the ones they share.

    Block ``i`` is ``row_block_dicts``' block of id ``prefix + str(numbers[i])``, text ``texts[i]`` and the locator
    ``row_locators`` makes of ``rows[i]``, ``lines[i]`` and ``head``; no parent. Made by the builder (which checked
    every value as it checks a dict's) and never changed afterwards. The line pairs are kept as two arrays of
    machine integers (16 bytes a row, not a tuple and its two ints: about 100). Given ``remake`` (``remake(lo, hi)``
    is ``texts[lo:hi]`` made again, cleaned as the builder cleaned them: from the table's own rows), the run holds
    no texts, only their length (``text_chars``)."""

    __slots__ = (
        "attrs",
        "head",
        "keys",
        "lines",
        "numbers",
        "path",
        "prefix",
        "remake",
        "rows",
        "text_chars",
        "texts",
    )

    def __init__(
        self,
        *,
        prefix: str,
        numbers: Sequence[int],
        texts: Sequence[str],
        rows: Sequence[int],
        lines: Sequence[tuple[int, int]] | None,
        head: dict[str, Any],
        path: list[str],
        keys: list[str],
        attrs: dict[str, Any],
        remake: Callable[[int, int], Sequence[str]] | None = None,
    ) -> None:
        if not runnable(prefix) or not len(numbers) == len(texts) == len(rows):
            raise ValueError("a run's prefix ends in a digit or its parts differ in length")
        self.prefix, self.numbers, self.rows = prefix, numbers, rows
        self.texts: Sequence[str] | None = texts if remake is None else None
        self.remake = remake
        self.lines = None if lines is None else (array("q", map(_FIRST, lines)), array("q", map(_SECOND, lines)))
        if self.lines is not None and len(self.lines[0]) != len(texts):
            raise ValueError("a run's parts differ in length")
        self.head, self.path, self.keys, self.attrs = head, path, keys, attrs
        self.text_chars = sum(map(len, texts))

    def __len__(self) -> int:
        return len(self.numbers)

    def part_texts(self, lo: int, hi: int) -> Sequence[str]:
        """The texts of blocks ``lo..hi-1`` (kept, or made again)."""
        if self.texts is not None:
            return self.texts[lo:hi]
        return cast("Callable[[int, int], Sequence[str]]", self.remake)(lo, hi)

    def blocks(self, lo: int, hi: int, ids: Sequence[str], texts: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Blocks ``lo..hi-1`` of the run, given their ids (``run_ids(prefix, numbers[lo:hi])``) and, if made
        already, their texts (``part_texts(lo, hi)``, or the first of them)."""
        lines = zip(self.lines[0][lo:hi], self.lines[1][lo:hi], strict=True) if self.lines is not None else None
        texts = self.part_texts(lo, hi) if texts is None else texts[: hi - lo]
        return row_blocks(
            ids,
            texts,
            self.rows[lo:hi],
            lines,
            self.head,
            parent=None,
            path=self.path,
            keys=self.keys,
            attrs=self.attrs,
        )


# -- a run's JSON without its dicts -------------------------------------------------------------------------------
# A run's blocks differ only by id, text and row numbers (and line pair): their JSON is one block's, as orjson writes
# it, with those values put in. The block is written once with a sentinel string for each (a control character,
# which orjson writes as a \u escape), and cut at the sentinels; a block's JSON is then the pieces with its values
# between them: its id's digits, its text as it is where no character of it needs an escape (orjson's JSON of a
# str is '"' + the str + '"' exactly then), its row numbers' digits (an int's JSON is its str). Anything else (a
# text that needs an escape, a value not of those exact types, a sentinel met elsewhere in the block) is None:
# the caller makes the dicts and orjson writes them.
_SENTINEL_ID: Final = "\x01"
_SENTINEL_TEXT: Final = "\x02"
_SENTINEL_ROW: Final = "\x03"
_SENTINEL_LINES: Final = ("\x04", "\x05")
_SENTINELS: Final = re.compile(r'("\\u000[1-5]")')
_ORDER: Final = ['"\\u0001"', '"\\u0002"', '"\\u0003"', '"\\u0003"']
_ORDER_LINES: Final = ['"\\u0001"', '"\\u0002"', '"\\u0004"', '"\\u0005"', '"\\u0003"', '"\\u0003"']
_INT: Final = frozenset({int})
_STR_CLASSES: Final = frozenset({str})


def run_json(
    run: RowRun, lo: int, hi: int, numbers: Sequence[int], texts: Sequence[str], *, dumps: Callable[[Any], bytes]
) -> bytes | None:
    """Blocks ``lo..hi-1`` of ``run`` (``numbers``: their numbers, ``texts``: their texts) as ``dumps`` writes
    the list of their dicts, without the brackets (``dumps`` serializes a list holding one block as the caller
    serializes its chunk of blocks, at its depth, without the brackets); None where the run's JSON cannot be made so
    (see above)."""
    if not texts or set(map(type, texts)) != _STR_CLASSES or set(map(type, numbers)) != _INT:
        return None
    rows = run.rows[lo:hi]
    if rows.__class__ is not range and set(map(type, rows)) != _INT:
        return None
    joined = "".join(texts)
    try:
        plain = len(orjson.dumps(joined)) == (len(joined) if joined.isascii() else len(joined.encode())) + 2
    except (TypeError, UnicodeEncodeError):  # a lone surrogate: orjson refuses it, as the caller's dumps will
        return None
    prefix_json = orjson.dumps(run.prefix)
    if not plain or len(prefix_json) != len(run.prefix.encode()) + 2:
        return None
    lines = None if run.lines is None else [_SENTINEL_LINES]
    one = row_blocks(
        [_SENTINEL_ID],
        [_SENTINEL_TEXT],
        [_SENTINEL_ROW],  # type: ignore[list-item]  # a sentinel in the row numbers' place
        lines,  # type: ignore[arg-type]
        run.head,
        parent=None,
        path=run.path,
        keys=run.keys,
        attrs=run.attrs,
    )
    try:
        cut = _SENTINELS.split(dumps(one).decode())
    except TypeError:  # orjson refuses a shared value: the dicts' dumps raises it
        return None
    if cut[1::2] != (_ORDER if run.lines is None else _ORDER_LINES):
        return None
    p = cut[0::2]
    a, b, c = f'{p[0]}"{run.prefix}', f'"{p[1]}"', f'"{p[2]}'
    if run.lines is None:
        d, e = p[3], p[4]
        out = [f"{a}{k}{b}{t}{c}{r}{d}{r}{e}" for k, t, r in zip(numbers, texts, rows, strict=True)]
    else:
        d, e, f, g = p[3], p[4], p[5], p[6]
        starts, ends = run.lines[0][lo:hi], run.lines[1][lo:hi]
        out = [
            f"{a}{k}{b}{t}{c}{s}{d}{z}{e}{r}{f}{r}{g}"
            for k, t, s, z, r in zip(numbers, texts, starts, ends, rows, strict=True)
        ]
    return ",".join(out).encode()


def runnable(prefix: str) -> bool:
    """Whether ids ``prefix + str(k)`` name their (prefix, number) pair alone: a prefix that ends in no digit."""
    return bool(prefix) and not prefix[-1].isdigit()


_NUMBERED: Final = re.compile(r"(?<![0-9])(0|[1-9][0-9]*)\Z")


def _pair(block_id: Any) -> tuple[str, int] | None:
    """The (prefix, number) a run would give ``block_id`` (None: no run makes such an id)."""
    if block_id.__class__ is not str:
        return None
    m = _NUMBERED.search(block_id)
    if m is None or not runnable(prefix := block_id[: m.start()]):
        return None
    return prefix, int(m.group(1))


class RunIds:
    """The ids of runs, as spans of numbers by prefix (sorted, disjoint, half-open), never as strings."""

    def __init__(self) -> None:
        self._spans: dict[str, list[tuple[int, int]]] = {}

    def __bool__(self) -> bool:
        return bool(self._spans)

    def __contains__(self, block_id: object) -> bool:
        pair = _pair(block_id)
        if pair is None or (spans := self._spans.get(pair[0])) is None:
            return False
        k = pair[1]
        i = bisect.bisect_right(spans, (k, float("inf"))) - 1
        return i >= 0 and spans[i][0] <= k < spans[i][1]

    def meets(self, ids: Sequence[Any]) -> bool:
        """Whether any of ``ids`` is a run's."""
        return bool(self._spans) and any(map(self.__contains__, ids))

    def fits(self, prefix: str, numbers: Sequence[int]) -> bool:
        """Whether ``add`` would take these numbers (nothing is added)."""
        new = _spans_of(numbers)
        if new is None:
            return False
        spans = self._spans.get(prefix)
        if not spans or not new or spans[-1][1] <= new[0][0]:  # the usual case: after the prefix's earlier runs
            return True
        for lo, hi in new:
            i = bisect.bisect_left(spans, (lo, lo))
            if (i < len(spans) and spans[i][0] < hi) or (i > 0 and spans[i - 1][1] > lo):
                return False
        return True

    def add(self, prefix: str, numbers: Sequence[int]) -> bool:
        """Add a run's numbers (strictly increasing, 0 or more); False (nothing added) if ``fits`` says no."""
        if not self.fits(prefix, numbers):
            return False
        new = cast("list[tuple[int, int]]", _spans_of(numbers))
        spans = self._spans.setdefault(prefix, [])
        if spans and new and spans[-1][1] == new[0][0]:  # continues the last span (a table's next chunk of rows)
            spans[-1] = (spans[-1][0], new.pop(0)[1])
        if not spans or not new or spans[-1][1] <= new[0][0]:
            spans.extend(new)
        else:
            spans[:] = sorted([*spans, *new])
        return True


def _spans_of(numbers: Sequence[int]) -> list[tuple[int, int]] | None:
    """Strictly increasing integers 0 or more as spans of consecutive ones (None: they are not)."""
    if not numbers:
        return []
    if isinstance(numbers, range):
        if numbers.step != 1 or numbers.start < 0:
            return None
        return [(numbers.start, numbers.stop)]
    first, last = numbers[0], numbers[-1]
    if set(map(type, numbers)) != {int} or first < 0 or not all(map(operator.lt, numbers, numbers[1:])):
        return None
    if last - first + 1 == len(numbers):  # strictly increasing with no gap
        return [(first, last + 1)]
    spans: list[tuple[int, int]] = []
    lo = prev = first
    for k in numbers[1:]:
        if k != prev + 1:
            spans.append((lo, prev + 1))
            lo = k
        prev = k
    spans.append((lo, prev + 1))
    return spans
