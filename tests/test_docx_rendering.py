"""DOCX as Word shows it (issue 15): numbering labels, fields, drawings, SmartArt, charts, equations, alt text, note
marks, and coverage that says what was not read. Small packages built here, and corpus files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.test_format_docx import NS, make_docx, p, run

A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"
C_NS = "http://schemas.openxmlformats.org/drawingml/2006/chart"
DGM_NS = "http://schemas.openxmlformats.org/drawingml/2006/diagram"
WP_NS = "http://schemas.openxmlformats.org/drawingml/2006/wordprocessingDrawing"
PIC_NS = "http://schemas.openxmlformats.org/drawingml/2006/picture"


def _lvl(ilvl: int, fmt: str, text: str, start: int = 1) -> str:
    return (
        f'<w:lvl w:ilvl="{ilvl}"><w:start w:val="{start}"/><w:numFmt w:val="{fmt}"/><w:lvlText w:val="{text}"/></w:lvl>'
    )


def _numbering(*levels: str, overrides: str = "") -> str:
    return (
        f'<w:numbering {NS}><w:abstractNum w:abstractNumId="0">{"".join(levels)}</w:abstractNum>'
        f'<w:num w:numId="1"><w:abstractNumId w:val="0"/></w:num>'
        f'<w:num w:numId="2"><w:abstractNumId w:val="0"/>{overrides}</w:num></w:numbering>'
    )


def _item(text: str, ilvl: int, num: int = 1) -> str:
    return p(text, f'<w:numPr><w:ilvl w:val="{ilvl}"/><w:numId w:val="{num}"/></w:numPr>')


def _texts(a: dict[str, Any]) -> list[str]:
    return [b["text"] for b in a["blocks"]]


def test_list_numbers_are_rendered_in_text_and_attrs() -> None:
    numbering = _numbering(
        _lvl(0, "decimal", "%1."),
        _lvl(1, "decimal", "%1.%2"),
        _lvl(2, "lowerLetter", "%3)"),
        _lvl(3, "lowerRoman", "%4."),
        _lvl(4, "upperRoman", "(%5)", start=4),
        overrides='<w:lvlOverride w:ilvl="0"><w:startOverride w:val="7"/></w:lvlOverride>',
    )
    body = (
        _item("one", 0)
        + _item("one point one", 1)
        + _item("letter a", 2)
        + _item("letter b", 2)
        + _item("roman i", 3)
        + _item("roman ii", 3)
        + _item("upper roman", 4)
        + _item("two", 0)
        + _item("two point one", 1)
        + _item("restarted list", 0, num=2)
        + p("", '<w:numPr><w:ilvl w:val="0"/><w:numId w:val="2"/></w:numPr>')  # empty: no block, but number 8
        + _item("after an empty item", 0, num=2)
    )
    a = run(make_docx(body, parts={"numbering.xml": numbering}))
    assert _texts(a) == [
        "1. one",
        "1.1 one point one",
        "a) letter a",
        "b) letter b",
        "i. roman i",
        "ii. roman ii",
        "(IV) upper roman",
        "2. two",
        "2.1 two point one",
        "7. restarted list",  # another w:num of the same list, started at 7 by its override
        "9. after an empty item",  # Word numbers an empty list paragraph too
    ]
    first = a["blocks"][0]["attrs"]["list"]
    assert first == {"num_id": "1", "level": 0, "format": "decimal", "label": "1."}
    assert a["blocks"][3]["attrs"]["list"]["label"] == "b)"
    assert a["blocks"][3]["depth"] == 2


def test_bullets_and_numbered_headings(corpus: Path) -> None:
    numbering = _numbering(_lvl(0, "bullet", "\uf0b7"), _lvl(1, "bullet", "o"))
    a = run(make_docx(_item("dot", 0) + _item("circle", 1), parts={"numbering.xml": numbering}))
    assert _texts(a) == ["• dot", "o circle"]  # the Symbol font's bullet is U+2022; Courier New's "o" stays
    numbered = run((corpus / "docx/docling-headers-numbered.docx").read_bytes())
    headings = [b["text"] for b in numbered["blocks"] if b["type"] == "heading"]
    assert headings[:6] == ["Test Document", "1. Section 1", "1.1. Section 1.1", "1.2. Section 1.2",
                            "1.2.1. Section 1.2.3", "2. Section 2"]  # fmt: skip
    # a level skipped over counts at its start, as Word and LibreOffice number it: 2. -> 2.1.1. -> 2.2.
    assert headings[6:8] == ["2.1.1. Section 2.1.1", "2.2. Section 2.1"]
    by_text = {b["text"]: b for b in numbered["blocks"]}
    assert by_text["1.1. Section 1.1"]["attrs"]["list"]["label"] == "1.1."
    first = next(b for b in numbered["blocks"] if b["text"] == "Paragraph 1.1.1")
    assert first["section_path"] == ["Test Document", "1. Section 1", "1.1. Section 1.1"]


def test_field_results_are_their_cached_text() -> None:
    """PAGE, NUMPAGES, DATE, REF and TOC entries read as Word last showed them; instructions never."""

    def field(instr: str, result: str) -> str:
        return (
            '<w:r><w:fldChar w:fldCharType="begin"/></w:r>'
            f'<w:r><w:instrText xml:space="preserve"> {instr} </w:instrText></w:r>'
            '<w:r><w:fldChar w:fldCharType="separate"/></w:r>'
            f'<w:r><w:t>{result}</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r>'
        )

    toc_field = field("TOC \\o 1-3", "Introduction")
    date_field = field("DATE \\@ yyyy-MM-dd", "2026-12-02")
    ref_field = field("REF _Ref1 \\h", "Table 2")
    toc = (
        "<w:sdt><w:sdtPr><w:docPartObj><w:docPartGallery w:val='Table of Contents'/></w:docPartObj></w:sdtPr>"
        f"<w:sdtContent><w:p>{toc_field}<w:r><w:tab/><w:t>3</w:t></w:r></w:p></w:sdtContent></w:sdt>"
    )
    body = (
        toc
        + f"<w:p><w:r><w:t xml:space='preserve'>Page </w:t></w:r>{field('PAGE', '4')}"
        + f"<w:r><w:t xml:space='preserve'> of </w:t></w:r>{field('NUMPAGES', '9')}</w:p>"
        + f"<w:p>{date_field}</w:p>"
        + f"<w:p><w:r><w:t xml:space='preserve'>See </w:t></w:r>{ref_field}</w:p>"
        + "<w:p><w:fldSimple w:instr=' AUTHOR '><w:r><w:t>Ada</w:t></w:r></w:fldSimple></w:p>"
    )
    a = run(make_docx(body))
    assert _texts(a) == ["Introduction\t3", "Page 4 of 9", "2026-12-02", "See Table 2", "Ada"]
    assert not any("PAGE" in t or "REF" in t for t in _texts(a))


def _drawing(graphic: str, descr: str = "", name: str = "Drawing 1") -> str:
    return (
        f'<w:r><w:drawing><wp:inline xmlns:wp="{WP_NS}"><wp:docPr id="1" name="{name}" descr="{descr}"/>'
        f'<a:graphic xmlns:a="{A_NS}">{graphic}</a:graphic></wp:inline></w:drawing></w:r>'
    )


def _chart_part(values: bool = True, shown: bool = True) -> str:
    def num(vals: list[str]) -> str:
        if not values:
            return "<c:numRef><c:f>Sheet1!$B$2:$B$3</c:f></c:numRef>"
        pts = "".join(f'<c:pt idx="{i}"><c:v>{v}</c:v></c:pt>' for i, v in enumerate(vals))
        return f"<c:numRef><c:f>x</c:f><c:numCache><c:ptCount val='{len(vals)}'/>{pts}</c:numCache></c:numRef>"

    def ser(name: str, vals: list[str]) -> str:
        cats = "" if not values else (
            "<c:cat><c:strRef><c:strCache><c:pt idx='0'><c:v>North</c:v></c:pt><c:pt idx='1'><c:v>South</c:v>"
            "</c:pt></c:strCache></c:strRef></c:cat>"
        )  # fmt: skip
        tx = f"<c:tx><c:strRef><c:strCache><c:pt idx='0'><c:v>{name}</c:v></c:pt></c:strCache></c:strRef></c:tx>"
        return f"<c:ser>{tx if values else ''}{cats}<c:val>{num(vals)}</c:val></c:ser>"

    def rich(text: str) -> str:
        return f"<c:title><c:tx><c:rich><a:p><a:r><a:t>{text}</a:t></a:r></a:p></c:rich></c:tx></c:title>"

    def cat_axis(shown: bool) -> str:
        return f"<c:catAx><c:delete val='0'/><c:tickLblPos val='{'nextTo' if shown else 'none'}'/></c:catAx>"

    title = rich("Sales by region")
    axis = f"<c:valAx>{rich('Units sold')}</c:valAx>"
    return (
        f'<c:chartSpace xmlns:c="{C_NS}" xmlns:a="{A_NS}"><c:chart>{title}<c:plotArea>'
        f"<c:barChart>{ser('2024', ['10', '12.5'])}{ser('2025', ['11', '14'])}</c:barChart>"
        f"<c:lineChart>{ser('Target', ['9', '13'])}</c:lineChart>{cat_axis(shown)}{axis}</c:plotArea>"
        f"{'<c:legend/>' if shown else ''}</c:chart></c:chartSpace>"
    )


def _chart_run(rid: str = "rId10") -> str:
    return _drawing(
        f'<a:graphicData uri="{C_NS}"><c:chart xmlns:c="{C_NS}" '
        f'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" r:id="{rid}"/></a:graphicData>'
    )


def test_chart_is_a_block_with_its_values() -> None:
    body = f"<w:p><w:r><w:t>Figure 1.</w:t></w:r>{_chart_run()}</w:p>" + p("After.")
    a = run(make_docx(body, parts={"charts/chart1.xml": _chart_part()}))
    texts = _texts(a)
    assert texts[0] == "Figure 1."
    # the value axis's ticks, computed as LibreOffice scales 9..14 (step 2, one more step above 14 at the border)
    assert (
        texts[1]
        == "Sales by region\nUnits sold\n0 | 2 | 4 | 6 | 8 | 10 | 12 | 14 | 16\n2024 | 2025 | Target\nNorth | South"
    )
    assert texts[2] == "After."
    chart = a["blocks"][1]["attrs"]
    assert chart["chart"] == "bar+line"
    assert chart["table"] == {
        "columns": ["", "2024", "2025", "Target"],
        "rows": [["North", "10", "11", "9"], ["South", "12.5", "14", "13"]],
    }
    assert a["coverage"]["complete"] is True
    # no legend and the category axis without labels: the slide prints neither, the values' table keeps both
    hidden = run(make_docx(body, parts={"charts/chart1.xml": _chart_part(shown=False)}))
    assert _texts(hidden)[1] == "Sales by region\nUnits sold\n0 | 2 | 4 | 6 | 8 | 10 | 12 | 14 | 16"
    assert hidden["blocks"][1]["attrs"]["table"] == chart["table"]


def test_chart_without_cached_values_is_a_failed_unit() -> None:
    body = f"<w:p><w:r><w:t>Figure 1.</w:t></w:r>{_chart_run()}</w:p>"
    a = run(make_docx(body, parts={"charts/chart1.xml": _chart_part(values=False)}))
    assert _texts(a) == ["Figure 1."]
    assert a["coverage"]["failed"] == [
        {"unit": "chart 1", "reason": "the chart holds no cached values (only references into its workbook)"}
    ]
    assert a["coverage"]["complete"] is False
    missing = run(make_docx(f"<w:p>{_chart_run('rId99')}</w:p>"))
    assert missing["coverage"]["failed"] == [
        {"unit": "chart 1", "reason": "the chart's part is missing from the package"}
    ]


def test_smartart_shapes_equations_pictures_and_objects() -> None:
    data_part = (
        f'<dgm:dataModel xmlns:dgm="{DGM_NS}" xmlns:a="{A_NS}"><dgm:ptLst>'
        '<dgm:pt modelId="0" type="doc"><dgm:t><a:p><a:r><a:t>not shown</a:t></a:r></a:p></dgm:t></dgm:pt>'
        '<dgm:pt modelId="1"><dgm:t><a:p><a:r><a:t>Plan</a:t></a:r></a:p></dgm:t></dgm:pt>'
        '<dgm:pt modelId="2" type="parTrans"><dgm:t><a:p><a:r><a:t>edge</a:t></a:r></a:p></dgm:t></dgm:pt>'
        '<dgm:pt modelId="3"><dgm:t><a:p><a:r><a:t>Build</a:t></a:r></a:p></dgm:t></dgm:pt>'
        "</dgm:ptLst></dgm:dataModel>"
    )
    smartart = _drawing(
        f'<a:graphicData uri="{DGM_NS}"><dgm:relIds xmlns:dgm="{DGM_NS}" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" r:dm="rId10"/></a:graphicData>'
    )
    picture = _drawing(
        f'<a:graphicData uri="{PIC_NS}"><pic:pic xmlns:pic="{PIC_NS}"><pic:nvPicPr><pic:cNvPr id="0" '
        'name="duck.png"/></pic:nvPicPr></pic:pic></a:graphicData>',
        descr="A duck  holding\na paper",
    )
    shape = (
        "<w:r><w:drawing><wps:wsp><wps:txbx><w:txbxContent>" + p("Shape text") + "</w:txbxContent></wps:txbx>"
        "</wps:wsp></w:drawing></w:r>"
    )
    math = (
        "<m:oMath><m:r><m:t>y=</m:t></m:r><m:f><m:num><m:r><m:t>a+b</m:t></m:r></m:num><m:den><m:r><m:t>2</m:t>"
        "</m:r></m:den></m:f><m:r><m:t>+</m:t></m:r><m:sSup><m:e><m:r><m:t>x</m:t></m:r></m:e><m:sup><m:r>"
        "<m:t>2</m:t></m:r></m:sup></m:sSup><m:r><m:t>+</m:t></m:r><m:rad><m:radPr><m:degHide m:val='1'/>"
        "</m:radPr><m:deg/><m:e><m:r><m:t>z</m:t></m:r></m:e></m:rad></m:oMath>"
    )
    ole = (
        '<w:r><w:object><o:OLEObject xmlns:o="urn:schemas-microsoft-com:office:office" ProgID="Excel"/>'
        "</w:object></w:r>"
    )
    body = (
        f"<w:p>{smartart}</w:p>"
        + f"<w:p><w:r><w:t>Anchor</w:t></w:r>{shape}</w:p>"
        + f"<w:p>{math}</w:p>"
        + f"<w:p>{picture}</w:p>"
        + f"<w:p><w:r><w:t>With an object</w:t></w:r>{ole}</w:p>"
    )
    a = run(make_docx(body, parts={"diagrams/data1.xml": data_part}))
    blocks = a["blocks"]
    assert [(b["text"], b.get("attrs")) for b in blocks[:3]] == [
        ("Plan\nBuild", {"diagram": True}),
        ("Anchor", None),
        ("Shape text", {"textbox": True}),
    ]
    assert blocks[3]["text"] == "y=(a+b)/2+x^2 +√z"  # linear format, not "y=a+b2+x2z"
    assert blocks[4]["text"] == ""
    assert blocks[4]["attrs"] == {"image": {"alt": "A duck holding a paper", "name": "duck.png"}}
    assert blocks[5]["text"] == "With an object"
    cov = a["coverage"]
    assert cov["failed"] == [{"unit": "embedded object 1", "reason": "an embedded (OLE) object's content is not read"}]
    assert cov["lost"] == ["image_text"]
    assert "1 picture(s) not read: any text drawn in them is missing (their alt text is in attrs)" in a["warnings"]
    assert cov["complete"] is False


def test_notes_lead_with_their_marks(corpus: Path) -> None:
    a = run((corpus / "docx/mammoth-endnotes.docx").read_bytes())
    notes = [(b["text"], b["attrs"]["mark"]) for b in a["blocks"] if b.get("attrs", {}).get("part") == "endnote"]
    assert notes == [("i A tachyon walks into a bar.", "i"), ("ii Fin.", "ii")]  # endnotes: lower roman by default
    assert a["blocks"][0]["text"] == "Ouchⁱ.ⁱⁱ"  # the references in the body: superscript marks, as Word prints them
    f = run((corpus / "docx/mammoth-footnotes.docx").read_bytes())
    marks = [b["attrs"]["mark"] for b in f["blocks"] if b.get("attrs", {}).get("part") == "footnote"]
    assert marks == ["1", "2"]
    assert f["blocks"][0]["text"] == "Ouch¹.²"


def test_corpus_chart_and_headers(corpus: Path) -> None:
    a = run((corpus / "docx/docling-drawingml.docx").read_bytes())
    chart = next(b for b in a["blocks"] if "chart" in b.get("attrs", {}))
    assert chart["attrs"]["chart"] == "line"
    assert chart["text"].splitlines()[:3] == [
        "Chart Title",
        "0 | 1 | 2 | 3 | 4 | 5 | 6",
        "Series 1 | Series 2 | Series 3",
    ]
    assert chart["attrs"]["table"]["rows"][0] == ["Category 1", "4.3", "2.4", "2"]
    h = run((corpus / "docx/python-docx-hdr-header-footer.docx").read_bytes())
    parts = [(b["text"], b["attrs"]["part"]) for b in h["blocks"] if "part" in b.get("attrs", {})]
    assert parts == [("Header for section-1", "header"), ("Footer for section 1", "footer")]


def test_hostile_numbering_stays_small() -> None:
    """A letter list started at a billion is shown in digits, not a billion-letter label; an unknown format is
    decimal; a list level that is not defined gives no label."""
    numbering = _numbering(_lvl(0, "lowerLetter", "%1)", start=1_000_000_000), _lvl(1, "chicago-ish", "%2."))
    a = run(make_docx(_item("big", 0) + _item("odd", 1) + _item("undefined", 5), parts={"numbering.xml": numbering}))
    assert _texts(a) == ["1000000000) big", "1. odd", "undefined"]


def test_a_chart_part_drawn_many_times_is_read_once(monkeypatch: Any) -> None:
    from extract_fn.formats import docx_format

    reads: list[str] = []
    real = docx_format.parse_part

    def counting(zf: Any, name: str, kind: str) -> Any:
        reads.append(name)
        return real(zf, name, kind)

    monkeypatch.setattr(docx_format, "parse_part", counting)
    body = "".join(f"<w:p>{_chart_run()}</w:p>" for _ in range(50))
    a = run(make_docx(body, parts={"charts/chart1.xml": _chart_part()}))
    assert sum(1 for b in a["blocks"] if "chart" in b.get("attrs", {})) == 50
    assert reads.count("word/charts/chart1.xml") == 1


def test_imported_document_is_a_failed_unit() -> None:
    chunk = '<w:altChunk r:id="rId10"/>'
    a = run(make_docx(p("Before") + chunk + "<w:tbl><w:tr><w:tc>" + chunk + p("cell") + "</w:tc></w:tr></w:tbl>"))
    assert [b["text"] for b in a["blocks"]] == ["Before", "cell"]
    assert a["coverage"]["failed"] == [
        {"unit": "imported document 1", "reason": "an imported document (altChunk) is not read"},
        {"unit": "imported document 2", "reason": "an imported document (altChunk) is not read"},
    ]


def test_broken_chart_or_diagram_part_fails_its_unit_not_the_document() -> None:
    diagram = _drawing(
        f'<a:graphicData uri="{DGM_NS}"><dgm:relIds xmlns:dgm="{DGM_NS}" '
        'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships" r:dm="rId11"/></a:graphicData>'
    )
    body = f"<w:p><w:r><w:t>Kept</w:t></w:r>{_chart_run()}{diagram}</w:p>"
    a = run(make_docx(body, parts={"charts/chart1.xml": "<c:chartSpace", "diagrams/data1.xml": "<oops"}))
    assert _texts(a) == ["Kept"]
    assert [f["unit"] for f in a["coverage"]["failed"]] == ["chart 1", "diagram 1"]
    assert all("not well-formed" in f["reason"] or "XML" in f["reason"] for f in a["coverage"]["failed"])


def test_drawings_in_table_cells_follow_the_table() -> None:
    picture = _drawing(
        f'<a:graphicData uri="{PIC_NS}"><pic:pic xmlns:pic="{PIC_NS}"><pic:nvPicPr><pic:cNvPr id="0" '
        'name="logo.png" descr="Company logo"/></pic:nvPicPr></pic:pic></a:graphicData>'
    )
    cell = "<w:tc>{}</w:tc>"
    body = (
        "<w:tbl><w:tr>"
        + cell.format(p("Name"))
        + cell.format(p("Logo"))
        + "</w:tr><w:tr>"
        + cell.format(p("Acme"))
        + cell.format(f"<w:p>{picture}</w:p>")
        + "</w:tr><w:tr>"
        + cell.format(p("Sales"))
        + cell.format(f"<w:p>{_chart_run()}</w:p>")
        + "</w:tr></w:tbl>"
        + p("After.")
    )
    a = run(make_docx(body, parts={"charts/chart1.xml": _chart_part()}))
    blocks = a["blocks"]
    assert blocks[0]["attrs"]["table"]["rows"] == [["Acme", ""], ["Sales", ""]]
    # the picture's alt text and the chart, each a block after the table's, naming its cell (row 0 = columns)
    assert blocks[1]["text"] == ""
    assert blocks[1]["attrs"] == {"image": {"alt": "Company logo", "name": "logo.png"}, "cell": [1, 1]}
    assert blocks[2]["text"].startswith("Sales by region\n")
    assert blocks[2]["attrs"]["cell"] == [2, 1]
    assert blocks[2]["attrs"]["chart"] == "bar+line"
    assert blocks[3]["text"] == "After."
    assert a["coverage"]["lost"] == ["image_text"]  # the picture is counted once
    assert "1 picture(s) not read: any text drawn in them is missing (their alt text is in attrs)" in a["warnings"]
