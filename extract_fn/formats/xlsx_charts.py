"""The charts of a workbook's sheets (worksheets and chartsheets), read by ``ooxml_chart`` like docx's and pptx's.

A sheet's charts are the chart parts its drawing part (the sheet's ``drawing`` relationship) anchors, in the
drawing's order (``xlsx_drawings`` walks the drawing and calls ``add_chart`` for each). Each becomes a ``paragraph``
block after the sheet's rows, with ``locator.sheet``, the sheet name as section path, ``attrs.chart`` and
``attrs.table`` (``ooxml_chart``). A chart whose part is missing or holds no cached values is a failed unit
``sheet 'Name' chart N``; a chart past the output budget is one too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from extract_fn.formats.ooxml_chart import ChartCache, ChartUnreadable
from extract_fn.formats.output_budget import OutputBudget
from extract_fn.formats.textblocks import OUTPUT_LIMIT_REASON
from shared.artifact_builder import ArtifactBuilder, make_locator

BLOCK_OVERHEAD = OutputBudget.BLOCK_OVERHEAD  # id, type, locator and keys of a block


def add_chart(
    builder: ArtifactBuilder,
    budget: OutputBudget,
    *,
    sheet: str,
    unit: str,
    part: str | None,
    charts: ChartCache,
    parse: Callable[[str], Any],
) -> None:
    """The block (or failed unit ``unit``) of one chart of a sheet; ``part``: its chart part (None when the
    relationship or the part is missing), ``charts`` the workbook's chart cache (each part read once)."""
    if part is None:
        builder.fail(unit, "the chart's part is missing from the package")
        return
    try:
        chart = charts.read(part, parse)
    except ChartUnreadable as exc:
        builder.fail(unit, str(exc))
        return
    text, attrs = chart.text(), chart.attrs()
    size = len(orjson.dumps((text, sheet, attrs))) + BLOCK_OVERHEAD
    if not budget.take_bytes(size):  # exhausted from now on: the rest are cut in reading order
        builder.fail(unit, OUTPUT_LIMIT_REASON)
        return
    builder.add_block("paragraph", text, section_path=[sheet], attrs=attrs, locator=make_locator(sheet=sheet))
