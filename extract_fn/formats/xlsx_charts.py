"""The charts of a workbook's sheets (worksheets and chartsheets), read by ``ooxml_chart`` like docx's and pptx's.

A sheet's charts are the chart parts its drawing part (the sheet's ``drawing`` relationship) anchors, in the
drawing's order. Each becomes a ``paragraph`` block after the sheet's rows, with ``locator.sheet``, the sheet name as
section path, ``attrs.chart`` and ``attrs.table`` (``ooxml_chart``). A chart whose part is missing or holds no cached
values is a failed unit ``sheet 'Name' chart N``; a chart past the output budget is one too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

from extract_fn.formats.ooxml_chart import ChartCache, ChartUnreadable
from extract_fn.formats.ooxml_drawing import r_attr
from extract_fn.formats.ooxml_text import local
from extract_fn.formats.output_budget import OutputBudget
from extract_fn.formats.textblocks import OUTPUT_LIMIT_REASON
from shared.artifact_builder import ArtifactBuilder, make_locator

BLOCK_OVERHEAD = OutputBudget.BLOCK_OVERHEAD  # id, type, locator and keys of a block

Rels = Callable[[str], dict[str, tuple[str, str]]]


def _chart_parts(part: str, rels: Rels, parse: Callable[[str], Any], has: Callable[[str], bool]) -> list[str | None]:
    """The chart parts (None where a chart's relationship or part is missing) a sheet's drawings anchor, in order."""
    out: list[str | None] = []
    for rtype, drawing in rels(part).values():
        if not rtype.endswith("/drawing") or not has(drawing):
            continue
        drawing_rels = rels(drawing)
        for el in parse(drawing).iter():
            if local(el.tag) != "chart":
                continue
            target = drawing_rels.get(r_attr(el, "id") or "")
            out.append(target[1] if target is not None and has(target[1]) else None)
    return out


def add_sheet_charts(
    builder: ArtifactBuilder,
    budget: OutputBudget,
    *,
    sheet: str,
    part: str | None,
    io: tuple[Rels, Callable[[str], Any], Callable[[str], bool]],
    charts: ChartCache,
) -> None:
    """Blocks (or failed units) for the charts of one sheet; ``io`` is the package's (rels, parse, has), ``charts``
    the workbook's chart cache."""
    rels, parse, has = io
    if part is None or not has(part):
        return
    for n, target in enumerate(_chart_parts(part, rels, parse, has), start=1):
        unit = f"sheet {sheet!r} chart {n}"
        if target is None:
            builder.fail(unit, "the chart's part is missing from the package")
            continue
        try:
            chart = charts.read(target, parse)
        except ChartUnreadable as exc:
            builder.fail(unit, str(exc))
            continue
        text, attrs = chart.text(), chart.attrs()
        size = len(orjson.dumps((text, sheet, attrs))) + BLOCK_OVERHEAD
        if not budget.take_bytes(size):  # exhausted from now on: the rest are cut in reading order
            builder.fail(unit, OUTPUT_LIMIT_REASON)
            continue
        builder.add_block("paragraph", text, section_path=[sheet], attrs=attrs, locator=make_locator(sheet=sheet))
