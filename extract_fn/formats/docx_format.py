"""DOCX: one lxml pass over the package's parts (coverage unit "paragraphs").

Blocks, in reading order:

1. the body in document order (content controls, custom XML and tracked insertions are read through; deleted text,
   field instructions and the VML fallback of drawings are not):

   - ``heading``: a paragraph whose style (or its ``basedOn`` chain) is ``Title`` (depth 0) or ``heading N``
     (depth N), or that has an outline level (``w:outlineLvl`` 0-8: depth level + 1), in the paragraph or its
     style; its section path is the headings above it plus itself, its parent the enclosing heading;
   - ``list``: a numbered or bulleted paragraph (``w:numPr`` in the paragraph or its style, numId not 0):
     ``depth`` = ``w:ilvl``, ``attrs.list`` = ``{"num_id", "level", "format"}`` (the level's ``w:numFmt``:
     bullet, decimal, ...);
   - ``paragraph``: any other paragraph with text (empty paragraphs make no block but count as extracted);
   - a table: one ``paragraph`` block whose text is the rows (cells joined with `` | ``, rows with newlines) and
     ``attrs.table`` = ``{"columns": first row, "rows": the other rows}``, every row as wide as the table's grid.
     A cell merged into the one before it (the ``gridSpan`` columns past the first, or a ``vMerge`` continuation)
     is ``null``: merged text is never repeated. A nested table's text is part of its cell's text;
   - the text of a text box (``w:txbxContent``) right after the paragraph it is anchored in, as ``paragraph``
     blocks with ``attrs.textbox = true``.

2. then, with ``attrs.part``: headers and footers (``"header"``/``"footer"``, once per part, in the order the
   sections reference them), footnotes (``"footnote"``), endnotes (``"endnote"``) and comments (``"comment"``,
   with ``attrs.author``). These have no section path (they belong to no heading).

Math (OMML) text is read as text. Coverage counts every ``w:p`` in the parts read; all are extracted unless the
output budget cuts the document, when the rest are one failed range.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from typing import Any

from lxml import etree

from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.frame import FormatContext, format_module
from extract_fn.formats.ooxml_text import MC_NS, local, main_part, parse_part, read_rels
from extract_fn.formats.output_budget import BudgetKind, OutputBudget, output_budget
from extract_fn.formats.zipsafe import has_member, with_package
from shared.artifact_builder import ArtifactBuilder, make_locator
from shared.contract import ErrorCode, ExtractionError

KIND = "docx"
PARSER = "loom-docx"
PARSER_VERSION = "1+lxml-" + ".".join(str(v) for v in etree.LXML_VERSION[:3])
UNIT = "paragraphs"
CUT_REASON = "not extracted: the artifact reached its output size limit"

W_NAMESPACES = (
    "http://schemas.openxmlformats.org/wordprocessingml/2006/main",
    "http://purl.oclc.org/ooxml/wordprocessingml/main",
)
M_NAMESPACES = (
    "http://schemas.openxmlformats.org/officeDocument/2006/math",
    "http://purl.oclc.org/ooxml/officeDocument/math",
)


def _tags(name: str, spaces: tuple[str, ...] = W_NAMESPACES) -> frozenset[str]:
    return frozenset(f"{{{ns}}}{name}" for ns in spaces)


T_P = _tags("p")
T_TBL = _tags("tbl")
T_TR = _tags("tr")
T_TC = _tags("tc")
T_T = _tags("t") | _tags("t", M_NAMESPACES)
T_PPR = _tags("pPr")
T_TCPR = _tags("tcPr")
T_TRPR = _tags("trPr")
T_TXBX = _tags("txbxContent")
T_MC_ALT = frozenset({f"{{{MC_NS}}}AlternateContent"})
T_MC_CHOICE = frozenset({f"{{{MC_NS}}}Choice"})
# block-level wrappers read through
T_WRAP = _tags("sdt") | _tags("sdtContent") | _tags("customXml") | _tags("ins") | _tags("moveTo") | _tags("smartTag")
# subtrees never read for text
SKIP_LOCAL = frozenset(
    {
        "pPr",
        "rPr",
        "del",
        "moveFrom",
        "delText",
        "instrText",
        "delInstrText",
        "fldData",
        "sdtPr",
        "sdtEndPr",
        "footnoteReference",
        "endnoteReference",
        "commentReference",
        "annotationRef",
        "tblPr",
        "tblGrid",
        "trPr",
        "tcPr",
        "sectPr",
        "Fallback",
        "lastRenderedPageBreak",
        "bookmarkStart",
        "bookmarkEnd",
    }
)
_HEADING_RE = re.compile(r"^heading\s*([1-9])$", re.IGNORECASE)
_HEADING_ID_RE = re.compile(r"^heading([1-9])$", re.IGNORECASE)


def _attr(el: Any, name: str) -> str | None:
    """An attribute in either w namespace (or none)."""
    for ns in W_NAMESPACES:
        v = el.get(f"{{{ns}}}{name}")
        if v is not None:
            return v
    return el.get(name)


def _child(el: Any, name: str) -> Any:
    for child in el:
        if local(child.tag) == name:
            return child
    return None


class _Styles:
    """Paragraph styles: heading depth, outline level and numbering, resolved through basedOn."""

    def __init__(self, root: Any | None) -> None:
        self.raw: dict[str, tuple[str, str | None, int | None, tuple[str, int] | None]] = {}
        self.cache: dict[str, tuple[int | None, tuple[str, int] | None]] = {}
        if root is None:
            return
        for st in root:
            if local(st.tag) != "style" or _attr(st, "type") not in (None, "paragraph"):
                continue
            sid = _attr(st, "styleId")
            if not sid:
                continue
            name_el = _child(st, "name")
            name = (_attr(name_el, "val") or "") if name_el is not None else ""
            based_el = _child(st, "basedOn")
            based = _attr(based_el, "val") if based_el is not None else None
            ppr = _child(st, "pPr")
            outline = None
            num: tuple[str, int] | None = None
            if ppr is not None:
                outline = _outline_level(ppr)
                num = _num_pr(ppr)
            self.raw[sid] = (name, based, outline, num)

    def resolve(self, sid: str | None) -> tuple[int | None, tuple[str, int] | None]:
        """(heading depth or None, numbering or None) of a paragraph style."""
        if not sid:
            return None, None
        hit = self.cache.get(sid)
        if hit is not None:
            return hit
        depth: int | None = None
        num: tuple[str, int] | None = None
        seen: set[str] = set()
        cur: str | None = sid
        while cur and cur not in seen and len(seen) < 64:
            seen.add(cur)
            entry = self.raw.get(cur)
            if entry is None:
                if depth is None:
                    depth = _depth_from_name(cur, cur)
                break
            name, based, outline, n = entry
            if depth is None:
                depth = _depth_from_name(name, cur)
                if depth is None and outline is not None:
                    depth = outline
            if num is None and n is not None:
                num = n
            cur = based
        result = (depth, num)
        self.cache[sid] = result
        return result


def _depth_from_name(name: str, sid: str) -> int | None:
    low = name.strip().lower()
    if low == "title" or sid == "Title":
        return 0
    m = _HEADING_RE.match(low) or _HEADING_ID_RE.match(sid)
    return int(m.group(1)) if m else None


def _outline_level(ppr: Any) -> int | None:
    el = _child(ppr, "outlineLvl")
    if el is None:
        return None
    try:
        lvl = int(_attr(el, "val") or "9")
    except ValueError:
        return None
    return lvl + 1 if 0 <= lvl <= 8 else None


def _num_pr(ppr: Any) -> tuple[str, int] | None:
    el = _child(ppr, "numPr")
    if el is None:
        return None
    num_el = _child(el, "numId")
    lvl_el = _child(el, "ilvl")
    num_id = _attr(num_el, "val") if num_el is not None else None
    try:
        ilvl = int(_attr(lvl_el, "val") or "0") if lvl_el is not None else 0
    except ValueError:
        ilvl = 0
    if num_id is None:
        return None
    return num_id, max(0, min(ilvl, 8))


class _Numbering:
    def __init__(self, root: Any | None) -> None:
        self.formats: dict[tuple[str, int], str] = {}
        if root is None:
            return
        abstract: dict[str, dict[int, str]] = {}
        for el in root:
            if local(el.tag) == "abstractNum":
                aid = _attr(el, "abstractNumId") or ""
                levels: dict[int, str] = {}
                for lvl in el:
                    if local(lvl.tag) != "lvl":
                        continue
                    fmt_el = _child(lvl, "numFmt")
                    try:
                        levels[int(_attr(lvl, "ilvl") or "0")] = (
                            (_attr(fmt_el, "val") or "decimal") if fmt_el is not None else "decimal"
                        )
                    except ValueError:
                        continue
                abstract[aid] = levels
        for el in root:
            if local(el.tag) == "num":
                nid = _attr(el, "numId") or ""
                a_el = _child(el, "abstractNumId")
                aid = (_attr(a_el, "val") or "") if a_el is not None else ""
                for lvl, fmt in abstract.get(aid, {}).items():
                    self.formats[(nid, lvl)] = fmt

    def fmt(self, num_id: str, ilvl: int) -> str:
        return self.formats.get((num_id, ilvl), "decimal" if (num_id, 0) in self.formats else "unknown")


# ---------------------------------------------------------------------------------------------------------------
# Walking


def _blocks_in(container: Any) -> Iterator[Any]:
    """Block-level paragraphs and tables of a container, reading through wrappers (no recursion)."""
    stack: list[Iterator[Any]] = [iter(container)]
    while stack:
        for el in stack[-1]:
            tag = el.tag
            if tag in T_P or tag in T_TBL:
                yield el
                break_out = False
            elif tag in T_WRAP:
                stack.append(iter(el))
                break_out = True
            elif tag in T_MC_ALT:
                choice = next((c for c in el if c.tag in T_MC_CHOICE), None)
                if choice is not None:
                    stack.append(iter(choice))
                    break_out = True
                else:
                    break_out = False
            else:
                break_out = False
            if break_out:
                break
        else:
            stack.pop()


def _para_text(p: Any, boxes: list[Any] | None) -> str:
    """A paragraph's text; text boxes anchored in it are appended to ``boxes`` (not read here)."""
    out: list[str] = []
    stack: list[Iterator[Any]] = [iter(p)]
    while stack:
        for el in stack[-1]:
            tag = el.tag
            if not isinstance(tag, str):
                continue
            if tag in T_T:
                if el.text:
                    out.append(el.text)
                continue
            name = local(tag)
            if name in SKIP_LOCAL:
                continue
            if name in {"tab", "ptab"}:
                out.append("\t")
            elif name in ("br", "cr"):
                if _attr(el, "type") != "page":
                    out.append("\n")
            elif name == "noBreakHyphen":
                out.append("-")
            elif name == "sym":
                code = _attr(el, "char")
                try:
                    val = int(code or "", 16)
                    if 0xF000 <= val <= 0xF0FF:
                        val -= 0xF000
                    if 0x20 <= val <= 0x10FFFF:
                        out.append(chr(val))
                except ValueError:
                    pass
            elif name == "txbxContent":
                if boxes is not None:
                    boxes.append(el)
            elif name == "AlternateContent":
                choice = next((c for c in el if local(c.tag) == "Choice"), None)
                if choice is not None:
                    stack.append(iter(choice))
                    break
            elif len(el):
                stack.append(iter(el))
                break
        else:
            stack.pop()
    return "".join(out)


