"""Value-axis tick labels of a DrawingML chart, as the drawing application prints them.

A chart part does not store its value axis's labels ("0 20 40 ... 200"): the application computes them from the
axis's scaling (``c:scaling``: ``c:min``, ``c:max``, ``c:logBase``), ``c:majorUnit`` and the plotted values, then
formats them with the axis's number format (``c:numFmt``). This module does the same:

- what the chart states (min, max, major unit, log base) is used as stated;
- what it leaves automatic follows LibreOffice's chart2 ``ScaleAutomatism`` (the application the fidelity
  references are drawn with): the range starts at 0 when all values are on one side of it and the smaller end is
  under 5/6 of the larger (else it is widened by half the span toward 0); the major unit is 1, 2 or 5 times a power
  of ten, the smallest that gives at most ``max_count`` intervals; the ends are rounded out to the unit; an end with
  a value within 1/21 of the span from it gets one more interval (value axes of 2D charts, not percent axes); a
  percent-stacked chart's axis is 0..1.
  ``max_count`` is 10, the largest LibreOffice allows; it lowers it to what the axis length holds of label heights,
  so a small chart may print a coarser scale than the one computed here (radar axes: 2, as LibreOffice's).

The labels are then the formatted tick values; ``AxisScale.computed`` says whether any part of the scale was
computed (auto) rather than stated by the chart.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_TICKS = 500  # a stated major unit giving more intervals than this is ignored (LibreOffice's manual limit)
AUTO_INTERVALS = 10  # LibreOffice's MAXIMUM_AUTO_INCREMENT_COUNT
MAX_LOG_BASE = 1000.0  # c:logBase is 2..1000 (ST_LogBase)


@dataclass(frozen=True)
class AxisScale:
    minimum: float
    maximum: float
    major: float
    ticks: list[float]
    computed: bool  # any of minimum, maximum, major unit computed (auto), not stated by the chart


@dataclass(frozen=True)
class ScaleRequest:
    low: float  # smallest and largest plotted value (after stacking)
    high: float
    minimum: float | None = None  # stated by the chart (c:scaling c:min / c:max, c:majorUnit, c:logBase)
    maximum: float | None = None
    major: float | None = None
    log_base: float | None = None
    percent: bool = False  # a percent-stacked chart's axis: 0..1 unless stated
    expand_close: bool = True  # one more interval when a value is close to an automatic end
    max_count: int = AUTO_INTERVALS


def scale(req: ScaleRequest) -> AxisScale:
    """The ticks of a value axis; none when its numbers are beyond arithmetic (a span past the largest float, a
    log base past 1000: a hostile part), as the chart could not be drawn either."""
    try:
        got = _log_scale(req) if req.log_base is not None and req.log_base > 1 else _linear_scale(req)
    except (OverflowError, ValueError, ZeroDivisionError):
        got = None
    if got is None or not all(math.isfinite(x) for x in (got.minimum, got.maximum, got.major, *got.ticks)):
        return AxisScale(req.low, req.high, 0.0, [], True)
    return got


def _linear_scale(req: ScaleRequest) -> AxisScale:
    low, high = (0.0, 1.0) if req.percent else (req.low, req.high)
    auto_min, auto_max = req.minimum is None, req.maximum is None
    lo = low if req.minimum is None else req.minimum
    hi = high if req.maximum is None else req.maximum
    if lo > hi:
        if auto_max or not auto_min:
            hi = lo
        else:
            lo = hi
    swap = lo < 0 and hi <= 0  # an all-negative range is scaled as its mirror
    if swap:
        lo, hi, auto_min, auto_max = -hi, -lo, auto_max, auto_min
    src_lo, src_hi = lo, hi
    if auto_min and lo > 0:
        if lo == hi or lo / hi < 5 / 6:
            lo = 0.0
        else:
            lo -= (hi - lo) / 2
    if lo == hi:
        if auto_max or not auto_min:
            hi = 1.0 if hi == 0 else hi * 2
        else:
            lo = -1.0 if lo == 0 else lo / 2
    base = lo if not auto_min else hi if not auto_max else 0.0
    stated = req.major if req.major is not None and req.major > 0 else None
    limit = req.max_count if stated is None else MAX_TICKS
    step = stated or _nice_step((hi - lo) / max(req.max_count, 2))
    expand = req.expand_close and not req.percent
    while True:
        a_lo, a_hi = lo, hi
        if auto_min:
            a_lo = base + math.floor(_approx((a_lo - base) / step)) * step
            if expand and a_lo != 0 and (a_hi - src_lo) / (a_hi - a_lo) > 20 / 21:
                a_lo -= step
        if auto_max:
            a_hi = base + math.ceil(_approx((a_hi - base) / step)) * step
            if expand and a_hi != 0 and (src_hi - a_lo) / (a_hi - a_lo) > 20 / 21:
                a_hi += step
        if math.floor(_approx((a_hi - a_lo) / step)) <= limit or step > abs(a_hi - a_lo):
            break
        step = _next_step(step if stated is None else _nice_step(step))
        stated, limit = None, req.max_count
    if swap:
        a_lo, a_hi = -a_hi, -a_lo
    first = math.ceil(_approx((a_lo - base) / step))
    count = math.floor(_approx((a_hi - base) / step)) - first
    ticks = [_clean(base + (first + i) * step) for i in range(max(count, -1) + 1)]
    computed = auto_min or auto_max or req.major is None
    return AxisScale(_clean(a_lo), _clean(a_hi), step, ticks, computed)


def _log_scale(req: ScaleRequest) -> AxisScale:
    b = float(req.log_base or 10)
    if b > MAX_LOG_BASE:
        raise ValueError("log base beyond what a chart allows")
    lo = req.minimum if req.minimum is not None and req.minimum > 0 else None
    hi = req.maximum if req.maximum is not None and req.maximum > 0 else None
    data_lo = req.low if req.low > 0 else 1.0
    data_hi = req.high if req.high > 0 else data_lo
    e_lo = math.log(lo, b) if lo is not None else math.floor(_approx(math.log(data_lo, b)))
    e_hi = math.log(hi, b) if hi is not None else math.ceil(_approx(math.log(data_hi, b)))
    if e_hi <= e_lo:
        e_hi = e_lo + 1
    step_e = 1.0 if req.major is None or req.major <= 1 else math.log(req.major, b)
    while (e_hi - e_lo) / step_e > req.max_count * 5:
        step_e *= 2
    ticks, e = [], math.ceil(_approx(e_lo / step_e)) * step_e
    while e <= e_hi + 1e-9:
        ticks.append(_clean(b**e))
        e += step_e
    computed = lo is None or hi is None
    return AxisScale(_clean(b**e_lo), _clean(b**e_hi), b**step_e, ticks, computed)


def _nice_step(raw: float) -> float:
    """The smallest of 1, 2, 5 times a power of ten that is at least ``raw``."""
    if raw <= 1e-307:
        return 1e-307
    magnitude = 10.0 ** math.floor(_approx(math.log10(raw)))
    norm = raw / magnitude
    for n in (1.0, 2.0, 5.0):
        if norm <= n * (1 + 1e-12):
            return n * magnitude
    return 10 * magnitude


def _next_step(step: float) -> float:
    """The next larger of 1, 2, 5 times a power of ten."""
    magnitude = 10.0 ** math.floor(_approx(math.log10(step)))
    norm = round(step / magnitude)
    return (2.0 if norm == 1 else 5.0 if norm == 2 else 10.0) * magnitude


def _approx(x: float) -> float:
    """``x`` snapped to the nearest integer when it is within rounding noise of it (rtl::math::approxFloor's idea)."""
    r = round(x)
    return float(r) if abs(x - r) <= 1e-9 * max(1.0, abs(x)) else x


def _clean(x: float) -> float:
    """A tick value without the binary noise of repeated additions (0.30000000000000004 -> 0.3)."""
    return 0.0 if abs(x) < 1e-12 else float(f"{x:.12g}")
