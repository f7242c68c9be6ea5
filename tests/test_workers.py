"""The worker pool: isolation, limits and replacement (extract_fn/workers.py), with tests/hostile_extractors.py."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from extract_fn import workers
from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.frame import FormatContext, GcPolicy, format_module, request_gc
from extract_fn.workers import PoolUnavailable, SpooledReply, WorkerPool, run_forked
from shared.artifact import InvalidArtifact, check_artifact, validate_artifact
from shared.artifact_builder import ArtifactBuilder, make_locator
from shared.contract import ErrorCode, ExtractionError
from tests.hostile_extractors import echo, invalid_artifact, row_table

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
H = "tests.hostile_extractors:"
MIB = 1024 * 1024
MAX_OUTPUT = 2 * MIB
# A limit no normal extraction here comes near, however busy the machine: only a module that never finishes reaches it.
GENEROUS_S = 120.0
# The limit for a module that never finishes (sleep_forever, busy_loop): it must fire; how soon does not matter.
NEVER_FINISHES_S = 0.5


def _request(**kw: Any) -> ExtractRequest:
    return ExtractRequest(format=kw.pop("format", "text"), **kw)


def _ok(pool: WorkerPool, extractor: str = "summarize", data: bytes = b"hello\n", **kw: Any) -> dict[str, Any]:
    raw = pool.run_sync(H + extractor, data, _request(**kw))
    artifact: dict[str, Any] = orjson.loads(raw)
    validate_artifact(raw, format=artifact["format"], original_size=len(data))
    return artifact


def _error(
    pool: WorkerPool, extractor: str, data: bytes = b"hello\n", timeout_s: float | None = None, **kw: Any
) -> ExtractionError:
    with pytest.raises(ExtractionError) as info:
        pool.run_sync(H + extractor, data, _request(**kw), timeout_s=timeout_s)
    return info.value


@pytest.fixture(scope="module")
def solo() -> Iterator[WorkerPool]:
    """One worker, so "the next request" runs on the slot the hostile one ran on."""
    with WorkerPool(1, timeout_s=GENEROUS_S, memory_limit_bytes=512 * MIB, max_output_bytes=MAX_OUTPUT) as pool:
        yield pool


@pytest.fixture(scope="module")
def duo() -> Iterator[WorkerPool]:
    with WorkerPool(2, timeout_s=GENEROUS_S, memory_limit_bytes=1024 * MIB, max_output_bytes=64 * MIB) as pool:
        yield pool


# ---------------------------------------------------------------------------------------------------------------
# Each hostile extractor ends in its code, and the next request on the same pool is served


HOSTILE = [
    # extractor, name, code, whether the worker is replaced
    ("sleep_forever", "", ErrorCode.TIMEOUT, True),
    ("busy_loop", "", ErrorCode.TIMEOUT, True),
    ("allocate_10gb", "", ErrorCode.RESOURCE_LIMIT, True),
    ("allocate_gradually", "", ErrorCode.RESOURCE_LIMIT, True),
    ("huge_output", str(5 * MAX_OUTPUT), ErrorCode.RESOURCE_LIMIT, False),
    ("exit_hard", "", ErrorCode.RESOURCE_LIMIT, True),
    ("segfault", "", ErrorCode.RESOURCE_LIMIT, True),
    ("raise_value_error", "", ErrorCode.CORRUPT, False),
    ("raise_extraction_error", "", ErrorCode.ENCODING, False),
    ("raise_system_exit", "", ErrorCode.CORRUPT, True),
    ("not_json", "", ErrorCode.CORRUPT, False),
    ("returns_list", "", ErrorCode.CORRUPT, False),
    ("import_missing", "", ErrorCode.FORMAT_UNAVAILABLE, True),
]


@pytest.mark.parametrize(("extractor", "name", "code", "replaced"), HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_extractor_then_next_request(
    solo: WorkerPool, extractor: str, name: str, code: ErrorCode, replaced: bool
) -> None:
    before = _ok(solo)["attrs"]["pid"]
    assert solo.pids() == [before]
    stats_before = solo.stats.replaced
    err = _error(solo, extractor, name=name, timeout_s=NEVER_FINISHES_S if code == ErrorCode.TIMEOUT else None)
    assert err.code == code, err.message
    assert "Traceback" not in err.message
    after = _ok(solo)["attrs"]["pid"]
    assert (after != before) is replaced
    assert solo.stats.replaced - stats_before == (1 if replaced else 0)
    assert solo.pending == 0


def test_messages_say_what_happened(solo: WorkerPool) -> None:
    # Bytes no earlier test sent: the pool remembers an input that ended a worker (extract_fn/crash_memory.py).
    msg = _error(solo, "allocate_10gb", b"not sent before\n").message
    assert msg == "the extraction needed more memory than a worker may use (512 MiB)"
    msg = _error(solo, "exit_hard").message
    assert msg.startswith("the extraction ended its worker process (exit status 1)")
    assert "SIGSEGV" in _error(solo, "segfault").message
    msg = _error(solo, "raise_value_error").message
    assert msg == "the text parser failed on this file (ValueError)"  # no message text, no path, no traceback
    # refused before serializing; bytes of its own (the pool remembers refusals by bytes and options, not by name,
    # which only this test module's extractor reads)
    msg = _error(solo, "huge_output", b"three times the limit\n", name=str(3 * MAX_OUTPUT)).message
    assert (
        msg
        == f"the artifact's text alone is {3 * MAX_OUTPUT} characters, over this service's limit of {MAX_OUTPUT} bytes"
    )
    many = b"a\n" * 50_000  # little text, many blocks: refused as its bytes pass the limit, not all serialized
    msg = _error(solo, "echo", many).message
    assert msg.startswith("the artifact is at least ")
    assert msg.endswith(f"bytes, over this service's limit of {MAX_OUTPUT} bytes")
    written = int(msg.removeprefix("the artifact is at least ").split()[0])
    whole = len(orjson.dumps(echo(many, _request(max_output_bytes=MAX_OUTPUT))))
    assert MAX_OUTPUT < written < whole
    assert "cannot be loaded" in _error(solo, "import_missing").message


def test_a_500_mb_artifact_is_refused_by_the_output_limit() -> None:
    # The default limits: 2 GiB of memory per worker, 256 MiB of output. The module builds a 500 MB artifact; the
    # worker refuses it as over the output limit (before orjson, which would reserve 4 GB for the one string), and
    # survives.
    with WorkerPool(1, timeout_s=GENEROUS_S, memory_limit_bytes=2048 * MIB, max_output_bytes=256 * MIB) as pool:
        pid = _ok(pool)["attrs"]["pid"]
        err = _error(pool, "huge_output")
        assert err.code == ErrorCode.RESOURCE_LIMIT
        assert err.message.endswith(f"over this service's limit of {256 * MIB} bytes")
        assert _ok(pool)["attrs"]["pid"] == pid


def test_a_worker_killed_while_idle_is_replaced_without_failing_a_request(solo: WorkerPool) -> None:
    pid = _ok(solo)["attrs"]["pid"]
    os.kill(pid, signal.SIGKILL)  # as the kernel's OOM killer would
    deadline = time.monotonic() + 120  # it must go; how soon does not matter
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _gone(pid)
    assert _ok(solo)["attrs"]["pid"] not in (pid, None)


def test_a_printing_library_cannot_corrupt_the_protocol(solo: WorkerPool) -> None:
    artifact = _ok(solo, "prints_to_stdout", b"one\ntwo\n")
    assert [b["text"] for b in artifact["blocks"]] == ["one", "two"]


def test_request_fields_and_the_output_budget_reach_the_module(solo: WorkerPool) -> None:
    attrs = _ok(solo, name="report.sql", format="sql", encoding="latin-1", sql_dialect="postgres")["attrs"]
    assert attrs["name"] == "report.sql"
    assert attrs["options"] == {"encoding": "latin-1", "sql_dialect": "postgres"}
    assert attrs["max_output_bytes"] == MAX_OUTPUT  # the pool's limit, whatever the request said


def test_a_per_call_timeout(solo: WorkerPool) -> None:
    with pytest.raises(ExtractionError) as info:
        solo.run_sync(H + "sleep_forever", b"", _request(), timeout_s=0.3)
    assert info.value.code == ErrorCode.TIMEOUT
    assert info.value.message == "the extraction took longer than 0.3 s, this service's limit"


# ---------------------------------------------------------------------------------------------------------------
# Data, parallelism, recycling


def test_large_input_arrives_intact(duo: WorkerPool) -> None:
    data = os.urandom(20 * MIB)
    attrs = _ok(duo, data=data)["attrs"]
    assert attrs["size"] == len(data)
    assert attrs["sha256"] == hashlib.sha256(data).hexdigest()


def test_large_output_arrives_intact(duo: WorkerPool) -> None:
    data = b"".join(b"line %d %s\n" % (i, os.urandom(8).hex().encode()) for i in range(50_000))
    artifact = _ok(duo, "echo", data)
    assert len(artifact["blocks"]) == 50_000
    assert "\n".join(b["text"] for b in artifact["blocks"]) + "\n" == data.decode()


def test_extractions_run_in_parallel_up_to_the_pool_size(duo: WorkerPool, tmp_path: Path) -> None:
    # Each extraction waits (up to 90 s) until both have started: they succeed only if both run at once.
    async def both() -> list[bytes]:
        req = _request(name=str(tmp_path))
        return list(await asyncio.gather(*(duo.run(H + "rendezvous", b"2", req) for _ in range(2))))

    results = asyncio.run(both())
    pids = {orjson.loads(r)["attrs"]["pid"] for r in results}
    assert len(pids) == 2
    assert pids == set(duo.pids())


def test_workers_are_recycled_after_max_tasks() -> None:
    with WorkerPool(1, timeout_s=GENEROUS_S, memory_limit_bytes=None, max_output_bytes=MAX_OUTPUT, max_tasks=2) as pool:
        pids = [_ok(pool)["attrs"]["pid"] for _ in range(5)]
    assert pids[0] == pids[1] != pids[2] == pids[3] != pids[4]


def test_pyarrow_and_pdfium_work_under_the_default_memory_limit() -> None:
    files = f"{CORPUS}/parquet/parquet-testing-alltypes_tiny_pages.parquet\n{CORPUS}/pdf/sample-files-021-pdfa.pdf"
    with WorkerPool(1, timeout_s=GENEROUS_S, memory_limit_bytes=2048 * MIB, max_output_bytes=MAX_OUTPUT) as pool:
        attrs = _ok(pool, "native_libraries", files.encode())["attrs"]
    assert attrs["parquet_rows"] == 7300
    assert attrs["pdf_pages"] >= 1
    assert attrs["pdf_chars"] > 0


# ---------------------------------------------------------------------------------------------------------------
# When the pool cannot serve


def test_a_worker_that_cannot_start_is_unavailable_not_a_file_error() -> None:
    pool = WorkerPool(1, timeout_s=5, memory_limit_bytes=None, max_output_bytes=MAX_OUTPUT, python="/bin/false")
    with pool, pytest.raises(PoolUnavailable, match="failed to start"):
        pool.run_sync(H + "summarize", b"x", _request())


def test_a_closed_pool_is_unavailable() -> None:
    pool = WorkerPool(1, timeout_s=5, memory_limit_bytes=None, max_output_bytes=MAX_OUTPUT)
    pool.start()
    pool.close()
    with pytest.raises(PoolUnavailable, match="closed"):
        pool.run_sync(H + "summarize", b"x", _request())
    assert pool.pids() == [None]


def test_closing_the_pool_mid_extraction_is_unavailable_not_a_file_error() -> None:
    pool = WorkerPool(1, timeout_s=GENEROUS_S, memory_limit_bytes=None, max_output_bytes=MAX_OUTPUT)

    async def scenario() -> BaseException | None:
        running = asyncio.ensure_future(pool.run(H + "sleep_forever", b"", _request()))
        await asyncio.sleep(0.3)  # most likely inside the extractor by now; before it, the answer is the same
        assert pool.pending == 1
        await asyncio.to_thread(pool.close)
        try:
            await running
        except BaseException as exc:
            return exc
        return None

    pool.start()
    outcome = asyncio.run(scenario())
    assert isinstance(outcome, PoolUnavailable), outcome
    assert pool.pids() == [None]


def test_a_full_queue_is_unavailable_and_the_pool_recovers() -> None:
    pool = WorkerPool(1, timeout_s=GENEROUS_S, memory_limit_bytes=None, max_output_bytes=MAX_OUTPUT, max_queued=0)

    async def scenario() -> tuple[ExtractionError | None, PoolUnavailable | None]:
        busy = asyncio.ensure_future(pool.run(H + "sleep_forever", b"", _request(), timeout_s=NEVER_FINISHES_S))
        await asyncio.sleep(0)  # let it be admitted
        refused: PoolUnavailable | None = None
        assert pool.saturated()
        try:
            await pool.run(H + "summarize", b"x", _request())
        except PoolUnavailable as exc:
            refused = exc
        timed_out: ExtractionError | None = None
        try:
            await busy
        except ExtractionError as exc:
            timed_out = exc
        return timed_out, refused

    with pool:
        timed_out, refused = asyncio.run(scenario())
        assert refused is not None
        assert "busy" in str(refused)
        assert timed_out is not None
        assert timed_out.code == ErrorCode.TIMEOUT
        assert not pool.saturated()
        assert _ok(pool)["blocks"][0]["text"] == "6 bytes"


def test_a_caller_that_goes_away_does_not_leak_its_place() -> None:
    pool = WorkerPool(1, timeout_s=GENEROUS_S, memory_limit_bytes=None, max_output_bytes=MAX_OUTPUT, max_queued=1)

    async def scenario() -> None:
        running = asyncio.ensure_future(pool.run(H + "sleep_forever", b"", _request(), timeout_s=NEVER_FINISHES_S))
        queued = asyncio.ensure_future(pool.run(H + "summarize", b"x", _request()))
        await asyncio.sleep(0.05)
        assert pool.pending == 2
        queued.cancel()  # its job never runs: its place is given back when it is cancelled
        running.cancel()  # already running: its place is given back when the worker is stopped at the deadline
        await asyncio.gather(running, queued, return_exceptions=True)

    with pool:
        asyncio.run(scenario())
        deadline = time.monotonic() + 60
        while pool.pending and time.monotonic() < deadline:
            time.sleep(0.05)
        assert pool.pending == 0
        assert _ok(pool)["attrs"]["size"] == 6


# ---------------------------------------------------------------------------------------------------------------
# Workers never outlive the service


def _gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"  # a zombie waiting for init to reap it is dead too


def test_workers_die_with_the_service_even_mid_extraction() -> None:
    script = textwrap.dedent(
        f"""
        import os, sys, threading, time
        sys.path.insert(0, {str(ROOT)!r})
        from extract_fn.formats.base import ExtractRequest
        from extract_fn.workers import WorkerPool
        pool = WorkerPool(2, timeout_s=600, memory_limit_bytes=None, max_output_bytes=1000)
        pool.start()
        run = lambda: pool.run_sync("tests.hostile_extractors:sleep_forever", b"", ExtractRequest(format="text"))
        threading.Thread(target=run, daemon=True).start()
        time.sleep(1.0)
        print(" ".join(str(p) for p in pool.pids()), flush=True)
        os._exit(0)  # no close(): the service is killed
        """
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True)
    pids = [int(p) for p in out.stdout.split()]
    assert len(pids) == 2
    deadline = time.monotonic() + 120  # they must go; how soon does not matter
    while not all(_gone(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in pids if not _gone(p)] == []


# ---------------------------------------------------------------------------------------------------------------
# run_forked: the CLI's one extraction, in a forked child under the same limits


def _forked(
    extractor: str, data: bytes = b"hello\n", *, memory_limit_bytes: int = 0, timeout_s: float = GENEROUS_S
) -> bytes:
    """Forked from this (large) test process, whose address space a tight RLIMIT_AS would count: the memory limit
    is given only where the test is about memory (the CLI forks from a small process)."""
    from extract_fn.workers import run_forked

    return run_forked(
        H + extractor,
        data,
        _request(),
        timeout_s=timeout_s,
        memory_limit_bytes=memory_limit_bytes,
        max_output_bytes=MAX_OUTPUT,
    )


@pytest.mark.parametrize(
    ("extractor", "code"),
    [
        ("sleep_forever", ErrorCode.TIMEOUT),
        ("allocate_10gb", ErrorCode.RESOURCE_LIMIT),
        ("segfault", ErrorCode.RESOURCE_LIMIT),
        ("exit_hard", ErrorCode.RESOURCE_LIMIT),
        ("raise_value_error", ErrorCode.CORRUPT),
        ("invalid_artifact", ErrorCode.CORRUPT),
        ("prints_to_stdout", None),
    ],
)
def test_run_forked_gives_the_pools_answers(extractor: str, code: ErrorCode | None) -> None:
    memory = 512 * MIB if extractor == "allocate_10gb" else 0
    if code is None:  # a library printing to stdout cannot corrupt the reply
        validate_artifact(_forked(extractor), format="text", original_size=6)
    else:
        with pytest.raises(ExtractionError) as info:
            _forked(
                extractor,
                memory_limit_bytes=memory,
                timeout_s=NEVER_FINISHES_S if code == ErrorCode.TIMEOUT else GENEROUS_S,
            )
        assert info.value.code == code
    # The parent is unharmed: the next extraction runs normally.
    validate_artifact(_forked("echo", b"a\n"), format="text", original_size=2)


def test_the_clis_fork_runs_with_the_allocator_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    """The fork's native allocators start as a pool worker's do (``ALLOCATOR_SETTINGS``), an operator's own value
    kept."""
    for name in workers.ALLOCATOR_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("MIMALLOC_PURGE_DELAY", "25")
    env = orjson.loads(_forked("allocator_env"))["attrs"]["env"]
    assert env == {**workers.ALLOCATOR_SETTINGS, "MIMALLOC_PURGE_DELAY": "25"}


def _many_lines(n: int) -> bytes:
    return b"".join(b"line %d of a file with many lines\n" % i for i in range(n))


def _big_reply(duo: WorkerPool, forked: bool, extractor: str, data: bytes) -> bytes | SpooledReply:
    """The reply of ``tests.hostile_extractors:<extractor>`` from the pool's worker or the CLI's fork, with a 64 MiB
    output limit. The fork has no memory limit: it inherits this test process's heap, whose size depends on the tests
    run before. The fork's reply past ``_REPLY_IN_MEMORY`` is the file its child wrote (never copied by the parent),
    a smaller one its bytes."""
    if forked:
        reply = run_forked(
            H + extractor, data, _request(), timeout_s=GENEROUS_S, memory_limit_bytes=None, max_output_bytes=64 * MIB
        )
        assert isinstance(reply, SpooledReply) == (len(reply) > workers._REPLY_IN_MEMORY)
        if isinstance(reply, SpooledReply):
            try:
                return reply.read_all()
            finally:
                reply.close()
        return reply
    return duo.run_sync(H + extractor, data, _request())


@pytest.mark.parametrize("forked", [False, True], ids=["pool", "run_forked"])
def test_a_big_artifact_leaves_the_worker_as_orjson_writes_it(duo: WorkerPool, forked: bool) -> None:
    """Past a few MB the worker writes the artifact to a temporary file as it serializes it, and sends the file."""
    data = _many_lines(60_000)
    raw = _big_reply(duo, forked, "echo", data)
    expected = echo(data, _request(max_output_bytes=64 * MIB))
    expected["attrs"]["pid"] = orjson.loads(raw)["attrs"]["pid"]
    assert raw == orjson.dumps(expected)
    assert len(raw) > workers._REPLY_IN_MEMORY


@pytest.mark.parametrize("o_tmpfile", [True, False], ids=["O_TMPFILE", "mkstemp"])
def test_run_forked_leaves_no_reply_file_behind(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, o_tmpfile: bool
) -> None:
    """The fork's reply file has no name (``O_TMPFILE``), or is removed at once where the file system has none:
    the temporary directory holds nothing during or after the extraction, and the reply is whole."""
    import tempfile

    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() reads TMPDIR again
    if not o_tmpfile:
        monkeypatch.delattr(os, "O_TMPFILE")
    data = _many_lines(60_000)
    reply = run_forked(
        H + "echo", data, _request(), timeout_s=GENEROUS_S, memory_limit_bytes=None, max_output_bytes=64 * MIB
    )
    assert isinstance(reply, SpooledReply)
    try:
        assert os.listdir(tmp_path) == []
        raw = reply.read_all()
    finally:
        reply.close()
    expected = echo(data, _request(max_output_bytes=64 * MIB))
    expected["attrs"]["pid"] = orjson.loads(raw)["attrs"]["pid"]
    assert raw == orjson.dumps(expected)


def test_a_big_invalid_artifact_is_reported_from_its_bytes(duo: WorkerPool) -> None:
    data = _many_lines(60_000)
    doc = invalid_artifact(data, _request(max_output_bytes=64 * MIB))
    assert len(orjson.dumps(doc)) > workers._REPLY_IN_MEMORY  # read back from the worker's temporary file
    with pytest.raises(InvalidArtifact) as expected:
        check_artifact(orjson.dumps(doc), format="text", original_size=len(data))
    err = _error(duo, "invalid_artifact", data)
    assert err.code == ErrorCode.CORRUPT
    assert f"({len(expected.value.violations)} rule(s) broken)" in err.message


def test_run_forked_returns_a_valid_artifact() -> None:
    raw = _forked("echo", b"a\nb\n")
    validate_artifact(raw, format="text", original_size=4)


# ---------------------------------------------------------------------------------------------------------------
# Admission, fairness between callers, and deadlines that count the wait


def _until(pool: WorkerPool, condition: Any, what: str) -> None:
    """Wait for a state of the pool (not for a time); ``what`` if it never comes."""
    assert pool.wait_for(condition, 30), what


def _submit(pool: WorkerPool, label: str, caller: str, order: list[str], **kw: Any) -> Any:
    """Start one extraction in the background; its label is appended to ``order`` when it ends."""
    timeout_s = kw.pop("timeout_s", None)
    future = pool._submit(
        H + kw.pop("extractor", "summarize"),
        kw.pop("data", b"x"),
        _request(**kw),
        timeout_s=timeout_s,
        admission=None,
        caller=caller,
    ).future
    future.add_done_callback(lambda _f: order.append(label))
    return future


class FakeClock:
    """The pool's clock, moved only by the test (the extraction's own deadline stays the real one)."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_free_worker_goes_to_the_caller_that_used_the_least_worker_time(tmp_path: Path) -> None:
    gate = tmp_path / "open"
    order: list[str] = []
    clock = FakeClock()
    pool = WorkerPool(
        1, timeout_s=30, memory_limit_bytes=None, max_output_bytes=MAX_OUTPUT, caller_max_requests=9, clock=clock
    )
    with pool:
        first = _submit(pool, "a0", "a", order, extractor="gate", name=str(gate))
        _until(pool, lambda: pool.running("a") == 1, "the first request never started")
        later = [_submit(pool, f"a{i}", "a", order) for i in (1, 2, 3)]
        later.append(_submit(pool, "b1", "b", order))
        assert pool.pending == 5
        clock.now += 1.0  # a0 has held the worker for a second: a has used 1 worker-second, b none
        assert pool.charge("a") == pytest.approx(pool.charge("b") + 1.0)
        gate.touch()
        for f in [first, *later]:
            f.result(timeout=30)
    # FIFO would serve a1, a2, a3 before b1, round-robin a1 then b1: by worker time b1 is next.
    assert order == ["a0", "b1", "a1", "a2", "a3"]


