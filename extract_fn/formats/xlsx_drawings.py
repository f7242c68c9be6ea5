"""What a sheet's drawing part (its ``drawing`` relationship; a chartsheet's too) shows over the cells: charts, text
boxes and shapes with text, pictures, SmartArt, each read in the drawing's order (its z-order).

* Charts: ``xlsx_charts`` (a block with ``attrs.chart``/``attrs.table``, or a failed unit ``sheet 'Name' chart N``).
* A shape with text (``xdr:sp`` with ``xdr:txBody``: a text box, a labelled shape, a form control's caption): a
  ``paragraph`` block of its paragraphs, one a line, ``attrs.textbox`` true.
* A picture (``xdr:pic``): a ``paragraph`` block with empty text and ``attrs.image`` (``alt``: its ``descr``, else its
  ``title``; ``name``), as docx and pptx; its pixels are read by OCR (``extract_fn.ocr.pictures``, blocks with
  ``attrs.ocr`` right after it), else counted: ``coverage.lost`` ``image_text`` and a warning. Ink
  (``xdr:contentPart``) is counted so too.
* The sheet's background picture (``<picture>``, tiled behind the cells on screen): a picture block with
  ``attrs.background``, before the drawing's objects.
* SmartArt: a block of its data part's texts (``attrs.diagram``), as docx and pptx.
* Any other graphic frame (a slicer, a timeline: ``a:graphicData`` of another kind) is a failed unit
  ``sheet 'Name' drawing N``: it shows something this service does not read.

Text boxes, pictures and diagrams carry ``locator.sheet`` and, for an anchor with a ``from`` cell, that cell's row as
``row_start``/``row_end`` (charts carry the sheet only, as before). Hidden objects (``cNvPr hidden``) are not drawn and
not read. Of an ``mc:AlternateContent``, the first ``mc:Choice`` is read (what Excel 365 draws), its fallback not
("This shape represents a slicer...").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from extract_fn.formats.ooxml_chart import ChartCache
from extract_fn.formats.ooxml_drawing import alt_text, diagram_texts, find_local, graphic_kind, r_attr, report_pictures
from extract_fn.formats.ooxml_text import local, uint_attr
from extract_fn.formats.output_budget import OutputBudget
from extract_fn.formats.safe_xml import DtdRefused
from extract_fn.formats.textblocks import OUTPUT_LIMIT_REASON
from extract_fn.formats.xlsx_charts import add_chart
from extract_fn.limits import Limits
from shared.artifact_builder import ArtifactBuilder, make_locator
from shared.contract import ErrorCode, ExtractionError

if TYPE_CHECKING:
    import zipfile

    from extract_fn.ocr.pictures import PictureReader

Rels = Callable[[str], dict[str, tuple[str, str]]]
_ANCHORS: Final = frozenset({"twoCellAnchor", "oneCellAnchor", "absoluteAnchor"})
_TRUE: Final = frozenset({"1", "true"})


@dataclass
class Book:
    """The workbook's parts as the sheet readers need them, and what they share across sheets: the chart cache, the
    picture OCR (made at the first picture) and the count of pictures whose pixels were not read."""

    zf: zipfile.ZipFile
    members: dict[str, str]  # part name -> the zip's own name
    rels: Rels
    parse: Callable[[str], Any]
    limits: Limits
    charts: ChartCache = field(default_factory=ChartCache)
    ocr: PictureReader | None = None
    unread_pictures: int = 0

    def has(self, part: str) -> bool:
        return part in self.members

    def optional(self, builder: ArtifactBuilder, part: str, unit: str) -> Any:
        """A part's root, or None with a failed unit ``unit`` when it is not well-formed XML (the rest of the sheet
        is read; a part with a DTD still refuses the file)."""
        try:
            return self.parse(part)
        except DtdRefused:
            raise
        except ExtractionError as exc:
            if exc.code == ErrorCode.RESOURCE_LIMIT:
                raise
            builder.fail(unit, exc.message[:300])
            return None

    def picture(
        self,
        builder: ArtifactBuilder,
        budget: OutputBudget,
        *,
        sheet: str,
        locator: dict[str, Any],
        attrs: dict[str, Any],
        part: str | None,
    ) -> bool:
        """A picture's block (empty text, ``attrs``), then its OCR blocks; False when the output budget is spent. A
        picture whose pixels are not read (no part, OCR off or refused, no raster) is counted."""
        if not add_text(builder, budget, "", sheet=sheet, attrs=attrs, locator=locator):
            return False
        if self.ocr is None:
            from extract_fn.ocr.pictures import PictureReader

            self.ocr = PictureReader(self.zf, self.limits)
        ocr_blocks, read = self.ocr.picture(self.members.get(part) if part else None)
        if not read:
            self.unread_pictures += 1
        for b in ocr_blocks:
            if not add_text(builder, budget, b.text, sheet=sheet, attrs={**attrs, **b.attrs}, locator=locator):
                return False
        return True

    def finish(self, builder: ArtifactBuilder) -> None:
        """``image_text`` lost and a warning for the pictures not read; the OCR's own warnings."""
        report_pictures(builder, self.unread_pictures)
        if self.ocr is not None:
            self.ocr.finish(builder)


