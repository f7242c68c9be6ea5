"""A pool of worker processes that run format modules with a time, a memory and an output limit.

A hostile file costs one worker, never the service (Apache Tika's forked child with a watchdog is the model):

- Each slot of the pool owns one child process, ``python -m extract_fn.workers``, started with ``subprocess`` (no
  ``multiprocessing``: nothing is pickled, no main module is re-imported, and one dead child never breaks the pool).
- The parent talks to a child over two pipes with length-prefixed frames. A request is a small JSON header (the
  extractor's ``module:function`` path and the ``ExtractRequest`` fields) and the original's bytes; a reply is a status
  byte, a length and the artifact's JSON bytes (or an error ``{"code", "message"}``).
- Limits: the parent enforces the wall-clock deadline with non-blocking pipe I/O and kills the child at it
  (``timeout``); the child limits its own heap with ``setrlimit`` (``RLIMIT_DATA``, ``RLIMIT_AS`` as a backstop), and
  a ``MemoryError`` or the child's death is ``resource_limit``; the child checks and serializes the artifact in one
  pass (``shared.artifact.built.dump_checked``: orjson a chunk at a time, into a file past a few MB: the pool's
  reply file for its slot, which the service then streams as it is, or the one ``run_forked`` made for the CLI,
  which sends it to stdout with ``sendfile``) and refuses one over the output limit (``resource_limit``) as soon
  as its bytes pass it, which modules also get as ``request.max_output_bytes``.
- A killed, dead or retiring child is replaced at once; the next request on the slot is served normally. A child
  is also replaced after ``max_tasks`` extractions, so a slow leak in a parser cannot grow without bound.
- A child that dies before it says it is ready is a broken deployment, not a hostile file: ``PoolUnavailable``
  (the service answers 503, so the server tries the file again later).
- Children start warm: each imports the format modules the pool is given (``preload``: the service's extractors and
  the libraries they import lazily) before it says it is ready, so no request pays a module's imports (a hostile
  file's first run did, before the crash memory knew it); the imports count toward the child's memory limit like
  anything else it holds. A module that cannot be imported at start is left for its first request to report
  (``format_unavailable``). Every child is created by one long-lived spawner thread and dies with it
  (``PR_SET_PDEATHSIG``).

The async API (``await pool.run(...)``) runs the blocking pipe I/O in one thread per slot, so up to ``size``
extractions run in parallel and the event loop never blocks; ``run_sync`` is the same for the CLI.

Admission and fairness (the pool side): ``admit(caller)`` takes a place before the request's body is read and
refuses (``PoolUnavailable``, a 503) when the pool holds ``size + max_queued`` requests or the caller already holds
``caller_max_requests`` of them. Waiting requests are queued per caller and a free worker goes to the waiting caller
that has used the least of the service (``extract_fn.fair_share``: shares are counted in worker-seconds plus the
service's own work for the request's bytes, ``byte_cost_s`` a byte in and out, not in turns, and a lone caller
still gets every worker), never to more than ``caller_workers`` of one caller's requests at once.
The pool's clock is injected (``clock``) for tests; the extraction's own deadline is the real one. A request's time
limit starts when it is handed to ``run``: time spent waiting for a worker counts, a request that gets no worker before
its limit is ``PoolUnavailable`` (not a late answer), and the extraction gets what remains. An artifact over
``spool_reply_bytes`` is read from the worker's pipe into an anonymous temporary file (``SpooledReply``) instead of
the service's memory; past ``_REPLY_IN_MEMORY`` the worker writes it into its slot's reply file (a temporary file the
pool made, named in the request's header), and the pool takes that file, unlinked, as the ``SpooledReply`` (the status
says ``IN_REPLY_FILE``; its size must be the announced length): the bytes are written once, and never copied
through the pipe into a second file.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import io
import itertools
import logging
import mmap
import os
import select
import signal
import struct
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TYPE_CHECKING, Any, Final

from extract_fn.crash_memory import CrashMemory
from extract_fn.fair_share import FairShare

if TYPE_CHECKING:
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    from extract_fn.formats.base import ExtractRequest

# Imported where they are used, not here: the CLI (``run_forked``, the child's ``_handle``) imports this module and
# needs none of asyncio (with socket and ssl, the largest import of a cold start), subprocess, tempfile or the
# thread pool; the service imports them when it starts its pool or awaits a run.

log = logging.getLogger("extract_fn.workers")

READY: Final = b"LOOMWRK1"  # a child's first bytes: its interpreter and the contract imported fine
_REQUEST = struct.Struct("<4sIQ")  # magic, header length, data length
_REQUEST_MAGIC: Final = b"REQ1"
_REPLY = struct.Struct("<BQ")  # status, payload length
STATUS_OK: Final = 0
STATUS_ERROR: Final = 1
STATUS_ERROR_RETIRE: Final = 2  # an error after which the child exits (MemoryError, SystemExit...)
STATUS_OK_RETIRE: Final = 3  # an artifact after which the child exits (a big one left its heap large)
# Or'ed into an artifact's status: its bytes are in the slot's reply file (``_Worker.reply_path``), not on the pipe
IN_REPLY_FILE: Final = 0x80
_RETIRE_AFTER_BYTES: Final = 64 * 1024 * 1024
_REPLY_IN_MEMORY: Final = 4 * 1024 * 1024  # a worker's artifact past this is written to a temporary file
_CHUNK: Final = 1024 * 1024
_PIPE_SIZE: Final = 1024 * 1024
_F_SETPIPE_SZ: Final = 1031  # Linux
_AS_HEADROOM: Final = 2 * 1024 * 1024 * 1024  # address space beyond the heap limit: code, stacks, reservations
# Serializing an artifact took up to ~4x its bound (orjson's growing buffer; now a chunk's at a time, and one string
# may still be up to the bound); parsing its JSON back for the check (only when the objects' check said no) up to
# ~16x its bytes of address space (many small dicts and strings, next to the heap the parser left behind).
_SERIALIZE_MEMORY_FACTOR: Final = 4
_VALIDATE_MEMORY_FACTOR: Final = 16
_ERROR_REPLY_MAX: Final = 64 * 1024
# Room above the memory limit for building an error reply: a module that failed near the limit leaves the heap full,
# and orjson crashes (SIGSEGV) rather than raising when an allocation fails.
_ERROR_REPLY_HEADROOM: Final = 16 * 1024 * 1024

# A request whose extraction times out after it waited more than this share of its limit for a worker was not given
# a fair run: it is PoolUnavailable (try again later), not the file's ``timeout``.
_FAIR_RUN_SHARE: Final = 0.9

# A backstop against a slow leak in a parser: the memory limit bounds a leak anyway, and a child that returned a big
# artifact retires at once (``_RETIRE_AFTER_BYTES``). A warm child costs 0.4-0.8 CPU-seconds to start (it imports
# every format module), so at 500 a worker of small files (about 6 ms each) spent a fifth of its time restarting.
DEFAULT_MAX_TASKS: Final = 5000
# What a byte of a request costs the service besides its worker, in CPU-seconds, charged to the caller's fair share
# (``extract_fn.fair_share``): the upload read from the socket (and spooled past a threshold) and written to the
# worker's pipe, the artifact read back (spooled past a threshold) and streamed to the socket. Measured with
# ``python -m benchmarks.bench_load --byte-cost``: the service process's CPU for text files of 1-8 MB in and as much
# out, over that of a small request: 3.2-4.2 ms per MB carried (in + out) on the 2-core machine of the figures.
DEFAULT_BYTE_COST_S: Final = 4e-3 / (1024 * 1024)
DEFAULT_STARTUP_TIMEOUT_S: Final = 30.0


class PoolUnavailable(Exception):
    """The pool cannot serve now (closed, saturated, or its workers cannot start): answer 503, try again later."""


class _Deadline(Exception):
    pass


class _Died(Exception):
    pass


@dataclasses.dataclass(slots=True)
class PoolStats:
    started: int = 0  # child processes started, the first ones included
    replaced: int = 0  # children killed or retired and started again
    completed: int = 0  # extractions that got an answer from their worker (artifact or error)


class _Worker:
    """One slot: a child process and the pipes to it. Used by one thread at a time."""

    def __init__(self, index: int) -> None:
        self.index = index
        self.proc: subprocess.Popen[bytes] | None = None
        self.ready = False
        self.tasks = 0
        self.spawned_at = 0.0
        self.ready_after_s: float | None = None
        self.lock = threading.Lock()  # held by the thread using the slot; close() waits for it before closing pipes
        self.reply_file: tuple[int, str] | None = None  # (fd, path): where the child may write a big artifact

    def reply_path(self) -> str:
        """The path of the slot's reply file (made when first asked for, and again once a reply took it): the
        child writes a big artifact there, and the file, unlinked, becomes the ``SpooledReply`` the service
        streams, with no copy through the pipe and into a second file."""
        if self.reply_file is None:
            import tempfile

            self.reply_file = tempfile.mkstemp(prefix="extract-reply-")
        return self.reply_file[1]

    def _take_reply_file(self, length: int) -> SpooledReply:
        if self.reply_file is None:
            raise _Died("the worker said its reply is in a file it was not given")
        fd, path = self.reply_file
        self.reply_file = None
        os.unlink(path)
        if os.fstat(fd).st_size != length:
            os.close(fd)
            raise _Died("the worker's reply file does not hold the reply it announced")
        return SpooledReply(os.fdopen(fd, "rb"), length)

    def drop_reply_file(self) -> None:
        reply, self.reply_file = self.reply_file, None
        if reply is not None:
            with contextlib.suppress(OSError):
                os.unlink(reply[1])
            os.close(reply[0])

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def signal_kill(self) -> None:
        """SIGKILL the child without touching its pipes (safe while another thread is using them)."""
        proc = self.proc
        if proc is not None:
            with contextlib.suppress(OSError):
                proc.kill()

    def kill(self) -> int | None:
        """Kill the child (if any), close its pipes and reap it; its exit status. Only by the slot's user."""
        proc, self.proc = self.proc, None
        self.ready = False
        self.drop_reply_file()
        if proc is None:
            return None
        with contextlib.suppress(OSError):
            proc.kill()
        for f in (proc.stdin, proc.stdout):
            if f is not None:
                with contextlib.suppress(OSError):
                    f.close()
        import subprocess  # loaded already: the child was started with it

        try:
            return proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL is not ignorable
            log.error("worker %d (pid %d) did not die after SIGKILL", self.index, proc.pid)
            return None

    # -- pipe I/O with a deadline ---------------------------------------------------------------------------------

    def _fds(self) -> tuple[int, int]:
        proc = self.proc
        if proc is None or proc.stdin is None or proc.stdout is None:
            raise _Died("the worker is gone")
        return proc.stdin.fileno(), proc.stdout.fileno()

    def await_ready(self, deadline: float) -> None:
        if self.ready:
            return
        _, rfd = self._fds()
        got = _read_exact(rfd, len(READY), deadline)
        if bytes(got) != READY:
            raise _Died("the worker said something else than ready")
        self.ready = True
        self.ready_after_s = time.monotonic() - self.spawned_at

    def call(
        self,
        header: bytes,
        data: bytes | memoryview,
        deadline: float,
        max_reply: int,
        spool_over: int | None = None,
    ) -> tuple[int, bytes | SpooledReply]:
        """Send one request, read its reply; an artifact over ``spool_over`` bytes goes to a temporary file."""
        wfd, rfd = self._fds()
        self.tasks += 1
        _write_all(wfd, (_REQUEST.pack(_REQUEST_MAGIC, len(header), len(data)), header, data), deadline)
        _drop_mapped_pages(data)
        status, length = _REPLY.unpack(_read_exact(rfd, _REPLY.size, deadline))
        in_file, status = status & IN_REPLY_FILE, status & ~IN_REPLY_FILE
        if status not in (STATUS_OK, STATUS_ERROR, STATUS_ERROR_RETIRE, STATUS_OK_RETIRE):
            raise _Died(f"the worker sent an unknown status {status}")
        if length > max_reply:
            raise _OversizeReply(length)
        if in_file:
            if status not in (STATUS_OK, STATUS_OK_RETIRE):
                raise _Died("the worker sent an error in its reply file")
            return status, self._take_reply_file(length)
        if spool_over is not None and length > spool_over and status in (STATUS_OK, STATUS_OK_RETIRE):
            return status, _read_to_file(rfd, length, deadline)
        return status, bytes(_read_exact(rfd, length, deadline))


