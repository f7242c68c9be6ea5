"""Generated scanned pages with known text, for the OCR tests and ``benchmarks/bench_ocr.py``.

Prose is rendered through Pillow with the TrueType font Pillow itself ships (``ImageFont.load_default(size=...)``,
Aileron Regular, FreeType), so neither CI nor a developer needs a system font. Kinds of page: ``clean``, ``skew2``
(turned 2 degrees), ``rot90`` (scanned sideways: the page image turned 90 degrees), ``rot180``, ``noisy``
(salt-and-pepper noise and a grey cast) and ``columns`` (two columns). Every page is seeded: same arguments, same
pixels, same text.
"""

from __future__ import annotations

import io
import random
import re
from dataclasses import dataclass

from PIL import Image, ImageDraw, ImageFont

KINDS = ("clean", "skew2", "rot90", "rot180", "noisy", "columns")

_SENTENCES = (
    "The quarterly report shows steady growth in every region we serve.",
    "Our customers asked for faster delivery and clearer invoices this year.",
    "Please sign the attached contract and return it before the end of March.",
    "The committee approved the budget after a long discussion about travel costs.",
    "Water pumps in the northern station were replaced during the summer.",
    "Every shipment is checked twice before it leaves the warehouse.",
    "The tenant agrees to keep the garden tidy and to report any damage promptly.",
    "Interest is charged monthly on any balance that remains unpaid after thirty days.",
    "Our engineers measured the bridge and found the cables in good condition.",
    "The museum opens at nine and closes at five except on public holidays.",
    "Meeting notes were shared with the board and the regional managers.",
    "A refund will be issued within fourteen days of receiving the returned goods.",
    "The library keeps old newspapers on microfilm in the basement archive.",
    "Drivers must carry their licence and the vehicle papers at all times.",
    "The school garden produced enough vegetables for the whole autumn term.",
    "Patients should arrive fifteen minutes early to complete the forms.",
    "The new software release fixes several problems with printing labels.",
    "Rainfall this spring was well above the average of the last decade.",
    "The company will move its head office to a larger building next year.",
    "All visitors are asked to wear a badge while they are on the premises.",
)

_WORD_RE = re.compile(r"[A-Za-z0-9]+")


def words(text: str) -> list[str]:
    """Lower-cased words, punctuation dropped: the unit recall and precision count."""
    return [w.lower() for w in _WORD_RE.findall(text)]


def recall_precision(expected: str, got: str) -> tuple[float, float]:
    """Word recall and precision as multisets (order-free: reading order is checked apart)."""
    from collections import Counter

    e, g = Counter(words(expected)), Counter(words(got))
    hit = sum((e & g).values())
    return hit / max(1, sum(e.values())), hit / max(1, sum(g.values()))


def prose(seed: int, n_sentences: int) -> list[str]:
    rng = random.Random(seed)
    return [rng.choice(_SENTENCES) for _ in range(n_sentences)]


@dataclass(frozen=True)
class Page:
    image: Image.Image
    text: str  # the text on the page, in reading order (columns: left column first)
    dpi: int
    kind: str


def _font(dpi: int, points: float) -> ImageFont.FreeTypeFont:
    font = ImageFont.load_default(size=round(points * dpi / 72))
    assert isinstance(font, ImageFont.FreeTypeFont), "Pillow without FreeType: no TrueType font"
    return font


def _wrap(sentences: list[str], font: ImageFont.FreeTypeFont, width: int) -> list[str]:
    lines: list[str] = []
    line = ""
    for word in " ".join(sentences).split():
        cand = f"{line} {word}".strip()
        if font.getlength(cand) <= width or not line:
            line = cand
        else:
            lines.append(line)
            line = word
    if line:
        lines.append(line)
    return lines


def _draw_column(draw: ImageDraw.ImageDraw, lines: list[str], x: int, y: int, font: ImageFont.FreeTypeFont) -> None:
    pitch = round(font.size * 1.45)
    for k, line in enumerate(lines):
        draw.text((x, y + k * pitch), line, fill=0, font=font)


def page(
    kind: str = "clean",
    *,
    dpi: int = 300,
    seed: int = 1,
    sentences: int = 14,
    width_in: float = 8.5,
    height_in: float = 11.0,
    points: float = 11.0,
) -> Page:
    """One generated scanned page (mode ``L``) and the text it shows."""
    if kind not in KINDS:
        raise ValueError(f"unknown kind {kind!r}")
    w, h = round(width_in * dpi), round(height_in * dpi)
    img = Image.new("L", (w, h), 255)
    draw = ImageDraw.Draw(img)
    font = _font(dpi, points)
    margin = dpi  # one inch
    top = dpi
    if kind == "columns":
        gutter = dpi // 3
        col_w = (w - 2 * margin - gutter) // 2
        left = _wrap(prose(seed, sentences // 2 or 1), font, col_w)
        right = _wrap(prose(seed + 1000, sentences // 2 or 1), font, col_w)
        _draw_column(draw, left, margin, top, font)
        _draw_column(draw, right, margin + col_w + gutter, top, font)
        text = "\n".join(left + right)
    else:
        lines = _wrap(prose(seed, sentences), font, w - 2 * margin)
        _draw_column(draw, lines, margin, top, font)
        text = "\n".join(lines)
    if kind == "skew2":
        img = img.rotate(2, resample=Image.Resampling.BICUBIC, expand=False, fillcolor=255)
    elif kind == "rot90":
        img = img.transpose(Image.Transpose.ROTATE_90)
    elif kind == "rot180":
        img = img.transpose(Image.Transpose.ROTATE_180)
    elif kind == "noisy":
        img = _noise(img, seed)
    return Page(img, text, dpi, kind)


def _noise(img: Image.Image, seed: int) -> Image.Image:
    """Salt-and-pepper specks (0.5% of pixels) and a light grey cast, as a worn photocopy."""
    rng = random.Random(seed)
    out = img.point(lambda v: 40 + v * 200 // 255)  # grey paper, grey ink
    px = out.load()
    assert px is not None
    w, h = out.size
    for _ in range(w * h // 200):
        px[rng.randrange(w), rng.randrange(h)] = rng.choice((0, 255))
    return out


def png_bytes(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, "PNG", optimize=False)
    return buf.getvalue()


def image_pdf(images: list[Image.Image], dpi: int) -> bytes:
    """A PDF with one full-page image per page and no text layer (what a scanner writes)."""
    buf = io.BytesIO()
    first, rest = images[0], images[1:]
    first.save(buf, "PDF", resolution=float(dpi), save_all=True, append_images=rest)
    return buf.getvalue()
