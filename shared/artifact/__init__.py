"""The extraction artifact (extractor contract v1): typed models and the validator every side trusts.

``validate_artifact`` is the one gate: the reference extractor checks its own bytes before they leave
(``check_artifact``, the same rules without building models), the LOOM client runs it on a 200 and refuses a failing
artifact as ``invalid_artifact``. It reports EVERY rule an artifact breaks (``InvalidArtifact.violations``), each at a
JSON path such as ``blocks[3].locator.line_end``, and returns the artifact cleaned: fields the contract does not name
are dropped at every level, while the contents of the free objects (``options`` and every ``attrs``) are kept.

The package, by concern (docs/artifact-validator.md has the design, the reading of the contract and the figures):

- ``rules``: the contract's rules as data, each field once (type, bounds, the path and text of its violation);
- ``schema``: the msgspec types generated from them, which decode bytes and check every field's type and bounds;
- ``fast``: the rules a type cannot say, tested over the decoded artifact a field at a time (a yes or no);
- ``check``: the checker that walks the rules and reports every violation (bytes the fast path does not pass,
  and every dict); ``cells``: what fits each column type; ``paths``: how a path is written;
- ``build``: the pydantic models of ``shared.artifact_models`` from the decoded dicts.

An artifact the fast path passes is valid, and its models are built from the decoded dicts. Anything else (a decode
error, a rule that does not hold, a dict passed in) goes to the checker, which reports what is wrong; an artifact it
finds valid after all (a float past 2^63, a key sent twice) is re-encoded and decoded by the fast path's types, so
every artifact is cleaned and built one way.
"""

from __future__ import annotations

import gc
import json
from typing import TYPE_CHECKING, Any, Final

import orjson

from shared.artifact import fast, schema
from shared.artifact.check import Checker
from shared.artifact.rules import ARTIFACT
from shared.artifact.violations import InvalidArtifact, Violation
from shared.contract import INT64_MAX, MAX_NESTING

if TYPE_CHECKING:  # the models are loaded only when built: check_artifact never imports pydantic
    from shared.artifact_models import Artifact, Block, Column, Coverage, FailedUnit, Locator, Table

__all__ = [
    "Artifact",
    "Block",
    "Column",
    "Coverage",
    "FailedUnit",
    "InvalidArtifact",
    "Locator",
    "Table",
    "Violation",
    "check_artifact",
    "nesting_depth",
    "validate_artifact",
]

_MODEL_NAMES: Final = frozenset({"Locator", "Block", "FailedUnit", "Coverage", "Column", "Table", "Artifact"})
FAST_PATH: bool = True  # False: every artifact goes to the checker (tests run both ways, which must agree)