def test_a_caller_with_costly_requests_gets_fewer_starts_while_another_waits(tmp_path: Path) -> None:
    # Each of a's requests holds the worker for (the pool's) 0.2 s, each of b's for 0.01 s; each has 60 waiting.
    order: list[str] = []
    clock = FakeClock()
    pool = WorkerPool(
        1,
        timeout_s=30,
        memory_limit_bytes=None,
        max_output_bytes=MAX_OUTPUT,
        max_queued=200,
        caller_max_requests=99,
        clock=clock,
    )
    cost = {"a": 0.2, "b": 0.01}
    gate = tmp_path / "open"

    def advance(who: str) -> None:
        clock.now += cost[who]

    with pool:
        held = _submit(pool, "gate", "c", order, extractor="gate", name=str(gate))
        _until(pool, lambda: pool.running("c") == 1, "the gate never started")
        for who in ("a", "b") * 60:
            # When a request ends, the clock has moved by its cost: its caller is charged that much worker time.
            _submit(pool, who, who, order).add_done_callback(lambda _f, w=who: advance(w))
        gate.touch()
        held.result(timeout=30)
        _until(pool, lambda: pool.pending == 0, "the requests were never all answered")
    # While both waited (the first 60 answers: neither ran out), b got about 20 starts for each of a's.
    first = order[1:61]
    assert first.count("b") >= 15 * first.count("a") > 0, first


