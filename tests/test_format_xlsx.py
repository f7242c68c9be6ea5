"""XLSX extraction: types and number formats, date systems, sheets and states, merges, errors, formulas, package
hostility (bombs, DTDs, duplicate parts, encryption), the output budget, and the corpus."""

from __future__ import annotations

import csv
import datetime as dt
import io
import zipfile
from pathlib import Path
from typing import Any

import openpyxl
import pytest
from openpyxl.cell.rich_text import CellRichText, TextBlock
from openpyxl.cell.text import InlineFont
from openpyxl.utils.datetime import CALENDAR_MAC_1904

from extract_fn.formats import xlsx_format
from extract_fn.formats.base import ExtractRequest
from shared.artifact import validate_artifact
from shared.artifact_builder import serialize
from shared.contract import ErrorCode, ExtractionError
from tests.ole_files import encrypted_ooxml

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


def run(data: bytes, *, max_bytes: int | None = None) -> dict[str, Any]:
    req = ExtractRequest("xlsx", name="t.xlsx")
    if max_bytes is not None:
        req = ExtractRequest("xlsx", name="t.xlsx", max_output_bytes=max_bytes)
    art = xlsx_format.extract(data, req)
    raw = serialize(art)
    assert len(raw) <= req.max_output_bytes
    validate_artifact(raw, format="xlsx", original_size=len(data))
    return art


def error_of(data: bytes, **kw: Any) -> ExtractionError:
    with pytest.raises(ExtractionError) as exc:
        run(data, **kw)
    return exc.value


def save(wb: openpyxl.Workbook) -> bytes:
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def sheet(art: dict[str, Any], name: str) -> dict[str, Any]:
    found = [t for t in art["tables"] if t["name"] == name]
    assert len(found) == 1, [t["name"] for t in art["tables"]]
    return found[0]


def cols(t: dict[str, Any]) -> list[tuple[str, str]]:
    return [(c["name"], c["type"]) for c in t["columns"]]


def _typed_workbook() -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Types"
    ws.append(["int", "dec", "big", "flag", "day", "when", "clock", "elapsed", "text", "rich", "err", "mixed"])
    ws.append([1, 0.1, 1e20, True, dt.date(2021, 1, 1), dt.datetime(2021, 1, 1, 10, 30), dt.time(10, 30, 15)])
    ws.append([-2, 12.345, 5, False, dt.date(2021, 12, 31), dt.date(2021, 1, 2), dt.time(0, 0, 1)])
    ws["H2"] = dt.timedelta(hours=36)
    ws["H2"].number_format = "[h]:mm:ss"
    ws["H3"] = -1.5 / 24
    ws["H3"].number_format = "[h]:mm:ss"
    ws["I2"], ws["I3"] = "hello", ""
    ws["J2"] = CellRichText(["plain ", TextBlock(InlineFont(b=True), "bold")])
    ws["K2"] = "#DIV/0!"  # openpyxl writes an error cell (t="e") for an error code
    ws["K3"] = 3
    ws["L2"], ws["L3"] = 1, "one"
    return save(wb)


def test_types_and_number_formats() -> None:
    art = run(_typed_workbook())
    t = sheet(art, "Types")
    assert cols(t) == [
        ("int", "number"),
        ("dec", "number"),
        ("big", "number"),
        ("flag", "bool"),
        ("day", "date"),
        ("when", "datetime"),
        ("clock", "time"),
        ("elapsed", "duration"),
        ("text", "string"),
        ("rich", "string"),
        ("err", "number"),  # the error fits any type; the other value decides
        ("mixed", "mixed"),
    ]
    assert t["rows"] == [
        [
            1,
            "0.1",
            "100000000000000000000",
            True,
            "2021-01-01",
            "2021-01-01T10:30:00",
            "10:30:15",
            "36:00:00",
            "hello",
            "plain bold",
            {"error": "#DIV/0!"},
            1,
        ],
        [-2, "12.345", 5, False, "2021-12-31", "2021-01-02", "00:00:01", "-1:30:00", None, None, 3, "one"],
    ]
    assert t["header_rows"] == 1
    assert t["locator"] == {"row_start": 1, "row_end": 3, "sheet": "Types"}
    assert t["attrs"]["range"] == "A1:L3"
    b0 = art["blocks"][0]
    assert b0["text"].startswith("int: 1 | dec: 0.1 | big: 100000000000000000000 | flag: true | day: 2021-01-01")
    assert "err: #DIV/0!" in b0["text"]
    assert b0["locator"] == {"sheet": "Types", "row_start": 2, "row_end": 2}
    assert b0["section_path"] == ["Types"]
    assert b0["attrs"] == {"table_id": t["id"]}


