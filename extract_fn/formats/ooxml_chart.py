"""One reader for DrawingML chart parts (``c:chartSpace``), shared by docx, pptx and xlsx.

A chart becomes one block (the caller adds it where the chart sits):

- ``text``: the chart's title, its axis titles, then its series names and its categories, one line each
  (series and categories joined with `` | ``; the series line left out when it is the title again), as far as
  the chart prints them: series names when it has a legend (a pie's legend names its categories instead) or data
  labels that show them, categories when a category or date axis is drawn with labels (not ``c:delete``, not
  ``tickLblPos none``) or data labels show them. A scatter or bubble chart's x values are numbers on a value axis,
  not labels: they are in ``attrs.table`` only. Whatever the text leaves out is in ``attrs.table``. A title
  element with no text of its own is shown by Office as the only series' name, or "Chart Title" when there are
  several, and is read the same way; a chart with no title element has no title line. Each value axis drawn
  with labels adds a line of its tick labels after the axis titles (``chart_axes``: the part does not store them,
  they are computed from the axis's scaling and number format; ``Chart.sized`` gives the drawing's size, which sets
  how many ticks fit).
- ``attrs.chart``: the chart type(s) of the plot area (``bar``, ``line``, ``pie``, ``scatter``, ... joined by
  ``+`` for a combination chart), ``attrs.table``: the cached values as ``{"columns": [category label, series
  names...], "rows": [[category, value, ...], ...]}`` like a DOCX table block's, every value the cached text as
  the part spells it (``null`` where a series has no point); ``attrs.chart_axes`` each labelled value axis's
  position, scale (``computed``: automatic, not stated) and labels. A scatter or bubble chart's categories are its
  x values.

A chart part holds the last values the authoring application computed (``numCache``/``strCache``); a chart with no
cached values (only references into a workbook) cannot be read without recomputing it: ``ChartUnreadable``, which
the caller records as a failed unit with its reason.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from extract_fn.formats.chart_axes import AxisSpec, axis_labels, axis_specs, labels_drawn
from extract_fn.formats.chart_number_format import EPOCH_1900, EPOCH_1904, format_date, is_date_format
from extract_fn.formats.ooxml_text import local
from extract_fn.formats.safe_xml import DtdRefused
from shared.contract import ErrorCode, ExtractionError

MAX_POINTS = 100_000  # points kept per series (a bigger cache is cut, with the text still whole)
DEFAULT_TITLE = "Chart Title"


class ChartUnreadable(Exception):
    """A chart part that gives no content (not a chart, or no cached values): the reason is the message."""


@dataclass
class _Series:
    name: str
    points: dict[int, str] = field(default_factory=dict)
    cats: dict[int, str] = field(default_factory=dict)


PIE_KINDS = frozenset({"pie", "pie3D", "doughnut", "ofPie"})  # no axes: a legend names their categories


@dataclass
class Chart:
    kinds: list[str]
    title: str | None
    axis_titles: list[str]
    series: list[_Series]
    show_series: bool = True  # the chart prints its series names (a legend, or data labels naming them)
    show_categories: bool = True  # the chart prints its category labels (an axis's labels, a pie's legend)
    axes: list[AxisSpec] = field(default_factory=list)  # the value axes that print labels
    size: tuple[float, float] | None = None  # the drawing's width and height in points, when the caller knows it

    def sized(self, width_emu: int | None, height_emu: int | None) -> Chart:
        """The chart as drawn at a size in EMU (12700 a point): the size sets how many ticks its axes have room for."""
        if not width_emu or not height_emu or width_emu <= 0 or height_emu <= 0:
            return self
        return replace(self, size=(width_emu / 12700, height_emu / 12700))

    @property
    def value_axes(self) -> list[dict[str, Any]]:
        """Each value axis that prints labels: position, scale and its tick labels (``chart_axes``)."""
        return [axis_labels(spec, self.size) for spec in self.axes]

    @property
    def categories(self) -> list[str]:
        """The categories of the series with the most of them, in index order."""
        best = max((s.cats for s in self.series), key=len, default={})
        return [best[i] for i in sorted(best)]

    def text(self) -> str:
        lines: list[str] = []
        if self.title:
            lines.append(self.title)
        lines.extend(self.axis_titles)
        for ax in self.value_axes:
            lines.extend(x for x in (" | ".join(ax["labels"]), ax.get("unit_label", "")) if x)
        names = " | ".join(s.name for s in self.series if s.name) if self.show_series else ""
        if names and names != self.title:  # a one-series chart's title is often its series' name
            lines.append(names)
        cats = [c for c in self.categories if c] if self.show_categories else []
        if cats:
            lines.append(" | ".join(cats))
        return "\n".join(lines)

    def table(self) -> dict[str, Any]:
        best = max((s.cats for s in self.series), key=len, default={})
        indexes = sorted(set(best) | {i for s in self.series for i in s.points})
        columns: list[str | None] = ["", *[s.name or f"Series {n + 1}" for n, s in enumerate(self.series)]]
        rows = [[best.get(i, str(i + 1)), *[s.points.get(i) for s in self.series]] for i in indexes]
        return {"columns": columns, "rows": rows}

    def attrs(self) -> dict[str, Any]:
        out: dict[str, Any] = {"chart": "+".join(self.kinds) or "unknown", "table": self.table()}
        if self.axes:
            out["chart_axes"] = self.value_axes
        return out


def _children(el: Any, name: str) -> list[Any]:
    return [c for c in el if local(c.tag) == name]


def _child(el: Any, name: str) -> Any:
    for c in el:
        if local(c.tag) == name:
            return c
    return None


def _rich_text(el: Any) -> str:
    """The text of a ``c:tx``/``c:title``: rich text paragraphs (``a:p``/``a:t``), a literal (``c:v``) or a string
    reference's cache."""
    paras: list[str] = []
    for p in el.iter():
        if local(p.tag) == "p":
            paras.append("".join(t.text or "" for t in p.iter() if local(t.tag) == "t"))
    text = "\n".join(x for x in paras if x.strip())
    if text.strip():
        return text.strip()
    literal = _child(el, "v")  # a literal name (``c:tx/c:v``, as xlsxwriter writes one): no reference, no cache
    if literal is not None and literal.text and literal.text.strip():
        return literal.text.strip()
    return " ".join(v.strip() for v in _cache_values(el).values() if v.strip())


