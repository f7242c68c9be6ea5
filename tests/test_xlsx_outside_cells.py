"""What a sheet shows outside its cells' values (the audit's visible-content gaps): notes and comment threads, text
boxes, pictures (alt text and OCR), SmartArt-free drawings, the background picture, the page header and footer,
pictures placed in cells (rich values), and error cells placed without an ``r``."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import pytest
import xlsxwriter

from extract_fn.formats.xlsx_notes import header_footer_text
from tests.test_format_xlsx import run


def _png(size: tuple[int, int] = (4, 4)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, "white").save(buf, "PNG")
    return buf.getvalue()


def _book(build: Any) -> bytes:
    buf = io.BytesIO()
    wb = xlsxwriter.Workbook(buf, {"in_memory": True})
    build(wb)
    wb.close()
    return buf.getvalue()


def _extras(a: dict[str, Any], sheet: str) -> list[dict[str, Any]]:
    """The sheet's blocks that are no row blocks."""
    return [b for b in a["blocks"] if b["locator"].get("sheet") == sheet and "table_id" not in b.get("attrs", {})]


def _report(wb: Any, png: bytes) -> None:
    ws = wb.add_worksheet("Report")
    ws.write_row(0, 0, ["Region", "Q1"])
    ws.write_row(1, 0, ["North", 100])
    ws.write_comment("B2", "Q1 North includes a one-off refund", {"author": "Ann"})
    ws.insert_textbox("E2", "Figures are unaudited\nand preliminary")
    ws.insert_image("E8", "logo.png", {"image_data": io.BytesIO(png), "description": "Company logo"})
    ws.set_header('&L&"Arial,Bold"&14Confidential&RPage &P of &N')
    ws.set_footer("&C&A && Co")


@pytest.mark.usefixtures("ocr_off")
def test_notes_text_boxes_pictures_and_page_text_are_read_after_the_rows() -> None:
    a = run(_book(lambda wb: _report(wb, _png())))
    rows = [b for b in a["blocks"] if "table_id" in b.get("attrs", {})]
    assert [b["text"] for b in rows] == ["Region: North | Q1: 100"]
    extras = _extras(a, "Report")
    assert [(b["text"], b["locator"].get("row_start"), b["attrs"]) for b in extras] == [
        (
            "Q1 North includes a one-off refund",
            2,
            {"part": "comment", "cell": "B2", "comment": {"kind": "note", "author": "Ann"}},
        ),
        ("", 8, {"image": {"alt": "Company logo", "name": "Picture 1"}}),  # the drawing's order: xlsxwriter's
        ("Figures are unaudited\nand preliminary", 2, {"textbox": True}),
        ("Confidential\nPage &[Page] of &[Pages]", None, {"part": "header", "kind": "default"}),
        ("Report & Co", None, {"part": "footer", "kind": "default"}),
    ]
    assert a["blocks"].index(extras[0]) > a["blocks"].index(rows[-1])  # after the sheet's rows
    # the picture's pixels are not read (OCR off): said, and not complete
    assert a["coverage"]["lost"] == ["image_text"]
    assert a["coverage"]["complete"] is False
    assert any(w.startswith("1 picture(s) not read") for w in a["warnings"])


def test_a_drawing_picture_goes_through_picture_ocr(monkeypatch: pytest.MonkeyPatch) -> None:
    """The picture's part (read through the drawing's relationship) goes to the same OCR as docx's and pptx's, its
    blocks right after the picture's."""
    from extract_fn.ocr.blocks import OcrBlock
    from extract_fn.ocr.pictures import PictureReader

    seen: list[str | None] = []

    def picture(self: Any, member: str | None) -> tuple[list[Any], bool]:
        seen.append(member)
        return [OcrBlock("TOTAL 42", {"ocr": {"engine": "tesseract", "version": "x", "confidence": 0.9}})], True

    monkeypatch.setattr(PictureReader, "picture", picture)
    a = run(_book(lambda wb: _report(wb, _png())))
    assert seen == ["xl/media/image1.png"]
    extras = _extras(a, "Report")
    i = next(i for i, b in enumerate(extras) if "image" in b.get("attrs", {}))
    assert extras[i + 1]["text"] == "TOTAL 42"
    assert extras[i + 1]["attrs"]["ocr"]["engine"] == "tesseract"
    assert extras[i + 1]["locator"] == extras[i]["locator"]
    assert a["coverage"]["complete"] is True


