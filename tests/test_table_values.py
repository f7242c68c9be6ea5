"""The shared table-value rules: type inference from text, value encodings, row text, the output budget."""

from __future__ import annotations

import datetime as dt
import random
from typing import Any

import orjson
import pytest

from extract_fn.formats.output_budget import BudgetKind, OutputBudget, reserve_for
from extract_fn.formats.table_values import (
    TableStream,
    add_table,
    column_type,
    exact_number,
    exact_numbers,
    format_datetime,
    format_duration_ns,
    format_duration_us,
    format_time,
    format_timedelta,
    infer_text_column,
    number_from_float,
    plain_decimal,
    respelled_rows,
    row_text,
    value_text,
)
from extract_fn.limits import LIMITS
from shared.artifact import validate_artifact
from shared.artifact_builder import ArtifactBuilder, serialize
from shared.contract import ErrorCode, ExtractionError


@pytest.mark.parametrize(
    ("values", "expected_type", "expected"),
    [
        (["1", "-2", "", None], "number", [1, -2, None, None]),
        (["9223372036854775807", "9223372036854775808"], "number", [9223372036854775807, "9223372036854775808"]),
        (["-9223372036854775809"], "number", ["-9223372036854775809"]),
        (["12.345", "7"], "number", ["12.345", 7]),
        (["1e3", "-1.5E-3", "2.50"], "number", [1000, "-0.0015", "2.50"]),
        (["007", "1"], "string", ["007", "1"]),  # a leading zero is an identifier
        (["0", "0.5"], "number", [0, "0.5"]),
        ([" 1", "2"], "string", [" 1", "2"]),
        (["TRUE", "false", "True"], "bool", [True, False, True]),
        (["2021-01-01", "1999-12-31"], "date", ["2021-01-01", "1999-12-31"]),
        (["2021-02-30"], "string", ["2021-02-30"]),
        (
            ["2021-01-01 10:30", "2021-01-02", "2021-01-01T10:30:00.5+0100", "2021-01-01T10:30Z"],
            "datetime",
            ["2021-01-01T10:30:00", "2021-01-02", "2021-01-01T10:30:00.5+01:00", "2021-01-01T10:30:00Z"],
        ),
        (["10:30", "23:59:59.123456789"], "time", ["10:30:00", "23:59:59.123456789"]),
        (["25:00:00"], "string", ["25:00:00"]),
        (["1", "x"], "string", ["1", "x"]),
        (["1\n2", "3"], "string", ["1\n2", "3"]),  # a newline in a value: text, not two numbers
        (["", None], "string", [None, None]),
    ],
)
def test_infer_text_column(values: list[str | None], expected_type: str, expected: list[Any]) -> None:
    col_type, out = infer_text_column(values)
    assert col_type == expected_type
    assert out == expected
    assert [type(v) for v in out] == [type(v) for v in expected]


@pytest.mark.parametrize(
    ("values", "respelled"),
    [
        (["1", "-12", "", None], []),  # ints as they are spelled, and empty cells
        (["1.50", "1e-05", "2E3", ""], [1, 2]),  # an exponent is written out
        (["TRUE", "false", "", "True"], [0, 3]),  # bools read lowercase
        (["2020-01-02 10:00", "2020-01-02T10:00:00"], [0]),  # a normalized date-time
        (["10:00", "10:00:00"], [0]),
        (["+5", "007", "x"], []),  # text columns keep every spelling
        (["2020-01-02", "", "2020-01-03"], []),
        ([None, ""], []),
    ],
)
def test_respelled_rows_are_those_whose_typed_values_read_otherwise(
    values: list[str | None], respelled: list[int]
) -> None:
    _, typed = infer_text_column(values)
    assert respelled_rows(values, typed) == respelled
    texts = ["" if v is None else (v if isinstance(v, str) else row_text(["x"], [v])[3:]) for v in typed]
    assert [i for i, (t, v) in enumerate(zip(texts, values, strict=True)) if t != (v or "")] == respelled


@pytest.mark.parametrize("seed", range(20))
def test_respelled_rows_match_the_cell_by_cell_reading(seed: int) -> None:
    """Whatever the column (typed by ``infer_text_column`` or handed in with nulls where its cells are not empty),
    the rows are exactly those a cell-by-cell comparison of ``value_text`` with the cell finds."""
    rng = random.Random(seed)
    pool = ["1", "+5", "-3", "007", "1.50", "1e-05", "2E3", "TRUE", "false", "x", "", None, "2020-01-02 10:00"]
    values = [rng.choice(pool) for _ in range(rng.randint(0, 40))]
    _, typed = infer_text_column(values)
    if seed % 4 == 3 and typed:  # nulls that are not where the empty cells are: the careful walk
        typed = list(typed)
        typed[rng.randrange(len(typed))] = None
    expected = [
        i
        for i, (cell, value) in enumerate(zip(values, typed, strict=True))
        if (value_text(value) if value is not None else "") != (cell or "")
    ]
    assert respelled_rows(values, typed) == expected


