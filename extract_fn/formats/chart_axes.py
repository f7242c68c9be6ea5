"""The value axes of a chart part (``c:valAx``) and the tick labels they print (``chart_axis_scale`` computes the
scale, ``chart_number_format`` formats each tick).

An axis prints labels unless ``c:delete`` is 1 or ``c:tickLblPos`` is ``none``. Its range is that of the values
plotted on it (the series of the chart groups naming its ``c:axId``; a stacked group's stacked sums; a scatter or
bubble chart's x values for a horizontal axis); a percent-stacked group's axis is 0..100%. Its labels use the
axis's number format, or the first series' cached format when the axis's is ``sourceLinked``, divided by its
display units (``c:dispUnits``; a 1-2-5 scale divided by a power of ten is the same scale, so the ticks are computed
on the values and divided after; a custom unit that is no power of ten may be drawn with other ticks); a
``c:dispUnitsLbl`` prints the unit's name or its own text.

How many intervals an automatic scale may have depends on the room for labels, as in LibreOffice (the axis length
over the height of a label on a vertical axis, the widest label on a horizontal one, at most 10): when the caller
knows the drawing's size (``axis_labels(..., size=(width, height))`` in points) the count is estimated from it and the
chart's font size (``a:defRPr sz``, 10 pt when absent), the plot area taken as 80% of the drawing; without a size it
is 10. The estimate uses average glyph widths, so a chart near a threshold may print one step coarser or finer.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, replace
from typing import Any

from extract_fn.formats.chart_axis_scale import AUTO_INTERVALS, ScaleRequest, scale
from extract_fn.formats.chart_number_format import EPOCH_1900, format_number
from extract_fn.formats.ooxml_text import local, uint_attr

DEFAULT_FONT_PT = 10.0  # LibreOffice's chart text size when the part sets none
PLOT_SHARE = 0.8  # the share of the drawing an axis runs along (titles, labels and margins take the rest)
LINE_HEIGHT = 1.17  # a label's height per point of font size
_GLYPH = {".": 0.28, ",": 0.28, "%": 0.89, "-": 0.33, " ": 0.28}  # em widths; a digit or letter is 0.55 em


@dataclass(frozen=True)
class AxisSpec:
    position: str  # c:axPos: l, r (vertical) or b, t (horizontal)
    request: ScaleRequest
    code: str  # the number format of the labels
    font_pt: float
    epoch: dt.date = EPOCH_1900
    divisor: float = 1.0  # c:dispUnits: the labels show value / divisor
    unit_label: str = ""  # c:dispUnitsLbl: the unit printed by the axis ("Millions")


_UNITS = {  # ST_BuiltInUnit -> (divisor, the label Excel prints)
    "hundreds": (1e2, "Hundreds"),
    "thousands": (1e3, "Thousands"),
    "tenThousands": (1e4, "Ten Thousands"),
    "hundredThousands": (1e5, "Hundred Thousands"),
    "millions": (1e6, "Millions"),
    "tenMillions": (1e7, "Ten Millions"),
    "hundredMillions": (1e8, "Hundred Millions"),
    "billions": (1e9, "Billions"),
    "trillions": (1e12, "Trillions"),
}


def _display_units(ax: Any) -> tuple[float, str]:
    """(divisor, printed unit label) of an axis's ``c:dispUnits``; (1, "") without one."""
    units = _child(ax, "dispUnits")
    if units is None:
        return 1.0, ""
    custom = _float(_val(units, "custUnit"))
    divisor, name = _UNITS.get(_val(units, "builtInUnit") or "", (1.0, ""))
    if custom is not None and custom > 0:
        divisor, name = custom, ""
    shown = _child(units, "dispUnitsLbl")
    if shown is None:
        return divisor, ""
    paras = [p for p in shown.iter() if local(p.tag) == "p"]
    own = " ".join("".join(t.text or "" for t in p.iter() if local(t.tag) == "t") for p in paras)
    return divisor, own.strip() or name


def _child(el: Any, name: str) -> Any:
    for c in el if el is not None else ():
        if local(c.tag) == name:
            return c
    return None


def _children(el: Any, name: str) -> list[Any]:
    return [c for c in el if local(c.tag) == name]


def _val(el: Any, name: str) -> str | None:
    c = _child(el, name)
    return c.get("val") if c is not None else None


def _float(text: str | None) -> float | None:
    try:
        x = float(text) if text is not None else None
    except ValueError:
        return None
    return x if x is not None and math.isfinite(x) else None


def labels_drawn(ax: Any) -> bool:
    """Whether an axis is drawn with its labels (not ``c:delete``, ``c:tickLblPos`` not ``none``)."""
    deleted = _child(ax, "delete")
    labels = _child(ax, "tickLblPos")
    return (deleted is None or deleted.get("val") in ("0", "false")) and (labels is None or labels.get("val") != "none")


def _numbers(el: Any, limit: int) -> dict[int, float]:
    """The cached numbers of a ``c:val``/``c:xVal``/``c:yVal`` by point index, at most ``limit``."""
    out: dict[int, float] = {}
    for cache in el.iter() if el is not None else ():
        if local(cache.tag) in ("numCache", "numLit"):
            for pt in _children(cache, "pt"):
                if len(out) >= limit:
                    break
                v = _child(pt, "v")
                x = _float(v.text if v is not None else None)
                idx = uint_attr(pt.get("idx"))
                if x is not None and idx is not None:
                    out[idx] = x
            break
    return out


