"""Shared fixtures: one Azurite per test session (from `make test`, or started here when pytest runs alone)."""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CORPUS = ROOT.parent / "shared" / "corpus"

from tools.azurite import start_azurite  # noqa: E402


@pytest.fixture(scope="session")
def azurite_connection_string() -> Iterator[str]:
    """The connection string of a running Azurite: `make test`'s, or one this session starts and stops."""
    existing = os.environ.get("AZURITE_CONNECTION_STRING")
    if existing:
        yield existing
        return
    az = start_azurite()
    try:
        yield az.connection_string
    finally:
        az.stop()


@pytest.fixture
def unique_name() -> str:
    """A lowercase name unique to the test, for containers, queues and tables that must not collide."""
    return "t" + uuid.uuid4().hex[:20]


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not (CORPUS / "MANIFEST.tsv").exists():
        raise RuntimeError(f"the test corpus is expected at {CORPUS} (../shared/corpus beside the repo)")
    return CORPUS


@pytest.fixture
def ocr_off(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """OCR off for one test (the setting is read once and cached: cleared before and after)."""
    from extract_fn.ocr import config

    monkeypatch.setenv("EXTRACTOR_OCR", "off")
    config.ocr_settings.cache_clear()
    yield
    config.ocr_settings.cache_clear()


HOSTILE_TIMEOUT_S = 30.0  # ~10x the slowest hostile answer on a loaded 2-core machine: a timeout is the bug


@pytest.fixture(scope="module")
def pool() -> Iterator[object]:
    """A worker pool for the hostile-input tests: one worker, 2 GiB, a generous timeout whose answer fails a test
    (the limit is the oracle, never an elapsed time)."""
    from extract_fn.workers import WorkerPool

    mib = 1024 * 1024
    with WorkerPool(1, timeout_s=HOSTILE_TIMEOUT_S, memory_limit_bytes=2048 * mib, max_output_bytes=64 * mib) as p:
        yield p