def test_plain_decimal() -> None:
    assert plain_decimal("1.5E-3") == "0.0015"
    assert plain_decimal("1E+5") == "100000"
    assert plain_decimal("-0.0") == "0.0"
    assert plain_decimal("nan") is None
    assert plain_decimal("1e999") is None  # never written out in a thousand digits


def test_column_type() -> None:
    assert column_type(set()) == "string"
    assert column_type({"date"}) == "date"
    assert column_type({"date", "datetime"}) == "datetime"
    assert column_type({"number"}) == "number"
    assert column_type({"number", "string"}) == "mixed"
    assert column_type({"time", "date"}) == "mixed"


def test_durations_and_times() -> None:
    assert format_duration_us(36 * 3600 * 1_000_000) == "36:00:00"
    assert format_duration_us(-(90 * 60 * 1_000_000)) == "-1:30:00"
    assert format_duration_us(1_500_000) == "0:00:01.5"
    assert format_duration_ns(1) == "0:00:00.000000001"
    assert format_timedelta(dt.timedelta(days=10, seconds=54610)) == "255:10:10"
    assert format_timedelta(dt.timedelta(days=-2, seconds=43200)) == "-36:00:00"
    assert format_time(dt.time(10, 30, 15, 250000)) == "10:30:15.25"
    assert format_datetime(dt.datetime(2021, 1, 1, 10, 0)) == "2021-01-01T10:00:00"
    tz = dt.timezone(dt.timedelta(hours=-5, minutes=-30))
    assert format_datetime(dt.datetime(2021, 1, 1, 10, 0, tzinfo=tz)) == "2021-01-01T10:00:00-05:30"


def test_number_from_float() -> None:
    assert number_from_float(15.0, exact_text=True) == 15
    assert type(number_from_float(15.0, exact_text=True)) is int
    assert number_from_float(0.1, exact_text=True) == "0.1"
    assert number_from_float(1e-05, exact_text=True) == "0.00001"
    assert number_from_float(1e20, exact_text=True) == "100000000000000000000"
    assert number_from_float(0.1, exact_text=False) == 0.1
    assert number_from_float(float("nan"), exact_text=True) is None
    assert number_from_float(float("inf"), exact_text=False) is None


@pytest.mark.parametrize(
    "f",
    [15.0, -0.0, 0.1, 1e-05, 1e20, 2.0**63, -(2.0**63), 2.0**63 - 1024, 1e-100, 1.5e300, 123.456, -7.25, float("nan"),
     float("inf"), float("-inf"), 5e-324],
)  # fmt: skip
def test_exact_number_is_number_from_float_with_exact_text(f: float) -> None:
    expected = number_from_float(f, exact_text=True)
    got = exact_number(f)
    assert type(got) is type(expected)
    assert got == expected or (got != got and expected != expected)


_FLOATS = [15.0, -0.0, 0.1, 1e-05, 1e20, 2.0**63, -(2.0**63), 2.0**63 - 1024, 1e-100, 123.456, -7.25, 5e-324, 1e16]


@pytest.mark.parametrize(
    "values",
    [
        _FLOATS,  # finite: the C path, with integral values and exponents fixed one by one
        [0.5, 0.25, 3.125],  # nothing to fix
        [1.0, -3.0, -0.0, 2.0**62],  # whole numbers within int64: ints, in C
        [1.0, 2.0**63],  # a whole number past int64: its digits
        [*_FLOATS, float("nan")],  # a NaN: value by value
        [1.0, float("-inf")],
        [1.5e308, 1.5e308, 2.5],  # finite values whose sum is not: value by value
        [],
    ],
)
def test_exact_numbers_is_exact_number_of_each(values: list[float]) -> None:
    got = exact_numbers(values)
    expected = [exact_number(f) for f in values]
    assert [type(g) for g in got] == [type(e) for e in expected]
    assert got == expected


@pytest.mark.parametrize(
    "rows",
    [
        [[1, "a {0} }", 0.5, True, 1e16], [-2, "", 1e-07, False, 3.0]],  # the C path: format mapped over columns
        [[1, None, 0.5, True, 2.5], [None, "b", None, None, None]],  # nulls: row by row
        [[1, {"error": "#N/A"}, 0.5, True, 7], [2, "x", 0.25, False, 8]],  # an error cell: row by row
    ],
)
def test_row_block_texts_are_row_text(rows: list[list[Any]]) -> None:
    names = ["n", "{s}", "f}", "b{", "x"]
    b = ArtifactBuilder("csv", parser="t", parser_version="1", unit="rows")
    budget = OutputBudget(10**6, reserve_for(BudgetKind.TABLE, 10**6, LIMITS))
    columns = [(n, "mixed") for n in names]
    add_table(b, budget, name="t", columns=columns, rows=rows, first_row=1, header_rows=0, table_locator={})
    assert [blk["text"] for blk in b.blocks] == [row_text(names, r) for r in rows]


