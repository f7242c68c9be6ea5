"""``pdf_forms``: which files' form XObjects may multiply (the byte scan) and which pages pass the limit (pypdf).

The files the format module fails a page of are in ``test_hostile_prechecks.py``; here the two steps alone, and the
real-world PDFs, none of which may lose a page to the check.
"""

from __future__ import annotations

from pathlib import Path

import pypdfium2 as pdfium
import pytest

from extract_fn.formats.pdf_forms import PDFIUM_MAX_FORM_LEVEL, FormPages, check_pages, forms_may_multiply
from tests import hostile_inputs as hi


def _over(data: bytes, limit: int) -> set[int] | None:
    pages = check_pages(data, limit)
    return None if pages is None else pages.over


def test_a_file_without_forms_is_not_read_again() -> None:
    assert not forms_may_multiply(hi.one_page_pdf(b"BT /F1 12 Tf 72 720 Td (text) Tj ET"))


def test_a_form_that_draws_one_thing_cannot_multiply() -> None:
    """A form drawing itself once is parsed 40 times by pdfium, as many as the levels it follows: no second step."""
    assert not forms_may_multiply(hi.multiplying_forms_pdf(None, draws=1))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"levels": None},
        {"levels": 2},  # one form drawing another twice: the scan cannot tell a form from an image
        {"levels": None, "form_filter": b" /Filter /ASCIIHexDecode"},  # a filter the scan does not read
        {"levels": PDFIUM_MAX_FORM_LEVEL + 2, "draws": 1},  # a chain deeper than pdfium follows
    ],
    ids=["loop", "two_draws", "unread_filter", "deep_chain"],
)
def test_the_byte_scan_sends_a_file_that_may_multiply_to_the_second_step(kwargs: dict[str, object]) -> None:
    assert forms_may_multiply(hi.multiplying_forms_pdf(**kwargs))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("levels", "drawings"),
    [(12, 2**12 - 1), (17, 2**17 - 1)],
)
def test_a_chain_is_counted_as_pdfium_parses_it(levels: int, drawings: int) -> None:
    """A chain of ``levels`` forms each drawing the next twice is 2^levels - 1 drawings: over a limit just below
    that, not over one at it."""
    data = hi.multiplying_forms_pdf(levels)
    assert _over(data, drawings) == set()
    assert _over(data, drawings - 1) == {1}


def test_a_loop_counts_the_40_levels_pdfium_follows() -> None:
    """A form drawing itself once: 1 drawing from the page and one a level for pdfium's 40 levels below it."""
    data = hi.multiplying_forms_pdf(None, draws=1)
    assert _over(data, PDFIUM_MAX_FORM_LEVEL + 1) == set()
    assert _over(data, PDFIUM_MAX_FORM_LEVEL) == {1}


def test_a_file_pypdf_cannot_read_leaves_the_decision_to_pdfium() -> None:
    data = b"%PDF-1.7\n1 0 obj\n<< /Subtype /Form /Length 20 >>\nstream\n/X0 Do /X0 Do\nendstream\nendobj\n"
    assert forms_may_multiply(data)
    assert check_pages(data, 100) is None


def test_no_corpus_pdf_loses_a_page_to_the_check(corpus: Path) -> None:
    """The real-world PDFs the byte scan sends to the second step (maps, papers: forms drawing many images) have
    no page past the limit, and pypdf reads each of them. The check runs once pdfium has opened the file, so a file
    that asks for a password never reaches it."""
    sent = 0
    for path in sorted((corpus / "pdf").iterdir()):
        data = path.read_bytes()
        try:
            pdfium.PdfDocument(data).close()
        except pdfium.PdfiumError:
            continue
        if forms_may_multiply(data):
            sent += 1
            assert check_pages(data, 100_000) == FormPages(set(), set()), path.name
    assert sent >= 3  # the corpus holds such files (3 when this was written): the second step ran


def test_text_in_forms_deeper_than_pdfium_reads_is_found() -> None:
    """A chain of 42 forms, each drawing the next once and showing a line: pdfium reads the first 40 (checked on the
    installed build: "level 0" to "level 39"), so the text of the last two is not read."""
    data = hi.multiplying_forms_pdf(PDFIUM_MAX_FORM_LEVEL + 2, draws=1)
    assert check_pages(data, 100_000) == FormPages(set(), {1})
    pdf = pdfium.PdfDocument(data)
    page = pdf[1]  # held while its text page is read
    text = page.get_textpage().get_text_range()
    page.close()
    pdf.close()
    assert "level 39" in text
    assert "level 40" not in text


@pytest.mark.parametrize("kwargs", [{"levels": PDFIUM_MAX_FORM_LEVEL, "draws": 1}, {"levels": None, "draws": 1}])
def test_forms_within_pdfium_levels_or_in_a_loop_are_read(kwargs: dict[str, object]) -> None:
    """40 forms deep: every one is read. A form drawing itself: its text is read where it is first drawn."""
    assert check_pages(hi.multiplying_forms_pdf(**kwargs), 100_000) == FormPages(set(), set())  # type: ignore[arg-type]
