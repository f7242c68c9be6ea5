"""OCR for PDF pages: a page without a text layer is rendered through pdfium and read whole."""

from __future__ import annotations

import math
from typing import Any

import pypdfium2 as pdfium

from extract_fn.limits import Limits
from extract_fn.ocr import blocks
from extract_fn.ocr.config import Allowance

RENDER_FAILED = "not read by OCR: pdfium could not render the page"


def render_scale(width_pt: float, height_pt: float, limits: Limits) -> float:
    """pdfium's scale (pixels per point) for OCR: ``ocr_dpi``, lowered so the render stays within
    ``ocr_max_image_pixels`` (a page of 200 x 200 inches is read at what fits, not allocated whole)."""
    scale = limits.ocr_dpi / 72
    area = max(width_pt, 1.0) * max(height_pt, 1.0)
    if area * scale * scale > limits.ocr_max_image_pixels:
        scale = math.sqrt(limits.ocr_max_image_pixels / area)
    return scale


def read_page(page: Any, allowance: Allowance, limits: Limits) -> blocks.OcrOutcome:
    """OCR a pypdfium2 page (as displayed: its /Rotate applied) into paragraph blocks."""
    refusal = allowance.refusal()
    if refusal is not None:
        return blocks.OcrOutcome([], refusal)
    width, height = page.get_size()
    scale = render_scale(width, height, limits)
    try:
        bitmap = page.render(scale=scale, grayscale=True)
        image = bitmap.to_pil()
    except (pdfium.PdfiumError, ValueError, OSError, MemoryError):
        return blocks.OcrOutcome([], RENDER_FAILED)
    return blocks.read(image, allowance, dpi=max(1, round(scale * 72)))