def _clean(text: str) -> str:
    return text.replace("\x00", "").strip()


def _span(tc: Any) -> tuple[int, bool]:
    """(gridSpan, is a vMerge continuation) of a cell."""
    pr = next((c for c in tc if c.tag in T_TCPR), None)
    if pr is None:
        return 1, False
    span = 1
    cont = False
    for c in pr:
        name = local(c.tag)
        if name == "gridSpan":
            try:
                span = max(1, min(int(_attr(c, "val") or "1"), 1000))
            except ValueError:
                span = 1
        elif name == "vMerge":
            cont = (_attr(c, "val") or "continue") != "restart"
    return span, cont


def _grid_skip(tr: Any, name: str) -> int:
    pr = next((c for c in tr if c.tag in T_TRPR), None)
    if pr is None:
        return 0
    el = _child(pr, name)
    if el is None:
        return 0
    try:
        return max(0, min(int(_attr(el, "val") or "0"), 1000))
    except ValueError:
        return 0


def _children_through(el: Any, tags: frozenset[str]) -> Iterator[Any]:
    """Children with one of ``tags``, reading through content controls and custom XML (iteratively)."""
    stack: list[Iterator[Any]] = [iter(el)]
    while stack:
        for c in stack[-1]:
            if c.tag in tags:
                yield c
            elif c.tag in T_WRAP:
                stack.append(iter(c))
                break
        else:
            stack.pop()