class _OversizeReply(Exception):
    def __init__(self, length: int) -> None:
        super().__init__(length)
        self.length = length


def _drop_mapped_pages(data: bytes | memoryview) -> None:
    """A mapped upload (``buffering.MappedFile``) sent to the worker leaves this process's resident memory: its
    pages stay in the file (the page cache) and are read back only if something reads the map again (the crash
    memory, after a failure). Without this the service holds every in-flight upload's pages while the workers run
    (big.xlsx: 7 MB beside its worker's peak)."""
    if isinstance(data, mmap.mmap) and len(data) and not data.closed:
        with contextlib.suppress(OSError, ValueError):
            data.madvise(mmap.MADV_DONTNEED)


def _wait(fd: int, event: int, deadline: float) -> None:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise _Deadline
    poller = select.poll()
    poller.register(fd, event | select.POLLERR | select.POLLHUP)
    poller.poll(max(1, int(remaining * 1000) + 1))


def _write_all(fd: int, parts: tuple[bytes | memoryview, ...], deadline: float) -> None:
    for part in parts:
        view = memoryview(part).cast("B")
        off = 0
        while off < len(view):
            try:
                off += os.write(fd, view[off : off + _CHUNK])
            except BlockingIOError:
                _wait(fd, select.POLLOUT, deadline)
            except OSError as exc:  # EPIPE: the child is gone
                raise _Died(str(exc)) from None


def _read_exact(fd: int, n: int, deadline: float) -> bytearray:
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        try:
            k = os.readv(fd, [view[got:]])
        except BlockingIOError:
            _wait(fd, select.POLLIN, deadline)
            continue
        except OSError as exc:
            raise _Died(str(exc)) from None
        if k == 0:
            raise _Died("end of pipe")
        got += k
    return buf


class SpooledReply:
    """An artifact's JSON bytes in an anonymous temporary file (gone once closed): the service streams it to the
    socket in chunks instead of holding it whole."""

    def __init__(self, file: Any, size: int) -> None:
        self.file = file
        self.size = size

    def __len__(self) -> int:
        return self.size

    def read_all(self) -> bytes:
        """The whole reply (for callers that want bytes, such as tests)."""
        self.file.seek(0)
        return bytes(self.file.read())

    def write_to(self, out: Any) -> None:
        """Write the bytes to ``out`` (the CLI's stdout, a binary file object): by the kernel (``sendfile``) where
        its descriptor takes it, else in chunks."""
        out.flush()
        offset = 0
        try:
            fd = out.fileno()
            src = self.file.fileno()
            while offset < self.size:
                sent = os.sendfile(fd, src, offset, self.size - offset)
                if sent == 0:
                    raise OSError("the reply file ended early")
                offset += sent
            return
        except io.UnsupportedOperation:  # no descriptor (a test's captured stdout)
            pass
        except OSError as exc:  # a descriptor sendfile does not write to (an O_APPEND file)
            if offset or exc.errno not in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
                raise
        self.file.seek(0)
        while chunk := self.file.read(_CHUNK):
            out.write(chunk)

    def close(self) -> None:
        self.file.close()


def _read_to_file(fd: int, n: int, deadline: float) -> SpooledReply:
    import tempfile

    out = tempfile.TemporaryFile(prefix="extract-reply-")  # noqa: SIM115  (handed to the SpooledReply)
    try:
        buf = bytearray(min(n, _CHUNK))
        view = memoryview(buf)
        got = 0
        while got < n:
            try:
                k = os.readv(fd, [view[: min(len(buf), n - got)]])
            except BlockingIOError:
                _wait(fd, select.POLLIN, deadline)
                continue
            except OSError as exc:
                raise _Died(str(exc)) from None
            if k == 0:
                raise _Died("end of pipe")
            out.write(view[:k])
            got += k
        out.flush()
        out.seek(0)
    except BaseException:
        out.close()
        raise
    return SpooledReply(out, n)


