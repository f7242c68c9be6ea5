"""DOCX: one lxml pass over the package's parts (coverage unit "paragraphs"), as Word shows the document.

Blocks, in reading order:

1. the body in document order (content controls, custom XML and tracked insertions are read through; deleted text,
   hidden text, field instructions and the VML fallback of drawings are not). Text is what Word shows:

   - fields: the outermost field's cached result (the runs between its ``separate`` and its ``end``, across
     paragraphs: a TOC's), so PAGE, NUMPAGES, DATE, REF and TOC entries read as Word last showed them; a field's
     instructions, the results of the fields nested in them included, are not read (``{ IF { MERGEFIELD x } ...}``
     reads as the IF's result alone). A legacy check box form field is ☒ (checked, or checked by default) or ☐, a
     drop-down its chosen entry (``w:result``, else ``w:default``, else the first), MACROBUTTON its display text
     (the instruction after the macro's name);
   - hidden text (``w:vanish``, ``w:specVanish``: in the run's properties, else its character style and its
     paragraph style through ``basedOn``, which toggle each other, else the document defaults) is not read; a
     paragraph of hidden text only makes no block (and counts as extracted, as an empty one);
   - ``w:sym``: the character its font draws (Symbol and Wingdings mapped, ``docx_numbering.SYMBOL_FONTS``, the
     map bullets are read with; ``F061`` in Symbol is α);
   - a line, column or page break (``w:br``, ``w:cr``) is a newline;
   - a deleted paragraph (its mark a tracked deletion, ``w:pPr/w:rPr/w:del``, and nothing of it shown) makes no
     block and takes no list number;

   - ``heading``: a paragraph whose style (or its ``basedOn`` chain) is ``Title`` (depth 0) or ``heading N``
     (depth N), or that has an outline level (``w:outlineLvl`` 0-8: depth level + 1), in the paragraph or its
     style; its section path is the headings above it plus itself, its parent the enclosing heading;
   - ``list``: a numbered or bulleted paragraph (``w:numPr`` in the paragraph or its style, numId not 0):
     ``depth`` = ``w:ilvl``, ``attrs.list`` = ``{"num_id", "level", "format", "label"}`` (the level's
     ``w:numFmt``: bullet, decimal, ...; ``label`` what Word shows, ``docx_numbering``). The label leads the text
     ("1.2 Scope", "a) first", "• item"), of a numbered heading too (which also gets ``attrs.list``);
   - ``paragraph``: any other paragraph with text (empty paragraphs make no block but count as extracted);
     equations (OMML) are linear text (``ooxml_math``);
   - a table: one ``paragraph`` block whose text is the rows (cells joined with `` | ``, rows with newlines) and
     ``attrs.table`` = ``{"columns": first row, "rows": the other rows}``, every row as wide as the table's grid.
     A cell merged into the one before it (the ``gridSpan`` columns past the first, or a ``vMerge`` continuation)
     is ``null``: merged text is never repeated. A continuation cell's own content (under a cell that starts or
     continues the merge) is not read: Word does not draw it, and its paragraphs take no list number; they count
     as extracted, and text there gives a warning. A continuation with no merge above it is an ordinary cell (the
     standard ignores the value). A nested table's text is part of its cell's text, and so is a text box's in a
     cell (its paragraphs with their list labels, its tables, its boxes); the drawings in its cells (pictures,
     charts, diagrams, any depth, in a text box too) follow the table's block as blocks of their own, each with
     ``attrs.cell`` = ``[row, column]`` (0-based in the grid, row 0 is ``columns``);
   - right after the paragraph they are anchored in: the text of its text boxes and DrawingML shapes
     (``w:txbxContent``) as blocks with ``attrs.textbox = true``; its charts (``ooxml_chart``: ``attrs.chart``,
     ``attrs.table``); its SmartArt diagrams (the data part's text, ``attrs.diagram = true``); its pictures (a block
     with empty text and ``attrs.image`` = ``{"alt": alt text, "name"}``); its WordArt's text (a VML
     ``v:textpath``'s ``string``: Word's watermarks, "CONFIDENTIAL" in a header) with ``attrs.wordart = true``.

2. then, with ``attrs.part``: headers and footers (``"header"``/``"footer"``, once per part, in the order the
   sections reference them; those Word shows: a section's first-page ones only with ``w:titlePg``, even-page ones
   only with ``w:evenAndOddHeaders`` in ``settings.xml``, a type a section does not reference inherited from the
   section before; a legacy ``w:pgNum`` shows nothing, the page being unknown), footnotes (``"footnote"``),
   endnotes (``"endnote"``) and comments (``"comment"``,
   with ``attrs.author``). These have no section path (they belong to no heading). A cited footnote or endnote
   leads with the mark Word prints (numbered in citation order from the start value, ``w:numStart``, again from it
   in each section whose ``w:numRestart`` is eachSect (eachPage reads as continuous: pages are not known), in the
   section's note format, by default 1, 2, ... for footnotes and i, ii, ... for endnotes: ``w:footnotePr`` and
   ``w:endnotePr`` of the section over those of ``settings.xml``; ``attrs.mark``); in the body text the reference
   is that mark in superscript characters, as Word prints it ("Ouchⁱ", "claim¹²"; NFKC folds them to plain
   letters and digits), or the plain mark when a character of it has no superscript form. A custom mark
   (``customMarkFollows``) is the run text that follows it.

Coverage counts every ``w:p`` in the parts read; all are extracted unless the output budget cuts the document, when
the rest are one failed range. What is seen but not read is said: a chart without cached values, a chart or diagram
whose part is missing, an embedded (OLE) object, an imported document (``w:altChunk``) is a failed unit (``chart N``,
``diagram N``, ``embedded object N``, ``imported document N``);
a picture is read by OCR (``extract_fn.ocr.pictures``: its text as blocks with ``attrs.ocr`` after the picture's
block); pictures whose pixels are not read (OCR off or refused, or no raster) make ``coverage.lost`` ``image_text``,
with a warning counting them, and a refused one also loses ``ocr``.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from lxml import etree

from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.docx_numbering import ListCounters, Numbering, format_number, superscript, symbol_char
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
from extract_fn.formats.ooxml_text import (
    MC_NS,
    child,
    first_children,
    local,
    main_part,
    parse_part,
    read_rels,
    uint_attr,
)
from extract_fn.formats.output_budget import BudgetKind, OutputBudget, output_budget
from extract_fn.formats.safe_xml import DtdRefused
from extract_fn.formats.zipsafe import has_member, with_package
from extract_fn.limits import Limits
from shared.artifact_builder import ArtifactBuilder
from shared.contract import ErrorCode, ExtractionError

if TYPE_CHECKING:
    from extract_fn.formats.ooxml_chart import ChartCache
    from extract_fn.ocr.pictures import PictureReader

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
T_RPR = _tags("rPr")
T_R = _tags("r")
T_FLD_CHAR = _tags("fldChar")
T_INSTR = _tags("instrText")
T_VANISH = _tags("vanish") | _tags("specVanish")  # hidden text (specVanish: always hidden, a style separator)
T_RSTYLE = _tags("rStyle")
T_SECT_PR = _tags("sectPr")
VML_TEXTPATH = "{urn:schemas-microsoft-com:vml}textpath"  # WordArt's text (Word's watermarks are WordArt)
T_TCPR = _tags("tcPr")
T_TRPR = _tags("trPr")
T_TXBX = _tags("txbxContent")
T_ALT_CHUNK = _tags("altChunk")  # an imported document (HTML, RTF, another docx) Word converts when it opens
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


_child = child


def _toggle(el: Any) -> bool:
    """A toggle property's value (``w:vanish``, ``w:b``): on unless its val says off."""
    return (_attr(el, "val") or "1") not in ("0", "false", "off")