class _Doc:
    def __init__(self, styles: _Styles, numbering: _Numbering) -> None:
        self.styles = styles
        self.numbering = numbering
        self.paragraphs = 0

    def table_rows(self, tbl: Any, depth: int = 0) -> list[list[str | None]]:
        if depth > 64:
            raise ExtractionError(ErrorCode.CORRUPT, "the docx file nests tables more than 64 deep")
        rows: list[list[str | None]] = []
        for tr in _children_through(tbl, T_TR):
            row: list[str | None] = [None] * _grid_skip(tr, "gridBefore")
            for tc in _children_through(tr, T_TC):
                span, cont = _span(tc)
                text = None if cont else self.cell_text(tc, depth)
                row.append(text)
                row.extend([None] * (span - 1))
            row.extend([None] * _grid_skip(tr, "gridAfter"))
            rows.append(row)
        width = max((len(r) for r in rows), default=0)
        for r in rows:
            r.extend([None] * (width - len(r)))
        return rows

    def cell_text(self, tc: Any, depth: int) -> str:
        parts: list[str] = []
        for el in _blocks_in(tc):
            if el.tag in T_TBL:
                for r in self.table_rows(el, depth + 1):
                    parts.append(" | ".join(c or "" for c in r))
                continue
            self.paragraphs += 1
            boxes: list[Any] = []
            t = _clean(_para_text(el, boxes))
            if t:
                parts.append(t)
            for box in boxes:
                for bp in _blocks_in(box):
                    if bp.tag in T_P:
                        self.paragraphs += 1
                        bt = _clean(_para_text(bp, None))
                        if bt:
                            parts.append(bt)
        return "\n".join(parts)

    def para_props(self, p: Any) -> tuple[int | None, tuple[str, int] | None]:
        ppr = next((c for c in p if c.tag in T_PPR), None)
        sid = None
        own_outline = None
        own_num = None
        if ppr is not None:
            for c in ppr:
                name = local(c.tag)
                if name == "pStyle":
                    sid = _attr(c, "val")
                elif name == "outlineLvl":
                    own_outline = _outline_level(ppr)
                elif name == "numPr":
                    own_num = _num_pr(ppr)
        depth, num = self.styles.resolve(sid)
        if own_outline is not None and depth is None:
            depth = own_outline
        if own_num is not None:
            num = own_num
        if num is not None and num[0] == "0":
            num = None
        return depth, num