def test_the_1904_date_system() -> None:
    wb = openpyxl.Workbook()
    wb.epoch = CALENDAR_MAC_1904
    ws = wb.active
    ws.append(["day"])
    ws.append([dt.date(2021, 1, 1)])
    data = save(wb)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        assert b"date1904" in zf.read("xl/workbook.xml")
        assert b"<v>42735</v>" in zf.read("xl/worksheets/sheet1.xml")  # the 1904 serial: 1462 days less than 44197
    art = run(data)
    assert art["attrs"]["date1904"] is True
    assert art["tables"][0]["rows"] == [["2021-01-01"]]


def test_every_sheet_with_its_state() -> None:
    wb = openpyxl.Workbook()
    wb.active.title = "Shown"
    wb.active.append(["a"])
    wb.active.append([1])
    for title, state in (("Hid", "hidden"), ("Deep", "veryHidden")):
        ws = wb.create_sheet(title)
        ws.sheet_state = state
        ws.append(["b"])
        ws.append([title])
    art = run(save(wb))
    assert [t["name"] for t in art["tables"]] == ["Shown", "Hid", "Deep"]
    assert sheet(art, "Shown")["attrs"] == {"state": "visible", "range": "A1:A2"}
    assert sheet(art, "Hid")["attrs"]["hidden"] is True
    assert sheet(art, "Hid")["attrs"]["state"] == "hidden"
    assert sheet(art, "Deep")["attrs"]["state"] == "veryHidden"
    assert sheet(art, "Deep")["rows"] == [["Deep"]]
    assert art["coverage"]["total"] == 3


def test_header_is_the_first_non_empty_row_and_columns_the_used_range() -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws["C3"], ws["E3"] = "name", "value"
    ws["C4"], ws["E4"] = "x", 1
    ws["C6"], ws["D6"] = "y", 7  # row 5 empty; column D has no header
    art = run(save(wb))
    t = art["tables"][0]
    assert cols(t) == [("name", "string"), ("D", "number"), ("value", "number")]
    assert t["rows"] == [["x", None, 1], [None, None, None], ["y", 7, None]]
    assert t["locator"] == {"row_start": 3, "row_end": 6, "sheet": "Sheet"}
    assert [b["locator"]["row_start"] for b in art["blocks"]] == [4, 6]  # an empty row has no block


def test_merged_ranges_are_represented_once() -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["a", "b", "c"])
    ws.append(["m", "stale", 1])
    ws.append(["n", "o", 2])
    ws.merge_cells("A2:B3")
    art = run(save(wb))
    t = art["tables"][0]
    assert t["attrs"]["merged"] == ["A2:B3"]
    assert t["rows"] == [["m", None, 1], [None, None, 2]]


def test_empty_sheet() -> None:
    art = run(save(openpyxl.Workbook()))
    t = art["tables"][0]
    assert t["columns"] == []
    assert t["rows"] == []
    assert t["locator"] == {"sheet": "Sheet"}
    assert art["coverage"]["total"] == 0


def test_budget_cuts_rows_with_coverage_and_warning() -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["id", "text"])
    for i in range(3000):
        ws.append([i, f"some text for row {i}"])
    art = run(save(wb), max_bytes=100_000)
    cov = art["coverage"]
    assert cov["total"] == 3000
    assert 0 < cov["extracted"] < 3000
    assert len(art["tables"][0]["rows"]) == len(art["blocks"]) == cov["extracted"]
    assert any(f"{cov['extracted']} of 3000 rows" in w for w in art["warnings"])
    [failed] = cov["failed"]
    assert failed["unit"].endswith(f"rows {cov['extracted'] + 2}-3001")
    assert cov["complete"] is False


