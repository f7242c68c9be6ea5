"""shared.artifact_builder never produces an invalid artifact: adversarial inputs, checked by the shared validator.

A test named ``test_builder_bug_*`` documents the correct behaviour of a builder bug found while writing these (see
the report); it fails until the builder is fixed. Each accepts either fix: refusing the input with ValueError or
TypeError while building, or building an artifact that serializes and validates.
"""

from __future__ import annotations

import math
import tracemalloc
from collections.abc import Callable, Sequence
from typing import Any

import orjson
import pytest

from shared.artifact import Artifact, validate_artifact
from shared.artifact.row_runs import row_block_dicts, row_locators
from shared.artifact_builder import (
    ArtifactBuilder,
    clean_str,
    json_safe_number,
    line_char_locator,
    make_locator,
    serialize,
)
from shared.contract import (
    INT64_MAX,
    LOST_EXACT_KEYS,
    LOST_SECTION_PATH,
    MAX_COLUMNS,
    MAX_KEY_CHARS,
    MAX_KEYS,
    MAX_SECTION_CHARS,
    MAX_SECTION_ENTRIES,
    MAX_SHEET_NAME_CHARS,
)
from tests.built_verdict import assert_same_verdict, same_verdict_everywhere  # noqa: F401 (the fixture)

SIZE = 10**6  # the original's size the artifacts here are checked against
FFFD = "\ufffd"

# Every artifact validated here is also judged from its objects (shared.artifact.built): the same verdict and
# violations as check_artifact on its JSON (tests/built_verdict.py).
pytestmark = pytest.mark.usefixtures("same_verdict_everywhere")


def builder(fmt: str = "markdown", unit: str = "lines") -> ArtifactBuilder:
    return ArtifactBuilder(fmt, parser=f"loom-{fmt}", parser_version="1+test", unit=unit)


def check(b: ArtifactBuilder, size: int = SIZE) -> Artifact:
    """Serialize what the builder built and validate the bytes, as the extractor does before answering (and judge
    the built dict itself as the worker does: the same verdict)."""
    assert_same_verdict(b.build(), b.format, size)
    return validate_artifact(serialize(b.build()), format=b.format, original_size=size)


def never_invalid(build: Callable[[ArtifactBuilder], None], fmt: str = "markdown") -> None:
    """The builder's promise: it refuses the input while building, or what it builds serializes and validates."""
    b = builder(fmt)
    try:
        build(b)
    except (ValueError, TypeError):
        return  # refused, as a programming error in a format module
    check(b)


def nest(levels: int) -> dict[str, Any]:
    v: Any = 1
    for _ in range(levels - 1):
        v = {"a": v}
    return {"a": v}


# -- what a format module normally builds ------------------------------------------------------------------------


def test_a_plain_build_validates_and_is_complete() -> None:
    b = builder()
    h = b.add_block("heading", "# Intro", depth=1, locator=make_locator(line_start=1, char_start=0, char_end=7))
    b.add_block(
        "paragraph",
        "Hello",
        parent=h,
        section_path=["Intro"],
        keys=["intro-hello"],
        locator=make_locator(line_start=3, line_end=4, char_start=9, char_end=14),
    )
    b.add_block("code", "x = 1", parent=h, section_path=["Intro"], attrs={"language": "python"})
    b.coverage(total=4, extracted=4)
    art = check(b, size=20)
    assert art.coverage.complete is True
    assert [x.id for x in art.blocks] == ["b0", "b1", "b2"]
    assert art.blocks[1].locator.line_end == 4
    assert art.blocks[0].locator.line_end == 1  # a pair given by its start ends where it starts
    assert art.to_dict() == b.build()  # the builder sends only fields the contract names


def test_the_builder_s_locators_fit_a_small_original_exactly() -> None:
    text = "ab\ncd"  # 5 bytes, 2 lines
    b = builder("text")
    b.add_block("paragraph", text, locator=make_locator(line_start=1, line_end=2, char_start=0, char_end=len(text)))
    b.coverage(total=2, extracted=2)
    check(b, size=len(text.encode()))


# -- bounds: section paths and keys ------------------------------------------------------------------------------


def test_70_section_entries_keep_the_first_64_and_mark_it() -> None:
    b = builder()
    path = [f"s{i}" for i in range(70)]
    b.add_block("paragraph", "deep", section_path=path)
    b.coverage(total=1, extracted=1)
    art = check(b)
    block = art.blocks[0]
    assert block.section_path == path[:MAX_SECTION_ENTRIES]
    assert block.attrs == {"section_truncated": True}
    assert art.coverage.lost == [LOST_SECTION_PATH]
    assert art.coverage.complete is False


def test_600_char_section_entries_are_cut_to_500_and_marked() -> None:
    b = builder()
    b.add_block("paragraph", "long titles", section_path=["a" * 600, "short", "é" * 501])
    b.coverage(total=1, extracted=1)
    art = check(b)
    assert art.blocks[0].section_path == ["a" * MAX_SECTION_CHARS, "short", "é" * MAX_SECTION_CHARS]
    assert art.blocks[0].attrs["section_truncated"] is True
    assert art.coverage.lost == [LOST_SECTION_PATH]
    assert art.coverage.complete is False


def test_64_section_entries_of_500_chars_are_no_truncation() -> None:
    b = builder()
    path = ["x" * MAX_SECTION_CHARS] * MAX_SECTION_ENTRIES
    b.add_block("paragraph", "at the bound", section_path=path)
    b.coverage(total=1, extracted=1)
    art = check(b)
    assert art.blocks[0].section_path == path
    assert "section_truncated" not in art.blocks[0].attrs
    assert art.coverage.lost == []
    assert art.coverage.complete is True


def test_12000_keys_keep_the_first_10000_and_mark_it() -> None:
    b = builder()
    keys = [f"key-{i}" for i in range(12_000)]
    b.add_block("paragraph", "many keys", keys=keys)
    b.coverage(total=1, extracted=1)
    art = check(b)
    assert art.blocks[0].keys == keys[:MAX_KEYS]
    assert art.blocks[0].attrs == {"keys_truncated": True}
    assert art.coverage.lost == [LOST_EXACT_KEYS]
    assert art.coverage.complete is False


def test_exactly_10000_keys_with_repeats_are_no_truncation() -> None:
    b = builder()
    keys = [f"key-{i}" for i in range(MAX_KEYS)]
    b.add_block("paragraph", "at the bound", keys=keys + keys[:50])
    b.coverage(total=1, extracted=1)
    art = check(b)
    assert art.blocks[0].keys == keys
    assert art.coverage.complete is True


def test_a_2000_char_key_is_left_out_and_marked() -> None:
    b = builder()
    b.add_block("paragraph", "long key", keys=["short", "k" * 2000, "k" * MAX_KEY_CHARS])
    b.coverage(total=1, extracted=1)
    art = check(b)
    assert art.blocks[0].keys == ["short", "k" * MAX_KEY_CHARS]
    assert art.blocks[0].attrs["keys_truncated"] is True
    assert art.coverage.lost == [LOST_EXACT_KEYS]
    assert art.coverage.complete is False


