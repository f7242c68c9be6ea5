"""PDF: text in reading order, headings, tables, per page (coverage unit "pages"), through pdfium (pypdfium2).

How a page is read
------------------
pdfium's text page gives the characters in content order with its own line breaks (generated ``\\r\\n``) and
hyphenation marks (U+FFFE). One ``FPDFText_GetText`` call gives the page's text; per line a handful of calls give its
geometry (``FPDFText_CountRects``/``GetRect``: one rectangle per text object and visual line), baseline, effective
font size (``GetFontSize`` times the text matrix scale), weight (font name / ``GetFontWeight`` / force-bold flag) and
direction (the text matrix). Per-character calls are made only for lines whose rectangles sit side by side with a wide
gap (table cells, columns pdfium ran together, several visual lines pdfium ran together) and for lines inside a
table, so a page costs a few calls per line, not per character. Measured on the benchmark's doc200.pdf: per-character
pdfium calls made text extraction about 8x slower than this, and pypdf's plain text alone took about 3.5x pdfium's
(``benchmarks/bench_office_pdf.py``); pypdf is not used (pdfium also reads the outline).

Each line is cut at wide gaps into segments. Segments are grouped by the direction their text runs in (a "frame":
upright, rotated 90/180/270 degrees, or vertical CJK) and laid out in their own frame's coordinates:

1. ruled tables: horizontal and vertical ruling lines from the page's path objects (form XObjects included) are
   merged into grids; the text inside a grid becomes the table's cells (a line crossing a grid line is cut there).
   A grid one of whose lines would cut a word (letters side by side on both sides of it) is a figure drawn over
   text, not a table: its text stays paragraphs. Past a bound (path objects, path segments, rules, cells) the
   detection gives up on the page: a warning says why and ``coverage.lost`` gets ``tables``;
2. borderless tables: three or more consecutive rows of short segments whose x-ranges line up in two or more columns,
   unless a line of prose in them goes on in the line just above or below (a paragraph beside a figure's labels);
3. columns: a gutter is an x-range (almost) no narrow segment covers, with a fair share of lines on both sides;
   segments crossing a gutter (titles, wide figures' captions) cut the page into bands, and each band is read
   column by column, top to bottom;
4. paragraphs: lines of a column are joined while their spacing stays at the column's usual line pitch, the font
   size and weight stay the same, and no first-line indent, bullet or short sentence end starts a new one.

Text fixes (``pdf_text``): a word pdfium marks as broken at a line-end hyphen is joined again; a spacing accent
next to a letter is composed with it (TeX's "na¨ıve" is "naïve"); a space goes between a left-to-right and a
right-to-left letter that touch (pdfium leaves it out in Arabic and Hebrew lines); characters whose font maps them to
no text (pdfium gives their raw glyph codes) are left out, and the page's warning counts them.

Headings come from the outline (bookmarks) where the file has one whose titles are found on their pages (the
outline's level is the depth); otherwise from font size (sizes above the body size, largest = depth 1) and weight
(bold lines at body size = the deepest level), never from text that repeats on many pages (running heads).

Blocks: ``heading`` (depth, section path including itself), ``paragraph`` and ``list`` (bullet or numbered items),
each with ``page_start``/``page_end``, the section path of the headings above and ``parent`` = the enclosing
heading. Text that runs in another direction than the page as displayed carries ``attrs.orientation``: the
clockwise angle (90, 180, 270, or another whole number of degrees) or ``"vertical"`` for top-to-bottom CJK text.

Tables: each becomes a ``tables`` entry named ``page P table K`` (columns from its first row, ``number`` where every
value is numeric — integers as numbers, decimals as their exact digits — else ``string``; an empty cell is null)
and, as the tabular formats do, one ``paragraph`` block per data row (the header is row 1, so data rows count from
2) whose text is ``name: value | name: value`` over its non-empty cells, with ``attrs.table_id`` and
``row_start``/``row_end`` = that row's number. The text of a table is in its row blocks only, at the table's place
in the reading order.

Coverage: a page is extracted when its text was read (a blank page counts as extracted). A page without a text
layer that holds an image is read by OCR (``extract_fn.ocr``: its paragraphs carry ``attrs.ocr``) and is then
extracted; one OCR could not read (off, past the file's OCR cap or budget, nothing found) is failed with that reason
and ``coverage.lost`` gets ``ocr``; a page pdfium cannot load is failed as damaged; a page whose form XObjects draw
one another past ``pdf_max_form_drawings`` is failed without being loaded (``pdf_forms``), and one whose text
objects would cost pdfium's text reader more than ``pdf_max_text_order_steps`` without being read
(``pdf_text_order``); pages past the output budget are failed as cut.
"""

from __future__ import annotations

import bisect
import ctypes
import math
import re
import time
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from itertools import islice, pairwise
from typing import TYPE_CHECKING, Any, NamedTuple

import pypdfium2 as pdfium
import pypdfium2.raw as R

from extract_fn.formats import pdf_calls as C
from extract_fn.formats import pdf_text, pdf_text_order
from extract_fn.formats.frame import FormatContext, format_module
from extract_fn.formats.output_budget import BudgetKind, OutputBudget
from extract_fn.formats.pdf_forms import check_pages, forms_may_multiply
from extract_fn.formats.pdf_layers import address, hidden_layer_names, hidden_text_objects
from extract_fn.formats.pdf_matrix import apply as _apply
from extract_fn.formats.pdf_matrix import mul as _mul
from extract_fn.formats.pdf_page_count import declared_page_count
from extract_fn.formats.pdf_streams import check_streams
from extract_fn.limits import Limits
from extract_fn.ocr import NOTHING_FOUND
from shared.artifact_builder import ArtifactBuilder, make_locator
from shared.contract import LOST_ATTACHMENTS, LOST_OCR, LOST_TABLES, ErrorCode, ExtractionError

if TYPE_CHECKING:
    from extract_fn.ocr.blocks import OcrOutcome

PARSER = "loom-pdf"
PARSER_VERSION = f"1+pypdfium2-{pdfium.PYPDFIUM_INFO}"
UNIT = "pages"

SCANNED_REASON = "no text layer (scanned image); OCR not available"
DRAWING_REASON = "no text layer (vector drawing); OCR not available"

DAMAGED_REASON = "the page cannot be read (damaged page)"
CUT_REASON = "not extracted: the artifact reached its output size limit"
UNREACHED_FORMS_REASON = (
    "text inside form XObjects drawn more than 40 forms deep is not read (the depth pdfium follows); the rest of "
    "the page is"
)


def _text_order_reason(limit: int) -> str:
    return (
        f"not read: ordering its text objects would take the text reader more than {limit:,} steps (many text "
        "objects drawn out of order on one line), past this service's limit"
    )


def _forms_reason(limit: int) -> str:
    return (
        f"not read: its form XObjects (drawings that draw other drawings) would be drawn more than {limit:,} times, "
        "nested or in a loop, past this service's limit"
    )


MAX_RULE_PAIRS = 400_000  # horizontal x vertical rules past which grids are not looked for (the pairing is quadratic)

# Time spent in table detection (ruling lines, grids, aligned text) in this process, for the benchmark.
TABLE_STATS: dict[str, float] = {"seconds": 0.0, "tables": 0.0}

_BULLET_RE = re.compile(r"^(?:[•◦▪▫●○■□‣⁃∙·\-–—*►▶✓]\s|\(?\d{1,3}[.)]\s|\(?[a-zA-Z][.)]\s|[ivxIVX]{1,5}[.)]\s)")
_NUMERIC_RE = re.compile(r"^[-+−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$")
_WS_RE = re.compile(r"\s+")
_WORD_RE = re.compile(r"\w+")
_LINE_RE = re.compile(r"[^\r\n]+")
_BOLD_NAME_RE = re.compile(r"bold|black|heavy|semibold|demi|,b\b|-b\b|extrab", re.IGNORECASE)


# ---------------------------------------------------------------------------------------------------------------
# Data


@dataclass(slots=True)
class Seg:
    """A run of text on one line of one frame (coordinates in the frame, y up)."""

    text: str
    x0: float
    y0: float
    x1: float
    y1: float
    base0: float  # baseline of its first visual line
    base1: float  # baseline of its last visual line (a line pdfium joined across a hyphen spans two)
    size: float
    bold: bool
    orient: int | str  # display orientation: clockwise degrees, or "vertical"
    frame: int  # frame key: the text's direction in user space, counter-clockwise degrees (-90: vertical)
    cs: int = 0  # char range on the text page (for cutting at table grid lines)
    ce: int = 0
    xs: float = 0.0  # where its first visual line starts, and its last one ends
    xe: float = 0.0
    table: TableItem | None = None  # set on the pseudo-segment that stands for a table in the layout
    hyph: bool = False  # it ends in a hyphen pdfium marked as a line-end break (the word goes on on the next line)


@dataclass(slots=True)
class Row:
    text: str
    x0: float  # where the row's first visual line starts
    x1: float  # where its last visual line ends
    base0: float
    base1: float
    size: float
    bold: bool
    orient: int | str
    hyph: bool = False  # it ends in a word broken at a line-end hyphen


@dataclass(slots=True)
class Para:
    rows: list[Row]
    kind: str = "paragraph"  # or "list"

    @property
    def text(self) -> str:
        """The rows joined with spaces; a word broken at a line-end hyphen joined again ("lan-" "guages"), its hyphen
        kept where it is part of the word (``_keeps_hyphen``: "state-of-the-" "art")."""
        if not any(r.hyph for r in self.rows[:-1]):
            return " ".join(r.text for r in self.rows)
        parts = []
        for r, after in zip(self.rows, [*self.rows[1:], None], strict=True):
            parts.append(r.text)
            if not r.hyph:
                parts.append(" ")
            elif after is not None and _keeps_hyphen(r.text, after.text):
                parts.append("-")
            else:
                parts.append("")
        return "".join(parts[:-1])

    @property
    def size(self) -> float:
        return max(r.size for r in self.rows)

    @property
    def bold(self) -> bool:
        return all(r.bold for r in self.rows)

    @property
    def orient(self) -> int | str:
        return self.rows[0].orient


def _keeps_hyphen(before: str, after: str) -> bool:
    """Whether a hyphen at a line's end belongs to the word it breaks: the word has a hyphen already, between
    letters (a compound, "state-of-the-" "art"; not a link's "%20-%20PK-"), or the next line goes on with a digit
    ("COVID-" "19": hyphenation does not break before one). A capital after it is no sign: "Trace-" "Monkey" is
    one word broken. Nor can a compound of two words be told from one word broken ("self-" "employed")."""
    word = before.rsplit(" ", 1)[-1]
    return ("-" in word and word.rsplit("-", 1)[-1].isalpha()) or after[:1].isdigit()


@dataclass(slots=True)
class TableItem:
    cells: list[list[str | None]]
    x0: float
    y0: float
    x1: float
    y1: float
    orient: int | str
    ruled: bool


@dataclass(slots=True)
class PageResult:
    number: int
    items: list[Para | TableItem] = field(default_factory=list)
    status: str = "ok"  # ok | plain (read without layout) | scanned | drawing | damaged | skipped | cut
    tables_abandoned: list[str] = field(default_factory=list)  # why ruled-table detection gave up on the page
    unmapped: int = 0  # characters left out: their font maps them to no text
    ocr: OcrOutcome | None = None  # a scanned page's OCR (None: OCR is off)
    reason: str = ""  # why a page not read ("skipped") is failed
    unreached_forms: bool = False  # text in forms drawn only deeper than pdfium reads (pdf_forms)
    attached: int = 0  # file attachment annotations on the page (files of their own)
    annotations_over: int = 0  # past this many annotations (pdf_max_annotations) none was drawn in, nor read


