"""The page count read from a PDF's bytes before pdfium opens it (``pdf_page_count``): pdfium's own count whenever
there is one, None where pdfium would count otherwise; and the refusal it makes cheap (issue 13)."""

from __future__ import annotations

import struct
from pathlib import Path

import pypdfium2 as pdfium
import pytest

from extract_fn.formats import pdf_format
from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.pdf_page_count import PDFIUM_TRUSTED_COUNT_MAX, declared_page_count
from extract_fn.limits import LIMITS
from shared.contract import ErrorCode, ExtractionError
from tests import hostile_inputs as hi

PAGE = b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] >>"


def _pdfium_count(data: bytes) -> int:
    doc = pdfium.PdfDocument(data)
    try:
        return len(doc)
    finally:
        doc.close()


def _tree(count: bytes, kids: int = 2, *, trailer_extra: bytes = b"", header: bytes = b"") -> bytes:
    """A classic-xref PDF whose root page node lists page 3 ``kids`` times and says ``/Count`` ``count``."""
    pages = b"<< /Type /Pages /Kids [%s] /Count %s >>" % (b"3 0 R " * kids, count)
    data = hi._pdf([b"<< /Type /Catalog /Pages 2 0 R >>", pages, PAGE])
    if trailer_extra:
        data = data.replace(b"/Root 1 0 R", b"/Root 1 0 R " + trailer_extra)
    if header:
        data = data.replace(b"%PDF-1.7\n", b"%PDF-1.7\n" + header, 1)
    return data


def test_declared_count_is_pdfiums_on_every_corpus_pdf(corpus: Path) -> None:
    read = 0
    for path in sorted((corpus / "pdf").rglob("*.pdf")):
        data = path.read_bytes()
        declared = declared_page_count(data)
        if declared is not None:
            assert declared == _pdfium_count(data), path.name
            read += 1
    assert read >= 20  # most classic-xref files are read


@pytest.mark.parametrize("count", [b"1", b"5", b"25000", b"1000000", str(PDFIUM_TRUSTED_COUNT_MAX).encode()])
def test_a_count_pdfium_trusts_is_read_and_is_what_pdfium_reports(count: bytes) -> None:
    data = _tree(count)
    assert declared_page_count(data) == int(count) == _pdfium_count(data)


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("pdfium walks from 0xFFFFF", _tree(str(PDFIUM_TRUSTED_COUNT_MAX + 1).encode())),
        ("zero", _tree(b"0")),
        ("indirect", _tree(b"9 0 R")),
        ("a real", _tree(b"25000.0")),
        ("no kids", hi._pdf([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Count 30000 >>"])),
        ("encrypted", _tree(b"30000", trailer_extra=b"/Encrypt 9 0 R")),
        ("linearized", _tree(b"30000", header=b"4 0 obj << /Linearized 1 /N 1 >> endobj\n")),
        ("bad startxref", _tree(b"30000").replace(b"startxref\n", b"startxref\n1")),
    ],
)
def test_what_pdfium_may_count_otherwise_is_not_read(name: str, data: bytes) -> None:
    assert declared_page_count(data) is None, name


def test_an_incremental_update_counts_by_its_own_page_tree() -> None:
    """The update redefines the page tree (2 pages, was 30,000): the newest trailer, the last definition."""
    base = _tree(b"30000")
    prev = int(base.rsplit(b"startxref\n", 1)[1].split(b"\n", 1)[0])
    at = len(base)
    update = b"2 0 obj\n<< /Type /Pages /Kids [3 0 R 3 0 R] /Count 2 >>\nendobj\n"
    xref = at + len(update)
    update += b"xref\n0 1\n0000000000 65535 f \n2 1\n%010d 00000 n \n" % at
    update += b"trailer\n<< /Size 4 /Root 1 0 R /Prev %d >>\nstartxref\n%d\n%%%%EOF\n" % (prev, xref)
    data = base + update
    assert declared_page_count(base) == 30000
    assert declared_page_count(data) == 2 == _pdfium_count(data)


def test_a_cross_reference_stream_is_followed() -> None:
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R 3 0 R 3 0 R] /Count 3 >>", PAGE]
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref_at = len(out)
    rows = [struct.pack(">BIH", 0, 0, 65535)] + [struct.pack(">BIH", 1, o, 0) for o in [*offsets, xref_at]]
    body = b"".join(rows)
    out += b"4 0 obj\n<< /Type /XRef /Size 5 /W [1 4 2] /Root 1 0 R /Length %d >>\nstream\n" % len(body)
    out += body + b"\nendstream\nendobj\nstartxref\n%d\n%%%%EOF\n" % xref_at
    data = bytes(out)
    assert declared_page_count(data) == 3 == _pdfium_count(data)


def test_a_page_tree_listing_one_page_a_million_times_is_refused_before_pdfium_opens_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """6 MB of /Kids cost pdfium 0.25 s to open before it said 1,000,000; the same answer comes from the bytes."""

    def not_opened(data: bytes) -> None:
        raise AssertionError("pdfium opened the file")

    monkeypatch.setattr(pdf_format, "_open", not_opened)
    with pytest.raises(ExtractionError) as info:
        pdf_format.extract(hi.repeated_page_pdf(1_000_000), ExtractRequest(format="pdf"))
    assert info.value.code is ErrorCode.RESOURCE_LIMIT
    assert info.value.message == (
        f"the PDF lists 1,000,000 pages, over this service's limit of {LIMITS.pdf_max_pages:,} pages per file; "
        "split it into smaller files"
    )