def test_both_truncations_on_many_blocks_mark_the_artifact_once_each() -> None:
    b = builder()
    for i in range(3):
        b.add_block("paragraph", f"p{i}", section_path=["s"] * 65, keys=["k" * 1025], attrs={"n": i})
    b.coverage(total=3, extracted=3)
    art = check(b)
    assert art.coverage.lost == [LOST_SECTION_PATH, LOST_EXACT_KEYS]
    assert all(x.attrs == {"n": i, "section_truncated": True, "keys_truncated": True} for i, x in enumerate(art.blocks))


# -- strings that are not valid Unicode --------------------------------------------------------------------------


def test_lone_surrogates_everywhere_the_builder_cleans() -> None:
    bad = "a\ud800b\udfffc"
    b = builder("xlsx", unit="rows")
    b.warn(f"warning {bad}")
    b.fail(f"row {bad}", f"reason {bad}")
    b.add_block(
        "paragraph",
        bad,
        section_path=[bad],
        keys=[bad],
        locator=make_locator(row_start=2, key_path=bad, sheet=bad),
    )
    b.add_table(bad, [(bad, "string")], [["x"]], locator=make_locator(sheet=bad, row_start=1, row_end=2))
    b.coverage(total=2, extracted=1)
    art = check(b)  # valid: no lone surrogate is left anywhere (how many U+FFFD replace one: see the bug below)

    def cleaned(value: str) -> bool:
        return FFFD in value and value.startswith("a") and value.endswith("c") and value.isprintable()

    block = art.blocks[0]
    assert cleaned(block.text)
    assert cleaned(block.section_path[0])
    assert cleaned(block.keys[0])
    assert block.locator.key_path is not None
    assert cleaned(block.locator.key_path)
    assert block.locator.sheet is not None
    assert cleaned(block.locator.sheet)
    assert FFFD in art.warnings[0]
    assert FFFD in art.coverage.failed[0].unit
    assert FFFD in art.coverage.failed[0].reason
    assert art.tables is not None
    assert cleaned(art.tables[0].name)
    assert cleaned(art.tables[0].columns[0].name)


def test_clean_str_keeps_valid_text() -> None:
    for s in ("", "plain", "東京 😀 naïve", "\x00\t"):
        assert clean_str(s) == s


# -- tables ------------------------------------------------------------------------------------------------------


def test_a_typed_table_validates() -> None:
    b = builder("xlsx", unit="rows")
    cols = [
        ("name", "string"),
        ("amount", "number"),
        ("ok", "bool"),
        ("day", "date"),
        ("at", "datetime"),
        ("clock", "time"),
        ("took", "duration"),
        ("any", "mixed"),
    ]
    rows = [
        ["a", 1, True, "2024-02-29", "2024-02-29T10:00:00", "10:00:00", "36:00:00", "x"],
        ["b", "12.345", False, None, "2024-03-01", "23:59:59.5", "-0:30:00", 2.5],
        [{"error": "#DIV/0!"}, json_safe_number(2**70), None, None, None, None, None, None],
    ]
    tid = b.add_table("Sheet1", cols, rows, locator=make_locator(sheet="Sheet1", row_start=1, row_end=4))
    b.add_block("paragraph", "a | 1", attrs={"table_id": tid}, locator=make_locator(sheet="Sheet1", row_start=2))
    b.coverage(total=3, extracted=3)
    art = check(b)
    assert art.tables is not None
    assert art.tables[0].rows[2][1] == str(2**70)
    assert [c.type for c in art.tables[0].columns] == [t for _, t in cols]
    assert art.blocks[0].attrs == {"table_id": "t0"}


def test_a_parquet_table_has_no_header_rows() -> None:
    b = builder("parquet", unit="rows")
    b.add_table("data.parquet", [("x", "number")], [[1], [2]], header_rows=0)
    b.coverage(total=2, extracted=2)
    art = check(b)
    assert art.tables is not None
    assert art.tables[0].header_rows == 0


def test_column_names_are_cut_to_500() -> None:
    b = builder("csv", unit="rows")
    b.add_table("f.csv", [("c" * 700, "string")], [["x"]])
    art = check(b)
    assert art.tables is not None
    assert art.tables[0].columns[0].name == "c" * 500


@pytest.mark.parametrize(
    ("columns", "rows", "kw"),
    [
        pytest.param([("a", "integer")], [], {}, id="unknown column type"),
        pytest.param([("a", "string")], [["x", "y"]], {}, id="row too long"),
        pytest.param([("a", "string"), ("b", "string")], [["x"]], {}, id="row too short"),
    ],
)
def test_add_table_refuses(columns: list[tuple[str, str]], rows: list[list[Any]], kw: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        builder("csv").add_table("t", columns, rows, **kw)


def test_a_table_id_is_not_repeated() -> None:
    b = builder("xlsx")
    b.add_table("a", [("x", "string")], [], id="t")
    with pytest.raises(ValueError):
        b.add_table("b", [("x", "string")], [], id="t")


# -- blocks and coverage -----------------------------------------------------------------------------------------


def test_add_block_refuses() -> None:
    b = builder()
    b.add_block("paragraph", "p", id="p1")
    with pytest.raises(ValueError):
        b.add_block("table", "x")
    with pytest.raises(ValueError):
        b.add_block("paragraph", "x", id="p1")
    with pytest.raises(ValueError):
        b.add_block("paragraph", "x", id="")
    with pytest.raises(ValueError):
        b.add_block("paragraph", "x", parent="later")
    with pytest.raises(ValueError):
        b.add_block("paragraph", "x", id="self", parent="self")
    with pytest.raises(ValueError):
        b.add_block("heading", "x", depth=-1)
    check(b)  # what it accepted is still valid


def test_coverage_arithmetic_and_completeness() -> None:
    with pytest.raises(ValueError):
        builder().coverage(total=1, extracted=2)
    with pytest.raises(ValueError):
        builder().coverage(total=1, extracted=-1)
    with pytest.raises(ValueError):
        ArtifactBuilder("markdown", parser="", parser_version="1", unit="lines")
    b = builder("pdf", unit="pages")
    b.coverage(total=3, extracted=2)
    b.fail("page 3", "corrupt stream")
    b.lose("ocr")
    b.lose("ocr")
    art = check(b)
    assert art.coverage.complete is False
    assert art.coverage.lost == ["ocr"]
    assert art.coverage.failed[0].reason == "corrupt stream"


# -- make_locator ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kw",
    [
        {"line_start": 2, "line_end": 1},
        {"line_start": 0, "line_end": 3},
        {"line_start": -1},
        {"line_end": 4},
        {"char_start": -1, "char_end": 3},
        {"char_start": 5, "char_end": 4},
        {"char_start": -2},
        {"char_end": 9},
        {"page_start": 0, "page_end": 1},
        {"page_start": 3, "page_end": 2},
        {"page_end": 1},
        {"row_start": 1, "row_end": 0},
        {"row_start": -5},
        {"row_end": 2},
    ],
    ids=repr,
)
def test_make_locator_refuses_an_impossible_pair(kw: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        make_locator(**kw)


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        ({}, {}),
        ({"line_start": 0}, {"line_start": 0, "line_end": 0}),
        ({"line_start": 5}, {"line_start": 5, "line_end": 5}),
        ({"char_start": -1}, {"char_start": -1, "char_end": -1}),
        ({"char_start": 0, "char_end": 0}, {"char_start": 0, "char_end": 0}),
        ({"page_start": 2, "page_end": 9}, {"page_start": 2, "page_end": 9}),
        ({"row_start": 0, "row_end": 0}, {"row_start": 0, "row_end": 0}),
        ({"key_path": "a.b"}, {"key_path": "a.b"}),
        ({"sheet": "s" * 600}, {"sheet": "s" * 500}),
    ],
    ids=repr,
)
def test_make_locator_accepts(kw: dict[str, Any], expected: dict[str, Any]) -> None:
    loc = make_locator(**kw)
    assert loc == expected
    b = builder()
    b.add_block("paragraph", "x", locator=loc)
    check(b)