def _exit_description(returncode: int | None) -> str:
    if returncode is None:
        return "it did not exit"
    if returncode < 0:
        try:
            return f"killed by {signal.Signals(-returncode).name}"
        except ValueError:
            return f"killed by signal {-returncode}"
    return f"exit status {returncode}"


# A worker's environment is this allowlist, never the service's whole environment: a parser tricked into reading
# /proc/self/environ must find no token, connection string or key (EXTRACTOR_TOKENS, AzureWebJobsStorage,
# DataStorage*, APPLICATIONINSIGHTS_CONNECTION_STRING, IDENTITY_*/MSI_*...). What is kept is what the interpreter and
# the parsers read: where programs, libraries and temporary files are, the locale and time zone, the interpreter's
# own PYTHON* switches, and the thread and allocator settings of the native libraries.
CHILD_ENV_NAMES: Final = frozenset(
    {
        "PATH", "HOME", "TMPDIR", "TEMP", "TMP", "LD_LIBRARY_PATH",
        "LANG", "LANGUAGE", "TZ", "TZDIR",
        "PYTHONHOME", "PYTHONSAFEPATH", "PYTHONPLATLIBDIR", "PYTHONNOUSERSITE", "PYTHONUSERBASE",
        "PYTHONDONTWRITEBYTECODE", "PYTHONPYCACHEPREFIX", "PYTHONHASHSEED", "PYTHONIOENCODING", "PYTHONUTF8",
        "PYTHONCOERCECLOCALE", "PYTHONWARNINGS", "PYTHONFAULTHANDLER", "PYTHONTRACEMALLOC", "PYTHONDEVMODE",
        "PYTHONMALLOC", "PYTHONINTMAXSTRDIGITS", "PYTHON_CPU_COUNT", "PYTHON_GIL",
        "ARROW_DEFAULT_MEMORY_POOL", "ARROW_IO_THREADS", "ARROW_USER_SIMD_LEVEL",
        "OMP_NUM_THREADS", "OMP_THREAD_LIMIT", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS",
        "MALLOC_ARENA_MAX", "MIMALLOC_ARENA_RESERVE", "MIMALLOC_PURGE_DELAY", "MIMALLOC_ARENA_EAGER_COMMIT",
    }
)  # fmt: skip
CHILD_ENV_PREFIXES: Final = ("LC_",)  # the locale categories (LC_ALL, LC_CTYPE...)
# The native allocators' settings every worker (and the CLI's fork) starts with, unless the operator set them:
# - Arrow's default mimalloc pool reserves a 1 GiB arena up front, which RLIMIT_DATA counts: the system allocator
#   keeps the memory limit meaningful for parquet;
# - mimalloc (toml_rs links its own) reserves a 1 GiB writable arena when it loads: a worker that had imported it
#   kept half of a 2 GiB limit for everything else. Smaller arenas, taken as they are needed, keep the limit for the
#   file;
# - and it keeps the pages of its parse tree committed after toml_rs has returned (it purges only when it next
#   allocates): decommitting freed pages at once and committing arena pages as they are used take 16 MB off a
#   big.toml extraction's peak RSS, for about 1,700 more page faults a request (benchmarks/README.md, session 9).
ALLOCATOR_SETTINGS: Final = {
    "ARROW_DEFAULT_MEMORY_POOL": "system",
    "MIMALLOC_ARENA_RESERVE": "64MiB",
    "MIMALLOC_PURGE_DELAY": "0",
    "MIMALLOC_ARENA_EAGER_COMMIT": "0",
}


def _child_env() -> dict[str, str]:
    """The allowlisted environment of a worker process (``CHILD_ENV_NAMES``), plus what the child needs set."""
    env = {k: v for k, v in os.environ.items() if k in CHILD_ENV_NAMES or k.startswith(CHILD_ENV_PREFIXES)}
    # The child imports exactly what the parent can (the app root, site-packages, a test's sys.path additions).
    paths = [os.path.abspath(p) for p in sys.path if p]
    env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
    env["PYTHONUNBUFFERED"] = "1"
    return {**ALLOCATOR_SETTINGS, **env}


@dataclasses.dataclass(eq=False, slots=True)
class Admission:
    """A place in the pool, taken (``WorkerPool.admit``) before the request's body is read.

    ``release()`` gives it back if the request never reached ``run`` (its body was refused or never came); once
    handed to ``run`` it is released when the extraction ends, whatever the caller does meanwhile.
    """

    pool: WorkerPool
    caller: Hashable
    handed: bool = False
    released: bool = False

    def release(self) -> None:
        if not self.handed:
            self.pool._release(self)


@dataclasses.dataclass(eq=False, slots=True)
class _Job:
    admission: Admission
    extractor: str
    data: bytes | memoryview
    request: ExtractRequest
    limit_s: float
    queued_at: float
    future: Future[bytes | SpooledReply] = dataclasses.field(default_factory=Future)
    started: bool = False
    started_at: float = 0.0  # the pool's clock when it got a worker

    @property
    def deadline(self) -> float:
        return self.queued_at + self.limit_s