def _vanish(rpr: Any | None) -> bool | None:
    """Whether a ``w:rPr`` hides its text (``w:vanish``, ``w:specVanish``): None when it says nothing."""
    hidden = None
    if rpr is not None:
        for c in rpr:
            if c.tag in T_VANISH:
                hidden = True if _toggle(c) else bool(hidden)
    return hidden


_STYLE_PARTS = frozenset({"name", "basedOn", "pPr", "rPr"})


class _Styles:
    """Paragraph styles: heading depth, outline level and numbering, resolved through basedOn; and whether a run's
    text is hidden (``w:vanish``: its own properties, else its character style and its paragraph style, each
    through basedOn, the two toggling each other as Word's toggle properties do, else the document default)."""

    def __init__(self, root: Any | None) -> None:
        self.raw: dict[str, tuple[str, str | None, int | None, NumPr | None]] = {}
        self.cache: dict[str, tuple[int | None, NumPr | None]] = {}
        self.numbering_styles: dict[str, str] = {}  # numbering style id -> its numId
        # (basedOn, w:vanish of its w:rPr or None) of the paragraph and character styles
        self.vanish_raw: dict[tuple[str, str], tuple[str | None, bool | None]] = {}
        self.vanish_cache: dict[tuple[str, str], bool | None] = {}
        self.default_style: str | None = None  # the default paragraph style
        self.default_hidden = False  # w:docDefaults hide text
        self.hides = False  # some style (or the defaults) hides text: runs' styles must be looked at
        if root is None:
            return
        for st in root:
            if local(st.tag) == "docDefaults":
                rpr_default = _child(st, "rPrDefault")
                self.default_hidden = bool(_vanish(_child(rpr_default, "rPr") if rpr_default is not None else None))
                self.hides = self.hides or self.default_hidden
                continue
            if local(st.tag) != "style":
                continue
            sid = _attr(st, "styleId")
            if not sid:
                continue
            stype = _attr(st, "type")
            if stype == "numbering":
                ppr = _child(st, "pPr")
                link = _num_pr(ppr) if ppr is not None else None
                if link is not None:
                    self.numbering_styles[sid] = link[0]
                continue
            if stype not in (None, "paragraph", "character"):
                continue
            kids = first_children(st, _STYLE_PARTS)  # one pass over its children, not a tag matcher per name
            based_el = kids.get("basedOn")
            based = _attr(based_el, "val") if based_el is not None else None
            hidden = _vanish(kids.get("rPr"))
            self.hides = self.hides or bool(hidden)
            self.vanish_raw[("c" if stype == "character" else "p", sid)] = (based, hidden)
            if stype == "character":
                continue
            if _on(_attr(st, "default")) and self.default_style is None:
                self.default_style = sid
            name_el = kids.get("name")
            name = (_attr(name_el, "val") or "") if name_el is not None else ""
            ppr = kids.get("pPr")
            outline = None
            num: NumPr | None = None
            if ppr is not None:
                outline = _outline_level(ppr)
                num = _num_pr(ppr)
            self.raw[sid] = (name, based, outline, num)

    def style_vanish(self, kind: str, sid: str | None) -> bool | None:
        """The ``w:vanish`` a paragraph (``p``) or character (``c``) style gives, through basedOn (None: none)."""
        if not sid:
            return None
        key = (kind, sid)
        if key in self.vanish_cache:
            return self.vanish_cache[key]
        hidden = None
        seen: set[str] = set()
        cur: str | None = sid
        while cur and cur not in seen and len(seen) < 64:
            seen.add(cur)
            based, hidden = self.vanish_raw.get((kind, cur), (None, None))
            if hidden is not None:
                break
            cur = based
        self.vanish_cache[key] = hidden
        return hidden

    def para_vanish(self, ppr: Any | None) -> bool | None:
        """The ``w:vanish`` a paragraph's style gives its runs (its ``w:pStyle``, else the default style)."""
        sid = None
        if ppr is not None:
            for c in ppr:
                if local(c.tag) == "pStyle":
                    sid = _attr(c, "val")
        return self.style_vanish("p", sid or self.default_style)

    def run_hidden(self, rpr: Any | None, para: bool | None) -> bool:
        """Whether a run (its ``w:rPr`` or None) is hidden text, in a paragraph whose style gives ``para``."""
        own: bool | None = None
        rstyle = None
        if rpr is not None:
            for c in rpr:
                tag = c.tag
                if tag in T_VANISH:
                    own = True if _toggle(c) else bool(own)
                elif tag in T_RSTYLE:
                    rstyle = _attr(c, "val")
        if own is not None:
            return own
        if not self.hides:
            return False
        char = self.style_vanish("c", rstyle)
        if para is None and char is None:
            return self.default_hidden
        return bool(para) != bool(char)  # a toggle property: the paragraph and character styles toggle it

    def style_num(self, sid: str) -> str | None:
        """The numId a numbering style stands for (``w:numStyleLink``)."""
        return self.numbering_styles.get(sid)

    def resolve(self, sid: str | None) -> tuple[int | None, NumPr | None]:
        """(heading depth or None, numbering or None) of a paragraph style."""
        if not sid:
            return None, None
        hit = self.cache.get(sid)
        if hit is not None:
            return hit
        depth: int | None = None
        num: NumPr | None = None
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
    return _outline_value(_child(ppr, "outlineLvl"))


def _outline_value(el: Any | None) -> int | None:
    """The heading depth a ``w:outlineLvl`` gives (None: none, or not a level)."""
    if el is None:
        return None
    try:
        lvl = int(_attr(el, "val") or "9")
    except ValueError:
        return None
    return lvl + 1 if 0 <= lvl <= 8 else None


NumPr = tuple[str, int | None]  # (numId, ilvl or None when the paragraph or style gives none)


_NUM_PR_NAMES = frozenset({"numId", "ilvl"})


def _num_pr(ppr: Any) -> NumPr | None:
    return _num_pr_value(_child(ppr, "numPr"))


