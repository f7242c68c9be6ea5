"""The verdict on a built artifact (the dict a format module returns), without serializing and parsing it back.

``holds(doc, ...)`` answers whether ``check_artifact(orjson.dumps(doc), ...)`` would find the artifact valid, from
the objects themselves: ``msgspec.convert`` into ``schema``'s types (the ones ``schema.DECODER`` decodes bytes with,
generated from ``rules``) checks every field's type and bounds, then ``fast.holds`` the rules a type cannot say,
the same code the bytes' fast path runs. No rule is written here.

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
from collections.abc import Mapping
from typing import Any, Final

import msgspec
import orjson

from shared.artifact import check_artifact, fast, schema
from shared.artifact.rules import ARTIFACT

_TYPE: Final = schema.typed_dict(ARTIFACT)


def holds(doc: Mapping[str, Any], *, format: str, original_size: int) -> bool:
    """True only if ``check_artifact(orjson.dumps(doc), format=..., original_size=...)`` passes (when orjson can
    serialize ``doc`` at all). The objects are not changed; the cyclic collector is paused for the call."""
    if original_size < 0:
        raise ValueError("original_size must be 0 or more")
    gc_was_enabled = gc.isenabled()
    gc.disable()  # as check_artifact: millions of new containers and no cycles
    try:
        try:
            typed = msgspec.convert(doc, _TYPE)
        except (msgspec.ValidationError, RecursionError):
            return False
        return fast.holds(typed, format, original_size, {})
    finally:
        if gc_was_enabled:
            gc.enable()


def check_built(doc: Mapping[str, Any], *, format: str, original_size: int) -> None:
    """``check_artifact`` on the artifact's JSON, as ``orjson.dumps`` writes it: the same verdict and the same
    violations. An artifact ``holds`` passes is never serialized; any other is, and its bytes are checked (and
    reported). Raises ``InvalidArtifact``. For an artifact orjson cannot serialize (see the module's doc) the
    verdict means nothing: the caller serializes it anyway, and ``orjson.dumps`` refuses it there."""
    if not holds(doc, format=format, original_size=original_size):
        check_artifact(orjson.dumps(doc), format=format, original_size=original_size)