def test_one_caller_cannot_take_more_than_its_share(tmp_path: Path) -> None:
    gate = tmp_path / "open"
    order: list[str] = []
    pool = WorkerPool(
        2, timeout_s=30, memory_limit_bytes=None, max_output_bytes=MAX_OUTPUT, caller_max_requests=3, caller_workers=1
    )
    with pool:
        held = [_submit(pool, f"a{i}", "a", order, extractor="gate", name=str(gate)) for i in range(3)]
        _until(pool, lambda: pool.running("a") == 1, "a's first request never started")
        # a's fourth request is refused at admission (before any body would be read); b is still admitted...
        with pytest.raises(PoolUnavailable, match="share"):
            pool.admit("a")
        assert pool.admitted("a") == 3
        # ...and b gets the second worker at once, while a's other two wait for a's one worker.
        assert orjson.loads(pool.run_sync(H + "summarize", b"bee", _request(), caller="b"))["attrs"]["size"] == 3
        assert pool.running("a") == 1
        gate.touch()
        for f in held:
            f.result(timeout=30)
        assert pool.pending == 0
        pool.admit("a").release()  # a's share is back once its requests are answered
        assert pool.pending == 0


def test_a_request_that_cannot_start_before_its_deadline_is_unavailable(tmp_path: Path) -> None:
    gate = tmp_path / "open"
    order: list[str] = []
    with WorkerPool(1, timeout_s=30, memory_limit_bytes=None, max_output_bytes=MAX_OUTPUT) as pool:
        busy = _submit(pool, "busy", "a", order, extractor="gate", name=str(gate))
        _until(pool, lambda: pool.running("a") == 1, "the first request never started")
        with pytest.raises(PoolUnavailable, match=r"no worker became free within this service's 0\.2 s limit"):
            pool.run_sync(H + "summarize", b"x", _request(), timeout_s=0.2, caller="b")
        assert pool.running("a") == 1  # refused while the worker was still busy: not a late answer
        assert pool.pending == 1  # its place was given back
        gate.touch()
        busy.result(timeout=30)

        async def waits_then_expires() -> PoolUnavailable:
            gate.unlink()
            held = asyncio.ensure_future(pool.run(H + "gate", b"", _request(name=str(gate))))
            started = await asyncio.to_thread(pool.wait_for, lambda: pool.running(None) == 1, 30)
            assert started, "the first request never started"
            try:
                await pool.run(H + "summarize", b"x", _request(), timeout_s=0.2)
            except PoolUnavailable as exc:
                gate.touch()
                await held
                return exc
            raise AssertionError("a request that never got a worker was answered")

        assert "no worker became free" in str(asyncio.run(waits_then_expires()))
        assert pool.pending == 0


