"""Test-only extractors with the format-module interface, each misbehaving in one way.

The worker pool runs them by path ("tests.hostile_extractors:sleep_forever"); the tests check that each ends in its
contract error code and that the next request on the same pool is served normally.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path
from typing import Any

from extract_fn.formats.base import ExtractRequest
from shared.artifact_builder import ArtifactBuilder, make_locator
from shared.contract import ErrorCode, ExtractionError


def echo(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    """A well-behaved extractor: one paragraph per line of the (UTF-8) input; attrs say what the worker saw."""
    text = data.decode("utf-8", "replace")
    lines = text.splitlines() or [""]
    b = ArtifactBuilder(request.format, parser="test-echo", parser_version="1", unit="lines", options=request.options())
    b.attrs.update(
        {
            "name": request.name,
            "size": len(data),
            "pid": os.getpid(),
            "max_output_bytes": request.max_output_bytes,
        }
    )
    offset = 0
    for i, line in enumerate(lines, start=1):
        b.add_block(
            "paragraph", line, locator=make_locator(line_start=i, char_start=offset, char_end=offset + len(line))
        )
        offset += len(line) + 1
    b.coverage(total=len(lines), extracted=len(lines))
    return b.build()


def summarize(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    """A well-behaved extractor whose artifact does not grow with the input: one block saying the size."""
    b = ArtifactBuilder(request.format, parser="test-summary", parser_version="1", unit="files")
    b.attrs.update(
        {
            "size": len(data),
            "pid": os.getpid(),
            "sha256": hashlib.sha256(data).hexdigest(),
            "max_output_bytes": request.max_output_bytes,
            "options": request.options(),
            "name": request.name,
        }
    )
    b.add_block("paragraph", f"{len(data)} bytes", locator=make_locator(line_start=1))
    b.coverage(total=1, extracted=1)
    return b.build()


def sleep_forever(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    while True:
        time.sleep(3600)


def busy_loop(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    """Spins holding the GIL: only a kill from outside the process stops it."""
    n = 0
    while True:
        n += 1


def allocate_10gb(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    block = bytearray(10 * 1024**3)
    return {"size": len(block)}


def allocate_gradually(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    """Grows by 64 MiB steps (each touched) until the memory limit stops it."""
    hoard = []
    while True:
        hoard.append(b"\x01" * (64 * 1024 * 1024))


def exhaust_memory(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    """Fills the heap to its last bytes (ever smaller steps) and raises MemoryError with all of it still held: the
    worker then builds its error reply at the memory limit."""
    hoard: list[bytearray] = []
    for step in (64 << 20, 1 << 20, 64 << 10, 4096, 256, 16):
        try:
            while True:
                hoard.append(bytearray(step))
        except MemoryError:
            pass
    raise MemoryError


def huge_output(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    """An artifact of about ``int(request.name)`` bytes (500 MB unless the name says otherwise)."""
    size = int(request.name) if request.name.isdigit() else 500 * 1000 * 1000
    artifact = echo(b"x", request)
    artifact["blocks"][0]["text"] = "x" * size
    return artifact


def exit_hard(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    os._exit(1)


def raise_value_error(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    raise ValueError("secret path /etc/shadow and a traceback must not leak")


def raise_extraction_error(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    raise ExtractionError(ErrorCode.ENCODING, "the text does not decode (from the hostile extractor)")


def slow_refusal(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    """Refuses the file after more than a second of work (a costly, deterministic refusal), counting its runs in
    the file the bytes name."""
    with open(data.decode().strip(), "a") as runs:
        runs.write("run\n")
    done = time.monotonic() + 1.0
    while time.monotonic() < done:  # a second of work
        pass
    raise ExtractionError(ErrorCode.RESOURCE_LIMIT, "the file is over a limit (from the hostile extractor)")


def raise_system_exit(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    raise SystemExit(0)


def invalid_artifact(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    """Serializable JSON that breaks the contract's artifact rules (unknown block type, extracted > total)."""
    artifact = echo(data, request)
    artifact["blocks"][0]["type"] = "not_a_block_type"
    artifact["coverage"]["extracted"] = artifact["coverage"]["total"] + 5
    return artifact