def test_a_long_sheet_name_is_cut_in_locators_and_section_paths() -> None:
    base = _simple()
    with zipfile.ZipFile(io.BytesIO(base)) as zf:
        wb_xml = zf.read("xl/workbook.xml")
    long_name = "S" * 600  # Excel stops at 31 characters; a hand-made file need not
    art = run(_rezip(base, {"xl/workbook.xml": wb_xml.replace(b'name="Sheet"', f'name="{long_name}"'.encode())}))
    t = art["tables"][0]
    assert t["name"] == long_name
    assert t["locator"]["sheet"] == "S" * 500
    block = art["blocks"][0]
    assert block["locator"]["sheet"] == "S" * 500
    assert block["section_path"] == ["S" * 500]
    assert block["attrs"] == {"table_id": t["id"], "section_truncated": True}
    assert art["coverage"]["lost"] == ["section_path"]


# -- hostile packages ----------------------------------------------------------------------------------------------


def _rezip(data: bytes, replace: dict[str, bytes] | None = None, extra: tuple[tuple[str, bytes], ...] = ()) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, (replace or {}).get(info.filename, src.read(info)))
        for name, body in extra:
            dst.writestr(name, body)
    return out.getvalue()


def _simple() -> bytes:
    wb = openpyxl.Workbook()
    wb.active.append(["a"])
    wb.active.append([1])
    return save(wb)


def test_zip_bomb_is_resource_limit() -> None:
    base = _simple()
    with zipfile.ZipFile(io.BytesIO(base)) as zf:
        sheet_xml = zf.read("xl/worksheets/sheet1.xml")
    bomb = sheet_xml.replace(b"<sheetData>", b"<sheetData>" + b" " * (64 * 1024 * 1024))
    data = _rezip(base, {"xl/worksheets/sheet1.xml": bomb})
    assert len(data) < 1_000_000
    err = error_of(data)
    assert err.code == ErrorCode.RESOURCE_LIMIT


def test_a_dtd_in_any_part_is_corrupt() -> None:
    base = _simple()
    with zipfile.ZipFile(io.BytesIO(base)) as zf:
        wb_xml = zf.read("xl/workbook.xml")
    evil = b'<!DOCTYPE x [<!ENTITY a "aaaa">]>' + wb_xml
    err = error_of(_rezip(base, {"xl/workbook.xml": evil}))
    assert err.code == ErrorCode.CORRUPT
    assert "DTD" in err.message


def test_duplicate_part_names_are_corrupt() -> None:
    base = _simple()
    with pytest.warns(UserWarning, match="Duplicate name"):
        data = _rezip(base, extra=(("xl/worksheets/sheet1.xml", b"<worksheet/>"),))
    err = error_of(data)
    assert err.code == ErrorCode.CORRUPT
    assert "two parts" in err.message


def test_not_a_zip_and_ole_encryption() -> None:
    assert error_of(b"not a workbook at all").code == ErrorCode.CORRUPT
    err = error_of(encrypted_ooxml())
    assert err.code == ErrorCode.CORRUPT
    assert "encrypted" in err.message


# -- the corpus ----------------------------------------------------------------------------------------------------


def _entries() -> list[dict[str, str]]:
    with (CORPUS / "MANIFEST.tsv").open(newline="", encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh, delimiter="\t") if r["format"] == "xlsx"]


@pytest.mark.parametrize("entry", _entries(), ids=lambda e: e["path"])
def test_corpus_file(corpus: Path, entry: dict[str, str]) -> None:
    data = (corpus / entry["path"]).read_bytes()
    if entry["expect"] == "ok":
        art = run(data)
        assert art["tables"]
        assert art["coverage"]["extracted"] == art["coverage"]["total"]
        if art["coverage"]["total"]:
            assert any(v is not None for t in art["tables"] for row in t["rows"] for v in row)
        return
    err = error_of(data)
    assert err.code == ErrorCode.CORRUPT
    if entry["expect"] == "encrypted":
        assert "encrypted" in err.message


def _corpus(name: str) -> dict[str, Any]:
    return run((CORPUS / "xlsx" / name).read_bytes())


@pytest.mark.parametrize("name", ["calamine-date.xlsx", "calamine-date-1904.xlsx"])
def test_corpus_dates_and_duration_in_both_date_systems(name: str) -> None:
    art = _corpus(name)
    assert art["attrs"]["date1904"] is (name == "calamine-date-1904.xlsx")
    t = art["tables"][0]
    assert cols(t) == [("2021-01-01", "mixed"), ("15", "number")]  # A1 (a date) heads column A
    assert t["rows"] == [["2021-01-02", 16], ["255:10:10", 17]]