class WorkerPool:
    """``size`` worker processes; ``await run(extractor, data, request)`` gives the artifact's JSON bytes.

    ``run`` raises ``ExtractionError`` for every outcome the contract names (the module's own, ``timeout``,
    ``resource_limit``, ``corrupt``, ``format_unavailable`` when the module cannot be imported) and
    ``PoolUnavailable`` when the pool cannot serve at all.
    """

    def __init__(
        self,
        size: int,
        *,
        timeout_s: float,
        memory_limit_bytes: int | None,
        max_output_bytes: int,
        max_tasks: int = DEFAULT_MAX_TASKS,
        max_queued: int | None = None,
        caller_max_requests: int | None = None,
        caller_workers: int | None = None,
        spool_reply_bytes: int | None = None,
        startup_timeout_s: float = DEFAULT_STARTUP_TIMEOUT_S,
        python: str = sys.executable,
        clock: Callable[[], float] = time.monotonic,
        preload: Sequence[str] = (),
        byte_cost_s: float = DEFAULT_BYTE_COST_S,
    ) -> None:
        if size < 1:
            raise ValueError("a pool needs at least one worker")
        self.size = size
        self.timeout_s = timeout_s
        self.memory_limit_bytes = memory_limit_bytes
        self.max_output_bytes = max_output_bytes
        self.max_tasks = max_tasks
        self.max_queued = 4 * size if max_queued is None else max_queued
        # A caller's requests may run on every worker (the fair share still hands the next free one to the waiting
        # caller that used the least worker time). Work-conserving: one caller may fill the pool but for ``size``
        # places kept for the others (a worker's worth each), so a lone caller is never refused while the pool has
        # room, and a newcomer always finds a place.
        self.caller_max_requests = caller_max_requests or max(1, self.max_queued)
        self.caller_workers = caller_workers or size
        self.spool_reply_bytes = spool_reply_bytes
        self.startup_timeout_s = startup_timeout_s
        self.python = python
        self.preload = tuple(preload)  # "module" or "module:function": imported by each child before it is ready
        self.byte_cost_s = byte_cost_s
        self.stats = PoolStats()
        self.crash_memory = CrashMemory()  # inputs that ended a worker lately: answered without one
        self._workers = [_Worker(i) for i in range(size)]
        self._free: list[_Worker] = list(reversed(self._workers))
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # notified when a request is admitted, queued, started or ends
        self._pending = 0
        self._admitted: Counter[Hashable] = Counter()  # per caller: admitted and not yet answered
        # The time a request waits, its deadline and its worker time, for fairness (the extraction's own deadline
        # in the pipe I/O is the real monotonic clock); injected by tests.
        self._clock = clock
        self._queue: FairShare[_Job] = FairShare(self.caller_workers, clock)  # waiting jobs; who runs next
        self._started = False
        self._closed = False
        self._runner: ThreadPoolExecutor | None = None
        self._spawner: ThreadPoolExecutor | None = None
        self._env = _child_env()

    # -- lifecycle --------------------------------------------------------------------------------------------------

    def start(self) -> None:
        """Start every worker (idempotent, thread-safe). ``run`` starts the pool on first use too."""
        with self._lock:
            if self._closed:
                raise PoolUnavailable("the worker pool is closed")
            if self._started:
                return
            from concurrent.futures import ThreadPoolExecutor

            self._runner = ThreadPoolExecutor(max_workers=self.size, thread_name_prefix="extract-slot")
            self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="extract-spawner")
            self._started = True
        for w in self._workers:
            self._spawn(w)

    def close(self) -> None:
        """Kill every worker. Requests in flight end with ``PoolUnavailable``."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            queued = self._queue.clear()
        for job in queued:
            _fail(job, PoolUnavailable("the worker pool is closed"))
        for w in self._workers:  # first stop every child, so a slot in use is released at once...
            w.signal_kill()
        for w in self._workers:  # ...then close each slot's pipes once its user has let go of them
            if w.lock.acquire(timeout=10):
                try:
                    w.kill()
                finally:
                    w.lock.release()
        for ex in (self._runner, self._spawner):
            if ex is not None:
                ex.shutdown(wait=False, cancel_futures=False)

    def __enter__(self) -> WorkerPool:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def pending(self) -> int:
        """Requests admitted and not yet answered (reading their body, waiting for a worker or running)."""
        return self._pending

    def admitted(self, caller: Hashable) -> int:
        """``caller``'s requests admitted and not yet answered."""
        return self._admitted[caller]

    def running(self, caller: Hashable) -> int:
        """``caller``'s requests on a worker now."""
        return self._queue.running(caller)

    def waiting(self, caller: Hashable) -> int:
        """``caller``'s requests waiting for a worker now."""
        return self._queue.waiting(caller)

    def charge(self, caller: Hashable) -> float:
        """``caller``'s worker-seconds as the fair share counts them (``extract_fn.fair_share``)."""
        with self._lock:
            return self._queue.charge(caller)

    def wait_for(self, predicate: Callable[[], bool], timeout_s: float) -> bool:
        """Wait until ``predicate()`` (about ``pending``, ``admitted``, ``waiting``, ``running``) holds, at most
        ``timeout_s``; whether it does. For tests and benchmarks that must wait for a state rather than for a time."""
        with self._changed:
            return self._changed.wait_for(predicate, timeout_s)

    def pids(self) -> list[int | None]:
        return [w.pid for w in self._workers]

    def saturated(self) -> bool:
        """Whether a new request would be refused for the queue being full (checked before reading a body)."""
        return self._pending >= self.size + self.max_queued

    def _spawn(self, w: _Worker) -> None:
        """Start ``w``'s child from the spawner thread (children die with the thread that made them)."""
        assert self._spawner is not None
        try:
            self._spawner.submit(self._spawn_here, w).result()
        except RuntimeError as exc:  # the spawner was shut down: the pool is closing
            raise PoolUnavailable("the worker pool is closed") from exc

    def _spawn_here(self, w: _Worker) -> None:
        import subprocess

        args = [self.python, "-m", "extract_fn.workers", str(os.getpid()), str(self.memory_limit_bytes or 0)]
        args += self.preload
        try:
            proc = subprocess.Popen(
                args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0, env=self._env, close_fds=True
            )
        except OSError as exc:
            raise PoolUnavailable(f"a worker process cannot be started: {exc}") from exc
        assert proc.stdin is not None
        assert proc.stdout is not None
        for f in (proc.stdin, proc.stdout):
            os.set_blocking(f.fileno(), False)
            with contextlib.suppress(OSError):
                import fcntl

                fcntl.fcntl(f.fileno(), _F_SETPIPE_SZ, _PIPE_SIZE)
        w.proc, w.ready, w.tasks, w.spawned_at = proc, False, 0, time.monotonic()
        with self._lock:
            self.stats.started += 1

    def _replace(self, w: _Worker) -> None:
        w.kill()
        if self._closed:
            return
        with self._lock:
            self.stats.replaced += 1
        try:
            self._spawn(w)
        except PoolUnavailable:
            log.exception("worker %d could not be restarted; it is retried on its next request", w.index)

    # -- running ----------------------------------------------------------------------------------------------------

    async def run(
        self,
        extractor: str,
        data: bytes | memoryview,
        request: ExtractRequest,
        *,
        timeout_s: float | None = None,
        admission: Admission | None = None,
        caller: Hashable = None,
    ) -> bytes | SpooledReply:
        """The artifact's JSON bytes, from ``extractor`` ("package.module:function") run on ``data``.

        ``admission`` is the place taken by ``admit`` before the body was read (else one is taken now for
        ``caller``). ``timeout_s`` (default: the pool's) counts from now: waiting for a worker spends it.
        The bytes come as a ``SpooledReply`` when the pool spools replies and the artifact is over that size.
        """
        import asyncio

        job = self._submit(extractor, data, request, timeout_s=timeout_s, admission=admission, caller=caller)
        fut = asyncio.wrap_future(job.future)
        try:
            done, _ = await asyncio.wait({fut}, timeout=max(0.0, job.deadline - self._clock()))
            if not done:
                self._expire(job)
            return await fut
        except asyncio.CancelledError:
            job.future.cancel()  # a job still waiting leaves the queue; one running ends at its deadline
            raise

    def run_sync(
        self,
        extractor: str,
        data: bytes | memoryview,
        request: ExtractRequest,
        *,
        timeout_s: float | None = None,
        admission: Admission | None = None,
        caller: Hashable = None,
    ) -> bytes | SpooledReply:
        job = self._submit(extractor, data, request, timeout_s=timeout_s, admission=admission, caller=caller)
        try:
            return job.future.result(timeout=max(0.0, job.deadline - self._clock()))
        except FutureTimeout:
            self._expire(job)
            return job.future.result()

    def admit(self, caller: Hashable = None) -> Admission:
        """A place for one request of ``caller``, or ``PoolUnavailable`` when the pool or the caller's share is
        full. Taken before the body is read, so a refused request costs no upload. ``caller`` None (not
        identified: the CLI, tests) has no share of its own, only the pool's bound."""
        if not self._started:
            self.start()
        with self._lock:
            if self._closed or self._runner is None:
                raise PoolUnavailable("the worker pool is closed")
            if self._pending >= self.size + self.max_queued:
                raise PoolUnavailable(
                    f"all {self.size} workers are busy and {self.max_queued} requests are waiting; try again later"
                )
            if caller is not None and self._admitted[caller] >= self.caller_max_requests:
                raise PoolUnavailable(
                    f"this caller already has {self.caller_max_requests} requests running or waiting, its share "
                    "of this service; try again when one has been answered"
                )
            self._pending += 1
            self._admitted[caller] += 1
            self._changed.notify_all()
            return Admission(self, caller)

    def _release(self, admission: Admission) -> None:
        with self._lock:
            if admission.released:
                return
            admission.released = True
            self._pending -= 1
            self._admitted[admission.caller] -= 1
            if not self._admitted[admission.caller]:
                del self._admitted[admission.caller]
            self._changed.notify_all()

    def _submit(
        self,
        extractor: str,
        data: bytes | memoryview,
        request: ExtractRequest,
        *,
        timeout_s: float | None,
        admission: Admission | None,
        caller: Hashable,
    ) -> _Job:
        admission = admission if admission is not None else self.admit(caller)
        admission.handed = True
        limit = self.timeout_s if timeout_s is None else timeout_s
        job = _Job(admission, extractor, data, request, limit, self._clock())
        job.future.add_done_callback(lambda _f: self._job_done(job))
        try:  # an input that ended a worker, or was refused at a high cost, lately: answered without a worker
            _recall_crash(self.crash_memory, self._scope(extractor, request), data)
        except Exception as exc:
            with self._lock:  # its upload still cost the service: charged to the caller's share
                self._queue.bill(admission.caller, self.byte_cost_s * len(data))
            _fail(job, exc)
            return job
        with self._lock:
            closed = self._closed or admission.released
            if not closed:
                self._queue.push(admission.caller, job)
                self._changed.notify_all()
        if closed:
            _fail(job, PoolUnavailable("the worker pool is closed"))
        else:
            self._dispatch()
        return job

    def _unqueue_locked(self, job: _Job) -> bool:
        return self._queue.remove(job.admission.caller, job)

    def _dispatch(self) -> None:
        """Hand free workers to waiting jobs; fail the ones whose time ran out while they waited."""
        expired: list[_Job] = []
        with self._lock:
            while self._free and not self._closed:
                picked = self._queue.pop()
                if picked is None:
                    break
                who, job = picked
                if job.future.done():  # cancelled by its caller
                    self._queue.dropped(who)
                    continue
                if self._clock() >= job.deadline:
                    self._queue.dropped(who)
                    expired.append(job)
                    continue
                if not job.future.set_running_or_notify_cancel():
                    self._queue.dropped(who)
                    continue
                w = self._free.pop()
                job.started = True
                job.started_at = self._queue.start(who)
                self._changed.notify_all()
                assert self._runner is not None
                self._runner.submit(self._job, job, w)
        for job in expired:
            _fail(job, _waited_too_long(job, self.size))

    def _expire(self, job: _Job) -> None:
        """``job``'s time ran out: if it is still waiting for a worker it ends as ``PoolUnavailable``."""
        with self._lock:
            waiting = not job.started and self._unqueue_locked(job)
        if waiting:
            _fail(job, _waited_too_long(job, self.size))

    def _job_done(self, job: _Job) -> None:
        with self._lock:
            if not job.started:
                self._unqueue_locked(job)
        self._release(job.admission)

    def _job(self, job: _Job, w: _Worker) -> None:
        """Run ``job`` on ``w`` (a runner thread), then give ``w`` to the next waiting job."""
        started = job.started_at
        remaining = job.deadline - started
        carried = len(job.data)  # now: the caller may close its upload (a mapped file) once it has the answer
        try:
            if self._closed:
                raise PoolUnavailable("the worker pool is closed")
            with w.lock:
                result = self._extract(w, job.extractor, job.data, job.request, remaining)
        except BaseException as exc:
            _remember_costly_refusal(
                self.crash_memory, self._scope(job.extractor, job.request), job.data, exc, self._clock() - started
            )
            waited = started - job.queued_at
            if _is_timeout(exc) and waited > (1 - _FAIR_RUN_SHARE) * job.limit_s:
                exc = PoolUnavailable(
                    f"the extraction did not finish in the {remaining:.1f} s left of this service's "
                    f"{job.limit_s:g} s limit after waiting {waited:.1f} s for a worker; try again later"
                )
            elif _is_timeout(exc):  # the file had its fair run: its timeout names the service's limit
                exc = _timeout_error(job.limit_s)
            job.future.set_exception(exc)
        else:
            carried += len(result)
            job.future.set_result(result)
        finally:
            service_s = self.byte_cost_s * carried
            self._await_replacement(w)
            with self._lock:
                self._queue.finished(job.admission.caller, started, service_s)
                self._free.append(w)
                self._changed.notify_all()
            self._dispatch()

    def _await_replacement(self, w: _Worker) -> None:
        """A child started on ``w`` for this request (recycled, crashed, timed out) imports its modules before the
        slot takes the next request: the slot waits for it, not a request (whose answer was already given). One
        that fails to start is dealt with by the slot's next request, as at the pool's start."""
        if w.proc is None or w.ready or self._closed:
            return
        with w.lock, contextlib.suppress(_Died, _Deadline, OSError):
            w.await_ready(time.monotonic() + self.startup_timeout_s)

    def _scope(self, extractor: str, request: ExtractRequest) -> tuple[object, ...]:
        """What, besides the bytes, decides an extraction's outcome (the crash memory's key)."""
        return (extractor, request.format, request.encoding, request.sql_dialect, self.max_output_bytes)

    def _extract(
        self, w: _Worker, extractor: str, data: bytes | memoryview, request: ExtractRequest, timeout_s: float
    ) -> bytes | SpooledReply:
        import orjson

        from shared.contract import ErrorCode, ExtractionError

        if self._closed:
            raise PoolUnavailable("the worker pool is closed")
        scope = self._scope(extractor, request)
        if w.proc is None or (w.ready and not w.alive()):  # never started, or died while idle (an OOM kill)
            self._replace(w)
            if w.proc is None:
                raise PoolUnavailable("a worker process cannot be started; see the service log")
        try:
            w.await_ready(time.monotonic() + self.startup_timeout_s)
        except (_Died, _Deadline) as exc:
            status = w.kill()
            if self._closed:
                raise PoolUnavailable("the worker pool is closed") from None
            self._spawn_quietly(w)
            raise PoolUnavailable(
                f"a worker process failed to start ({_exit_description(status)}); see the service log"
            ) from exc

        try:
            header = orjson.dumps(
                {
                    "extractor": extractor,
                    "format": request.format,
                    "name": request.name,
                    "encoding": request.encoding,
                    "sql_dialect": request.sql_dialect,
                    "max_output_bytes": self.max_output_bytes,
                    **({"reply_file": w.reply_path()} if self.spool_reply_bytes is not None else {}),
                }
            )
        except orjson.JSONEncodeError:  # a lone surrogate in a name or option (the service refuses those earlier)
            raise ExtractionError(
                ErrorCode.INVALID_OPTION, "the file name or an option is not valid Unicode text"
            ) from None
        deadline = time.monotonic() + timeout_s
        try:
            status, payload = w.call(
                header, data, deadline, self.max_output_bytes + _ERROR_REPLY_MAX, self.spool_reply_bytes
            )
        except _Deadline:
            self._replace(w)
            if self._closed:
                raise PoolUnavailable("the worker pool is closed") from None
            raise _timeout_error(timeout_s) from None
        except _OversizeReply as exc:
            self._replace(w)
            raise _oversize_error(exc.length, self.max_output_bytes) from None
        except _Died:
            returncode = w.kill()
            if self._closed:
                raise PoolUnavailable("the worker pool is closed") from None
            self._replace(w)
            log.warning("worker %d died during an extraction (%s)", w.index, _exit_description(returncode))
            raise _remember_crash(
                self.crash_memory, scope, data, _death_error(returncode, self.memory_limit_bytes)
            ) from None

        with self._lock:
            self.stats.completed += 1
        if status in (STATUS_ERROR_RETIRE, STATUS_OK_RETIRE) or w.tasks >= self.max_tasks:
            self._replace(w)
        if status in (STATUS_OK, STATUS_OK_RETIRE):
            return payload
        assert isinstance(payload, bytes)  # error replies are never spooled
        if status == STATUS_ERROR_RETIRE:  # a MemoryError ended the worker too
            _raise_reply(payload, lambda exc: _remember_crash(self.crash_memory, scope, data, exc))
        return _raise_reply(payload)

    def _spawn_quietly(self, w: _Worker) -> None:
        with contextlib.suppress(PoolUnavailable):
            self._spawn(w)


