"""shared.artifact.built: the verdict on the built objects is the verdict on their JSON, where the two differ most."""

from __future__ import annotations

import dataclasses
import enum
import math
from typing import Any

import orjson
import pytest

from shared.artifact.built import dump_checked
from shared.artifact_builder import ArtifactBuilder, make_locator
from shared.contract import INT64_MAX
from tests.built_verdict import assert_same_verdict

SIZE = 1000


class Big(enum.IntEnum):
    PAST_I64 = INT64_MAX + 1  # orjson writes the value: a JSON integer past 64 bits


@dataclasses.dataclass
class Point:
    x: int


def _valid() -> dict[str, Any]:
    b = ArtifactBuilder("csv", parser="loom-csv", parser_version="1+test", unit="rows")
    b.add_table(
        "t", [("n", "number"), ("s", "string")], [[1, "a"], [2.5, "b"]], locator=make_locator(line_start=1, line_end=3)
    )
    b.add_block("paragraph", "hello", locator=make_locator(line_start=1, line_end=1))
    b.coverage(total=2, extracted=2)
    return b.build()


def _nest(depth: int, inner: Any) -> Any:
    for _ in range(depth):
        inner = (inner,)
    return inner


@pytest.mark.parametrize(
    ("where", "value", "held"),
    [
        pytest.param(None, None, True, id="valid"),
        pytest.param(("tables", 0, "rows", 0, 0), math.nan, False, id="NaN cell: null in the JSON, valid"),
        pytest.param(("tables", 0, "rows", 0, 1), math.inf, False, id="inf in a string column: null, valid"),
        pytest.param(("attrs", "x"), math.nan, True, id="NaN in attrs: null, valid"),
        pytest.param(("attrs", "x"), _nest(20, 1), False, id="tuples nested past 16 in attrs"),
        pytest.param(("attrs", "x"), (1, (2,)), False, id="tuples in attrs: arrays, valid"),
        pytest.param(("attrs", "x"), Big.PAST_I64, False, id="an int enum past 64 bits in attrs"),
        pytest.param(("attrs", "x"), Point(INT64_MAX + 1), False, id="a dataclass holding a big int in attrs"),
        pytest.param(("attrs", "x"), INT64_MAX + 1, False, id="2^63 in attrs: orjson writes it, past 64 bits"),
        pytest.param(("tables", 0, "rows", 0, 0), INT64_MAX + 1, False, id="2^63 in a number cell"),
        pytest.param(("blocks", 0, "depth"), INT64_MAX + 1, False, id="2^63 for a depth"),
        pytest.param(("blocks", 0, "depth"), True, False, id="a bool for an integer"),
        pytest.param(("blocks", 0, "text"), 5, False, id="an int for a string"),
        pytest.param(("blocks", 0, "id"), "", False, id="an empty id"),
        pytest.param(("format",), "toml", False, id="another format than asked"),
        pytest.param(("blocks", 0, "locator", "line_end"), 5000, False, id="a line past the original"),
        pytest.param(("tables", 0, "rows", 1), [1], False, id="a short row"),
    ],
)
def test_the_objects_verdict_is_the_json_verdict(where: tuple[Any, ...] | None, value: Any, held: bool) -> None:
    doc = _valid()
    if where is not None:
        parent: Any = doc
        for key in where[:-1]:
            parent = parent[key]
        parent[where[-1]] = value
    assert assert_same_verdict(doc, "csv", SIZE) is held


def test_a_lone_surrogate_has_no_json_and_the_worker_refuses_it_at_the_dumps() -> None:
    doc = _valid()
    doc["blocks"][0]["text"] = "a\ud800"
    assert assert_same_verdict(doc, "csv", SIZE) is None


def _long(n: int) -> dict[str, Any]:
    b = ArtifactBuilder("csv", parser="loom-csv", parser_version="1+test", unit="rows")
    b.add_table("t", [("n", "number")], [[i] for i in range(n)], locator=make_locator(line_start=1, line_end=n))
    for i in range(n):
        b.add_block("paragraph", f"p{i}", locator=make_locator(line_start=1, line_end=1))
    b.coverage(total=n, extracted=n)
    return b.build()


