"""DOCX as Word shows it, from an audit: a text box in a table cell read as the body reads one (its list labels,
tables, pictures, objects), vMerge continuation cells, first/even headers a section does not show, page breaks
inside a paragraph, a deleted list paragraph's number."""

from __future__ import annotations

from typing import Any

from tests.test_format_docx import NS, make_docx, p, run

PIC_NS = "http://schemas.openxmlformats.org/drawingml/2006/picture"
A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"


def _texts(a: dict[str, Any]) -> list[str]:
    return [b["text"] for b in a["blocks"]]


def _box(inner: str) -> str:
    """A run holding a DrawingML text box (with its VML fallback, never read) around ``inner``."""
    content = f"<w:txbxContent>{inner}</w:txbxContent>"
    return (
        "<w:r><mc:AlternateContent><mc:Choice Requires='wps'><w:drawing><wps:wsp><wps:txbx>"
        + content
        + "</wps:txbx></wps:wsp></w:drawing></mc:Choice><mc:Fallback><w:pict><v:textbox>"
        + content
        + "</v:textbox></w:pict></mc:Fallback></mc:AlternateContent></w:r>"
    )


def _picture(descr: str) -> str:
    return (
        f'<w:r><w:drawing><a:graphic xmlns:a="{A_NS}"><a:graphicData uri="{PIC_NS}"><pic:pic xmlns:pic="{PIC_NS}">'
        f'<pic:nvPicPr><pic:cNvPr id="1" name="scan.png" descr="{descr}"/></pic:nvPicPr></pic:pic>'
        "</a:graphicData></a:graphic></w:drawing></w:r>"
    )


OLE = (
    '<w:r><w:object><o:OLEObject xmlns:o="urn:schemas-microsoft-com:office:office" Type="Embed" '
    'ProgID="Excel.Sheet.12"/></w:object></w:r>'
)

NUMBERING = (
    f'<w:numbering {NS}><w:abstractNum w:abstractNumId="0"><w:lvl w:ilvl="0"><w:start w:val="1"/>'
    '<w:numFmt w:val="decimal"/><w:lvlText w:val="%1."/></w:lvl></w:abstractNum>'
    '<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num></w:numbering>'
)


def _item(text: str) -> str:
    return p(text, '<w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr>')


def _table(*rows: str) -> str:
    return "<w:tbl>" + "".join(f"<w:tr>{r}</w:tr>" for r in rows) + "</w:tbl>"


def test_a_text_box_in_a_table_cell_is_read_as_the_body_reads_one() -> None:
    inner_table = _table(f"<w:tc>{p('BoxTblA')}</w:tc><w:tc>{p('BoxTblB')}</w:tc>")
    box = _box(
        _item("Check the seal")
        + _item("Sign the form")
        + inner_table
        + f"<w:p>{_picture('scan in box')}</w:p>"
        + f"<w:p>{OLE}</w:p>"
    )
    body = _table(f"<w:tc>{p('Steps')}</w:tc>", f"<w:tc><w:p><w:r><w:t>Do: </w:t></w:r>{box}</w:p></w:tc>")
    body += p("After.")
    a = run(make_docx(body, parts={"numbering.xml": NUMBERING}))
    blocks = a["blocks"]
    # the box's paragraphs with their list labels, and its table, are the cell's text
    assert blocks[0]["attrs"]["table"]["rows"] == [["Do:\n1. Check the seal\n2. Sign the form\nBoxTblA | BoxTblB"]]
    # its picture is a block after the table's, naming the cell; its object a failed unit
    assert blocks[1] == {
        **blocks[1],
        "text": "",
        "attrs": {"image": {"alt": "scan in box", "name": "scan.png"}, "cell": [1, 0]},
    }
    assert blocks[2]["text"] == "After."
    assert a["coverage"]["failed"] == [
        {"unit": "embedded object 1", "reason": "an embedded (OLE) object's content is not read"}
    ]
    assert a["coverage"]["lost"] == ["image_text"]
    assert a["coverage"]["complete"] is False


def test_a_text_box_in_a_text_box_in_a_cell_is_read_too() -> None:
    inner = "<w:p>" + _box(p("Inner")) + "</w:p>"
    body = _table("<w:tc><w:p>" + _box(p("Outer") + inner) + "</w:p></w:tc>")
    a = run(make_docx(body))
    assert _texts(a) == ["Outer Inner"]
    assert a["blocks"][0]["attrs"]["table"]["columns"] == ["Outer\nInner"]
    assert a["coverage"] == {**a["coverage"], "total": 4, "extracted": 4, "complete": True}


def _vmerge(val: str | None) -> str:
    return f"<w:tcPr><w:vMerge{f' w:val={chr(34)}{val}{chr(34)}' if val else ''}/></w:tcPr>"