# ---------------------------------------------------------------------------------------------------------------
# Entry point


def _body(ctx: FormatContext) -> dict[str, Any]:
    data, request, limits = ctx.data, ctx.request, ctx.limits
    problem = check_streams(
        data,
        max_stream_bytes=limits.pdf_max_stream_bytes,
        max_total_bytes=limits.pdf_max_inflated_bytes,
        max_text_operators=limits.pdf_max_text_operators,
        max_ratio=limits.pdf_max_stream_ratio,
        ratio_floor=limits.pdf_stream_ratio_floor,
    )
    if problem is not None:
        raise ExtractionError(ErrorCode.RESOURCE_LIMIT, problem.message)
    declared = declared_page_count(data)  # pdfium's own count, without its parse of the page tree
    if declared is not None and declared > limits.pdf_max_pages:
        raise _too_many_pages(declared, limits.pdf_max_pages)
    pdf = _open(data)
    try:
        n_pages = len(pdf)
        if n_pages > limits.pdf_max_pages:
            raise _too_many_pages(n_pages, limits.pdf_max_pages)
        form_pages = check_pages(data, limits.pdf_max_form_drawings) if forms_may_multiply(data) else None
        hidden_layers = hidden_layer_names(data)  # None for a file whose layers are all shown (most)
        builder = ArtifactBuilder(
            "pdf",
            parser=PARSER,
            parser_version=PARSER_VERSION,
            unit=UNIT,
            options=request.options(),
            measure_blocks=True,
        )
        builder.attrs["pages"] = n_pages
        outline = _read_outline(pdf, n_pages, limits.pdf_max_outline_entries)
        if outline:
            builder.attrs["outline"] = True
        budget = ctx.output_budget(BudgetKind.PAGED)
        budget.charge(2048)  # the pages read so far, estimated before any block is made
        pages: list[PageResult] = []
        ocr = _OcrReader(limits)
        for index in range(n_pages):
            if budget.over(budget.used):
                pages.append(PageResult(index + 1, status="cut"))
                continue
            if form_pages and index in form_pages.over:
                pages.append(
                    PageResult(index + 1, status="skipped", reason=_forms_reason(limits.pdf_max_form_drawings))
                )
                continue
            result = _read_page(pdf, index, limits, ocr, hidden_layers)
            result.unreached_forms = bool(form_pages and index in form_pages.unreached)
            budget.charge(_estimate(result))
            pages.append(result)
        _emit(builder, pages, outline, budget)
        _attachments(builder, R.FPDFDoc_GetAttachmentCount(pdf.raw) + sum(p.attached for p in pages))
        return builder.build()
    finally:
        pdf.close()


extract = format_module(_body)


def _attachments(builder: ArtifactBuilder, count: int) -> None:
    """Embedded files (the document's, a portfolio's, file attachment annotations') are files of their own, not
    read here: ``coverage.lost`` says so, and a warning counts them."""
    if count > 0:
        builder.lose(LOST_ATTACHMENTS)
        builder.warn(
            f"the PDF carries {count:,} embedded file{'' if count == 1 else 's'} (attachments, or a portfolio's "
            "documents), not read here: send each as a file of its own"
        )


def _annotations_reason(limit: int) -> str:
    return (
        f"not read: the page has more than {limit:,} annotations, past this service's limit for drawing them into "
        "the page (their form values, notes and stamps); the page's own text is read"
    )


def _too_many_pages(n_pages: int, limit: int) -> ExtractionError:
    return ExtractionError(
        ErrorCode.RESOURCE_LIMIT,
        f"the PDF lists {n_pages:,} pages, over this service's limit of {limit:,} pages per file; split it into "
        "smaller files",
    )


class _OcrReader:
    """OCR of a file's scanned pages, made ready on the first one (the engine loads only in a worker that needs it)."""

    def __init__(self, limits: Any) -> None:
        self.limits = limits
        self.allowance: Any = None

        self.on: bool | None = None

    def _ready(self) -> bool:
        from extract_fn.ocr import config

        if self.on is None:
            self.on = config.enabled()
            self.allowance = config.Allowance.for_file()
        return self.on

    def scanned(self, page: pdfium.PdfPage, *, pictures: bool = True) -> OcrOutcome | None:
        """A page without a text layer, read whole (None: OCR is off); ``pictures``: it draws images (else vector
        paths only, which need no picture large enough to hold text)."""
        from extract_fn.ocr import pdf_pages

        if not self._ready():
            return None
        return pdf_pages.read_page(page, self.allowance, self.limits, pictures=pictures)

    def regions(self, page: pdfium.PdfPage, text: str, objects: PageObjects) -> OcrOutcome | None:
        """The large images of a page with a text layer: the paragraphs of text the layer lacks."""
        if not objects.images() or not self._ready():
            return None  # (a page without images does not load the OCR modules and engine)
        from extract_fn.ocr import pdf_pages

        return pdf_pages.read_regions(page, self.allowance, self.limits, text, images=objects.images)


def _open(data: bytes) -> pdfium.PdfDocument:
    if not data:
        raise ExtractionError(ErrorCode.CORRUPT, "the PDF file is empty (0 bytes)")
    try:
        return pdfium.PdfDocument(data)
    except pdfium.PdfiumError as exc:
        code = getattr(exc, "err_code", None)
        if code == R.FPDF_ERR_PASSWORD:
            raise ExtractionError(
                ErrorCode.CORRUPT,
                "the PDF is encrypted and needs a password to open; remove the password (or send an unprotected "
                "copy) and send it again",
            ) from None
        if code == R.FPDF_ERR_SECURITY:
            raise ExtractionError(
                ErrorCode.CORRUPT,
                "the PDF is encrypted with a security handler that cannot be opened (password or unsupported "
                "encryption); send an unprotected copy",
            ) from None
        raise ExtractionError(
            ErrorCode.CORRUPT, "the PDF cannot be read: the file is damaged or is not a PDF (no readable structure)"
        ) from None


# ---------------------------------------------------------------------------------------------------------------
# Outline


def _read_outline(pdf: pdfium.PdfDocument, n_pages: int, max_entries: int) -> list[tuple[int, str, int]]:
    """(level, title, page index) of each bookmark that points at a page."""
    out: list[tuple[int, str, int]] = []
    try:
        for bm in islice(pdf.get_toc(max_depth=16), max_entries):
            title = _WS_RE.sub(" ", bm.get_title()).strip()
            if not title:
                continue
            index: int | None = None
            dest = bm.get_dest()
            if dest is not None:
                index = dest.get_index()
            else:
                action = R.FPDFBookmark_GetAction(bm)
                if action and R.FPDFAction_GetType(action) == R.PDFACTION_GOTO:
                    raw_dest = R.FPDFAction_GetDest(pdf, action)
                    if raw_dest:
                        val = R.FPDFDest_GetDestPageIndex(pdf, raw_dest)
                        index = val if val >= 0 else None
            if index is not None and 0 <= index < n_pages:
                out.append((bm.level, title, index))
    except (pdfium.PdfiumError, ValueError, UnicodeDecodeError, RecursionError):
        return out
    return out


# ---------------------------------------------------------------------------------------------------------------
# One page


def _read_page(
    pdf: pdfium.PdfDocument,
    index: int,
    limits: Limits,
    ocr: _OcrReader | None = None,
    hidden_layers: frozenset[str] | None = None,
) -> PageResult:
    result = PageResult(index + 1)
    try:
        page, flattened, result.attached = _with_annotations(pdf, index, pdf[index], limits.pdf_max_annotations)
        result.annotations_over = limits.pdf_max_annotations if flattened is None else 0
    except (pdfium.PdfiumError, ValueError, OSError):
        result.status = "damaged"
        return result
    textpage = None
    try:
        limit = limits.pdf_max_text_order_steps
        if pdf_text_order.over_limit(page.raw, limit, rotation=page.get_rotation()):
            result.status, result.reason = "skipped", _text_order_reason(limit)
            return result
        try:
            textpage = page.get_textpage()
        except (pdfium.PdfiumError, ValueError, OSError):
            result.status = "damaged"
            return result
        raw = textpage.raw
        n = R.FPDFText_CountChars(raw)
        text = _page_text(raw, n) if n > 0 else ""
        result.unmapped = text.count("\x00")
        if hidden_layers:
            text = _without_hidden_layers(page.raw, raw, text, hidden_layers, limits.pdf_max_form_depth)
        if not text.strip():
            drawn = _drawn(page.raw, limits.pdf_max_form_depth)
            if drawn is not None:
                result.status = drawn
                result.ocr = ocr.scanned(page, pictures=drawn == "scanned") if ocr is not None else None
            return result
        rotation = page.get_rotation() % 360
        objects = PageObjects(page.raw, limits)
        try:
            segs = _on_page(_segments(raw, text, rotation), page.get_bbox())
            if flattened:
                segs = _without_overprints(segs)
            if segs:
                result.items = _layout_page(
                    objects, raw, segs, rotation, limits, abandoned=result.tables_abandoned, text=text
                )
        except (ValueError, OverflowError, ZeroDivisionError, IndexError):
            # geometry pdfium reports for a broken page (NaN or infinite positions...): keep its text, in
            # pdfium's order, one paragraph per line
            result.items = [
                Para([Row(t, 0.0, 0.0, 0.0, 0.0, 0.0, False, 0)]) for t in map(_clean, text.splitlines()) if t
            ]
            result.status = "plain"
        if ocr is not None:
            result.ocr = ocr.regions(page, text, objects)
        return result
    finally:
        if textpage is not None:
            textpage.close()
        page.close()


def _with_annotations(
    pdf: pdfium.PdfDocument, index: int, page: pdfium.PdfPage, limit: int
) -> tuple[pdfium.PdfPage, bool | None, int]:
    """``page`` with the annotations a viewer shows drawn into its content, reloaded (and True): a filled form's
    values, a FreeText note, a stamp (their appearance streams; pdfium's ``FLAT_NORMALDISPLAY`` leaves out the
    hidden, the no-view and pop-ups). Their text is then read in place, in the page's layout, like the rest. Only in
    memory: the file is not changed. ``check_pages`` counts the appearance streams' form drawings with the page's.
    Last, how many of its annotations hold a file (files of their own). None instead of the flag: the page has more
    than ``limit`` annotations (``pdf_max_annotations``; pdfium's flattening grows with their square), not drawn in."""
    count = R.FPDFPage_GetAnnotCount(page.raw)
    if count <= 0:
        return page, False, 0
    if count > limit:
        return page, None, 0
    attached = 0
    for k in range(count):
        annotation = R.FPDFPage_GetAnnot(page.raw, k)
        if annotation:
            attached += R.FPDFAnnot_GetSubtype(annotation) == R.FPDF_ANNOT_FILEATTACHMENT
            R.FPDFPage_CloseAnnot(annotation)
    if R.FPDFPage_Flatten(page.raw, R.FLAT_NORMALDISPLAY) != R.FLATTEN_SUCCESS:
        return page, False, attached
    page.close()  # pdfium's handle to the page is stale now: its content is the flattened one
    return pdf[index], True, attached


