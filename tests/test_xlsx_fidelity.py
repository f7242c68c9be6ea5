"""XLSX fidelity: formula cells with no saved result, workbooks that ask to be recalculated, date serials calamine
reads otherwise than Excel shows them (below 1, negative, the 1900 system's fictitious 1900-02-29), and whole
numbers past 2^53 (``extract_fn/formats/xlsx_cells.py``)."""

from __future__ import annotations

import io
import zipfile
from typing import Any

import openpyxl
import pytest

from extract_fn.formats import xlsx_format
from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.xlsx_cells import format_class
from shared.artifact import validate_artifact
from shared.artifact_builder import serialize

NS = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
PR = "http://schemas.openxmlformats.org/package/2006/relationships"
# cellXfs: 0 General, 1 yyyy-mm-dd, 2 [h]:mm:ss, 3 hh:mm:ss, 4 built-in 14 (a date), 5 yyyy-mm-dd hh:mm
STYLES = (
    f'<styleSheet xmlns="{NS}"><numFmts count="4"><numFmt numFmtId="164" formatCode="yyyy-mm-dd"/>'
    '<numFmt numFmtId="165" formatCode="[h]:mm:ss"/><numFmt numFmtId="166" formatCode="hh:mm:ss"/>'
    '<numFmt numFmtId="167" formatCode="yyyy-mm-dd hh:mm"/></numFmts>'
    '<cellStyleXfs count="1"><xf numFmtId="0"/></cellStyleXfs><cellXfs count="6"><xf numFmtId="0"/>'
    '<xf numFmtId="164" applyNumberFormat="1"/><xf numFmtId="165" applyNumberFormat="1"/>'
    '<xf numFmtId="166" applyNumberFormat="1"/><xf numFmtId="14" applyNumberFormat="1"/>'
    '<xf numFmtId="167" applyNumberFormat="1"/></cellXfs></styleSheet>'
)