@pytest.mark.parametrize(
    "args",
    [
        (1, 1, 0, 0),
        (3, 7, 10, 95),
        (INT64_MAX, INT64_MAX, INT64_MAX, INT64_MAX),
        (0, 0, -1, -1),  # make_locator's "no lines, no offsets" pairs: accepted through it
        (0, 0, 4, 9),
        (2, 1, 0, 1),  # refused: lines out of order
        (0, 3, 0, 1),
        (1, 1, 5, 4),  # refused: offsets out of order
        (1, 1, -1, 3),
        (1, 1, 0, INT64_MAX + 1),  # refused: past 64 bits
        (True, 1, 0, 1),  # refused: a bool is no int
        (1, 1, 0, 1.0),
    ],
    ids=repr,
)
def test_line_char_locator_is_make_locator_s(args: tuple[Any, Any, Any, Any]) -> None:
    line_start, line_end, char_start, char_end = args
    kw = {"line_start": line_start, "line_end": line_end, "char_start": char_start, "char_end": char_end}
    try:
        expected: dict[str, Any] | type[Exception] = make_locator(**kw)
    except (TypeError, ValueError) as exc:
        expected = type(exc)
    if isinstance(expected, dict):
        loc = line_char_locator(*args)
        assert loc == expected
        assert list(loc) == list(expected)  # the same key order: the same JSON
    else:
        with pytest.raises(expected):
            line_char_locator(*args)


def test_json_safe_number() -> None:
    assert json_safe_number(INT64_MAX) == INT64_MAX
    assert json_safe_number(INT64_MAX + 1) == str(INT64_MAX + 1)
    assert json_safe_number(-(2**63) - 1) == str(-(2**63) - 1)
    assert json_safe_number(1.5) == 1.5
    assert json_safe_number(math.nan) is None
    assert json_safe_number(-math.inf) is None
    assert json_safe_number(True) is True


def test_everything_adversarial_at_once() -> None:
    b = builder("docx", unit="paragraphs")
    h = b.add_block("heading", "T\ud800itle", depth=0, section_path=["x" * 700] * 80, keys=["k" * 3000])
    for i in range(50):
        b.add_block(
            "list",
            "\udc00" * 3,
            parent=h,
            section_path=[f"s{j}" for j in range(70)],
            keys=[f"k{j}" for j in range(10_050)] if i == 0 else ["\ud800"],
            locator=make_locator(line_start=0, char_start=-1, page_start=1, page_end=2),
        )
    b.coverage(total=60, extracted=51)
    art = check(b)
    assert art.coverage.complete is False
    assert set(art.coverage.lost) == {LOST_SECTION_PATH, LOST_EXACT_KEYS}
    assert art.blocks[1].keys[-1] == f"k{MAX_KEYS - 1}"


# -- row blocks in bulk ------------------------------------------------------------------------------------------

_LOCATOR_ORDER = ("line_start", "line_end", "page_start", "page_end", "sheet", "row_start", "row_end")


def _per_row(
    b: ArtifactBuilder,
    table_id: str,
    texts: list[str | None],
    *,
    rows: Sequence[int],
    first_index: int | None = None,
    lines: Sequence[tuple[int, int]] | None = None,
    page: int | None = None,
    sheet: str | None = None,
    section_path: Sequence[str] = (),
    parent: str | None = None,
    attrs: dict[str, Any] | None = None,
) -> None:
    """What add_row_blocks promises to be: add_block per row with text, locators by make_locator."""
    for i, text in enumerate(texts):
        if not text:
            continue
        loc = make_locator(
            line_start=lines[i][0] if lines else None,
            line_end=lines[i][1] if lines else None,
            page_start=page,
            sheet=sheet,
            row_start=rows[i],
        )
        b.add_block(
            "paragraph",
            text,
            locator={k: loc[k] for k in _LOCATOR_ORDER if k in loc},  # the same pairs, in the tabular key order
            section_path=section_path,
            parent=parent,
            attrs={"table_id": table_id, **(attrs or {})},
            id=None if first_index is None else f"r{table_id}.{first_index + i}",
        )


ROW_TEXTS: list[str | None] = ["a: 1 | b: x", "", "a: 3 | b: naïve 東京", None, "a: 5 | b: \ud800 and \ud83d\ude00"]


@pytest.mark.parametrize(
    "kw",
    [
        pytest.param({"rows": range(2, 7), "first_index": 0}, id="csv-like rows"),
        pytest.param({"rows": range(2, 7), "first_index": 0, "lines": [(2, 2), (3, 4), (5, 5), (6, 6), (7, 9)]},
                     id="with source lines"),
        pytest.param({"rows": [4, 5, 6, 7, 8], "first_index": 512, "sheet": "Sheet1", "section_path": ["Sheet1"]},
                     id="xlsx-like sheet, list of rows"),
        pytest.param({"rows": range(1, 6), "first_index": 0}, id="parquet-like"),
        pytest.param({"rows": range(2, 7), "page": 3, "section_path": ["Intro", "Tables"], "parent": "b0",
                      "attrs": {"orientation": 90}}, id="pdf-like: b<n> ids, parent, page, attrs"),
    ],
)  # fmt: skip
def test_row_blocks_are_add_block_per_row(kw: dict[str, Any]) -> None:
    bulk, ref = builder("csv", unit="rows"), builder("csv", unit="rows")
    for b in (bulk, ref):
        b.add_block("heading", "Intro", depth=1)
        b.add_table("t", [("a", "number"), ("b", "string")], [], id="t0")
    assert bulk.add_row_blocks("t0", ROW_TEXTS, **kw) == len(ROW_TEXTS)
    _per_row(ref, "t0", ROW_TEXTS, **kw)
    for b in (bulk, ref):
        b.add_block("paragraph", "after the table")
        b.coverage(total=5, extracted=5)
    assert serialize(bulk.build()) == serialize(ref.build())  # byte for byte: fields, key order, ids, cleaning
    assert bulk.text_chars == ref.text_chars
    art = check(bulk)
    assert [x.text for x in art.blocks[1:4]] == ["a: 1 | b: x", "a: 3 | b: naïve 東京", f"a: 5 | b: {FFFD} and 😀"]