def _num_pr_value(el: Any | None) -> NumPr | None:
    """What a ``w:numPr`` says (None: none, or no numId)."""
    if el is None:
        return None
    kids = first_children(el, _NUM_PR_NAMES)
    num_el = kids.get("numId")
    lvl_el = kids.get("ilvl")
    num_id = _attr(num_el, "val") if num_el is not None else None
    ilvl: int | None = None
    if lvl_el is not None:
        try:
            ilvl = max(0, min(int(_attr(lvl_el, "val") or "0"), 8))
        except ValueError:
            ilvl = 0
    if num_id is None:
        return None
    return num_id, ilvl


# ---------------------------------------------------------------------------------------------------------------
# Walking


# What a block-level element is (``_blocks_in`` yields it with the element, so no caller reads its tag again)
BLOCK_P, BLOCK_TBL, BLOCK_ALT_CHUNK = range(3)
_BLOCK_KINDS: dict[str, int] = (
    dict.fromkeys(T_P, BLOCK_P) | dict.fromkeys(T_TBL, BLOCK_TBL) | dict.fromkeys(T_ALT_CHUNK, BLOCK_ALT_CHUNK)
)


def _blocks_in(container: Any) -> Iterator[tuple[Any, int]]:
    """(element, ``BLOCK_*`` kind) of the block-level paragraphs and tables of a container, reading through
    wrappers (no recursion)."""
    kinds = _BLOCK_KINDS
    stack: list[Iterator[Any]] = [iter(container)]
    while stack:
        for el in stack[-1]:
            tag = el.tag
            kind = kinds.get(tag)
            if kind is not None:
                yield el, kind
                continue
            inner = el
            if tag in T_MC_ALT:
                inner = next(el.iterchildren(*T_MC_CHOICE), None)
            elif tag not in T_WRAP:
                continue
            if inner is not None:
                stack.append(iter(inner))
                break
        else:
            stack.pop()


@dataclass(slots=True)
class Drawing:
    """Something drawn in a paragraph that is no run text: a chart, a SmartArt diagram, a picture, an object."""

    kind: str  # chart, diagram, picture, object, imported document
    rid: str | None = None
    alt: str = ""
    name: str = ""
    size: tuple[int, int] | None = None  # wp:extent (EMU) of a chart: the room its axes have for labels


@dataclass(slots=True)
class Inline:
    """What a paragraph holds: its text, the text boxes anchored in it, its drawings and note references."""

    text: str = ""
    boxes: list[Any] = field(default_factory=list)
    drawings: list[Drawing] = field(default_factory=list)
    notes: list[tuple[str, str]] = field(default_factory=list)  # (footnote|endnote, id) in order
    ppr: Any = None  # the paragraph's own w:pPr (its first), seen on the way
    wordart: tuple[str, ...] = ()  # the text of its WordArt (VML v:textpath), a watermark's


def _sym(el: Any) -> str:
    """A ``w:sym``: the character its symbol font draws (``docx_numbering.SYMBOL_FONTS``: Symbol F061 is α), else
    the code less 0xF000 (a symbol-encoded font's character)."""
    try:
        val = int(_attr(el, "char") or "", 16)
    except ValueError:
        return ""
    if val <= 0xFF or 0xF000 <= val <= 0xF0FF:
        mapped = symbol_char(_attr(el, "font"), val)
        if mapped:
            return mapped
    if 0xF000 <= val <= 0xF0FF:
        val -= 0xF000
    return chr(val) if 0x20 <= val <= 0x10FFFF and not 0xD800 <= val <= 0xDFFF else ""


# ---------------------------------------------------------------------------------------------------------------
# Fields: Word shows the outermost field's result (the runs between its ``separate`` and its ``end``); its
# instructions (between ``begin`` and ``separate``), the results of the fields nested in them included, are not shown.

MAX_OPEN_FIELDS = 64  # deeper begins are counted, not kept (Word nests fields 20 deep at most)
CHECKED, UNCHECKED = "\u2612", "\u2610"  # ☒ ☐: a legacy check box form field as Word draws it


@dataclass(slots=True)
class _Field:
    ff: Any  # the begin's w:ffData (a legacy form field's data), or None
    instr: list[str] = field(default_factory=list)  # its own instruction text (not its nested fields')
    phase: int = 0  # 0: its instructions; 1: its result, shown; 2: a result not shown (a form field drawn from data)


class _Story:
    """What a story (the body, a header or footer, a note, a text box) carries from paragraph to paragraph: its open
    fields (a TOC's result spans paragraphs)."""

    __slots__ = ("excess", "fields", "hiding", "vanish")

    def __init__(self, vanish: bool = True) -> None:
        self.vanish = vanish  # it may hold hidden text (a w:vanish or w:specVanish): its runs are looked at
        self.fields: list[_Field] = []
        self.hiding = 0  # open fields whose text is not shown (in their instructions): while > 0 nothing is shown
        self.excess = 0  # begins past MAX_OPEN_FIELDS not yet ended

    def hidden_run(self, run: Any) -> bool:
        """Step the fields by the field characters of a run of hidden text; whether its story now hides text."""
        for c in run:
            if c.tag in T_FLD_CHAR:
                self.fld_char(c)
            elif c.tag in T_INSTR:
                self.instr(c)
        return self.hiding > 0

    def instr(self, el: Any) -> None:
        fields = self.fields
        if fields and fields[-1].phase == 0 and not self.excess:
            fields[-1].instr.append(el.text or "")

    def fld_char(self, el: Any) -> str:
        """Step the fields by a ``w:fldChar``; the text a field shows from its data (a form field, MACROBUTTON)."""
        kind = _attr(el, "fldCharType")
        fields = self.fields
        if kind == "begin":
            if len(fields) >= MAX_OPEN_FIELDS:
                self.excess += 1
            else:
                fields.append(_Field(_child(el, "ffData")))
            self.hiding += 1
            return ""
        if self.excess:
            if kind == "end":
                self.excess -= 1
                self.hiding -= 1
            return ""
        if not fields:  # a separate or end with no begin (a part cut by its writer): nothing to step
            return ""
        f = fields[-1]
        if kind == "separate":
            if f.phase:
                return ""
            shown = _field_display(f)
            if shown is None:  # an ordinary field: its result (cached) is what Word shows
                f.phase = 1
                self.hiding -= 1
                return ""
            f.phase = 2
            return shown if self.hiding == 1 else ""
        if kind == "end":
            fields.pop()
            if f.phase != 1:
                self.hiding -= 1
            if f.phase == 0 and not self.hiding:  # a field with no result: what it shows from its data, if any
                return _field_display(f) or ""
        return ""


def _field_display(f: _Field) -> str | None:
    """What a field shows that is no result: a legacy form field's (check box, drop-down), MACROBUTTON's display
    text (its instruction after the macro's name); None for any other field (its result is shown)."""
    words = "".join(f.instr).split(None, 2)
    name = words[0].upper() if words else ""
    if name == "MACROBUTTON":
        return words[2].strip() if len(words) > 2 else ""
    if name == "FORMCHECKBOX":
        box = _child(f.ff, "checkBox") if f.ff is not None else None
        if box is None:
            return UNCHECKED
        state = _child(box, "checked")  # its state, else its default state
        if state is None:
            state = _child(box, "default")
        return CHECKED if state is not None and _toggle(state) else UNCHECKED
    if name == "FORMDROPDOWN":
        dd = _child(f.ff, "ddList") if f.ff is not None else None
        if dd is None:
            return ""
        entries = [_attr(e, "val") or "" for e in dd if local(e.tag) == "listEntry"]
        chosen = _child(dd, "result")
        if chosen is None:
            chosen = _child(dd, "default")
        index = uint_attr(_attr(chosen, "val")) if chosen is not None else 0
        return entries[index] if index is not None and index < len(entries) else ""
    return None