def _on_page(segs: list[Seg], box: tuple[float, float, float, float]) -> list[Seg]:
    """``segs`` without the runs drawn wholly outside the page's visible box (its crop box, as pdfium gives it): text
    past the edge of the page, which a viewer never shows."""
    frames: dict[int, tuple[float, float, float, float]] = {}
    kept = []
    for seg in segs:
        visible = frames.get(seg.frame)
        if visible is None:
            visible = frames[seg.frame] = _box_to_frame(*box, _rot(seg.frame))
        left, bottom, right, top = visible
        if seg.x1 > left and seg.x0 < right and seg.y1 > bottom and seg.y0 < top:
            kept.append(seg)
    return kept if len(kept) < len(segs) else segs


def _without_overprints(segs: list[Seg]) -> list[Seg]:
    """``segs`` without a run that repeats an earlier one's text over most of its box: what a person sees once (a
    button's caption printed in the page and drawn again by its appearance, a point or two off)."""
    seen: dict[tuple[str, int], list[Seg]] = {}
    kept: list[Seg] = []
    for seg in segs:
        same = seen.setdefault((seg.text.strip(), seg.frame), [])
        if not any(_overlap(seg, other) >= 0.5 for other in same):
            same.append(seg)
            kept.append(seg)
    return kept


def _overlap(a: Seg, b: Seg) -> float:
    """The share of the smaller box that the two boxes share."""
    w = min(a.x1, b.x1) - max(a.x0, b.x0)
    h = min(a.y1, b.y1) - max(a.y0, b.y0)
    smaller = min((a.x1 - a.x0) * (a.y1 - a.y0), (b.x1 - b.x0) * (b.y1 - b.y0))
    return w * h / smaller if w > 0 and h > 0 and smaller > 0 else 0.0


def _without_hidden_layers(page_raw: Any, raw: Any, text: str, names: frozenset[str], max_depth: int) -> str:
    """``text`` with the characters of text objects in a hidden layer (``pdf_layers``) made NUL, which the segments
    leave out (index-aligned still, as for unmapped glyphs)."""
    hidden = hidden_text_objects(page_raw, names, max_depth)
    if not hidden:
        return text
    out = list(text)
    for i in range(len(out)):
        if address(R.FPDFText_GetTextObject(raw, i)) in hidden:
            out[i] = "\x00"
    return "".join(out)


def _page_text(raw: Any, n: int) -> str:
    """The page's text, one Python character per pdfium character (index-aligned with the char APIs)."""
    buf = (ctypes.c_ushort * (2 * n + 2))()
    got = R.FPDFText_GetText(raw, 0, n, buf)
    text = ""
    if got > 0:
        text = bytes(memoryview(buf).cast("B")[: (got - 1) * 2]).decode("utf-16-le", "surrogatepass")
    if len(text) != n:
        # pdfium left out or added characters (or one is past the BMP): read them one by one, aligned by index.
        chars = []
        for i in range(n):
            u = R.FPDFText_GetUnicode(raw, i)
            chars.append(chr(u) if 0 < u <= 0x10FFFF else "\ufffd")
        text = "".join(chars)
    return _compose_accents(raw, _drop_unmapped(raw, text))


def _compose_accents(raw: Any, text: str) -> str:
    """A spacing accent drawn over a letter next to it (before or after it in the text) composed with that letter:
    the letter's index gets the composed letter, the accent's a NUL (left out), so the text stays index-aligned."""
    hits = [m.start() for m in pdf_text.ACCENT_RE.finditer(text)]
    if not hits:
        return text
    out = list(text)
    a, b, c, d = ctypes.c_double(), ctypes.c_double(), ctypes.c_double(), ctypes.c_double()

    def span(i: int) -> tuple[float, float] | None:
        if not R.FPDFText_GetCharBox(raw, i, a, b, c, d):
            return None
        return a.value, b.value  # left, right

    for i in hits:
        ch = text[i]
        acc = span(i)
        if acc is None or acc[1] <= acc[0]:
            continue
        best: tuple[float, int] = (0.0, -1)
        for k in (i - 1, i + 1):
            if 0 <= k < len(text) and out[k].isalpha():
                box = span(k)
                if box is not None:
                    best = max(best, (min(acc[1], box[1]) - max(acc[0], box[0]), k))
        if best[1] < 0 or best[0] < 0.5 * (acc[1] - acc[0]):
            continue
        composed = pdf_text.compose(out[best[1]], ch)
        if composed is not None:
            out[best[1]], out[i] = composed, "\x00"
    return "".join(out)


def _drop_unmapped(raw: Any, text: str) -> str:
    """Characters whose font maps them to no Unicode text (pdfium then gives the raw glyph code, read as Greek or
    control characters: "ϲΒϴΒ") become NUL, which the segments leave out, as pdftotext does; index-aligned still.

    Only characters outside printable ASCII are asked about (one pdfium call each), so a Latin page costs nothing."""
    out: list[str] | None = None
    for m in _NOT_ASCII_RE.finditer(text):
        i = m.start()
        if C.unicode_map_error(raw, i) == 1:
            if out is None:
                out = list(text)
            out[i] = "\x00"
    return text if out is None else "".join(out)


def _drawn(page_raw: Any, max_form_depth: int) -> str | None:
    """What a page without a text layer draws, for OCR: ``scanned`` (an image), ``drawing`` (vector paths of at
    least ``_DRAWING_SEGMENTS`` segments in all: text drawn as outlines, a diagram's labels), or None (nothing that
    can hold text: a blank page, a rule or a frame)."""
    segments = 0
    stack: list[tuple[Any, int, bool]] = [(page_raw, 0, False)]
    while stack:
        holder, depth, is_form = stack.pop()
        count = R.FPDFFormObj_CountObjects(holder) if is_form else R.FPDFPage_CountObjects(holder)
        for k in range(min(count, 10_000)):
            obj = R.FPDFFormObj_GetObject(holder, k) if is_form else R.FPDFPage_GetObject(holder, k)
            if not obj:
                continue
            kind = R.FPDFPageObj_GetType(obj)
            if kind == R.FPDF_PAGEOBJ_IMAGE:
                return "scanned"
            if kind == R.FPDF_PAGEOBJ_PATH and segments < _DRAWING_SEGMENTS:
                segments += max(0, R.FPDFPath_CountSegments(obj))
            elif kind == R.FPDF_PAGEOBJ_FORM and depth < max_form_depth:
                stack.append((obj, depth + 1, True))
    return "drawing" if segments >= _DRAWING_SEGMENTS else None


_DRAWING_SEGMENTS = 40  # a frame or a few rules have a dozen; a word drawn as outlines has dozens


# -- lines and segments -----------------------------------------------------------------------------------------

_BOLD_CACHE: dict[bytes, bool] = {}


class _Style(NamedTuple):
    size: float
    bold: bool
    orient: int | str
    frame: int
    cs: tuple[float, float]


class _Calls(C.OutParams):
    """ctypes out-parameters reused across calls (``pdf_calls`` takes the references ``pa``..``pd``, ``pm``)."""

    __slots__ = ("buf", "flags")

    def __init__(self) -> None:
        super().__init__()
        self.buf = ctypes.create_string_buffer(256)
        self.flags = ctypes.c_int()


def _is_bold(raw: Any, i: int, calls: _Calls, fonts: dict[int, bool]) -> bool:
    """Character ``i``'s font is bold (its weight, force-bold flag or name say so): asked of pdfium once per font of
    the page (``fonts``: font address -> bold; a font's address is its own while the page is open)."""
    obj = C.text_object(raw, i)
    if not obj:
        return False  # a character pdfium made up (no text object): no font, as GetFontWeight/GetFontInfo say
    key = C.text_object_font(obj) or 0
    bold = fonts.get(key)
    if bold is None:
        bold = fonts[key] = _font_is_bold(raw, i, calls)
    return bold


def _font_is_bold(raw: Any, i: int, calls: _Calls) -> bool:
    weight = R.FPDFText_GetFontWeight(raw, i)
    if weight >= 600:
        return True
    got = R.FPDFText_GetFontInfo(raw, i, calls.buf, 256, calls.flags)
    if got <= 0:
        return False
    if calls.flags.value & (1 << 18):  # ForceBold
        return True
    name = calls.buf.value
    cached = _BOLD_CACHE.get(name)
    if cached is None:
        base = name.split(b"+", 1)[-1].decode("latin-1")
        cached = bool(_BOLD_NAME_RE.search(base))
        if len(_BOLD_CACHE) < 4096:
            _BOLD_CACHE[name] = cached
    return cached


def _rot(theta: int) -> tuple[float, float]:
    rad = math.radians(theta)
    return math.cos(rad), math.sin(rad)


def _to_frame(x: float, y: float, cs: tuple[float, float]) -> tuple[float, float]:
    c, s = cs
    return x * c + y * s, -x * s + y * c


def _box_to_frame(
    left: float, bottom: float, right: float, top: float, cs: tuple[float, float]
) -> tuple[float, float, float, float]:
    if cs == (1.0, 0.0):
        return left, bottom, right, top
    pts = [
        _to_frame(left, bottom, cs),
        _to_frame(right, bottom, cs),
        _to_frame(left, top, cs),
        _to_frame(right, top, cs),
    ]
    xs = [p[0] for p in pts]
    ys = [p[1] for p in pts]
    return min(xs), min(ys), max(xs), max(ys)


def _snap_angle(deg: float) -> int:
    deg %= 360.0
    nearest = round(deg / 90.0) * 90
    if abs(deg - nearest) <= 5.0:
        return int(nearest) % 360
    return round(deg) % 360