def add_text(
    builder: ArtifactBuilder,
    budget: OutputBudget,
    text: str,
    *,
    sheet: str,
    attrs: dict[str, Any],
    locator: dict[str, Any],
) -> bool:
    """One ``paragraph`` block of a sheet (section path: the sheet), if it fits the output budget."""
    if not budget.take(text, [sheet], (), attrs):
        return False
    builder.add_block("paragraph", text, section_path=[sheet], attrs=attrs, locator=locator)
    return True


def shape_text(sp: Any) -> str:
    """A shape's text (``xdr:txBody``): its paragraphs, one a line (``a:br`` a line break), blank ones left out."""
    body = next((c for c in sp if local(c.tag) == "txBody"), None)
    if body is None:
        return ""
    lines: list[str] = []
    for p in body:
        if local(p.tag) != "p":
            continue
        parts: list[str] = []
        for el in p.iter():
            name = local(el.tag)
            if name == "t":
                parts.append(el.text or "")
            elif name == "br":
                parts.append("\n")
        line = "".join(parts).strip()
        if line:
            lines.append(line)
    return "\n".join(lines)


def _nv_props(obj: Any) -> Any:
    """An object's ``cNvPr`` (in its ``nvSpPr``/``nvPicPr``/``nvGraphicFramePr``/``nvGrpSpPr``), or None."""
    for c in obj:
        if local(c.tag).startswith("nv"):
            return next((p for p in c if local(p.tag) == "cNvPr"), None)
    return None


def _hidden(obj: Any) -> bool:
    props = _nv_props(obj)
    return props is not None and (props.get("hidden") or "").lower() in _TRUE


def _objects(el: Any, row: int | None) -> Iterator[tuple[Any, int | None]]:
    """The drawing's objects (shapes, pictures, graphic frames, ink), groups opened, each with its anchor's row
    (1-based; None for an absolute anchor), in the drawing's order."""
    for c in el:
        name = local(c.tag)
        if name == "AlternateContent":
            branch = next((b for b in c if local(b.tag) == "Choice"), None)
            if branch is None:
                branch = next((b for b in c if local(b.tag) == "Fallback"), None)
            if branch is not None:
                yield from _objects(branch, row)
        elif name in _ANCHORS:
            start = next((f for f in c if local(f.tag) == "from"), None)
            cell_row = next((r for r in start if local(r.tag) == "row"), None) if start is not None else None
            n = uint_attr((cell_row.text or "").strip()) if cell_row is not None else None
            yield from _objects(c, n + 1 if n is not None and n < 1_048_576 else None)
        elif name == "grpSp":
            if not _hidden(c):
                yield from _objects(c, row)
        elif name in ("sp", "pic", "graphicFrame", "contentPart") and not _hidden(c):
            yield c, row


@dataclass
class _Cut:
    """A sheet's objects of one kind left out at the output budget: one failed unit for them all."""

    counts: dict[str, int] = field(default_factory=dict)

    def add(self, what: str) -> None:
        self.counts[what] = self.counts.get(what, 0) + 1

    def report(self, builder: ArtifactBuilder, sheet: str) -> None:
        for what, n in self.counts.items():
            builder.fail(f"sheet {sheet!r} {what}", f"{n} {OUTPUT_LIMIT_REASON}")