def test_row_block_locators_equal_make_locator_s() -> None:
    b = builder("xlsx", unit="rows")
    b.add_row_blocks("t0", ["x"], rows=[7], lines=[(3, 4)], page=2, sheet="S")
    b.add_table("S", [("x", "string")], [["x"]])
    assert b.blocks[0]["locator"] == make_locator(line_start=3, line_end=4, page_start=2, sheet="S", row_start=7)
    assert list(b.blocks[0]["locator"]) == list(_LOCATOR_ORDER)


def test_row_block_ids_stay_unique_among_add_block_calls() -> None:
    b = builder("csv", unit="rows")
    b.add_table("t", [("x", "string")], [], id="t0")
    b.add_block("paragraph", "before")  # b0
    b.add_row_blocks("t0", ["r1", "r2"], rows=range(2, 4))  # b1, b2: add_block's numbering goes on
    b.add_block("paragraph", "between")  # b3
    b.add_row_blocks("t0", ["r3", "", "r5"], rows=range(4, 7), first_index=2)  # rt0.2, rt0.4
    b.add_block("paragraph", "after", parent="rt0.4")  # b6: a row block is a block like any other
    assert [x["id"] for x in b.blocks] == ["b0", "b1", "b2", "b3", "rt0.2", "rt0.4", "b6"]
    with pytest.raises(ValueError):  # the same row twice
        b.add_row_blocks("t0", ["again"], rows=[6], first_index=4)
    with pytest.raises(ValueError):  # an id a row block holds
        b.add_block("paragraph", "x", id="rt0.2")
    b.add_block("paragraph", "x", id="b8")  # an explicit id ahead of the numbering ...
    with pytest.raises(ValueError):  # ... refuses a call whose b<n> numbering would reach it
        b.add_row_blocks("t0", ["x", "y"], rows=range(2, 4))
    b.add_block("paragraph", "x", id="rt0.9")
    with pytest.raises(ValueError):  # an explicit id in the range a call would number
        b.add_row_blocks("t0", [f"row {i}" for i in range(20)], rows=range(2, 22), first_index=0)
    assert len(b.blocks) == 9
    b.coverage(total=1, extracted=1)
    art = check(b)
    assert len({x.id for x in art.blocks}) == len(art.blocks)


def test_row_blocks_truncate_and_mark_the_section_path_and_sheet() -> None:
    b = builder("xlsx", unit="rows")
    path = ["s" * 600, *[f"s{i}" for i in range(70)]]
    b.add_row_blocks("t0", ["x", "y"], rows=range(2, 4), section_path=path, sheet="\ud800" + "n" * 700)
    b.add_row_blocks("t0", ["z"], rows=[4], first_index=2, section_path=path)
    b.add_table("t", [("x", "string")], [["x"], ["y"], ["z"]], id="t0")
    b.coverage(total=3, extracted=3)
    art = check(b)
    for block in art.blocks:
        assert block.section_path == ["s" * MAX_SECTION_CHARS, *[f"s{i}" for i in range(MAX_SECTION_ENTRIES - 1)]]
        assert block.attrs == {"table_id": "t0", "section_truncated": True}
    assert art.blocks[0].locator.sheet == FFFD + "n" * (MAX_SHEET_NAME_CHARS - 1)
    assert art.coverage.lost == [LOST_SECTION_PATH]
    assert art.coverage.complete is False
    # a path at the bounds is no truncation; a call that adds no block marks nothing
    b2 = builder("xlsx", unit="rows")
    b2.add_row_blocks("t0", ["x"], rows=[2], section_path=["x" * MAX_SECTION_CHARS] * MAX_SECTION_ENTRIES)
    b2.add_row_blocks("t0", ["", None], rows=[3, 4], first_index=0, section_path=path)
    b2.add_table("t", [("x", "string")], [], id="t0")
    assert "section_truncated" not in b2.blocks[0]["attrs"]
    assert b2.build()["coverage"]["lost"] == []


def test_row_blocks_clean_lone_surrogates() -> None:
    b = builder("csv", unit="rows")
    texts = ["ascii", "a\ud800b\udfffc", "pair \ud83d\ude00 held as two", "naïve 😀"]
    b.add_row_blocks("t0", texts, rows=range(2, 6), first_index=0)
    b.add_table("t", [("x", "string")], [], id="t0")
    art = check(b)
    assert [x.text for x in art.blocks] == ["ascii", f"a{FFFD}b{FFFD}c", "pair 😀 held as two", "naïve 😀"]
    assert b.blocks[0]["text"] is texts[0]  # ASCII text is not copied
    # a table id made of text: the row blocks' ids and attrs hold it cleaned
    b2 = builder("csv", unit="rows")
    b2.add_row_blocks("t\ud800", ["x"], rows=[2], first_index=0)
    assert b2.blocks[0]["id"] == f"rt{FFFD}.0"
    assert b2.blocks[0]["attrs"] == {"table_id": f"t{FFFD}"}


@pytest.mark.parametrize(
    "kw",
    [
        pytest.param({"rows": [2, -1]}, id="negative row"),
        pytest.param({"rows": range(-1, 1)}, id="range from -1"),
        pytest.param({"rows": [2, INT64_MAX + 1]}, id="row past int64"),
        pytest.param({"rows": [2, True]}, id="bool row"),
        pytest.param({"rows": [2, 3.0]}, id="float row"),
        pytest.param({"rows": [2]}, id="fewer rows than texts"),
        pytest.param({"rows": [2, 3], "lines": [(1, 1)]}, id="fewer line ranges"),
        pytest.param({"rows": [2, 3], "lines": [(1, 1), (0, 1)]}, id="line 0..1"),
        pytest.param({"rows": [2, 3], "lines": [(1, 1), (3, 2)]}, id="lines backwards"),
        pytest.param({"rows": [2, 3], "lines": [(1, 1), (-1, -1)]}, id="negative lines"),
        pytest.param({"rows": [2, 3], "lines": [(1, 1), (1, True)]}, id="bool line"),
        pytest.param({"rows": [2, 3], "lines": [(1, 1), (1, 2, 3)]}, id="line triple"),
        pytest.param({"rows": [2, 3], "page": -1}, id="negative page"),
        pytest.param({"rows": [2, 3], "page": True}, id="bool page"),
        pytest.param({"rows": [2, 3], "first_index": 1.0}, id="float first_index"),
        pytest.param({"rows": [2, 3], "parent": "nowhere"}, id="unknown parent"),
        pytest.param({"rows": [2, 3], "attrs": {"table_id": "t9"}}, id="table_id in attrs"),
        pytest.param({"rows": [2, 3], "attrs": nest(17)}, id="attrs 17 deep"),
        pytest.param({"rows": [2, 3], "texts": ["x", 5]}, id="a text not a str"),
        pytest.param({"rows": [2, 3], "table_id": ""}, id="empty table id"),
    ],
)
def test_add_row_blocks_refuses(kw: dict[str, Any]) -> None:
    b = builder("csv", unit="rows")
    b.add_table("t", [("x", "string")], [], id="t0")
    args = {"table_id": "t0", "texts": ["x", "y"], **kw}
    with pytest.raises((ValueError, TypeError)):
        b.add_row_blocks(args.pop("table_id"), args.pop("texts"), **args)
    assert b.blocks == []  # nothing appended, nothing marked
    b.coverage(total=0, extracted=0)
    assert check(b).coverage.complete is True


