"""The built-artifact checker (``shared.artifact.built``) against ``check_artifact`` on the artifact's JSON.

``same_verdict_everywhere`` wraps the validator so that every artifact a test hands it (a dict, or bytes read back
into objects) is also judged by ``check_built``, which must give the same verdict and the same violations as
``check_artifact(orjson.dumps(doc))``; ``holds`` saying yes where those bytes fail fails the test."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest

import shared.artifact as artifact_pkg
from shared.artifact import InvalidArtifact, check_artifact
from shared.artifact.built import check_built, holds


def _verdict(run: Callable[[], object]) -> list[str] | None:
    try:
        run()
    except InvalidArtifact as exc:
        return [str(v) for v in exc.violations]
    return None


def assert_same_verdict(doc: Any, fmt: str, size: int) -> bool | None:
    """Both verdicts on ``doc`` agree; returns what ``holds`` said (None: orjson cannot serialize ``doc``)."""
    said = holds(doc, format=fmt, original_size=size)
    try:
        raw = orjson.dumps(doc)
    except orjson.JSONEncodeError:  # no JSON to judge: the worker serializes after the check and refuses it there
        return None
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
