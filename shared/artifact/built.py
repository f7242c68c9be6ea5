"""The verdict on a built artifact (the dict a format module returns), without serializing and parsing it back.

``holds(doc, ...)`` answers whether ``check_artifact(orjson.dumps(doc), ...)`` would find the artifact valid, from
the objects themselves: ``msgspec.convert`` into ``schema``'s types (the ones ``schema.DECODER`` decodes bytes with,
generated from ``rules``) checks every field's type and bounds, then ``fast.holds`` the rules a type cannot say,
the same code the bytes' fast path runs. No rule is written here. The blocks and the tables' rows are converted
a chunk at a time as ``fast`` reaches them, so the check holds no typed copy of the artifact (only of a chunk).

It may say no where the bytes would pass (then ``check_built`` asks the bytes, which also report every violation),
never yes where they would not. What differs between the objects and their JSON, and why the yes still holds:

- orjson writes NaN and +-Infinity as ``null``: a float is taken only by a cell (null fits every column) or inside a
  free object (any value), and ``cells.column_ok`` refuses a NaN or an infinite number anyway;
- orjson writes a tuple as an array, a subclass of str/int/dict/list as its base, an enum as its value, a date as
  text, a dataclass as an object: ``convert`` turns typed fields into their exact types or refuses them, and the
  values of a free object (which ``convert`` leaves as they are) must be exact JSON types (``fast``) or it says no;
- what orjson refuses (a lone surrogate, an integer past 64 bits, a key that is not a string, an unknown type,
  nesting past 255) has no JSON to check: the caller serializes the artifact anyway and ``orjson.dumps`` raises.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator, Mapping
from typing import Any, Final

import msgspec
import orjson

from shared.artifact import check_artifact, fast, schema
from shared.artifact.rules import ARTIFACT, BLOCK, TABLE, Kind

_TYPE: Final = schema.typed_dict(ARTIFACT)
_BLOCKS: Final = list[schema.typed_dict(BLOCK)]  # type: ignore[misc]
_ROWS: Final = schema.type_of(next(f for f in TABLE.fields if f.kind is Kind.ROWS))


def holds(doc: Mapping[str, Any], *, format: str, original_size: int) -> bool:
    """True only if ``check_artifact(orjson.dumps(doc), format=..., original_size=...)`` passes (when orjson can
    serialize ``doc`` at all). The objects are not changed; the cyclic collector is paused for the call."""
    if original_size < 0:
        raise ValueError("original_size must be 0 or more")
    gc_was_enabled = gc.isenabled()
    gc.disable()  # as check_artifact: millions of new containers and no cycles
    try:
        return _holds(doc, format, original_size)
    except (msgspec.ValidationError, RecursionError):
        return False
    finally:
        if gc_was_enabled:
            gc.enable()


def _holds(doc: Mapping[str, Any], fmt: str, original_size: int) -> bool:
    """The artifact without its blocks and rows is converted at once; the blocks and each table's rows a chunk at
    a time, as ``fast`` tests them (never a typed copy of them all)."""
    blocks = doc.get("blocks") if isinstance(doc, dict) else None
    tables = doc.get("tables", []) if isinstance(doc, dict) else None
    if not (
        isinstance(blocks, list)
        and isinstance(tables, list)
        and all(isinstance(t, dict) and isinstance(t.get("rows"), list) for t in tables)
    ):  # not the usual shape: converted whole (and most likely refused)
        return fast.holds(msgspec.convert(doc, _TYPE), fmt, original_size, {})
    top: dict[str, Any] = {**doc, "blocks": []}
    if "tables" in doc:
        top["tables"] = [{**t, "rows": []} for t in tables]
    typed = msgspec.convert(top, _TYPE)
    typed["blocks"] = blocks  # the module's own lists, each converted a chunk at a time by chunks()
    for typed_table, table in zip(typed.get("tables", ()), tables, strict=True):
        typed_table["rows"] = table["rows"]

    def chunks(items: list[Any], size: int) -> Iterator[list[Any] | None]:
        kind = _BLOCKS if items is blocks else _ROWS
        for lo in range(0, len(items), size):
            try:
                yield msgspec.convert(items[lo : lo + size], kind)
            except msgspec.ValidationError:
                yield None

    return fast.holds(typed, fmt, original_size, {}, chunks=chunks)


def check_built(doc: Mapping[str, Any], *, format: str, original_size: int) -> None:
    """``check_artifact`` on the artifact's JSON, as ``orjson.dumps`` writes it: the same verdict and the same
    violations. An artifact ``holds`` passes is never serialized; any other is, and its bytes are checked (and
    reported). Raises ``InvalidArtifact``. For an artifact orjson cannot serialize (see the module's doc) the
    verdict means nothing: the caller serializes it anyway, and ``orjson.dumps`` refuses it there."""
    if not holds(doc, format=format, original_size=original_size):
        check_artifact(orjson.dumps(doc), format=format, original_size=original_size)