# ---------------------------------------------------------------------------------------------------------------
# Entry point


def _body(ctx: FormatContext) -> dict[str, Any]:
    return with_package(ctx.data, KIND, lambda zf: _extract(zf, ctx.request), ctx.limits)


extract = format_module(_body)


def _optional_part(zf: zipfile.ZipFile, name: str | None) -> Any | None:
    if not name or not has_member(zf, name):
        return None
    return parse_part(zf, name, KIND)


def _extract(zf: zipfile.ZipFile, request: ExtractRequest) -> dict[str, Any]:
    main = main_part(zf, KIND, "word/document.xml")
    root = parse_part(zf, main, KIND)
    body = next((c for c in root if local(c.tag) == "body"), None)
    if local(root.tag) != "document" or body is None:
        raise ExtractionError(ErrorCode.CORRUPT, f"part {main} of the docx file is not a WordprocessingML document")
    rels = read_rels(zf, main, KIND)
    by_type: dict[str, list[str]] = {}
    by_id: dict[str, str] = {}
    for rid, rtype, target in rels:
        by_type.setdefault(rtype, []).append(target)
        by_id[rid] = target
    styles = _Styles(_optional_part(zf, next(iter(by_type.get("styles", ())), None)))
    numbering = _Numbering(_optional_part(zf, next(iter(by_type.get("numbering", ())), None)))
    doc = _Doc(styles, numbering)

    builder = ArtifactBuilder(
        KIND, parser=PARSER, parser_version=PARSER_VERSION, unit=UNIT, options=request.options(), measure_blocks=True
    )
    budget = output_budget(request, BudgetKind.PAGED)
    cut = False

    # -- body
    stack: list[tuple[int, str, str]] = []
    for el in _blocks_in(body):
        if budget.over(builder.text_chars):
            cut = True
            break
        if el.tag in T_TBL:
            rows = doc.table_rows(el)
            if rows and any(any(c for c in r) for r in rows):
                _add(builder, stack, "paragraph", _table_text(rows), {"table": {"columns": rows[0], "rows": rows[1:]}})
            continue
        doc.paragraphs += 1
        boxes: list[Any] = []
        text = _clean(_para_text(el, boxes))
        if text:
            depth, num = doc.para_props(el)
            if depth is not None:
                while stack and stack[-1][0] >= depth:
                    stack.pop()
                parent = stack[-1][1] if stack else None
                path = [t for _, _, t in stack] + [text]
                bid = builder.add_block("heading", text, depth=depth, parent=parent, section_path=path)
                stack.append((depth, bid, text))
            elif num is not None:
                attrs: dict[str, Any] = {
                    "list": {"num_id": num[0], "level": num[1], "format": numbering.fmt(num[0], num[1])}
                }
                _add(builder, stack, "list", text, attrs, depth=num[1])
            else:
                _add(builder, stack, "paragraph", text, None)
        for box in boxes:
            for bp in _blocks_in(box):
                if bp.tag in T_TBL:
                    rows = doc.table_rows(bp)
                    if rows:
                        _add(
                            builder,
                            stack,
                            "paragraph",
                            _table_text(rows),
                            {"textbox": True, "table": {"columns": rows[0], "rows": rows[1:]}},
                        )
                    continue
                doc.paragraphs += 1
                bt = _clean(_para_text(bp, None))
                if bt:
                    _add(builder, stack, "paragraph", bt, {"textbox": True})

    # -- headers and footers (as the sections reference them), then notes and comments
    if not cut:
        seen: set[str] = set()
        refs: list[tuple[str, str, str]] = []  # (part kind, header type, member)
        for sect in root.iter(*_tags("sectPr")):
            for ref in sect:
                name = local(ref.tag)
                if name in ("headerReference", "footerReference"):
                    rid = ref.get("{http://schemas.openxmlformats.org/officeDocument/2006/relationships}id") or ref.get(
                        "{http://purl.oclc.org/ooxml/officeDocument/relationships}id"
                    )
                    ref_target = by_id.get(rid or "")
                    if ref_target and ref_target not in seen:
                        seen.add(ref_target)
                        refs.append((name[:6], _attr(ref, "type") or "default", ref_target))
        for rtype in ("header", "footer"):
            for target in by_type.get(rtype, []):
                if target not in seen:
                    seen.add(target)
                    refs.append((rtype, "default", target))
        for part_kind, htype, target in refs:
            part_root = _optional_part(zf, target)
            if part_root is None:
                continue
            cut = _emit_part(builder, doc, part_root, {"part": part_kind, "kind": htype}, budget)
            if cut:
                break
    if not cut:
        for rtype, part_kind, item in (
            ("footnotes", "footnote", "footnote"),
            ("endnotes", "endnote", "endnote"),
            ("comments", "comment", "comment"),
        ):
            for target in by_type.get(rtype, []):
                part_root = _optional_part(zf, target)
                if part_root is None:
                    continue
                for note in part_root:
                    if local(note.tag) != item:
                        continue
                    if _attr(note, "type") in ("separator", "continuationSeparator", "continuationNotice"):
                        continue
                    attrs = {"part": part_kind, "note_id": _attr(note, "id") or ""}
                    if part_kind == "comment":
                        attrs = {"part": "comment", "comment_id": _attr(note, "id") or ""}
                        author = _attr(note, "author")
                        if author:
                            attrs["author"] = author
                    cut = _emit_part(builder, doc, note, attrs, budget)
                    if cut:
                        break
                if cut:
                    break
            if cut:
                break
    extracted = doc.paragraphs
    total = extracted  # every paragraph of the parts read was visited
    if cut:
        total = max(sum(1 for _ in root.iter(*T_P)), extracted + 1)
        builder.warn("the artifact reached its output size limit; the rest of the document was not extracted")
        builder.fail(f"paragraphs {extracted + 1}-{total}", CUT_REASON)
    builder.coverage(total=total, extracted=extracted)
    return builder.build()


