"""The shared chart reader on literal data: a series name written as ``c:tx/c:v`` (xlsxwriter's literal name),
literal categories and values (``c:strLit``/``c:numLit``); and the same name read in an xlsx chart."""

from __future__ import annotations

import io

from lxml import etree

from extract_fn.formats.ooxml_chart import read_chart

C = 'xmlns:c="http://schemas.openxmlformats.org/drawingml/2006/chart"'


def _part(name: str, cats: str, vals: str) -> bytes:
    return (
        f"<c:chartSpace {C}><c:chart><c:plotArea><c:barChart><c:ser><c:idx val='0'/>{name}"
        f"<c:cat>{cats}</c:cat><c:val>{vals}</c:val></c:ser></c:barChart>"
        "<c:catAx><c:delete val='0'/></c:catAx><c:valAx><c:delete val='1'/></c:valAx></c:plotArea>"
        "<c:legend/></c:chart></c:chartSpace>"
    ).encode()


STR_LIT = (
    "<c:strLit><c:ptCount val='2'/><c:pt idx='0'><c:v>North</c:v></c:pt><c:pt idx='1'><c:v>South</c:v></c:pt>"
    "</c:strLit>"
)
NUM_LIT = (
    "<c:numLit><c:ptCount val='2'/><c:pt idx='0'><c:v>100</c:v></c:pt><c:pt idx='1'><c:v>80</c:v></c:pt></c:numLit>"
)


def test_literal_series_name_and_literal_data() -> None:
    chart = read_chart(etree.fromstring(_part("<c:tx><c:v>Q1</c:v></c:tx>", STR_LIT, NUM_LIT)))
    assert chart.table() == {"columns": ["", "Q1"], "rows": [["North", "100"], ["South", "80"]]}
    assert chart.text() == "Q1\nNorth | South"  # the legend names the series, the category axis its categories


def test_referenced_series_name_still_read_from_its_cache() -> None:
    ref = (
        "<c:tx><c:strRef><c:f>Sheet1!$B$1</c:f><c:strCache><c:pt idx='0'><c:v>Q2</c:v></c:pt></c:strCache>"
        "</c:strRef></c:tx>"
    )
    chart = read_chart(etree.fromstring(_part(ref, STR_LIT, NUM_LIT)))
    assert chart.table()["columns"] == ["", "Q2"]


def test_xlsxwriter_literal_series_name_in_a_workbook_chart() -> None:
    import xlsxwriter

    from extract_fn.formats import xlsx_format
    from extract_fn.formats.base import ExtractRequest

    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf, {"in_memory": True})
    ws = wb.add_worksheet("Report")
    ws.write_row(0, 0, ["Region", "Q1"])
    ws.write_row(1, 0, ["North", 100])
    ws.write_row(2, 0, ["South", 80])
    chart = wb.add_chart({"type": "column"})
    chart.add_series({"name": "Q1", "categories": "=Report!$A$2:$A$3", "values": "=Report!$B$2:$B$3"})
    chart.set_title({"name": "Quarterly sales"})
    ws.insert_chart("E2", chart)
    wb.close()
    a = xlsx_format.extract(buf.getvalue(), ExtractRequest(format="xlsx"))
    charts = [b for b in a["blocks"] if "chart" in (b.get("attrs") or {})]
    assert len(charts) == 1
    assert charts[0]["attrs"]["table"]["columns"] == ["", "Q1"]
    assert "Q1" in charts[0]["text"].split("\n")