def _fail(job: _Job, exc: BaseException) -> None:
    if job.future.set_running_or_notify_cancel():
        job.future.set_exception(exc)


def _waited_too_long(job: _Job, size: int) -> PoolUnavailable:
    return PoolUnavailable(
        f"no worker became free within this service's {job.limit_s:g} s limit (all {size} were busy); try again later"
    )


def _is_timeout(exc: BaseException) -> bool:
    from shared.contract import ErrorCode, ExtractionError

    return isinstance(exc, ExtractionError) and exc.code == ErrorCode.TIMEOUT


def _timeout_error(timeout_s: float) -> Exception:
    from shared.contract import ErrorCode, ExtractionError

    return ExtractionError(ErrorCode.TIMEOUT, f"the extraction took longer than {timeout_s:g} s, this service's limit")


def _oversize_error(length: int, max_output_bytes: int) -> Exception:
    from shared.contract import ErrorCode, ExtractionError

    message = f"the artifact is {length} bytes, over this service's limit of {max_output_bytes} bytes"
    return ExtractionError(ErrorCode.RESOURCE_LIMIT, message)


def _death_error(returncode: int | None, memory_limit_bytes: int | None) -> Exception:
    from shared.contract import ErrorCode, ExtractionError

    limit = f"{memory_limit_bytes // (1024 * 1024)} MiB" if memory_limit_bytes else "no memory limit"
    return ExtractionError(
        ErrorCode.RESOURCE_LIMIT,
        f"the extraction ended its worker process ({_exit_description(returncode)}): the parser ran out "
        f"of memory ({limit}) or crashed on this file",
    )


