"""The msgspec types generated from ``rules``: decoding bytes with them parses, type-checks and bounds every field
in one C pass (several times ``orjson.loads`` plus a Python walk), drops the fields the contract does not name, and
cleans cell errors. It stops at the first problem and says little, so a failure here is never reported: the bytes go
to ``check.Checker``, which reports every violation at its path. What a type cannot say (the rules across fields, a
free object's depth and its integers' range) ``fast`` checks on the decoded data."""

from __future__ import annotations

import functools
from typing import Annotated, Any, Final, Literal, NotRequired, TypedDict, Union

import msgspec

from shared.artifact.rules import ARTIFACT, INT_RANGE, Field, Kind, Shape

_I64: Final = Annotated[int, msgspec.Meta(ge=INT_RANGE[0], le=INT_RANGE[1])]


class _CellError(TypedDict):
    error: str  # other members are dropped, as the contract cleans them


_CELL: Final = Union[str, _I64, float, bool, None, _CellError]  # noqa: UP007 -- a value, not an annotation


def _meta(base: Any, **bounds: int | None) -> Any:
    given: dict[str, Any] = {k: v for k, v in bounds.items() if v is not None}
    return Annotated[base, msgspec.Meta(**given)] if given else base


def type_of(f: Field) -> Any:
    if f.kind is Kind.STR:
        if f.one_of is not None:
            return Literal[tuple(sorted(f.one_of))]
        return _meta(str, min_length=1 if f.non_empty else None, max_length=f.max_chars)
    if f.kind is Kind.INT:
        if f.equals is not None:
            return Literal[f.equals]
        low = INT_RANGE[0] if f.minimum is None else f.minimum
        return Annotated[int, msgspec.Meta(ge=low, le=INT_RANGE[1])]
    if f.kind is Kind.BOOL:
        return bool
    if f.kind is Kind.STRS:
        return _meta(list[_meta(str, max_length=f.max_chars)], max_length=f.max_items)  # type: ignore[misc]
    if f.kind is Kind.FREE:
        return dict[str, Any]
    if f.kind is Kind.ROWS:
        return list[list[_CELL]]  # type: ignore[valid-type]
    assert f.shape is not None
    item = typed_dict(f.shape)
    return item if f.kind is Kind.OBJECT else _meta(list[item], max_length=f.max_items)  # type: ignore[valid-type]


@functools.cache
def typed_dict(shape: Shape) -> Any:
    """The TypedDict of a shape: its optional fields NotRequired, so a field left out stays out. Made once per
    shape: ``built`` converts objects into the very types ``DECODER`` decodes with, so msgspec prepares each once."""
    fields = {f.name: NotRequired[type_of(f)] if f.optional else type_of(f) for f in shape.fields}
    return TypedDict(f"_{shape.model}", fields)  # type: ignore[operator]


DECODER: Final = msgspec.json.Decoder(typed_dict(ARTIFACT))