def _cache_values(el: Any, epoch: dt.date = EPOCH_1900) -> dict[int, str]:
    """idx -> cached text of the first ``strCache``/``numCache`` (or literal) under ``el``; multi-level: joined."""
    out: dict[int, str] = {}
    for cache in el.iter():
        name = local(cache.tag)
        if name in ("strCache", "numCache", "strLit", "numLit"):
            _points(cache, out)
            code = _child(cache, "formatCode")
            if code is not None and code.text and is_date_format(code.text):
                out = {i: format_date(v, code.text, epoch) for i, v in out.items()}
            return out
        if name == "multiLvlStrCache":
            for lvl in _children(cache, "lvl"):
                level: dict[int, str] = {}
                _points(lvl, level)
                for i, v in level.items():  # the innermost level first, outer levels after it
                    out[i] = f"{out[i]} {v}" if i in out else v
            return out
    return out


def _points(cache: Any, out: dict[int, str]) -> None:
    for pt in _children(cache, "pt"):
        if len(out) >= MAX_POINTS:
            return
        v = _child(pt, "v")
        try:
            idx = int(pt.get("idx") or "")
        except ValueError:
            continue
        if v is not None and v.text is not None:
            out[idx] = v.text


def _series(ser: Any, epoch: dt.date) -> _Series:
    tx = _child(ser, "tx")
    s = _Series(_rich_text(tx) if tx is not None else "")
    for name in ("cat", "xVal"):
        el = _child(ser, name)
        if el is not None:
            s.cats = _cache_values(el, epoch)
            break
    for name in ("val", "yVal"):
        el = _child(ser, name)
        if el is not None:
            s.points = _cache_values(el, epoch)
            break
    return s