def _recall_crash(memory: CrashMemory, scope: tuple[object, ...], data: bytes | memoryview) -> None:
    """Raise what ``data`` got when it ended a worker lately (``extract_fn.crash_memory``), instead of a worker."""
    from shared.contract import ExtractionError

    found = memory.recall(scope, data)
    if found is None:
        return
    if not found.ended_worker:  # a deterministic refusal: the same answer a fresh run gives, word for word
        raise ExtractionError(found.code, found.message)
    ago = max(0, round(time.monotonic() - found.at))
    raise ExtractionError(
        found.code,
        f"{found.message} (this same file ended a worker process {ago} s ago; it is not tried again until "
        f"{memory.ttl_s:g} s after that)",
    )


# An input refused as ``resource_limit`` or ``corrupt`` after at least this much of a worker's time is remembered
# too: the refusal depends only on the bytes and the options, so a client looping a hostile file costs one worker
# run per ``ttl_s``, not one per request. 20 ms is several small files' worth of a worker (a small file takes about
# 6 ms), so the pre-checks' fast refusals of hostile files (20-60 ms) are remembered too; the truly cheap ones are
# not worth an entry (or a hash).
COSTLY_REFUSAL_S: Final = 0.02


def _remember_costly_refusal(
    memory: CrashMemory, scope: tuple[object, ...], data: bytes | memoryview, exc: BaseException, worker_s: float
) -> None:
    from shared.contract import ErrorCode, ExtractionError

    if (
        worker_s >= COSTLY_REFUSAL_S
        and isinstance(exc, ExtractionError)
        and exc.code in (ErrorCode.RESOURCE_LIMIT, ErrorCode.CORRUPT)
        and memory.recall(scope, data, count=False) is None  # a remembered crash keeps its own entry and message
    ):
        memory.remember(scope, data, exc.code.value, exc.message, ended_worker=False)


def _remember_crash(
    memory: CrashMemory, scope: tuple[object, ...], data: bytes | memoryview, exc: Exception
) -> Exception:
    """``exc`` (the answer of an input that ended its worker), remembered for ``_recall_crash``."""
    from shared.contract import ErrorCode, ExtractionError

    if isinstance(exc, ExtractionError) and exc.code is ErrorCode.RESOURCE_LIMIT:
        memory.remember(scope, data, exc.code.value, exc.message)
    return exc


def run_forked(
    extractor: str,
    data: bytes,
    request: ExtractRequest,
    *,
    timeout_s: float,
    memory_limit_bytes: int | None,
    max_output_bytes: int,
) -> bytes | SpooledReply:
    """One extraction in a forked child under the pool's limits, for the CLI: one process per file anyway, so a
    fork (no second interpreter, no second round of imports) isolates it as well as a pool worker would. A big
    artifact comes back as the child wrote it, in a reply file (a ``SpooledReply``), as from a pool's worker: the
    parent never copies its bytes (big.parquet's 254 MB cost this process 0.3 s and 254 MB each copy)."""
    reply_fd = _unnamed_file()
    try:
        return _run_forked(
            extractor,
            data,
            request,
            reply_fd=reply_fd,
            timeout_s=timeout_s,
            memory_limit_bytes=memory_limit_bytes or 0,
            max_output_bytes=max_output_bytes,
        )
    finally:
        os.close(reply_fd)


def _unnamed_file() -> int:
    """A descriptor of a new file with no name in the temporary directory (``O_TMPFILE``: nothing to remove, gone
    with its last descriptor; no ``tempfile`` import, 4 ms of a cold CLI), a removed ``mkstemp`` one where the file
    system has no ``O_TMPFILE``."""
    with contextlib.suppress(OSError, AttributeError):
        # No name is made, so no other user can race for it (the S108 concern).
        return os.open(os.environ.get("TMPDIR") or "/tmp", os.O_TMPFILE | os.O_RDWR, 0o600)  # noqa: S108
    import tempfile

    fd, path = tempfile.mkstemp(prefix="extract-reply-")
    os.unlink(path)
    return fd


def _run_forked(
    extractor: str,
    data: bytes,
    request: ExtractRequest,
    *,
    reply_fd: int,
    timeout_s: float,
    memory_limit_bytes: int,
    max_output_bytes: int,
) -> bytes | SpooledReply:
    header = {
        "extractor": extractor,
        "format": request.format,
        "name": request.name,
        "encoding": request.encoding,
        "sql_dialect": request.sql_dialect,
        "max_output_bytes": max_output_bytes,
        "reply_file": reply_fd,  # the child inherits the descriptor
    }
    for name, value in ALLOCATOR_SETTINGS.items():  # as in _child_env, before the libraries load in the child
        os.environ.setdefault(name, value)
    rfd, wfd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        try:
            os.close(rfd)
            # A crash here is this file's answer (the parent reports the signal as resource_limit), not the
            # caller's: a fault handler the caller enabled (pytest's, PYTHONFAULTHANDLER) would dump the parent's
            # stack to the caller's stderr.
            import faulthandler

            faulthandler.disable()
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            os.dup2(2, 1)  # the CLI's stdout carries the answer: a library that prints goes to stderr
            sys.stdout = sys.stderr
            _set_limits(memory_limit_bytes)
            # The caller's frames still hold the bytes in this fork (and share their pages): they stay.
            status, payload = _handle(_ChildState(memory_limit_bytes), header, [data])
            with os.fdopen(wfd, "wb", buffering=_CHUNK) as out:
                _send_reply(out, status, payload)
        except BaseException:  # our own bug: say so on stderr; the parent answers for the missing reply
            import traceback

            traceback.print_exc()
        finally:
            os._exit(0)
    os.close(wfd)
    deadline = time.monotonic() + timeout_s
    try:
        os.set_blocking(rfd, False)
        try:
            status, length = _REPLY.unpack(_read_exact(rfd, _REPLY.size, deadline))
            in_file, status = status & IN_REPLY_FILE, status & ~IN_REPLY_FILE
            if length > max_output_bytes + _ERROR_REPLY_MAX:
                raise _oversize_error(length, max_output_bytes)
            if in_file:
                if status not in (STATUS_OK, STATUS_OK_RETIRE) or os.fstat(reply_fd).st_size != length:
                    raise _Died("the reply file does not hold the reply the child announced")
                return SpooledReply(os.fdopen(os.dup(reply_fd), "rb"), length)
            payload = bytes(_read_exact(rfd, length, deadline))
        except _Deadline:
            os.kill(pid, signal.SIGKILL)
            raise _timeout_error(timeout_s) from None
        except _Died:
            _, wait_status = os.waitpid(pid, 0)
            pid = 0
            raise _death_error(os.waitstatus_to_exitcode(wait_status), memory_limit_bytes) from None
    finally:
        os.close(rfd)
        if pid:
            os.waitpid(pid, 0)
    if status in (STATUS_OK, STATUS_OK_RETIRE):
        return payload
    return _raise_reply(payload)


def _raise_reply(payload: bytes, seen: Callable[[Exception], object] | None = None) -> Any:
    """Raise the worker's error reply as an ``ExtractionError`` (``seen`` gets it first)."""
    import orjson

    from shared.contract import ErrorCode, ExtractionError

    try:
        doc = orjson.loads(payload)
        code, message = ErrorCode(doc["code"]), str(doc["message"])
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
        raise ExtractionError(ErrorCode.CORRUPT, "the worker sent an unreadable error") from None
    if doc.get("log"):
        log.error("%s", doc["log"])
    exc = ExtractionError(code, message)
    if seen is not None:
        seen(exc)
    raise exc


# ---------------------------------------------------------------------------------------------------------------
# The child process: python -m extract_fn.workers PARENT_PID MEMORY_LIMIT_BYTES [PRELOAD...]


def _set_parent_death_signal(parent_pid: int) -> None:
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # pragma: no cover - not every libc
            pass
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(0)