def test_row_blocks_accept_zero_rows_and_lines_as_make_locator_does() -> None:
    b = builder("csv", unit="rows")
    b.add_row_blocks("t0", ["x", "y"], rows=[0, INT64_MAX], lines=[(0, 0), (1, 1)])
    b.add_table("t", [("x", "string")], [], id="t0")
    check(b)


def test_row_blocks_name_a_table_added_before_or_after() -> None:
    b = builder("csv", unit="rows")
    b.add_row_blocks("t0", ["x"], rows=[2], first_index=0)  # its table comes once it is cut to what fits
    with pytest.raises(ValueError):
        b.build()
    b.add_table("t", [("x", "string")], [["x"]], id="t0")
    b.add_row_blocks("t0", ["y"], rows=[3], first_index=1)
    b.add_row_blocks("t1", ["", ""], rows=[2, 3])  # no block: names nothing
    b.coverage(total=2, extracted=2)
    check(b)


def test_row_blocks_fit_takes_what_the_budget_admits() -> None:
    b = builder("csv", unit="rows")
    seen: list[list[dict[str, Any] | None]] = []

    def fit(blocks: list[dict[str, Any] | None]) -> int:
        seen.append(blocks)
        assert b.blocks == []  # offered before anything is appended
        return 3

    taken = b.add_row_blocks("t0", ["a", "", "c", "d"], rows=range(2, 6), first_index=0, fit=fit)
    assert taken == 3
    assert [x is None for x in seen[0]] == [False, True, False, False]
    assert [x["id"] for x in b.blocks] == ["rt0.0", "rt0.2"]  # rows 0..2 taken, row 1 made no block
    assert b.text_chars == 2 + 2 * 64
    assert b.add_row_blocks("t0", ["e"], rows=[6], first_index=4, fit=lambda _: 0) == 0
    b.add_row_blocks("t0", ["d"], rows=[5], first_index=3)  # row 3 was not taken: its id is free
    for bad in (-1, 2, True, None):
        with pytest.raises(ValueError):
            b.add_row_blocks("t0", ["x"], rows=[9], first_index=9, fit=lambda _, v=bad: v)  # type: ignore[misc]
    with pytest.raises(RuntimeError):
        b.add_row_blocks("t0", ["x"], rows=[9], first_index=9, fit=lambda _: b.add_block("paragraph", "y") and 1)
    b.add_table("t", [("x", "string")], [], id="t0")
    check(b)


def test_many_row_blocks_mixed_with_blocks_stay_valid() -> None:
    import random

    rng = random.Random(7)
    alphabet = ["a", "é", "東", "😀", "\ud800", "\udfff", " | ", ""]
    b = builder("pdf", unit="pages")
    heading = b.add_block("heading", "H", depth=1)
    for t in range(30):
        tid = b.add_table(f"t{t}", [("x", "string")], [])
        n = rng.randrange(0, 40)
        texts = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 6))) for _ in range(n)]
        b.add_row_blocks(
            tid,
            texts,
            rows=range(2, n + 2),
            first_index=0 if t % 2 else None,
            page=rng.choice([None, 1, 2]),
            lines=[(i + 1, i + 1 + rng.randrange(3)) for i in range(n)] if t % 3 == 0 else None,
            section_path=["x" * rng.choice([1, 600])],
            parent=heading if t % 4 == 0 else None,
        )
        b.add_block("paragraph", f"after {t}")
    b.coverage(total=1, extracted=1)
    art = check(b)
    assert len({x.id for x in art.blocks}) == len(art.blocks) > 100


# -- builder bugs (see the module docstring) ---------------------------------------------------------------------


def test_builder_refuses_nan_and_infinity_where_values_enter() -> None:
    """orjson writes NaN/Infinity as a silent null, so the builder refuses them in cells, attrs and options."""
    for value in (math.nan, math.inf, -math.inf):
        with pytest.raises(ValueError):
            builder().add_table("t", [("x", "number")], [[value]])
        with pytest.raises(ValueError):
            builder().add_block("paragraph", "x", attrs={"v": [value]})
        b = builder()
        b.options["x"] = value
        with pytest.raises(ValueError):
            b.build()


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(lambda b: b.add_table("t", [("x", "string")], [["a\ud800"]]), id="lone surrogate in a cell"),
        pytest.param(lambda b: b.add_table("t", [("x", "mixed")], [[{"error": "\udc00"}]]), id="in a cell error"),
        pytest.param(lambda b: b.add_block("paragraph", "x", attrs={"k": "\ud800"}), id="in block attrs"),
        pytest.param(lambda b: b.add_block("paragraph", "x", attrs={"\ud800": 1}), id="in a block attrs key"),
        pytest.param(lambda b: b.add_table("t", [("x", "string")], [], attrs={"k": "\ud800"}), id="in table attrs"),
        pytest.param(lambda b: b.attrs.update({"title": "\ud800"}), id="in the artifact's attrs"),
    ],
)
def test_builder_free_values_with_lone_surrogates(build: Callable[[ArtifactBuilder], None]) -> None:
    """Text, keys and section paths are cleaned; table cells and attrs are not, and serialize() then raises."""
    never_invalid(build)


@pytest.mark.parametrize(
    "build",
    [
        pytest.param(
            lambda b: b.add_table("wide", [(f"c{i}", "mixed") for i in range(MAX_COLUMNS + 1)], []),
            id="16,385 columns",
        ),
        pytest.param(lambda b: b.add_table("t", [("x", "string")], [], id=""), id="empty table id"),
        pytest.param(lambda b: b.add_table("t", [("x", "string")], [], header_rows=-1), id="negative header_rows"),
        pytest.param(lambda b: b.add_block("paragraph", "x", attrs=nest(17)), id="block attrs 17 deep"),
        pytest.param(lambda b: b.add_table("t", [("x", "string")], [], attrs=nest(17)), id="table attrs 17 deep"),
        pytest.param(lambda b: b.add_block("heading", "x", depth=True), id="depth a bool"),  # type: ignore[arg-type]
        pytest.param(lambda b: b.add_block("paragraph", "x", locator=make_locator(line_start=True)), id="bool line"),
        pytest.param(lambda b: b.add_block("paragraph", "x", locator=make_locator(page_start=1.5)), id="float page"),
        pytest.param(
            lambda b: b.add_block("paragraph", "x", locator=make_locator(row_start=1, row_end=INT64_MAX + 1)),
            id="row past int64",
        ),
        pytest.param(lambda b: b.coverage(total=INT64_MAX + 1, extracted=0), id="total past int64"),
    ],
)
def test_builder_inputs_it_lets_through(build: Callable[[ArtifactBuilder], None]) -> None:
    never_invalid(build)