def _segments(raw: Any, text: str, rotation: int) -> list[Seg]:
    calls = _Calls()
    out: list[Seg] = []
    frames: dict[int, tuple[float, float]] = {}
    fonts: dict[int, bool] = {}
    marks = _MARK_RE.search(text) is not None  # a digit before a letter somewhere: footnote marks to look for
    for match in _LINE_RE.finditer(text):
        s, e = match.span()
        line = match.group()
        if not line.strip():
            continue
        # skip leading/trailing whitespace chars so sampled chars are glyphs
        lead = len(line) - len(line.lstrip())
        trail = len(line) - len(line.rstrip())
        s += lead
        e -= trail
        first = s
        C.char_matrix(raw, first, calls.pm)
        m = calls.m
        fsize = C.font_size(raw, first)
        if math.isfinite(m.a + m.b + m.c + m.d):
            scale = math.hypot(m.c, m.d) or math.hypot(m.a, m.b) or 1.0
            if m.b == 0.0 and m.a > 0.0:
                theta = 0  # upright text (atan2 would say 0 too)
            else:
                theta = _snap_angle(math.degrees(math.atan2(m.b, m.a))) if (m.a or m.b) else 0
        else:
            scale, theta = 1.0, 0
        size = fsize * scale if 0 < fsize < 1e5 and scale < 1e5 else 0.0
        nr = C.count_rects(raw, s, e - s)
        rects: list[tuple[float, float, float, float]] = []
        for k in range(nr):
            if C.rect(raw, k, calls.pa, calls.pb, calls.pc, calls.pd):
                # left, top, right, bottom
                rects.append((calls.a.value, calls.d.value, calls.c.value, calls.b.value))
        if not rects:
            if C.char_box(raw, first, calls.pa, calls.pb, calls.pc, calls.pd):
                rects.append((calls.a.value, calls.c.value, calls.b.value, calls.d.value))
            else:
                continue
        # vertical (top-to-bottom) writing: a tall run of upright characters
        frame = theta
        if theta == 0 and e - s >= 2 and len(rects) == 1:
            left, bottom, right, top = rects[0]
            if (top - bottom) > 1.8 * max(right - left, 0.1):
                C.char_box(raw, e - 1, calls.pa, calls.pb, calls.pc, calls.pd)
                last_top = calls.d.value
                C.char_box(raw, first, calls.pa, calls.pb, calls.pc, calls.pd)
                if calls.d.value > last_top + 0.5 * max(size, 1.0):
                    frame = -90
        cs = frames.get(frame)
        if cs is None:
            cs = frames[frame] = _rot(frame)
        orient: int | str = "vertical" if frame == -90 else (rotation - theta) % 360
        if orient != "vertical" and orient not in (0, 90, 180, 270):
            orient = int(orient)
        fr = rects if frame == 0 else [_box_to_frame(*r, cs) for r in rects]
        if size <= 0:
            size = max(1.0, *(r[3] - r[1] for r in fr))
        bold = _is_bold(raw, first, calls, fonts)
        if bold and e - s > 1:  # bold only if its middle and last characters are too (run-in headings are not)
            for probe in ((s + e) // 2, e - 1):
                if not text[probe].isspace() and not _is_bold(raw, probe, calls, fonts):
                    bold = False
                    break
        C.char_origin(raw, first, calls.pa, calls.pb)
        base0 = _to_frame(calls.a.value, calls.b.value, cs)[1] if frame else calls.b.value
        if _needs_split(fr, size) or (len(fr) > 1 and "\ufffe" not in line and _stacked(fr)):
            out.extend(_split_line(raw, text, s, e, _Style(size, bold, orient, frame, cs), calls=calls))
            continue
        if len(fr) == 1:
            x0, y0, x1, y1 = fr[0]
            base1 = base0
        else:
            x0 = min(r[0] for r in fr)
            y0 = min(r[1] for r in fr)
            x1 = max(r[2] for r in fr)
            y1 = max(r[3] for r in fr)
            base1 = base0 - (fr[0][3] - fr[-1][3])
        clean = _clean(_mark_spaces(raw, text, s, e, calls) if frame == 0 and marks else text[s:e])
        if clean:
            out.append(
                Seg(
                    clean,
                    x0,
                    y0,
                    x1,
                    y1,
                    base0,
                    min(base0, base1),
                    size,
                    bold,
                    orient,
                    frame,
                    s,
                    e,
                    fr[0][0],
                    fr[-1][2],
                    None,
                    text[e - 1] == "\ufffe",
                )
            )
    return out


_NOT_ASCII_RE = re.compile(r"[^\x20-\x7e\r\n]")
_MARK_RE = re.compile(r"\d(?=[^\W\d_])")


def _raised_mark(raw: Any, i: int, calls: _Calls) -> bool:
    """Character ``i`` (a digit) stands raised before the letter after it (its baseline a quarter of the letter's
    height above the letter's) or is set in a smaller font: a footnote mark before its text. Upright text only."""
    if not C.char_box(raw, i + 1, calls.pa, calls.pb, calls.pc, calls.pd):
        return False
    height = calls.d.value - calls.c.value
    if not C.char_origin(raw, i, calls.pa, calls.pb):
        return False
    raised = calls.b.value
    if not C.char_origin(raw, i + 1, calls.pa, calls.pb):
        return False
    if height > 0 and raised - calls.b.value > 0.25 * height:
        return True
    here, nxt = C.font_size(raw, i), C.font_size(raw, i + 1)
    return 0 < here < 0.8 * nxt  # (set in a smaller font, as TeX sets a footnote mark)


def _mark_spaces(raw: Any, text: str, s: int, e: int, calls: _Calls) -> str:
    """``text[s:e]`` with a space after a footnote mark run into the word it stands before ("1Preliminary")."""
    line = text[s:e]
    cuts = [m.end() for m in _MARK_RE.finditer(line) if _raised_mark(raw, s + m.start(), calls)]
    if not cuts:
        return line
    parts = [line[a:b] for a, b in zip([0, *cuts], [*cuts, len(line)], strict=True)]
    return " ".join(parts)


_HYPHEN_MARK_RE = re.compile(r"(\S*)\ufffe(\s*)(.?)", re.S)  # pdfium's mark where a line-end hyphen was


def _hyphen_mark(m: re.Match[str]) -> str:
    before, space, after = m.groups()
    return before + ("-" if _keeps_hyphen(before, after) else "") + space + after


def _clean(text: str) -> str:
    if "\ufffe" in text:
        text = _HYPHEN_MARK_RE.sub(_hyphen_mark, text)
    if "\x00" in text:
        text = text.replace("\x00", "")
    if "  " in text or not text.isprintable():  # (else its only whitespace is single spaces: nothing to fold)
        text = _WS_RE.sub(" ", text)
    return pdf_text.space_direction_changes(text.strip())


def _stacked(rects: list[tuple[float, float, float, float]]) -> bool:
    """Rectangles on different visual lines (pdfium ran several lines together)."""
    return any(min(a[3], b[3]) - max(a[1], b[1]) < 0.5 * min(a[3] - a[1], b[3] - b[1]) for a, b in pairwise(rects))


def _needs_split(rects: list[tuple[float, float, float, float]], size: float) -> bool:
    if len(rects) < 2:
        return False
    gap = max(size, 3.0)
    for a, b in pairwise(rects):
        overlap = min(a[3], b[3]) - max(a[1], b[1])
        if overlap > 0.5 * min(a[3] - a[1], b[3] - b[1]) and (b[0] - a[2] > gap or b[2] < a[0] - gap):
            return True
    return False


def _split_line(raw: Any, text: str, s: int, e: int, style: _Style, *, calls: _Calls, gap: float = 0.0) -> list[Seg]:
    """Cut a line at wide gaps (default: one em), character by character."""
    size, bold, orient, frame, cs = style
    out: list[Seg] = []
    gap = gap or max(size, 3.0)
    cur: list[str] = []
    box: list[float] = []  # x0, y0, x1, y1
    start = s
    last_x1 = 0.0
    cy = 0.0
    hyph = False  # the last glyph so far is followed by a line-end hyphen mark

    def flush(end: int) -> None:
        t = _clean("".join(cur))
        if t and box:
            C.char_origin(raw, start, calls.pa, calls.pb)
            base = _to_frame(calls.a.value, calls.b.value, cs)[1]
            if not box[1] - size <= base <= box[3] + size:
                base = box[1]
            seg = Seg(t, box[0], box[1], box[2], box[3], base, base, size, bold, orient, frame, start, end, hyph=hyph)
            seg.xs, seg.xe = box[0], box[2]
            out.append(seg)

    for i in range(s, e):
        ch = text[i]
        if ch == "\ufffe":
            hyph = bool(cur) and cur[-1] != " "
            continue
        if ch.isspace():
            if cur and cur[-1] != " ":
                cur.append(" ")
            hyph = False
            continue
        if not C.char_box(raw, i, calls.pa, calls.pb, calls.pc, calls.pd):
            cur.append(ch)
            continue
        x0, y0, x1, y1 = _box_to_frame(calls.a.value, calls.c.value, calls.b.value, calls.d.value, cs)
        mid_y = (y0 + y1) / 2
        if box and (x0 - last_x1 > gap or x1 < box[0] - gap or abs(mid_y - cy) > 0.6 * size):
            flush(i)
            cur, box, start = [], [], i
        hyph = False  # (a hyphen mark inside a visual line joins the word: nothing to keep)
        if (
            frame == 0
            and cur
            and cur[-1].isdigit()
            and ch.isalpha()
            and text[i - 1] == cur[-1]
            and _raised_mark(raw, i - 1, calls)
        ):
            cur.append(" ")
        if not box:
            box = [x0, y0, x1, y1]
            cy = mid_y
        else:
            box[0], box[1], box[2], box[3] = min(box[0], x0), min(box[1], y0), max(box[2], x1), max(box[3], y1)
        last_x1 = max(last_x1, x1) if cur else x1
        cur.append(ch)
    flush(e)
    return out


class WordCut(Exception):
    """A grid line runs through a word: the grid is a figure drawn over text, not a table of it."""


def _resplit(raw: Any, text: str, seg: Seg, cuts: list[float]) -> list[Seg]:
    """Cut a segment at the x positions ``cuts`` (a ruled table's inner grid lines), character by character.

    Raises ``WordCut`` when a cut falls inside a word (two letters or digits side by side, no space between them, on
    both sides of a grid line): a table's cells keep their text apart, a figure's lines drawn over prose do not."""
    calls = _Calls()
    cs = _rot(seg.frame)
    parts: dict[int, list[tuple[int, str, tuple[float, float, float, float]]]] = {}
    prev_col = 0
    last: tuple[str, float, int] | None = None  # the previous glyph: its character, right edge and column
    for i in range(seg.cs, seg.ce):
        ch = text[i]
        if ch.isspace() or ch == "\ufffe":
            parts.setdefault(prev_col, []).append((i, " ", (0.0, 0.0, 0.0, 0.0)))
            last = None
            continue
        if not C.char_box(raw, i, calls.pa, calls.pb, calls.pc, calls.pd):
            continue
        bx = _box_to_frame(calls.a.value, calls.c.value, calls.b.value, calls.d.value, cs)
        col = bisect.bisect_left(cuts, (bx[0] + bx[2]) / 2)
        if (
            last is not None
            and last[2] != col
            and last[0].isalnum()
            and ch.isalnum()
            and bx[0] - last[1] < 0.3 * seg.size
        ):
            raise WordCut
        last = (ch, bx[2], col)
        prev_col = col
        parts.setdefault(col, []).append((i, ch, bx))
    out: list[Seg] = []
    for _col, chars in sorted(parts.items()):
        boxes = [b for _, c, b in chars if c != " "]
        t = _clean("".join(c for _, c, _ in chars))
        if not t or not boxes:
            continue
        out.append(
            _seg_with_ends(
                t,
                min(b[0] for b in boxes),
                min(b[1] for b in boxes),
                max(b[2] for b in boxes),
                max(b[3] for b in boxes),
                seg.base0,
                seg.base1,
                seg.size,
                seg.bold,
                seg.orient,
                seg.frame,
                chars[0][0],
                chars[-1][0] + 1,
            )
        )
    return out or [seg]


def _seg_with_ends(*args: Any) -> Seg:
    seg = Seg(*args)
    seg.xs, seg.xe = seg.x0, seg.x1
    return seg


# -- layout -----------------------------------------------------------------------------------------------------


def _layout_page(
    objects: PageObjects,
    raw: Any,
    segs: list[Seg],
    rotation: int,
    limits: Limits,
    *,
    abandoned: list[str] | None = None,
    text: str | None = None,
) -> list[Para | TableItem]:
    """The page's paragraphs and tables in reading order; why ruled-table detection gave up, if it did, in
    ``abandoned``."""
    if abandoned is None:
        abandoned = []
    by_frame: dict[int, list[Seg]] = {}
    for seg in segs:
        by_frame.setdefault(seg.frame, []).append(seg)
    # the frame with the most text first, then the others in the order their text came
    frames = sorted(by_frame, key=lambda f: (-sum(len(s.text) for s in by_frame[f]), by_frame[f][0].cs))
    items: list[Para | TableItem] = []
    edges_user: tuple[list[tuple[float, float, float]], list[tuple[float, float, float]]] | None = None
    for frame in frames:
        fsegs = by_frame[frame]
        t0 = time.perf_counter()
        tables: list[TableItem] = []
        if frame in (0, 90, 180, 270) and len(fsegs) >= 4:
            if edges_user is None:
                try:
                    edges_user = objects.ruling_edges()
                except TablesAbandoned as exc:
                    abandoned.append(str(exc))
                    edges_user = ([], [])
            if edges_user[0]:
                if text is None:
                    n = R.FPDFText_CountChars(raw)
                    text = _page_text(raw, n)
                fsegs, ruled = _ruled_tables(
                    raw, text, fsegs, edges_user, frame, abandoned=abandoned, max_table_cells=limits.pdf_max_table_cells
                )
                tables.extend(ruled)
        if len(fsegs) >= 6:
            fsegs, aligned = _aligned_tables(fsegs)
            tables.extend(aligned)
        TABLE_STATS["seconds"] += time.perf_counter() - t0
        TABLE_STATS["tables"] += len(tables)
        for tbl in tables:
            fsegs.append(
                Seg(
                    "",
                    tbl.x0,
                    tbl.y0,
                    tbl.x1,
                    tbl.y1,
                    tbl.y1,
                    tbl.y0,
                    0.0,
                    False,
                    tbl.orient,
                    frame,
                    xs=tbl.x0,
                    xe=tbl.x1,
                    table=tbl,
                )
            )
        items.extend(_read_frame(fsegs))
    return items


def _read_frame(segs: list[Seg]) -> list[Para | TableItem]:
    sizes = sorted(s.size for s in segs if s.table is None)
    med = sizes[len(sizes) // 2] if sizes else 10.0
    gutters = _gutters(segs, med)
    runs = _column_runs(segs, gutters)
    items: list[Para | TableItem] = []
    for run, (cx0, cx1) in runs:
        items.extend(_paragraphs(run, cx0, cx1))
    return items


def _gutters(segs: list[Seg], med: float) -> list[tuple[float, float]]:
    if len(segs) < 8:
        return []
    x_lo = min(s.x0 for s in segs)
    x_hi = max(s.x1 for s in segs)
    width = x_hi - x_lo
    if width <= 4 * med:
        return []
    narrow = [s for s in segs if s.x1 - s.x0 < 0.6 * width]
    if len(narrow) < 6:
        return []
    step = 2.0
    nb = int(width / step) + 2
    if nb > 4000:
        step = width / 4000
        nb = 4002
    diff = [0] * (nb + 1)
    for s in narrow:
        b0 = int((s.x0 - x_lo) / step)
        b1 = int((s.x1 - x_lo) / step)
        diff[max(b0, 0)] += 1
        diff[min(b1, nb - 1) + 1] -= 1
    cov = []
    acc = 0
    for v in diff[:nb]:
        acc += v
        cov.append(acc)
    allowed = max(1, int(0.4 * max(cov)))
    min_gap = max(6.0, 0.7 * med)
    min_side = max(3, int(0.12 * len(narrow)))
    out: list[tuple[float, float]] = []
    b = 0
    while b < nb:
        if cov[b] > allowed:
            b += 1
            continue
        start = b
        while b < nb and cov[b] <= allowed:
            b += 1
        # the gutter is the valley's floor: its longest run of (nearly) least-covered bins
        floor = min(cov[start:b]) + max(1, int(0.1 * max(cov)))
        best = (0, start, start)
        k = start
        while k < b:
            if cov[k] <= floor:
                j = k
                while j < b and cov[j] <= floor:
                    j += 1
                best = max(best, (j - k, k, j))
                k = j
            else:
                k += 1
        _, lo_bin, hi_bin = best
        left = x_lo + lo_bin * step
        right = x_lo + hi_bin * step
        if hi_bin - lo_bin < 2 or left <= x_lo + step or right >= x_hi - step:
            continue
        lefts = [s for s in narrow if s.x1 <= left + step]
        rights = [s for s in narrow if s.x0 >= right - step]
        if len(lefts) < min_side or len(rights) < min_side:
            continue
        # the gap between the columns' own edges (the bins are coarse)
        left = max(left, sorted(s.x1 for s in lefts)[int(0.9 * (len(lefts) - 1))])
        right = min(right, sorted(s.x0 for s in rights)[int(0.1 * (len(rights) - 1))])
        if right - left < min_gap:
            continue
        ly0, ly1 = min(s.y0 for s in lefts), max(s.y1 for s in lefts)
        ry0, ry1 = min(s.y0 for s in rights), max(s.y1 for s in rights)
        top, bottom = min(ly1, ry1), max(ly0, ry0)
        if top - bottom <= 0.3 * min(ly1 - ly0, ry1 - ry0):
            continue
        # the gutter must run clear (nothing crossing it) over a good height where both columns have lines;
        # full-width titles, author blocks and figures above or below it are bands of their own
        crossing = sorted(
            (s.y0, s.y1) for s in segs if s.x0 < right - step and s.x1 > left + step and s.y1 > bottom and s.y0 < top
        )
        best_lo, best_hi = bottom, top
        if crossing:
            edges = [bottom]
            hi_mark = bottom
            spans: list[tuple[float, float]] = []
            for c0, c1 in crossing:
                if c0 > hi_mark:
                    spans.append((hi_mark, c0))
                hi_mark = max(hi_mark, c1)
            if hi_mark < top:
                spans.append((hi_mark, top))
            del edges
            if not spans:
                continue
            best_lo, best_hi = max(spans, key=lambda sp: sp[1] - sp[0])
        in_l = sum(1 for s in lefts if s.y0 >= best_lo - 1 and s.y1 <= best_hi + 1)
        in_r = sum(1 for s in rights if s.y0 >= best_lo - 1 and s.y1 <= best_hi + 1)
        if in_l >= min_side and in_r >= min_side:
            out.append((left, right))
    return out[:8]


def _column_runs(segs: list[Seg], gutters: list[tuple[float, float]]) -> list[tuple[list[Seg], tuple[float, float]]]:
    """Reading order: bands cut by segments that cross a gutter; each band column by column."""
    ordered = sorted(segs, key=lambda s: -s.base0)
    x_lo = min(s.x0 for s in segs)
    x_hi = max(s.x1 for s in segs)
    if not gutters:
        return [(ordered, (x_lo, x_hi))]
    mids = [(g[0] + g[1]) / 2 for g in gutters]
    bounds = [x_lo - 1e9, *mids, x_hi + 1e9]
    col_extent = [
        (x_lo if k == 0 else gutters[k - 1][1], x_hi if k == len(gutters) else gutters[k][0])
        for k in range(len(gutters) + 1)
    ]
    runs: list[tuple[list[Seg], tuple[float, float]]] = []
    cur: list[list[Seg]] = [[] for _ in col_extent]
    spanning: list[Seg] = []

    def flush_cols() -> None:
        for k, col in enumerate(cur):
            if col:
                runs.append((col, col_extent[k]))
        for k in range(len(cur)):
            cur[k] = []

    for s in ordered:
        col = None
        for k in range(len(bounds) - 1):
            if s.x0 >= bounds[k] - 1 and s.x1 <= bounds[k + 1] + 1:
                col = k
                break
        if col is None:
            if any(cur):
                if spanning:
                    runs.append((spanning, (x_lo, x_hi)))
                    spanning = []
                flush_cols()
            spanning.append(s)
        else:
            if spanning:
                runs.append((spanning, (x_lo, x_hi)))
                spanning = []
            cur[col].append(s)
    if spanning:
        runs.append((spanning, (x_lo, x_hi)))
    flush_cols()
    return runs


def _script_hosts(run: list[Seg]) -> dict[int, Seg]:
    """id(script) -> host for the small segments (super- and subscripts, footnote marks) pdfium put on a line of
    their own that sit right at the start or end of a bigger segment on the same visual line (``R`` + ``2``)."""
    sizes = sorted(s.size for s in run if s.table is None)
    if not sizes:
        return {}
    small = 0.85 * sizes[-1]
    hosts: dict[int, Seg] = {}
    # (a host is 1/0.85 times a script's size or more: a segment with no such neighbour has none to look for)
    room = [0.85 * s.size if s.table is None else 0.0 for s in run]
    for k, s in enumerate(run):
        if s.table is not None or s.size > small or s.size > max(room[max(0, k - 8) : k + 9]):
            continue
        for h in run[max(0, k - 8) : k + 9]:
            if h is s or h.table is not None or s.size > 0.85 * h.size or id(h) in hosts:
                continue
            if not (s.y0 < h.y1 and s.y1 > h.y0) or abs(s.base0 - h.base0) > 0.7 * h.size:
                continue
            after = -0.2 * h.size <= s.x0 - h.x1 <= 0.4 * h.size
            before = -0.2 * h.size <= h.x0 - s.x1 <= 0.4 * h.size
            if after or before:
                hosts[id(s)] = h
                break
    return hosts


def _rows(run: list[Seg]) -> list[Row | TableItem]:
    """Segments of one column (sorted top-down) joined into rows at the same baseline; a super- or subscript joins
    the row of the segment it is attached to (without a space where they touch)."""
    out: list[Row | TableItem] = []
    group: list[Seg] = []
    hosts = _script_hosts(run)
    if hosts:
        by_id = {id(s): s for s in run}
        run = sorted(run, key=lambda s: -by_id[id(hosts[id(s)])].base0 if id(s) in hosts else -s.base0)

    def flush() -> None:
        if not group:
            return
        if len(group) == 1:  # (most rows: one segment)
            g = group[0]
            out.append(Row(g.text, g.xs, g.xe, g.base0, g.base1, g.size, g.bold, g.orient, g.hyph))
            group.clear()
            return
        group.sort(key=lambda g: g.x0)
        text = group[0].text
        for prev, g in pairwise(group):
            touching = (id(g) in hosts or id(prev) in hosts) and g.x0 <= prev.x1  # boxes that touch: one word
            text += g.text if touching else " " + g.text
        main = [g for g in group if id(g) not in hosts] or group
        out.append(
            Row(
                text,
                group[0].xs,
                group[-1].xe,
                max(g.base0 for g in main),
                min(g.base1 for g in main),
                max(g.size for g in main),
                all(g.bold for g in main),
                group[0].orient,
                group[-1].hyph,
            )
        )
        group.clear()

    first_base = 0.0  # the baseline of the group's first segment (its host's, for a script)
    for s in run:
        if s.table is not None:
            flush()
            out.append(s.table)
            continue
        host = hosts.get(id(s)) if hosts else None
        base = host.base0 if host is not None else s.base0
        if group and (abs(base - first_base) > 0.35 * max(s.size, group[0].size) or s.orient != group[0].orient):
            flush()
        if not group:
            first_base = base
        group.append(s)
    flush()
    return out


def _paragraphs(run: list[Seg], cx0: float, cx1: float) -> list[Para | TableItem]:
    rows = _rows(run)
    pitches = []
    for a, b in pairwise(rows):
        if isinstance(a, Row) and isinstance(b, Row) and abs(a.size - b.size) <= 0.1 * a.size:
            p = a.base1 - b.base0
            if 0.8 * a.size <= p <= 2.2 * a.size:
                pitches.append(p / a.size)
    pitches.sort()
    rel_pitch = pitches[len(pitches) // 2] if pitches else 1.2
    width = max(cx1 - cx0, 1.0)
    out: list[Para | TableItem] = []
    para: Para | None = None
    for row in rows:
        if isinstance(row, TableItem):
            if para is not None:
                out.append(para)
                para = None
            out.append(row)
            continue
        is_item = bool(_BULLET_RE.match(row.text))
        if para is not None:
            prev = para.rows[-1]
            size = max(prev.size, row.size)
            pitch = prev.base1 - row.base0
            brk = (
                is_item
                or row.orient != prev.orient
                or abs(row.size - prev.size) > 0.12 * size
                or row.bold != prev.bold
                or pitch < 0.3 * size
                or pitch > (rel_pitch * 1.3 + 0.1) * size
                or (
                    para.kind != "list"
                    and row.x0 - cx0 > 0.8 * row.size
                    and prev.x0 - cx0 < 0.5 * prev.size
                    and row.x0 - prev.x0 > 0.8 * row.size
                    and row.x0 - prev.x0 < 0.3 * width
                )
                or (prev.text[-1:] in ".!?:" and prev.x1 < cx1 - max(2 * size, 0.2 * width))
            )
            if not brk:
                para.rows.append(row)
                continue
            out.append(para)
        para = Para([row], "list" if is_item else "paragraph")
    if para is not None:
        out.append(para)
    return out


# -- tables -----------------------------------------------------------------------------------------------------

Edge = tuple[float, float, float]  # (position, start, end): y, x0, x1 for horizontal; x, y0, y1 for vertical


class TablesAbandoned(Exception):
    """Ruled-table detection gave up on a page (past a bound): its text stays paragraphs, and the artifact says so."""


class PageObjects:
    """One walk of a page's objects (form XObjects included), made on first use and shared: the ruling lines drawn
    on it for table detection (``ruling_edges``) and its image objects for OCR (``images``). Walking the page once,
    with pdfium's raw calls, instead of once per use (and once more through pypdfium2's object wrappers) halved the
    object walking of the benchmark's doc200.pdf."""

    __slots__ = ("_abandoned", "_edges", "_images", "_limits", "_raw")

    def __init__(self, page_raw: Any, limits: Limits) -> None:
        self._raw = page_raw
        self._limits = limits
        self._edges: tuple[list[Edge], list[Edge]] | None = None
        self._abandoned: str | None = None
        self._images: list[Any] = []

    def ruling_edges(self) -> tuple[list[Edge], list[Edge]]:
        """Horizontal and vertical line pieces drawn on the page (user space); TablesAbandoned past the path
        bounds."""
        edges = self._walked()
        if self._abandoned is not None:
            raise TablesAbandoned(self._abandoned)
        return edges

    def images(self) -> list[Any]:
        """The page's image objects in content order (pypdfium2's ``get_objects`` order: a form's objects right
        after it), within ``pdf_max_form_depth - 1`` nested forms as ``get_objects`` reads them."""
        self._walked()
        return self._images

    def _walked(self) -> tuple[list[Edge], list[Edge]]:
        if self._edges is None:
            self._edges = self._walk()
        return self._edges

    def _walk(self) -> tuple[list[Edge], list[Edge]]:
        limits = self._limits
        hs: list[Edge] = []
        vs: list[Edge] = []
        images: list[tuple[tuple[int, ...], Any]] = []  # (index path from the page down, object)
        identity = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
        fm = R.FS_MATRIX()
        fl, fb, fr, ft = ctypes.c_float(), ctypes.c_float(), ctypes.c_float(), ctypes.c_float()
        fill = ctypes.c_int()
        stroke = ctypes.c_int()
        px, py = ctypes.c_float(), ctypes.c_float()
        budget_objects = limits.pdf_max_path_objects
        budget_segments = limits.pdf_max_path_segments
        max_depth = limits.pdf_max_form_depth
        image_depth = max(max_depth - 1, 0)  # get_objects reads forms nested max_depth - 1 deep
        form_kind, path_kind, image_kind = R.FPDF_PAGEOBJ_FORM, R.FPDF_PAGEOBJ_PATH, R.FPDF_PAGEOBJ_IMAGE
        # (holder, its matrix or None: a form whose matrix is unknown, whose paths are not read; depth; where)
        stack: list[tuple[Any, tuple[float, ...] | None, int, tuple[int, ...]]] = [(self._raw, identity, 0, ())]
        while stack:
            holder, ctm, depth, where = stack.pop()
            is_form = depth > 0
            count = R.FPDFFormObj_CountObjects(holder) if is_form else R.FPDFPage_CountObjects(holder)
            for k in range(count):
                obj = C.form_object(holder, k) if is_form else C.page_object(holder, k)
                if not obj:
                    continue
                kind = C.object_type(obj)
                if kind == image_kind:
                    if depth <= image_depth:
                        images.append(((*where, k), obj))
                    continue
                if kind == form_kind:
                    if depth < max_depth:
                        inner = None
                        if ctm is not None and R.FPDFPageObj_GetMatrix(obj, fm):
                            inner = _mul((fm.a, fm.b, fm.c, fm.d, fm.e, fm.f), ctm)
                        stack.append((obj, inner, depth + 1, (*where, k)))
                    continue
                if kind != path_kind or ctm is None or self._abandoned is not None:
                    continue
                budget_objects -= 1
                if budget_objects < 0:
                    self._abandoned = f"the page draws more than {limits.pdf_max_path_objects:,} paths"
                    continue
                if R.FPDFPath_GetDrawMode(obj, fill, stroke) and not fill.value and not stroke.value:
                    continue
                if not R.FPDFPageObj_GetBounds(obj, fl, fb, fr, ft):
                    continue
                if is_form:
                    pts = [_apply(ctm, fl.value, fb.value), _apply(ctm, fr.value, ft.value)]
                    left, right = sorted((pts[0][0], pts[1][0]))
                    bottom, top = sorted((pts[0][1], pts[1][1]))
                else:
                    left, bottom, right, top = fl.value, fb.value, fr.value, ft.value
                w, h = right - left, top - bottom
                if h <= 3.0 and w > 3.0:
                    hs.append(((bottom + top) / 2, left, right))
                    continue
                if w <= 3.0 and h > 3.0:
                    vs.append(((left + right) / 2, bottom, top))
                    continue
                if w <= 3.0 and h <= 3.0:
                    continue
                nseg = R.FPDFPath_CountSegments(obj)
                if nseg <= 0 or nseg > 512:
                    continue
                budget_segments -= nseg
                if budget_segments < 0:
                    self._abandoned = f"the page's paths have more than {limits.pdf_max_path_segments:,} segments"
                    continue
                if not R.FPDFPageObj_GetMatrix(obj, fm):
                    continue
                _path_edges(obj, nseg, _mul((fm.a, fm.b, fm.c, fm.d, fm.e, fm.f), ctm), point=(px, py), hs=hs, vs=vs)
        images.sort(key=lambda item: item[0])
        self._images = [obj for _, obj in images]
        return hs, vs


def _path_edges(
    obj: Any, nseg: int, mtx: tuple[float, ...], *, point: tuple[Any, Any], hs: list[Edge], vs: list[Edge]
) -> None:
    """The horizontal and vertical pieces of one path's segments (``point``: the ctypes floats pdfium fills)."""
    px, py = point
    start: tuple[float, float] | None = None
    prev: tuple[float, float] | None = None
    for j in range(nseg):
        seg = R.FPDFPath_GetPathSegment(obj, j)
        if not seg or not R.FPDFPathSegment_GetPoint(seg, px, py):
            continue
        pt = _apply(mtx, px.value, py.value)
        stype = R.FPDFPathSegment_GetType(seg)
        if stype == R.FPDF_SEGMENT_MOVETO:
            start = prev = pt
            continue
        if prev is not None:
            _add_edge(prev, pt, hs, vs)
        prev = pt
        if R.FPDFPathSegment_GetClose(seg) and start is not None:
            _add_edge(pt, start, hs, vs)
            prev = start


def _add_edge(p: tuple[float, float], q: tuple[float, float], hs: list[Edge], vs: list[Edge]) -> None:
    dx, dy = q[0] - p[0], q[1] - p[1]
    if abs(dy) <= 1.0 and abs(dx) > 3.0:
        hs.append(((p[1] + q[1]) / 2, min(p[0], q[0]), max(p[0], q[0])))
    elif abs(dx) <= 1.0 and abs(dy) > 3.0:
        vs.append(((p[0] + q[0]) / 2, min(p[1], q[1]), max(p[1], q[1])))


def _edges_in_frame(hs: list[Edge], vs: list[Edge], frame: int) -> tuple[list[Edge], list[Edge]]:
    """Rotate user-space edges into a frame turned by a multiple of 90 degrees."""
    if frame == 0:
        return hs, vs
    cs = _rot(frame)
    out_h: list[Edge] = []
    out_v: list[Edge] = []
    for pos, a, b in hs:
        p, q = _to_frame(a, pos, cs), _to_frame(b, pos, cs)
        _add_edge(p, q, out_h, out_v)
    for pos, a, b in vs:
        p, q = _to_frame(pos, a, cs), _to_frame(pos, b, cs)
        _add_edge(p, q, out_h, out_v)
    return out_h, out_v


def _merge_edges(edges: list[Edge], tol: float = 2.0) -> list[Edge]:
    """Join collinear pieces (same position within tol, ranges touching)."""
    if not edges:
        return []
    edges = sorted(edges)
    clusters: list[list[Edge]] = [[edges[0]]]
    for e in edges[1:]:
        if e[0] - clusters[-1][-1][0] <= tol:
            clusters[-1].append(e)
        else:
            clusters.append([e])
    out: list[Edge] = []
    for cl in clusters:
        pos = sum(e[0] for e in cl) / len(cl)
        spans = sorted((e[1], e[2]) for e in cl)
        a, b = spans[0]
        for s, t in spans[1:]:
            if s <= b + tol:
                b = max(b, t)
            else:
                out.append((pos, a, b))
                a, b = s, t
        out.append((pos, a, b))
    return out


def _cluster(values: list[float], tol: float) -> list[float]:
    values = sorted(values)
    out: list[list[float]] = []
    for v in values:
        if out and v - out[-1][-1] <= tol:
            out[-1].append(v)
        else:
            out.append([v])
    return [sum(c) / len(c) for c in out]


def _ruled_tables(
    raw: Any,
    text: str,
    segs: list[Seg],
    edges_user: tuple[list[Edge], list[Edge]],
    frame: int,
    *,
    abandoned: list[str],
    max_table_cells: int,
) -> tuple[list[Seg], list[TableItem]]:
    hs, vs = _edges_in_frame(edges_user[0], edges_user[1], frame)
    hs = [e for e in _merge_edges(hs) if e[2] - e[1] >= 4.0]
    vs = [e for e in _merge_edges(vs) if e[2] - e[1] >= 4.0]
    if len(hs) * len(vs) > MAX_RULE_PAIRS:
        abandoned.append(f"{len(hs):,} horizontal by {len(vs):,} vertical rules")
        return segs, []
    if len(hs) < 2:
        return segs, []
    # connected components of crossing edges
    parent = list(range(len(hs) + len(vs)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    tol = 2.0
    vs_sorted = sorted(range(len(vs)), key=lambda j: vs[j][0])
    vx = [vs[j][0] for j in vs_sorted]
    for i, (y, x0, x1) in enumerate(hs):
        lo = bisect.bisect_left(vx, x0 - tol)
        hi = bisect.bisect_right(vx, x1 + tol)
        for jj in range(lo, hi):
            j = vs_sorted[jj]
            _, y0, y1 = vs[j]
            if y0 - tol <= y <= y1 + tol:
                ri, rj = find(i), find(len(hs) + j)
                if ri != rj:
                    parent[ri] = rj
    comps: dict[int, tuple[list[Edge], list[Edge]]] = {}
    for i, e in enumerate(hs):
        comps.setdefault(find(i), ([], []))[0].append(e)
    for j, e in enumerate(vs):
        comps.setdefault(find(len(hs) + j), ([], []))[1].append(e)
    tables: list[TableItem] = []
    remaining = segs
    free_h: list[Edge] = []
    for ch, cv in comps.values():
        if len(ch) < 2 or len(cv) < 2:
            if not cv:
                free_h.extend(ch)
            continue
        ys = _cluster([e[0] for e in ch], 2.0)
        xs = _cluster([e[0] for e in cv], 2.0)
        if len(ys) < 3 and len(xs) < 3:
            continue  # a single box: a frame around text, not a table
        if (len(ys) - 1) * (len(xs) - 1) > max_table_cells:
            abandoned.append(f"a grid of more than {max_table_cells:,} cells")
            continue
        bx0, bx1 = xs[0], xs[-1]
        by0, by1 = ys[0], ys[-1]
        inside: list[Seg] = []
        outside: list[Seg] = []
        for s in remaining:
            cx, cy = (s.x0 + s.x1) / 2, (s.base0 + s.y1) / 2
            if bx0 - 1 <= cx <= bx1 + 1 and by0 - 1 <= cy <= by1 + 1:
                inside.append(s)
            else:
                outside.append(s)
        if not inside:
            continue
        pieces: list[Seg] = []
        try:
            for s in inside:
                cy = (s.base0 + s.y1) / 2
                cuts = sorted(v[0] for v in cv if v[1] - 2 <= cy <= v[2] + 2 and s.x0 + 1 < v[0] < s.x1 - 1)
                pieces.extend(_resplit(raw, text, s, cuts) if cuts else [s])
        except WordCut:
            continue  # its text stays paragraphs
        nrows, ncols = len(ys) - 1, len(xs) - 1
        grid: list[list[list[Seg]]] = [[[] for _ in range(ncols)] for _ in range(nrows)]
        for s in pieces:
            cx, cy = (s.x0 + s.x1) / 2, (s.base0 + s.y1) / 2
            # the cell a piece is in starts at the nearest ruling line left of it / above it that is really
            # drawn there, so the text of a merged cell lands in the merged range's first column and row
            present = [v[0] for v in cv if v[1] - 2 <= cy <= v[2] + 2]
            lefts = [x for x in present if x <= cx]
            tops = [h[0] for h in ch if h[1] - 2 <= cx <= h[2] + 2 and h[0] >= cy]
            # (with no column rules at this height, place it by position)
            c = _nearest(xs, max(lefts)) if lefts and len(present) > 2 else bisect.bisect_left(xs, cx) - 1
            r_top = _nearest(ys, min(tops)) if tops else bisect.bisect_left(ys, cy)
            c = min(max(c, 0), ncols - 1)
            r = min(max(r_top - 1, 0), nrows - 1)
            grid[nrows - 1 - r][c].append(s)  # top row first
        grid = _split_banded_rows(grid)
        cells = _grid_cells(grid)
        if cells is None:
            continue
        remaining = outside
        tables.append(TableItem(cells, bx0, by0, bx1, by1, inside[0].orient, True))
    if len(free_h) >= 2:
        remaining, banded = _rule_band_tables(raw, text, remaining, free_h)
        tables.extend(banded)
    return remaining, tables


def _rule_band_tables(raw: Any, text: str, segs: list[Seg], hs: list[Edge]) -> tuple[list[Seg], list[TableItem]]:
    """Tables ruled by horizontal lines only (booktabs): 2+ rules of the same width with aligned text between."""
    groups: list[list[Edge]] = []
    for e in sorted(hs, key=lambda e: (round(e[1] / 4), round(e[2] / 4), -e[0])):
        g = groups[-1] if groups else None
        if g is not None and abs(g[0][1] - e[1]) <= 4 and abs(g[0][2] - e[2]) <= 4:
            g.append(e)
        else:
            groups.append([e])
    tables: list[TableItem] = []
    calls = _Calls()
    for g in groups:
        if len(g) < 2:
            continue
        top, bottom = max(e[0] for e in g), min(e[0] for e in g)
        x0, x1 = min(e[1] for e in g), max(e[2] for e in g)
        inside = [s for s in segs if x0 - 2 <= (s.x0 + s.x1) / 2 <= x1 + 2 and bottom < s.base0 < top]
        if len(inside) < 2:
            continue
        pieces: list[Seg] = []
        for s in inside:
            cs = _rot(s.frame)
            pieces.extend(
                _split_line(
                    raw, text, s.cs, s.ce, _Style(s.size, s.bold, s.orient, s.frame, cs), calls=calls, gap=0.8 * s.size
                )
                or [s]
            )
        lines: list[list[Seg]] = []
        for p in sorted(pieces, key=lambda p: -p.base0):
            if lines and abs(lines[-1][0].base0 - p.base0) <= 0.35 * max(p.size, lines[-1][0].size):
                lines[-1].append(p)
            else:
                lines.append([p])
        if len(lines) < 2:
            continue
        tbl = _aligned_table(lines, strict=False)
        if tbl is None:
            continue
        tbl.x0, tbl.x1, tbl.y0, tbl.y1, tbl.ruled = x0, x1, bottom, top, True
        ids = {id(s) for s in inside}
        segs = [s for s in segs if id(s) not in ids]
        tables.append(tbl)
    return segs, tables


def _nearest(values: list[float], x: float) -> int:
    k = bisect.bisect_left(values, x)
    if k > 0 and (k == len(values) or x - values[k - 1] <= values[k] - x):
        return k - 1
    return k


def _split_banded_rows(grid: list[list[list[Seg]]]) -> list[list[list[Seg]]]:
    """A grid row whose cells hold several lines at the same baselines (rules every few rows) is several rows."""
    out: list[list[list[Seg]]] = []
    for row in grid:
        pieces = [p for cell in row for p in cell]
        if len(pieces) < 4:
            out.append(row)
            continue
        bases = _cluster([p.base0 for p in pieces], 0.35 * min(p.size for p in pieces))
        if len(bases) < 2:
            out.append(row)
            continue
        multi = sum(1 for cell in row if len({_nearest(bases, p.base0) for p in cell}) >= 2)
        filled = sum(1 for cell in row if cell)
        shared = min(
            sum(1 for cell in row if any(_nearest(bases, p.base0) == k for p in cell)) for k in range(len(bases))
        )
        if multi < 2 or shared < max(2, 0.6 * filled):
            out.append(row)
            continue
        split: list[list[list[Seg]]] = [[[] for _ in row] for _ in bases]
        for c, cell in enumerate(row):
            for p in cell:
                split[_nearest(bases, p.base0)][c].append(p)
        out.extend(reversed(split))  # bases ascend; rows go top down
    return out


def _cell_text(parts: list[Seg]) -> str:
    parts.sort(key=lambda s: (-round(s.base0, 0), s.x0))
    return " ".join(p.text for p in parts)


def _grid_cells(grid: list[list[list[Seg]]]) -> list[list[str | None]] | None:
    rows = [[_cell_text(c) if c else None for c in row] for row in grid]
    rows = [r for r in rows if any(v for v in r)]
    if not rows:
        return None
    keep = [k for k in range(len(rows[0])) if any(r[k] for r in rows)]
    rows = [[r[k] for k in keep] for r in rows]
    if len(rows) < 2 or len(keep) < 2:
        return None
    return rows


def _aligned_tables(segs: list[Seg]) -> tuple[list[Seg], list[TableItem]]:
    """Borderless tables: 3+ consecutive rows of short segments lined up in 2+ columns."""
    ordered = sorted(segs, key=lambda s: -s.base0)
    lines: list[list[Seg]] = []
    for s in ordered:
        if lines and abs(lines[-1][0].base0 - s.base0) <= 0.35 * max(s.size, lines[-1][0].size):
            lines[-1].append(s)
        else:
            lines.append([s])
    tables: list[TableItem] = []
    used: set[int] = set()
    i = 0
    while i < len(lines):
        if len(lines[i]) < 2:
            i += 1
            continue
        j = i + 1
        while j < len(lines) and len(lines[j]) >= 2:
            prev_base = lines[j - 1][0].base0
            size = max(s.size for s in lines[j - 1])
            if prev_base - lines[j][0].base0 > 2.6 * size:
                break
            j += 1
        if j - i >= 3 and not _runs_on(lines, i, j):
            tbl = _aligned_table(lines[i:j])
            if tbl is not None:
                tables.append(tbl)
                for line in lines[i:j]:
                    used.update(id(s) for s in line)
        i = max(j, i + 1)
    if not tables:
        return segs, []
    return [s for s in segs if id(s) not in used], tables


def _runs_on(lines: list[list[Seg]], i: int, j: int) -> bool:
    """Lines ``i:j`` hold a line of prose that goes on in the line just above or below them (same left edge, the
    usual pitch, a line as long): a paragraph beside a figure's labels runs through the rows, they are no table."""
    for inner, outer in ((i, i - 1), (j - 1, j)):
        if not 0 <= outer < len(lines):
            continue
        for s in lines[inner]:
            if len(_WORD_RE.findall(s.text)) < 6:
                continue
            for p in lines[outer]:
                if (
                    abs(p.x0 - s.x0) <= 0.5 * s.size
                    and abs(p.size - s.size) <= 0.1 * s.size
                    and abs(p.base0 - s.base0) <= 2.0 * s.size
                    and p.x1 - p.x0 >= 0.6 * (s.x1 - s.x0)
                    and len(_WORD_RE.findall(p.text)) >= 6
                ):
                    return True
    return False


def _aligned_table(lines: list[list[Seg]], strict: bool = True) -> TableItem | None:
    cells = [s for line in lines for s in line]
    if strict:
        words4 = sum(1 for s in cells if s.text.count(" ") >= 3)
        if words4 > 0.25 * len(cells):
            return None
        lengths = sorted(len(s.text) for s in cells)
        if lengths[len(lengths) // 2] > 30:
            return None
    spans = sorted((s.x0, s.x1) for s in cells)
    cols: list[list[float]] = [[spans[0][0], spans[0][1]]]
    for a, b in spans[1:]:
        if a <= cols[-1][1] + 0.5:
            cols[-1][1] = max(cols[-1][1], b)
        else:
            cols.append([a, b])
    if len(cols) < 2:
        return None
    starts = [c[0] for c in cols]
    rows: list[list[str | None]] = []
    single = 0
    for line in lines:
        row: list[list[Seg]] = [[] for _ in cols]
        for s in line:
            k = bisect.bisect_right(starts, s.x0 + 0.01) - 1
            row[max(k, 0)].append(s)
        filled = sum(1 for c in row if c)
        if filled < 2:
            single += 1
            if strict or single > 0.34 * len(lines):
                return None
        rows.append([" ".join(p.text for p in sorted(c, key=lambda s: s.x0)) if c else None for c in row])
    # a column with a header piece but no values is the header's overflow (a superscript, a wrapped word)
    for k in range(len(cols) - 1, 0, -1):
        if all(texts[k] is None for texts in rows[1:]):
            for texts in rows:
                if texts[k] is not None:
                    texts[k - 1] = f"{texts[k - 1]} {texts[k]}" if texts[k - 1] else texts[k]
                del texts[k]
    if len(rows[0]) < 2:
        return None
    x0 = min(s.x0 for s in cells)
    x1 = max(s.x1 for s in cells)
    y0 = min(s.y0 for s in cells)
    y1 = max(s.y1 for s in cells)
    return TableItem(rows, x0, y0, x1, y1, cells[0].orient, False)


# ---------------------------------------------------------------------------------------------------------------
# Headings and emission


def _estimate(result: PageResult) -> int:
    total = 0
    for item in result.items:
        if isinstance(item, Para):
            total += sum(len(r.text) for r in item.rows) + 200
        else:
            total += sum(sum(len(c or "") + 8 for c in row) + 200 for row in item.cells)
    if result.ocr is not None:
        total += sum(len(b.text) + 300 for b in result.ocr.blocks)
    return total


def _norm(text: str) -> str:
    text = unicodedata.normalize("NFKC", text).casefold()
    return "".join(ch for ch in text if ch.isalnum())


def _strip_number(norm: str) -> str:
    return norm.lstrip("0123456789")


def _outline_headings(pages: list[PageResult], outline: list[tuple[int, str, int]]) -> dict[int, int]:
    """id(Para) -> depth for the paragraphs that are outline entries (splitting a paragraph that starts with one)."""
    by_page: dict[int, list[tuple[int, str]]] = {}
    for level, title, index in outline:
        by_page.setdefault(index, []).append((level, title))
    found: dict[int, int] = {}
    for index, entries in by_page.items():
        if index >= len(pages):
            continue
        page = pages[index]
        pos = 0
        for level, title in entries:
            target = _norm(title)
            if not target:
                continue
            hit: tuple[int, int] | None = None
            for exact in (True, False):  # an exact title first, then one with or without its section number
                for k in range(pos, len(page.items)):
                    item = page.items[k]
                    if isinstance(item, Para) and id(item) not in found:
                        taken = _match_rows(item.rows, target, exact)
                        if taken:
                            hit = (k, taken)
                            break
                if hit:
                    break
            if hit is not None:
                k, taken = hit
                item = page.items[k]
                assert isinstance(item, Para)
                if taken < len(item.rows):
                    rest = Para(item.rows[taken:], item.kind)
                    item.rows = item.rows[:taken]
                    page.items.insert(k + 1, rest)
                item.kind = "paragraph"
                found[id(item)] = min(level + 1, 64)
                pos = k + 1
    return found


def _match_rows(rows: list[Row], target: str, exact: bool) -> int:
    acc = ""
    bare_target = _strip_number(target)
    for n, row in enumerate(rows[:4], start=1):
        acc += _norm(row.text)
        if acc == target or (not exact and bare_target and _strip_number(acc) == bare_target):
            return n
        if not (target.startswith(acc) or bare_target.startswith(_strip_number(acc))):
            return 0
    return 0


def _font_headings(pages: list[PageResult]) -> dict[int, int]:
    paras = [(p.number, it) for p in pages for it in p.items if isinstance(it, Para)]
    if not paras:
        return {}
    weight: Counter[float] = Counter()
    for _, para in paras:
        for row in para.rows:
            weight[round(row.size * 2) / 2] += len(row.text)
    body = weight.most_common(1)[0][0]
    body_bold = sum(len(r.text) for _, p in paras for r in p.rows if r.bold) > 0.5 * sum(weight.values())
    # text repeated on many pages is a running head, not a heading
    seen_on: dict[str, set[int]] = {}
    for number, para in paras:
        if len(para.rows) <= 2:
            seen_on.setdefault(_norm(para.text), set()).add(number)
    repeated = {t for t, nums in seen_on.items() if len(nums) >= 3 and len(nums) >= 0.3 * len(pages)}
    bigger: dict[int, tuple[float, bool]] = {}
    bold_body: list[int] = []
    for _, para in paras:
        text = para.text
        if len(para.rows) > 3 or len(text) > 200 or not any(ch.isalpha() for ch in text):
            continue
        size = para.size
        if _norm(text) in repeated or (para.kind == "list" and not (para.bold or size >= body * 1.15)):
            continue  # a numbered line is a heading only when it stands out ("1. Introduction" in bold)
        if size >= body * (1.15 if para.bold else 1.25) + 0.1:
            bigger[id(para)] = (round(size * 2) / 2, para.bold)
        elif (
            para.bold
            and not body_bold
            and size >= body - 0.6
            and len(para.rows) <= 2
            and len(text) <= 120
            and text[-1:] not in ".,;"
        ):
            bold_body.append(id(para))
    if len(bold_body) > 0.4 * len(paras):
        bold_body = []
    levels = sorted(set(bigger.values()), reverse=True)
    rank = {s: min(k + 1, 6) for k, s in enumerate(levels)}
    out = {pid: rank[s] for pid, s in bigger.items()}
    deepest = min(len(levels) + 1, 6)
    for pid in bold_body:
        out[pid] = deepest
    return out


def _emit(
    builder: ArtifactBuilder, pages: list[PageResult], outline: list[tuple[int, str, int]], budget: OutputBudget
) -> None:
    headings: dict[int, int] = {}
    if outline:
        headings = _outline_headings(pages, outline)
        entries_with_text = sum(1 for _, title, _ in outline if _norm(title))
        if len(headings) < max(1, 0.25 * entries_with_text):
            headings = {}
    if not headings:
        headings = _font_headings(pages)
    stack: list[tuple[int, str, str]] = []  # (depth, block id, title)
    extracted = 0
    scanned = False
    cut = False
    table_no = 0
    for page in pages:
        p = page.number
        if page.status == "cut" or budget.over(builder.text_chars):
            cut = True
        if cut:
            builder.fail(f"page {p}", CUT_REASON)
            continue
        if page.status in ("scanned", "drawing"):
            if _emit_ocr(builder, page, stack):
                extracted += 1
            else:
                scanned = True
            continue
        if page.status == "damaged":
            builder.fail(f"page {p}", DAMAGED_REASON)
            continue
        if page.status == "skipped":
            builder.fail(f"page {p}", page.reason)
            continue
        if page.unreached_forms:
            builder.fail(f"page {p} deep forms", UNREACHED_FORMS_REASON)
        if page.annotations_over:
            builder.fail(f"page {p} annotations", _annotations_reason(page.annotations_over))
        if page.status == "plain":
            builder.warn(f"page {p} has broken geometry: its text is in content order, without layout")
        if page.unmapped:  # drawn, so seen: the page is read, and this unit of it is not
            builder.fail(
                f"page {p} glyphs",
                f"{page.unmapped:,} characters are left out: their font maps them to no text (the glyphs are drawn, "
                "their letters are not known)",
            )
        if page.tables_abandoned:
            reasons = "; ".join(dict.fromkeys(page.tables_abandoned))
            builder.warn(f"page {p}: table detection abandoned ({reasons}); its text is read as paragraphs")
            builder.lose(LOST_TABLES)
        extracted += 1
        k_on_page = 0
        for item in page.items:
            loc = make_locator(page_start=p, page_end=p)
            if isinstance(item, TableItem):
                k_on_page += 1
                table_no += 1
                _emit_table(builder, item, p, k_on_page, table_id=f"t{table_no}", stack=stack)
                continue
            text = item.text
            if not text:
                continue
            attrs: dict[str, Any] = {}
            if item.orient != 0:
                attrs["orientation"] = item.orient
            depth = headings.get(id(item))
            if depth is not None:
                while stack and stack[-1][0] >= depth:
                    stack.pop()
                parent = stack[-1][1] if stack else None
                path = [t for _, _, t in stack] + [text]
                bid = builder.add_block(
                    "heading", text, depth=depth, parent=parent, section_path=path, locator=loc, attrs=attrs
                )
                stack.append((depth, bid, text))
                continue
            builder.add_block(
                item.kind,
                text,
                parent=stack[-1][1] if stack else None,
                section_path=[t for _, _, t in stack],
                locator=loc,
                attrs=attrs,
            )
        if page.ocr is not None:
            _emit_ocr_regions(builder, page, stack)
    if cut:
        builder.warn("the artifact reached its output size limit; the remaining pages were not extracted")
    if scanned:
        builder.lose(LOST_OCR)
    builder.coverage(total=len(pages), extracted=extracted)


def _emit_ocr(builder: ArtifactBuilder, page: PageResult, stack: list[tuple[int, str, str]]) -> bool:
    """A scanned page's OCR paragraphs (True), or its failed unit (False: the page is not read, ``ocr`` is lost)."""
    p = page.number
    what = "scanned image" if page.status == "scanned" else "vector drawing"
    if page.ocr is None:
        builder.fail(f"page {p}", SCANNED_REASON if page.status == "scanned" else DRAWING_REASON)
        return False
    if not page.ocr.blocks:
        if page.status == "drawing" and page.ocr.reason == NOTHING_FOUND:
            return True  # read: its drawing holds no text (a chart without labels, a decoration)
        builder.fail(f"page {p}", f"no text layer ({what}); {page.ocr.reason}")
        return False
    _add_ocr_blocks(builder, page, stack)
    return True


def _add_ocr_blocks(builder: ArtifactBuilder, page: PageResult, stack: list[tuple[int, str, str]]) -> None:
    """The paragraphs OCR read on ``page`` (a scanned page's, or its images'), under the open headings."""
    assert page.ocr is not None
    for block in page.ocr.blocks:
        builder.add_block(
            "paragraph",
            block.text,
            parent=stack[-1][1] if stack else None,
            section_path=[t for _, _, t in stack],
            locator=make_locator(page_start=page.number, page_end=page.number),
            attrs=block.attrs,
        )


def _emit_ocr_regions(builder: ArtifactBuilder, page: PageResult, stack: list[tuple[int, str, str]]) -> None:
    """After a text page's own blocks: the text OCR read in its images; a warning (and ``ocr`` lost) when the file's
    OCR cap or budget left its images unread."""
    assert page.ocr is not None
    _add_ocr_blocks(builder, page, stack)
    if page.ocr.reason:
        builder.warn(f"the images of page {page.number} were {page.ocr.reason}")
        builder.lose(LOST_OCR)


def _column_type(values: list[str | None]) -> str:
    filled = [v for v in values if v]
    if filled and all(_NUMERIC_RE.match(v.replace(" ", "")) for v in filled):
        return "number"
    return "string"


def _number(value: str) -> int | float | str:
    digits = value.replace(",", "").replace(" ", "").replace("−", "-")
    if "." not in digits:
        n = int(digits)
        return n if -(2**63) <= n < 2**63 else digits
    return digits.lstrip("+")  # a decimal read from text: its exact digits, as the tabular formats send them


def _emit_table(
    builder: ArtifactBuilder, item: TableItem, page: int, k: int, *, table_id: str, stack: list[tuple[int, str, str]]
) -> None:
    header = item.cells[0]
    body = item.cells[1:]
    names: list[str] = []
    seen: Counter[str] = Counter()
    for c, value in enumerate(header):
        name = value or f"column {c + 1}"
        seen[name] += 1
        names.append(name if seen[name] == 1 else f"{name} ({seen[name]})")
    types = [_column_type([row[c] for row in body]) for c in range(len(header))]
    rows: list[list[Any]] = []
    for row in body:
        out_row: list[Any] = []
        for c, value in enumerate(row):
            if value is None or value == "":
                out_row.append(None)
            elif types[c] == "number":
                out_row.append(_number(value))
            else:
                out_row.append(value)
        rows.append(out_row)
    n = len(item.cells)
    attrs: dict[str, Any] = {"ruled": item.ruled}
    if item.orient != 0:
        attrs["orientation"] = item.orient
    builder.add_table(
        f"page {page} table {k}",
        list(zip(names, types, strict=True)),
        rows,
        header_rows=1,
        locator=make_locator(page_start=page, page_end=page, row_start=1, row_end=n),
        attrs=attrs,
        id=table_id,
    )
    prefixes = [f"{name}: " for name in names]
    builder.add_row_blocks(
        table_id,
        [" | ".join(p + v for p, v in zip(prefixes, cells, strict=True) if v) for cells in body],
        rows=range(2, len(body) + 2),  # the header is row 1
        page=page,
        parent=stack[-1][1] if stack else None,
        section_path=[t for _, _, t in stack],
        attrs={"orientation": item.orient} if item.orient != 0 else None,
    )