def _set_limits(memory_limit: int) -> None:
    import resource

    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_limit <= 0:
        return
    # RLIMIT_DATA counts the heap (brk and private writable mappings, Linux >= 4.7) and not the code, the stacks or
    # the address space that allocators such as pyarrow's reserve without using; RLIMIT_AS bounds everything with
    # room for those, for kernels where RLIMIT_DATA does not count mmap.
    for res, wanted in ((resource.RLIMIT_DATA, memory_limit), (resource.RLIMIT_AS, memory_limit + _AS_HEADROOM)):
        _soft, hard = resource.getrlimit(res)
        value = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
        resource.setrlimit(res, (value, hard))


def _raise_data_limit(at_least: int) -> int:
    """Raise the heap limit to ``at_least`` if it is lower; the limit it was (for ``_set_limits`` to restore)."""
    import resource

    soft, _hard = resource.getrlimit(resource.RLIMIT_DATA)
    if soft != resource.RLIM_INFINITY and soft < at_least:
        _set_limits(at_least)
    return int(soft) if soft != resource.RLIM_INFINITY else at_least


class _ChildState:
    def __init__(self, memory_limit: int) -> None:
        self.memory_limit = memory_limit
        self.extractors: dict[str, Callable[..., Any]] = {}
        # The MemoryError reply is made now, not at the limit, where building it is what would fail.
        self.memory_error_reply = _memory_error_reply(memory_limit)


def _memory_error_reply(memory_limit: int) -> bytes:
    import orjson

    from shared.contract import ErrorCode

    limit = f"{memory_limit // (1024 * 1024)} MiB" if memory_limit else "the machine's memory"
    message = f"the extraction needed more memory than a worker may use ({limit})"
    return orjson.dumps({"code": ErrorCode.RESOURCE_LIMIT.value, "message": message})


def _resolve(state: _ChildState, path: str) -> Callable[..., Any]:
    fn = state.extractors.get(path)
    if fn is None:
        import importlib

        module_name, _, attr = path.partition(":")
        fn = getattr(importlib.import_module(module_name), attr or "extract")
        state.extractors[path] = fn
    return fn


def _clean(text: str) -> str:
    return text.encode("utf-8", "replace").decode("utf-8")


def _text_floor(artifact: dict[str, Any]) -> int:
    """A lower bound of the artifact's JSON size: its blocks' text (each character is at least one byte), a row
    run's (``shared.artifact.row_runs``) counted once."""
    from shared.artifact.row_runs import RowRun

    blocks = artifact.get("blocks")
    if not isinstance(blocks, list):
        return 0
    total = 0
    last_run = None
    for block in blocks:
        if block.__class__ is RowRun:
            if block is not last_run:
                total += block.text_chars
                last_run = block
            continue
        text = block.get("text") if isinstance(block, dict) else None
        if isinstance(text, str):
            total += len(text)
    return total


_Error = Callable[..., tuple[int, bytes]]


class _OutputTooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


class ArtifactOut:
    """The artifact's JSON as the worker writes it (``shared.artifact.built.dump_checked``): in memory up to
    ``_REPLY_IN_MEMORY`` bytes, then in a file (``path``: the pool's reply file for the slot by its path, or the
    descriptor of the one ``run_forked`` made, which its child inherits; else an anonymous temporary one), so the
    bytes of a big artifact never sit in the worker's heap; a write that takes it over ``limit`` bytes raises
    ``_OutputTooLarge``."""

    def __init__(self, limit: int, path: str | int | None = None) -> None:
        self.limit = limit
        self.size = 0
        self._buf = bytearray()
        self.file: Any = None
        self.path = path  # the pool's reply file for this slot (the parent takes it as is), else an anonymous one

    @property
    def in_reply_file(self) -> bool:
        return self.file is not None and self.path is not None

    def __len__(self) -> int:
        return self.size

    def write(self, part: bytes | memoryview) -> None:
        self.size += len(part)
        if self.size > self.limit:
            raise _OutputTooLarge(self.size)
        if self.file is not None:
            self.file.write(part)
            return
        self._buf += part
        if len(self._buf) > _REPLY_IN_MEMORY:
            if isinstance(self.path, int):
                fd = os.dup(self.path)
                os.ftruncate(fd, 0)
                os.lseek(fd, 0, os.SEEK_SET)
                self.file = os.fdopen(fd, "w+b")
            elif self.path is not None:
                fd = os.open(self.path, os.O_RDWR | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0))
                self.file = os.fdopen(fd, "w+b")
            else:
                import tempfile

                self.file = tempfile.TemporaryFile(prefix="extract-artifact-")  # noqa: SIM115  (closed by close())
            self.file.write(self._buf)
            self._buf = bytearray()

    def getvalue(self) -> bytes:
        """The whole JSON (for the check of the bytes, or a small reply)."""
        if self.file is None:
            return bytes(self._buf)
        self.file.flush()
        self.file.seek(0)
        return bytes(self.file.read())

    def send(self, fd: int) -> None:
        """Write the bytes to ``fd`` (a blocking pipe): from the file by the kernel (``sendfile``)."""
        if self.file is None:
            _write_blocking(fd, self._buf)
            return
        self.file.flush()
        offset = 0
        while offset < self.size:
            sent = os.sendfile(fd, self.file.fileno(), offset, self.size - offset)
            if sent == 0:
                raise OSError("the artifact's temporary file ended early")
            offset += sent

    def release(self) -> None:
        """The reply file written out and let go of (the parent takes it as it is)."""
        self.file.flush()
        self.file.close()
        self.file = None

    def close(self) -> None:
        """The bytes dropped (a reply file emptied: they are not a reply)."""
        self._buf = bytearray()
        if self.file is not None:
            if self.path is not None:
                self.file.truncate(0)
            self.file.close()
            self.file = None


def _write_blocking(fd: int, data: bytes | bytearray) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _send_reply(wf: Any, status: int, payload: bytes | ArtifactOut) -> None:
    """A reply frame on ``wf`` (a buffered writer on a blocking pipe): the status, the length and the payload (none
    when it is in the pool's reply file, written out before the parent hears of it)."""
    if isinstance(payload, ArtifactOut) and payload.in_reply_file:
        payload.release()
        wf.write(_REPLY.pack(status | IN_REPLY_FILE, len(payload)))
        wf.flush()
        return
    wf.write(_REPLY.pack(status, len(payload)))
    if isinstance(payload, bytes):
        wf.write(payload)
        wf.flush()
        return
    wf.flush()
    try:
        payload.send(wf.fileno())
    finally:
        payload.close()


def _serialize(
    state: _ChildState, artifact: dict[str, Any], header: dict[str, Any], original_size: int, error: _Error
) -> tuple[int, bytes | ArtifactOut]:
    """The artifact checked and serialized in one pass; its JSON (``ArtifactOut``), or the error reply."""
    import orjson

    from shared.artifact import InvalidArtifact, check_artifact
    from shared.artifact.built import dump_checked
    from shared.contract import ErrorCode

    fmt = str(header.get("format"))
    max_output = int(header["max_output_bytes"])
    out = ArtifactOut(max_output, header.get("reply_file"))
    try:
        checked = dump_checked(artifact, format=fmt, original_size=original_size, write=out.write)
        del artifact
        if not checked:
            # The bytes that leave are checked by the shared validator here, in the worker: within the
            # extraction's time limit, in parallel across workers, and off the service's event loop. An artifact
            # the objects' check passed is valid as these bytes; any other is checked (and reported) from them.
            if state.memory_limit > 0:
                _set_limits(state.memory_limit + _VALIDATE_MEMORY_FACTOR * len(out))
            check_artifact(out.getvalue(), format=fmt, original_size=original_size)
    except orjson.JSONEncodeError as exc:
        out.close()
        return error(ErrorCode.CORRUPT, f"the {fmt} extractor produced an artifact that is not JSON: {exc}")
    except _OutputTooLarge as exc:
        out.close()
        return error(
            ErrorCode.RESOURCE_LIMIT,
            f"the artifact is at least {exc.size} bytes, over this service's limit of {max_output} bytes",
        )
    except InvalidArtifact as exc:
        out.close()
        return error(
            ErrorCode.CORRUPT,
            f"the {fmt} extractor produced an invalid artifact for this file ({len(exc.violations)} rule(s) "
            "broken); this is a bug in the extractor, recorded in the service log",
            log=f"the {fmt} extractor ({header['extractor']}) produced an invalid artifact: "
            + "; ".join(str(v) for v in exc.violations[:50]),
        )
    except BaseException:
        out.close()
        raise
    # After a big artifact the heap may stay larger than the restored limit allows: a fresh worker takes over.
    return (STATUS_OK_RETIRE if len(out) > _RETIRE_AFTER_BYTES else STATUS_OK), out