NOTE_SENTINEL = "\x00"  # where a note reference stands in a paragraph's text (XML text never holds a NUL)
_SIMPLE_INLINE = {"tab": "\t", "ptab": "\t", "noBreakHyphen": "-", "softHyphen": ""}


def _extent(el: Any) -> tuple[int, int] | None:
    """The ``wp:extent`` (cx, cy in EMU) of the ``wp:inline``/``wp:anchor`` holding a graphic."""
    for up in el.iterancestors():
        if local(up.tag) in ("inline", "anchor"):
            ext = _child(up, "extent")
            cx, cy = (uint_attr(ext.get("cx")), uint_attr(ext.get("cy"))) if ext is not None else (None, None)
            return (cx, cy) if cx is not None and cy is not None else None
    return None


_DRAWING_NAMES = frozenset({"graphicData", "pic", "imagedata", "object"})  # the names ``_drawing`` may consume


def _drawing(el: Any, name: str, inline: Inline, alt: str) -> bool:
    """Record a drawing element; True when it is consumed (not to be walked into)."""
    if name == "graphicData":
        kind = graphic_kind(el)
        if kind == "chart":
            chart = find_local(el, "chart")
            rid = r_attr(chart, "id") if chart is not None else None
            inline.drawings.append(Drawing("chart", rid, alt, size=_extent(el)))
            return True
        if kind == "diagram":
            ids = find_local(el, "relIds")
            inline.drawings.append(Drawing("diagram", r_attr(ids, "dm") if ids is not None else None, alt))
            return True
        return False
    if name == "pic":  # pic:pic (a picture, in a drawing or a group)
        nv = find_local(el, "cNvPr")
        blip = find_local(el, "blip")
        inline.drawings.append(
            Drawing(
                "picture",
                r_attr(blip, "embed") if blip is not None else None,
                alt=alt_text(nv) or alt,
                name=(nv.get("name") if nv is not None else "") or "",
            )
        )
        return True
    if name == "imagedata":  # a VML picture (w:pict)
        inline.drawings.append(Drawing("picture", r_attr(el, "id"), alt=alt))
        return True
    if name == "object":  # an embedded (OLE) object: its own content is not read
        inline.drawings.append(Drawing("object", alt=alt))
        return True
    return False


# What ``_inline`` does with an element, by its tag (decided once per tag: a document uses a few dozen)
(_TEXT, _SKIP, _NOTE_REF, _SIMPLE, _BREAK, _SYM, _MATH, _BOX, _DOCPR, _DRAW, _ALT, _OTHER, _PPR, _RUN, _FLD, _INSTR,
 _WORDART) = range(17)  # fmt: skip
_KIND_BY_NAME: dict[str, int] = {
    **dict.fromkeys(SKIP_LOCAL, _SKIP),
    "footnoteReference": _NOTE_REF,
    "endnoteReference": _NOTE_REF,
    **dict.fromkeys(_SIMPLE_INLINE, _SIMPLE),
    "br": _BREAK,
    "cr": _BREAK,
    "sym": _SYM,
    "oMath": _MATH,
    "oMathPara": _MATH,
    "txbxContent": _BOX,
    "docPr": _DOCPR,
    **dict.fromkeys(_DRAWING_NAMES, _DRAW),
    "AlternateContent": _ALT,
}
_TAG_KINDS: dict[str, int] = (
    dict.fromkeys(T_T, _TEXT)
    | dict.fromkeys(T_PPR, _PPR)
    | dict.fromkeys(T_R, _RUN)
    | dict.fromkeys(T_FLD_CHAR, _FLD)
    | dict.fromkeys(T_INSTR, _INSTR)
    | {VML_TEXTPATH: _WORDART}
)
_MAX_TAG_KINDS = 4096  # past this many distinct tags (a hostile part), kinds are computed, not remembered


def _tag_kind(tag: str) -> int:
    kind = _KIND_BY_NAME.get(local(tag), _OTHER)
    if len(_TAG_KINDS) < _MAX_TAG_KINDS:
        _TAG_KINDS[tag] = kind
    return kind


_LEAVES = frozenset({_NOTE_REF, _SIMPLE, _BREAK, _SYM, _MATH, _BOX, _WORDART})  # read by ``_leaf``, not walked


def _leaf(kind: int, el: Any, inline: Inline, out: list[str]) -> None:
    """What an element ``_inline`` does not walk into adds to the paragraph (``_LEAVES``)."""
    if kind == _SIMPLE:
        out.append(_SIMPLE_INLINE[local(el.tag)])
    elif kind == _BREAK:
        out.append("\n")  # a line, column or page break: the text on either side is not one line
    elif kind == _NOTE_REF:
        if not _on(_attr(el, "customMarkFollows")):
            inline.notes.append((local(el.tag)[:-9], _attr(el, "id") or ""))
            out.append(NOTE_SENTINEL)
    elif kind == _SYM:
        out.append(_sym(el))
    elif kind == _MATH:
        out.append(linear_text(el))
    elif kind == _BOX:
        inline.boxes.append(el)
    else:  # _WORDART
        art = (el.get("string") or "").strip()
        if art:
            inline.wordart += (art,)


def _inline(p: Any, story: _Story, styles: _Styles) -> Inline:
    """A paragraph's text as Word shows it (math as linear text; fields' results, not their instructions; no hidden
    text); its text boxes, WordArt, drawings and note references are collected. ``story`` carries the open fields
    from paragraph to paragraph."""
    out: list[str] = []
    inline = Inline()
    alt = ""
    kinds = _TAG_KINDS
    hide = story.hiding > 0  # in a field's instructions: nothing is shown
    para = styles.para_vanish(None) if styles.hides else None  # what the paragraph's style says of w:vanish
    runs = story.vanish or styles.hides  # runs may be hidden: look at their properties
    stack: list[Iterator[Any]] = [iter(p)]
    while stack:
        for el in stack[-1]:
            tag = el.tag
            if tag.__class__ is not str:
                continue
            kind = kinds.get(tag)
            if kind is None:
                kind = _tag_kind(tag)
            if kind == _TEXT:
                if not hide:
                    out.append(el.text or "")
            elif kind == _RUN:
                if not len(el):
                    continue
                if runs:
                    first = el[0]
                    rpr = first if first.tag in T_RPR else None
                    if (rpr is not None or para or styles.default_hidden) and styles.run_hidden(rpr, para):
                        hide = story.hidden_run(el)  # hidden text: only its field characters count
                        continue
                stack.append(iter(el))
                break
            elif kind == _SKIP:
                continue
            elif kind == _PPR:  # skipped as any pPr; the paragraph's own (a child of it) is its properties
                if inline.ppr is None and len(stack) == 1:
                    inline.ppr = el
                    if styles.hides:
                        para = styles.para_vanish(el)
            elif kind == _OTHER:
                if len(el):
                    stack.append(iter(el))
                    break
            elif kind == _FLD:
                shown = story.fld_char(el)
                hide = story.hiding > 0
                if shown:
                    out.append(shown)
            elif kind == _INSTR:
                story.instr(el)
            elif hide:  # nothing in a field's instructions is shown
                continue
            elif kind in _LEAVES:
                _leaf(kind, el, inline, out)
            elif kind == _DOCPR:
                alt = alt_text(el)
            elif kind == _DRAW:
                if not _drawing(el, local(tag), inline, alt) and len(el):
                    stack.append(iter(el))
                    break
            elif kind == _ALT:
                choice = _child(el, "Choice")
                if choice is not None:
                    stack.append(iter(choice))
                    break
        else:
            stack.pop()
    inline.text = "".join(out)
    return inline