def test_comment_threads_replace_their_legacy_copies(corpus: Path) -> None:
    a = run((corpus / "xlsx/docling-xlsx-comments.xlsx").read_bytes())
    notes = [b for b in a["blocks"] if b.get("attrs", {}).get("part") == "comment"]
    assert [(b["attrs"]["cell"], b["text"]) for b in notes] == [
        ("A1", "Why Python specifically?"),
        ("B2", "Which libraries are you referring to?"),
        (
            "F7",
            "Jane Smith (JS): Minimum number of saltwater ducks\n"
            "Marcus Sterling (MS): I never thought it would be so low",
        ),
        ("G12", "Jane Smith (JS): Maximum number of ducks"),
    ]
    assert notes[2]["attrs"]["comment"] == {"kind": "thread", "author": "Jane Smith (JS)", "replies": 1}
    assert notes[0]["attrs"]["comment"] == {"kind": "note", "author": "John Reviewer"}
    assert notes[2]["locator"] == {"sheet": "Sheet1", "row_start": 7, "row_end": 7}
    assert not any("[Threaded comment]" in b["text"] for b in a["blocks"])
    assert a["coverage"]["complete"] is True


def test_header_footer_codes() -> None:
    assert header_footer_text('&L&"Times New Roman,Regular"&12&KFF0000Left&C&BMid&B&RRight', "S") == (
        "Left\nMid\nRight",
        0,
    )
    assert header_footer_text("Page &P of &N, &D &T, &F in &Z, tab &A, 5 && up", "Sales") == (
        "Page &[Page] of &[Pages], &[Date] &[Time], &[File] in &[Path], tab Sales, 5 & up",
        0,
    )
    assert header_footer_text("&L&G&C&K01+033Logo", "S") == ("Logo", 1)  # a theme colour's six characters
    assert header_footer_text("&C&12", "S") == ("", 0)


@pytest.mark.usefixtures("ocr_off")
def test_first_and_even_page_headers_only_when_the_sheet_uses_them() -> None:
    def build(wb: Any) -> None:
        ws = wb.add_worksheet("S")
        ws.write_row(0, 0, ["a", "b"])
        ws.write_row(1, 0, [1, 2])
        ws.set_header("&COdd", {"image_left": None})
        ws.set_footer("&CFoot")

    data = _book(build)
    odd = "<oddHeader>&amp;COdd</oddHeader><oddFooter>&amp;CFoot</oddFooter>"
    both = odd + "<evenHeader>&amp;CEven</evenHeader><firstHeader>&amp;CFirst</firstHeader>"
    unused = _patch(data, "xl/worksheets/sheet1.xml", lambda x: x.replace(odd, both))
    used = _patch(
        unused,
        "xl/worksheets/sheet1.xml",
        lambda x: x.replace("<headerFooter>", '<headerFooter differentFirst="1" differentOddEven="1">'),
    )
    assert [b["text"] for b in _extras(run(unused), "S")] == ["Odd", "Foot"]
    got = [(b["text"], b["attrs"]) for b in _extras(run(used), "S")]
    assert got == [
        ("Odd", {"part": "header", "kind": "default"}),
        ("Even", {"part": "header", "kind": "even"}),
        ("First", {"part": "header", "kind": "first"}),
        ("Foot", {"part": "footer", "kind": "default"}),
    ]


def _patch(data: bytes, part: str, change: Any, extra: dict[str, bytes] | None = None) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info)
            if info.filename == part:
                body = change(body.decode()).encode()
            dst.writestr(info.filename, body)
        for name, body in (extra or {}).items():
            dst.writestr(name, body)
    return out.getvalue()


def _catalog(wb: Any) -> None:
    ws = wb.add_worksheet("Catalog")
    ws.write_row(0, 0, ["product", "photo"])
    ws.write(1, 0, "Chair")
    ws.embed_image(1, 1, "chair.png", {"image_data": io.BytesIO(_png((5, 5))), "description": "A red chair"})
    ws.write(2, 0, "Desk")
    ws.write(2, 1, "none yet")


@pytest.mark.usefixtures("ocr_off")
def test_a_picture_placed_in_a_cell_is_a_picture_not_an_error() -> None:
    """Excel 365's "Place in Cell" (xlsxwriter's ``embed_image`` writes Excel's parts): the cell is saved as
    ``#VALUE!`` with a ``vm`` pointing at a ``_localImage`` rich value."""
    a = run(_book(_catalog))
    t = a["tables"][0]
    assert t["rows"] == [["Chair", None], ["Desk", "none yet"]]
    assert t["attrs"]["cell_pictures"] == [{"cell": "B2", "alt": "A red chair"}]
    assert [b["text"] for b in a["blocks"] if "table_id" in b.get("attrs", {})] == [
        "product: Chair",
        "product: Desk | photo: none yet",
    ]
    pictures = _extras(a, "Catalog")
    assert [(b["text"], b["attrs"], b["locator"]) for b in pictures] == [
        ("", {"image": {"alt": "A red chair"}, "cell": "B2"}, {"sheet": "Catalog", "row_start": 2, "row_end": 2})
    ]
    assert a["coverage"]["lost"] == ["image_text"]