def _add(
    builder: ArtifactBuilder,
    stack: list[tuple[int, str, str]],
    kind: str,
    text: str,
    attrs: dict[str, Any] | None,
    *,
    depth: int | None = None,
) -> None:
    builder.add_block(
        kind,
        text,
        parent=stack[-1][1] if stack else None,
        section_path=[t for _, _, t in stack],
        depth=depth,
        attrs=attrs,
        locator=make_locator(),
    )


def _table_text(rows: list[list[str | None]]) -> str:
    return "\n".join(" | ".join((c or "").replace("\n", " ") for c in r) for r in rows)


def _emit_part(
    builder: ArtifactBuilder, doc: _Doc, container: Any, attrs: dict[str, Any], budget: OutputBudget
) -> bool:
    """Blocks for a header, footer, note or comment. True when the output budget cut it."""
    for el in _blocks_in(container):
        if budget.over(builder.text_chars):
            return True
        if el.tag in T_TBL:
            rows = doc.table_rows(el)
            if rows and any(any(c for c in r) for r in rows):
                builder.add_block(
                    "paragraph",
                    _table_text(rows),
                    attrs={**attrs, "table": {"columns": rows[0], "rows": rows[1:]}},
                    locator=make_locator(),
                )
            continue
        doc.paragraphs += 1
        boxes: list[Any] = []
        text = _clean(_para_text(el, boxes))
        if text:
            builder.add_block("paragraph", text, attrs=dict(attrs), locator=make_locator())
        for box in boxes:
            for bp in _blocks_in(box):
                if bp.tag in T_P:
                    doc.paragraphs += 1
                    bt = _clean(_para_text(bp, None))
                    if bt:
                        builder.add_block("paragraph", bt, attrs={**attrs, "textbox": True}, locator=make_locator())
    return False