def _mark_deleted(ppr: Any | None) -> bool:
    """Whether a paragraph's mark is a tracked deletion (``w:del`` or ``w:moveFrom`` in its ``w:pPr/w:rPr``)."""
    rpr = next(ppr.iterchildren(*T_RPR), None) if ppr is not None else None
    return rpr is not None and any(local(c.tag) in ("del", "moveFrom") for c in rpr)


def _on(value: str | None) -> bool:
    return value in ("1", "true", "on")


def _clean(text: str) -> str:
    return text.replace("\x00", "").strip()


def _span(tc: Any) -> tuple[int, str | None]:
    """(gridSpan, ``w:vMerge``: "restart", "continue" or None) of a cell."""
    pr = next((c for c in tc if c.tag in T_TCPR), None)  # its first child: no tag matcher built for it
    if pr is None:
        return 1, None
    span = 1
    merge = None
    for c in pr:  # in order: the last of each counts
        name = local(c.tag)
        if name == "gridSpan":
            try:
                span = max(1, min(int(_attr(c, "val") or "1"), 1000))
            except ValueError:
                span = 1
        elif name == "vMerge":
            merge = "restart" if _attr(c, "val") == "restart" else "continue"
    return span, merge


def _covered_text(tc: Any) -> bool:
    """Whether a covered cell (a vMerge continuation) holds text of its own (which Word does not show)."""
    return any((t.text or "").strip() for t in tc.iter(*T_T))


_GRID_SKIPS = frozenset({"gridBefore", "gridAfter"})


def _grid_skips(tr: Any) -> tuple[int, int]:
    """(``w:gridBefore``, ``w:gridAfter``) of a row: the grid columns it leaves out before and after its cells."""
    pr = next(tr.iterchildren(*T_TRPR), None)
    if pr is None:
        return 0, 0
    kids = first_children(pr, _GRID_SKIPS)
    return _grid_skip(kids.get("gridBefore")), _grid_skip(kids.get("gridAfter"))


def _grid_skip(el: Any | None) -> int:
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


def _table_text(rows: list[list[str | None]]) -> str:
    return "\n".join(" | ".join((c or "").replace("\n", " ") for c in r) for r in rows)


def _table_attrs(rows: list[list[str | None]]) -> dict[str, Any]:
    return {"table": {"columns": rows[0], "rows": rows[1:]}}


# ---------------------------------------------------------------------------------------------------------------
# The document: styles, numbering, the blocks it emits


