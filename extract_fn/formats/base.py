"""The one interface every format module implements.

A format module is ``extract_fn/formats/<format>.py`` with::

    def extract(data: bytes, request: ExtractRequest) -> dict: ...

It returns the artifact dict (made with ``shared.artifact_builder.ArtifactBuilder``) or raises
``shared.contract.ExtractionError`` with the contract's code and a message a person can act on. It runs inside a
worker process with time, memory and output limits; it should still check sizes before inflating anything
(zip members, compressed pages) and stop adding blocks once ``request.max_output_bytes`` is near, reporting the
cut in coverage.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from shared.contract import DEFAULT_MAX_BYTES


@dataclass(frozen=True, slots=True)
class ExtractRequest:
    format: str
    name: str = ""
    encoding: str | None = None  # the `encoding` option, already checked to be a known codec
    sql_dialect: str | None = None  # the `sql_dialect` option, already checked to be a known dialect
    max_output_bytes: int = 4 * DEFAULT_MAX_BYTES  # the artifact's size budget (resource_limit past it)

    def options(self) -> dict[str, str]:
        """The artifact's ``options``: the options the caller gave, as given."""
        out: dict[str, str] = {}
        if self.encoding is not None:
            out["encoding"] = self.encoding
        if self.sql_dialect is not None:
            out["sql_dialect"] = self.sql_dialect
        return out


@contextmanager
def no_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector for one extraction.

    A parse creates hundreds of thousands of containers and no cycles worth collecting; the collector's passes over
    them cost about a third of markdown-it's parse (big.md: 0.84 s with it, 0.57 s without) and more than building
    a big table's lists (2.7x measured by the validator).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
