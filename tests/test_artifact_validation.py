"""shared.artifact.validate_artifact: every rule of the contract's artifact and tables sections, one artifact that
passes and one that fails for exactly that reason, through both inputs (bytes as a service sends them, and a dict).
"""

from __future__ import annotations

import copy
import datetime
import json
import math
from collections.abc import Callable
from typing import Any

import orjson
import pydantic
import pytest

import shared.artifact as artifact_module
import shared.artifact.cells as cells_module
import shared.artifact.check as check_module
import shared.artifact.fast as fast_module
from shared.artifact import (
    Artifact,
    InvalidArtifact,
    Violation,
    check_artifact,
    nesting_depth,
    validate_artifact,
)
from shared.contract import INT64_MAX, INT64_MIN
from tests.built_verdict import same_verdict_everywhere  # noqa: F401 (the fixture)

SIZE = 1000  # the original's size in bytes for BASE

# Every artifact validated here is also judged from its objects (shared.artifact.built): the same verdict and
# violations as check_artifact on its JSON (tests/built_verdict.py).
pytestmark = pytest.mark.usefixtures("same_verdict_everywhere")

# The contract's example artifact, verbatim.
CONTRACT_EXAMPLE = b"""{
"schema_version": 1,
"format": "toml",
"parser": "loom-toml",
"parser_version": "1+python3.12.13",
"options": {},
"attrs": {},
"warnings": [],
"coverage": {
"unit": "keys",
"total": 1,
"extracted": 1,
"failed": [],
"lost": [],
"complete": true
},
"blocks": [
{
"id": "b0",
"type": "toml_table",
"text": "[server]",
"section_path": ["server"],
"locator": { "line_start": 1, "line_end": 1, "key_path": "server" },
"keys": ["server"]
},
{
"id": "b1",
"type": "toml_key",
"text": "server.port = 7777",
"parent": "b0",
"section_path": ["server"],
"locator": { "line_start": 2, "line_end": 2, "key_path": "server.port" },
"keys": ["server.port"],
"attrs": { "value": 7777, "value_type": "integer" }
}
]
}"""

# A valid artifact that uses every field the contract names.
BASE: dict[str, Any] = {
    "schema_version": 1,
    "format": "xlsx",
    "parser": "loom-xlsx",
    "parser_version": "1+openpyxl3.1.5",
    "options": {},
    "attrs": {"sheets": 1},
    "warnings": [],
    "coverage": {"unit": "rows", "total": 2, "extracted": 2, "failed": [], "lost": [], "complete": True},
    "blocks": [
        {
            "id": "b0",
            "type": "heading",
            "text": "Sheet1",
            "depth": 1,
            "section_path": [],
            "keys": ["Sheet1"],
            "attrs": {},
            "locator": {"sheet": "Sheet1", "line_start": 1, "line_end": 1},
        },
        {
            "id": "b1",
            "type": "paragraph",
            "text": "a | 1",
            "parent": "b0",
            "section_path": ["Sheet1"],
            "keys": [],
            "attrs": {"table_id": "t0"},
            "locator": {
                "sheet": "Sheet1",
                "row_start": 2,
                "row_end": 2,
                "char_start": 0,
                "char_end": 5,
                "page_start": 1,
                "page_end": 1,
                "key_path": "Sheet1!A2",
            },
        },
    ],
    "tables": [
        {
            "id": "t0",
            "name": "Sheet1",
            "columns": [{"name": "name", "type": "string"}, {"name": "n", "type": "number"}],
            "rows": [["a", 1]],
            "header_rows": 1,
            "locator": {"sheet": "Sheet1", "row_start": 1, "row_end": 2},
            "attrs": {},
        }
    ],
}


def base() -> dict[str, Any]:
    return copy.deepcopy(BASE)


def to_bytes(doc: Any) -> bytes:
    """JSON text as a service could send it. The standard library writes what orjson refuses to write (an integer
    past 64 bits, NaN, an escaped lone surrogate), so the bytes path sees the same document as the dict path."""
    return json.dumps(doc).encode()


def violations(doc: dict[str, Any] | bytes, *, fmt: str = "xlsx", size: int = SIZE) -> list[Violation]:
    try:
        validate_artifact(doc, format=fmt, original_size=size)
    except InvalidArtifact as e:
        found = e.violations
    else:
        return []
    assert found, "an InvalidArtifact must carry its violations"
    return found


def paths(doc: dict[str, Any] | bytes, **kw: Any) -> list[str]:
    return [v.path for v in violations(doc, **kw)]


# -- mutations, written as data ----------------------------------------------------------------------------------

Mutation = Callable[[dict[str, Any]], None]


def _parent(doc: Any, where: str) -> tuple[Any, Any]:
    parts: list[Any] = [int(p) if p.isdigit() else p for p in where.split(".")]
    node = doc
    for p in parts[:-1]:
        node = node[p]
    return node, parts[-1]


def put(where: str, value: Any) -> Mutation:
    def apply(doc: dict[str, Any]) -> None:
        node, last = _parent(doc, where)
        node[last] = copy.deepcopy(value)

    return apply


def drop(where: str) -> Mutation:
    def apply(doc: dict[str, Any]) -> None:
        node, last = _parent(doc, where)
        del node[last]

    return apply


def both(*mutations: Mutation) -> Mutation:
    def apply(doc: dict[str, Any]) -> None:
        for m in mutations:
            m(doc)

    return apply


def nest(levels: int, *, arrays: bool = False) -> dict[str, Any]:
    """An object ``levels`` deep (arrays=True: every other level an array, the outermost an object)."""
    v: Any = 1
    for i in range(levels - 1):
        v = [v] if arrays and i % 2 == 0 else {"a": v}
    return {"a": v}


def incomplete(m: Mutation) -> Mutation:
    """A mutation plus coverage.complete false, for artifacts that are no longer complete."""
    return both(m, put("coverage.complete", False))


B1 = "blocks.1"
LOC = "blocks.1.locator"
T0 = "tables.0"