def __getattr__(name: str) -> Any:
    """``from shared.artifact import Artifact`` (and the other models) loads them."""
    if name in _MODEL_NAMES:
        from shared import artifact_models

        return getattr(artifact_models, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def nesting_depth(value: object, limit: int = MAX_NESTING + 1) -> int:
    """The nesting depth of a JSON value as the validator counts it: a scalar is 0, an object or an array is
    1 + the deepest of its members. Stops counting at ``limit`` (so a cycle or a very deep value is cheap)."""
    if isinstance(value, dict):
        members: Any = value.values()
    elif isinstance(value, list | tuple):
        members = value
    else:
        return 0
    if limit <= 1:
        return 1
    deepest = 0
    for v in members:
        if isinstance(v, dict | list | tuple):
            deepest = max(deepest, nesting_depth(v, limit - 1))
            if deepest >= limit - 1:
                break
    return 1 + deepest


def _fast(
    raw: bytes | bytearray | memoryview, fmt: str, original_size: int, build: bool
) -> tuple[bool, Artifact | None]:
    """The fast path: (True, the models or None) when the artifact keeps every rule, else (False, None): the
    checker looks again. The blocks' models are built a chunk at a time, as each chunk passes."""
    try:
        doc = schema.DECODER.decode(raw)
    except (ValueError, RecursionError):  # msgspec's DecodeError and ValidationError are ValueErrors
        return False, None
    if not build:
        return fast.holds(doc, fmt, original_size, {}), None
    from shared.artifact import build as builder

    built: list[Any] = []
    sets = builder.FieldSets()
    if not fast.holds(doc, fmt, original_size, {}, lambda chunk: built.extend(builder.blocks(chunk, sets))):
        return False, None
    return True, builder.artifact(doc, built, sets)


def _load_exact(raw: bytes) -> Any:
    """Re-read JSON with the standard library, which keeps an integer literal past 64 bits an int (orjson makes it
    a float). Only run after orjson has accepted the bytes, so the grammar is already strict JSON."""

    def parse_int(s: str) -> int:
        return int(s) if len(s) <= 40 else INT64_MAX + 1  # any out-of-range int: it is a violation either way

    return json.loads(raw, parse_int=parse_int)


def _careful(raw: object, fmt: str, original_size: int) -> Any:
    """The checker's look: raises InvalidArtifact with every violation, or returns the artifact as plain data."""
    if isinstance(raw, dict):
        checker = Checker(fmt, original_size, trusted=False)
        checker.scan_json(raw)
        checker.artifact(raw, ARTIFACT)
        doc: Any = raw
    else:
        try:
            doc = orjson.loads(raw)  # type: ignore[arg-type]
        except orjson.JSONDecodeError as e:
            what = "not valid Unicode" if "surrogate" in str(e) or "UTF-8" in str(e) else "not valid JSON"
            raise InvalidArtifact([Violation("$", f"{what}: {e}")]) from None
        checker = Checker(fmt, original_size, trusted=True)
        checker.artifact(doc, ARTIFACT)
        if checker.suspect_big_int:  # a float that may be an integer literal past 64 bits: read the text exactly
            doc = _load_exact(bytes(raw))  # type: ignore[call-overload]  # raw is bytes-like here: dicts took the branch above
            checker = Checker(fmt, original_size, trusted=True)
            checker.artifact(doc, ARTIFACT)
    if checker.violations:
        raise InvalidArtifact(checker.violations)
    return doc


def _run(raw: object, fmt: str, original_size: int, build: bool) -> Artifact | None:
    if original_size < 0:
        raise ValueError("original_size must be 0 or more")
    if not isinstance(raw, dict | bytes | bytearray | memoryview):
        raise TypeError(f"an artifact is bytes or a dict, not {type(raw).__name__}")
    gc_was_enabled = gc.isenabled()
    gc.disable()  # millions of containers and no cycles: the collector's passes would cost more than the parse
    try:
        if FAST_PATH and not isinstance(raw, dict):
            passed, artifact = _fast(raw, fmt, original_size, build)
            if passed:
                return artifact
        valid = _careful(raw, fmt, original_size)
        if not build:
            return None
        from shared.artifact import build as builder

        doc = schema.DECODER.decode(orjson.dumps(valid))  # cleaned the one way (see the module's doc)
        return builder.artifact(doc, None, builder.FieldSets())
    finally:
        if gc_was_enabled:
            gc.enable()


def validate_artifact(
    raw: bytes | bytearray | memoryview | dict[str, Any], *, format: str, original_size: int
) -> Artifact:
    """Check an artifact against every rule of the contract and return it typed and cleaned.

    ``raw``: the 200's body (bytes), or an artifact already as Python data (a dict, as a test makes; it is left as it
    was). ``format``: the format the server asked for. ``original_size``: the original's size in bytes (bounds
    char_end and line_end). Raises ``InvalidArtifact`` listing every violation. The cyclic garbage collector is
    paused for the call."""
    artifact = _run(raw, format, original_size, build=True)
    assert artifact is not None
    return artifact


def check_artifact(raw: bytes | bytearray | memoryview | dict[str, Any], *, format: str, original_size: int) -> None:
    """``validate_artifact`` without building the models: the same rules and violations, for a caller that only
    needs the verdict (the extractor checking its own bytes before they leave); it never imports pydantic."""
    _run(raw, format, original_size, build=False)
