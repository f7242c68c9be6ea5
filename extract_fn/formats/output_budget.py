"""The one output budget: how much of ``request.max_output_bytes`` a format module may still spend on blocks and rows.

Every module gets it from the frame (``FormatContext.output_budget(kind)``, or ``output_budget(request, kind)`` where
only the request is at hand) and stops adding once it is spent, reporting the cut in coverage, so an artifact never
passes its size limit (the worker still refuses one that does: ``resource_limit``). What differs between the
formats is only how much is kept back for the envelope and how a module measures what it adds, named by the
``BudgetKind``:

- ``TEXT`` (text, markdown, html): each block measured as the JSON its text, section path, keys and attrs serialize
  to (``take``); ``limits.output_reserve_text`` kept back, at most half the limit.
- ``TABLE`` (csv, xlsx, parquet): rows and row blocks measured by serializing them (``table_values``: ``remaining``,
  ``charge``, ``require``); ``limits.output_reserve_table`` kept back.
- ``KEYED`` (sql, toml): each block's cost estimated by the module (``take_bytes``); ``limits.output_reserve_keyed``
  kept back.
- ``PAGED`` (pdf, docx, pptx): the builder's running size estimate (``ArtifactBuilder(measure_blocks=True)``'s
  ``text_chars``) against ``limits.output_share_paged`` of the limit (``over``), checked between pages, paragraphs
  or slides.

Once something does not fit, the budget is ``exhausted`` for good, so a module stops in reading order rather than
skipping one big block and keeping later small ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import Enum
from typing import Any, Final

import orjson

from extract_fn.formats.base import ExtractRequest
from extract_fn.limits import Limits
from shared.contract import ErrorCode, ExtractionError


class BudgetKind(Enum):
    """How a family of formats measures what it adds (see the module docstring)."""

    TEXT = "text"
    TABLE = "table"
    KEYED = "keyed"
    PAGED = "paged"


def reserve_for(kind: BudgetKind, max_bytes: int, limits: Limits) -> int:
    """The bytes of ``max_bytes`` kept back for the artifact's envelope (coverage, warnings, attrs, columns)."""
    if kind is BudgetKind.TEXT:
        return min(limits.output_reserve_text, max_bytes // 2)
    if kind is BudgetKind.TABLE:
        return limits.output_reserve_table
    if kind is BudgetKind.KEYED:
        return limits.output_reserve_keyed
    return max_bytes - int(max_bytes * limits.output_share_paged)


class OutputBudget:
    """Bytes left for blocks and rows before the artifact would pass ``max_bytes``: ``limit`` is ``max_bytes`` less
    the reserve, ``used`` what was spent so far."""

    # What a text block costs beyond its text, section path, keys and attrs: its id, type, parent, depth and locator.
    BLOCK_OVERHEAD: Final = 320

    __slots__ = ("exhausted", "limit", "max_bytes", "used")

    def __init__(self, max_bytes: int, reserve: int) -> None:
        self.max_bytes = max_bytes
        self.limit = max_bytes - reserve
        self.used = 0
        self.exhausted = False  # True once something did not fit

    @classmethod
    def for_request(cls, request: ExtractRequest, kind: BudgetKind) -> OutputBudget:
        """The budget of one request's artifact, for a format of ``kind``."""
        limit = request.max_output_bytes
        return cls(limit, reserve_for(kind, limit, request.limits))

    @property
    def remaining(self) -> int:
        return self.limit - self.used

    def charge(self, nbytes: int) -> None:
        """Count bytes spent that are not refused (artifact attrs, a title, rows already measured to fit)."""
        self.used += nbytes

    def take_bytes(self, nbytes: int) -> bool:
        """Spend ``nbytes`` if they fit; False (and exhausted from now on) when they do not."""
        if self.exhausted or self.used + nbytes > self.limit:
            self.exhausted = True
            return False
        self.used += nbytes
        return True

    def take(self, text: str, section_path: Sequence[str], keys: Sequence[str], attrs: dict[str, Any] | None) -> bool:
        """Reserve room for one text block; False (and exhausted from now on) when it does not fit."""
        if self.exhausted:
            return False
        # The text's length is a lower bound of its JSON: a block that cannot fit is refused before orjson, which
        # reserves ~8 bytes per character up front (a huge line could pass the worker's memory limit).
        if self.used + len(text) + self.BLOCK_OVERHEAD > self.limit:
            self.exhausted = True
            return False
        size = len(orjson.dumps((text, section_path, keys, attrs))) + self.BLOCK_OVERHEAD
        if self.used + size > self.limit:
            self.exhausted = True
            return False
        self.used += size
        return True

    def require(self, nbytes: int, what: str) -> None:
        """Spend ``nbytes`` that cannot be left out (a table's columns), or end in ``resource_limit``."""
        if nbytes > self.remaining:
            raise ExtractionError(
                ErrorCode.RESOURCE_LIMIT,
                f"{what} alone needs about {nbytes} bytes of output, "
                f"over the artifact budget of {self.max_bytes} bytes",
            )
        self.used += nbytes

    def over(self, size: int) -> bool:
        """Whether a running size estimate (``PAGED``: the builder's) has passed the limit."""
        return size > self.limit


def output_budget(request: ExtractRequest, kind: BudgetKind) -> OutputBudget:
    """``OutputBudget.for_request``: the frame's budget where a module holds the request, not the context."""
    return OutputBudget.for_request(request, kind)