# (id, mutation, the one path it breaks)
FAILS: list[tuple[str, Mutation, str]] = [
    # top level
    ("schema_version 2", put("schema_version", 2), "schema_version"),
    ("schema_version true", put("schema_version", True), "schema_version"),
    ("schema_version 1.0", put("schema_version", 1.0), "schema_version"),
    ("schema_version string", put("schema_version", "1"), "schema_version"),
    ("schema_version missing", drop("schema_version"), "schema_version"),
    ("format not the one asked", put("format", "csv"), "format"),
    ("format not a string", put("format", 1), "format"),
    ("format missing", drop("format"), "format"),
    ("parser empty", put("parser", ""), "parser"),
    ("parser not a string", put("parser", None), "parser"),
    ("parser missing", drop("parser"), "parser"),
    ("parser_version empty", put("parser_version", ""), "parser_version"),
    ("parser_version missing", drop("parser_version"), "parser_version"),
    ("options a list", put("options", []), "options"),
    ("options missing", drop("options"), "options"),
    ("options 17 deep", put("options", nest(17)), "options"),
    ("attrs a string", put("attrs", "x"), "attrs"),
    ("attrs missing", drop("attrs"), "attrs"),
    ("attrs 17 deep", put("attrs", nest(17)), "attrs"),
    ("attrs 17 deep with arrays", put("attrs", nest(17, arrays=True)), "attrs"),
    ("attrs int past int64", put("attrs.big", INT64_MAX + 1), "attrs.big"),
    ("attrs int below int64", put("attrs.deep", {"x": [INT64_MIN - 1]}), "attrs.deep.x[0]"),
    ("options int past int64", put("options.n", INT64_MAX + 1), "options.n"),
    ("warnings not a list", put("warnings", "careful"), "warnings"),
    ("warnings entry not a string", put("warnings", ["ok", 3]), "warnings[1]"),
    ("warnings missing", drop("warnings"), "warnings"),
    # coverage
    ("coverage not an object", put("coverage", []), "coverage"),
    ("coverage missing", drop("coverage"), "coverage"),
    ("unit empty", put("coverage.unit", ""), "coverage.unit"),
    ("unit missing", drop("coverage.unit"), "coverage.unit"),
    ("total negative", incomplete(put("coverage.total", -1)), "coverage.total"),
    ("total a float", put("coverage.total", 2.0), "coverage.total"),
    ("total a bool", put("coverage.total", True), "coverage.total"),
    ("total past int64", put("coverage.total", INT64_MAX + 1), "coverage.total"),
    ("total missing", drop("coverage.total"), "coverage.total"),
    ("extracted above total", put("coverage.extracted", 3), "coverage.extracted"),
    ("extracted negative", incomplete(put("coverage.extracted", -1)), "coverage.extracted"),
    ("extracted a string", put("coverage.extracted", "2"), "coverage.extracted"),
    ("extracted missing", drop("coverage.extracted"), "coverage.extracted"),
    ("failed not a list", put("coverage.failed", {}), "coverage.failed"),
    ("failed entry not an object", incomplete(put("coverage.failed", ["page 3"])), "coverage.failed[0]"),
    (
        "failed unit not a string",
        incomplete(put("coverage.failed", [{"unit": 3, "reason": "x"}])),
        "coverage.failed[0].unit",
    ),
    ("failed reason missing", incomplete(put("coverage.failed", [{"unit": "page 3"}])), "coverage.failed[0].reason"),
    ("failed missing", drop("coverage.failed"), "coverage.failed"),
    ("lost not a list", put("coverage.lost", "ocr"), "coverage.lost"),
    ("lost entry not a string", incomplete(put("coverage.lost", [1])), "coverage.lost[0]"),
    ("lost missing", drop("coverage.lost"), "coverage.lost"),
    ("complete not a bool", put("coverage.complete", "yes"), "coverage.complete"),
    ("complete null", put("coverage.complete", None), "coverage.complete"),
    ("complete true, extracted < total", put("coverage.extracted", 1), "coverage.complete"),
    (
        "complete true with a failure",
        put("coverage.failed", [{"unit": "row 9", "reason": "corrupt"}]),
        "coverage.complete",
    ),
    ("complete true with a loss", put("coverage.lost", ["exact_keys"]), "coverage.complete"),
    ("complete false when complete", put("coverage.complete", False), "coverage.complete"),
    # blocks
    ("blocks not a list", put("blocks", {}), "blocks"),
    ("blocks missing", drop("blocks"), "blocks"),
    ("block not an object", put("blocks.1", "b1"), "blocks[1]"),
    ("id empty", put(f"{B1}.id", ""), "blocks[1].id"),
    ("id not a string", put(f"{B1}.id", 1), "blocks[1].id"),
    ("id missing", drop(f"{B1}.id"), "blocks[1].id"),
    ("id not unique", both(put(f"{B1}.id", "b0"), drop(f"{B1}.parent")), "blocks[1].id"),
    ("type unknown", put(f"{B1}.type", "table"), "blocks[1].type"),
    ("type not a string", put(f"{B1}.type", ["paragraph"]), "blocks[1].type"),
    ("type missing", drop(f"{B1}.type"), "blocks[1].type"),
    ("text not a string", put(f"{B1}.text", 5), "blocks[1].text"),
    ("text missing", drop(f"{B1}.text"), "blocks[1].text"),
    ("parent a later block", put("blocks.0.parent", "b1"), "blocks[0].parent"),
    ("parent itself", put(f"{B1}.parent", "b1"), "blocks[1].parent"),
    ("parent unknown", put(f"{B1}.parent", "b9"), "blocks[1].parent"),
    ("parent null", put(f"{B1}.parent", None), "blocks[1].parent"),
    ("parent not a string", put(f"{B1}.parent", 0), "blocks[1].parent"),
    ("depth negative", put("blocks.0.depth", -1), "blocks[0].depth"),
    ("depth a float", put("blocks.0.depth", 1.5), "blocks[0].depth"),
    ("depth a bool", put("blocks.0.depth", True), "blocks[0].depth"),
    ("depth null", put("blocks.0.depth", None), "blocks[0].depth"),
    ("section_path 65 entries", put(f"{B1}.section_path", ["s"] * 65), "blocks[1].section_path"),
    ("section entry 501 chars", put(f"{B1}.section_path", ["ok", "x" * 501]), "blocks[1].section_path[1]"),
    ("section entry not a string", put(f"{B1}.section_path", [1]), "blocks[1].section_path[0]"),
    ("section_path not a list", put(f"{B1}.section_path", "Sheet1"), "blocks[1].section_path"),
    ("section_path missing", drop(f"{B1}.section_path"), "blocks[1].section_path"),
    ("keys 10,001", put(f"{B1}.keys", [f"k{i}" for i in range(10_001)]), "blocks[1].keys"),
    ("key 1,025 chars", put(f"{B1}.keys", ["k", "k" * 1025]), "blocks[1].keys[1]"),
    ("key not a string", put(f"{B1}.keys", [None]), "blocks[1].keys[0]"),
    ("keys missing", drop(f"{B1}.keys"), "blocks[1].keys"),
    ("block attrs not an object", put(f"{B1}.attrs", []), "blocks[1].attrs"),
    ("block attrs 17 deep", put(f"{B1}.attrs", nest(17)), "blocks[1].attrs"),
    ("block attrs int past int64", put(f"{B1}.attrs.n", INT64_MAX + 1), "blocks[1].attrs.n"),
    ("block attrs odd key int past int64", put(f"{B1}.attrs", {"a b": [INT64_MAX + 1]}), 'blocks[1].attrs["a b"][0]'),
    # locators
    ("locator missing", drop(f"{B1}.locator"), "blocks[1].locator"),
    ("locator not an object", put(f"{B1}.locator", [1, 1]), "blocks[1].locator"),
    ("line end before start", put(LOC, {"line_start": 3, "line_end": 2}), "blocks[1].locator.line_end"),
    ("line 0 with an end", put(LOC, {"line_start": 0, "line_end": 2}), "blocks[1].locator.line_end"),
    ("line start negative", put(LOC, {"line_start": -1, "line_end": 2}), "blocks[1].locator.line_start"),
    ("line start alone", put(LOC, {"line_start": 1}), "blocks[1].locator.line_end"),
    ("line end alone", put(LOC, {"line_end": 1}), "blocks[1].locator.line_start"),
    ("line start a float", put(LOC, {"line_start": 1.0, "line_end": 1}), "blocks[1].locator.line_start"),
    ("line end a bool", put(LOC, {"line_start": 1, "line_end": True}), "blocks[1].locator.line_end"),
    ("line end past size + 1", put(LOC, {"line_start": 1, "line_end": SIZE + 2}), "blocks[1].locator.line_end"),
    ("char end before start", put(LOC, {"char_start": 5, "char_end": 4}), "blocks[1].locator.char_end"),
    ("char -1 with an end", put(LOC, {"char_start": -1, "char_end": 3}), "blocks[1].locator.char_end"),
    ("char start below -1", put(LOC, {"char_start": -2, "char_end": 3}), "blocks[1].locator.char_start"),
    ("char end alone", put(LOC, {"char_end": 3}), "blocks[1].locator.char_start"),
    ("char start alone", put(LOC, {"char_start": 3}), "blocks[1].locator.char_end"),
    ("char end past size", put(LOC, {"char_start": 0, "char_end": SIZE + 1}), "blocks[1].locator.char_end"),
    ("page end before start", put(LOC, {"page_start": 2, "page_end": 1}), "blocks[1].locator.page_end"),
    ("page 0 with an end", put(LOC, {"page_start": 0, "page_end": 1}), "blocks[1].locator.page_end"),
    ("page start alone", put(LOC, {"page_start": 1}), "blocks[1].locator.page_end"),
    ("page end past int64", put(LOC, {"page_start": 1, "page_end": INT64_MAX + 1}), "blocks[1].locator.page_end"),
    ("row end before start", put(LOC, {"row_start": 5, "row_end": 4}), "blocks[1].locator.row_end"),
    ("row start negative", put(LOC, {"row_start": -3, "row_end": 4}), "blocks[1].locator.row_start"),
    ("row end alone", put(LOC, {"row_end": 4}), "blocks[1].locator.row_start"),
    ("key_path not a string", put(LOC, {"key_path": ["a", "b"]}), "blocks[1].locator.key_path"),
    ("sheet 501 chars", put(LOC, {"sheet": "s" * 501}), "blocks[1].locator.sheet"),
    ("sheet not a string", put(LOC, {"sheet": 1}), "blocks[1].locator.sheet"),
    # tables
    ("tables not a list", put("tables", {}), "tables"),
    ("tables null", put("tables", None), "tables"),
    ("table not an object", put("tables.0", []), "tables[0]"),
    ("table id empty", put(f"{T0}.id", ""), "tables[0].id"),
    ("table id missing", drop(f"{T0}.id"), "tables[0].id"),
    ("table id not unique", lambda d: d["tables"].append(copy.deepcopy(d["tables"][0])), "tables[1].id"),
    ("table name not a string", put(f"{T0}.name", None), "tables[0].name"),
    ("table name missing", drop(f"{T0}.name"), "tables[0].name"),
    ("columns not a list", put(f"{T0}.columns", {}), "tables[0].columns"),
    ("columns missing", drop(f"{T0}.columns"), "tables[0].columns"),
    (
        "16,385 columns",
        both(put(f"{T0}.columns", [{"name": f"c{i}", "type": "mixed"} for i in range(16_385)]), put(f"{T0}.rows", [])),
        "tables[0].columns",
    ),
    ("column not an object", put(f"{T0}.columns.1", "n"), "tables[0].columns[1]"),
    ("column name 501 chars", put(f"{T0}.columns.0.name", "c" * 501), "tables[0].columns[0].name"),
    ("column name missing", drop(f"{T0}.columns.0.name"), "tables[0].columns[0].name"),
    ("column type unknown", put(f"{T0}.columns.1.type", "integer"), "tables[0].columns[1].type"),
    ("column type missing", drop(f"{T0}.columns.1.type"), "tables[0].columns[1].type"),
    ("rows not a list", put(f"{T0}.rows", {}), "tables[0].rows"),
    ("rows missing", drop(f"{T0}.rows"), "tables[0].rows"),
    ("row too short", put(f"{T0}.rows", [["a"]]), "tables[0].rows[0]"),
    ("row too long", put(f"{T0}.rows", [["a", 1, 2]]), "tables[0].rows[0]"),
    ("row not a list", put(f"{T0}.rows", [{"name": "a", "n": 1}]), "tables[0].rows[0]"),
    ("cell a list", put(f"{T0}.rows", [[["a"], 1]]), "tables[0].rows[0][0]"),
    ("cell error not a string", put(f"{T0}.rows", [[{"error": 7}, 1]]), "tables[0].rows[0][0]"),
    ("cell object not an error", put(f"{T0}.rows", [[{"value": "a"}, 1]]), "tables[0].rows[0][0]"),
    ("cell int past int64", put(f"{T0}.rows", [["a", INT64_MAX + 1]]), "tables[0].rows[0][1]"),
    ("cell int below int64", put(f"{T0}.rows", [["a", INT64_MIN - 1]]), "tables[0].rows[0][1]"),
    ("header_rows negative", put(f"{T0}.header_rows", -1), "tables[0].header_rows"),
    ("header_rows a float", put(f"{T0}.header_rows", 1.0), "tables[0].header_rows"),
    ("table locator missing", drop(f"{T0}.locator"), "tables[0].locator"),
    ("table locator pair", put(f"{T0}.locator.row_end", 0), "tables[0].locator.row_end"),
    (
        "table locator char past size",
        put(f"{T0}.locator", {"char_start": 0, "char_end": SIZE + 1}),
        "tables[0].locator.char_end",
    ),
    ("table attrs not an object", put(f"{T0}.attrs", 1), "tables[0].attrs"),
    ("table attrs 17 deep", put(f"{T0}.attrs", nest(17)), "tables[0].attrs"),
]