def test_builder_clean_str_one_replacement_per_lone_surrogate() -> None:
    """clean_str encodes with surrogatepass to UTF-8 and decodes with replace: each lone surrogate becomes three
    U+FFFD (one per byte), and a surrogate pair held as two code points (text decoded with surrogatepass, or from
    UTF-16 data) becomes six instead of the one character it encodes. Through UTF-16 both come out right:
    ``value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")``."""
    assert clean_str("\ud800") == FFFD
    assert clean_str("a\ud800b\udfffc") == f"a{FFFD}b{FFFD}c"
    assert clean_str("a\ud83d") == f"a{FFFD}"
    assert clean_str("a\ud83d\ude00b") == "a😀b"


# -- table cells: the column-at-a-time check keeps exactly what the cell-by-cell cleaning would ---------------------

_CELL_COLUMNS = {
    "ints": [1, None, -(2**63), 2**63 - 1, 0],
    "int past 64 bits": [1, 2**63, None, 3, 4],
    "int below 64 bits": [-(2**63) - 1, 1, 2, 3, 4],
    "floats": [1.5, None, -0.0, 1e308, 2.0],
    "float NaN": [1.0, math.nan, None, 2.0, 3.0],
    "float infinity": [1.0, None, math.inf, 2.0, 3.0],
    "float sum overflows": [1e308, 1e308, 1.0, None, 2.0],
    "ascii strings": ["a", "", None, "b c", "d"],
    "non-ascii strings": ["caf\u00e9", "x", None, "\u65e5\u672c", "y"],
    "lone surrogate": ["a", "\ud800", None, "b", "c"],
    "bools": [True, False, None, True, False],
    "nulls": [None, None, None, None, None],
    "mixed int and str": [1, "2", None, 3, "4"],
    "error cells": ["a", {"error": "#DIV/0!"}, None, "b", "c"],
    "not a JSON value": ["a", object(), None, "b", "c"],
}


def _cell_by_cell(rows: list[list[Any]]) -> list[list[Any]] | str:
    """The rows as the cell-by-cell loop cleans them, or the error it raises."""
    from shared.artifact_builder import _clean_cell

    try:
        return [[_clean_cell(v) for v in row] for row in rows]
    except (TypeError, ValueError) as exc:
        return type(exc).__name__


@pytest.mark.parametrize("kinds", [[k] for k in _CELL_COLUMNS] + [["ints", "ascii strings", k] for k in _CELL_COLUMNS])
def test_table_cells_are_cleaned_as_cell_by_cell(kinds: list[str]) -> None:
    columns = [_CELL_COLUMNS[k] for k in kinds]
    rows = [list(r) for r in zip(*columns, strict=True)]
    expected = _cell_by_cell([list(r) for r in rows])
    b = builder("csv", unit="rows")
    try:
        b.add_table("t", [(f"c{i}", "string") for i in range(len(kinds))], rows)
        got: list[list[Any]] | str = b.tables[0]["rows"]
    except (TypeError, ValueError) as exc:
        got = type(exc).__name__
    assert got == expected
    if isinstance(got, list):  # lone surrogates became U+FFFD, never left in
        assert all(not (isinstance(v, str) and "\ud800" in v) for row in got for v in row)


def test_table_rows_that_are_tuples_become_lists() -> None:
    b = builder("csv", unit="rows")
    b.add_table("t", [("a", "number"), ("b", "string")], [(1, "x"), (2, "y")])  # type: ignore[list-item]
    assert b.tables[0]["rows"] == [[1, "x"], [2, "y"]]
    assert all(type(r) is list for r in b.tables[0]["rows"])


# -- add_blocks: the bulk path ------------------------------------------------------------------------------------

_BULK_CASES: list[dict[str, Any]] = [
    {"section_path": ["s"] * 70, "keys": ["k"], "attrs": {"value": 1, "value_type": "integer"}},
    {"section_path": ["x" * 600, "y"], "keys": ["k", "k"], "attrs": None},
    {"section_path": [], "keys": ["k" * 1025, "short", "short", "k" * 1024], "attrs": {"a": [1, {"b": "c"}]}},
    {"section_path": ["s"], "keys": [f"k{i}" for i in range(10_005)], "attrs": {"array_of_tables": True}},
    {"section_path": ["é" * 10], "keys": ["ʎǝʞ"], "attrs": {}},
    {"section_path": ["a\ud800"], "keys": ["k\udfff"], "attrs": {"v": "x\ud800", "n": None, "f": 1.5, "b": False}},
    {"section_path": ("t", "u"), "keys": ("k1", "k2"), "attrs": {"value": "é", "value_type": "string"}},
]


@pytest.mark.parametrize("measure", [False, True])
def test_add_blocks_is_add_block_per_row(measure: bool) -> None:
    """Every row becomes the block add_block makes of it: the same bytes, marks, lost capabilities and size."""
    for parent in (None, "b0", "b1"):
        for case in _BULK_CASES:
            ref = ArtifactBuilder("toml", parser="p", parser_version="v", unit="keys", measure_blocks=measure)
            bulk = ArtifactBuilder("toml", parser="p", parser_version="v", unit="keys", measure_blocks=measure)
            for b in (ref, bulk):
                b.add_block("toml_table", "[t]")
            locator = make_locator(line_start=3, line_end=4, key_path="k")
            ref.add_block("toml_table", "[u]", id="b1", parent="b0")
            ref.add_block("toml_key", "k = 1 \ud800", locator=locator, parent=parent, id="b2", **case)
            bulk.add_blocks(
                [
                    ("b1", "toml_table", "[u]", "b0", (), None, (), None),
                    (
                        "b2",
                        "toml_key",
                        "k = 1 \ud800",
                        parent,
                        case["section_path"],
                        locator,
                        case["keys"],
                        case["attrs"],
                    ),
                ]
            )
            assert serialize(bulk.build()) == serialize(ref.build())
            assert bulk.text_chars == ref.text_chars


def test_add_blocks_depths_are_add_blocks_depth() -> None:
    """``depths`` puts each row's depth where add_block puts it (after the parent), None for none; an empty keys list
    is kept as the block's."""
    ref = builder()
    bulk = builder()
    ref.add_block("heading", "H", depth=1, keys=["H", "h"])
    ref.add_block("list", "item", parent="b0", depth=0, attrs={"ordered": False})
    ref.add_block("paragraph", "p", parent="b0")
    bulk.add_blocks(
        [
            ("b0", "heading", "H", None, [], None, ["H", "h"], None),
            ("b1", "list", "item", "b0", [], None, [], {"ordered": False}),
            ("b2", "paragraph", "p", "b0", [], None, [], None),
        ],
        depths=[1, 0, None],
    )
    assert serialize(bulk.build()) == serialize(ref.build())
    assert list(bulk.blocks[1]) == ["id", "type", "text", "parent", "depth", "section_path", "locator", "keys", "attrs"]