@pytest.mark.parametrize(
    ("waited_share", "unavailable"),
    [(0.5, True), (0.2, True), (0.05, False)],
    ids=["waited-half", "waited-a-fifth", "waited-a-twentieth"],
)
def test_a_request_that_waited_over_a_tenth_of_its_limit_and_timed_out_is_unavailable(
    tmp_path: Path, waited_share: float, unavailable: bool
) -> None:
    """Waited more than 10% of its limit for a worker, then timed out: 503 (not given a fair run), not ``timeout``.
    The wait is the pool's clock, moved by the test while the request waits; the extraction (a module that never
    finishes) gets what is left of its limit in real time, and always reaches it."""
    gate = tmp_path / "open"
    order: list[str] = []
    clock = FakeClock()
    limit_s = 1.0
    with WorkerPool(1, timeout_s=GENEROUS_S, memory_limit_bytes=None, max_output_bytes=MAX_OUTPUT, clock=clock) as pool:
        busy = _submit(pool, "busy", "a", order, extractor="gate", name=str(gate))
        _until(pool, lambda: pool.running("a") == 1, "the first request never started")
        late = _submit(pool, "late", "b", order, extractor="sleep_forever", timeout_s=limit_s)
        _until(pool, lambda: pool.waiting("b") == 1, "the second request never queued")
        clock.now += waited_share * limit_s
        gate.touch()
        busy.result(timeout=30)
        with pytest.raises((PoolUnavailable, ExtractionError)) as info:
            late.result(timeout=60)
    assert order == ["busy", "late"]
    if unavailable:
        assert isinstance(info.value, PoolUnavailable)
        message = str(info.value)
        assert f"after waiting {waited_share * limit_s:.1f} s for a worker" in message
        assert f"of this service's {limit_s:g} s limit" in message
    else:
        assert isinstance(info.value, ExtractionError)
        assert info.value.code is ErrorCode.TIMEOUT
        assert str(info.value.message) == f"the extraction took longer than {limit_s:g} s, this service's limit"


