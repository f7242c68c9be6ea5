"""PPTX: one lxml pass over the deck's slides (coverage unit "slides").

Slides are read in the order of ``p:sldIdLst``; slide N's blocks have ``page_start = page_end = N``.

- The title placeholder (``title`` / ``ctrTitle``) is a ``heading`` of depth 1, first on its slide. Every other
  block of a titled slide has ``section_path = [title]`` and the heading as parent. An untitled slide gets no
  invented heading: its blocks have an empty section path (the page locator still places them).
- Then what the slide shows behind its own shapes: its background picture (``p:bg/p:bgPr/a:blipFill``, its own, else
  its layout's, else its master's; ``attrs.background``), the master's shapes, then the layout's (z-order) that are
  no placeholder (text boxes, pictures, charts: a layout's or master's placeholders are drawn only where a slide
  fills them), each with ``attrs.master``/``attrs.layout`` = true, on every slide that shows them (not when the
  slide sets ``showMasterSp="0"``; the master's not when the layout does). Each layout and master is read once;
  a slide-number field in one shows each slide's number; their OCR blocks and failed shapes (``slide N master
  shape M``) come with the first slide that shows them, and their pictures count once.
- Then the shape tree in document order (z-order: the order the author added shapes, which is also the order
  PowerPoint's reading-order pane and screen readers use): each text frame (placeholder, text box, auto shape)
  is one ``paragraph`` block with its paragraphs joined by newlines; group shapes are read through, to any depth,
  iteratively; a shape or group hidden in the Selection Pane (``p:cNvPr hidden="1"``) is not drawn and not read;
  equations (``a14:m``, OMML) are linear text (``ooxml_math``) where they sit in their paragraph; a slide-number
  field (``a:fld type="slidenum"``) is the slide's number as PowerPoint shows it (its position in ``p:sldIdLst``
  from ``firstSlideNum``, 1 by default), other fields (dates) their saved text; a table (``a:tbl``) is a
  ``paragraph`` block with ``attrs.table = {"columns": first row, "rows":
  the others}`` (a cell merged into its neighbour — ``hMerge``/``vMerge`` — is ``null``); a chart is one
  ``paragraph`` block (``ooxml_chart``: title, axis titles, series and categories as text, ``attrs.chart`` its type,
  ``attrs.table`` its cached values); a SmartArt diagram is its data part's text (``attrs.diagram = true``); a
  picture (or ink), and a shape filled with a picture (``p:spPr/a:blipFill``, before its text), is a block with
  empty text and ``attrs.image`` = ``{"alt": alt text, "name"}``, read by OCR (blocks with ``attrs.ocr`` after it),
  and pictures whose pixels are not read make ``coverage.lost`` ``image_text``; a shape of a kind not listed gives
  the text of every text body in it.
- Last, the speaker notes (the notes slide's body placeholder) as a ``paragraph`` block with ``attrs.notes = true``,
  then each text box on the notes page (a shape that is no placeholder) as one more such block.
- A hidden slide (``show="0"``) is extracted like the others; its blocks carry ``attrs.hidden = true``.

A slide part that is missing or not well-formed is a failed unit ``slide N``; a shape whose content cannot be read
(a chart whose part is missing or holds no cached values, a SmartArt whose data part is missing, an embedded object
or Office 2016 chart, a shape nested past the depth limit) is a failed unit ``slide N shape M``
(M = the shape's position in the slide's tree, 1-based, depth-first) and the slide still counts as extracted.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from lxml import etree

from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.frame import FormatContext, format_module
from extract_fn.formats.ooxml_drawing import (
    alt_text,
    diagram_texts,
    find_local,
    graphic_kind,
    r_attr,
    report_pictures,
)
from extract_fn.formats.ooxml_math import linear_text
from extract_fn.formats.ooxml_text import MC_NS, child, local, main_part, parse_part, read_rels, uint_attr
from extract_fn.formats.output_budget import BudgetKind, output_budget
from extract_fn.formats.pptx_numbering import NO_INHERITED, AutoNumbers, InheritedBullets
from extract_fn.formats.safe_xml import DtdRefused
from extract_fn.formats.zipsafe import has_member, with_package
from extract_fn.limits import Limits
from shared.artifact_builder import ArtifactBuilder, make_locator
from shared.contract import ErrorCode, ExtractionError

if TYPE_CHECKING:
    from extract_fn.formats.ooxml_chart import ChartCache
    from extract_fn.ocr.pictures import PictureReader

KIND = "pptx"
PARSER = "loom-pptx"
PARSER_VERSION = "1+lxml-" + ".".join(str(v) for v in etree.LXML_VERSION[:3])
UNIT = "slides"
CUT_REASON = "not extracted: the artifact reached its output size limit"

A_NAMESPACES = (
    "http://schemas.openxmlformats.org/drawingml/2006/main",
    "http://purl.oclc.org/ooxml/drawingml/main",
)
P_NAMESPACES = (
    "http://schemas.openxmlformats.org/presentationml/2006/main",
    "http://purl.oclc.org/ooxml/presentationml/main",
)
R_IDS = (
    "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id",
    "{http://purl.oclc.org/ooxml/officeDocument/relationships}id",
)


def _tags(name: str, spaces: tuple[str, ...]) -> frozenset[str]:
    return frozenset(f"{{{ns}}}{name}" for ns in spaces)


T_A_P = _tags("p", A_NAMESPACES)
T_A_T = _tags("t", A_NAMESPACES)
T_A_BR = _tags("br", A_NAMESPACES)
T_A_FLD = _tags("fld", A_NAMESPACES)
T_TXBODY = _tags("txBody", P_NAMESPACES) | _tags("txBody", A_NAMESPACES)
T_TBL = _tags("tbl", A_NAMESPACES)
T_TR = _tags("tr", A_NAMESPACES)
T_TC = _tags("tc", A_NAMESPACES)
T_SPPR = _tags("spPr", P_NAMESPACES)
T_BGPR = _tags("bgPr", P_NAMESPACES)
T_BG = _tags("bg", P_NAMESPACES)
T_BLIPFILL = _tags("blipFill", A_NAMESPACES)
T_MC_ALT = frozenset({f"{{{MC_NS}}}AlternateContent"})


def _rid(el: Any) -> str | None:
    for key in R_IDS:
        v = el.get(key)
        if v:
            return v
    return None


_child = child


def _emu(el: Any, name: str) -> int | None:
    """An EMU length attribute (``cx``, ``cy``), None when absent or not a number."""
    return uint_attr(el.get(name)) if el is not None else None


def _first(el: Any, tags: frozenset[str]) -> Any:
    """The first child of ``el`` with one of ``tags``, or None: ``next(el.iterchildren(*tags), None)`` without the
    tag matcher lxml builds per call (for a shape's or a cell's few children, more than visiting them costs)."""
    for c in el:
        if c.tag in tags:
            return c
    return None


def _find(el: Any, *path: str) -> Any:
    cur = el
    for name in path:
        if cur is None:
            return None
        cur = _child(cur, name)
    return cur


# What ``_paragraphs`` does with an element of a paragraph, by its tag (decided once per tag: a deck uses a few dozen)
_TEXT, _BREAK, _PPR, _OTHER, _FIELD, _MATH = range(6)
A14_NS = "http://schemas.microsoft.com/office/drawing/2010/main"
_PARA_KINDS: dict[Any, int] = (
    dict.fromkeys(T_A_T, _TEXT)
    | dict.fromkeys(T_A_BR, _BREAK)
    | dict.fromkeys(T_A_FLD, _FIELD)
    | {f"{{{A14_NS}}}m": _MATH}
)
_MAX_PARA_KINDS = 4096  # past this many distinct tags (a hostile part), kinds are computed, not remembered


def _para_kind(tag: Any) -> int:
    kind = _PPR if local(tag) == "pPr" else _OTHER
    if len(_PARA_KINDS) < _MAX_PARA_KINDS:
        _PARA_KINDS[tag] = kind
    return kind


def _math(m: Any) -> str:
    """An ``a14:m`` equation (its ``m:oMathPara``/``m:oMath``) as linear text (``ooxml_math``, as docx reads it)."""
    return " ".join(t for t in (linear_text(c) for c in m if isinstance(c.tag, str)) if t)


def _paragraph(p: Any, slide_no: str = "") -> tuple[str, Any]:
    """(text, its ``a:pPr`` or None) of an ``a:p``: its ``a:t`` text, ``a:br`` line breaks and equations
    (``a14:m``, linear text) in document order, in one pass over its elements (no tag matcher built per paragraph).
    A slide-number field (``a:fld type="slidenum"``) is ``slide_no``, the number the slide shows, when it is given,
    else its saved text."""
    parts: list[str] = []
    ppr = None
    skip = None  # the slide-number field whose saved text is replaced
    kinds = _PARA_KINDS
    for el in p.iter():
        tag = el.tag
        kind = kinds.get(tag)
        if kind is None:
            kind = _para_kind(tag)
        if kind == _OTHER:  # most of a paragraph's elements (runs, run properties): one test
            continue
        if kind == _TEXT:
            if skip is None or el.getparent() is not skip:
                parts.append(el.text or "")
        elif kind == _BREAK:
            parts.append("\n")
        elif kind == _FIELD:
            if slide_no and el.get("type") == "slidenum":
                parts.append(slide_no)
                skip = el
        elif kind == _MATH:
            parts.append(_math(el))
        elif kind == _PPR and ppr is None and el.getparent() is p:  # its own: the first child named pPr
            ppr = el
    return "".join(parts).replace("\x00", "").replace("\x0b", "\n").strip(), ppr


def _paragraphs(txbody: Any, styles: InheritedBullets = NO_INHERITED, slide_no: str = "") -> list[str]:
    """The paragraphs of a text body, each led by its automatic number when it has one (``a:buAutoNum``, its own
    or inherited from ``styles``, the list styles above its own ``a:lstStyle``, nearest first)."""
    out: list[str] = []
    own = None
    paras = []
    for c in txbody:  # one pass: its own list style (the first), its paragraphs
        tag = c.tag
        if tag in T_A_P:
            paras.append(c)
        elif own is None and local(tag) == "lstStyle":
            own = c
    numbers = AutoNumbers([own] if own is not None else [], styles)
    for p in paras:
        text, ppr = _paragraph(p, slide_no)
        label = numbers.label(ppr) if text else ""
        out.append(f"{label} {text}" if label else text)
    return out


def _text_frame(shape: Any, styles: InheritedBullets = NO_INHERITED, slide_no: str = "") -> str:
    body = _first(shape, T_TXBODY)
    if body is None:
        return ""
    return "\n".join(p for p in _paragraphs(body, styles, slide_no) if p)


def _ph(shape: Any) -> Any:
    nv = next((c for c in shape if local(c.tag).startswith("nv")), None)
    return _find(nv, "nvPr", "ph") if nv is not None else None


def _matching(root: Any, ph: Any, by_idx: bool) -> Any:
    """The placeholder shape of a layout or master matching ``ph``: by ``idx`` (layouts), else by type."""
    tree = _find(root, "cSld", "spTree") if root is not None else None
    kind = ph.get("type") or "body"
    found = None
    for el in tree.iter() if tree is not None else ():
        other = _ph(el) if local(el.tag) == "sp" else None
        if other is None:
            continue
        if by_idx and ph.get("idx") is not None and other.get("idx") == ph.get("idx"):
            return el
        if found is None and (other.get("type") or "body") == kind:
            found = el
    return found


def _list_style(shape: Any) -> Any:
    body = _first(shape, T_TXBODY) if shape is not None else None
    return _child(body, "lstStyle") if body is not None else None


_MASTER_STYLE = {"title": "titleStyle", "ctrTitle": "titleStyle", "dt": "otherStyle", "ftr": "otherStyle",
                 "sldNum": "otherStyle", "hdr": "otherStyle"}  # fmt: skip


def _placeholder(shape: Any) -> str | None:
    """The placeholder type of a shape ('body' for a typeless one), or None."""
    ph = _ph(shape)
    return None if ph is None else ph.get("type") or "body"


def _table(tbl: Any, slide_no: str = "") -> list[list[str | None]]:
    rows: list[list[str | None]] = []
    for tr in tbl:
        if tr.tag not in T_TR:
            continue
        row: list[str | None] = []
        for tc in tr:
            if tc.tag not in T_TC:
                continue
            if tc.get("hMerge") in ("1", "true") or tc.get("vMerge") in ("1", "true"):
                row.append(None)
                continue
            body = _first(tc, T_TXBODY)
            row.append("\n".join(p for p in _paragraphs(body, slide_no=slide_no) if p) if body is not None else "")
        rows.append(row)
    width = max((len(r) for r in rows), default=0)
    for r in rows:
        r.extend([None] * (width - len(r)))
    return rows


def _table_text(rows: list[list[str | None]]) -> str:
    return "\n".join(" | ".join((c or "").replace("\n", " ") for c in r) for r in rows)


def _picture_attrs(pic: Any) -> dict[str, Any]:
    """A picture's block attrs: ``image`` with its alt text (``alt``) and name; its pixels are not read here. A
    ``p:pic``'s or (a shape filled with a picture) a ``p:sp``'s."""
    nv = next((c for c in pic if local(c.tag).startswith("nv")), None)
    nv = _child(nv, "cNvPr") if nv is not None else None
    image: dict[str, Any] = {"alt": alt_text(nv)}
    if nv is not None and nv.get("name"):
        image["name"] = nv.get("name")
    return {"image": image}


def _blip_fill(el: Any, props: frozenset[str]) -> Any:
    """The ``a:blip`` of a picture fill (``a:blipFill``) in ``el``'s ``props`` child (a shape's ``p:spPr``, a
    background's ``p:bgPr``), or None (tags compared as sets: this runs for every shape)."""
    pr = _first(el, props)
    fill = _first(pr, T_BLIPFILL) if pr is not None else None
    return _child(fill, "blip") if fill is not None else None