class _Doc:
    """One extraction: the package, the styles and lists, the builder, and what was seen but not read."""

    def __init__(
        self,
        zf: zipfile.ZipFile,
        builder: ArtifactBuilder,
        styles: _Styles,
        numbering: Numbering,
        *,
        limits: Limits,
        budget: OutputBudget,
    ) -> None:
        self.zf = zf
        self.limits = limits
        self.builder = builder
        self.styles = styles
        self.numbering = numbering
        self.counters = ListCounters(numbering)
        self.charts: ChartCache | None = None  # made at the first chart (the chart stack is imported then)
        self.paragraphs = 0
        self.pictures = 0  # pictures placed whose pixels were not read (OCR off, refused, not a raster)
        self.ocr: PictureReader | None = None  # OCR of the pictures, made at the first one (imports Pillow)
        self.drawings: dict[str, int] = {}  # charts, diagrams, objects: each kind numbered in reading order
        self.in_cells: list[tuple[Drawing, int, int]] = []  # drawings of the table being read, with their cell
        self.cell = (0, 0)  # the top-level cell being read (row, column of the table's grid)
        self.covered = 0  # covered cells (vMerge continuations) holding text of their own, not read
        self.sections: list[Any] = []  # the body's w:sectPr, in order
        self.settings: str | None = None  # the settings part (read at the first note mark)
        self.note_rules: list[dict[str, NoteRule]] | None = None  # each section's note numbering (at the first mark)
        self.section = 0  # the body section being read (its index in sections)
        self.note_last: dict[str, tuple[int, int]] = {}  # footnote|endnote -> (section, number) of the last one
        self.marks: dict[tuple[str, str], str] = {}  # (footnote|endnote, id) -> its mark, in citation order
        self.story = _Story()  # the story being read: its open fields
        self.rels: dict[str, str] = {}  # relationship id -> member, of the part being read
        self.stack: list[tuple[int, str, str]] = []  # open headings (depth, block id, text)
        self.path: list[str] = []  # their texts: the section path of a block under them (``set_stack``)
        self.budget = budget

    # -- tables

    def table_rows(self, tbl: Any, depth: int = 0) -> list[list[str | None]]:
        """The table's rows of cell text, each as wide as its grid. A ``w:vMerge`` continuation cell under a cell
        that starts or continues a merge in the row above (the same first grid column) is covered: ``None``, its
        own content not read (Word does not draw it, and its paragraphs take no list number; they count as
        extracted, and text there is a warning). A continuation with no merge above it is ignored, as the
        standard says: the cell is read as any other."""
        if depth > 64:
            raise ExtractionError(ErrorCode.CORRUPT, "the docx file nests tables more than 64 deep")
        rows: list[list[str | None]] = []
        merging: set[int] = set()  # first grid columns of the cells of the row above that start or continue a merge
        for tr in _children_through(tbl, T_TR):
            before, after = _grid_skips(tr)
            row: list[str | None] = [None] * before
            below: set[int] = set()
            for tc in _children_through(tr, T_TC):
                span, merge = _span(tc)
                col = len(row)
                if depth == 0:
                    self.cell = (len(rows), col)
                if merge is not None and (merge == "restart" or col in merging):
                    below.add(col)
                if merge == "continue" and col in merging:
                    self.paragraphs += sum(1 for _ in tc.iter(*T_P))
                    if _covered_text(tc):
                        self.covered += 1
                    text = None
                else:
                    text = self.cell_text(tc, depth)
                row.append(text)
                row.extend([None] * (span - 1))
            row.extend([None] * after)
            rows.append(row)
            merging = below
        width = max((len(r) for r in rows), default=0)
        for r in rows:
            r.extend([None] * (width - len(r)))
        return rows

    def cell_text(self, tc: Any, depth: int) -> str:
        parts: list[str] = []
        self.cell_parts(tc, depth, parts)
        return "\n".join(parts)

    def cell_parts(self, container: Any, depth: int, parts: list[str]) -> None:
        """The text of a cell's (or a text box's in it) paragraphs and tables, in order, into ``parts``: list labels
        lead their paragraph; a text box is read in place, the way the body reads one (its paragraphs, tables and
        boxes), a story of its own; drawings (any depth) go to ``in_cells``, blocks after the table's."""
        for el, kind in _blocks_in(container):
            if kind == BLOCK_ALT_CHUNK:
                self.alt_chunk()
                continue
            if kind == BLOCK_TBL:
                for r in self.table_rows(el, depth + 1):
                    parts.append(" | ".join(c or "" for c in r))
                continue
            self.paragraphs += 1
            inline = _inline(el, self.story, self.styles)
            t = self.labelled(inline)[0]
            if t:
                parts.append(t)
            for box in inline.boxes:
                outer, self.story = self.story, _Story(next(box.iter(*T_VANISH), None) is not None)
                try:
                    self.cell_parts(box, depth, parts)
                finally:
                    self.story = outer
            parts.extend(inline.wordart)
            if inline.drawings:
                self.in_cells.extend((d, *self.cell) for d in inline.drawings)  # blocks after the table's

    # -- note marks

    def mark(self, kind: str, nid: str) -> str:
        """The mark of a footnote or endnote: numbered in citation order from the section's start value
        (``w:numStart``), again from it in a section that restarts them (``w:numRestart`` eachSect), in the
        section's note format."""
        key = (kind, nid)
        if key not in self.marks:
            if self.note_rules is None:
                self.note_rules = _note_rules(self.sections, _optional_part(self.zf, self.settings))
            section = min(self.section, len(self.note_rules) - 1)
            fmt, start, restart = self.note_rules[section].get(kind, DEFAULT_NOTE_RULES["footnote"])
            last = self.note_last.get(kind)
            n = start if last is None or (restart and last[0] != section) else last[1] + 1
            self.note_last[kind] = (section, n)
            self.marks[key] = format_number(n, fmt)
        return self.marks[key]

    def cite(self, inline: Inline) -> str:
        """A paragraph's text with each note reference as the superscript mark Word prints there."""
        if NOTE_SENTINEL not in inline.text:
            return inline.text
        pieces = inline.text.split(NOTE_SENTINEL)
        out = [pieces[0]]
        for (kind, nid), rest in zip(inline.notes, pieces[1:], strict=False):
            out.append(superscript(self.mark(kind, nid)))
            out.append(rest)
        return "".join(out)

    # -- paragraph properties

    def para_props(self, ppr: Any | None) -> tuple[int | None, tuple[str, int] | None]:
        """(heading depth or None, (numId, level) or None) of a paragraph (its ``w:pPr``, or None), its own
        properties over its style's."""
        sid = None
        own_outline = None
        own_num = None
        if ppr is not None:
            outline_el = num_el = None  # the first of each
            for c in ppr:  # one pass over the few children (not an iterchildren(tag) per name)
                name = local(c.tag)
                if name == "pStyle":  # the last one counts
                    sid = _attr(c, "val")
                elif name == "outlineLvl":
                    outline_el = c if outline_el is None else outline_el
                elif name == "numPr":
                    num_el = c if num_el is None else num_el
            own_outline = _outline_value(outline_el)  # None without an outlineLvl
            own_num = _num_pr_value(num_el)  # None without a numPr
        depth, num = self.styles.resolve(sid)
        if own_outline is not None and depth is None:
            depth = own_outline
        if own_num is not None:
            num = (own_num[0], own_num[1] if own_num[1] is not None else (num[1] if num else None))
        if num is None or num[0] == "0":
            return depth, None
        ilvl = num[1]
        if ilvl is None:
            ilvl = self.numbering.level_of_style(num[0], sid) or 0
        return depth, (num[0], ilvl)

    def numbered(self, ppr: Any | None, text: str) -> tuple[str, int | None, dict[str, Any] | None]:
        """(text with its list label in front, heading depth, attrs.list) of a paragraph (its ``w:pPr``, or None)."""
        depth, num = self.para_props(ppr)
        if num is None:
            return text, depth, None
        label = self.counters.label(num[0], num[1])  # an empty numbered paragraph shows (and takes) its number too
        info: dict[str, Any] = {"num_id": num[0], "level": num[1], "format": self.numbering.fmt(num[0], num[1])}
        if label and _clean(text):
            info["label"] = label
            text = f"{label} {_clean(text)}"
        return text, depth, info

    def labelled(self, inline: Inline) -> tuple[str, int | None, dict[str, Any] | None]:
        """``numbered`` of a paragraph's cited text, cleaned."""
        if inline.ppr is None and not inline.notes:  # no properties, no note marks: its text as it is
            return _clean(inline.text), None, None
        if not inline.boxes and not inline.drawings and not _clean(inline.text) and _mark_deleted(inline.ppr):
            return "", None, None  # a deleted paragraph (its mark and all it shows): gone, so it takes no number
        text, depth, info = self.numbered(inline.ppr, self.cite(inline))
        return _clean(text), depth, info

    # -- blocks

    def add(self, kind: str, text: str, attrs: dict[str, Any] | None, *, depth: int | None = None) -> str:
        stack = self.stack
        return self.builder.add_block(
            kind,
            text,
            parent=stack[-1][1] if stack else None,
            section_path=self.path,  # the builder copies it
            depth=depth,
            attrs=attrs,
            locator={},  # make_locator() with no field: docx has no locator
        )

    def set_stack(self, stack: list[tuple[int, str, str]]) -> None:
        """The open headings, and the section path they make."""
        self.stack = stack
        self.path = [t for _, _, t in stack]

    def heading(self, text: str, depth: int, attrs: dict[str, Any] | None) -> None:
        stack = self.stack
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1] if stack else None
        path = [t for _, _, t in stack] + [text]
        bid = self.builder.add_block("heading", text, depth=depth, parent=parent, section_path=path, attrs=attrs)
        stack.append((depth, bid, text))
        self.path = path

    def paragraph(self, p: Any, base: dict[str, Any] | None) -> None:
        """A body, header, footer or note paragraph: its block, then its text boxes and drawings."""
        self.paragraphs += 1
        inline = _inline(p, self.story, self.styles)
        text, depth, info = self.labelled(inline)
        if text:
            attrs = ({**base, "list": info} if base else {"list": info}) if info else base or None
            if depth is not None and base is None:
                self.heading(text, depth, attrs)
            elif info is not None:
                self.add("list", text, attrs, depth=info["level"])
            else:
                self.add("paragraph", text, attrs)
        for box in inline.boxes:
            self.container(box, {**(base or {}), "textbox": True})
        for art in inline.wordart:
            self.add("paragraph", art, {**(base or {}), "wordart": True})
        for d in inline.drawings:
            self.drawing(d, base)
        if (
            base is None
            and len(self.sections) > 1
            and inline.ppr is not None
            and next(inline.ppr.iterchildren(*T_SECT_PR), None) is not None  # the paragraph ends its section
        ):
            self.section += 1

    def table(self, tbl: Any, base: dict[str, Any] | None) -> None:
        """The table's block, then each drawing in its cells (a picture's alt text, a chart, a diagram) as a block
        of its own, as a paragraph's drawings follow it, with ``attrs.cell`` = ``[row, column]`` of the grid
        (0-based; row 0 is ``attrs.table.columns``)."""
        self.in_cells = []
        rows = self.table_rows(tbl)
        found, self.in_cells = self.in_cells, []
        if rows and any(any(c for c in r) for r in rows):
            self.add("paragraph", _table_text(rows), {**(base or {}), **_table_attrs(rows)})
        for d, row, col in found:
            self.drawing(d, {**(base or {}), "cell": [row, col]})

    def container(self, container: Any, base: dict[str, Any] | None) -> bool:
        """The blocks of a body, header, footer, note or text box (a story: fields end in it). True when the output
        budget cut it."""
        outer, self.story = self.story, _Story(next(container.iter(*T_VANISH), None) is not None)
        try:
            for el, kind in _blocks_in(container):
                if self.budget.over(self.builder.text_chars):
                    return True
                if kind == BLOCK_P:
                    self.paragraph(el, base)
                elif kind == BLOCK_TBL:
                    self.table(el, base)
                else:
                    self.alt_chunk()
            return False
        finally:
            self.story = outer

    def alt_chunk(self) -> None:
        n = self.count_drawing(Drawing("imported document"))
        self.builder.fail(f"imported document {n}", "an imported document (altChunk) is not read")

    # -- drawings

    def count_drawing(self, d: Drawing) -> int:
        if d.kind == "picture":
            return 0
        self.drawings[d.kind] = self.drawings.get(d.kind, 0) + 1
        return self.drawings[d.kind]

    def drawing(self, d: Drawing, base: dict[str, Any] | None) -> None:
        n = self.count_drawing(d)
        if d.kind == "picture":
            image = {"alt": d.alt, **({"name": d.name} if d.name else {})}
            self.add("paragraph", "", {**(base or {}), "image": image})
            if self.ocr is None:
                from extract_fn.ocr.pictures import PictureReader

                self.ocr = PictureReader(self.zf, self.limits)
            ocr_blocks, read = self.ocr.picture(self.rels.get(d.rid or ""))
            for ocr_block in ocr_blocks:
                self.add("paragraph", ocr_block.text, {**(base or {}), **ocr_block.attrs})
            if not read:
                self.pictures += 1
            return
        unit = f"{d.kind} {n}"
        if d.kind == "object":
            self.builder.fail(f"embedded object {n}", "an embedded (OLE) object's content is not read")
            return
        target = self.rels.get(d.rid or "")
        if target is None or not has_member(self.zf, target):
            self.builder.fail(unit, f"the {d.kind}'s part is missing from the package")
            return
        if d.kind == "chart":
            # a file without a chart never imports the chart stack (workers import it at start: DEFERRED_IMPORTS)
            from extract_fn.formats.ooxml_chart import ChartCache, ChartUnreadable

            if self.charts is None:
                self.charts = ChartCache()
            try:
                chart = self.charts.read(target, lambda part: parse_part(self.zf, part, KIND))
            except ChartUnreadable as exc:
                self.builder.fail(unit, str(exc))
                return
            if d.size:
                chart = chart.sized(*d.size)
            self.add("paragraph", chart.text(), {**(base or {}), **chart.attrs()})
        else:
            try:
                texts = diagram_texts(parse_part(self.zf, target, KIND))
            except DtdRefused:
                raise
            except ExtractionError as exc:  # a broken diagram part is that diagram's failure, not the document's
                if exc.code == ErrorCode.RESOURCE_LIMIT:
                    raise
                self.builder.fail(unit, exc.message)
                return
            if texts:
                self.add("paragraph", "\n".join(texts), {**(base or {}), "diagram": True})