def test_an_admission_given_back_before_the_body_frees_its_place() -> None:
    with WorkerPool(1, timeout_s=5, memory_limit_bytes=None, max_output_bytes=MAX_OUTPUT, max_queued=0) as pool:
        place = pool.admit("a")
        with pytest.raises(PoolUnavailable, match="busy"):
            pool.admit("b")
        place.release()
        place.release()  # idempotent
        assert pool.pending == 0
        admission = pool.admit("b")
        raw = pool.run_sync(H + "summarize", b"abc", _request(), admission=admission)
        admission.release()  # handed to run: released by the pool when the extraction ended, not twice
        assert orjson.loads(raw)["attrs"]["size"] == 3
        assert pool.pending == 0


def test_a_big_artifact_comes_through_a_temporary_file() -> None:
    from extract_fn.workers import SpooledReply

    data = b"".join(b"line %d\n" % i for i in range(3000))
    with WorkerPool(
        1, timeout_s=30, memory_limit_bytes=None, max_output_bytes=MAX_OUTPUT, spool_reply_bytes=4096
    ) as pool:
        big = pool.run_sync(H + "echo", data, _request())
        small = pool.run_sync(H + "summarize", b"x", _request())
    assert isinstance(big, SpooledReply)
    assert isinstance(small, bytes)
    try:
        raw = big.read_all()
        assert len(raw) == len(big) > 4096
        validate_artifact(raw, format="text", original_size=len(data))
    finally:
        big.close()