def test_corpus_errors() -> None:
    t = sheet(_corpus("calamine-errors.xlsx"), "Feuil1")
    assert t["columns"][0]["name"] == "#DIV/0!"
    assert [r[0] for r in t["rows"]] == [
        {"error": e} for e in ("#NAME?", "#VALUE!", "#NULL!", "#REF!", "#NUM!", "#N/A")
    ]
    assert t["attrs"]["formulas"]["A1"] == "=5/0"
    assert t["attrs"]["formulas"]["A3"] == '=AVERAGE("a","b")'


def test_corpus_sheet_states_and_chartsheet() -> None:
    art = _corpus("calamine-any-sheets.xlsx")
    assert [t["name"] for t in art["tables"]] == ["Visible", "Hidden", "VeryHidden"]
    assert sheet(art, "Hidden")["attrs"] == {"state": "hidden", "hidden": True}
    assert sheet(art, "VeryHidden")["attrs"] == {"state": "veryHidden", "hidden": True}
    assert art["attrs"]["chartsheets"] == ["Chart"]
    visible = sheet(art, "Visible")
    assert cols(visible) == [("1", "mixed"), ("2", "number")]
    assert visible["rows"] == [
        [3, 4],
        [5, 6],
        [None, None],
        ["This workbook contains 4 sheets: Visible, Hidden, VeryHidden and Chart", None],
    ]


def test_corpus_merged_range() -> None:
    t = sheet(_corpus("calamine-merged-range.xlsx"), "Sheet1")
    assert "C1:D2" in t["attrs"]["merged"]
    assert cols(t)[:4] == [("A1", "string"), ("B1", "string"), ("C1", "string"), ("D", "string")]
    assert t["rows"][0] == [None] * 8  # row 2: under merged A1:A2, B1:B2, ...
    assert t["rows"][1] == ["A3", "B3", "C3", None, "E3", "F3", "G3", "H3"]


@pytest.mark.parametrize("name", ["poi-sampless-strict.xlsx", "calamine-strict-iso-paths.xlsx"])
def test_corpus_strict_workbooks_are_read(name: str) -> None:
    art = _corpus(name)
    assert art["coverage"]["total"] > 0
    if name == "poi-sampless-strict.xlsx":
        t = sheet(art, "First Sheet")
        assert cols(t) == [("Test spreadsheet", "string"), ("B", "string")]
        assert t["rows"][0] == ["2nd row", "2nd row 2nd column"]
        assert sheet(art, "Sheet Number 2")["attrs"]["formulas"] == {"D7": "=SUM(A7:C7)"}
    else:
        t = sheet(art, "ml_out")
        assert cols(t)[:2] == [("Item", "mixed"), ("Thickness", "number")]
        assert t["rows"][0][:3] == ["150-031260-001_B", "1.5", 7]


def test_corpus_formulas_give_their_cached_values() -> None:
    art = _corpus("docling-xlsx-03-chartsheet.xlsx")
    t = sheet(art, "Duck Observations")
    assert t["rows"][0] == [2019, 120, 80, 200]
    assert t["attrs"]["formulas"]["D2"] == "=B2+C2"
    assert "chartsheets" not in art["attrs"]  # "Duck Chart" is a worksheet holding a chart: an empty table
    assert sheet(art, "Duck Chart")["columns"] == []