def _shows(root: Any) -> bool:
    """Whether a slide or layout shows the shapes of the parts above it (``showMasterSp``, true by default)."""
    return root is None or root.get("showMasterSp") not in ("0", "false")


_Item = tuple[int, str, str, dict[str, Any]]  # (shape number, kind, text, attrs)


class _Layer:
    """What a layout or master draws on each slide that shows it: its shapes that are no placeholder, read once."""

    def __init__(self, items: list[_Item], failures: list[tuple[int, str]], dynamic: dict[int, Any]) -> None:
        self.items = items
        self.failures = failures
        self.dynamic = dynamic  # item index -> its shape, which holds a slide-number field (read for each slide)
        self.shown = False  # shown on a slide before: its failures are reported and its OCR blocks placed once


class _Deck:
    def __init__(self, zf: zipfile.ZipFile, builder: ArtifactBuilder, limits: Limits) -> None:
        self.zf = zf
        self.builder = builder
        self.limits = limits
        self.pictures = 0  # pictures placed whose pixels were not read (OCR off or refused, ink, not a raster)
        self.ocr: PictureReader | None = None  # OCR of picture shapes, made at the first one (imports Pillow)
        self.charts: ChartCache | None = None  # made at the first chart (the chart stack is imported then)
        self.parts: dict[str, Any] = {}  # layouts and masters, each parsed once
        self.layout: Any = None  # the slide being read's layout and master roots
        self.master: Any = None
        self.slide_no = ""  # the number the slide being read shows (its slide-number fields)
        self.authors: dict[str, str] | None = None  # comment author id -> name, read on the first comment
        self.comment_parts: dict[str, list[tuple[str, str | None]]] = {}  # comments part -> its comments
        self.masters_of: dict[tuple[str, str], str | None] = {}  # (layout part, relationship type) -> its target
        # (layout, master, placeholder idx, type) -> the list styles it inherits: a deck's slides share a few layouts
        self.inherited: dict[tuple[int, int, str | None, str], InheritedBullets] = {}
        self.layers: dict[str, _Layer] = {}  # layout or master part -> what it draws on slides, read once
        # (layout part, master part) -> the background picture layer slides without their own background show
        self.backgrounds: dict[tuple[str | None, str | None], tuple[str, str] | None] = {}
        # (layout, master, inherits the background, shows their shapes) -> the items every such slide shows
        self.steady: dict[tuple[str | None, str | None, bool, bool], list[_Item]] = {}
        self.template_rels: dict[str, dict[str, tuple[str, str]]] = {}  # layout or master part -> its relationships

    def template(
        self, part: str, rtype: str, rels: list[tuple[str, str, str]] | None = None
    ) -> tuple[str, Any] | tuple[None, None]:
        """The part ``part`` relates to by ``rtype`` (a slide's layout, a layout's master), parsed once; ``rels``:
        the relationships of ``part`` when the caller has read them (a slide's)."""
        if rels is not None:
            target = next((t for _rid, kind, t in rels if kind == rtype), None)
        else:  # a layout's master: the same few layouts for every slide
            key = (part, rtype)
            if key not in self.masters_of:
                self.masters_of[key] = next((t for kind, t in self.rels_of(part).values() if kind == rtype), None)
            target = self.masters_of[key]
        if target is None or not has_member(self.zf, target):
            return None, None
        if target not in self.parts:
            try:
                self.parts[target] = parse_part(self.zf, target, KIND)
            except DtdRefused:
                raise
            except ExtractionError as exc:  # a broken layout or master only loses what it would number
                if exc.code == ErrorCode.RESOURCE_LIMIT:
                    raise
                self.parts[target] = None
        return target, self.parts[target]

    def rels_of(self, part: str) -> dict[str, tuple[str, str]]:
        """A layout's or master's relationships (id -> (type, target)), read once."""
        if part not in self.template_rels:
            try:
                rows = read_rels(self.zf, part, KIND)
            except DtdRefused:
                raise
            except ExtractionError as exc:  # a broken layout's relationships lose what they point at
                if exc.code == ErrorCode.RESOURCE_LIMIT:
                    raise
                rows = []
            self.template_rels[part] = {rid: (rtype, target) for rid, rtype, target in rows}
        return self.template_rels[part]

    def placeholder_styles(self, ph: Any) -> InheritedBullets:
        """The list styles a placeholder (its ``p:ph``) inherits from its layout and master (``pptx_numbering``)."""
        key = (id(self.layout), id(self.master), ph.get("idx"), ph.get("type") or "body")
        if key not in self.inherited:
            self.inherited[key] = InheritedBullets(self._inherited_styles(ph))
        return self.inherited[key]

    def _inherited_styles(self, ph: Any) -> list[Any]:
        styles = [_list_style(_matching(self.layout, ph, True)), _list_style(_matching(self.master, ph, False))]
        tx = _find(self.master, "txStyles") if self.master is not None else None
        styles.append(_child(tx, _MASTER_STYLE.get(ph.get("type") or "body", "bodyStyle")) if tx is not None else None)
        return [s for s in styles if s is not None]

    def slide(self, number: int, part: str, hidden_hint: bool, slide_no: str = "") -> None:
        b = self.builder
        root = parse_part(self.zf, part, KIND)
        hidden = hidden_hint or root.get("show") in ("0", "false")
        self.slide_no = slide_no or str(number)
        slide_rels = read_rels(self.zf, part, KIND)
        rels = {rid: (rtype, target) for rid, rtype, target in slide_rels}
        layout_part, self.layout = self.template(part, "slideLayout", slide_rels)
        master_part, self.master = (
            self.template(layout_part, "slideMaster") if layout_part is not None else (None, None)
        )
        csld = _child(root, "cSld")
        tree = _child(csld, "spTree") if csld is not None else None
        loc = make_locator(page_start=number, page_end=number)
        base_attrs: dict[str, Any] = {"hidden": True} if hidden else {}
        bg = _first(csld, T_BG) if csld is not None else None
        # what it shows behind its own shapes: its background picture, the master's shapes, the layout's
        behind, failures = self.behind(layout_part, master_part, bg is None, _shows(root))
        items = self.background(bg, rels) if bg is not None else []
        items.extend(behind)
        title: str | None = None
        if tree is not None:
            own, own_failures, title, _dynamic = self.walk(tree, rels, False)
            items.extend(own)
            failures.extend(("", n, reason) for n, reason in own_failures)
        heading_id = None
        path: list[str] = []
        if title is not None:
            heading_text = " ".join(title.split("\n"))
            heading_id = b.add_block(
                "heading", heading_text, depth=1, section_path=[heading_text], locator=loc, attrs=dict(base_attrs)
            )
            path = [heading_text]
        texts = [(text, {**base_attrs, **attrs}) for _n, _kind, text, attrs in items]
        texts.extend((notes, {**base_attrs, "notes": True}) for notes in self.notes(rels))
        texts.extend(
            (text, {**base_attrs, "part": "comment", **({"author": author} if author else {})})
            for text, author in self.comments(rels)
        )
        first = len(b.blocks)  # the ids add_block would give them
        b.add_blocks(
            [
                (f"b{first + i}", "paragraph", text, heading_id, path, loc, [], attrs or None)
                for i, (text, attrs) in enumerate(texts)
            ]
        )
        for whose, n, reason in failures:
            b.fail(f"slide {number} {whose}shape {n}", reason)

    def walk(
        self, tree: Any, rels: dict[str, tuple[str, str]], template: bool
    ) -> tuple[list[_Item], list[tuple[int, str]], str | None, dict[int, Any]]:
        """The items of a shape tree in z-order, its failed shapes, its title, and (``template``: a layout's or
        master's tree, whose placeholders are not drawn on slides) the items that hold a slide-number field."""
        items: list[_Item] = []
        failures: list[tuple[int, str]] = []
        dynamic: dict[int, Any] = {}
        title: str | None = None
        for n, shape, depth in _shapes(tree):
            if depth > self.limits.pptx_max_group_depth:
                failures.append((n, f"shape nested more than {self.limits.pptx_max_group_depth} groups deep"))
                continue
            if template and _ph(shape) is not None:
                continue
            try:
                kind, text, attrs = self.shape(shape, rels)
            except DtdRefused:
                raise
            except ExtractionError as exc:
                failures.append((n, exc.message))
                continue
            name = local(shape.tag)
            if kind == "text" and name == "sp":  # a shape filled with a picture: the picture, its text
                blip = _blip_fill(shape, T_SPPR)
                if blip is not None:
                    items.append((n, "picture", "", _picture_attrs(shape)))
                    items.extend((n, "ocr", t, a) for t, a in self.picture_ocr(blip, rels))
            if kind != "picture" and not text and kind != "chart":  # a chart that prints no label still has values
                continue
            if kind == "title" and title is None:
                title = text
                continue
            if template and name == "sp" and any(f.get("type") == "slidenum" for f in shape.iter(*T_A_FLD)):
                dynamic[len(items)] = shape
            items.append((n, kind, text, attrs))
            if kind == "picture":
                blip = find_local(shape, "blip") if name == "pic" else None
                items.extend((n, "ocr", t, a) for t, a in self.picture_ocr(blip, rels))
        return items, failures, title, dynamic

    def layer(self, part: str, root: Any) -> _Layer:
        """What a layout or master draws on the slides that show it, read once per file."""
        layer = self.layers.get(part)
        if layer is None:
            tree = _find(root, "cSld", "spTree")
            items, failures, _title, dynamic = (
                self.walk(tree, self.rels_of(part), True) if tree is not None else ([], [], None, {})
            )
            layer = self.layers[part] = _Layer(items, failures, dynamic)
        return layer

    def behind(
        self, layout_part: str | None, master_part: str | None, inherit_bg: bool, shows: bool
    ) -> tuple[list[_Item], list[tuple[str, int, str]]]:
        """The items a slide shows from its layout and master (``inherit_bg``: it has no background of its own;
        ``shows``: it shows their shapes) and their failed shapes (whose: "layout ", "master "; number; reason).
        Once every layer involved was shown before and none has a slide-number field, the same items for every
        such slide: remembered, so a long deck pays a lookup per slide."""
        key = (layout_part, master_part, inherit_bg, shows)
        steady = self.steady.get(key)
        if steady is not None:
            return steady, []
        layers: list[tuple[str, Any, str]] = []
        if inherit_bg:
            shown = self.inherited_background(layout_part, master_part)
            if shown is not None:
                layers.append((shown[0], None, shown[1]))
        if shows:  # the master's shapes, then the layout's (z-order), unless the slide hides them
            if _shows(self.layout) and master_part is not None and self.master is not None:
                layers.append((master_part, self.master, "master"))
            if layout_part is not None and self.layout is not None:
                layers.append((layout_part, self.layout, "layout"))
        items: list[_Item] = []
        failures: list[tuple[str, int, str]] = []
        repeat = True
        for part, root, what in layers:
            repeat = self.layer_items(part, root, what, items, failures) and repeat
        if repeat:
            self.steady[key] = items
        return items, failures

    def layer_items(
        self, part: str, root: Any, what: str, items: list[_Item], failures: list[tuple[str, int, str]]
    ) -> bool:
        """A layout's or master's shapes as items of the slide being read (``attrs.layout``/``attrs.master``): its
        OCR blocks and failed shapes with the first slide that shows it, a slide-number field with each slide's.
        True when it gives every later slide the same items (shown before, no slide-number field)."""
        layer = self.layer(part, root)
        mark = {what: True}
        for i, (n, kind, text, attrs) in enumerate(layer.items):
            if kind == "ocr" and layer.shown:
                continue  # read once: on the first slide that shows it
            shape = layer.dynamic.get(i)
            shown = text if shape is None else _text_frame(shape, NO_INHERITED, self.slide_no)
            items.append((n, kind, shown, {**attrs, **mark}))
        repeat = layer.shown and not layer.dynamic
        if not layer.shown:
            failures.extend((f"{what} ", n, reason) for n, reason in layer.failures)
        layer.shown = True
        return repeat

    def background(self, bg: Any, rels: dict[str, tuple[str, str]]) -> list[_Item]:
        """The slide's own background (``bg``, its ``p:bg``) when it is a picture: a picture block
        (``attrs.background``) and its OCR blocks."""
        blip = _blip_fill(bg, T_BGPR)
        if blip is None:
            return []
        return [
            (0, "picture", "", {"image": {"alt": ""}, "background": True}),
            *((0, "ocr", t, a) for t, a in self.picture_ocr(blip, rels)),
        ]

    def inherited_background(self, layout_part: str | None, master_part: str | None) -> tuple[str, str] | None:
        """The background picture a slide without a background of its own shows: its layout's, else (when the
        layout has none of its own either) its master's, as (its layer's key, "layout"/"master"); None when that
        background is no picture. Read once per layout."""
        key = (layout_part, master_part)
        if key not in self.backgrounds:
            self.backgrounds[key] = None
            for part, owner, what in ((layout_part, self.layout, "layout"), (master_part, self.master, "master")):
                if part is None or owner is None:
                    continue
                bg = _find(owner, "cSld", "bg")
                if bg is None:
                    continue
                blip = _blip_fill(bg, T_BGPR)
                if blip is not None:
                    layer_key = f"{part}#background"
                    if layer_key not in self.layers:
                        bg_items: list[_Item] = [(0, "picture", "", {"image": {"alt": ""}, "background": True})]
                        bg_items.extend((0, "ocr", t, a) for t, a in self.picture_ocr(blip, self.rels_of(part)))
                        self.layers[layer_key] = _Layer(bg_items, [], {})
                    self.backgrounds[key] = (layer_key, what)
                break
        return self.backgrounds[key]

    def shape(self, shape: Any, rels: dict[str, tuple[str, str]]) -> tuple[str, str, dict[str, Any]]:
        name = local(shape.tag)
        slide_no = self.slide_no
        if name in ("sp", "cxnSp"):
            ph_el = _ph(shape)
            ph = None if ph_el is None else ph_el.get("type") or "body"
            styles = self.placeholder_styles(ph_el) if ph_el is not None else NO_INHERITED
            text = _text_frame(shape, styles, slide_no)
            if ph in ("title", "ctrTitle"):
                return "title", text, {}
            attrs: dict[str, Any] = {"placeholder": ph} if ph else {}
            return "text", text, attrs
        if name == "graphicFrame":
            return self.graphic_frame(shape, rels)
        if name == "pic":
            return "picture", "", _picture_attrs(shape)
        if name == "contentPart":  # ink: strokes, drawn like a picture
            return "picture", "", {"image": {"alt": "", "ink": True}}
        # anything else (unknown extensions): the text bodies in it
        texts = ["\n".join(p for p in _paragraphs(el, slide_no=slide_no) if p) for el in shape.iter(*T_TXBODY)]
        return "text", "\n".join(t for t in texts if t), {}

    def graphic_frame(self, shape: Any, rels: dict[str, tuple[str, str]]) -> tuple[str, str, dict[str, Any]]:
        """A table, chart, SmartArt diagram or embedded object of a graphic frame."""
        data = _find(shape, "graphic", "graphicData")
        if data is None:
            return "none", "", {}
        kind = graphic_kind(data)
        tbl = next(data.iterchildren(*T_TBL), None)
        if tbl is not None:
            rows = _table(tbl, self.slide_no)
            if not rows or not any(any(c for c in r) for r in rows):
                return "none", "", {}
            return "table", _table_text(rows), {"table": {"columns": rows[0], "rows": rows[1:]}}
        if kind == "chart":
            chart = _child(data, "chart")
            target = self.related(rels, _rid(chart) if chart is not None else None, "chart")
            # a file without a chart never imports the chart stack (workers import it at start: DEFERRED_IMPORTS)
            from extract_fn.formats.ooxml_chart import ChartCache, ChartUnreadable

            if self.charts is None:
                self.charts = ChartCache()
            try:
                read = self.charts.read(target, lambda part: parse_part(self.zf, part, KIND))
            except ChartUnreadable as exc:
                raise ExtractionError(ErrorCode.CORRUPT, str(exc)) from None
            ext = _find(shape, "xfrm", "ext")  # p:xfrm a:ext: the frame's size sets the axes' room for labels
            read = read.sized(_emu(ext, "cx"), _emu(ext, "cy"))
            return "chart", read.text(), read.attrs()
        if kind == "diagram":
            ids = _child(data, "relIds")
            target = self.related(rels, r_attr(ids, "dm") if ids is not None else None, "SmartArt diagram data")
            return "diagram", "\n".join(diagram_texts(parse_part(self.zf, target, KIND))), {"diagram": True}
        if kind in ("chartex", "chartEx") or find_local(data, "oleObj") is not None:
            what = "an embedded object" if kind not in ("chartex", "chartEx") else "an Office 2016 chart (chartEx)"
            raise ExtractionError(ErrorCode.CORRUPT, f"{what} is not read")
        return "none", "", {}

    def related(self, rels: dict[str, tuple[str, str]], rid: str | None, what: str) -> str:
        target = rels.get(rid or "")
        if target is None or not has_member(self.zf, target[1]):
            raise ExtractionError(ErrorCode.CORRUPT, f"the {what} part is missing")
        return target[1]

    def picture_ocr(self, blip: Any, rels: dict[str, tuple[str, str]]) -> list[tuple[str, dict[str, Any]]]:
        """The OCR blocks (text, attrs) of a picture (its ``a:blip``: a picture shape's, a picture fill's); a
        picture whose pixels are not read is counted."""
        target = rels.get((r_attr(blip, "embed") if blip is not None else None) or "")
        if self.ocr is None:
            from extract_fn.ocr.pictures import PictureReader

            self.ocr = PictureReader(self.zf, self.limits)
        ocr_blocks, read = self.ocr.picture(target[1] if target else None)
        if not read:
            self.pictures += 1
        return [(b.text, b.attrs) for b in ocr_blocks]

    def comments(self, rels: dict[str, tuple[str, str]]) -> list[tuple[str, str | None]]:
        """The slide's comments, (text, author) each, in the part's order: legacy ones (``p:cm``, its ``p:text``)
        and modern ones (``p188:cm`` and its replies, each its own ``txBody``). A comments part that cannot be read
        gives none (the slide's own content is read)."""
        out: list[tuple[str, str | None]] = []
        for rtype, target in rels.values():
            if rtype == "comments" and has_member(self.zf, target):
                out.extend(self.comment_part(target))
        return out

    def comment_part(self, target: str) -> list[tuple[str, str | None]]:
        """A comments part's comments, read once (slides may share one part)."""
        known = self.comment_parts.get(target)
        if known is not None:
            return known
        out: list[tuple[str, str | None]] = []
        self.comment_parts[target] = out
        try:
            root = parse_part(self.zf, target, KIND)
        except DtdRefused:
            raise
        except ExtractionError:
            return out
        for el in root.iter():
            if not isinstance(el.tag, str) or local(el.tag) not in ("cm", "reply"):
                continue
            legacy = _child(el, "text")
            if legacy is not None:
                text = (legacy.text or "").strip()
            else:
                body = _child(el, "txBody")
                text = "\n".join(p for p in _paragraphs(body) if p) if body is not None else ""
            if text:
                out.append((text, self.comment_author(el.get("authorId"))))
        return out

    def comment_author(self, author_id: str | None) -> str | None:
        """A comment author's name: ``ppt/commentAuthors.xml`` (legacy, ``p:cmAuthor``) and ``ppt/authors.xml``
        (modern, ``p188:author``), read once."""
        if self.authors is None:
            self.authors = {}
            for part in ("ppt/commentAuthors.xml", "ppt/authors.xml"):
                if not has_member(self.zf, part):
                    continue
                try:
                    root = parse_part(self.zf, part, KIND)
                except DtdRefused:
                    raise
                except ExtractionError:
                    continue
                for el in root:
                    if isinstance(el.tag, str) and el.get("id") is not None and el.get("name"):
                        self.authors.setdefault(el.get("id") or "", el.get("name") or "")
        return self.authors.get(author_id or "") if author_id is not None else None

    def notes(self, rels: dict[str, tuple[str, str]]) -> list[str]:
        """The speaker notes: the notes page's body placeholder(s) as one text, then each text box or shape on the
        page that is no placeholder (the slide image, header, date, footer and number placeholders are not read)."""
        for rtype, target in rels.values():
            if rtype != "notesSlide" or not has_member(self.zf, target):
                continue
            try:
                root = parse_part(self.zf, target, KIND)
            except DtdRefused:
                raise
            except ExtractionError:
                return []
            tree = _find(root, "cSld", "spTree")
            if tree is None:
                return []
            body: list[str] = []
            boxes: list[str] = []
            for _n, shape, _d in _shapes(tree):
                if local(shape.tag) != "sp":
                    continue
                ph = _placeholder(shape)
                if ph is None or ph == "body":
                    t = _text_frame(shape, NO_INHERITED, self.slide_no)
                    if t:
                        (body if ph else boxes).append(t)
            return ["\n".join(body), *boxes] if body else boxes
        return []