def not_json(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    return {"value": object()}


def returns_list(data: bytes, request: ExtractRequest) -> Any:
    return ["not", "an", "artifact"]


def prints_to_stdout(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    """A noisy library: what it prints (or writes to fd 1) must not corrupt the worker's protocol."""
    print("noise on stdout " * 100)
    os.write(1, b"\x00\x01raw noise on fd 1\n")
    return echo(data, request)


def import_missing(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    import a_module_that_is_not_installed  # type: ignore[import-not-found]  # noqa: F401

    return echo(data, request)


def segfault(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    import ctypes

    ctypes.string_at(0)
    return echo(data, request)


def rendezvous(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    """Meets ``int(data)`` extractions in the folder ``request.name``: succeeds only if they all run at once."""
    folder = Path(request.name)
    want = int(data)
    (folder / str(os.getpid())).touch()
    deadline = time.monotonic() + 90  # however busy the machine, the other one has started by then
    while len(list(folder.iterdir())) < want:
        if time.monotonic() > deadline:
            raise ExtractionError(ErrorCode.CORRUPT, "the other extractions never arrived: no parallelism")
        time.sleep(0.01)
    return summarize(data, request)


def native_libraries(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    """pyarrow and pdfium at work, under whatever memory limit the worker has: the files are named in ``data``."""
    import pyarrow.parquet as pq
    import pypdfium2 as pdfium

    parquet_path, pdf_path = data.decode().split("\n")
    rows = pq.read_table(parquet_path).num_rows
    doc = pdfium.PdfDocument(pdf_path)
    chars = sum(len(doc[i].get_textpage().get_text_range()) for i in range(len(doc)))
    artifact = summarize(data, request)
    artifact["attrs"].update({"parquet_rows": rows, "pdf_pages": len(doc), "pdf_chars": chars})
    return artifact


def gate(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    """Holds its worker until the file ``request.name`` exists (at most 30 s), then answers like ``summarize``: a
    test decides when a worker becomes free without depending on speed."""
    gate_file = Path(request.name)
    deadline = time.monotonic() + 30
    while not gate_file.exists():
        if time.monotonic() > deadline:
            raise ExtractionError(ErrorCode.CORRUPT, "the gate never opened")
        time.sleep(0.005)
    return summarize(data, request)


def allocator_env(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    """The native allocators' settings the process runs with (``workers.ALLOCATOR_SETTINGS``' names), in attrs."""
    from extract_fn.workers import ALLOCATOR_SETTINGS

    artifact = summarize(data, request)
    artifact["attrs"]["env"] = {name: os.environ.get(name) for name in ALLOCATOR_SETTINGS}
    return artifact


def process_state(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    """What the worker process holds: whether the module named by ``request.name`` was imported before this
    request, and the heap the kernel counts for ``RLIMIT_DATA`` (VmData, MB)."""
    import sys

    loaded = request.name in sys.modules
    vm_data = next(
        int(line.split()[1]) // 1024
        for line in Path("/proc/self/status").read_text().splitlines()
        if line.startswith("VmData:")
    )
    artifact = summarize(data, request)
    artifact["attrs"].update({"loaded": loaded, "vm_data_mb": vm_data})
    return artifact


def row_table(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    """A well-behaved tabular extractor: one row block per line (a table of one string column), and in attrs whether
    the builder kept them as a row run (``shared.artifact.row_runs``)."""
    from shared.artifact.row_runs import RowRun

    lines = data.decode("utf-8", "replace").splitlines()
    b = ArtifactBuilder(request.format, parser="test-rows", parser_version="1", unit="rows", options=request.options())
    b.add_row_blocks("t0", [f"line: {t}" for t in lines], rows=range(1, len(lines) + 1), first_index=0)
    b.attrs["row_run"] = bool(b.blocks) and isinstance(b.blocks[0], RowRun)
    b.add_table("lines", [("line", "string")], [[t] for t in lines], header_rows=0, id="t0")
    b.coverage(total=len(lines), extracted=len(lines))
    return b.build()


def holders(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    """A well-behaved extractor whose one paragraph is how many references hold the file's bytes besides its own
    parameter (``sys.getrefcount`` counts its argument too): 0 when the caller kept none, so the module's ``del``
    frees them."""
    import sys

    others = sys.getrefcount(data) - 2
    b = ArtifactBuilder(request.format, parser="test-holders", parser_version="1", unit="blocks")
    b.add_block("paragraph", str(others))
    b.coverage(total=1, extracted=1)
    return b.build()
