"""pdf_calls (pdfium's text calls without ctypes' argument conversion) and the page walk give what pypdfium2's
checked calls give, on the corpus' PDFs."""

from __future__ import annotations

import ctypes
import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pypdfium2 as pdfium
import pypdfium2.raw as R
import pytest

from extract_fn.formats import pdf_calls as C
from extract_fn.formats.pdf_format import PageObjects
from extract_fn.limits import LIMITS

PAGES_PER_FILE = 3


def _pages(corpus: Path) -> Iterator[tuple[str, Any]]:
    for path in sorted((corpus / "pdf").glob("*.pdf")):
        try:
            pdf = pdfium.PdfDocument(path.read_bytes())
        except pdfium.PdfiumError:
            continue  # (empty, encrypted, broken: nothing to compare)
        try:
            for index in range(min(len(pdf), PAGES_PER_FILE)):
                try:
                    page = pdf[index]
                except pdfium.PdfiumError:
                    continue
                try:
                    yield f"{path.name} page {index + 1}", page
                finally:
                    page.close()
        finally:
            pdf.close()


def _address(handle: Any) -> int:
    return ctypes.cast(handle, ctypes.c_void_p).value or 0


def test_the_unchecked_text_calls_answer_as_the_checked_ones(corpus: Path) -> None:
    out = C.OutParams()
    a, b, c, d = ctypes.c_double(), ctypes.c_double(), ctypes.c_double(), ctypes.c_double()
    m = R.FS_MATRIX()
    compared = 0
    for where, page in _pages(corpus):
        tp = page.get_textpage()
        try:
            raw = tp.raw
            n = R.FPDFText_CountChars(raw)
            for i in range(0, n, max(1, n // 40)):
                assert C.char_box(raw, i, out.pa, out.pb, out.pc, out.pd) == R.FPDFText_GetCharBox(raw, i, a, b, c, d)
                assert (out.a.value, out.b.value, out.c.value, out.d.value) == (a.value, b.value, c.value, d.value)
                assert C.char_origin(raw, i, out.pa, out.pb) == R.FPDFText_GetCharOrigin(raw, i, a, b), where
                assert (out.a.value, out.b.value) == (a.value, b.value), where
                assert C.font_size(raw, i) == R.FPDFText_GetFontSize(raw, i), where
                assert C.char_matrix(raw, i, out.pm) == R.FPDFText_GetMatrix(raw, i, m), where
                assert (out.m.a, out.m.b, out.m.c, out.m.d, out.m.e, out.m.f) == (m.a, m.b, m.c, m.d, m.e, m.f)
                assert C.unicode_map_error(raw, i) == R.FPDFText_HasUnicodeMapError(raw, i), where
                obj = R.FPDFText_GetTextObject(raw, i)
                assert (C.text_object(raw, i) or 0) == _address(obj), where
                if obj:
                    assert C.text_object_font(C.text_object(raw, i)) == _address(R.FPDFTextObj_GetFont(obj)), where
                count = min(20, n - i)
                assert C.count_rects(raw, i, count) == R.FPDFText_CountRects(raw, i, count), where
                assert C.rect(raw, 0, out.pa, out.pb, out.pc, out.pd) == R.FPDFText_GetRect(raw, 0, a, b, c, d)
                assert (out.a.value, out.b.value, out.c.value, out.d.value) == (a.value, b.value, c.value, d.value)
                compared += 1
        finally:
            tp.close()
    assert compared > 500  # the corpus' text pages were looked at


def test_the_walk_finds_the_images_pypdfium2_finds_in_its_order(corpus: Path) -> None:
    pages_with_images = 0
    for where, page in _pages(corpus):
        expected = [
            _address(obj.raw)
            for obj in page.get_objects(filter=[R.FPDF_PAGEOBJ_IMAGE], max_depth=LIMITS.pdf_max_form_depth)
        ]
        found = [_address(obj) for obj in PageObjects(page.raw, LIMITS).images()]
        assert found == expected, where
        pages_with_images += bool(expected)
    assert pages_with_images >= 3


@pytest.mark.parametrize("depth", [0, 1, 2])
def test_the_walk_reads_images_as_deep_in_forms_as_get_objects(depth: int, corpus: Path) -> None:
    """Lowered form depths: the images the walk gives are the ones get_objects reads at that depth."""
    limits = dataclasses.replace(LIMITS, pdf_max_form_depth=depth)
    for where, page in _pages(corpus):
        expected = [_address(obj.raw) for obj in page.get_objects(filter=[R.FPDF_PAGEOBJ_IMAGE], max_depth=depth)]
        assert [_address(obj) for obj in PageObjects(page.raw, limits).images()] == expected, where
