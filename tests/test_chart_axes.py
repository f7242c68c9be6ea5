"""Value-axis tick labels: the scale (stated or computed as LibreOffice does), the number format, which axes print
labels, the room a drawing's size gives them, and the corpus charts whose only missing words were these labels."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from lxml import etree

from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.chart_axis_scale import ScaleRequest, scale
from extract_fn.formats.chart_number_format import format_number
from extract_fn.formats.ooxml_chart import read_chart

C = 'xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart"'
A = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'


@pytest.mark.parametrize(
    ("req", "ticks"),
    [
        (ScaleRequest(80, 175), [0, 20, 40, 60, 80, 100, 120, 140, 160, 180, 200]),  # 175 near 180: one step more
        (ScaleRequest(10, 30, expand_close=False), [0, 5, 10, 15, 20, 25, 30]),  # a 3D chart: no extra step
        (ScaleRequest(1.8, 5), [0, 1, 2, 3, 4, 5, 6]),  # 0.5 steps would be 11 intervals: the next step, 1
        (ScaleRequest(12, 32, max_count=2), [0, 20, 40]),  # a radar axis (2 intervals at most)
        (ScaleRequest(0, 0, percent=True, max_count=8), [0, 0.2, 0.4, 0.6, 0.8, 1]),
        (ScaleRequest(95, 100), [92, 93, 94, 95, 96, 97, 98, 99, 100, 101]),  # narrow: widened toward 0, not to it
        (ScaleRequest(-175, -80), [-200, -180, -160, -140, -120, -100, -80, -60, -40, -20, 0]),  # mirrored
        (ScaleRequest(-5, 12), [-6, -4, -2, 0, 2, 4, 6, 8, 10, 12, 14]),
        (ScaleRequest(3, 4500, log_base=10), [1, 10, 100, 1000, 10000]),
    ],
)
def test_computed_scale(req: ScaleRequest, ticks: list[float]) -> None:
    got = scale(req)
    assert got.ticks == ticks
    assert got.computed is True


def test_stated_scale_is_used_as_stated() -> None:
    got = scale(ScaleRequest(80, 175, minimum=50, maximum=250, major=50))
    assert got.ticks == [50, 100, 150, 200, 250]
    assert got.computed is False
    assert scale(ScaleRequest(1.8, 5, major=2)).ticks == [0, 2, 4, 6]  # stated unit, automatic ends
    assert scale(ScaleRequest(1, 2, minimum=0, maximum=1000, major=1)).ticks[-1] == 1000  # 1000 steps: over 500, auto
    assert len(scale(ScaleRequest(1, 2, minimum=0, maximum=1000, major=1)).ticks) <= 11


@pytest.mark.parametrize(
    ("value", "code", "shown"),
    [
        (0.5, "General", "0.5"),
        (200.0, "General", "200"),
        (0.2, "0%", "20%"),
        (0.125, "0.0%", "12.5%"),
        (3, "0.0", "3.0"),
        (12000, "#,##0", "12,000"),
        (5, '"$"#,##0.00', "$5.00"),
        (-5, "0;(0)", "(5)"),
        (37261, "m/d/yy", "1/5/02"),
    ],
)
def test_tick_number_formats(value: float, code: str, shown: str) -> None:
    assert format_number(value, code) == shown


def _part(axis: str, font: str = "", values: tuple[str, ...] = ("80", "175")) -> Any:
    pts = "".join(f"<c:pt idx='{i}'><c:v>{v}</c:v></c:pt>" for i, v in enumerate(values))
    return etree.fromstring(
        f"<c:chartSpace {C} {A}><c:chart><c:plotArea><c:barChart><c:ser>"
        f"<c:val><c:numRef><c:numCache><c:formatCode>General</c:formatCode>{pts}</c:numCache></c:numRef></c:val>"
        f"</c:ser><c:axId val='1'/><c:axId val='2'/></c:barChart>"
        f"<c:catAx><c:axId val='1'/><c:delete val='1'/></c:catAx>"
        f"<c:valAx><c:axId val='2'/>{axis}</c:valAx></c:plotArea></c:chart>{font}</c:chartSpace>".encode()
    )


def test_value_axis_labels_in_text_and_attrs() -> None:
    chart = read_chart(_part("<c:axPos val='l'/><c:numFmt formatCode='0.0' sourceLinked='0'/>"))
    assert chart.text() == "0.0 | 20.0 | 40.0 | 60.0 | 80.0 | 100.0 | 120.0 | 140.0 | 160.0 | 180.0 | 200.0"
    (axis,) = chart.attrs()["chart_axes"]
    assert axis == {
        "position": "l",
        "minimum": 0.0,
        "maximum": 200.0,
        "major_unit": 20.0,
        "computed": True,
        "format": "0.0",
        "labels": axis["labels"],
    }
    linked = read_chart(_part("<c:numFmt formatCode='0.0' sourceLinked='1'/>"))  # follows the values' General
    assert linked.text().startswith("0 | 20 | 40")


@pytest.mark.parametrize("hidden", ["<c:delete val='1'/>", "<c:tickLblPos val='none'/>"])
def test_axis_without_labels_prints_none(hidden: str) -> None:
    chart = read_chart(_part(hidden))
    assert chart.text() == ""
    assert "chart_axes" not in chart.attrs()


def test_small_drawing_prints_a_coarser_scale() -> None:
    font = "<c:txPr><a:bodyPr/><a:p><a:pPr><a:defRPr sz='1800'/></a:pPr></a:p></c:txPr>"
    chart = read_chart(_part("<c:axPos val='l'/>", font, ("12", "32")))
    assert chart.text() == "0 | 5 | 10 | 15 | 20 | 25 | 30 | 35"  # no size known: up to 10 intervals
    small = chart.sized(2_000_000, 1_000_000)  # 79 pt high: 63 pt of axis holds three 18 pt labels' intervals
    assert small.text() == "0 | 20 | 40"
    assert chart.text() == "0 | 5 | 10 | 15 | 20 | 25 | 30 | 35"  # the cached chart is not changed


def _chart_texts(corpus: Path, rel: str) -> list[str]:
    from extract_fn.formats import pptx_format

    a = pptx_format.extract((corpus / rel).read_bytes(), ExtractRequest(format="pptx", name=rel))
    return [b["text"] for b in a["blocks"] if "chart" in b.get("attrs", {})]


def test_corpus_chart_ticks(corpus: Path) -> None:
    texts = _chart_texts(corpus, "pptx/docling-pptx-chart.pptx")
    assert "0 | 20 | 40 | 60 | 80 | 100 | 120 | 140 | 160 | 180 | 200" in texts[0].splitlines()
    assert "0 | 5 | 10 | 15 | 20 | 25 | 30" in texts[1].splitlines()  # a 3D column chart: no step above 30
    lines = [line for t in _chart_texts(corpus, "pptx/python-pptx-chart-types.pptx") for line in t.splitlines()]
    assert "0% | 20% | 40% | 60% | 80% | 100%" in lines  # percent-stacked, on a 3-inch frame
    assert "0% | 50% | 100%" in lines  # the same on a horizontal axis: wide labels, fewer of them
    assert "0 | 20 | 40" in lines  # a radar chart's radius axis


@pytest.mark.parametrize(
    ("values", "axis"),
    [
        (("-1e308", "1e308"), ""),  # a span past the largest float
        (("1", "2"), "<c:scaling><c:logBase val='1e300'/></c:scaling>"),  # a log base past ST_LogBase's 1000
        (("1", "2"), "<c:majorUnit val='5e-324'/>"),  # a unit giving more ticks than anyone draws: computed instead
        (("nan", "inf"), "<c:scaling><c:min val='-inf'/><c:max val='nan'/></c:scaling>"),  # not numbers: ignored
    ],
)
def test_hostile_scales_give_bounded_labels(values: tuple[str, ...], axis: str) -> None:
    chart = read_chart(_part(axis, values=values))
    for got in chart.attrs().get("chart_axes", []):  # no finite value at all: no axis to print
        assert len(got["labels"]) <= 11
        assert all(len(label) < 400 for label in got["labels"])
    assert len(chart.text().split(" | ")) <= 11


def test_far_point_index_is_not_a_dense_list() -> None:
    part = _part("", values=("1", "2"))
    pt = part.find(".//{*}numCache/{*}pt")
    pt.set("idx", "999999999999")  # a stacked range keyed by index, not a list that long
    for group in part.iter("{*}barChart"):
        group.insert(0, etree.fromstring(f"<c:grouping {C} val='stacked'/>"))
    assert read_chart(part).text() == "0 | 0.5 | 1 | 1.5 | 2 | 2.5"  # 0.2 steps: 11 intervals with 2.2, so 0.5


def test_display_units_divide_the_labels() -> None:
    units = "<c:dispUnits><c:builtInUnit val='millions'/><c:dispUnitsLbl/></c:dispUnits>"
    chart = read_chart(_part(units, values=("800000", "1750000")))
    assert chart.text() == "0 | 0.2 | 0.4 | 0.6 | 0.8 | 1 | 1.2 | 1.4 | 1.6 | 1.8 | 2\nMillions"
    (axis,) = chart.attrs()["chart_axes"]
    assert (axis["maximum"], axis["display_unit"], axis["unit_label"]) == (2_000_000.0, 1e6, "Millions")
    own = "<c:dispUnits><c:custUnit val='1000'/><c:dispUnitsLbl><c:tx><c:rich><a:p><a:r><a:t>kEUR</a:t></a:r></a:p>"
    chart = read_chart(_part(own + "</c:rich></c:tx></c:dispUnitsLbl></c:dispUnits>", values=("80000", "175000")))
    assert chart.text().splitlines() == ["0 | 20 | 40 | 60 | 80 | 100 | 120 | 140 | 160 | 180 | 200", "kEUR"]