def test_corpus_real_data_and_escapes() -> None:
    t = _corpus("csvkit-ne-1033-data.xlsx")["tables"][0]
    assert t["name"] == "NE data"
    assert dict(cols(t))["ship_date"] == "date"
    assert t["rows"][0][:10] == [
        "NE",
        "ADAMS",
        31001,
        "1005-00-589-1271",
        "RIFLE,7.62 MILLIMETER",
        1,
        "Each",
        138,
        138,
        "2008-07-11",
    ]
    assert len(t["rows"]) == 1036
    t = _corpus("calamine-has-x000D.xlsx")["tables"][0]
    assert t["columns"][0]["name"] == "ABC\r\nDEF"
    t = _corpus("calamine-issue-530-backslash-part-names.xlsx")["tables"][0]
    assert t["rows"][0][:2] == ["报表导出时间：", "2023年03月04日"]


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        (["a", "b"], ("string", ["a", "b"])),  # all ASCII: kept as they are
        (["a", "\ud800x", "é"], ("string", ["a", "\ufffdx", "é"])),  # cleaned one by one
        (["a", "", "b"], ("string", ["a", None, "b"])),  # an empty cell is null
        ([1.0, 0.5, 1e-05, 2.0**63], ("number", [1, "0.5", "0.00001", "9223372036854775808"])),
        ([1.0, float("nan")], ("number", [1, None])),
    ],
)
def test_convert_column_of_one_type(values: list[Any], expected: tuple[str, list[Any]]) -> None:
    col_type, out, _ = xlsx_format.convert_column(values)
    assert (col_type, out) == expected
    assert [type(v) for v in out] == [type(v) for v in expected[1]]


def test_the_workbook_heap_is_given_back_once_the_last_sheet_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """From frame.RELEASE_HEAP_FROM on, the freed heap is asked back once, when calamine has read the last
    worksheet's cells and before they become Python objects and that sheet's table (the workbook's memory is not
    needed by then), and the artifact does not change."""
    import extract_fn.buffering
    import extract_fn.formats.frame
    from shared.artifact_builder import ArtifactBuilder

    wb = openpyxl.Workbook()
    first = wb.active
    first.title = "First"
    first.append(["a", "b"])
    first.append([1, "x"])
    second = wb.create_sheet("Second")
    second.append(["c"])
    second.append([2.5])
    data = save(wb)

    tables_made: list[str] = []

    def counted(real: Any) -> Any:
        def add(self: ArtifactBuilder, *args: Any, **kw: Any) -> str:
            tables_made.append(kw.get("name", args[0] if args else ""))
            return str(real(self, *args, **kw))

        return add

    tables_at_release: list[int] = []
    monkeypatch.setattr(ArtifactBuilder, "add_table", counted(ArtifactBuilder.add_table))
    monkeypatch.setattr(ArtifactBuilder, "add_table_columns", counted(ArtifactBuilder.add_table_columns))
    monkeypatch.setattr(extract_fn.buffering, "release_memory", lambda: tables_at_release.append(len(tables_made)))
    small = run(data)
    assert tables_at_release == []  # a small file: not asked
    tables_made.clear()
    monkeypatch.setattr(extract_fn.formats.frame, "RELEASE_HEAP_FROM", len(data))
    assert serialize(run(data)) == serialize(small)
    assert tables_at_release == [1]  # the first sheet's table made, the last one's not yet
    assert len(tables_made) == 2


def test_a_column_that_repeats_its_texts_holds_each_once() -> None:
    """calamine makes a string per cell: a category column's repeated texts become one object each (memory), the
    values unchanged; a column of distinct texts, a number column and a mixed one keep their own."""
    wb = openpyxl.Workbook()
    ws = wb.active
    ws.append(["city", "code", "n", "mixed"])
    for i in range(600):
        ws.append([["Delta", "Omega", "Sigma"][i % 3], f"C{i:05d}", i % 3, "x" if i % 2 else 1])
    rows = sheet(run(save(wb)), "Sheet")["rows"]
    cities = [r[0] for r in rows]
    assert cities[:4] == ["Delta", "Omega", "Sigma", "Delta"]
    assert len({id(c) for c in cities}) == 3
    assert len({id(r[1]) for r in rows}) == 600
    assert [r[2] for r in rows[:4]] == [0, 1, 2, 0]
    assert [r[3] for r in rows[:3]] == [1, "x", 1]


@pytest.mark.parametrize("quoted", ['t="e"', "t='e'", "t = \"e'", "t='e\"", 't ="e"'])
def test_error_cells_are_found_however_the_type_is_quoted(quoted: str) -> None:
    """The scan's cheap first test (a quote before an ``e``) lets every spelling of an error cell's type through."""
    from extract_fn.formats.xlsx_format import _scan_errors

    xml = f'<sheetData><row r="2"><c r="C2" s="1" {quoted}><v>#N/A</v></c><c r="D2" t="s"><v>0</v></c></row>'
    assert _scan_errors(xml.encode()) == {(1, 2): "#N/A"}
    assert _scan_errors(xml.replace(quoted, 't="n"').encode()) == {}
