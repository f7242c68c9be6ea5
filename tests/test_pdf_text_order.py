"""``pdf_text_order``: the steps pdfium's text reader takes ordering a page's text objects, replayed before it runs
(the hostile pages the format module fails are in ``test_hostile_prechecks.py``)."""

from __future__ import annotations

from pathlib import Path

import pypdfium2 as pdfium

from extract_fn.formats.pdf_text_order import _DIRECTIONS, _steps, _text_objects, over_limit
from extract_fn.limits import LIMITS
from tests import hostile_inputs as hi


def test_objects_in_reading_order_cost_one_step_each() -> None:
    line = [(float(x), 720.0, 1.0) for x in range(1000)]
    assert _steps(line, 0, 1.0, 10**9) == 1000


def test_objects_right_to_left_on_one_line_cost_the_line_each() -> None:
    """Each is inserted in front of every object already on the line: 1 + 2 + ... + n."""
    line = [(float(-x), 720.0, 1.0) for x in range(1000)]
    assert _steps(line, 0, 1.0, 10**9) == 1000 * 1001 // 2


def test_a_new_line_starts_the_count_again() -> None:
    """Lines 12 points apart with objects 1 point tall are separate lines: each right-to-left line costs its own."""
    lines = [(float(-x), 720.0 - 12 * row, 1.0) for row in range(10) for x in range(100)]
    assert _steps(lines, 0, 1.0, 10**9) == 10 * (100 * 101 // 2)


def test_the_count_stops_past_the_limit() -> None:
    line = [(float(-x), 720.0, 1.0) for x in range(10_000)]
    assert 1000 < _steps(line, 0, 1.0, 1000) <= 1000 + 10_000


def test_the_hostile_page_is_counted_as_pdfium_sorts_it() -> None:
    """60 runs of 1,000 letters, each run half a point right of the last: hundreds of millions of steps (pdfium: 13 s
    at ~14 ns a step); the same runs side by side: one step a letter."""
    pdf = pdfium.PdfDocument(hi.overlapping_runs_pdf())
    page = pdf[1]  # held: the raw handle lives as long as the page object does
    objects = _text_objects(page.raw)
    assert len(objects) == 60_000
    assert _steps(objects, 0, 1.0, 10**12) > 500_000_000
    assert over_limit(page.raw, LIMITS.pdf_max_text_order_steps, rotation=0)
    page.close()
    pdf.close()
    pdf = pdfium.PdfDocument(hi.overlapping_runs_pdf(runs=6, letters=1000, step=600.0))
    page = pdf[1]
    objects = _text_objects(page.raw)
    assert _steps(objects, 0, 1.0, 10**12) < 10 * len(objects)
    page.close()
    pdf.close()


def test_no_corpus_pdf_page_comes_near_the_limit(corpus: Path) -> None:
    """Every page of every corpus PDF pdfium opens, its text objects replayed as the page is shown: the worst (a
    table of 1,098 objects) is 80,000 steps when this was written, 250 times under the limit."""
    worst = 0
    for path in sorted((corpus / "pdf").iterdir()):
        try:
            pdf = pdfium.PdfDocument(path.read_bytes())
        except pdfium.PdfiumError:
            continue
        for index in range(len(pdf)):
            page = pdf[index]
            objects = _text_objects(page.raw)
            for axis, sign in _DIRECTIONS[page.get_rotation() % 360]:
                worst = max(worst, _steps(objects, axis, sign, LIMITS.pdf_max_text_order_steps))
            page.close()
        pdf.close()
    assert 1000 < worst < LIMITS.pdf_max_text_order_steps // 100