@pytest.mark.parametrize("depths", [[-1], [True], [1.0], [2**64], [0, 0]])
def test_add_blocks_refuses_bad_depths_and_appends_nothing(depths: list[Any]) -> None:
    b = builder()
    with pytest.raises((ValueError, TypeError)):
        b.add_blocks([("b0", "heading", "H", None, (), None, (), None)], depths=depths)
    assert b.blocks == []


@pytest.mark.parametrize(
    ("rows", "error"),
    [
        ([("b0", "toml_key", "x", None, (), None, (), None)], ValueError),  # b0 exists
        ([("b1", "toml_key", "x", None, (), None, (), None)] * 2, ValueError),  # twice in the call
        ([("", "toml_key", "x", None, (), None, (), None)], ValueError),
        ([("b1", "cell", "x", None, (), None, (), None)], ValueError),  # not a contract type
        (
            [("b1", "toml_key", "x", "b2", (), None, (), None), ("b2", "toml_key", "y", None, (), None, (), None)],
            ValueError,
        ),
        ([("b1", "toml_key", "x", None, (), None, (), {"v": math.nan})], ValueError),
        ([("b1", "toml_key", "x", None, (), None, (), {"v": 2**64})], ValueError),
        ([("b1", "toml_key", "x", None, (), None, (), {"v": object()})], TypeError),
        ([("b1", "toml_key", b"x", None, (), None, (), None)], TypeError),
    ],
)
def test_add_blocks_refuses_and_appends_nothing(rows: list[Any], error: type[Exception]) -> None:
    b = builder("toml", unit="keys")
    b.add_block("toml_table", "[t]")
    with pytest.raises(error):
        b.add_blocks(rows)
    assert [x["id"] for x in b.blocks] == ["b0"]
    b.add_block("paragraph", "after")  # the ids of the refused call are still free
    assert [x["id"] for x in b.blocks] == ["b0", "b1"]


# -- add_key_block: one keyed block ----------------------------------------------------------------------------

_KEY_CASES: list[dict[str, Any]] = [
    {"section_path": ["s"], "keys": ["s.k"], "value": 1, "value_type": "integer"},
    {"section_path": ["s"] * 70, "keys": ["k"], "value": "v", "value_type": "string"},  # path cut and marked
    {"section_path": ["x" * 600, "y"], "keys": ["k", "k"], "value": 1.5, "value_type": "float"},
    {"section_path": [], "keys": ["k" * 1025, "short", "short"], "value": [1, "a"], "value_type": "array"},
    {"section_path": ["s"], "keys": [f"k{i}" for i in range(10_005)], "value": True, "value_type": "bool"},
    {"section_path": ["é" * 10], "keys": ["ʎǝʞ"], "value": "é", "value_type": "string"},
    {"section_path": ["a\ud800"], "keys": ["k\udfff"], "value": "x\ud800", "value_type": "string"},
    {"section_path": ("t", "u"), "keys": ("k1", "k2"), "value": {"a": [1, {"b": "c"}]}, "value_type": "table"},
    {"section_path": ["s"], "keys": ["k"], "value": ["é", None, 2.5], "value_type": "array"},
    {"section_path": ["s"], "keys": ["k"], "value": None, "value_type": "t\ud800"},
    {"section_path": ["s"], "keys": ["k"], "value": None, "value_type": None},  # no attrs
    {"section_path": ["s"], "keys": [], "value": 2**63 - 1, "value_type": "integer"},
]


@pytest.mark.parametrize("measure", [False, True])
@pytest.mark.parametrize("case", _KEY_CASES)
def test_add_key_block_is_add_block(measure: bool, case: dict[str, Any]) -> None:
    """Each call makes the block add_block makes of the same arguments: the same bytes, id, marks, lost
    capabilities and size; a section path object used again (cut once) gives the same blocks."""
    ref = ArtifactBuilder("toml", parser="p", parser_version="v", unit="keys", measure_blocks=measure)
    key = ArtifactBuilder("toml", parser="p", parser_version="v", unit="keys", measure_blocks=measure)
    for b in (ref, key):
        b.add_block("toml_table", "[t]")
    for parent, text, key_path, lines in ((None, "k = 1 \ud800", "k", (3, 4)), ("b0", "k = 2", "k.\ud800é", (5, 5))):
        attrs = None if case["value_type"] is None else {"value": case["value"], "value_type": case["value_type"]}
        got = key.add_key_block(
            "toml_key",
            text,
            *lines,
            key_path,
            parent=parent,
            section_path=case["section_path"],
            keys=list(case["keys"]) if isinstance(case["keys"], list) else case["keys"],
            value=case["value"],
            value_type=case["value_type"],
        )
        want = ref.add_block(
            "toml_key",
            text,
            locator=make_locator(line_start=lines[0], line_end=lines[1], key_path=key_path),
            parent=parent,
            section_path=case["section_path"],
            keys=case["keys"],
            attrs=attrs,
        )
        assert got == want
    assert serialize(key.build()) == serialize(ref.build())
    assert key.text_chars == ref.text_chars


