"""Row runs (``shared.artifact.row_runs``): the worker's builders keep row blocks compact, and the artifact's JSON,
its verdict and the builder's guarantees are those of the dicts."""

from __future__ import annotations

import contextlib
import tracemalloc
from array import array
from collections.abc import Callable
from typing import Any, cast

import orjson
import pytest

from extract_fn.workers import _text_floor
from shared.artifact import InvalidArtifact, check_artifact
from shared.artifact.built import dump_checked
from shared.artifact.row_runs import RowRun, RunIdList, RunIds, compact_rows, compacting, json_list_len, run_ids
from shared.artifact_builder import ArtifactBuilder, make_locator

SIZE = 10**6


def _builder() -> ArtifactBuilder:
    return ArtifactBuilder("csv", parser="t", parser_version="1", unit="rows")


def _tabular(b: ArtifactBuilder) -> None:
    """Plain blocks around two tables' row blocks: chunks, rows of nulls, lines, a sheet, a budget's cut."""
    b.add_block("heading", "Sheet", locator=make_locator(line_start=1, line_end=1))
    texts: list[str | None] = [f"a: {i} é" if i % 7 else None for i in range(3000)]
    for lo in range(0, 3000, 512):
        part = texts[lo : lo + 512]
        b.add_row_blocks(
            "t0",
            part,
            rows=range(lo + 2, lo + 2 + len(part)),
            first_index=lo,
            lines=[(r, r + 1) for r in range(lo + 2, lo + 2 + len(part))],
            section_path=["Sheet"],
        )
    b.add_table("t", [("a", "string")], [[str(i)] for i in range(3000)], id="t0")
    b.add_block("paragraph", "between", parent="rt0.1")
    b.add_row_blocks(
        "t1", ["b: 1", "b: 2", "b: 3"], rows=[4, 5, 9], first_index=0, sheet="S", fit=lambda blocks: len(blocks) - 1
    )
    b.add_table("u", [("b", "string")], [["1"], ["2"]], id="t1")
    b.add_row_blocks("t1", ["child"], rows=[3], parent="b0")  # a parent: kept as a dict
    b.coverage(total=1, extracted=1)


def _written(doc: dict[str, Any]) -> tuple[bytes, bool]:
    parts: list[bytes] = []
    held = dump_checked(doc, format="csv", original_size=SIZE, write=lambda p: parts.append(bytes(p)))
    return b"".join(parts), held


def test_a_compact_builder_writes_the_dicts_json_and_its_verdict() -> None:
    plain = _builder()
    _tabular(plain)
    expected = orjson.dumps(plain.build())
    assert compacting() is False
    with compact_rows():
        assert compacting() is True
        compact = _builder()
    assert compacting() is False
    _tabular(compact)  # the mode is the builder's, from when it was made
    assert len(compact.blocks) == len(plain.blocks)
    runs = {id(x) for x in compact.blocks if isinstance(x, RowRun)}
    assert len(runs) == 6 + 1  # one a call: six chunks of t0, one of t1
    assert [type(x) for x in compact.blocks].count(dict) == 3  # the heading, "between", the child row
    doc = compact.build()
    assert _text_floor(doc) == _text_floor(plain.build())
    written, held = _written(doc)
    assert written == expected
    assert held is True