# (id, mutation): each stays valid, at a rule's edge
PASSES: list[tuple[str, Mutation]] = [
    ("unchanged", lambda d: None),
    ("options 16 deep", put("options", nest(16))),
    ("attrs 16 deep", put("attrs", nest(16))),
    ("attrs 16 deep with arrays", put("attrs", nest(16, arrays=True))),
    ("block attrs 16 deep", put(f"{B1}.attrs", nest(16))),
    ("table attrs 16 deep", put(f"{T0}.attrs", nest(16))),
    ("attrs int64 bounds", put("attrs", {"max": INT64_MAX, "min": INT64_MIN, "f": 1e300, "n": None, "b": False})),
    ("attrs a double past 2^63", put("attrs", {"f": 1e19, "g": -1.5e19, "list": [2.0**64]})),
    ("warnings", put("warnings", ["a page had no text", ""])),
    ("unit any non-empty", put("coverage.unit", "statements")),
    ("extracted 0 of 0", both(put("coverage.total", 0), put("coverage.extracted", 0))),
    ("extracted < total, complete false", incomplete(put("coverage.extracted", 1))),
    ("extracted < total, complete left out", both(put("coverage.extracted", 1), drop("coverage.complete"))),
    ("total int64 max", incomplete(put("coverage.total", INT64_MAX))),
    ("failed, complete false", incomplete(put("coverage.failed", [{"unit": "page 3", "reason": "corrupt"}]))),
    ("lost, complete false", incomplete(put("coverage.lost", ["sql_structure", "ocr"]))),
    ("complete left out", drop("coverage.complete")),
    ("no blocks", put("blocks", [])),
    (
        "every block type",
        lambda d: d["blocks"].extend(
            {"id": f"x{t}", "type": t, "text": "", "section_path": [], "keys": [], "locator": {}}
            for t in ("heading", "paragraph", "list", "code", "sql_statement", "toml_table", "toml_key")
        ),
    ),
    ("ids any non-empty strings", both(put("blocks.0.id", "héading 1"), put(f"{B1}.parent", "héading 1"))),
    ("parent left out", drop(f"{B1}.parent")),
    ("depth 0", put("blocks.0.depth", 0)),
    ("depth left out", drop("blocks.0.depth")),
    ("section_path 64 entries", put(f"{B1}.section_path", ["s"] * 64)),
    ("section entry 500 chars", put(f"{B1}.section_path", ["x" * 500])),
    ("section entry 500 astral chars", put(f"{B1}.section_path", ["😀" * 500])),
    ("keys 10,000", put(f"{B1}.keys", [f"k{i}" for i in range(10_000)])),
    ("key 1,024 chars", put(f"{B1}.keys", ["k" * 1024])),
    ("keys repeated", put(f"{B1}.keys", ["k", "k"])),
    ("block attrs left out", drop(f"{B1}.attrs")),
    ("locator empty", put(LOC, {})),
    ("line 0..0", put(LOC, {"line_start": 0, "line_end": 0})),
    ("line end == size + 1", put(LOC, {"line_start": 1, "line_end": SIZE + 1})),
    ("char -1..-1", put(LOC, {"char_start": -1, "char_end": -1})),
    ("char 0..0", put(LOC, {"char_start": 0, "char_end": 0})),
    ("char end == size", put(LOC, {"char_start": SIZE, "char_end": SIZE})),
    ("page 0..0", put(LOC, {"page_start": 0, "page_end": 0})),
    ("page end int64 max", put(LOC, {"page_start": 1, "page_end": INT64_MAX})),
    ("row 0..0", put(LOC, {"row_start": 0, "row_end": 0})),
    ("row 1..10^6", put(LOC, {"row_start": 1, "row_end": 10**6})),
    ("key_path empty", put(LOC, {"key_path": ""})),
    ("sheet 500 chars", put(LOC, {"sheet": "s" * 500})),
    ("no tables", drop("tables")),
    ("tables empty", put("tables", [])),
    ("table ids may repeat block ids", put(f"{T0}.id", "b0")),
    ("table name empty", put(f"{T0}.name", "")),
    (
        "16,384 columns",
        both(put(f"{T0}.columns", [{"name": f"c{i}", "type": "mixed"} for i in range(16_384)]), put(f"{T0}.rows", [])),
    ),
    ("no columns, empty rows", both(put(f"{T0}.columns", []), put(f"{T0}.rows", [[], []]))),
    ("column name 500 chars", put(f"{T0}.columns.0.name", "c" * 500)),
    ("no rows", put(f"{T0}.rows", [])),
    ("null and cell errors fit", put(f"{T0}.rows", [[None, {"error": "#DIV/0!"}], [{"error": ""}, None]])),
    ("header_rows 0", put(f"{T0}.header_rows", 0)),
    ("header_rows left out", drop(f"{T0}.header_rows")),
    ("table locator empty", put(f"{T0}.locator", {})),
    ("table attrs left out", drop(f"{T0}.attrs")),
    ("table attrs", put(f"{T0}.attrs", {"hidden": True})),
]


