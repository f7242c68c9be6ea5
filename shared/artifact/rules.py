"""The contract's artifact rules as data: every field once, with its type, its bounds and what a violation says.

Everything else reads this module: ``schema`` turns it into the msgspec types that decode and type-check a valid
artifact in one pass, ``check`` walks it to report every violation at its path, ``cells`` holds the column types'
rules, and ``build`` names the models' defaults from it. A rule that spans fields (a locator pair, unique ids, a
parent that names an earlier block, coverage arithmetic, a row as wide as its columns) is named here too (``Pair``,
``Field.unique``, ``Field.earlier``) and evaluated once per kind in ``check``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Final

from shared.contract import (
    BLOCK_TYPES,
    COLUMN_TYPES,
    INT64_MAX,
    MAX_COLUMN_NAME_CHARS,
    MAX_COLUMNS,
    MAX_KEY_CHARS,
    MAX_KEYS,
    MAX_SECTION_CHARS,
    MAX_SECTION_ENTRIES,
    MAX_SHEET_NAME_CHARS,
    SCHEMA_VERSION,
)


class Kind(enum.Enum):
    STR = "str"
    INT = "int"
    BOOL = "bool"
    STRS = "strs"  # a list of strings
    FREE = "free"  # options, attrs: any JSON object, nested at most MAX_NESTING
    OBJECT = "object"  # an object of ``Field.shape``
    OBJECTS = "objects"  # a list of objects of ``Field.shape``
    ROWS = "rows"  # a table's rows: lists of cells, each fitting its column (see ``cells``)


@dataclass(frozen=True, slots=True)
class Field:
    """One field of an object. ``expect``: what a value of the wrong type is told (else the kind's own text)."""

    name: str
    kind: Kind
    optional: bool = False  # may be left out; when sent it has the type (``null`` is a violation, not absent)
    non_empty: bool = False
    max_chars: int | None = None  # a string's, or each entry's of a list of strings
    max_items: int | None = None
    minimum: int | None = None
    one_of: frozenset[str] | None = None
    equals: int | None = None
    shape: Shape | None = None
    expect: str | None = None
    item_expect: str | None = None  # OBJECTS: what an item that is no object is told
    unique: str | None = None  # unique among the list's items; the text names whose ("block", "table")
    earlier: str | None = None  # names an earlier item's ``unique`` value (a block's parent: an earlier block's id)


@dataclass(frozen=True, slots=True)
class Pair:
    """A locator range: both halves or neither; ``unused`` for both, or ``unused < start <= end <= bound``."""

    start: str
    end: str
    unused: int
    bound: str | None = None  # "chars": at most the original's size; "lines": at most that size plus one


@dataclass(frozen=True, slots=True)
class Shape:
    model: str  # the pydantic model of shared.artifact_models built from it
    fields: tuple[Field, ...]
    pairs: tuple[Pair, ...] = ()
    order: tuple[str, ...] = ()  # the model's field order, when it differs from the order checked
    names: frozenset[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", frozenset(f.name for f in self.fields))


def _sorted(names: frozenset[str]) -> str:
    return ", ".join(sorted(names))


# A pair's halves are plain integer fields; their rules are the pair's.
PAIRS: Final = (
    Pair("line_start", "line_end", 0, "lines"),
    Pair("char_start", "char_end", -1, "chars"),
    Pair("page_start", "page_end", 0),
    Pair("row_start", "row_end", 0),
)
LOCATOR: Final = Shape(
    "Locator",
    (
        *(Field(name, Kind.INT, optional=True) for p in PAIRS for name in (p.start, p.end)),
        Field("key_path", Kind.STR, optional=True),
        Field("sheet", Kind.STR, optional=True, max_chars=MAX_SHEET_NAME_CHARS),
    ),
    PAIRS,
    order=(
        "line_start",
        "line_end",
        "char_start",
        "char_end",
        "key_path",
        "page_start",
        "page_end",
        "sheet",
        "row_start",
        "row_end",
    ),
)
BLOCK: Final = Shape(
    "Block",
    (
        Field("id", Kind.STR, non_empty=True, unique="block"),
        Field("type", Kind.STR, one_of=BLOCK_TYPES),
        Field("text", Kind.STR),
        Field("parent", Kind.STR, optional=True, earlier="block"),
        Field("depth", Kind.INT, optional=True, minimum=0),
        Field("section_path", Kind.STRS, max_items=MAX_SECTION_ENTRIES, max_chars=MAX_SECTION_CHARS),
        Field("keys", Kind.STRS, max_items=MAX_KEYS, max_chars=MAX_KEY_CHARS),
        Field("attrs", Kind.FREE, optional=True),  # optional: the contract's own example leaves it out
        Field("locator", Kind.OBJECT, shape=LOCATOR),
    ),
)
FAILED_UNIT: Final = Shape("FailedUnit", (Field("unit", Kind.STR), Field("reason", Kind.STR)))
COVERAGE: Final = Shape(
    "Coverage",
    (
        Field("unit", Kind.STR, non_empty=True),
        Field("total", Kind.INT, minimum=0),
        Field("extracted", Kind.INT, minimum=0),
        Field(
            "failed",
            Kind.OBJECTS,
            shape=FAILED_UNIT,
            expect="must be a list of {unit, reason}",
            item_expect="must be an object {unit, reason}",
        ),
        Field("lost", Kind.STRS),
        Field("complete", Kind.BOOL, optional=True, expect="must be a bool (or left out)"),
    ),
)
COLUMN: Final = Shape(
    "Column",
    (Field("name", Kind.STR, max_chars=MAX_COLUMN_NAME_CHARS), Field("type", Kind.STR, one_of=COLUMN_TYPES)),
)
TABLE: Final = Shape(
    "Table",
    (
        Field("id", Kind.STR, non_empty=True, unique="table"),
        Field("name", Kind.STR),
        Field(
            "columns",
            Kind.OBJECTS,
            shape=COLUMN,
            max_items=MAX_COLUMNS,
            expect="must be a list of {name, type}",
            item_expect="must be an object {name, type}",
        ),
        Field("rows", Kind.ROWS, expect="must be a list of lists"),
        Field("header_rows", Kind.INT, optional=True, minimum=0),
        Field("locator", Kind.OBJECT, shape=LOCATOR),
        Field("attrs", Kind.FREE, optional=True),
    ),
)
ARTIFACT: Final = Shape(
    "Artifact",
    (
        Field("schema_version", Kind.INT, equals=SCHEMA_VERSION),
        Field("format", Kind.STR),  # the format asked for: checked against the call's (see check.Checker)
        Field("parser", Kind.STR, non_empty=True),
        Field("parser_version", Kind.STR, non_empty=True),
        Field("options", Kind.FREE),
        Field("attrs", Kind.FREE),
        Field("warnings", Kind.STRS),
        Field("coverage", Kind.OBJECT, shape=COVERAGE),
        Field("blocks", Kind.OBJECTS, shape=BLOCK, expect="must be a list"),
        Field("tables", Kind.OBJECTS, optional=True, shape=TABLE, expect="must be a list (or left out)"),
    ),
)
SHAPES: Final = (LOCATOR, BLOCK, FAILED_UNIT, COVERAGE, COLUMN, TABLE, ARTIFACT)

# What a model reads for a field left out (the others are required). attrs: each model its own new {}.
DEFAULTS: Final[dict[str, dict[str, object]]] = {
    "Locator": {f.name: None for f in LOCATOR.fields},
    "Block": {"parent": None, "depth": None},
    "Coverage": {"complete": None},
    "Table": {"header_rows": 1},
    "Artifact": {"tables": None},
}

# Messages shared by the kinds
OUT_OF_RANGE: Final = "integer outside signed 64-bit (-2^63 to 2^63-1)"
NOT_INT: Final = "must be an integer"
BAD_UNICODE: Final = "not valid Unicode (a lone surrogate)"
NOT_FINITE: Final = "a number must be finite (no NaN or Infinity)"
KIND_EXPECT: Final[dict[Kind, str]] = {
    Kind.STR: "must be a string",
    Kind.INT: NOT_INT,
    Kind.BOOL: "must be a bool",
    Kind.STRS: "must be a list of strings",
    Kind.FREE: "must be an object",
    Kind.OBJECT: "must be an object",
    Kind.OBJECTS: "must be a list",
    Kind.ROWS: "must be a list",
}


def one_of_text(f: Field) -> str:
    assert f.one_of is not None
    return f"must be one of {_sorted(f.one_of)}"


INT_RANGE: Final = (-(2**63), INT64_MAX)