def test_a_compact_builder_keeps_its_guarantees() -> None:
    with compact_rows():
        b = _builder()
    b.add_row_blocks("t0", ["a", "b"], rows=[2, 3], first_index=0)
    with pytest.raises(ValueError, match=r"'rt0\.1' is empty or not unique"):
        b.add_block("paragraph", "x", id="rt0.1")
    with pytest.raises(ValueError, match="not unique"):
        b.add_row_blocks("t0", ["c"], rows=[4], first_index=1)
    with pytest.raises(ValueError, match="not unique"):
        b.add_blocks([("rt0.0", "paragraph", "x", None, [], None, [], None)])
    b.add_block("paragraph", "y", id="rt0.05")  # not a number a run writes
    with pytest.raises(ValueError, match=r"'rt0\.1' is not unique"):  # a parent: dicts, against the run's ids
        b.add_row_blocks("t0", ["c"], rows=[4], first_index=1, parent="rt0.0")
    b.add_block("paragraph", "z", id="rt0.2")
    with pytest.raises(ValueError, match=r"'rt0\.2' is not unique"):
        b.add_row_blocks("t0", ["c", "d"], rows=[4, 5], first_index=2)
    b.add_key_block("paragraph", "k = 1", 1, 1, "k", "rt0.0", [], ["k"], 1, "integer")
    with pytest.raises(ValueError, match="not an earlier block"):
        b.add_block("paragraph", "w", parent="rt0.9")
    b.add_table("t", [("a", "string")], [["a"], ["b"]], id="t0")
    b.coverage(total=1, extracted=1)
    written, held = _written(b.build())
    assert held is True
    check_artifact(written, format="csv", original_size=SIZE)


@pytest.mark.parametrize(
    "tamper",
    [
        pytest.param(lambda blocks: blocks.append({**_dict_of(blocks, 0), "id": "rt0.1"}), id="a copy after the run"),
        pytest.param(lambda blocks: blocks.insert(0, {**_dict_of(blocks, 1), "id": "rt0.1"}), id="a copy before it"),
        pytest.param(lambda blocks: blocks.insert(1, {**_dict_of(blocks, 1), "id": "rt0.1"}), id="a copy in its chunk"),
        pytest.param(lambda blocks: blocks.append({**_dict_of(blocks, 0), "id": "x", "parent": "rt0.99"}), id="parent"),
    ],
)
def test_the_one_pass_sees_a_run_id_used_twice(tamper: Callable[[list[Any]], None]) -> None:
    """Blocks changed behind the builder's back: the check of the objects says no, as the bytes' check does."""
    with compact_rows():
        b = _builder()
    b.add_block("paragraph", "p")
    b.add_row_blocks("t0", ["a", "b", "c"], rows=[2, 3, 4], first_index=0)
    b.add_table("t", [("a", "string")], [["a"], ["b"], ["c"]], id="t0")
    b.coverage(total=1, extracted=1)
    doc = b.build()
    tamper(doc["blocks"])
    written, held = _written(doc)
    assert held is False
    with pytest.raises(InvalidArtifact):
        check_artifact(written, format="csv", original_size=SIZE)


