"""A table's rows kept by column (``shared.artifact.column_rows``): ``ArtifactBuilder.add_table_columns`` adds what
``add_table`` adds for the same rows, and in the worker's compact mode the one pass writes the same bytes and the
same verdict from the columns as from the row lists."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from typing import Any

import orjson
import pytest

from shared.artifact import InvalidArtifact, check_artifact
from shared.artifact.built import dump_checked
from shared.artifact.column_rows import ColumnRows, rows_json_len, rows_of
from shared.artifact.row_runs import compact_rows
from shared.artifact_builder import ArtifactBuilder
from shared.contract import INT64_MAX, INT64_MIN

COLUMNS = [("n", "number"), ("s", "string"), ("b", "bool"), ("d", "date"), ("m", "mixed")]
_CELLS: list[list[Any]] = [
    [0, -5, 2.5, INT64_MAX, INT64_MIN, "12.50", None, {"error": "#DIV/0!"}],
    ["plain", 'a "quoted" \\ one', "tab\there", "é", "\u2028", "", None, "x" * 40],
    [True, False, None],
    ["2024-01-31", "1999-12-01", None],
    [1, "two", 3.0, False, None, {"error": "#N/A"}],
]


def _random_cells(rng: random.Random, n: int) -> list[list[Any]]:
    return [[rng.choice(choices) for _ in range(n)] for choices in _CELLS]


def _build(add: Callable[[ArtifactBuilder], None], *, compact: bool) -> dict[str, Any]:
    with compact_rows() if compact else _nothing():
        b = ArtifactBuilder("parquet", parser="t", parser_version="1", unit="rows")
        add(b)
        b.coverage(total=1, extracted=1)
        return b.build()


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _dump(doc: dict[str, Any]) -> tuple[bytes, bool]:
    parts: list[bytes] = []
    ok = dump_checked(doc, format="parquet", original_size=10**6, write=lambda b: parts.append(bytes(b)))
    return b"".join(parts), ok


@pytest.mark.parametrize("seed", range(12))
def test_rows_json_len_is_the_rows_json_length(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(50):
        width, n = rng.randint(0, 5), rng.randint(0, 9)
        cells = _random_cells(rng, n)[:width]
        assert rows_json_len(cells, n) == len(orjson.dumps(rows_of(cells, n)))
        as_lists = [list(r) for r in zip(*cells, strict=True)] if cells else [[]] * n
        assert orjson.dumps(rows_of(cells, n)) == orjson.dumps(as_lists)


def test_rows_json_len_refuses_what_orjson_refuses() -> None:
    with pytest.raises(TypeError):
        rows_json_len([["\ud800"]], 1)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("compact", [False, True], ids=["lists", "compact"])
def test_add_table_columns_is_add_table_byte_for_byte(seed: int, compact: bool) -> None:
    """The same table from its columns as from its rows, written by the one pass (compact: from a ``ColumnRows``,
    tested by column) as ``orjson.dumps`` writes the rows' artifact, with the same verdict; cells that need cleaning
    (a lone surrogate, a cell error) cleaned alike."""
    rng = random.Random(seed)
    n = rng.choice([0, 1, 7, 2048, 2049, 5000])
    cells = _random_cells(rng, n)
    if n and seed % 2:
        cells[1][rng.randrange(n)] = "lone \ud800 surrogate"
    loc = {"row_start": 1, "row_end": max(n, 1)} if n else {}

    def by_rows(b: ArtifactBuilder) -> None:
        b.add_table("t", COLUMNS, [list(r) for r in zip(*cells, strict=True)], header_rows=0, locator=loc)

    expected = orjson.dumps(_build(by_rows, compact=False))
    _, expected_ok = _dump(_build(by_rows, compact=False))
    doc = _build(lambda b: b.add_table_columns("t", COLUMNS, cells, n, header_rows=0, locator=loc), compact=compact)
    assert (doc["tables"][0]["rows"].__class__ is ColumnRows) == compact
    raw, ok = _dump(doc)
    assert raw == expected
    assert ok == expected_ok  # no where an int past 2^53 asks the bytes (cells.column_ok), as for the lists
    assert ok == (n == 0 or not any(abs(v) >= 2**53 for v in cells[0] if type(v) is int))
    check_artifact(raw, format="parquet", original_size=10**6)


def test_add_table_columns_refuses_what_add_table_refuses() -> None:
    b = ArtifactBuilder("parquet", parser="t", parser_version="1", unit="rows")
    with pytest.raises(ValueError, match="2 columns of 3 values"):
        b.add_table_columns("t", COLUMNS[:2], [[1, 2, 3], [1, 2]], 3)
    with pytest.raises(ValueError, match="not a JSON number"):
        b.add_table_columns("t", COLUMNS[:1], [[1.0, math.nan]], 2)
    with pytest.raises(ValueError, match="past signed 64 bits"):
        b.add_table_columns("t", COLUMNS[:1], [[INT64_MAX + 1]], 1)
    with pytest.raises(TypeError, match="a table value must be"):
        b.add_table_columns("t", COLUMNS[:1], [[object()]], 1)
    with pytest.raises(ValueError, match="not one of the contract's"):
        b.add_table_columns("t", [("x", "float")], [[1]], 1)
    assert b.tables == []


def _set_cell(j: int, i: int, value: Any) -> Callable[[ColumnRows], None]:
    def tamper(rows: ColumnRows) -> None:
        column = list(rows.columns[j])
        column[i] = value
        rows.columns = (*rows.columns[:j], tuple(column), *rows.columns[j + 1 :])

    return tamper


def _drop_column(rows: ColumnRows) -> None:
    rows.columns = rows.columns[:-1]


@pytest.mark.parametrize(
    ("tamper", "bytes_valid"),
    [
        (_set_cell(0, 3000, "twelve"), False),  # not a number's digits
        (_set_cell(0, 10, math.inf), True),  # not finite: orjson writes null, which fits; the pass asks the bytes
        (_set_cell(2, 2047, "true"), False),  # a string in a bool column
        (_set_cell(3, 4999, "2024-02-30T"), False),  # not a date
        (_set_cell(4, 1, {"error": 5}), False),  # not a cell error
        (_drop_column, False),  # rows narrower than the columns
    ],
    ids=["number", "infinite", "bool", "date", "cell-error", "width"],
)
def test_the_pass_tests_every_cell_of_a_column_table(tamper: Callable[[ColumnRows], None], bytes_valid: bool) -> None:
    """Columns changed after the builder checked them: the pass never says yes, and the bytes' verdict is the
    shared validator's (a violation for each but the infinite number, which orjson writes as null)."""
    rng = random.Random(1)
    cells = _random_cells(rng, 5000)
    for column in cells:  # no int past 2^53: the untampered table passes the pass's own test
        column[:] = [0 if type(v) is int and abs(v) >= 2**53 else v for v in column]
    untampered = _build(lambda b: b.add_table_columns("t", COLUMNS, cells, 5000, header_rows=0), compact=True)
    assert _dump(untampered)[1]
    doc = _build(lambda b: b.add_table_columns("t", COLUMNS, cells, 5000, header_rows=0), compact=True)
    tamper(doc["tables"][0]["rows"])
    raw, ok = _dump(doc)
    assert not ok
    if bytes_valid:
        check_artifact(raw, format="parquet", original_size=10**6)
    else:
        with pytest.raises(InvalidArtifact):
            check_artifact(raw, format="parquet", original_size=10**6)


def test_a_column_table_changed_out_of_shape_is_refused_as_orjson_refuses_it() -> None:
    doc = _build(lambda b: b.add_table_columns("t", COLUMNS[:1], [[1, 2, 3]], 3, header_rows=0), compact=True)
    doc["tables"][0]["rows"].columns = ((1, 2),)
    with pytest.raises(orjson.JSONEncodeError):
        _dump(doc)
    with pytest.raises(ValueError, match="tuples of its row count"):
        ColumnRows([(1, 2)], 3)