def test_a_covered_cell_s_own_text_is_not_read_but_counted_and_said() -> None:
    """Word draws a vertically merged cell from its restart cell only: a continuation's own paragraphs are not
    shown (nor numbered). They count as extracted, and text there is a warning, not a silent loss."""
    body = _table(
        f"<w:tc>{_vmerge('restart')}{p('Region West')}</w:tc><w:tc>{p('Q1 10')}</w:tc>",
        f"<w:tc>{_vmerge(None)}{p('incl. Hawaii')}{_item('covered item')}</w:tc><w:tc>{p('Q2 12')}</w:tc>",
        f"<w:tc>{_vmerge('continue')}<w:p/></w:tc><w:tc>{p('Q3 9')}</w:tc>",
    )
    body += _item("First item")
    a = run(make_docx(body, parts={"numbering.xml": NUMBERING}))
    assert a["blocks"][0]["attrs"]["table"] == {
        "columns": ["Region West", "Q1 10"],
        "rows": [[None, "Q2 12"], [None, "Q3 9"]],
    }
    assert a["blocks"][1]["text"] == "1. First item"  # the covered list item took no number
    assert a["coverage"]["total"] == a["coverage"]["extracted"] == 8
    assert a["warnings"] == [
        "1 vertically merged table cell(s) covered by the cell above hold text of their own, which Word does not "
        "show; it was not read"
    ]


def test_a_continuation_with_no_merge_above_it_is_an_ordinary_cell() -> None:
    """ST_Merge continue: when the cell above neither begins nor continues a merge, the value is ignored."""
    body = _table(
        f"<w:tc>{p('Head A')}</w:tc><w:tc>{_vmerge('restart')}{p('Head B')}</w:tc>",
        f"<w:tc>{_vmerge(None)}{p('Stray')}</w:tc><w:tc>{_vmerge(None)}{p('covered')}</w:tc>",
    )
    a = run(make_docx(body))
    assert a["blocks"][0]["attrs"]["table"] == {"columns": ["Head A", "Head B"], "rows": [["Stray", None]]}
    assert len(a["warnings"]) == 1


def _hdr(text: str, root: str = "hdr") -> str:
    return f"<w:{root} {NS}>{p(text)}</w:{root}>"


def test_first_and_even_headers_only_where_the_section_shows_them() -> None:
    # rIds follow the parts' order from rId10
    parts = {
        "header1.xml": _hdr("Default header"),
        "header2.xml": _hdr("First page header"),
        "header3.xml": _hdr("Even page header"),
        "footer1.xml": _hdr("First page footer", "ftr"),
    }
    refs = (
        '<w:headerReference w:type="default" r:id="rId10"/><w:headerReference w:type="first" r:id="rId11"/>'
        '<w:headerReference w:type="even" r:id="rId12"/><w:footerReference w:type="first" r:id="rId13"/>'
    )
    a = run(make_docx(p("Body.") + f"<w:sectPr>{refs}</w:sectPr>", parts=parts))
    assert _texts(a) == ["Body.", "Default header"]  # no titlePg, no evenAndOddHeaders: Word shows neither
    assert a["coverage"]["total"] == 2

    settings = f"<w:settings {NS}><w:evenAndOddHeaders/></w:settings>"
    a = run(
        make_docx(p("Body.") + f"<w:sectPr>{refs}<w:titlePg/></w:sectPr>", parts={**parts, "settings.xml": settings})
    )
    assert _texts(a) == ["Body.", "Default header", "First page header", "Even page header", "First page footer"]

    # a later section with titlePg shows the first-page header it inherits from the section before
    two = f"<w:p><w:pPr><w:sectPr>{refs}</w:sectPr></w:pPr></w:p>{p('Part two.')}<w:sectPr><w:titlePg/></w:sectPr>"
    a = run(make_docx(p("Body.") + two, parts=parts))
    assert _texts(a) == ["Body.", "Part two.", "Default header", "First page header", "First page footer"]

    off = f'<w:settings {NS}><w:evenAndOddHeaders w:val="0"/></w:settings>'
    a = run(make_docx(p("Body.") + f"<w:sectPr>{refs}</w:sectPr>", parts={**parts, "settings.xml": off}))
    assert _texts(a) == ["Body.", "Default header"]


def test_a_page_break_inside_a_paragraph_separates_its_text() -> None:
    body = (
        '<w:p><w:r><w:t>End of chapter.</w:t></w:r><w:r><w:br w:type="page"/></w:r>'
        "<w:r><w:t>Next chapter begins.</w:t></w:r></w:p>"
        '<w:p><w:r><w:br w:type="page"/><w:t>Alone.</w:t></w:r></w:p>'
    )
    assert _texts(run(make_docx(body))) == ["End of chapter.\nNext chapter begins.", "Alone."]


def test_a_deleted_list_paragraph_takes_no_number() -> None:
    deleted = (
        '<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr>'
        '<w:rPr><w:del w:id="5" w:author="C"/></w:rPr></w:pPr>'
        '<w:del w:id="6" w:author="C"><w:r><w:delText>Buyer pays a deposit.</w:delText></w:r></w:del></w:p>'
    )
    # an empty numbered paragraph whose mark is not deleted still shows (and takes) its number
    empty = '<w:p><w:pPr><w:numPr><w:ilvl w:val="0"/><w:numId w:val="1"/></w:numPr></w:pPr></w:p>'
    body = _item("Seller delivers goods.") + deleted + _item("Buyer pays on delivery.") + empty + _item("Last.")
    a = run(make_docx(body, parts={"numbering.xml": NUMBERING}))
    assert _texts(a) == ["1. Seller delivers goods.", "2. Buyer pays on delivery.", "4. Last."]
    assert a["coverage"]["total"] == 5