def workbook(rows: str, *, date1904: bool = False, calc: str = "") -> bytes:
    """A one-sheet workbook ("S") whose sheetData is ``rows``."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        z.writestr(
            "[Content_Types].xml",
            '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/xl/workbook.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
            '<Override PartName="/xl/worksheets/sheet1.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
            '<Override PartName="/xl/styles.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.styles+xml"/></Types>',
        )
        z.writestr(
            "_rels/.rels",
            f'<Relationships xmlns="{PR}"><Relationship Id="rId1" Type="{R}/officeDocument" '
            'Target="xl/workbook.xml"/></Relationships>',
        )
        pr = '<workbookPr date1904="1"/>' if date1904 else "<workbookPr/>"
        z.writestr(
            "xl/workbook.xml",
            f'<workbook xmlns="{NS}" xmlns:r="{R}">{pr}<sheets><sheet name="S" sheetId="1" r:id="rId1"/>'
            f"</sheets>{calc}</workbook>",
        )
        z.writestr(
            "xl/_rels/workbook.xml.rels",
            f'<Relationships xmlns="{PR}"><Relationship Id="rId1" Type="{R}/worksheet" '
            f'Target="worksheets/sheet1.xml"/><Relationship Id="rId2" Type="{R}/styles" Target="styles.xml"/>'
            "</Relationships>",
        )
        z.writestr("xl/worksheets/sheet1.xml", f'<worksheet xmlns="{NS}"><sheetData>{rows}</sheetData></worksheet>')
        z.writestr("xl/styles.xml", STYLES)
    return buf.getvalue()


def run(data: bytes) -> dict[str, Any]:
    req = ExtractRequest("xlsx", name="t.xlsx")
    art = xlsx_format.extract(data, req)
    validate_artifact(serialize(art), format="xlsx", original_size=len(data))
    return art


def header(*names: str) -> str:
    cells = "".join(f'<c r="{chr(65 + i)}1" t="inlineStr"><is><t>{n}</t></is></c>' for i, n in enumerate(names))
    return f'<row r="1">{cells}</row>'


def column(art: dict[str, Any], j: int = 0) -> tuple[str, list[Any]]:
    t = art["tables"][0]
    return t["columns"][j]["type"], [row[j] for row in t["rows"]]


# --- formulas with no saved result


def test_openpyxl_formulas_have_no_result_and_the_artifact_says_so() -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Invoice"
    ws.append(["item", "qty", "price", "total"])
    ws.append(["Widget", 3, 2.5, "=B2*C2"])
    ws.append(["Gadget", 2, 10, "=B3*C3"])
    ws.append(["Sum", None, None, "=SUM(D2:D3)"])
    buf = io.BytesIO()
    wb.save(buf)
    art = run(buf.getvalue())
    cov = art["coverage"]
    assert cov["lost"] == ["formula_values"]
    assert cov["complete"] is False
    assert cov["extracted"] == cov["total"] == 3
    assert cov["failed"] == []
    t = art["tables"][0]
    assert [r[:3] for r in t["rows"]] == [["Widget", 3, "2.5"], ["Gadget", 2, 10], ["Sum", None, None]]
    assert t["attrs"]["formulas_without_result"] == ["D2", "D3", "D4"]
    assert t["attrs"]["formulas"]["D2"] == "=B2*C2"
    assert any("3 formula cell(s) have no saved result (D2, D3, D4)" in w for w in art["warnings"])


def test_shared_formula_children_and_missing_values() -> None:
    rows = header("n", "double", "text") + (
        '<row r="2"><c r="A2"><v>10</v></c><c r="B2"><f t="shared" ref="B2:B4" si="0">A2*2</f><v>20</v></c>'
        '<c r="C2" t="str"><f>""</f><v></v></c></row>'  # Excel's empty-text result: a saved result
        '<row r="3"><c r="A3"><v>11</v></c><c r="B3"><f t="shared" si="0"/><v>22</v></c></row>'
        '<row r="4"><c r="A4"><v>12</v></c><c r="B4"><f t="shared" si="0"/></c></row>'
    )
    art = run(workbook(rows))
    assert art["coverage"]["lost"] == ["formula_values"]
    assert art["tables"][0]["attrs"]["formulas_without_result"] == ["B4"]
    assert column(art, 1) == ("number", [20, 22, None])


def test_formulas_with_saved_results_are_complete() -> None:
    rows = header("n", "double") + '<row r="2"><c r="A2"><v>10</v></c><c r="B2"><f>A2*2</f><v>20</v></c></row>'
    art = run(workbook(rows))
    assert art["coverage"]["complete"] is True
    assert art["warnings"] == []
    assert "formulas_without_result" not in art["tables"][0]["attrs"]


def test_full_calc_on_load_warns_that_saved_results_may_be_stale() -> None:
    rows = header("n", "double") + '<row r="2"><c r="A2"><v>10</v></c><c r="B2"><f>A2*2</f><v>0</v></c></row>'
    art = run(workbook(rows, calc='<calcPr calcId="124519" fullCalcOnLoad="1"/>'))
    assert art["coverage"]["complete"] is True  # the saved results are read: a warning, not a loss
    assert any("fullCalcOnLoad" in w and "1 formula value(s)" in w for w in art["warnings"])
    # no formula: nothing to warn about (openpyxl sets the flag in every workbook it saves)
    plain = run(workbook(header("n") + '<row r="2"><c r="A2"><v>1</v></c></row>', calc='<calcPr fullCalcOnLoad="1"/>'))
    assert plain["warnings"] == []


# --- date serials


def test_1904_serial_zero_under_a_date_format_is_its_date() -> None:
    rows = header("when") + "".join(
        f'<row r="{i}"><c r="A{i}" s="{s}"><v>{v}</v></c></row>'
        for i, (s, v) in enumerate([(1, "0"), (1, "43904"), (5, "0.5"), (4, "0")], start=2)
    )
    art = run(workbook(rows, date1904=True))
    assert column(art) == ("datetime", ["1904-01-01", "2024-03-15", "1904-01-01T12:00:00", "1904-01-01"])
    assert art["warnings"] == []


def test_1900_serials_excel_shows_as_days_that_do_not_exist() -> None:
    values = ["0", "59", "60", "60.5", "61", "1"]
    rows = header("when") + "".join(
        f'<row r="{i}"><c r="A{i}" s="1"><v>{v}</v></c></row>' for i, v in enumerate(values, start=2)
    )
    art = run(workbook(rows))
    assert column(art) == (
        "mixed",
        ["1900-01-00", "1900-02-28", "1900-02-29", "1900-02-29T12:00:00", "1900-03-01", "1900-01-01"],
    )
    assert any("3 cell(s) hold a date serial Excel shows as a day that does not exist" in w for w in art["warnings"])


def test_negative_serial_under_a_date_format_keeps_the_number() -> None:
    rows = header("when", "clock") + (
        '<row r="2"><c r="A2" s="1"><v>-1</v></c><c r="B2" s="3"><v>-0.5</v></c></row>'
        '<row r="3"><c r="A3" s="1"><v>45366</v></c><c r="B3" s="3"><v>0.5</v></c></row>'
    )
    art = run(workbook(rows))
    assert column(art, 0) == ("mixed", [-1, "2024-03-15"])  # a mixed column's numbers are JSON numbers
    assert column(art, 1) == ("time", ["12:00:00", "12:00:00"])  # a time format: calamine's time (not restored)
    assert any("1 cell(s) with a date format hold a negative serial (A2)" in w for w in art["warnings"])


def test_time_formats_below_one_stay_times() -> None:
    rows = header("clock", "elapsed") + (
        '<row r="2"><c r="A2" s="3"><v>0</v></c><c r="B2" s="2"><v>0.25</v></c></row>'
        '<row r="3"><c r="A3" s="3"><v>0.5</v></c><c r="B3" s="2"><v>1.5</v></c></row>'
    )
    art = run(workbook(rows))
    assert column(art, 0) == ("time", ["00:00:00", "12:00:00"])
    assert column(art, 1) == ("duration", ["6:00:00", "36:00:00"])
    assert art["warnings"] == []


@pytest.mark.parametrize(
    ("code", "kind"),
    [
        ("yyyy-mm-dd", "date"),
        ("mmm", "date"),
        ('d "de" mmmm', "date"),
        ("[$-409]d-mmm-yy;@", "date"),
        ("hh:mm:ss", "time"),
        ("mm:ss", "time"),
        ("yyyy-mm-dd hh:mm", "datetime"),
        ("[h]:mm:ss", "duration"),
        ("0.00", None),
        ('0 "days"', None),
        ("General", None),
        ("0.00E+00", None),
        ("AM/PM h", "time"),
    ],
)
def test_format_class(code: str, kind: str | None) -> None:
    assert format_class(code) == kind


# --- whole numbers past 2^53


def test_integers_past_2_53_keep_their_stored_digits() -> None:
    values = ["123456789012345678", "-9007199254740993", "12345678901234567890123", "1.0E+20", "1.5", "7"]
    rows = header("num") + "".join(
        f'<row r="{i}"><c r="A{i}"><v>{v}</v></c></row>' for i, v in enumerate(values, start=2)
    )
    art = run(workbook(rows))
    assert column(art) == (
        "number",
        [123456789012345678, -9007199254740993, "12345678901234567890123", "100000000000000000000", "1.5", 7],
    )
    assert "123456789012345678" in art["blocks"][0]["text"]