def add_background(
    builder: ArtifactBuilder, budget: OutputBudget, book: Book, *, sheet: str, sheet_rels: dict[str, tuple[str, str]]
) -> None:
    """The sheet's background picture (``<picture r:id>``, the sheet's one ``image`` relationship: Excel tiles it
    behind the cells on screen): a picture block with ``attrs.background``, as pptx marks a slide's."""
    for rtype, target in sheet_rels.values():
        if rtype.endswith("/image") and book.has(target):
            attrs = {"image": {"alt": ""}, "background": True}
            locator = make_locator(sheet=sheet)
            if not book.picture(builder, budget, sheet=sheet, locator=locator, attrs=attrs, part=target):
                builder.fail(f"sheet {sheet!r} background picture", OUTPUT_LIMIT_REASON)
            return


def add_sheet_drawings(
    builder: ArtifactBuilder,
    budget: OutputBudget,
    book: Book,
    *,
    sheet: str,
    sheet_rels: dict[str, tuple[str, str]],
) -> None:
    """Blocks (or failed units) for what the sheet's drawing parts show, in order (see the module's docstring)."""
    charts = others = 0
    cut = _Cut()
    for rtype, drawing in sheet_rels.values():
        if not rtype.endswith("/drawing") or not book.has(drawing):
            continue
        root = book.optional(builder, drawing, f"sheet {sheet!r} drawing part")
        if root is None:
            continue
        drawing_rels = book.rels(drawing)
        for obj, row in _objects(root, None):
            kind = local(obj.tag)
            locator = make_locator(sheet=sheet, row_start=row, row_end=row) if row else make_locator(sheet=sheet)
            if kind == "sp":
                text = shape_text(obj)
                if text and not add_text(builder, budget, text, sheet=sheet, attrs={"textbox": True}, locator=locator):
                    cut.add("text boxes")
            elif kind == "pic":
                props = _nv_props(obj)
                image: dict[str, Any] = {"alt": alt_text(props)}
                if props is not None and props.get("name"):
                    image["name"] = " ".join(str(props.get("name")).split())
                blip = find_local(obj, "blip")
                target = drawing_rels.get((r_attr(blip, "embed") if blip is not None else None) or "")
                part = target[1] if target is not None and book.has(target[1]) else None
                if not book.picture(builder, budget, sheet=sheet, locator=locator, attrs={"image": image}, part=part):
                    cut.add("pictures")
            elif kind == "contentPart":
                book.unread_pictures += 1  # ink: drawn strokes, no text to read here
            else:
                data = find_local(obj, "graphicData")
                chart = find_local(data, "chart") if data is not None else None
                if chart is not None:
                    charts += 1
                    target = drawing_rels.get(r_attr(chart, "id") or "")
                    add_chart(
                        builder,
                        budget,
                        sheet=sheet,
                        unit=f"sheet {sheet!r} chart {charts}",
                        part=target[1] if target is not None and book.has(target[1]) else None,
                        charts=book.charts,
                        parse=book.parse,
                    )
                    continue
                if data is None:
                    continue
                others += 1
                _other_frame(builder, budget, book, data, drawing_rels, sheet=sheet, n=others, locator=locator)
    cut.report(builder, sheet)


def _other_frame(
    builder: ArtifactBuilder,
    budget: OutputBudget,
    book: Book,
    data: Any,
    drawing_rels: dict[str, tuple[str, str]],
    *,
    sheet: str,
    n: int,
    locator: dict[str, Any],
) -> None:
    """A graphic frame that holds no chart: SmartArt is read; anything else is a failed unit."""
    kind = graphic_kind(data)
    unit = f"sheet {sheet!r} drawing {n}"
    if kind != "diagram":
        builder.fail(unit, f"a drawing object of kind {kind[:60]!r} (a slicer, a timeline, ...) is not read")
        return
    ids = find_local(data, "relIds")
    target = drawing_rels.get((r_attr(ids, "dm") if ids is not None else None) or "")
    if target is None or not book.has(target[1]):
        builder.fail(unit, "the SmartArt diagram's data part is missing from the package")
        return
    root = book.optional(builder, target[1], unit)
    if root is None:
        return
    text = "\n".join(diagram_texts(root))
    if text and not add_text(builder, budget, text, sheet=sheet, attrs={"diagram": True}, locator=locator):
        builder.fail(unit, OUTPUT_LIMIT_REASON)