# ---------------------------------------------------------------------------------------------------------------
# Entry point


def _body(ctx: FormatContext) -> dict[str, Any]:
    return with_package(ctx.data, KIND, lambda zf: _extract(zf, ctx.request), ctx.limits)


extract = format_module(_body)


def _optional_part(zf: zipfile.ZipFile, name: str | None) -> Any | None:
    if not name or not has_member(zf, name):
        return None
    return parse_part(zf, name, KIND)


def _main(zf: zipfile.ZipFile) -> tuple[str, Any, Any]:
    """(part name, root, body) of the main document part."""
    main = main_part(zf, KIND, "word/document.xml")
    root = parse_part(zf, main, KIND)
    body = next((c for c in root if local(c.tag) == "body"), None)
    if local(root.tag) != "document" or body is None:
        raise ExtractionError(ErrorCode.CORRUPT, f"part {main} of the docx file is not a WordprocessingML document")
    return main, root, body


def _extract(zf: zipfile.ZipFile, request: ExtractRequest) -> dict[str, Any]:
    main, root, body = _main(zf)
    rels = read_rels(zf, main, KIND)
    by_type: dict[str, list[str]] = {}
    for _rid, rtype, target in rels:
        by_type.setdefault(rtype, []).append(target)
    styles = _Styles(_optional_part(zf, next(iter(by_type.get("styles", ())), None)))
    numbering = Numbering(_optional_part(zf, next(iter(by_type.get("numbering", ())), None)), _attr, styles.style_num)
    builder = ArtifactBuilder(
        KIND, parser=PARSER, parser_version=PARSER_VERSION, unit=UNIT, options=request.options(), measure_blocks=True
    )
    doc = _Doc(zf, builder, styles, numbering, limits=request.limits, budget=output_budget(request, BudgetKind.PAGED))
    doc.rels = {rid: target for rid, _t, target in rels}
    doc.sections = _sections(root)
    doc.settings = next(iter(by_type.get("settings", ())), None)

    cut = doc.container(body, None)
    doc.set_stack([])
    if not cut:
        cut = _headers_footers(doc, root, by_type)
    if not cut:
        cut = _notes(doc, root, by_type)
    return _finish(doc, root, cut)


def _part_rels(doc: _Doc, part: str) -> dict[str, str]:
    return {rid: target for rid, _t, target in read_rels(doc.zf, part, KIND)}


_HDR_TYPES = frozenset({"default", "first", "even"})  # w:type's values (ST_HdrFtr)


