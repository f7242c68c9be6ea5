"""The artifact as typed pydantic models: what ``shared.artifact.validate_artifact`` returns.

Kept apart from the checker so that ``check_artifact`` (run by every extractor worker) never imports pydantic, about
0.15 s of every cold process; ``shared.artifact`` loads this module the first time it builds models.
"""

from __future__ import annotations

from typing import Any, Final

import orjson
from pydantic import BaseModel, ConfigDict, Field


class _Model(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Locator(_Model):
    """Where a block or table lies in the original. Every member is optional; pairs come complete."""

    line_start: int | None = None
    line_end: int | None = None
    char_start: int | None = None
    char_end: int | None = None
    key_path: str | None = None
    page_start: int | None = None
    page_end: int | None = None
    sheet: str | None = None
    row_start: int | None = None
    row_end: int | None = None


class Block(_Model):
    id: str
    type: str  # one of shared.contract.BLOCK_TYPES
    text: str
    parent: str | None = None
    depth: int | None = None
    section_path: list[str]
    keys: list[str]
    attrs: dict[str, Any] = Field(default_factory=dict)
    locator: Locator


class FailedUnit(_Model):
    unit: str
    reason: str


class Coverage(_Model):
    unit: str
    total: int
    extracted: int
    failed: list[FailedUnit]
    lost: list[str]
    complete: bool | None = None


class Column(_Model):
    name: str
    type: str  # one of shared.contract.COLUMN_TYPES


class Table(_Model):
    id: str
    name: str
    columns: list[Column]
    rows: list[list[Any]]  # str | int | float | bool | None | {"error": str}
    header_rows: int = 1
    locator: Locator
    attrs: dict[str, Any] = Field(default_factory=dict)


class Artifact(_Model):
    schema_version: int
    format: str
    parser: str
    parser_version: str
    options: dict[str, Any]
    attrs: dict[str, Any]
    warnings: list[str]
    coverage: Coverage
    blocks: list[Block]
    tables: list[Table] | None = None

    def to_dict(self) -> dict[str, Any]:
        """The cleaned artifact as plain JSON data: fields the contract does not name are gone, optional fields
        appear only when the artifact sent them (``blocks[].attrs`` and ``tables[].attrs`` included)."""
        return self.model_dump(exclude_unset=True)

    def to_json(self) -> bytes:
        """The cleaned artifact as JSON bytes (see ``to_dict``)."""
        return orjson.dumps(self.to_dict())


# Model building at C speed (shared.artifact.build): each model's slots set through their descriptors, a chunk at a
# time with map (about 40% less than object.__setattr__, which looks the name up each time).
SET_DICT: Final = BaseModel.__dict__["__dict__"].__set__
SET_FIELDS_SET: Final = BaseModel.__dict__["__pydantic_fields_set__"].__set__
SET_EXTRA: Final = BaseModel.__dict__["__pydantic_extra__"].__set__
SET_PRIVATE: Final = BaseModel.__dict__["__pydantic_private__"].__set__
