"""The frame every format module runs on: what is the same for all eleven formats, written once.

A format module is one function on a ``FormatContext`` (the original's bytes, the request with its options and
output size, the limits, the one output budget) that returns the builder's artifact; ``format_module`` turns it into
the module's ``extract(data, request)``, the interface the worker calls (``extract_fn.formats.base``). The frame
applies the one garbage-collector policy around the call, so no module touches ``gc``; the worker holds that policy
over the whole request (``request_gc``: the extraction, the check and the serialization).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.output_budget import BudgetKind, OutputBudget
from extract_fn.limits import Limits


class GcPolicy(Enum):
    """What the cyclic garbage collector does during one extraction."""

    # Off: a parse creates hundreds of thousands of containers and no cycles worth collecting; the collector's
    # passes over them cost about a third of markdown-it's parse (big.md: 0.84 s with it, 0.57 s without) and more
    # than building a big table's lists (2.7x measured by the validator).
    PAUSE = "pause"
    # On, but rarely (first generation at 100,000 allocations): for a parser whose trees hold cycles (sqlglot's
    # nodes point at their parents), which would otherwise stay in memory until the extraction ends.
    RARE = "rare"


@contextmanager
def gc_policy(policy: GcPolicy) -> Iterator[None]:
    """Apply ``policy`` for the duration of the block, then put the collector back as it was."""
    if policy is GcPolicy.PAUSE:
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            yield
        finally:
            if was_enabled:
                gc.enable()
        return
    threshold = gc.get_threshold()
    gc.set_threshold(max(threshold[0], 100_000), max(threshold[1], 50), max(threshold[2], 100))
    try:
        yield
    finally:
        gc.set_threshold(*threshold)


@dataclass(slots=True)
class FormatContext:
    """Everything a format module gets for one file."""

    data: bytes
    request: ExtractRequest

    def take_data(self) -> bytes:
        """The file's bytes, which the context then no longer holds: a module that is done with them once parsed
        (csv, after decoding) frees them with its own ``del`` when no caller kept them (the worker keeps none)."""
        data, self.data = self.data, b""
        return data

    @property
    def limits(self) -> Limits:
        return self.request.limits

    @property
    def max_output_bytes(self) -> int:
        return self.request.max_output_bytes

    def options(self) -> dict[str, str]:
        """The artifact's ``options`` (the builder's ``options=``)."""
        return self.request.options()

    def output_budget(self, kind: BudgetKind) -> OutputBudget:
        """The one output budget of this file's artifact, measured as formats of ``kind`` measure
        (``extract_fn.formats.output_budget``)."""
        return OutputBudget.for_request(self.request, kind)


Body = Callable[[FormatContext], dict[str, Any]]
Extractor = Callable[[bytes, ExtractRequest], dict[str, Any]]


def format_module(body: Body, *, gc: GcPolicy = GcPolicy.PAUSE) -> Extractor:
    """A module's ``extract(data, request)``: ``body`` on the file's context, under the frame's GC policy (kept as
    the function's ``gc_policy`` too, for ``request_gc``)."""

    def extract(data: bytes, request: ExtractRequest) -> dict[str, Any]:
        ctx = FormatContext(data, request)
        del data  # the context holds the bytes alone (``FormatContext.take_data``)
        with gc_policy(gc):
            return body(ctx)

    extract.__doc__ = body.__doc__
    extract.__qualname__ = extract.__name__ = "extract"
    extract.gc_policy = gc  # type: ignore[attr-defined]  # read back by request_gc
    return extract


@contextmanager
def request_gc(extractor: Callable[..., Any]) -> Iterator[None]:
    """The GC policy of ``extractor`` (a ``format_module`` function's) held over a whole request in the worker: the
    extraction, then the check and serialization of its artifact, which frees the artifact's objects as it writes
    them. Under ``PAUSE`` the collector so never walks the artifact's containers when it comes back on (at the end
    of ``extract`` it would: one pass over every block, cell and locator, ~10% of big.toml's request). The
    module's own ``gc_policy`` inside finds the collector off and leaves it so. Any other extractor runs as is."""
    policy = getattr(extractor, "gc_policy", None)
    if policy.__class__ is not GcPolicy:
        yield
        return
    with gc_policy(policy):
        yield


# A source from this size on has its parser's freed native heap given back (``release_heap``): below it the heap
# is not worth a malloc_trim, nor a small file's import of ctypes.
RELEASE_HEAP_FROM: Final = 1 << 20


def release_heap(source_size: int) -> None:
    """Give the native heap a parser freed (calamine's cells, Lexbor's tree) back to the system before the blocks
    are built in Python's own arenas, which would not reuse it (``buffering.release_memory``), when
    ``source_size`` (bytes or characters) is at least ``RELEASE_HEAP_FROM``."""
    if source_size >= RELEASE_HEAP_FROM:
        from extract_fn.buffering import release_memory

        release_memory()