def _headers_footers(doc: _Doc, root: Any, by_type: dict[str, list[str]]) -> bool:
    """Headers and footers Word shows, once per part, in the order the sections reference them (then any part no
    section references). A section shows its default header and footer; its first-page ones only with
    ``w:titlePg``, the even-page ones only with ``w:evenAndOddHeaders`` in ``settings.xml``; a type a section does
    not reference is the previous section's. A part only an unshown reference names is not read (Word never shows
    it)."""
    seen: set[str] = set()
    refs: list[tuple[str, str, str]] = []  # (part kind, header type, member)
    main_rels = dict(doc.rels)
    even_odd: bool | None = None  # settings.xml's w:evenAndOddHeaders, read at the first even reference
    current: dict[tuple[str, str], str] = {}  # (part kind, type) -> the member the section in reading order has
    referenced: set[str] = set()
    for sect in doc.sections:
        own: list[tuple[str, str]] = []
        title_pg = False
        for ref in sect:
            name = local(ref.tag)
            if name in ("headerReference", "footerReference"):
                target = main_rels.get(r_attr(ref, "id") or "")
                htype = _attr(ref, "type") or "default"
                if target:
                    referenced.add(target)
                if target and htype in _HDR_TYPES:  # another type Word never shows (and keying on it is quadratic)
                    key = (name[:6], htype)
                    current[key] = target
                    own.append(key)
                    if key[1] == "even" and even_odd is None:
                        settings = _optional_part(doc.zf, doc.settings)
                        even_odd = settings is not None and any(
                            _toggle(c) for c in settings if local(c.tag) == "evenAndOddHeaders"
                        )
            elif name == "titlePg":
                title_pg = _toggle(ref)
        shown = {"default"} | ({"first"} if title_pg else set()) | ({"even"} if even_odd else set())
        for key in own + list(current):  # its own in order, then those it inherits (in the order first seen)
            target = current[key]
            if key[1] in shown and target not in seen:
                seen.add(target)
                refs.append((key[0], key[1], target))
    seen |= referenced  # referenced by a section that does not show it: not read as an unreferenced part either
    for rtype in ("header", "footer"):
        for target in by_type.get(rtype, []):
            if target not in seen:
                seen.add(target)
                refs.append((rtype, "default", target))
    for part_kind, htype, target in refs:
        part_root = _optional_part(doc.zf, target)
        if part_root is None:
            continue
        doc.rels = _part_rels(doc, target)
        if doc.container(part_root, {"part": part_kind, "kind": htype}):
            return True
    return False


NOTE_PARTS = (("footnotes", "footnote"), ("endnotes", "endnote"), ("comments", "comment"))
NoteRule = tuple[str, int, bool]  # a section's note numbering: (w:numFmt, w:numStart, restarts in each section)
DEFAULT_NOTE_RULES: dict[str, NoteRule] = {"footnote": ("decimal", 1, False), "endnote": ("lowerRoman", 1, False)}


def _note_rule(pr: Any | None, rule: NoteRule) -> NoteRule:
    """A ``w:footnotePr``/``w:endnotePr`` over ``rule`` (what it does not say stays)."""
    if pr is None:
        return rule
    fmt, start, restart = rule
    kids = first_children(pr, _NOTE_PR_NAMES)
    if "numFmt" in kids:
        fmt = _attr(kids["numFmt"], "val") or fmt
    if "numStart" in kids:
        given = uint_attr(_attr(kids["numStart"], "val"))
        start = min(given, 1 << 31) if given is not None else start
    if "numRestart" in kids:
        restart = _attr(kids["numRestart"], "val") == "eachSect"  # eachPage: pages are not known, read as continuous
    return fmt, start, restart


_NOTE_PR_NAMES = frozenset({"numFmt", "numStart", "numRestart"})


def _sections(root: Any) -> list[Any]:
    """The body's section properties in order (a paragraph's ``w:sectPr`` ends its section, the body's the last;
    not a tracked change's former properties)."""
    out = []
    for sect in root.iter(*T_SECT_PR):
        up = sect.getparent()
        if up is not None and local(up.tag) in ("pPr", "body"):
            out.append(sect)
    return out


def _note_rules(sections: list[Any], settings: Any | None) -> list[dict[str, NoteRule]]:
    """Each body section's note numbering, in order: its ``w:sectPr``'s ``w:footnotePr``/``w:endnotePr`` over the
    document's (``settings.xml``), over Word's defaults (footnotes 1, 2, ...; endnotes i, ii, ...)."""
    doc = dict(DEFAULT_NOTE_RULES)
    if settings is not None:
        for kind in DEFAULT_NOTE_RULES:
            doc[kind] = _note_rule(_child(settings, f"{kind}Pr"), doc[kind])
    rules = [{kind: _note_rule(_child(s, f"{kind}Pr"), doc[kind]) for kind in DEFAULT_NOTE_RULES} for s in sections]
    return rules or [doc]


def _notes(doc: _Doc, root: Any, by_type: dict[str, list[str]]) -> bool:
    """Footnotes and endnotes (each first block led by its mark), then comments (with their author)."""
    marks = doc.marks
    for rtype, item in NOTE_PARTS:
        for target in by_type.get(rtype, []):
            part_root = _optional_part(doc.zf, target)
            if part_root is None:
                continue
            doc.rels = _part_rels(doc, target)
            for note in part_root:
                if local(note.tag) != item or _attr(note, "type") in (
                    "separator",
                    "continuationSeparator",
                    "continuationNotice",
                ):
                    continue
                if _note(doc, note, item, marks):
                    return True
    return False


def _note(doc: _Doc, note: Any, item: str, marks: dict[tuple[str, str], str]) -> bool:
    nid = _attr(note, "id") or ""
    attrs: dict[str, Any] = {"part": item, "note_id": nid}
    if item == "comment":
        attrs = {"part": "comment", "comment_id": nid}
        author = _attr(note, "author")
        if author:
            attrs["author"] = author
    first = len(doc.builder.blocks)
    cut = doc.container(note, attrs)
    mark = marks.get((item, nid))
    if mark and len(doc.builder.blocks) > first:
        block = doc.builder.blocks[first]
        block["text"] = f"{mark} {block['text']}" if block["text"] else block["text"]
        block.setdefault("attrs", {})["mark"] = mark
    return cut


def _finish(doc: _Doc, root: Any, cut: bool) -> dict[str, Any]:
    builder = doc.builder
    extracted = doc.paragraphs
    total = extracted  # every paragraph of the parts read was visited
    if cut:
        total = max(sum(1 for _ in root.iter(*T_P)), extracted + 1)
        builder.warn("the artifact reached its output size limit; the rest of the document was not extracted")
        builder.fail(f"paragraphs {extracted + 1}-{total}", CUT_REASON)
    if doc.covered:
        builder.warn(
            f"{doc.covered} vertically merged table cell(s) covered by the cell above hold text of their own, "
            "which Word does not show; it was not read"
        )
    report_pictures(builder, doc.pictures)
    if doc.ocr is not None:
        doc.ocr.finish(builder)
    builder.coverage(total=total, extracted=extracted)
    return builder.build()