def _source_format(groups: list[Any]) -> str:
    """The number format of the first series' cached values (what a ``sourceLinked`` axis format follows)."""
    for group in groups:
        for ser in _children(group, "ser"):
            for name in ("val", "yVal"):
                code = (
                    next((c for c in _child(ser, name).iter() if local(c.tag) == "formatCode"), None)
                    if (_child(ser, name) is not None)
                    else None
                )
                if code is not None and code.text:
                    return str(code.text)
    return "General"


def _plotted_range(horizontal: bool, groups: list[Any], limit: int) -> tuple[float, float, bool] | None:
    """(lowest, highest, percent) of the values the groups plot on an axis (a stacked group stacks them)."""
    lows: list[float] = []
    highs: list[float] = []
    percent = False
    for group in groups:
        across = horizontal and local(group.tag) in ("scatterChart", "bubbleChart")  # the x values
        names = ("xVal",) if across else ("yVal", "val")
        series = [
            _numbers(next((c for n in names if (c := _child(ser, n)) is not None), None), limit)
            for ser in _children(group, "ser")
        ]
        grouping = _val(group, "grouping") or "standard"
        if grouping == "percentStacked":
            percent = True
        elif grouping == "stacked":  # each category's stack: its negative values below 0, its positive above
            stacks = [[s[i] for s in series if i in s] for i in sorted({i for s in series for i in s})]
            lows.extend(sum(v for v in col if v < 0) if min(col) < 0 else min(col) for col in stacks)
            highs.extend(sum(v for v in col if v > 0) or max(col) for col in stacks)
        else:
            lows.extend(v for s in series for v in s.values())
            highs.extend(v for s in series for v in s.values())
    if not lows:
        return (0.0, 1.0, True) if percent else None
    return (min(lows), max(highs), False)


def _font_pt(*els: Any) -> float:
    """The first ``a:defRPr``/``a:rPr`` size (hundredths of a point) under the elements, the axis's first."""
    for el in els:
        for r in el.iter() if el is not None else ():
            if local(r.tag) in ("defRPr", "rPr") and (sz := _float(r.get("sz"))) is not None and sz > 0:
                return sz / 100
    return DEFAULT_FONT_PT


def axis_specs(root: Any, plot: Any, epoch: dt.date, limit: int) -> list[AxisSpec]:
    """What is needed to print each value axis of a plot area that shows its labels."""
    groups = [el for el in plot if local(el.tag).endswith("Chart")]
    out: list[AxisSpec] = []
    for ax in plot:
        if local(ax.tag) != "valAx" or not labels_drawn(ax):
            continue
        ax_id = _val(ax, "axId")
        mine = [g for g in groups if ax_id in {a.get("val") for a in _children(g, "axId")}] or groups
        pos = _val(ax, "axPos") or "l"
        span = _plotted_range(pos in ("b", "t"), mine, limit)
        if span is None:
            continue
        kinds = {local(g.tag) for g in mine}
        scaling = _child(ax, "scaling")
        req = ScaleRequest(
            span[0],
            span[1],
            minimum=_float(_val(scaling, "min")),
            maximum=_float(_val(scaling, "max")),
            major=_float(_val(ax, "majorUnit")),
            log_base=_float(_val(scaling, "logBase")),
            percent=span[2],
            expand_close=not any(k.endswith("3DChart") for k in kinds)
            and not (pos in ("b", "t") and kinds & {"scatterChart", "bubbleChart"}),
            max_count=2 if "radarChart" in kinds else AUTO_INTERVALS,
        )
        fmt = _child(ax, "numFmt")
        code = (fmt.get("formatCode") if fmt is not None else None) or "General"
        if span[2]:
            code = code if "%" in code else "0%"
        elif fmt is None or fmt.get("sourceLinked") in ("1", "true"):
            code = _source_format(mine)
        divisor, unit = _display_units(ax)
        font = _font_pt(_child(ax, "txPr"), _child(root, "txPr"))
        out.append(AxisSpec(pos, req, code, font, epoch, divisor, unit))
    return out


def _label_width(label: str, font_pt: float) -> float:
    return sum(_GLYPH.get(ch, 0.55) for ch in label) * font_pt


def axis_labels(spec: AxisSpec, size: tuple[float, float] | None = None) -> dict[str, Any]:
    """The axis as ``attrs.chart_axes`` gives it: position, scale (``computed``: any of it automatic) and labels."""
    req = spec.request
    got = scale(req)
    labels = [format_number(t / spec.divisor, spec.code, spec.epoch) for t in got.ticks]
    if size is not None and req.max_count > 2:
        horizontal = spec.position in ("b", "t")
        length = (size[0] if horizontal else size[1]) * PLOT_SHARE
        need = max((_label_width(x, spec.font_pt) for x in labels), default=0.0) if horizontal else 0.0
        need = need or spec.font_pt * LINE_HEIGHT
        count = max(2, min(req.max_count, int(length // need))) if need > 0 else req.max_count
        if count != req.max_count:
            got = scale(replace(req, max_count=count))
            labels = [format_number(t / spec.divisor, spec.code, spec.epoch) for t in got.ticks]
    return {
        "position": spec.position,
        "minimum": got.minimum,
        "maximum": got.maximum,
        "major_unit": got.major,
        "computed": got.computed,
        "format": spec.code,
        "labels": labels,
        **({"display_unit": spec.divisor} if spec.divisor != 1 else {}),
        **({"unit_label": spec.unit_label} if spec.unit_label else {}),
    }