def _handle(state: _ChildState, header: dict[str, Any], inbox: list[bytes]) -> tuple[int, bytes | ArtifactOut]:
    """One request: ``inbox`` holds the file's bytes, which are taken out of it and handed to the module without a
    reference kept here or in the caller, so a module that drops them once parsed frees them (a 27 MB CSV is text
    and records by then)."""
    import traceback

    import orjson

    from extract_fn.formats.base import ExtractRequest
    from extract_fn.formats.frame import request_gc
    from shared.artifact.row_runs import compact_rows
    from shared.contract import ErrorCode, ExtractionError

    fmt = str(header.get("format"))
    max_output = int(header["max_output_bytes"])

    def error(code: ErrorCode, message: str, status: int = STATUS_ERROR, log: str = "") -> tuple[int, bytes]:
        # The module may have left the heap at the limit: room for the reply (never less than the limit in force).
        restore = _raise_data_limit(state.memory_limit + _ERROR_REPLY_HEADROOM) if state.memory_limit > 0 else None
        try:
            doc = {"code": code.value, "message": _clean(message)[:2000]}
            if log:  # for the service's log only, never for the client
                doc["log"] = log[:20_000]
            return status, orjson.dumps(doc)
        except MemoryError:
            return STATUS_ERROR_RETIRE, state.memory_error_reply
        finally:
            if restore is not None:
                _set_limits(restore)

    try:
        fn = _resolve(state, header["extractor"])
    except Exception as exc:  # a deployment problem, not the file's: the server tries again later
        traceback.print_exc()
        return error(
            ErrorCode.FORMAT_UNAVAILABLE,
            f"the {fmt} extractor cannot be loaded in this deployment ({type(exc).__name__}: {exc})",
            STATUS_ERROR_RETIRE,
        )
    try:
        request = ExtractRequest(
            format=fmt,
            name=header.get("name") or "",
            encoding=header.get("encoding"),
            sql_dialect=header.get("sql_dialect"),
            max_output_bytes=max_output,
        )
        # The module's GC policy over the whole request: its artifact's objects are freed by the serialization
        # below before the collector can come back on and walk them.
        # Row blocks are kept as runs (``shared.artifact.row_runs``): only ``_serialize`` reads this artifact.
        original_size = len(inbox[0])
        with request_gc(fn), compact_rows():
            artifact = fn(inbox.pop(), request)  # the module's frame owns the one reference
            if not isinstance(artifact, dict):
                return error(
                    ErrorCode.CORRUPT, f"the {fmt} extractor returned {type(artifact).__name__}, not an artifact"
                )
            floor = _text_floor(artifact)
            if floor > max_output:
                # Refused before serializing: orjson reserves ~8 bytes per character of a string up front, so one huge
                # string could pass the memory limit (and orjson crashes on a failed allocation) before the size check.
                return error(
                    ErrorCode.RESOURCE_LIMIT,
                    f"the artifact's text alone is {floor} characters, over this service's limit of {max_output} bytes",
                )
            # The parser is done: what follows is our own code on an artifact bounded by max_output_bytes. Checking it
            # and serializing it cost memory in proportion to that bound, not to the file, so the limit that contained
            # the parser is raised by that much here (orjson crashes rather than raising when an allocation fails) and
            # set back afterwards. One pass checks the objects a chunk at a time (no parse-back; a yes means the bytes
            # are valid) and serializes each chunk at once into the reply (a temporary file past a few MB), dropping
            # the chunk's objects: the artifact's objects and its bytes never coexist whole, and an artifact over
            # max_output is refused as soon as its bytes pass it. The check's copies are a chunk's containers, and the
            # whole artifact's JSON is only read back when the check said no, under the validation factor of its size.
            if state.memory_limit > 0:
                _set_limits(state.memory_limit + max(_SERIALIZE_MEMORY_FACTOR, _VALIDATE_MEMORY_FACTOR) * max_output)
            try:
                return _serialize(state, artifact, header, original_size, error)
            finally:
                if state.memory_limit > 0:
                    _set_limits(state.memory_limit)
    except ExtractionError as exc:
        return error(exc.code, exc.message)
    except MemoryError:  # no allocation here: the heap may be at the limit (the reply was made in advance)
        return STATUS_ERROR_RETIRE, state.memory_error_reply
    except RecursionError:
        return error(ErrorCode.CORRUPT, f"the file nests too deeply for the {fmt} parser (RecursionError)")
    except ImportError as exc:
        traceback.print_exc()
        return error(
            ErrorCode.FORMAT_UNAVAILABLE,
            f"the {fmt} extractor cannot be loaded in this deployment ({type(exc).__name__}: {exc})",
            STATUS_ERROR_RETIRE,
        )
    except BaseException as exc:  # any parser failure, even SystemExit: the file is what the parser fails on
        print(f"extract_fn worker: the {fmt} extractor raised {type(exc).__name__}:", file=sys.stderr)
        traceback.print_exc()
        status = STATUS_ERROR if isinstance(exc, Exception) else STATUS_ERROR_RETIRE
        return error(ErrorCode.CORRUPT, f"the {fmt} parser failed on this file ({type(exc).__name__})", status)


def _preload(state: _ChildState, names: list[str]) -> None:
    """Import ``names`` now, before the first request: "module", "module:function" (an extractor, kept for its
    requests) or "module:attribute.path" (read, for what it loads lazily: sqlglot's dialect registry). One that fails
    (a missing library, the memory limit) is left for its first request, which reports it as that format's answer."""
    import functools
    import importlib

    for name in names:
        module_name, _, attr = name.partition(":")
        try:
            if "." in attr:
                functools.reduce(getattr, attr.split("."), importlib.import_module(module_name))
            elif attr:
                _resolve(state, name)
            else:
                importlib.import_module(name)
        except BaseException as exc:  # never the worker's start: the request path reports it
            print(f"extract_fn worker: preloading {name} failed ({type(exc).__name__}: {exc})", file=sys.stderr)


def _child_main(argv: list[str]) -> None:
    parent_pid, memory_limit = int(argv[0]), int(argv[1])
    _set_parent_death_signal(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C reaches the whole process group: the parent decides
    # Move the protocol off fds 0 and 1, so a library that prints cannot corrupt it; its prints go to stderr.
    proto_in, proto_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    sys.stdout = sys.stderr
    os.set_blocking(proto_in, True)
    os.set_blocking(proto_out, True)
    _set_limits(memory_limit)

    import orjson

    import extract_fn.formats.base  # noqa: F401  (the contract, pydantic: every request needs them)

    state = _ChildState(memory_limit)
    _preload(state, argv[2:])
    rf = os.fdopen(proto_in, "rb", buffering=_CHUNK)
    wf = os.fdopen(proto_out, "wb", buffering=_CHUNK)
    wf.write(READY)
    wf.flush()
    for _ in itertools.count():
        head = rf.read(_REQUEST.size)
        if len(head) < _REQUEST.size:
            os._exit(0)  # the parent closed the pipe
        magic, header_len, data_len = _REQUEST.unpack(head)
        if magic != _REQUEST_MAGIC:
            os._exit(3)
        header = orjson.loads(rf.read(header_len))
        inbox = [rf.read(data_len)]
        if len(inbox[0]) < data_len:
            os._exit(0)
        status, payload = _handle(state, header, inbox)
        del inbox
        _send_reply(wf, status, payload)
        del payload
        if status in (STATUS_ERROR_RETIRE, STATUS_OK_RETIRE):
            os._exit(0)


if __name__ == "__main__":
    _child_main(sys.argv[1:])
