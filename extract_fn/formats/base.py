"""The one interface every format module implements.

A format module is ``extract_fn/formats/<format>_format.py`` with::

    def extract(data: bytes, request: ExtractRequest) -> dict: ...

made by ``extract_fn.formats.frame.format_module`` from one function on a ``FormatContext``.

It returns the artifact dict (made with ``shared.artifact_builder.ArtifactBuilder``) or raises
``shared.contract.ExtractionError`` with the contract's code and a message a person can act on. It runs inside a
worker process with time, memory and output limits; it should still check sizes before inflating anything
(zip members, compressed pages; every bound in ``request.limits``, ``extract_fn.limits``) and stop adding blocks once
``request.max_output_bytes`` is near, reporting the cut in coverage.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from extract_fn.limits import LIMITS, Limits
from shared.contract import DEFAULT_MAX_BYTES


@dataclass(frozen=True, slots=True)
class ExtractRequest:
    format: str
    name: str = ""
    encoding: str | None = None  # the `encoding` option, already checked to be a known codec
    sql_dialect: str | None = None  # the `sql_dialect` option, already checked to be a known dialect
    max_output_bytes: int = 4 * DEFAULT_MAX_BYTES  # the artifact's size budget (resource_limit past it)
    limits: Limits = field(default=LIMITS, repr=False)  # every other bound a module applies

    def options(self) -> dict[str, str]:
        """The artifact's ``options``: the options the caller gave, as given."""
        out: dict[str, str] = {}
        if self.encoding is not None:
            out["encoding"] = self.encoding
        if self.sql_dialect is not None:
            out["sql_dialect"] = self.sql_dialect
        return out