def test_row_text() -> None:
    names = ["a", "b", "c", "d", "e"]
    row = [1, None, True, {"error": "#N/A"}, 0.5]
    assert row_text(names, row) == "a: 1 | c: true | d: #N/A | e: 0.5"
    assert row_text(names, [None] * 5) == ""


def _artifact(max_bytes: int, n_rows: int) -> tuple[dict[str, Any], int]:
    b = ArtifactBuilder("csv", parser="t", parser_version="1", unit="rows")
    budget = OutputBudget(max_bytes, reserve_for(BudgetKind.TABLE, max_bytes, LIMITS))
    rows = [[i, f"value {i}"] for i in range(n_rows)]
    _, kept = add_table(
        b,
        budget,
        name="t",
        columns=[("n", "number"), ("s", "string")],
        rows=rows,
        first_row=2,
        header_rows=1,
        table_locator={"row_start": 1, "row_end": n_rows + 1},
    )
    b.coverage(total=n_rows, extracted=kept)
    return b.build(), kept


def test_budget_cuts_rows_and_blocks_together() -> None:
    art, kept = _artifact(60_000, 5_000)
    assert 0 < kept < 5_000
    raw = serialize(art)
    assert len(raw) <= 60_000
    assert len(art["tables"][0]["rows"]) == kept
    assert len(art["blocks"]) == kept
    assert art["blocks"][-1]["locator"] == {"row_start": kept + 1, "row_end": kept + 1}
    validate_artifact(raw, format="csv", original_size=10**6)


def test_budget_fits_everything_when_large() -> None:
    art, kept = _artifact(10**7, 1_000)
    assert kept == 1_000
    assert art["blocks"][0]["text"] == "n: 0 | s: value 0"
    assert art["blocks"][0]["attrs"] == {"table_id": "t0"}
    assert orjson.loads(serialize(art))["coverage"]["complete"] is True


def _streamed(max_bytes: int, n_rows: int, batch: int) -> tuple[dict[str, Any], int]:
    """``_artifact``'s table through ``TableStream``, ``batch`` rows a push."""
    b = ArtifactBuilder("csv", parser="t", parser_version="1", unit="rows")
    budget = OutputBudget(max_bytes, reserve_for(BudgetKind.TABLE, max_bytes, LIMITS))
    locator = {"row_start": 1, "row_end": n_rows + 1}
    names = ["n", "s"]
    stream = TableStream(
        b,
        budget,
        name="t",
        columns=[("n", "number"), ("s", "string")],
        first_row=2,
        header_rows=1,
        table_locator=locator,
    )
    for lo in range(0, n_rows, batch):
        rows = [[i, f"value {i}"] for i in range(lo, min(lo + batch, n_rows))]
        cells = [[r[0] for r in rows], [r[1] for r in rows]]
        if not stream.push(cells, len(rows), [row_text(names, r) for r in rows]):
            break
    _, kept = stream.finish(table_locator=locator)
    b.coverage(total=n_rows, extracted=kept)
    return b.build(), kept


@pytest.mark.parametrize("batch", [1, 100, 511, 512, 700, 5_000])
@pytest.mark.parametrize(("max_bytes", "n_rows"), [(60_000, 5_000), (10**7, 1_300)])
def test_a_streamed_table_is_add_table_byte_for_byte(batch: int, max_bytes: int, n_rows: int) -> None:
    """Batches of any size (not multiples of the budget's chunk of 512 rows) cut and build what add_table does."""
    whole, kept = _artifact(max_bytes, n_rows)
    streamed, streamed_kept = _streamed(max_bytes, n_rows, batch)
    assert streamed_kept == kept
    assert serialize(streamed) == serialize(whole)


def test_a_streamed_table_says_when_the_budget_is_spent() -> None:
    b = ArtifactBuilder("csv", parser="t", parser_version="1", unit="rows")
    budget = OutputBudget(60_000, reserve_for(BudgetKind.TABLE, 60_000, LIMITS))
    stream = TableStream(b, budget, name="t", columns=[("s", "string")], first_row=1, header_rows=0, table_locator={})
    cells = [["x" * 50] * 600]
    pushes = 0
    while stream.push(cells, 600, ["s: " + "x" * 50] * 600):
        pushes += 1
        assert pushes < 100
    assert stream.push(cells, 600, ["s: " + "x" * 50] * 600) is False  # and stays spent
    _, kept = stream.finish(table_locator={})
    assert 0 < kept < 600 * (pushes + 1)
    assert len(b.blocks) == kept


def test_budget_too_small_for_the_columns_is_resource_limit() -> None:
    with pytest.raises(ExtractionError) as exc:
        _artifact(1_000, 10)
    assert exc.value.code == ErrorCode.RESOURCE_LIMIT