@pytest.mark.parametrize(
    ("where", "value"),
    [
        pytest.param(("tables", 0, "rows", 4500, 0), "x", id="a bad cell in the third chunk of rows"),
        pytest.param(("tables", 0, "rows", 4500), [1, 2], id="a long row in the third chunk"),
        pytest.param(("blocks", 4500, "type"), "nope", id="a bad block type in the third chunk of blocks"),
        pytest.param(("blocks", 4500, "parent"), "b4501", id="a parent that comes later, third chunk"),
        pytest.param(("blocks", 2048), {}, id="an empty block opening the second chunk"),
    ],
)
def test_a_violation_in_a_later_chunk_is_seen(where: tuple[Any, ...], value: Any) -> None:
    doc = _long(5000)
    assert assert_same_verdict(doc, "csv", 10**6) is True
    parent: Any = doc
    for key in where[:-1]:
        parent = parent[key]
    parent[where[-1]] = value
    assert assert_same_verdict(doc, "csv", 10**6) is False


def test_blocks_and_rows_as_tuples_are_judged_whole() -> None:
    doc = _long(10)
    doc["blocks"] = tuple(doc["blocks"])
    doc["tables"][0]["rows"] = tuple(doc["tables"][0]["rows"])
    assert assert_same_verdict(doc, "csv", 10**6) is True  # orjson writes them as arrays: valid
    doc["blocks"][3]["id"] = ""
    assert assert_same_verdict(doc, "csv", 10**6) is False


def _lists(depth: int) -> Any:
    inner: Any = 0
    for _ in range(depth):
        inner = [inner]
    return inner


@pytest.mark.parametrize(
    "where",
    [
        pytest.param(("options", "x"), id="in the options (depth 2)"),
        pytest.param(("blocks", 0, "attrs", "x"), id="in a block's attrs (depth 4)"),
        pytest.param(("blocks", 1, "attrs"), id="for a block's attrs, in the second block"),
        pytest.param(("tables", 0, "attrs"), id="for a table's attrs (depth 3)"),
        pytest.param(("tables", 0, "rows", 1, 1), id="in a cell (depth 5)"),
    ],
)
def test_the_one_pass_writes_exactly_the_dumps_at_orjsons_nesting_limit(where: tuple[Any, ...]) -> None:
    """Each part of the artifact is serialized at its own depth: nesting one level past orjson's limit is refused
    (with orjson's error) wherever it is, and one level less is written as the whole dumps writes it."""
    outcomes = []
    for depth in range(240, 256):
        doc = _valid()
        doc["blocks"].append({**doc["blocks"][0], "id": "b9"})
        parent: Any = doc
        for key in where[:-1]:
            parent = parent.setdefault(key, {}) if isinstance(parent, dict) else parent[key]
        parent[where[-1]] = _lists(depth)
        outcomes.append(assert_same_verdict(doc, "csv", SIZE))  # the bytes and the error compared there
    assert outcomes[0] is False
    assert outcomes[-1] is None


def test_the_one_pass_drops_each_chunk_once_written() -> None:
    doc = _long(5000)
    blocks, rows = doc["blocks"], doc["tables"][0]["rows"]
    seen: list[int] = []

    def write(part: bytes | memoryview) -> None:
        seen.append(sum(b is None for b in blocks) + sum(r is None for r in rows))

    assert dump_checked(doc, format="csv", original_size=10**6, write=write) is True
    assert blocks == [None] * 5000
    assert rows == [None] * 5000
    assert seen[-1] == 10_000
    assert 0 < seen[len(seen) // 2] < 10_000


def test_keys_orjson_refuses_are_refused_by_the_one_pass() -> None:
    class Key(str):
        pass

    doc = _valid()
    doc["tables"][0][Key("k")] = 1  # orjson: "Dict key must be str"
    assert assert_same_verdict(doc, "csv", SIZE) is None
    doc = _valid()
    doc[Key("k")] = 1
    assert assert_same_verdict(doc, "csv", SIZE) is None


def test_an_artifact_of_another_shape_is_judged_and_written_whole() -> None:
    class Doc(dict[str, Any]):
        pass

    parts: list[bytes] = []
    doc = Doc(_valid())
    assert dump_checked(doc, format="csv", original_size=SIZE, write=lambda b: parts.append(bytes(b))) is True
    assert parts == [orjson.dumps(_valid())]  # one part: not written a chunk at a time
    assert doc["blocks"][0] is not None