def test_a_very_big_artifact_is_handed_over_in_the_workers_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Past a few MB the worker writes the artifact into the slot's reply file, which becomes the SpooledReply
    itself (no copy through the pipe); the file is unlinked once taken, and the next big reply gets a new one."""
    from extract_fn.workers import SpooledReply

    monkeypatch.setenv("TMPDIR", str(tmp_path))  # where the pool makes its reply files (the child inherits TMPDIR)
    monkeypatch.setattr("tempfile.tempdir", None)
    data = _many_lines(60_000)
    expected = echo(data, _request(max_output_bytes=64 * MIB))
    with WorkerPool(
        1, timeout_s=GENEROUS_S, memory_limit_bytes=None, max_output_bytes=64 * MIB, spool_reply_bytes=4096
    ) as pool:
        replies = [pool.run_sync(H + "echo", data, _request()) for _ in range(2)]
        for reply in replies:
            assert isinstance(reply, SpooledReply)
            assert os.fstat(reply.file.fileno()).st_nlink == 0  # the worker's own file, taken and unlinked
        assert list(tmp_path.iterdir()) == []  # each taken: the slot makes a new one for its next request
        small = pool.run_sync(H + "summarize", b"x", _request())
        assert isinstance(small, bytes)
        assert [p.name.startswith("extract-reply-") for p in tmp_path.iterdir()] == [True]  # made, left unused
    assert list(tmp_path.iterdir()) == []  # the unused one goes with its slot
    for reply in replies:
        try:
            raw = reply.read_all()
            expected["attrs"]["pid"] = orjson.loads(raw)["attrs"]["pid"]
            assert raw == orjson.dumps(expected)
            assert len(reply) == len(raw) > workers._REPLY_IN_MEMORY
        finally:
            reply.close()


# ---------------------------------------------------------------------------------------------------------------
# Warm workers and what a request costs the service


def test_a_worker_imports_its_preload_before_its_first_request() -> None:
    # colorsys: a module nothing in a worker imports by itself. A name that cannot be imported does not stop the
    # worker from starting; it is left for a request that needs it.
    light = WorkerPool(1, timeout_s=GENEROUS_S, memory_limit_bytes=512 * MIB, max_output_bytes=MAX_OUTPUT)
    warm = WorkerPool(
        1,
        timeout_s=GENEROUS_S,
        memory_limit_bytes=512 * MIB,
        max_output_bytes=MAX_OUTPUT,
        preload=("no_such_module_anywhere", "colorsys", H + "summarize", "sqlglot.dialects.dialect:Dialect.classes"),
    )
    with light, warm:
        assert _ok(light, "process_state", name="colorsys")["attrs"]["loaded"] is False
        assert _ok(warm, "process_state", name="colorsys")["attrs"]["loaded"] is True
        # An attribute path is read: sqlglot's registry imported its dialects.
        assert _ok(warm, "process_state", name="sqlglot.dialects.postgres")["attrs"]["loaded"] is True
        assert _ok(light, "process_state", name="sqlglot.dialects.postgres")["attrs"]["loaded"] is False


def test_the_services_workers_preload_every_format_module() -> None:
    from extract_fn.formats import MODULES, warm_imports
    from extract_fn.service import default_extractors

    names = warm_imports(default_extractors())
    for fmt, module in MODULES.items():
        assert f"{module}:extract" in names, fmt
    assert "markdown_it" in names  # the libraries the modules import lazily
    assert "python_calamine" in names
    assert "extract_fn.formats.ooxml_chart" in names  # docx and pptx import it at their first chart
    assert not any(n.startswith("pyarrow") for n in names)  # but pyarrow: 43 MB a worker, left to parquet's first
    assert len(names) == len(set(names))


def test_a_worker_that_preloads_toml_rs_keeps_its_heap_limit_for_the_file() -> None:
    # mimalloc (in toml_rs) reserves a 1 GiB writable arena by default, which RLIMIT_DATA counts: a warm worker
    # under a 2 GiB limit would keep only half of it for the file.
    with WorkerPool(
        1, timeout_s=GENEROUS_S, memory_limit_bytes=2048 * MIB, max_output_bytes=MAX_OUTPUT, preload=("toml_rs",)
    ) as pool:
        attrs = _ok(pool, "process_state", name="toml_rs")["attrs"]
    assert attrs["loaded"] is True
    assert attrs["vm_data_mb"] < 512


def test_the_pool_charges_a_caller_for_the_bytes_its_requests_carry() -> None:
    # The pool's clock stands still: no worker time is charged, only the bytes in (the upload) and out (the artifact).
    clock = FakeClock()
    per_byte = 1e-6
    with WorkerPool(
        1,
        timeout_s=GENEROUS_S,
        memory_limit_bytes=None,
        max_output_bytes=MAX_OUTPUT,
        clock=clock,
        byte_cost_s=per_byte,
        caller_max_requests=4,
    ) as pool:
        data = b"x" * 100_000
        raw = pool.run_sync(H + "summarize", data, _request(), caller="a")
        assert pool.charge("a") == pytest.approx(per_byte * (len(data) + len(raw)))
        # An answer from the crash memory takes no worker, but its upload is still charged.
        request = _request()
        scope = pool._scope(H + "summarize", request)
        pool.crash_memory.remember(scope, data, ErrorCode.RESOURCE_LIMIT.value, "remembered", ended_worker=False)
        with pytest.raises(ExtractionError, match="remembered"):
            pool.run_sync(H + "summarize", data, request, caller="b")
        assert pool.charge("b") == pytest.approx(per_byte * len(data))


# -- the GC policy held over the whole request -------------------------------------------------------------------


def _many_blocks(ctx: FormatContext) -> dict[str, Any]:
    b = ArtifactBuilder("text", parser="p", parser_version="1", unit="lines")
    for i in range(20_000):  # 60,000 containers: far past the collector's first threshold
        b.add_block("paragraph", f"line {i}", locator=make_locator(line_start=i + 1))
    b.coverage(total=20_000, extracted=20_000)
    return b.build()


@pytest.mark.parametrize("policy", list(GcPolicy))
def test_request_gc_holds_the_modules_policy_and_puts_the_collector_back(policy: GcPolicy) -> None:
    extract = format_module(_many_blocks, gc=policy)
    threshold = gc.get_threshold()
    assert gc.isenabled()
    with request_gc(extract):
        if policy is GcPolicy.PAUSE:
            assert not gc.isenabled()
        else:
            assert gc.isenabled()
            assert gc.get_threshold()[0] >= 100_000
    assert gc.isenabled()
    assert gc.get_threshold() == threshold
    with request_gc(lambda data, request: {}):  # not a format_module function: the collector as it was
        assert gc.isenabled()
        assert gc.get_threshold() == threshold


def test_the_collector_never_walks_an_artifact_before_the_worker_has_written_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The worker holds a PAUSE module's policy until the artifact is serialized (and its objects dropped): no
    collection runs between the module's start and the end of the serialization, though the module's own ``extract``
    ends first, with tens of thousands of containers alive."""
    from shared.artifact import built

    events: list[str] = []

    def on_gc(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            events.append("collection")

    real_dump = built.dump_checked

    def dump_checked(*args: Any, **kw: Any) -> bool:
        events.append("serialize")
        try:
            return real_dump(*args, **kw)
        finally:
            events.append("serialized")

    monkeypatch.setattr(built, "dump_checked", dump_checked)
    state = workers._ChildState(0)
    state.extractors["many:extract"] = format_module(_many_blocks)
    header = {"extractor": "many:extract", "format": "text", "name": "x.txt", "max_output_bytes": 64 * MIB}
    gc.callbacks.append(on_gc)
    try:
        status, out = workers._handle(state, header, [b"x\n" * 20_000])
    finally:
        gc.callbacks.remove(on_gc)
    assert status == workers.STATUS_OK, out
    assert events[: events.index("serialized") + 1] == ["serialize", "serialized"]


@pytest.mark.parametrize("forked", [False, True], ids=["pool", "run_forked"])
def test_the_worker_keeps_row_blocks_as_runs_and_writes_the_same_json(duo: WorkerPool, forked: bool) -> None:
    """The worker's builders keep row blocks as runs (``shared.artifact.row_runs``); the reply is the artifact the
    module builds anywhere else, byte for byte."""
    data = _many_lines(3000)
    raw = _big_reply(duo, forked, "row_table", data)
    expected = row_table(data, _request(max_output_bytes=64 * MIB))
    assert expected["attrs"]["row_run"] is False
    expected["attrs"]["row_run"] = True
    assert raw == orjson.dumps(expected)


def test_the_worker_hands_the_file_to_the_module_keeping_no_reference(duo: WorkerPool) -> None:
    """In a pool's worker the module's frame holds the only reference to the file's bytes, so a module done with
    them (csv, once decoded) frees them for its parse: 27 MB of big.csv's peak. (``run_forked``'s child cannot:
    its caller's frames, forked with it, hold them.)"""
    raw = duo.run_sync(H + "holders", b"some file\n" * 1000, _request())
    assert orjson.loads(raw)["blocks"][0]["text"] == "0"


def test_a_format_module_hands_its_context_the_only_reference() -> None:
    """``format_module``'s ``extract`` keeps no reference of its own: ``FormatContext.take_data`` leaves the module
    the bytes and their caller's references, nothing else."""
    import sys

    counts: list[int] = []

    def body(ctx: FormatContext) -> dict[str, Any]:
        data = ctx.take_data()
        counts.append(sys.getrefcount(data))
        assert ctx.data == b""
        return {}

    data = b"x" * 100
    before = sys.getrefcount(data)
    format_module(body)(data, _request())
    assert counts == [before + 1]  # the caller's (this frame's) and the module's: the wrapper and context hold none


def test_a_mapped_upload_leaves_the_services_memory_once_sent(solo: WorkerPool, tmp_path: Path) -> None:
    """The pages of a spooled upload's map are dropped from the service's resident memory once the pool has sent
    the worker its bytes (they stay in the file and read back the same)."""
    import mmap

    from extract_fn.buffering import MappedFile
    from extract_fn.workers import _drop_mapped_pages

    path = tmp_path / "upload.bin"
    payload = bytes(range(256)) * (4 * 4096)  # 4 MiB
    path.write_bytes(payload)
    inode = path.stat().st_ino

    def resident_kb() -> int:
        total, mine = 0, False
        for line in Path("/proc/self/smaps").read_text().splitlines():
            fields = line.split()
            if len(fields) >= 5 and "-" in fields[0] and ":" in fields[3]:
                mine = fields[4] == str(inode)
            elif mine and fields and fields[0] == "Rss:":
                total += int(fields[1])
        return total

    with path.open("rb") as f:
        m = MappedFile(f.fileno(), 0, access=mmap.ACCESS_READ)
        assert bytes(m) == payload  # every page read: resident
        assert resident_kb() >= 4 * 1024
        raw = solo.run_sync(H + "summarize", m, _request())  # type: ignore[arg-type]  # as the service hands it on
        assert orjson.loads(raw)["attrs"]["sha256"] == hashlib.sha256(payload).hexdigest()  # the worker had it all
        assert resident_kb() == 0
        assert bytes(m) == payload  # read back from the file
        m.close()
    _drop_mapped_pages(b"bytes are left alone")