@pytest.fixture(params=["fast", "chunks of 1", "careful"])
def fast_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Run a test through each way the validator can go, which must all agree on every verdict and every model:

    - fast: bytes are decoded by the types generated from the rules (every field's type and bounds), and the rules
      across fields are tested over the decoded artifact a field at a time, a table a chunk of rows at a time, each
      column of it as a whole; what does not pass goes to the checker;
    - chunks of 1: the same with one row a chunk, so every boundary between chunks is crossed;
    - careful: every artifact goes to the checker, and every cell is looked at one by one, each violation at its
      path.

    Dict input always goes to the checker."""
    mode = str(request.param)
    if mode == "chunks of 1":
        monkeypatch.setattr(check_module, "ROW_CHUNK", 1)
        monkeypatch.setattr(fast_module, "ROW_CHUNK", 1)
    if mode == "careful":
        monkeypatch.setattr(artifact_module, "FAST_PATH", False)
        monkeypatch.setattr(cells_module, "column_ok", lambda col, ctype, known: False)
    return mode


@pytest.mark.parametrize("via", ["dict", "bytes"])
@pytest.mark.parametrize(("mutate", "path"), [pytest.param(m, p, id=i) for i, m, p in FAILS])
def test_breaking_one_rule_is_one_violation(mutate: Mutation, path: str, via: str, fast_path: str) -> None:
    doc = base()
    mutate(doc)
    found = violations(doc if via == "dict" else to_bytes(doc))
    assert [v.path for v in found] == [path], found
    assert all(v.rule for v in found)


@pytest.mark.parametrize("via", ["dict", "bytes"])
@pytest.mark.parametrize("mutate", [pytest.param(m, id=i) for i, m in PASSES])
def test_an_edge_that_holds_passes(mutate: Mutation, via: str, fast_path: str) -> None:
    doc = base()
    mutate(doc)
    assert violations(doc if via == "dict" else to_bytes(doc)) == []
    if via == "bytes":
        art = validate_artifact(to_bytes(doc), format="xlsx", original_size=SIZE)
        assert art.to_dict() == json.loads(to_bytes(doc))


def test_the_fail_and_pass_tables_do_not_overlap() -> None:
    assert len({i for i, _, _ in FAILS}) == len(FAILS)
    assert len({i for i, _ in PASSES}) == len(PASSES)


# -- cells against their column's type ---------------------------------------------------------------------------

CELLS: dict[str, tuple[list[Any], list[Any]]] = {
    # type: (values that fit, values that do not)
    "string": (["x", "", "12"], [1, 1.5, True]),
    "number": (
        [
            0,
            -7,
            2.5,
            -1e-300,
            1e19,
            INT64_MAX,
            INT64_MIN,
            "12.345",
            "-0.5",
            "123456789012345678901234567890",
            "1.5e10",
            "2E-3",
        ],
        ["abc", "1.", ".5", "+1", "1,5", "NaN", "Infinity", "", " 1", True],
    ),
    "bool": ([True, False], [1, 0, "true"]),
    "date": (
        ["2024-02-29", "1999-12-31", "0001-01-01"],
        ["2023-02-29", "2024-1-01", "2024-01-01T00:00:00", "20240101", 20240101],
    ),
    "datetime": (
        [
            "2024-01-01",
            "2024-01-01T10:20:30",
            "2024-01-01T10:20:30.5",
            "2024-01-01T10:20:30.123456789",
            "2024-01-01T10:20:30Z",
            "2024-01-01T10:20:30+05:30",
            "2024-01-01T10:20:30.123-08:00",
        ],
        ["2024-01-01 10:20:30", "2024-13-01T00:00:00", "2024-01-01T25:00:00", "2024-01-01T10:20", "10:20:30", 1.5],
    ),
    "time": (["10:20:30", "00:00:00", "23:59:59.999999"], ["24:00:00", "10:20", "10:20:30Z", "1:02:03", 36000]),
    "duration": (
        ["36:00:00", "0:00:01", "-1:30:00", "100:00:00.25", "00:59:59"],
        ["1:60:00", "1:00:60", "36h", "1:00", "P1D", "--1:00:00", 3600],
    ),
    "mixed": (["x", 1, 2.5, True], [[1], {"a": 1}]),
}


def _with_cell(ctype: str, value: Any) -> dict[str, Any]:
    doc = base()
    doc["tables"][0]["columns"] = [{"name": "v", "type": ctype}]
    doc["tables"][0]["rows"] = [[None], [value]]
    return doc


@pytest.mark.parametrize("via", ["dict", "bytes"])
@pytest.mark.parametrize(
    ("ctype", "value"),
    [pytest.param(t, v, id=f"{t}-{v!r}") for t, (good, _) in CELLS.items() for v in [*good, None, {"error": "#N/A"}]],
)
def test_a_cell_that_fits_its_column(ctype: str, value: Any, via: str, fast_path: str) -> None:
    doc = _with_cell(ctype, value)
    assert violations(doc if via == "dict" else to_bytes(doc)) == []


@pytest.mark.parametrize("via", ["dict", "bytes"])
@pytest.mark.parametrize(
    ("ctype", "value"), [pytest.param(t, v, id=f"{t}-{v!r}") for t, (_, bad) in CELLS.items() for v in bad]
)
def test_a_cell_that_does_not_fit_its_column(ctype: str, value: Any, via: str, fast_path: str) -> None:
    doc = _with_cell(ctype, value)
    assert paths(doc if via == "dict" else to_bytes(doc)) == ["tables[0].rows[1][0]"]


@pytest.mark.parametrize("via", ["dict", "bytes"])
def test_cells_are_checked_around_a_broken_row(via: str, fast_path: str) -> None:
    doc = base()
    doc["tables"][0]["columns"] = [{"name": "d", "type": "date"}, {"name": "t", "type": "time"}]
    doc["tables"][0]["rows"] = [["2024-01-01", "10:00:00"], ["2024-01-02"], ["2024-01-01", "10:00"], ["x", None]]
    assert paths(doc if via == "dict" else to_bytes(doc)) == [
        "tables[0].rows[1]",
        "tables[0].rows[3][0]",
        "tables[0].rows[2][1]",
    ]


@pytest.mark.parametrize("via", ["dict", "bytes"])
def test_cells_are_checked_when_the_columns_are_broken(via: str) -> None:
    doc = base()
    del doc["tables"][0]["columns"]
    doc["tables"][0]["rows"] = [["a", [1]], [{"error": 1}]]
    assert paths(doc if via == "dict" else to_bytes(doc)) == [
        "tables[0].columns",
        "tables[0].rows[0][1]",
        "tables[0].rows[1][0]",
    ]


def test_the_same_texts_in_many_rows() -> None:
    doc = base()
    doc["tables"][0]["columns"] = [{"name": "d", "type": "datetime"}, {"name": "x", "type": "duration"}]
    doc["tables"][0]["rows"] = [["2024-01-01T00:00:00Z", "1:00:00"]] * 500 + [["2024-01-01T00:00:00", "1:00"]]
    assert paths(to_bytes(doc)) == ["tables[0].rows[500][1]"]


def test_every_column_type_is_covered() -> None:
    from shared.contract import COLUMN_TYPES

    assert set(CELLS) == COLUMN_TYPES


_YEARS = [*range(0, 9), *range(96, 105), *range(396, 405), *range(1896, 1905), *range(1996, 2005), 2100, 9999]


def test_a_date_is_a_real_day_as_the_standard_library_reads_one() -> None:
    """The date pattern spells out month lengths and leap years: it must agree with date.fromisoformat on every
    YYYY-MM-DD text of these years (0000 and the centuries included), month 00 to 13, day 00 to 32."""
    disagree = []
    for y in _YEARS:
        for m in range(14):
            for d in range(33):
                text = f"{y:04d}-{m:02d}-{d:02d}"
                try:
                    datetime.date.fromisoformat(text)
                    real = True
                except ValueError:
                    real = False
                if cells_module.is_date(text) != real or cells_module.is_datetime(text + "T10:20:30") != real:
                    disagree.append(text)
    assert disagree == []


@pytest.mark.parametrize(
    ("ctype", "value"),
    [
        ("date", "2024-01-01\n2024-01-02"),  # two valid texts in one cell: the column is checked as joined lines
        ("datetime", "2024-01-01\n2024-01-01T10:00:00"),
        ("number", "1\n2"),
        ("time", "10:00:00\n"),
        ("duration", "\n1:00:00"),
        ("date", ""),
        ("number", ""),
    ],
)
@pytest.mark.parametrize("via", ["dict", "bytes"])
def test_a_cell_text_holding_a_line_break_or_nothing(ctype: str, value: str, via: str, fast_path: str) -> None:
    doc = base()
    good = {"date": "2024-01-01", "datetime": "2024-01-01", "number": "1", "time": "10:00:00", "duration": "1:00:00"}
    doc["tables"][0]["columns"] = [{"name": "v", "type": ctype}]
    doc["tables"][0]["rows"] = [[good[ctype]], [None], [value], [good[ctype]], [None]]
    assert paths(doc if via == "dict" else to_bytes(doc)) == ["tables[0].rows[2][0]"]


BIG_ROWS = 2 * check_module.ROW_CHUNK + 500  # fixed at import: a test may make the chunks smaller
BIG_BLOCKS = 4396  # as many as the validator once took in two chunks and more
BIG_COLUMNS = [
    ("n", "number"),
    ("s", "string"),
    ("b", "bool"),
    ("d", "date"),
    ("dt", "datetime"),
    ("t", "time"),
    ("dur", "duration"),
    ("m", "mixed"),
]


def _big_table(n_rows: int) -> dict[str, Any]:
    """An artifact whose table spans several chunks of rows, every column type, nulls and cell errors."""
    doc = base()
    rows = []
    for r in range(n_rows):
        rows.append(
            [
                r if r % 3 else f"{r}.5",
                None if r % 7 == 0 else f"text {r}",
                r % 2 == 0,
                {"error": "#N/A"} if r % 97 == 0 else f"2024-{1 + r % 12:02d}-{1 + r % 28:02d}",
                f"2024-01-01T{r % 24:02d}:{r % 60:02d}:00{'Z' if r % 2 else '+01:00'}",
                f"{r % 24:02d}:00:00.{r % 1000}",
                f"{r}:00:00",
                [r, "x", True, None, 2.5][r % 5],
            ]
        )
    doc["tables"][0]["columns"] = [{"name": n, "type": t} for n, t in BIG_COLUMNS]
    doc["tables"][0]["rows"] = rows
    return doc


@pytest.mark.parametrize("via", ["dict", "bytes"])
def test_a_big_table_is_checked_in_chunks(via: str, fast_path: str) -> None:
    doc = _big_table(BIG_ROWS)
    rows = doc["tables"][0]["rows"]
    # valid edges far into the table: each sends its chunk's column to the careful path, which passes it
    rows[2100][0] = INT64_MIN  # abs() of it is past int64
    rows[2101][0] = 1e19  # a double past 2^63
    rows[2102][3] = {"error": "#REF!", "note": "dropped"}  # a cell error to clean
    rows[2103][4] = "2016-12-31T23:59:60Z"  # a leap second
    rows[2104][3] = "2024-02-29"
    rows[4300][7] = {"error": "#VALUE!"}
    art = validate_artifact(doc if via == "dict" else to_bytes(doc), format="xlsx", original_size=SIZE)
    assert art.tables is not None
    expected = copy.deepcopy(rows)
    expected[2102][3] = {"error": "#REF!"}
    assert art.tables[0].rows == expected
    assert rows[2102][3] == {"error": "#REF!", "note": "dropped"}  # copy on write: a dict passed in is left alone

    # a broken cell in each chunk and column: reported column by column, each column from the top
    broken = {
        (4000, 0): INT64_MAX + 1,
        (5, 0): "1.",
        (2049, 1): 5,
        (2500, 2): 1,
        (3, 3): "2023-02-29",
        (4399, 3): "2024-13-01",
        (2048, 4): "2024-01-01 10:00:00",
        (10, 5): "24:00:00",
        (4301, 6): "1:60:00",
        (0, 7): [1],
    }
    for (r, j), value in broken.items():
        rows[r][j] = value
    found = paths(doc if via == "dict" else to_bytes(doc))
    assert found == [f"tables[0].rows[{r}][{j}]" for r, j in sorted(broken, key=lambda rj: (rj[1], rj[0]))]


def _many_blocks(n: int) -> dict[str, Any]:
    """An artifact whose blocks span several chunks and vary in shape from one to the next."""
    doc = base()
    blocks: list[dict[str, Any]] = []
    for i in range(n):
        b: dict[str, Any] = {"id": f"x{i}", "type": "paragraph", "text": f"text {i}", "section_path": [], "keys": []}
        kind = i % 6
        if kind == 0:
            b.update(type="heading", depth=1 + i % 3, locator={"line_start": 1 + i % 900, "line_end": 1 + i % 900})
        elif kind == 1:
            b.update(
                parent=f"x{i - 1}", locator={"char_start": i % 500, "char_end": 500, "line_start": 0, "line_end": 0}
            )
            b["section_path"] = ["Head", f"part {i % 4}"]
        elif kind == 2:
            b.update(attrs={"table_id": "t0"}, locator={"sheet": "S", "row_start": 1 + i, "row_end": 1 + i})
        elif kind == 3:
            b.update(attrs={"fence": {"info": "py", "line": i}, "n": -i}, locator={"key_path": f"a.b{i}"})
            b["keys"] = [f"k{i}", "shared"]
        elif kind == 4:
            b.update(parent=f"x{i // 2}", depth=0, attrs={}, locator={})
        else:
            b.update(locator={"page_start": 1, "page_end": 2, "char_start": -1, "char_end": -1})
        blocks.append(b)
    doc["blocks"] = blocks
    return doc


def _models(art: Artifact) -> list[tuple[Any, ...]]:
    """Each block as its model holds it: the fields sent (the block's and its locator's) and every value."""
    return [
        (b.model_fields_set, b.locator.model_fields_set, b.model_dump(), b.locator.model_dump()) for b in art.blocks
    ]


def test_many_blocks_are_checked_in_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    n = BIG_BLOCKS
    raw = to_bytes(_many_blocks(n))
    chunked = validate_artifact(raw, format="xlsx", original_size=SIZE)
    assert len(chunked.blocks) == n
    assert chunked.to_dict() == json.loads(raw)
    check_artifact(raw, format="xlsx", original_size=SIZE)
    with monkeypatch.context() as patch:  # the same artifact through the checker: the very same models
        patch.setattr(artifact_module, "FAST_PATH", False)
        one_by_one = validate_artifact(raw, format="xlsx", original_size=SIZE)
    assert _models(chunked) == _models(one_by_one)
    assert chunked.blocks[0].attrs == chunked.blocks[1].attrs == {}  # left out: each block's own empty dict
    assert chunked.blocks[0].attrs is not chunked.blocks[1].attrs


@pytest.mark.parametrize("via", ["dict", "bytes"])
def test_many_blocks_with_violations_in_several_chunks(via: str, fast_path: str) -> None:
    n = BIG_BLOCKS
    doc = _many_blocks(n)
    blocks = doc["blocks"]
    blocks[2100]["id"] = "x3"  # an id of an earlier chunk
    blocks[2101]["parent"] = "x3000"  # a later block's id
    blocks[3001]["parent"] = "x3001"  # its own
    blocks[4000]["locator"] = {"row_start": 2}  # half a pair
    blocks[4001]["attrs"] = {"deep": {"n": [INT64_MAX + 1]}}
    blocks[4300]["depth"] = -1
    assert paths(doc if via == "dict" else to_bytes(doc)) == [
        "blocks[2100].id",
        "blocks[2101].parent",
        "blocks[3001].parent",
        "blocks[4000].locator.row_end",
        "blocks[4001].attrs.deep.n[0]",
        "blocks[4300].depth",
    ]


# -- numbers and strings JSON cannot hold ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        pytest.param(put("attrs.x", math.nan), "attrs.x", id="NaN in attrs"),
        pytest.param(put("options.x", [math.inf]), "options.x[0]", id="Infinity in options"),
        pytest.param(put(f"{T0}.rows", [["a", -math.inf]]), "tables[0].rows[0][1]", id="-Infinity in a cell"),
        pytest.param(put("coverage.total", math.nan), "coverage.total", id="NaN as total"),
        pytest.param(put(f"{B1}.text", "a\ud800b"), "blocks[1].text", id="lone surrogate in text"),
        pytest.param(put(f"{B1}.keys", ["ok", "\udfff"]), "blocks[1].keys[1]", id="lone surrogate in a key"),
        pytest.param(put(f"{B1}.attrs", {"\ud800": 1}), 'blocks[1].attrs["\\ud800"]', id="lone surrogate attrs key"),
        pytest.param(put("warnings", ["\ud83d"]), "warnings[0]", id="lone high surrogate in warnings"),
        pytest.param(put(f"{T0}.rows", [["\udc00", 1]]), "tables[0].rows[0][0]", id="lone surrogate in a cell"),
        pytest.param(put("attrs.when", {1, 2}), "attrs.when", id="a set is not JSON"),
        pytest.param(put("attrs.raw", b"x"), "attrs.raw", id="bytes are not JSON"),
        pytest.param(lambda d: d["attrs"].update({1: "x"}), "attrs[1]", id="an int object key"),
    ],
)
def test_a_dict_holding_what_json_cannot(mutate: Mutation, path: str) -> None:
    doc = base()
    mutate(doc)
    assert paths(doc) == [path]


def test_a_dict_may_hold_tuples_for_arrays_and_astral_text() -> None:
    doc = base()
    doc["blocks"][1]["section_path"] = ("Sheet1",)
    doc["blocks"][1]["text"] = "emoji 😀 and 東京"
    doc["tables"][0]["rows"] = [("a", 1)]
    art = validate_artifact(doc, format="xlsx", original_size=SIZE)
    assert art.blocks[1].section_path == ["Sheet1"]
    assert art.tables is not None
    assert art.tables[0].rows == [["a", 1]]


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        pytest.param(b'{"a": NaN}', "not valid JSON", id="NaN literal"),
        pytest.param(b'{"a": Infinity}', "not valid JSON", id="Infinity literal"),
        pytest.param(b'{"a": 1e999}', "not valid JSON", id="a number past a double"),
        pytest.param(b'{"a": "\\ud800"}', "not valid Unicode", id="lone surrogate escape"),
        pytest.param(b'{"a": "\\udc00\\ud800"}', "not valid Unicode", id="reversed surrogate pair"),
        pytest.param(b'{"a": "\xed\xa0\x80"}', "not valid Unicode", id="surrogate encoded in UTF-8"),
        pytest.param(b'{"a": "\xff"}', "not valid Unicode", id="not UTF-8"),
        pytest.param(b"", "not valid JSON", id="empty"),
        pytest.param(b"<html>502</html>", "not valid JSON", id="not JSON"),
        pytest.param(b'{"schema_version": 1,', "not valid JSON", id="truncated"),
        pytest.param(b"[1, 2]", "must be a JSON object", id="JSON array"),
        pytest.param(b'"artifact"', "must be a JSON object", id="JSON string"),
        pytest.param(b"null", "must be a JSON object", id="JSON null"),
    ],
)
def test_bytes_that_are_no_artifact_fail_at_the_root(raw: bytes, why: str) -> None:
    found = violations(raw)
    assert [v.path for v in found] == ["$"]
    assert why in found[0].rule


def test_nan_and_a_lone_surrogate_in_a_full_artifact_fail_at_the_root() -> None:
    for doc in (put("attrs.x", math.nan), put(f"{B1}.text", "\ud800")):
        d = base()
        doc(d)
        assert paths(to_bytes(d)) == ["$"]  # the stdlib writes NaN and "\ud800"; orjson refuses both when reading


def test_an_escaped_surrogate_pair_is_one_valid_character() -> None:
    raw = to_bytes(base()).replace(b'"text": "a | 1"', b'"text": "a \\ud83d\\ude00"')
    assert validate_artifact(raw, format="xlsx", original_size=SIZE).blocks[1].text == "a 😀"


@pytest.mark.parametrize(
    ("literal", "path"),
    [
        ("18446744073709551616", "attrs.big"),  # 2^64: orjson reads it as a float
        ("-9223372036854775809", "attrs.big"),  # -2^63 - 1: the same
        ("9223372036854775808", "attrs.big"),  # 2^63: orjson reads it as an int (it fits in u64)
        ("1" + "0" * 60, "attrs.big"),
        ("1" + "0" * 400, "$"),  # past a double too: orjson refuses it while parsing
    ],
)
def test_an_integer_literal_past_int64_in_bytes(literal: str, path: str) -> None:
    raw = to_bytes(base()).replace(b'"attrs": {"sheets": 1}', b'"attrs": {"big": ' + literal.encode() + b"}")
    assert paths(raw) == [path]


def test_an_integer_literal_past_int64_in_a_cell_and_a_locator() -> None:
    raw = (
        to_bytes(base())
        .replace(b'"rows": [["a", 1]]', b'"rows": [["a", 18446744073709551616]]')
        .replace(b'"page_end": 1', b'"page_end": 36893488147419103232')
    )
    assert paths(raw) == ["blocks[1].locator.page_end", "tables[0].rows[0][1]"]


def test_a_double_literal_past_int64_is_a_valid_number() -> None:
    raw = to_bytes(base()).replace(b'"rows": [["a", 1]]', b'"rows": [["a", 1.8446744073709552e19], ["b", 1e300]]')
    art = validate_artifact(raw, format="xlsx", original_size=SIZE)
    assert art.tables is not None
    assert art.tables[0].rows[0][1] == 2.0**64


# -- many violations ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("via", ["dict", "bytes"])
def test_every_violation_is_reported(via: str, fast_path: str) -> None:
    doc = base()
    doc["schema_version"] = 2
    doc["coverage"]["extracted"] = 3
    doc["blocks"][0]["type"] = "figure"
    doc["blocks"][1]["locator"]["char_end"] = SIZE + 1
    doc["blocks"][1]["section_path"] = ["x" * 501] * 65
    doc["blocks"].append({"id": "b0", "type": "code", "text": "", "section_path": [], "keys": [], "locator": {}})
    doc["tables"][0]["rows"].append(["b", "x"])
    found = violations(doc if via == "dict" else to_bytes(doc))
    assert [v.path for v in found] == [
        "schema_version",
        "coverage.extracted",
        "blocks[0].type",
        "blocks[1].section_path",
        *[f"blocks[1].section_path[{i}]" for i in range(65)],
        "blocks[1].locator.char_end",
        "blocks[2].id",
        "tables[0].rows[1][1]",
    ]


def test_the_error_summarises_the_first_few_and_counts_them() -> None:
    doc = base()
    doc["blocks"] = [{"id": "", "type": "x", "text": 1, "section_path": [], "keys": [], "locator": {}}] * 3
    with pytest.raises(InvalidArtifact) as info:
        validate_artifact(doc, format="xlsx", original_size=SIZE)
    err = info.value
    assert len(err.violations) == 9
    text = str(err)
    assert "9 violations" in text
    assert "blocks[0].id: must not be empty" in text
    assert "(and 4 more)" in text
    assert "blocks[2]" not in text


def test_the_error_pickles_whole() -> None:
    import pickle

    err = InvalidArtifact([Violation("blocks[0].id", "must not be empty"), Violation("$", "x")])
    back = pickle.loads(pickle.dumps(err))
    assert back.violations == err.violations
    assert str(back) == str(err)


def test_one_violation_reads_as_one() -> None:
    doc = base()
    doc["format"] = "csv"
    with pytest.raises(InvalidArtifact, match=r"1 violation: format: must be 'xlsx'"):
        validate_artifact(doc, format="xlsx", original_size=SIZE)


# -- what comes back ---------------------------------------------------------------------------------------------


def test_the_contract_example_validates() -> None:
    art = validate_artifact(CONTRACT_EXAMPLE, format="toml", original_size=len("[server]\nport = 7777\n"))
    assert isinstance(art, Artifact)
    assert [b.id for b in art.blocks] == ["b0", "b1"]
    assert art.blocks[1].parent == "b0"
    assert art.blocks[1].locator.key_path == "server.port"
    assert art.blocks[1].attrs == {"value": 7777, "value_type": "integer"}
    assert art.blocks[0].attrs == {}  # left out in the example: reads as empty
    assert art.coverage.complete is True
    assert art.tables is None
    assert art.to_dict() == orjson.loads(CONTRACT_EXAMPLE)


def test_the_contract_example_asked_as_another_format_fails() -> None:
    assert paths(CONTRACT_EXAMPLE, fmt="markdown", size=100) == ["format"]


def test_typed_access() -> None:
    art = validate_artifact(to_bytes(base()), format="xlsx", original_size=SIZE)
    assert art.schema_version == 1
    assert art.coverage.unit == "rows"
    assert art.coverage.total == art.coverage.extracted == 2
    b1 = art.blocks[1]
    assert (b1.id, b1.type, b1.text, b1.parent, b1.depth) == ("b1", "paragraph", "a | 1", "b0", None)
    loc = b1.locator
    assert (loc.row_start, loc.row_end, loc.char_start, loc.char_end) == (2, 2, 0, 5)
    assert (loc.line_start, loc.line_end) == (None, None)
    assert loc.key_path == "Sheet1!A2"
    assert art.blocks[0].depth == 1
    assert art.tables is not None
    t0 = art.tables[0]
    assert [(c.name, c.type) for c in t0.columns] == [("name", "string"), ("n", "number")]
    assert t0.rows == [["a", 1]]
    assert t0.header_rows == 1
    assert t0.locator.sheet == "Sheet1"


def test_header_rows_reads_1_when_left_out_and_the_models_are_frozen() -> None:
    doc = base()
    del doc["tables"][0]["header_rows"]
    art = validate_artifact(doc, format="xlsx", original_size=SIZE)
    assert art.tables is not None
    assert art.tables[0].header_rows == 1
    assert "header_rows" not in art.to_dict()["tables"][0]
    with pytest.raises(pydantic.ValidationError, match="frozen"):
        art.blocks[0].text = "changed"  # type: ignore[misc]


@pytest.mark.parametrize("via", ["dict", "bytes"])
def test_unknown_fields_are_dropped_at_every_level_and_attrs_kept_whole(via: str, fast_path: str) -> None:
    doc = base()
    free = {"anything": {"goes": [1, {"x": None}]}, "nested_unknown": True}
    doc["x_top"] = 1
    doc["options"] = {"encoding": "utf-8", "custom": {"k": "v"}}
    doc["attrs"] = dict(free)
    doc["coverage"]["x_cov"] = "y"
    doc["coverage"]["failed"] = [{"unit": "row 9", "reason": "corrupt", "x_fail": 1}]
    doc["coverage"]["complete"] = False
    doc["blocks"][0]["x_block"] = {"a": 1}
    doc["blocks"][1]["locator"]["x_loc"] = 5
    doc["blocks"][1]["attrs"] = dict(free)
    doc["tables"][0]["x_table"] = []
    doc["tables"][0]["columns"][0]["x_col"] = "?"
    doc["tables"][0]["locator"]["x_loc"] = "?"
    doc["tables"][0]["attrs"] = dict(free)
    doc["tables"][0]["rows"] = [[{"error": "#REF!", "x_cell": 1}, 2]]

    expected = copy.deepcopy(doc)
    del expected["x_top"]
    del expected["coverage"]["x_cov"]
    del expected["coverage"]["failed"][0]["x_fail"]
    del expected["blocks"][0]["x_block"]
    del expected["blocks"][1]["locator"]["x_loc"]
    del expected["tables"][0]["x_table"]
    del expected["tables"][0]["columns"][0]["x_col"]
    del expected["tables"][0]["locator"]["x_loc"]
    expected["tables"][0]["rows"] = [[{"error": "#REF!"}, 2]]

    art = validate_artifact(doc if via == "dict" else to_bytes(doc), format="xlsx", original_size=SIZE)
    assert art.to_dict() == expected
    assert orjson.loads(art.to_json()) == expected
    assert art.attrs == free
    assert art.blocks[1].attrs == free
    assert art.options == {"encoding": "utf-8", "custom": {"k": "v"}}
    assert not hasattr(art.blocks[0], "x_block")
    assert art.coverage.failed[0].unit == "row 9"
    # the cleaned artifact is itself valid, and cleaning it again changes nothing
    again = validate_artifact(art.to_json(), format="xlsx", original_size=SIZE)
    assert again.to_dict() == expected


def test_a_dict_input_is_left_as_it_was() -> None:
    doc = base()
    doc["blocks"][1]["x"] = 1
    doc["tables"][0]["rows"] = [[{"error": "#N/A", "why": "lookup"}, 1]]
    before = copy.deepcopy(doc)
    validate_artifact(doc, format="xlsx", original_size=SIZE)
    assert doc == before


def test_bytes_and_dict_give_the_same_artifact() -> None:
    doc = base()
    a = validate_artifact(doc, format="xlsx", original_size=SIZE)
    b = validate_artifact(to_bytes(doc), format="xlsx", original_size=SIZE)
    c = validate_artifact(bytearray(to_bytes(doc)), format="xlsx", original_size=SIZE)
    assert a.to_dict() == b.to_dict() == c.to_dict() == doc


def test_optional_fields_left_out_stay_out() -> None:
    doc = base()
    del doc["blocks"][0]["depth"]
    del doc["blocks"][0]["attrs"]
    del doc["coverage"]["complete"]
    del doc["tables"]
    out = validate_artifact(to_bytes(doc), format="xlsx", original_size=SIZE).to_dict()
    assert out == doc
    assert "depth" not in out["blocks"][0]
    assert "parent" not in out["blocks"][0]
    assert "complete" not in out["coverage"]
    assert "tables" not in out


def test_check_artifact_gives_the_same_verdict_without_models() -> None:
    assert check_artifact(to_bytes(base()), format="xlsx", original_size=SIZE) is None
    doc = base()
    doc["blocks"][1]["locator"]["line_start"] = 9
    doc["blocks"][1]["locator"]["line_end"] = 8
    with pytest.raises(InvalidArtifact) as info:
        check_artifact(to_bytes(doc), format="xlsx", original_size=SIZE)
    assert [v.path for v in info.value.violations] == ["blocks[1].locator.line_end"]


def test_a_big_artifact_through_the_fast_path_and_a_few_careful_blocks(fast_path: str) -> None:
    """Many blocks of the common shape, and a few that take the careful path: one broken, one with an unknown
    field (valid, cleaned), one with a float past 2^63 in its attrs (valid)."""
    doc = base()
    doc["blocks"] += [
        {
            "id": f"p{i}",
            "type": "paragraph",
            "text": f"paragraph {i}",
            "parent": "b0",
            "section_path": ["Sheet1", "Part"],
            "keys": [f"k{i}"],
            "locator": {"line_start": 1 + i % 900, "line_end": 1 + i % 900, "char_start": i % 500, "char_end": 500},
        }
        for i in range(3000)
    ]
    doc["blocks"][1000]["extra"] = True
    doc["blocks"][2000]["attrs"] = {"f": 3e19}
    art = validate_artifact(to_bytes(doc), format="xlsx", original_size=SIZE)
    assert len(art.blocks) == 3002
    assert art.blocks[2000].attrs == {"f": 3e19}
    assert "extra" not in art.to_dict()["blocks"][1000]
    doc["blocks"][1500]["locator"]["char_start"] = 501
    assert paths(to_bytes(doc)) == ["blocks[1500].locator.char_end"]


def test_original_size_and_input_type_are_checked() -> None:
    with pytest.raises(ValueError, match="original_size"):
        validate_artifact(to_bytes(base()), format="xlsx", original_size=-1)
    with pytest.raises(TypeError):
        validate_artifact("{}", format="xlsx", original_size=1)  # type: ignore[arg-type]


def test_the_garbage_collector_is_left_as_it_was() -> None:
    import gc

    assert gc.isenabled()
    validate_artifact(to_bytes(base()), format="xlsx", original_size=SIZE)
    assert gc.isenabled()
    violations(b"nope")
    assert gc.isenabled()
    gc.disable()
    try:
        validate_artifact(to_bytes(base()), format="xlsx", original_size=SIZE)
        assert not gc.isenabled()
    finally:
        gc.enable()


@pytest.mark.parametrize(
    ("value", "depth"),
    [
        (1, 0),
        ("x", 0),
        ({}, 1),
        ([], 1),
        ({"a": 1}, 1),
        ({"a": {"b": 1}}, 2),
        ({"a": [1]}, 2),
        ({"a": [], "b": {"c": {}}}, 3),
        (nest(16), 16),
        (nest(16, arrays=True), 16),
        (nest(40), 17),  # counting stops past the bound
    ],
)
def test_nesting_depth(value: Any, depth: int) -> None:
    assert nesting_depth(value) == depth


def test_check_artifact_does_not_import_pydantic() -> None:
    """Every extractor worker runs check_artifact: it must not pay pydantic's import (~0.15 s per cold process)."""
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import sys; from shared.artifact import check_artifact;"
        "check_artifact(sys.stdin.buffer.read(), format='toml', original_size=1000);"
        "print('pydantic' in sys.modules)"
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run(
        [sys.executable, "-c", code], input=CONTRACT_EXAMPLE, capture_output=True, cwd=root, timeout=60, check=True
    )
    assert out.stdout.strip() == b"False"


def test_the_rules_field_names_are_the_models() -> None:
    import shared.artifact as checker
    import shared.artifact_models as models
    from shared.artifact.rules import DEFAULTS, LOCATOR, SHAPES

    for shape in SHAPES:
        model = getattr(models, shape.model)
        assert set(model.model_fields) == shape.names, shape.model
        optional = {f.name for f in shape.fields if f.optional}
        assert {n for n, f in model.model_fields.items() if not f.is_required()} == optional, shape.model
        assert set(DEFAULTS.get(shape.model, {})) | ({"attrs"} & optional) == optional, shape.model
    assert tuple(models.Locator.model_fields) == LOCATOR.order
    assert checker.Artifact is type(validate_artifact(CONTRACT_EXAMPLE, format="toml", original_size=SIZE))


def test_a_valid_artifact_passes_the_fast_path_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The decoder's types and the rules across fields pass a valid artifact without the checker's second look."""

    def careful(*args: Any) -> None:
        raise AssertionError("the checker looked again at a valid artifact")

    monkeypatch.setattr(artifact_module, "_careful", careful)
    for raw, fmt in (
        (to_bytes(base()), "xlsx"),
        (CONTRACT_EXAMPLE, "toml"),
        (to_bytes(_many_blocks(BIG_BLOCKS)), "xlsx"),
        (to_bytes(_big_table(BIG_ROWS)), "xlsx"),
    ):
        art = validate_artifact(raw, format=fmt, original_size=SIZE)
        assert art.to_dict() == json.loads(raw)
        check_artifact(raw, format=fmt, original_size=SIZE)


def test_what_the_fast_path_doubts_goes_to_the_checker() -> None:
    """A key sent twice is read as its last value: the decoder's types refuse the first, the checker passes it."""
    raw = to_bytes(base()).replace(b'"depth": 1,', b'"depth": -1, "depth": 1,')
    assert raw.count(b'"depth"') == 2
    assert validate_artifact(raw, format="xlsx", original_size=SIZE).blocks[0].depth == 1
    bad = to_bytes(base()).replace(b'"depth": 1,', b'"depth": 1, "depth": -1,')
    assert paths(bad) == ["blocks[0].depth"]


def test_the_decoder_types_are_generated_from_the_rules() -> None:
    from shared.artifact.rules import SHAPES
    from shared.artifact.schema import typed_dict

    for shape in SHAPES:
        typed = typed_dict(shape)
        assert typed.__required_keys__ == {f.name for f in shape.fields if not f.optional}, shape.model
        assert typed.__optional_keys__ == {f.name for f in shape.fields if f.optional}, shape.model
