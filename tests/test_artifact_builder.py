"""shared.artifact_builder never produces an invalid artifact: adversarial inputs, checked by the shared validator.

A test named ``test_builder_bug_*`` documents the correct behaviour of a builder bug found while writing these (see
the report); it fails until the builder is fixed. Each accepts either fix: refusing the input with ValueError or
TypeError while building, or building an artifact that serializes and validates.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import pytest

from shared.artifact import Artifact, validate_artifact
from shared.artifact_builder import ArtifactBuilder, clean_str, json_safe_number, make_locator, serialize
from shared.contract import (
    INT64_MAX,
    LOST_EXACT_KEYS,
    LOST_SECTION_PATH,
    MAX_COLUMNS,
    MAX_KEY_CHARS,
    MAX_KEYS,
    MAX_SECTION_CHARS,
    MAX_SECTION_ENTRIES,
)

SIZE = 10**6  # the original's size the artifacts here are checked against
FFFD = "\ufffd"


def builder(fmt: str = "markdown", unit: str = "lines") -> ArtifactBuilder:
    return ArtifactBuilder(fmt, parser=f"loom-{fmt}", parser_version="1+test", unit=unit)


def check(b: ArtifactBuilder, size: int = SIZE) -> Artifact:
    """Serialize what the builder built and validate the bytes, as the extractor does before answering."""
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
