"""What pdfium's text reader would spend ordering a page's text objects, counted before it runs.

``FPDFText_LoadPage`` gathers a line's text objects into a buffer sorted by x: each new object is inserted by
scanning back from the buffer's end past every object further right (``CPDF_TextPage::ProcessTextObject``), and
the buffer is emptied when an object's y leaves the line (more than half the wider of the two characters'
widths from the buffer's last object). Each ``Tj`` is an object of its own, so a 2 KB page of 60 runs of 1,000
one-letter ``Tj`` drawn over one another, each run starting half a point right of the last, makes 900 million
steps: 13 s of a worker for nothing a reader needs, and 60 s (the timeout) with twice the runs.

``over_limit`` replays that insertion on the page pdfium has loaded (the objects and their positions, through
pdfium's object calls; forms are followed with their matrices): the steps are the objects each insertion passes.
It cannot read character widths without the text reader, so it keeps a line open wider than pdfium does (the
larger of the two objects' widths and heights): it never counts fewer steps on a line than pdfium takes. Text
set in reading order costs one step an object; a page of fewer objects than ``sqrt(2 * limit)`` cannot pass the
limit and is not walked (its objects' types are read to count them, ~0.7 µs an object).
"""

from __future__ import annotations

import bisect
import ctypes
import math
from typing import Any

import pypdfium2.raw as R

from extract_fn.formats import pdf_calls as C
from extract_fn.formats.pdf_matrix import apply as _apply
from extract_fn.formats.pdf_matrix import mul as _mul

# The order pdfium sorts a line in: the display's x (its page matrix, which turns the page by its /Rotate): the
# page's x, reversed on a page shown upside down; on a page shown turned a quarter, the page's y, both ways replayed.
_DIRECTIONS = {0: ((0, 1.0),), 180: ((0, -1.0),), 90: ((1, 1.0), (1, -1.0)), 270: ((1, 1.0), (1, -1.0))}
_EVERY_DIRECTION = ((0, 1.0), (0, -1.0), (1, 1.0), (1, -1.0))  # a rotation pdfium would not give
_MIN_WIDTH = 0.01  # pdfium's kSizeEpsilon: a narrower text object is not read


def over_limit(page_raw: Any, limit: int, *, rotation: int) -> bool:
    """Whether ordering the page's text objects would take pdfium more than ``limit`` steps. ``rotation``: the
    page's /Rotate (0, 90, 180, 270)."""
    small = math.isqrt(2 * limit)
    if not _at_least_text_objects(page_raw, small):
        return False
    objects = _text_objects(page_raw)
    directions = _DIRECTIONS.get(rotation % 360, _EVERY_DIRECTION)
    return any(_steps(objects, axis, sign, limit) > limit for axis, sign in directions)


def _at_least_text_objects(page_raw: Any, enough: int) -> bool:
    """Whether the page draws ``enough`` text objects, counting those of its forms (each drawing of a form is
    objects of its own); one call an object (~0.7 µs), stopping at ``enough``."""
    count = 0
    text_kind, form_kind = R.FPDF_PAGEOBJ_TEXT, R.FPDF_PAGEOBJ_FORM
    object_type = C.object_type
    holders: list[tuple[Any, bool]] = [(page_raw, False)]
    while holders:
        holder, is_form = holders.pop()
        n = R.FPDFFormObj_CountObjects(holder) if is_form else R.FPDFPage_CountObjects(holder)
        for k in range(n):
            obj = C.form_object(holder, k) if is_form else C.page_object(holder, k)
            if not obj:
                continue
            kind = object_type(obj)
            if kind == text_kind:
                count += 1
                if count >= enough:
                    return True
            elif kind == form_kind:
                holders.append((obj, True))
    return False


def _text_objects(page_raw: Any) -> list[tuple[float, float, float]]:
    """(x, y, line tolerance) of each text object in content order, forms followed, in page space."""
    out: list[tuple[float, float, float]] = []
    fm = R.FS_MATRIX()
    fl, fb, fr, ft = ctypes.c_float(), ctypes.c_float(), ctypes.c_float(), ctypes.c_float()
    pm, pl, pb, pr, pt = (ctypes.byref(v) for v in (fm, fl, fb, fr, ft))
    bounds, matrix, object_type = C.object_bounds, C.object_matrix, C.object_type
    text_kind, form_kind = R.FPDF_PAGEOBJ_TEXT, R.FPDF_PAGEOBJ_FORM
    identity = (1.0, 0.0, 0.0, 1.0, 0.0, 0.0)
    # Depth first in content order: a form's objects come where the form is drawn, as pdfium reads them.
    stack: list[tuple[Any, tuple[float, ...], int, int]] = [(page_raw, identity, 0, 0)]
    while stack:
        holder, ctm, depth, start = stack.pop()
        count = R.FPDFFormObj_CountObjects(holder) if depth else R.FPDFPage_CountObjects(holder)
        for k in range(start, count):
            obj = C.form_object(holder, k) if depth else C.page_object(holder, k)
            if not obj:
                continue
            kind = object_type(obj)
            if kind == form_kind and matrix(obj, pm):
                stack.append((holder, ctm, depth, k + 1))
                stack.append((obj, _mul((fm.a, fm.b, fm.c, fm.d, fm.e, fm.f), ctm), depth + 1, 0))
                break
            if kind != text_kind or not bounds(obj, pl, pb, pr, pt) or not matrix(obj, pm):
                continue
            x, y = _apply(ctm, fm.e, fm.f)
            (x0, y0), (x1, y1) = _apply(ctm, fl.value, fb.value), _apply(ctm, fr.value, ft.value)
            width, height = abs(x1 - x0), abs(y1 - y0)
            if width < _MIN_WIDTH and height < _MIN_WIDTH:
                continue
            out.append((x, y, max(width, height)))
    return out


def _steps(objects: list[tuple[float, float, float]], axis: int, sign: float, limit: int) -> int:
    """pdfium's insertion steps for ``objects`` sorted along ``axis`` (0: x, 1: y) in direction ``sign``; lines are
    told apart along the other axis. Stops once past ``limit``."""
    other = 1 - axis
    line: list[float] = []  # the open line's positions along the sort axis, ascending
    last_across = 0.0  # where the line's last object (the one furthest along) sits across the line
    last_tolerance = 0.0
    steps = 0
    for obj in objects:
        along, across, tolerance = sign * obj[axis], obj[other], obj[2]
        if line and abs(across - last_across) > max(tolerance, last_tolerance):
            line.clear()
        at = bisect.bisect_right(line, along)
        steps += len(line) - at + 1
        if steps > limit:
            return steps
        line.insert(at, along)
        if at == len(line) - 1:
            last_across, last_tolerance = across, tolerance
    return steps