@pytest.mark.parametrize(
    ("call", "error"),
    [
        ({"type": "cell"}, ValueError),  # not a contract type
        ({"parent": "b9"}, ValueError),  # not an earlier block
        ({"lines": (0, 1)}, ValueError),
        ({"lines": (3, 2)}, ValueError),
        ({"lines": (True, True)}, TypeError),
        ({"lines": (1, 2**63)}, ValueError),
        ({"value": math.nan}, ValueError),
        ({"value": math.inf}, ValueError),
        ({"value": 2**64}, ValueError),
        ({"value": [1, -(2**64)]}, ValueError),
        ({"value": [math.nan]}, ValueError),
        ({"value": object()}, TypeError),
        ({"value": {1: "a"}}, TypeError),
        ({"value": [[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]}, ValueError),  # deeper than attrs may nest
        ({"keys": [1]}, AttributeError),
    ],
)
def test_add_key_block_refuses_what_add_block_refuses(call: dict[str, Any], error: type[Exception]) -> None:
    """What add_block refuses, add_key_block refuses (the same error), appending nothing; the id stays free."""
    args: dict[str, Any] = {
        "type": "toml_key",
        "text": "k = 1",
        "lines": (1, 1),
        "parent": "b0",
        "keys": ["k"],
        "value": 1,
    } | call
    ref = builder("toml", unit="keys")
    key = builder("toml", unit="keys")
    for b in (ref, key):
        b.add_block("toml_table", "[t]")
    with pytest.raises(error):
        ref.add_block(
            args["type"],
            args["text"],
            locator=make_locator(line_start=args["lines"][0], line_end=args["lines"][1], key_path="k"),
            parent=args["parent"],
            keys=args["keys"],
            attrs={"value": args["value"], "value_type": "t"},
        )
    with pytest.raises(error):
        key.add_key_block(
            args["type"],
            args["text"],
            *args["lines"],
            "k",
            parent=args["parent"],
            section_path=["t"],
            keys=args["keys"],
            value=args["value"],
            value_type="t",
        )
    assert [x["id"] for x in key.blocks] == ["b0"]
    assert key.add_key_block("toml_key", "ok", 1, 1, "k", parent="b0", section_path=["t"], keys=["k"]) == "b1"


@pytest.mark.parametrize("key_path", ["t.k", "t." + "k" * 1030, "t.ké", "t.k\ud800"])
def test_add_key_block_whose_key_is_its_key_path_is_add_block(key_path: str) -> None:
    """The common call (toml's), the one key the key path object itself: the same block as add_block makes, a key
    path too long for a key left out of keys and marked, one to clean cleaned."""
    ref = builder("toml", unit="keys")
    key = builder("toml", unit="keys")
    got = key.add_key_block("toml_key", "k = 1", 2, 2, key_path, None, ["t"], [key_path], 1, "integer")
    want = ref.add_block(
        "toml_key",
        "k = 1",
        locator=make_locator(line_start=2, line_end=2, key_path=key_path),
        section_path=["t"],
        keys=[key_path],
        attrs={"value": 1, "value_type": "integer"},
    )
    assert got == want
    assert serialize(key.build()) == serialize(ref.build())


def test_add_key_block_refuses_a_text_not_str() -> None:
    """A text that is not a str is refused (as add_blocks refuses it), nothing appended."""
    b = builder("toml", unit="keys")
    with pytest.raises(TypeError, match="must be a str"):
        b.add_key_block("toml_key", b"k = 1", 1, 1, "k", parent=None, section_path=[], keys=["k"])  # type: ignore[arg-type]
    assert b.blocks == []


def test_add_key_block_refuses_an_id_taken() -> None:
    """Its id continues the numbering (b<n>); one given earlier to another block is refused, nothing appended."""
    b = builder("toml", unit="keys")
    b.add_block("toml_table", "[t]", id="b1")
    with pytest.raises(ValueError, match="not unique"):
        b.add_key_block("toml_key", "k = 1", 1, 1, "k", parent=None, section_path=[], keys=["k"])
    assert [x["id"] for x in b.blocks] == ["b1"]


def test_add_key_block_checks_each_parent() -> None:
    """A parent is checked on every call, not only when the section path changes."""
    b = builder("toml", unit="keys")
    path = ["t"]
    b.add_key_block("toml_table", "[t]", 1, 1, "t", parent=None, section_path=path, keys=["t"])
    b.add_key_block("toml_key", "t.k = 1", 2, 2, "t.k", parent="b0", section_path=path, keys=["t.k"])
    with pytest.raises(ValueError, match="not an earlier block"):
        b.add_key_block("toml_key", "t.j = 1", 3, 3, "t.j", parent="b7", section_path=path, keys=["t.j"])
    assert len(b.blocks) == 2


def test_row_blocks_are_plain_dicts_in_add_blocks_key_order() -> None:
    """Row blocks and their locators are key-sharing dicts (memory): still plain dicts, the literal's JSON, and a
    block changed afterwards changes alone."""
    b = ArtifactBuilder("csv", parser="t", parser_version="1", unit="rows")
    b.add_row_blocks("t0", ["a: 1", "a: 2"], rows=[2, 3], first_index=0, lines=[(2, 2), (3, 4)])
    b.add_row_blocks("t0", ["a: 3"], rows=[4], first_index=2, sheet="S", page=1)
    b.add_table("t", [("a", "number")], [[1], [2], [3]], id="t0")
    blocks = b.build()["blocks"]
    assert all(type(x) is dict and type(x["locator"]) is dict for x in blocks)
    assert orjson.dumps(blocks[1]) == orjson.dumps(
        {
            "id": "rt0.1",
            "type": "paragraph",
            "text": "a: 2",
            "section_path": [],
            "locator": {"line_start": 3, "line_end": 4, "row_start": 3, "row_end": 3},
            "keys": [],
            "attrs": {"table_id": "t0"},
        }
    )
    assert list(blocks[2]["locator"]) == ["page_start", "page_end", "sheet", "row_start", "row_end"]
    blocks[0]["locator"]["extra"] = 1
    blocks[0]["text"] = "changed"
    del blocks[0]["keys"]
    assert blocks[1]["text"] == "a: 2"
    assert "keys" in blocks[1]
    assert "extra" not in blocks[1]["locator"]
    assert list(blocks[0]) == ["id", "type", "text", "section_path", "locator", "attrs"]


def test_row_blocks_share_their_keys() -> None:
    """Each row block and locator holds only its values (a split table), so it is smaller than the same literal;
    a child block's keys are in add_block's order, its parent after its text."""
    b = ArtifactBuilder("csv", parser="t", parser_version="1", unit="rows")
    b.add_block("paragraph", "p")
    b.add_row_blocks("t0", ["a: 1", "a: 2"], rows=[2, 3], first_index=0, lines=[(2, 2), (3, 4)])
    b.add_row_blocks("t0", ["a: 3"], rows=[4], first_index=2, sheet="S", parent="b0")
    ids, texts, rows = [f"r{i}" for i in range(2000)], [f"a: {i}" for i in range(2000)], list(range(2, 2002))
    lines = [(r, r) for r in rows]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        locs = row_locators(rows, lines, {"sheet": "S"})
        blocks = row_block_dicts(ids, texts, locs, parent=None, path=[], keys=[], attrs={})
        shared = tracemalloc.get_traced_memory()[0] - before
        literals = [{**x, "locator": dict(x["locator"])} for x in blocks]
        alone = tracemalloc.get_traced_memory()[0] - before - shared
    finally:
        tracemalloc.stop()
    assert literals == blocks
    assert list(blocks[0]["locator"]) == ["line_start", "line_end", "sheet", "row_start", "row_end"]
    assert shared < 0.7 * alone  # (not shared: 1.0, or twice that for dicts with room for 30 values)
    assert list(b.blocks[3]) == ["id", "type", "text", "parent", "section_path", "locator", "keys", "attrs"]
    assert b.blocks[3]["parent"] == "b0"
    assert b.blocks[3]["locator"] == {"sheet": "S", "row_start": 4, "row_end": 4}
    assert [x["id"] for x in b.blocks[:4]] == ["b0", "rt0.0", "rt0.1", "rt0.2"]


def test_a_table_of_mixed_plain_columns_keeps_its_rows_and_still_cleans_what_needs_it() -> None:
    """A column of several plain classes (a workbook's ints and exact-digit strings) is checked at C speed and its
    rows kept as they are; a lone surrogate, an int past 64 bits or a NaN in such a column is still caught."""
    b = ArtifactBuilder("xlsx", parser="t", parser_version="1", unit="rows")
    rows: list[list[Any]] = [[1, "a", True], ["0.5", None, 2.5], [None, 3, False]]
    originals = list(rows)
    b.add_table("t", [("n", "number"), ("m", "mixed"), ("x", "mixed")], rows, id="t0")
    assert all(kept is row for kept, row in zip(b.tables[0]["rows"], originals, strict=True))
    b.add_table("u", [("m", "mixed")], [[1], ["\ud800"]], id="t1")
    assert b.tables[1]["rows"] == [[1], ["\ufffd"]]
    for bad in (2**63, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="table value"):
            ArtifactBuilder("xlsx", parser="t", parser_version="1", unit="rows").add_table(
                "t", [("m", "mixed")], [["x"], [bad]]
            )