def _hidden(el: Any) -> bool:
    """Whether a shape or group is hidden (its ``p:cNvPr hidden="1"``, the Selection Pane's eye): not drawn. Its
    non-visual properties (``p:nvSpPr``, ``p:nvPicPr``, ``p:nvGrpSpPr``, ...) come first, their ``p:cNvPr`` first in
    them; read by position, as this runs for every shape (the names are checked only when the flag is set)."""
    if not len(el):
        return False
    nv = el[0]
    if not len(nv):
        return False
    c = nv[0]
    return c.get("hidden") in _TRUE and local(c.tag) == "cNvPr" and local(nv.tag).startswith("nv")


_TRUE = ("1", "true")


def _shapes(tree: Any) -> Iterator[tuple[int, Any, int]]:
    """(number, shape, group depth) of the shapes in a shape tree, depth-first, groups read through; hidden shapes
    and groups (``_hidden``) are left out (a hidden shape keeps its number, a hidden group's shapes have none)."""
    n = 0
    stack: list[tuple[Iterator[Any], int]] = [(iter(tree), 0)]
    while stack:
        it, depth = stack[-1]
        for el in it:
            tag = el.tag
            if not isinstance(tag, str):
                continue
            name = local(tag)
            if name == "grpSp":
                if _hidden(el):  # a hidden group hides every shape in it
                    continue
                stack.append((iter(el), depth + 1))
                break
            if tag in T_MC_ALT:
                choice = _child(el, "Choice")
                if choice is not None:
                    stack.append((iter(choice), depth))
                    break
                continue
            if name in ("nvGrpSpPr", "grpSpPr", "extLst"):
                continue
            n += 1
            if not _hidden(el):
                yield n, el, depth
        else:
            stack.pop()


