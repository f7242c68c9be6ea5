"""OCR results as the blocks the format modules add: text plus ``attrs.ocr`` (engine, version, mean confidence)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from PIL import Image

from extract_fn.ocr import NOTHING_FOUND, engine
from extract_fn.ocr.config import Allowance

__all__ = ["NOTHING_FOUND", "OcrBlock", "OcrOutcome", "ocr_attrs", "read"]


@dataclass(frozen=True, slots=True)
class OcrBlock:
    text: str
    attrs: dict[str, Any]  # {"ocr": {"engine", "version", "confidence"}}
    lines: tuple[str, ...] = ()  # its lines (for a caller that keeps only some: ``pdf_pages.read_regions``)


@dataclass(frozen=True, slots=True)
class OcrOutcome:
    blocks: list[OcrBlock]
    reason: str | None = None  # why there are no blocks (not read, or nothing found)


def ocr_attrs(confidence: float) -> dict[str, Any]:
    """``attrs.ocr``: confidence is the mean word confidence on a 0-1 scale (Tesseract's 0-100 / 100)."""
    return {"ocr": {"engine": engine.ENGINE, "version": engine.version(), "confidence": round(confidence / 100, 3)}}


def read(image: Image.Image, allowance: Allowance, *, dpi: int, started: float | None = None) -> OcrOutcome:
    """OCR one image under the file's allowance (``started``: when the work on it began, render or decode included;
    it is all charged to the budget); a paragraph per block."""
    refusal = allowance.refusal()
    if refusal is not None:
        return OcrOutcome([], refusal)
    started = time.monotonic() if started is None else started
    try:
        page = engine.read_image(image, dpi=dpi, seconds=allowance.remaining_s())
    except engine.OcrTimeout:
        allowance.charge(time.monotonic() - started)
        return OcrOutcome([], allowance.refusal() or allowance.budget_reason())
    except engine.OcrUnreadable as unreadable:
        allowance.charge(time.monotonic() - started)
        return OcrOutcome([], f"not read by OCR: {unreadable}")
    allowance.charge(time.monotonic() - started)
    blocks = [OcrBlock(p.text, ocr_attrs(p.confidence), p.lines) for p in page.paragraphs]
    return OcrOutcome(blocks, None if blocks else NOTHING_FOUND)