def _deep(levels: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(levels - 1):
        value = [value]
    return value


def _set_lines(run: RowRun, starts: list[int], ends: list[int]) -> None:
    run.lines = (array("q", starts), array("q", ends))


@pytest.mark.parametrize(
    ("tamper", "valid"),
    [
        pytest.param(lambda run: None, True, id="untouched"),
        pytest.param(lambda run: setattr(run, "rows", [2, 3, 4, 5, 2**62]), True, id="a row far on (rows: no bound)"),
        pytest.param(lambda run: run.texts.__setitem__(3, 5), False, id="a text that is a number"),
        pytest.param(lambda run: setattr(run, "rows", [2, 3, -1, 5, 6]), False, id="a row number below its unused 0"),
        pytest.param(lambda run: setattr(run, "rows", [2, 3, True, 5, 6]), False, id="a row number that is a bool"),
        pytest.param(lambda run: _set_lines(run, [1, 2, 9, 4, 5], [1, 2, 3, 4, 5]), False, id="a line pair backwards"),
        pytest.param(lambda run: _set_lines(run, [1, 2, 3, 4, 0], [1, 2, 3, 4, 5]), False, id="a line start alone 0"),
        pytest.param(lambda run: _set_lines(run, [1, 2, 3, 4, 5], [1, 2, 3, 4, SIZE + 2]), False, id="a line past"),
        pytest.param(lambda run: run.path.append(7), False, id="a section path entry that is a number"),
        pytest.param(lambda run: run.keys.append("k" * 1025), False, id="a key past its length"),
        pytest.param(lambda run: run.attrs.update(x=_deep(40)), False, id="attrs nested too deep"),
        pytest.param(lambda run: run.head.update(sheet=3), False, id="a locator head value of the wrong type"),
        pytest.param(lambda run: run.head.update(page_start=5, page_end=2), False, id="a locator head pair backwards"),
    ],
)
def test_the_one_pass_tests_every_value_a_run_makes(tamper: Callable[[RowRun], None], valid: bool) -> None:
    """A run's blocks are tested by column and through their first block (they share all else): a value changed
    behind the builder's back in any part of the run gets the verdict the bytes' check gives."""
    with compact_rows():
        b = _builder()
    b.add_block("paragraph", "p")
    b.add_row_blocks(
        "t0",
        [f"a: {i}" for i in range(5)],
        rows=[2, 3, 4, 5, 6],
        first_index=0,
        lines=[(r - 1, r - 1) for r in range(2, 7)],
        sheet="S",
        section_path=["S"],
    )
    b.add_table("t", [("a", "string")], [[str(i)] for i in range(5)], id="t0")
    b.coverage(total=1, extracted=1)
    doc = b.build()
    run = doc["blocks"][1]
    assert isinstance(run, RowRun)
    run.texts = list(cast("list[str]", run.texts))
    tamper(run)
    written, held = _written(doc)
    if valid:
        check_artifact(written, format="csv", original_size=SIZE)
    else:
        with pytest.raises(InvalidArtifact):
            check_artifact(written, format="csv", original_size=SIZE)
    assert held is valid


def _dict_of(blocks: list[Any], at: int) -> dict[str, Any]:
    item = blocks[at]
    return dict(item) if isinstance(item, dict) else item.blocks(0, 1, ["rt0.0"])[0]


def test_a_run_whose_slots_were_moved_is_refused_as_orjson_refuses_it() -> None:
    with compact_rows():
        b = _builder()
    b.add_row_blocks("t0", ["a", "b", "c"], rows=[2, 3, 4], first_index=0)
    b.add_block("paragraph", "p")
    b.add_table("t", [("a", "string")], [["a"], ["b"], ["c"]], id="t0")
    doc = b.build()
    doc["blocks"].append(doc["blocks"][0])  # one slot more than the run's blocks
    with pytest.raises(orjson.JSONEncodeError):
        _written(doc)


def test_a_run_holds_a_fraction_of_the_dicts_memory() -> None:
    """What the row blocks of 20,000 rows hold once added (tracemalloc: bytes, not time)."""

    def held(compact: bool) -> int:
        texts = [f"a: {i} | b: x" for i in range(20_000)]
        tracemalloc.start()
        try:
            if compact:
                with compact_rows():
                    b = _builder()
            else:
                b = _builder()
            before = tracemalloc.get_traced_memory()[0]
            for lo in range(0, 20_000, 512):
                b.add_row_blocks(
                    "t0",
                    texts[lo : lo + 512],
                    rows=range(lo + 1, lo + 513)[: len(texts[lo : lo + 512])],
                    first_index=lo,
                    fit=len,
                )
            return tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()

    assert held(True) * 4 < held(False)


def test_run_ids_are_spans_of_numbers_by_prefix() -> None:
    ids = RunIds()
    assert not ids
    assert ids.add("rt0.", range(0, 512))
    assert ids.add("rt0.", [512, 513, 600])  # continues the last span, then a gap
    assert ids
    for present in ("rt0.0", "rt0.511", "rt0.513", "rt0.600"):
        assert present in ids
    for absent in ("rt0.514", "rt0.601", "rt0.05", "rt0.-1", "rt1.0", "rt0.", "0", "rt0.1x", 5, None):
        assert absent not in ids
    assert not ids.fits("rt0.", [599, 600])
    assert not ids.add("rt0.", range(100, 101))
    assert ids.fits("rt0.", [514, 599])
    assert ids.add("rt0.", [514, 599])  # between two spans
    assert "rt0.599" in ids
    assert "rt0.598" not in ids
    assert not ids.fits("rt0.", [3, 2])
    assert not ids.fits("rt0.", [-1])
    assert not ids.fits("rt0.", [True])
    assert ids.meets(["x", "rt0.7"])
    assert not ids.meets(["x", "rt0.700"])
    with pytest.raises(ValueError, match="prefix"):
        RowRun(prefix="r1", numbers=[1], texts=["a"], rows=[1], lines=None, head={}, path=[], keys=[], attrs={})


_PREFIXES = ["rt0.", 'r"é\\.', "r\x01.", "b", "r😀x", "r\u2028."]


@pytest.mark.parametrize("seed", range(8))
def test_a_run_id_list_reads_measures_and_meets_as_its_strings(seed: int) -> None:
    """A run's ids kept as numbers: read, sliced and measured as the strings, and ``meets`` answers as the strings'
    set test does both ways it decides (other ids fewer: each parsed; more: the strings made), against near misses
    (a leading zero, another prefix, a number in a gap or past the end, a suffix, a non-ASCII digit, not a str)."""
    import random

    rnd = random.Random(seed)
    for _ in range(150):
        prefix = rnd.choice(_PREFIXES)
        start = rnd.randint(0, 10 ** rnd.randint(0, 12))
        n = rnd.randint(0, 40)
        numbers = (
            range(start, start + n) if rnd.random() < 0.5 else sorted(rnd.sample(range(start, start + 3 * n + 1), n))
        )
        ids = RunIdList(prefix, numbers)
        strings = run_ids(prefix, numbers)
        assert len(ids) == n
        assert list(ids) == strings
        assert ids == strings
        assert ids.json_len() == json_list_len(ids) == len(orjson.dumps(strings))
        lo, hi = sorted(rnd.choices(range(n + 1), k=2))
        assert list(ids[lo:hi]) == strings[lo:hi]
        assert ids[lo:hi].json_len() == len(orjson.dumps(strings[lo:hi]))
        if n:
            assert (ids[0], ids[-1]) == (strings[0], strings[-1])
        misses: list[Any] = [f"{prefix}{start + 3 * n + 1}", f"{prefix}{start - 1}" if start else "x", 7, None]
        for k in list(numbers)[:4]:
            misses += [f"{prefix}0{k}", f"{prefix}{k}x", f"x{prefix}{k}", f"{prefix[:-1]}{k}", f"{prefix}{k}\u0661"]
        misses += [f"{prefix}{k}" for k in range(start, start + 3 * n + 1) if k not in set(numbers)][:5]
        for _ in range(4):
            size = rnd.choice([0, 1, max(0, n - 1), n, n + 1, 2 * n + 5])
            hits = rnd.sample(strings, min(len(strings), rnd.choice([0, 0, 1, 2])))
            others = set(rnd.sample(misses, min(len(misses), size))) | set(hits)
            assert ids.meets(others) is (not others.isdisjoint(strings)), (prefix, numbers, others)
    with pytest.raises(ValueError, match="prefix"):
        RunIdList("r1", [1])


def test_a_long_run_is_tested_against_few_other_ids_by_number() -> None:
    """A run longer than the plain ids before it (their ids parsed, not its strings made): the builder refuses a
    plain id it would write, and the pass sees one put in behind the builder's back."""
    with compact_rows():
        b = _builder()
    b.add_block("paragraph", "p", id="rt0.600")
    b.add_block("paragraph", "q", id="rt0.0601")  # not a number a run writes
    with pytest.raises(ValueError, match=r"'rt0\.600' is not unique"):
        b.add_row_blocks("t0", [f"r{i}" for i in range(1000)], rows=range(2, 1002), first_index=0)
    b.add_row_blocks("t0", [f"r{i}" for i in range(1000)], rows=range(2, 1002), first_index=601)
    b.add_table("t", [("a", "string")], [["a"]] * 1601, id="t0")
    b.coverage(total=1, extracted=1)
    doc = b.build()
    assert _written(doc)[1] is True
    doc["blocks"].insert(1, {"id": "rt0.1600", "type": "paragraph", "text": "x", "section_path": [], "locator": {}})
    written, held = _written(doc)
    assert held is False
    with pytest.raises(InvalidArtifact):
        check_artifact(written, format="csv", original_size=SIZE)


def test_a_run_whose_texts_can_be_made_again_holds_none() -> None:
    """``remake_texts``: a compact run keeps no texts when every row has one, and makes them again (cleaned as the
    builder cleans them) when written; the bytes are the same. One row without a text: the run keeps its texts."""
    rows = [[f"v{i}", "é\ud800" if i == 3 else "x"] for i in range(40)]

    def texts_of(part: list[list[str]]) -> list[str]:
        return [f"a: {a} | b: {b}" for a, b in part]

    def build(compact: bool, *, gap: bool = False) -> tuple[ArtifactBuilder, dict[str, Any]]:
        if compact:
            with compact_rows():
                b = _builder()
        else:
            b = _builder()
        texts: list[str | None] = list(texts_of(rows))
        if gap:
            texts[5] = None
        b.add_row_blocks(
            "t0", texts, rows=range(2, 42), first_index=0, remake_texts=lambda lo, hi: texts_of(rows[lo:hi])
        )
        b.add_table("t", [("a", "string"), ("b", "string")], [list(r) for r in rows], id="t0")
        return b, b.build()

    _, plain = build(compact=False)
    expected = orjson.dumps(plain)
    for gap in (False, True):
        b, doc = build(compact=True, gap=gap)
        run = b.blocks[0]
        assert isinstance(run, RowRun)
        assert (run.texts is None) is not gap
        written, held = _written(doc)
        assert held is True
        if not gap:
            assert written == expected
        else:
            assert written == orjson.dumps(build(compact=False, gap=True)[1])


def test_remade_texts_that_differ_in_number_are_refused() -> None:
    with compact_rows():
        b = _builder()
    b.add_row_blocks("t0", ["a: 1", "a: 2"], rows=[2, 3], first_index=0, remake_texts=lambda lo, hi: ["a: 1"])
    b.add_table("t", [("a", "string")], [["1"], ["2"]], id="t0")
    with pytest.raises(ValueError, match="remake_texts gave 1 texts"):
        _written(b.build())


_JSON_CHARS = ["a", "é", '"', "\\", "\n", "\x01", "€", "😀", " ", "\u2028", "<", "\ud800"]


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("compact", [False, True])
def test_fit_is_offered_the_blocks_json_length_without_their_dicts(seed: int, compact: bool) -> None:
    """What ``fit`` is offered measures as the JSON of the blocks it stands for (texts with escapes, non-ASCII and
    lone surrogates, rows of nulls, numbers of every width, a line pair, a page or a sheet, a parent, a cut section
    path); a run's measure makes no dict, and the dicts it reads later are the blocks appended."""
    import random

    from shared.artifact import row_runs

    rnd = random.Random(seed)
    made: list[int] = []
    real = row_runs.row_block_dicts

    def counting(*args: Any, **kwargs: Any) -> list[dict[str, Any]]:
        made.append(len(args[0]))
        return real(*args, **kwargs)

    for _ in range(20):
        n = rnd.randint(1, 40)
        texts = [
            None if rnd.random() < 0.1 else "".join(rnd.choice(_JSON_CHARS) for _ in range(rnd.randint(1, 12)))
            for _ in range(n)
        ]
        first = rnd.randint(0, 10 ** rnd.randint(0, 15))
        rows = sorted(rnd.sample(range(1, 10 ** rnd.randint(2, 18)), n))
        lines = None if rnd.random() < 0.5 else [(r, r + rnd.randint(0, 99)) for r in rows]
        where = rnd.choice([{}, {"page": 3}, {"sheet": 'Sh"eé\ud800'}])
        parent = rnd.choice([None, "b0"])
        path = rnd.choice([[], ["a"], ["é", '"x'], ["s"] * 70])
        table_id = rnd.choice(["t0", 't"é\\', "t\x01😀"])  # ids whose prefix JSON escapes
        seen: list[tuple[int, list[dict[str, Any] | None]]] = []

        def fit(
            offered: Any, parent: str | None = parent, seen: list[tuple[int, list[dict[str, Any] | None]]] = seen
        ) -> int:
            made.clear()
            size = offered.json_len()
            assert sum(made) <= 1 or not compact or parent is not None  # a run's measure: one template, no row's
            seen.append((size, list(offered)))
            return len(offered)

        with compact_rows() if compact else contextlib.nullcontext():
            b = _builder()
            b.add_block("heading", "h")
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(row_runs, "row_block_dicts", counting)  # every row block is made through it
            b.add_row_blocks(
                table_id,
                texts,
                rows=rows,
                first_index=first,
                lines=lines,
                parent=parent,
                section_path=path,
                fit=fit,
                **where,
            )
        size, offered = seen[0]
        blocks = [x for x in offered if x is not None]
        assert [x is None for x in offered] == [not t for t in texts]
        assert size == len(orjson.dumps(blocks))
        b.add_table("t", [("a", "string")], [["x"]] * (first + n) if first + n < 100 else [["x"]], id=table_id)
        b.coverage(total=1, extracted=1)
        written, _ = _written(b.build())
        assert orjson.loads(written)["blocks"][1:] == orjson.loads(orjson.dumps(blocks))  # the blocks appended


_PLAIN_CHARS = ["a", "é", "€", "😀", " ", "\u2028", "<", "|", ":", "7"]


def _run_json_case(seed: int, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Three random runs written by the pass, compact, against the dicts' bytes and verdict; whether each run's
    JSON was made from its values."""
    import random

    from shared.artifact import built, row_runs

    rnd = random.Random(seed)
    taken: list[bool] = []
    real = row_runs.run_json

    def watched(*args: Any, **kwargs: Any) -> bytes | None:
        out = real(*args, **kwargs)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(built, "run_json", watched)
    builders = []
    for compact in (False, True):
        rnd.seed(seed)
        with compact_rows() if compact else contextlib.nullcontext():
            b = _builder()
        b.add_block("heading", "h")
        first = 0
        for t in range(3):
            chars = _PLAIN_CHARS if rnd.random() < 0.7 else _JSON_CHARS
            n = rnd.randint(1, 700)
            texts = ["".join(rnd.choice(chars) for _ in range(rnd.randint(1, 30))) for _ in range(n)]
            rows = range(first + 2, first + 2 + n) if rnd.random() < 0.5 else sorted(rnd.sample(range(2, 10**5), n))
            lines = None if rnd.random() < 0.5 else [(r, r + rnd.randint(0, 3)) for r in rows]
            where = rnd.choice([{}, {"page": 3}, {"sheet": 'Sh"eé'}, {"sheet": "\x01"}])
            path = rnd.choice([[], ["a"], ["é", '"x'], ["\x02"], ["\x03", "\x04"]])
            b.add_row_blocks(f"t{t}", texts, rows=rows, first_index=0, lines=lines, section_path=path, **where)
            b.add_table(f"t{t}", [("a", "string")], [["x"]], id=f"t{t}")
            first += n
        b.coverage(total=1, extracted=1)
        builders.append(b)
    plain, compact_b = builders
    plain_doc = plain.build()
    expected = orjson.dumps(plain_doc)
    written, held = _written(compact_b.build())
    assert written == expected
    assert held is _written(plain_doc)[1]
    check_artifact(written, format="csv", original_size=SIZE)  # a valid artifact: the verdict is a yes
    assert held is True
    assert taken  # the runs went through run_json
    return taken


@pytest.mark.parametrize("seed", range(16))
def test_a_runs_json_made_from_its_values_is_its_dicts_json(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """The pass writes a run's blocks from its values (``row_runs.run_json``) where no text needs an escape, and
    through their dicts where one does or a shared value holds a sentinel: either way the bytes are the dicts'
    ``orjson.dumps`` and the verdict theirs."""
    _run_json_case(seed, monkeypatch)


def test_both_ways_of_writing_a_run_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    taken = [t for seed in range(16) for t in _run_json_case(seed, monkeypatch)]
    assert True in taken
    assert False in taken
