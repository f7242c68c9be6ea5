"""Charts in workbooks (issue 15): the shared chart reader on worksheets and chartsheets, and a failed unit for a
chart that holds no cached values (openpyxl writes only references)."""

from __future__ import annotations

from pathlib import Path

import openpyxl
from openpyxl.chart import BarChart, Reference

from tests.test_format_xlsx import run, save


def test_chartsheet_chart_is_a_block(corpus: Path) -> None:
    a = run((corpus / "xlsx/docling-xlsx-03-chartsheet.xlsx").read_bytes())
    charts = [b for b in a["blocks"] if "chart" in b.get("attrs", {})]
    assert len(charts) == 1
    chart = charts[0]
    assert chart["text"].splitlines() == [
        "Wild Duck Observations by Year",
        "Year",
        "Number of Ducks",
        "0 | 20 | 40 | 60 | 80 | 100 | 120 | 140 | 160 | 180 | 200",  # the value axis's computed ticks
        "Freshwater Ducks | Saltwater Ducks",
        "2019 | 2020 | 2021 | 2022 | 2023 | 2024",
    ]
    assert chart["attrs"]["chart"] == "bar"
    assert chart["attrs"]["table"]["rows"][-1] == ["2024", "180", "130"]
    assert chart["locator"] == {"sheet": "Duck Chart"}
    assert chart["section_path"] == ["Duck Chart"]
    assert a["coverage"]["complete"] is True


def test_worksheet_charts_follow_the_sheet_rows(corpus: Path) -> None:
    a = run((corpus / "xlsx/docling-xlsx-01.xlsx").read_bytes())
    sheet2 = [b for b in a["blocks"] if b["locator"].get("sheet") == "Sheet2"]
    kinds = [b["attrs"]["chart"] for b in sheet2 if "chart" in b.get("attrs", {})]
    assert kinds == ["scatter", "line"]
    first_chart = next(i for i, b in enumerate(sheet2) if "chart" in b.get("attrs", {}))
    assert all("table_id" in b.get("attrs", {}) for b in sheet2[:first_chart])  # the rows come first


def test_chart_without_cached_values_is_a_failed_unit() -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Data"
    for row in (("region", "sales"), ("North", 3), ("South", 5)):
        ws.append(row)
    chart = BarChart()
    chart.title = "Sales"
    chart.add_data(Reference(ws, min_col=2, min_row=1, max_row=3), titles_from_data=True)
    ws.add_chart(chart, "D2")
    a = run(save(wb))
    assert a["coverage"]["failed"] == [
        {
            "unit": "sheet 'Data' chart 1",
            "reason": "the chart holds no cached values (only references into its workbook)",
        }
    ]
    assert a["coverage"]["complete"] is False
    assert a["coverage"]["extracted"] == a["coverage"]["total"] == 2  # the rows are all there


def test_broken_chart_part_fails_its_unit_not_the_workbook(corpus: Path) -> None:
    import io
    import zipfile

    src = zipfile.ZipFile(io.BytesIO((corpus / "xlsx/docling-xlsx-03-chartsheet.xlsx").read_bytes()))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            body = b"<c:chartSpace" if info.filename == "xl/charts/chart1.xml" else src.read(info.filename)
            dst.writestr(info, body)
    a = run(out.getvalue())
    assert [f["unit"] for f in a["coverage"]["failed"]] == ["sheet 'Duck Chart' chart 1"]
    assert a["tables"]  # the sheets are read
