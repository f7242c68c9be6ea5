"""OCR for PDF pages: a page without a text layer is rendered through pdfium and read whole."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import pypdfium2 as pdfium

from extract_fn.limits import Limits
from extract_fn.ocr import blocks
from extract_fn.ocr.config import Allowance

RENDER_FAILED = "not read by OCR: pdfium could not render the page"
TOO_SMALL = "its images are too small to hold text (not read by OCR)"


def render_scale(width_pt: float, height_pt: float, limits: Limits) -> float:
    """pdfium's scale (pixels per point) for OCR: ``ocr_dpi``, lowered so the render stays within
    ``ocr_max_image_pixels`` (a page of 200 x 200 inches is read at what fits, not allocated whole)."""
    scale = limits.ocr_dpi / 72
    area = max(width_pt, 1.0) * max(height_pt, 1.0)
    if area * scale * scale > limits.ocr_max_image_pixels:
        scale = math.sqrt(limits.ocr_max_image_pixels / area)
    return scale


def read_page(page: Any, allowance: Allowance, limits: Limits, *, pictures: bool = True) -> blocks.OcrOutcome:
    """OCR a pypdfium2 page (as displayed: its /Rotate applied) into paragraph blocks. ``pictures``: the page draws
    images, one of which must have the pixels to hold text (else it draws vector paths only: text as outlines)."""
    refusal = allowance.refusal()
    if refusal is not None:
        return blocks.OcrOutcome([], refusal)
    too_large = _render_too_large(page, limits)
    if too_large is not None:
        return blocks.OcrOutcome([], too_large)
    if pictures and not _holds_a_picture(page, limits):
        return blocks.OcrOutcome([], TOO_SMALL)
    started = time.monotonic()
    width, height = page.get_size()
    scale = render_scale(width, height, limits)
    try:
        bitmap = page.render(scale=scale, grayscale=True)
        image = bitmap.to_pil()
    except (pdfium.PdfiumError, ValueError, OSError, MemoryError):
        return blocks.OcrOutcome([], RENDER_FAILED)
    return blocks.read(image, allowance, dpi=max(1, round(scale * 72)), started=started)


def _render_too_large(page: Any, limits: Limits) -> str | None:
    """Why the page is not rendered, when the images a render decodes hold more than ``ocr_max_render_image_pixels``
    (pdfium decodes each image it draws whole, whatever the render's size); else None. Every image counts, in
    forms as deep as pdfium draws them (the first ``_OBJECTS_WALKED`` images)."""
    import pypdfium2.raw as R

    from extract_fn.formats.pdf_forms import PDFIUM_MAX_FORM_LEVEL

    limit = limits.ocr_max_render_image_pixels
    pixels = 0
    objects = page.get_objects(filter=[R.FPDF_PAGEOBJ_IMAGE], max_depth=PDFIUM_MAX_FORM_LEVEL + 1)
    for k, obj in enumerate(objects):
        if k >= _OBJECTS_WALKED:
            break
        try:
            width, height = obj.get_px_size()
        except (pdfium.PdfiumError, ValueError):
            continue
        pixels += max(0, width) * max(0, height)
        if pixels > limit:
            return (
                f"not read by OCR: the images drawn on the page hold more than {limit:,} pixels, past this "
                "service's limit for one page's render"
            )
    return None


def _holds_a_picture(page: Any, limits: Limits) -> bool:
    """Whether one of the page's images has the pixels to hold text (a 2 x 2 image stretched over a page has not)."""
    import pypdfium2.raw as R

    objects = page.get_objects(filter=[R.FPDF_PAGEOBJ_IMAGE], max_depth=limits.pdf_max_form_depth)
    for k, obj in enumerate(objects):
        if k >= _OBJECTS_WALKED:
            return True  # too many to look at: let OCR (under the cap and budget) decide
        try:
            width, height = obj.get_px_size()
        except (pdfium.PdfiumError, ValueError):
            return True
        if width * height >= limits.ocr_min_picture_pixels:
            return True
    return False


# -- image regions of pages that have a text layer ------------------------------------------------------------

MAX_REGIONS_PER_PAGE = 8
_MIN_REGION_SHARE = 0.05  # of the page's area: smaller pictures are icons, logos, rules
_MIN_CONFIDENCE = 70.0  # Tesseract's 0-100: below it a photo's texture reads as words
_MIN_NEW_SHARE = 0.5  # of a paragraph's words the text layer must lack for it to count as new text
_MIN_NEW_WORDS = 6  # words a run of new lines needs to be kept from a paragraph that is mostly not new
_OBJECTS_WALKED = 20_000
_TOUCH = 1.0  # points between two images that count as touching (a scan's strips abut)
_JOINED_MAX = 500  # image boxes of a page joined where they touch (each pass is quadratic in them)


def image_regions(
    page: Any, limits: Limits, images: Callable[[], Sequence[Any]] | None = None
) -> list[tuple[float, float, float, float]]:
    """(left, bottom, right, top) in page space of the pictures large enough to hold text to read: image objects,
    those that touch or overlap joined first (a scan stored as strips, each a sliver of the page, is one picture).

    ``images``: the page's raw image objects in content order, when the caller has walked the page already (the PDF
    module's ``PageObjects``); else they are read here."""
    import ctypes

    import pypdfium2.raw as R

    x0, y0, x1, y1 = page.get_bbox()
    page_area = max(1.0, (x1 - x0) * (y1 - y0))
    scale = limits.ocr_dpi / 72
    if images is None:
        found = page.get_objects(filter=[R.FPDF_PAGEOBJ_IMAGE], max_depth=limits.pdf_max_form_depth)
        objects: Iterable[Any] = (obj.raw for obj in found)
    else:
        objects = images()
    fl, fb, fr, ft = ctypes.c_float(), ctypes.c_float(), ctypes.c_float(), ctypes.c_float()
    boxes: list[tuple[float, float, float, float]] = []
    for k, obj in enumerate(objects):
        if k >= _OBJECTS_WALKED:
            break
        if not R.FPDFPageObj_GetBounds(obj, fl, fb, fr, ft):
            continue
        left, bottom, right, top = max(fl.value, x0), max(fb.value, y0), min(fr.value, x1), min(ft.value, y1)
        if right > left and top > bottom:
            boxes.append((left, bottom, right, top))
    out: list[tuple[float, float, float, float]] = []
    for left, bottom, right, top in _joined(boxes):
        area = (right - left) * (top - bottom)
        if area < _MIN_REGION_SHARE * page_area or area * scale * scale < limits.ocr_min_picture_pixels:
            continue
        out.append((left, bottom, right, top))
        if len(out) >= MAX_REGIONS_PER_PAGE:
            break
    return out


def _joined(boxes: list[tuple[float, float, float, float]]) -> list[tuple[float, float, float, float]]:
    """``boxes`` with each group that touches or overlaps (within ``_TOUCH`` points) made one box, in the order of
    each group's first; only the first ``_JOINED_MAX`` are joined (past them, each stands alone)."""
    head, rest = boxes[:_JOINED_MAX], boxes[_JOINED_MAX:]
    merged = list(head)
    changed = True
    while changed:
        changed = False
        out: list[tuple[float, float, float, float]] = []
        for box in merged:
            for i, other in enumerate(out):
                if _touch(box, other):
                    out[i] = _union(box, other)
                    changed = True
                    break
            else:
                out.append(box)
        merged = out
    return merged + rest


def _touch(a: Box, b: Box) -> bool:
    return a[0] <= b[2] + _TOUCH and b[0] <= a[2] + _TOUCH and a[1] <= b[3] + _TOUCH and b[1] <= a[3] + _TOUCH


Box = tuple[float, float, float, float]  # left, bottom, right, top


def _union(a: Box, b: Box) -> Box:
    return min(a[0], b[0]), min(a[1], b[1]), max(a[2], b[2]), max(a[3], b[3])


def _words(text: str) -> list[str]:
    return [w for w in (t.strip(".,;:!?()[]\"'").casefold() for t in text.split()) if w]


def read_regions(
    page: Any,
    allowance: Allowance,
    limits: Limits,
    layer_text: str,
    images: Callable[[], Sequence[Any]] | None = None,
) -> blocks.OcrOutcome | None:
    """OCR of a text page's large images; only paragraphs with words the text layer lacks are kept.

    None when the page has no such image. Each region is rendered alone on an upright page; a page displayed
    rotated is rendered whole, as displayed (a crop is given in the unrotated page's space), and read once.
    """
    regions = image_regions(page, limits, images)
    if not regions:
        return None
    too_large = _render_too_large(page, limits)
    if too_large is not None:
        return blocks.OcrOutcome([], too_large)
    known = set(_words(layer_text))
    x0, y0, x1, y1 = page.get_bbox()
    if page.get_rotation() % 360:
        width, height = page.get_size()
        crops = [(render_scale(width, height, limits), (0.0, 0.0, 0.0, 0.0))]
    else:
        crops = [
            (render_scale(right - left, top - bottom, limits), (left - x0, bottom - y0, x1 - right, y1 - top))
            for left, bottom, right, top in regions
        ]
    kept: list[blocks.OcrBlock] = []
    reason: str | None = None
    for scale, crop in crops:
        started = time.monotonic()
        try:
            bitmap = page.render(scale=scale, grayscale=True, crop=crop)
            image = bitmap.to_pil()
        except (pdfium.PdfiumError, ValueError, OSError, MemoryError):
            continue
        outcome = blocks.read(image, allowance, dpi=max(1, round(scale * 72)), started=started)
        if outcome.reason and outcome.reason != blocks.NOTHING_FOUND:
            reason = outcome.reason
            break
        for block in outcome.blocks:
            kept.extend(_new_text(block, known))
    return blocks.OcrOutcome(kept, reason)


def _new_text(block: blocks.OcrBlock, known: set[str]) -> list[blocks.OcrBlock]:
    """What of an OCR paragraph the text layer lacks: the paragraph, when at least half its words are new; else
    each run of its lines that are mostly new and hold ``_MIN_NEW_WORDS`` words or more (Tesseract may read a
    paragraph the layer covers and the next, which it does not, as one). Nothing when OCR is unsure of it."""
    words = _words(block.text)
    if not words or block.attrs["ocr"]["confidence"] * 100 < _MIN_CONFIDENCE:
        return []
    if sum(w not in known for w in words) >= _MIN_NEW_SHARE * len(words):
        return [block]
    out: list[blocks.OcrBlock] = []
    run: list[str] = []
    for line in (*block.lines, ""):  # "" ends the last run
        line_words = _words(line)
        if line_words and sum(w not in known for w in line_words) >= _MIN_NEW_SHARE * len(line_words):
            run.append(line)
            continue
        if len(_words(" ".join(run))) >= _MIN_NEW_WORDS:
            out.append(blocks.OcrBlock(" ".join(run), block.attrs, tuple(run)))
        run = []
    return out
