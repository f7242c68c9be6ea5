"""The pool's memory of inputs that ended a worker (extract_fn/crash_memory.py), and the MemoryError reply built
without allocating at the memory limit (extract_fn/workers.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from extract_fn.crash_memory import CrashMemory
from extract_fn.formats.base import ExtractRequest
from extract_fn.workers import WorkerPool
from shared.contract import ErrorCode, ExtractionError

H = "tests.hostile_extractors:"
MIB = 1024 * 1024
SCOPE = ("x:extract", "text", None, None, 1024)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_an_input_is_recalled_until_its_age_passes_the_ttl() -> None:
    clock = FakeClock()
    memory = CrashMemory(max_entries=8, ttl_s=60, clock=clock)
    memory.remember(SCOPE, b"bad file", "resource_limit", "it crashed")
    found = memory.recall(SCOPE, b"bad file")
    assert found is not None
    assert (found.code, found.message) == ("resource_limit", "it crashed")
    assert memory.recall(SCOPE, b"bad filf") is None  # same size, other bytes
    assert memory.recall(SCOPE, b"other") is None
    assert memory.recall((*SCOPE[:2], "latin-1", *SCOPE[3:]), b"bad file") is None  # other options
    clock.now += 59
    assert memory.recall(SCOPE, b"bad file") is not None
    clock.now += 2
    assert memory.recall(SCOPE, b"bad file") is None
    assert len(memory) == 0
    assert memory.hits == 2


def test_the_memory_keeps_at_most_max_entries_dropping_the_oldest() -> None:
    memory = CrashMemory(max_entries=3, ttl_s=600, clock=FakeClock())
    for i in range(5):
        memory.remember(SCOPE, b"file %d" % i, "resource_limit", f"crash {i}")
    assert len(memory) == 3
    assert [memory.recall(SCOPE, b"file %d" % i) is not None for i in range(5)] == [False, False, True, True, True]
    assert memory._sizes == {6: 3}  # the size index follows the entries
    memory.remember(SCOPE, b"file 4", "resource_limit", "again")  # remembering again refreshes, never duplicates
    assert len(memory) == 3


def test_a_zero_sized_memory_remembers_nothing() -> None:
    memory = CrashMemory(max_entries=0)
    memory.remember(SCOPE, b"x", "resource_limit", "m")
    assert memory.recall(SCOPE, b"x") is None


@pytest.fixture
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(1, timeout_s=30, memory_limit_bytes=512 * MIB, max_output_bytes=2 * MIB) as p:
        yield p


def _error(pool: WorkerPool, extractor: str, data: bytes) -> ExtractionError:
    with pytest.raises(ExtractionError) as info:
        pool.run_sync(H + extractor, data, ExtractRequest(format="text"))
    return info.value


def test_a_file_that_killed_a_worker_is_answered_at_once_the_second_time(pool: WorkerPool) -> None:
    first = _error(pool, "segfault", b"crashes the parser\n")
    assert first.code is ErrorCode.RESOURCE_LIMIT
    assert "SIGSEGV" in first.message
    replaced = pool.stats.replaced
    assert replaced == 1
    pids = pool.pids()

    second = _error(pool, "segfault", b"crashes the parser\n")
    assert second.code is first.code
    assert second.message.startswith(first.message)
    assert "this same file ended a worker process" in second.message
    assert pool.stats.replaced == replaced  # no new death
    assert pool.pids() == pids
    assert pool.crash_memory.hits == 1

    # A different file is unaffected: it reaches a worker (and, this extractor being what it is, ends it).
    other = _error(pool, "segfault", b"another file\n")
    assert "this same file" not in other.message
    assert pool.stats.replaced == replaced + 1


def test_the_memory_error_reply_is_built_without_allocating_at_the_limit(pool: WorkerPool) -> None:
    """The module fills the heap to its last bytes: the reply still says memory, not that the worker died (the old
    reply was built with orjson at the limit, which crashed the worker)."""
    err = _error(pool, "exhaust_memory", b"fills the heap\n")
    assert err.code is ErrorCode.RESOURCE_LIMIT
    assert err.message == "the extraction needed more memory than a worker may use (512 MiB)"
    # The worker retires after a MemoryError; the file is remembered like a crash.
    again = _error(pool, "exhaust_memory", b"fills the heap\n")
    assert again.message.startswith(err.message + " (this same file ended a worker process")


def test_a_costly_refusal_is_answered_from_memory_the_second_time(pool: WorkerPool, tmp_path: Path) -> None:
    """A file refused after more than COSTLY_REFUSAL_S of a worker's time gets the same answer, word for word,
    without a worker the next time (a client looping a hostile file costs one run); another file still runs."""
    runs = tmp_path / "runs.txt"
    data = f"{runs}\n".encode()
    first = _error(pool, "slow_refusal", data)
    assert first.code is ErrorCode.RESOURCE_LIMIT
    completed = pool.stats.completed
    second = _error(pool, "slow_refusal", data)
    assert (second.code, second.message) == (first.code, first.message)
    assert pool.stats.completed == completed  # no worker answered it
    assert runs.read_text().count("run") == 1
    other_runs = tmp_path / "other.txt"
    _error(pool, "slow_refusal", f"{other_runs}\n".encode())
    assert other_runs.read_text().count("run") == 1
    assert pool.stats.completed == completed + 1
