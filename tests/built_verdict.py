"""The built-artifact checker (``shared.artifact.built``) against ``check_artifact`` on the artifact's JSON.

``same_verdict_everywhere`` wraps the validator so that every artifact a test hands it (a dict, or bytes read back
into objects) is also judged by ``check_built``, which must give the same verdict and the same violations as
``check_artifact(orjson.dumps(doc))``; ``holds`` saying yes where those bytes fail fails the test."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import orjson
import pytest

import shared.artifact as artifact_pkg
from shared.artifact import InvalidArtifact, check_artifact
from shared.artifact.built import check_built, dump_checked, holds


def _verdict(run: Callable[[], object]) -> list[str] | None:
    try:
        run()
    except InvalidArtifact as exc:
        return [str(v) for v in exc.violations]
    return None


def _dumped_checked(doc: Any, fmt: str, size: int) -> tuple[bytes, bool | str]:
    """What ``dump_checked`` writes for a copy of ``doc`` (which it consumes), and its verdict (or orjson's error)."""
    parts: list[bytes] = []
    try:
        held: bool | str = dump_checked(
            copy.deepcopy(doc), format=fmt, original_size=size, write=lambda b: parts.append(bytes(b))
        )
    except orjson.JSONEncodeError as exc:
        held = str(exc)
    return b"".join(parts), held


def assert_same_verdict(doc: Any, fmt: str, size: int) -> bool | None:
    """Both verdicts on ``doc`` agree; returns what ``holds`` said (None: orjson cannot serialize ``doc``). The one
    pass that checks and serializes (``dump_checked``) writes exactly ``orjson.dumps(doc)`` (or raises its error)
    and gives ``holds``' verdict."""
    said = holds(doc, format=fmt, original_size=size)
    written, held = _dumped_checked(doc, fmt, size)
    try:
        raw = orjson.dumps(doc)
    except orjson.JSONEncodeError as exc:  # no JSON to judge: the worker refuses it at the dumps
        refused = str(exc)
    else:
        refused = None
    if refused is not None:
        assert held == refused
        return None
    assert written == raw
    assert held is said
    expected = _verdict(lambda: check_artifact(raw, format=fmt, original_size=size))
    assert not (said and expected is not None), f"holds() passed an artifact whose JSON fails: {expected}"
    assert _verdict(lambda: check_built(doc, format=fmt, original_size=size)) == expected
    return said


@pytest.fixture
def same_verdict_everywhere(monkeypatch: pytest.MonkeyPatch) -> list[bool | None]:
    """Every artifact the test validates is judged both ways too; yields what ``holds`` said on each."""
    run = artifact_pkg._run
    said: list[bool | None] = []
    busy = False

    def wrapped(raw: object, fmt: str, original_size: int, build: bool) -> Any:
        nonlocal busy
        if not busy and original_size >= 0 and isinstance(raw, dict | bytes | bytearray | memoryview):
            doc: Any = raw
            if not isinstance(raw, dict):
                try:
                    doc = orjson.loads(raw)
                except orjson.JSONDecodeError:
                    doc = None
            if isinstance(doc, dict):
                busy = True
                with monkeypatch.context() as m:
                    m.setattr(artifact_pkg, "_run", run)
                    try:
                        said.append(assert_same_verdict(doc, fmt, original_size))
                    finally:
                        busy = False
        return run(raw, fmt, original_size, build)

    monkeypatch.setattr(artifact_pkg, "_run", wrapped)
    return said