def test_a_broken_rich_value_chain_leaves_the_saved_error() -> None:
    data = _patch(_book(_catalog), "xl/metadata.xml", lambda x: x.replace('<rc t="1" v="0"/>', '<rc t="9" v="0"/>'))
    a = run(data)
    assert a["tables"][0]["rows"][0] == ["Chair", {"error": "#VALUE!"}]
    assert "cell_pictures" not in a["tables"][0]["attrs"]


@pytest.mark.usefixtures("ocr_off")
def test_a_background_picture_is_a_picture() -> None:
    def build(wb: Any) -> None:
        ws = wb.add_worksheet("S")
        ws.write_row(0, 0, ["a"])
        ws.write_row(1, 0, [1])
        ws.set_background(io.BytesIO(_png()))

    a = run(_book(build))
    assert [(b["text"], b["attrs"]) for b in _extras(a, "S")] == [("", {"image": {"alt": ""}, "background": True})]
    assert a["coverage"]["lost"] == ["image_text"]


def test_a_hidden_shape_is_not_read_and_a_slicer_is_a_failed_unit() -> None:
    data = _book(lambda wb: _report(wb, _png()))
    slicer = (
        '<xdr:absoluteAnchor><xdr:pos x="0" y="0"/><xdr:ext cx="1" cy="1"/><xdr:graphicFrame macro="">'
        '<xdr:nvGraphicFramePr><xdr:cNvPr id="9" name="Slicer 1"/><xdr:cNvGraphicFramePr/></xdr:nvGraphicFramePr>'
        '<xdr:xfrm/><a:graphic><a:graphicData uri="http://schemas.microsoft.com/office/drawing/2010/slicer">'
        "</a:graphicData></a:graphic></xdr:graphicFrame><xdr:clientData/></xdr:absoluteAnchor>"
    )
    data = _patch(
        data,
        "xl/drawings/drawing1.xml",
        lambda x: x.replace('name="TextBox 2"', 'name="TextBox 2" hidden="1"').replace(
            "</xdr:wsDr>", slicer + "</xdr:wsDr>"
        ),
    )
    a = run(data)
    assert not any(b.get("attrs", {}).get("textbox") for b in a["blocks"])
    assert {
        "unit": "sheet 'Report' drawing 1",
        "reason": "a drawing object of kind 'slicer' (a slicer, a timeline, ...) is not read",
    } in a["coverage"]["failed"]


def test_error_cells_without_a_cell_reference_keep_their_error() -> None:
    """calamine places a cell without ``r`` after the one before it (and a row without ``r`` after the row
    before): its error is placed so too."""
    from extract_fn.formats.xlsx_format import _scan_errors

    xml = (
        b'<sheetData><row><c t="inlineStr"><is><t>k</t></is></c><c t="inlineStr"><is><t>v</t></is></c></row>'
        b'<row><c t="inlineStr"><is><t>a</t></is></c><c><v>1</v></c></row>'
        b'<row><c t="inlineStr"><is><t>b</t></is></c><c t="e"><v>#REF!</v></c></row>'
        b'<row r="7"><c r="C7" t="e"><v>#N/A</v></c><c t="e"><v>#NUM!</v></c></row></sheetData>'
    )
    assert _scan_errors(xml) == {(2, 1): "#REF!", (6, 2): "#N/A", (6, 3): "#NUM!"}
    data = _book(lambda wb: wb.add_worksheet("NoRef").write_row(0, 0, ["k", "v"]))
    sheet = (
        '<sheetData><row><c t="inlineStr"><is><t>k</t></is></c><c t="inlineStr"><is><t>v</t></is></c></row>'
        '<row><c t="inlineStr"><is><t>b</t></is></c><c t="e"><v>#REF!</v></c></row></sheetData>'
    )
    data = _patch(
        data,
        "xl/worksheets/sheet1.xml",
        lambda x: x[: x.index("<sheetData>")] + sheet + x[x.index("</sheetData>") + 12 :],
    )
    a = run(data)
    assert a["tables"][0]["rows"] == [["b", {"error": "#REF!"}]]


@pytest.mark.usefixtures("ocr_off")
def test_a_malformed_notes_part_is_a_failed_unit_and_the_rest_is_read() -> None:
    data = _patch(_book(lambda wb: _report(wb, _png())), "xl/comments1.xml", lambda x: x[: len(x) // 2])
    a = run(data)
    assert [f["unit"] for f in a["coverage"]["failed"]] == ["sheet 'Report' notes"]
    assert any(b.get("attrs", {}).get("textbox") for b in a["blocks"])
    assert a["tables"][0]["rows"] == [["North", 100]]