def read_chart(root: Any) -> Chart:
    """The chart of a chart part's root element; ``ChartUnreadable`` when it has nothing cached to show."""
    if local(root.tag) != "chartSpace":
        raise ChartUnreadable("the chart part is not a DrawingML chart")
    chart = _child(root, "chart")
    plot = _child(chart, "plotArea") if chart is not None else None
    if plot is None:
        raise ChartUnreadable("the chart part has no plot area")
    d1904 = _child(root, "date1904")
    epoch = EPOCH_1904 if d1904 is not None and d1904.get("val") in ("1", "true") else EPOCH_1900
    kinds: list[str] = []
    series: list[_Series] = []
    axis_titles: list[str] = []
    for el in plot:
        name = local(el.tag)
        if name.endswith("Chart"):
            kind = name[: -len("Chart")]
            if kind not in kinds:
                kinds.append(kind)
            series.extend(_series(ser, epoch) for ser in _children(el, "ser"))
        elif name.endswith("Ax"):
            t = _child(el, "title")
            if t is not None:
                text = _rich_text(t)
                if text:
                    axis_titles.append(text)
    title = _title(chart, series)
    if not any(s.points or s.cats for s in series):
        raise ChartUnreadable("the chart holds no cached values (only references into its workbook)")
    legend = _child(chart, "legend") is not None
    pie = bool(kinds) and all(k in PIE_KINDS for k in kinds)
    show_series = (legend and not pie) or _labels_show(plot, "showSerName")
    show_categories = (legend if pie else _category_axis_shown(plot)) or _labels_show(plot, "showCatName")
    axes = axis_specs(root, plot, epoch, MAX_POINTS)
    return Chart(kinds, title, axis_titles, series, show_series, show_categories, axes)


def _labels_show(plot: Any, flag: str) -> bool:
    """Whether any data labels of the plot area print ``flag`` (``showSerName``, ``showCatName``)."""
    return any(local(el.tag) == flag and el.get("val") in ("1", "true") for el in plot.iter())


def _category_axis_shown(plot: Any) -> bool:
    """Whether a category or date axis is drawn with its labels (not deleted, labels not ``none``)."""
    return any(local(ax.tag) in ("catAx", "dateAx") and labels_drawn(ax) for ax in plot)


def _title(chart: Any, series: list[_Series]) -> str | None:
    t = _child(chart, "title")
    if t is None:
        return None
    text = _rich_text(t)
    if text:
        return text
    if len(series) == 1 and series[0].name:
        return series[0].name
    return DEFAULT_TITLE


class ChartCache:
    """Each chart part read once per file, however many drawings point at it (a part referenced a thousand times is
    not parsed a thousand times)."""

    def __init__(self) -> None:
        self._seen: dict[str, Chart | str] = {}

    def read(self, part: str, load: Callable[[str], Any]) -> Chart:
        """The chart of ``part`` (``load`` parses it, once); ``ChartUnreadable`` as the first read raised it, or
        with the message of the ``corrupt`` error a broken part gave (a DTD or a resource limit still ends the file)."""
        hit = self._seen.get(part)
        if hit is None:
            try:
                hit = read_chart(load(part))
            except ChartUnreadable as exc:
                hit = str(exc)
            except DtdRefused:  # a DTD anywhere refuses the whole file
                raise
            except ExtractionError as exc:  # a broken chart part is that chart's failure, not the file's
                if exc.code == ErrorCode.RESOURCE_LIMIT:
                    raise
                hit = exc.message
            self._seen[part] = hit
        if isinstance(hit, str):
            raise ChartUnreadable(hit)
        return hit