def _body(ctx: FormatContext) -> dict[str, Any]:
    return with_package(ctx.data, KIND, lambda zf: _extract(zf, ctx.request), ctx.limits)


extract = format_module(_body)


def _extract(zf: zipfile.ZipFile, request: ExtractRequest) -> dict[str, Any]:
    main = main_part(zf, KIND, "ppt/presentation.xml")
    root = parse_part(zf, main, KIND)
    if local(root.tag) != "presentation":
        raise ExtractionError(ErrorCode.CORRUPT, f"part {main} of the pptx file is not a PresentationML presentation")
    rels = {rid: target for rid, rtype, target in read_rels(zf, main, KIND) if rtype == "slide"}
    slide_ids = _child(root, "sldIdLst")
    order: list[str | None] = []
    if slide_ids is not None:
        for sid in slide_ids:
            if local(sid.tag) == "sldId":
                order.append(rels.get(_rid(sid) or ""))
    builder = ArtifactBuilder(
        KIND, parser=PARSER, parser_version=PARSER_VERSION, unit=UNIT, options=request.options(), measure_blocks=True
    )
    builder.attrs["slides"] = len(order)
    first_no = uint_attr(root.get("firstSlideNum"))
    first_no = 1 if first_no is None else first_no
    budget = output_budget(request, BudgetKind.PAGED)
    deck = _Deck(zf, builder, request.limits)
    extracted = 0
    cut = False
    for number, part in enumerate(order, start=1):
        if cut or budget.over(builder.text_chars):
            cut = True
            builder.fail(f"slide {number}", CUT_REASON)
            continue
        if part is None or not has_member(zf, part):
            builder.fail(f"slide {number}", "the slide's part is missing from the package")
            continue
        try:
            deck.slide(number, part, False, str(first_no + number - 1))
        except ExtractionError as exc:
            if exc.code == ErrorCode.RESOURCE_LIMIT or isinstance(exc, DtdRefused):  # the file, not the slide
                raise
            builder.fail(f"slide {number}", exc.message)
            continue
        extracted += 1
    if cut:
        builder.warn("the artifact reached its output size limit; the remaining slides were not extracted")
    report_pictures(builder, deck.pictures)
    if deck.ocr is not None:
        deck.ocr.finish(builder)
    builder.coverage(total=len(order), extracted=extracted)
    return builder.build()
