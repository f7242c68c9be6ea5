"""PPTX shapes as the slide shows them (issue 15): charts with their cached values, SmartArt, pictures' alt text,
automatic numbers, shapes of unknown kinds, and failed units for what is not read."""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pptx import Presentation
from pptx.chart.data import CategoryChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.util import Inches

from tests.test_format_pptx import replace_part, run, slide_xml

A_NS = "http://schemas.openxmlformats.org/drawingml/2006/main"
P_NS = "http://schemas.openxmlformats.org/presentationml/2006/main"
DGM_NS = "http://schemas.openxmlformats.org/drawingml/2006/diagram"
R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def _png() -> bytes:
    """A 1x1 PNG."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", ihdr)
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\xff\xff"))
        + chunk(b"IEND", b"")
    )


def _deck() -> bytes:
    prs = Presentation()
    s1 = prs.slides.add_slide(prs.slide_layouts[5])
    s1.shapes.title.text = "Numbers"
    data = CategoryChartData()
    data.categories = ["Q1", "Q2", "Q3"]
    data.add_series("Revenue", (10, 12.5, 15))
    data.add_series("Cost", (8, 9, 9.5))
    frame = s1.shapes.add_chart(XL_CHART_TYPE.LINE, Inches(1), Inches(2), Inches(6), Inches(4), data)
    frame.chart.has_title = True
    frame.chart.chart_title.text_frame.text = "Quarterly results"
    s2 = prs.slides.add_slide(prs.slide_layouts[6])
    pic = s2.shapes.add_picture(io.BytesIO(_png()), Inches(1), Inches(1))
    pic._element.nvPicPr.cNvPr.set("descr", "A duck holding a paper")
    box = s2.shapes.add_textbox(Inches(1), Inches(3), Inches(4), Inches(2)).text_frame
    box.text = "first step"
    box.add_paragraph().text = "second step"
    box.add_paragraph().text = "third step"
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


def _autonumber(xml: str) -> str:
    """Number the text box's paragraphs (the second and third as 'a)' at level 1 after a restart)."""
    pprs = ['<a:pPr><a:buAutoNum type="arabicPeriod"/></a:pPr>', '<a:pPr><a:buAutoNum type="arabicPeriod"/></a:pPr>',
            '<a:pPr lvl="1"><a:buAutoNum type="alphaLcParenR"/></a:pPr>']  # fmt: skip
    for text, ppr in zip(("first step", "second step", "third step"), pprs, strict=True):
        xml = xml.replace(f"<a:p><a:r><a:t>{text}</a:t>", f"<a:p>{ppr}<a:r><a:t>{text}</a:t>")
    return xml


def _blocks(a: dict[str, Any], page: int) -> list[dict[str, Any]]:
    return [b for b in a["blocks"] if b["locator"]["page_start"] == page]


def test_chart_block_has_its_type_and_cached_values() -> None:
    a = run(_deck())
    chart = next(b for b in _blocks(a, 1) if "chart" in b.get("attrs", {}))
    # the value axis prints 0..16 by 2 (LibreOffice's scale of 8..15 on a 4-inch-high frame)
    assert chart["text"] == "Quarterly results\n0 | 2 | 4 | 6 | 8 | 10 | 12 | 14 | 16\nRevenue | Cost\nQ1 | Q2 | Q3"
    assert chart["attrs"]["chart"] == "line"
    assert chart["attrs"]["table"] == {
        "columns": ["", "Revenue", "Cost"],
        "rows": [["Q1", "10", "8"], ["Q2", "12.5", "9"], ["Q3", "15", "9.5"]],
    }
    assert chart["section_path"] == ["Numbers"]


def test_chart_without_cached_values_is_a_failed_shape() -> None:
    data = _deck()
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    part = next(n for n in names if n.startswith("ppt/charts/chart"))
    xml = zipfile.ZipFile(io.BytesIO(data)).read(part).decode()
    bare = re.sub(r"<c:(str|num)Cache>.*?</c:\1Cache>", "", xml, flags=re.DOTALL)
    a = run(replace_part(data, part, bare.encode()))
    assert not any("chart" in b.get("attrs", {}) for b in a["blocks"])
    assert a["coverage"]["failed"] == [
        {"unit": "slide 1 shape 2", "reason": "the chart holds no cached values (only references into its workbook)"}
    ]
    assert a["coverage"]["complete"] is False


@pytest.fixture
def ocr_off(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """OCR off for one test (the setting is read once and cached: cleared before and after)."""
    from extract_fn.ocr import config

    monkeypatch.setenv("EXTRACTOR_OCR", "off")
    config.ocr_settings.cache_clear()
    yield
    monkeypatch.undo()
    config.ocr_settings.cache_clear()


@pytest.mark.usefixtures("ocr_off")
def test_picture_alt_text_and_automatic_numbers() -> None:
    """With OCR off the picture's pixels are not read, and coverage says so (with OCR on: tests/test_ocr.py)."""
    data = _deck()
    data = replace_part(data, "ppt/slides/slide2.xml", _autonumber(slide_xml(data, 2)).encode())
    a = run(data)
    blocks = _blocks(a, 2)
    assert blocks[0]["text"] == ""
    assert blocks[0]["attrs"]["image"]["alt"] == "A duck holding a paper"
    assert blocks[1]["text"] == "1. first step\n2. second step\na) third step"
    assert a["coverage"]["lost"] == ["image_text"]
    assert any("1 picture(s) not read" in w for w in a["warnings"])


def _with_graphic_frame(data: bytes, graphic: str, rels: str = "", parts: dict[str, str] | None = None) -> bytes:
    xml = slide_xml(data, 2)
    frame = (
        f'<p:graphicFrame xmlns:p="{P_NS}" xmlns:a="{A_NS}"><p:nvGraphicFramePr><p:cNvPr id="90" name="Extra"/>'
        "<p:cNvGraphicFramePr/><p:nvPr/></p:nvGraphicFramePr><p:xfrm><a:off x='0' y='0'/><a:ext cx='1' cy='1'/>"
        f"</p:xfrm><a:graphic>{graphic}</a:graphic></p:graphicFrame>"
    )
    data = replace_part(data, "ppt/slides/slide2.xml", xml.replace("</p:spTree>", frame + "</p:spTree>").encode())
    if rels:
        rel_xml = zipfile.ZipFile(io.BytesIO(data)).read("ppt/slides/_rels/slide2.xml.rels").decode()
        data = replace_part(
            data,
            "ppt/slides/_rels/slide2.xml.rels",
            rel_xml.replace("</Relationships>", rels + "</Relationships>").encode(),
        )
    for name, body in (parts or {}).items():
        buf = io.BytesIO(data)
        with zipfile.ZipFile(buf, "a") as zf:
            zf.writestr(name, body)
        data = buf.getvalue()
    return data


def test_smartart_gives_its_data_part_text() -> None:
    model = (
        f'<dgm:dataModel xmlns:dgm="{DGM_NS}" xmlns:a="{A_NS}"><dgm:ptLst>'
        '<dgm:pt modelId="0" type="doc"><dgm:t><a:p><a:r><a:t>hidden doc point</a:t></a:r></a:p></dgm:t></dgm:pt>'
        '<dgm:pt modelId="1"><dgm:t><a:p><a:r><a:t>Collect</a:t></a:r></a:p></dgm:t></dgm:pt>'
        '<dgm:pt modelId="2" type="sibTrans"><dgm:t><a:p><a:r><a:t>arrow</a:t></a:r></a:p></dgm:t></dgm:pt>'
        '<dgm:pt modelId="3"><dgm:t><a:p><a:r><a:t>Analyse</a:t></a:r></a:p></dgm:t></dgm:pt>'
        "</dgm:ptLst></dgm:dataModel>"
    )
    ids = f'<dgm:relIds xmlns:dgm="{DGM_NS}" xmlns:r="{R_NS}" r:dm="rId90"/>'
    graphic = f'<a:graphicData uri="{DGM_NS}">{ids}</a:graphicData>'
    rel = f'<Relationship Id="rId90" Type="{R_NS}/diagramData" Target="../diagrams/data1.xml"/>'
    a = run(_with_graphic_frame(_deck(), graphic, rel, {"ppt/diagrams/data1.xml": model}))
    diagram = next(b for b in a["blocks"] if b.get("attrs", {}).get("diagram"))
    assert diagram["text"] == "Collect\nAnalyse"
    assert diagram["locator"] == {"page_start": 2, "page_end": 2}


def test_embedded_object_is_a_failed_shape() -> None:
    ole = f'<a:graphicData uri="{P_NS}/ole"><p:oleObj xmlns:p="{P_NS}" progId="Excel.Sheet.12"/></a:graphicData>'
    a = run(_with_graphic_frame(_deck(), ole))
    assert {"unit": "slide 2 shape 3", "reason": "an embedded object is not read"} in a["coverage"]["failed"]


def test_unknown_shape_kinds_give_their_text() -> None:
    data = _deck()
    xml = slide_xml(data, 2)
    odd = (
        f'<p14:oddShape xmlns:p14="urn:example:future" xmlns:p="{P_NS}" xmlns:a="{A_NS}"><p:txBody><a:bodyPr/>'
        "<a:p><a:r><a:t>Text in a shape of a future kind</a:t></a:r></a:p></p:txBody></p14:oddShape>"
    )
    a = run(replace_part(data, "ppt/slides/slide2.xml", xml.replace("</p:spTree>", odd + "</p:spTree>").encode()))
    assert "Text in a shape of a future kind" in [b["text"] for b in _blocks(a, 2)]


def test_corpus_charts_and_pictures(corpus: Path) -> None:
    a = run((corpus / "pptx/docling-pptx-chart.pptx").read_bytes())
    chart = next(b for b in a["blocks"] if "chart" in b.get("attrs", {}))
    assert chart["attrs"]["chart"] == "bar"
    assert chart["attrs"]["table"]["columns"][1:] == ["Freshwater Ducks", "Saltwater Ducks"]
    assert chart["attrs"]["table"]["rows"][0] == ["2019", "120", "80"]
    types = run((corpus / "pptx/python-pptx-chart-types.pptx").read_bytes())
    charts = [b for b in types["blocks"] if "chart" in b.get("attrs", {})]
    assert len(charts) > 20
    assert charts[0]["attrs"]["table"]["rows"][0][0] == "1/5/02"  # a date category (m/d/yy), not the serial 37261
    assert any("1/5/02" in c["text"] for c in charts)  # printed where a date axis shows its labels
    assert not any("Category 1" in c["text"] for c in charts)  # every category axis there has tickLblPos none
    img = run((corpus / "pptx/docling-powerpoint-with-image.pptx").read_bytes())
    alts = [b["attrs"]["image"]["alt"] for b in img["blocks"] if "image" in b.get("attrs", {})]
    assert "A cartoon duck holding a paper AI-generated content may be incorrect." in alts
    sample = run((corpus / "pptx/docling-powerpoint-sample.pptx").read_bytes())
    assert any(b["text"].startswith("1. ") for b in sample["blocks"])  # buAutoNum arabicPeriod


def _inherited_numbering_deck(layout_style: bool) -> bytes:
    """A body placeholder and a text box, the master's body style numbering level 1 ("1.", "2.") and, when
    ``layout_style``, the layout's placeholder numbering it "a)" instead (the nearer style wins)."""
    prs = Presentation()
    layout = prs.slide_layouts[1]  # Title and Content
    slide = prs.slides.add_slide(layout)
    slide.shapes.title.text = "Plan"
    body = slide.placeholders[1].text_frame
    body.text = "first"
    for text in ("second", "third"):
        body.add_paragraph().text = text
    box = slide.shapes.add_textbox(Inches(1), Inches(5), Inches(4), Inches(1)).text_frame
    box.text = "not numbered"
    box.add_paragraph().text = "by the master"
    lvl1 = prs.slide_master.element.find(f"{{{P_NS}}}txStyles/{{{P_NS}}}bodyStyle/{{{A_NS}}}lvl1pPr")
    for el in [c for c in lvl1 if c.tag.rsplit("}", 1)[1].startswith("bu") and c.tag.endswith(("Char", "None"))]:
        lvl1.remove(el)
    lvl1.append(lvl1.makeelement(f"{{{A_NS}}}buAutoNum", {"type": "arabicPeriod"}))
    if layout_style:
        lst = layout.placeholders[1]._element.txBody.find(f"{{{A_NS}}}lstStyle")
        ppr = lst.makeelement(f"{{{A_NS}}}lvl1pPr", {})
        ppr.append(ppr.makeelement(f"{{{A_NS}}}buAutoNum", {"type": "alphaLcParenR"}))
        lst.append(ppr)
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


def test_numbering_inherited_from_master_and_layout() -> None:
    a = run(_inherited_numbering_deck(layout_style=False))
    texts = [b["text"] for b in _blocks(a, 1)]
    assert texts == ["Plan", "1. first\n2. second\n3. third", "not numbered\nby the master"]
    b = run(_inherited_numbering_deck(layout_style=True))
    assert [x["text"] for x in _blocks(b, 1)][1] == "a) first\nb) second\nc) third"
    # a paragraph's own bullet wins over the inherited number (buNone: no number, and it restarts the level)
    data = _inherited_numbering_deck(layout_style=False)
    xml = slide_xml(data, 1).replace("<a:p><a:r><a:t>second", "<a:p><a:pPr><a:buNone/></a:pPr><a:r><a:t>second", 1)
    c = run(replace_part(data, "ppt/slides/slide1.xml", xml.encode()))
    assert [x["text"] for x in _blocks(c, 1)][1] == "1. first\nsecond\n1. third"


def test_broken_layout_loses_only_its_numbers() -> None:
    data = _inherited_numbering_deck(layout_style=True)
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        layout = next(n for n in zf.namelist() if n.endswith("slideLayout2.xml"))
    a = run(replace_part(data, layout, b"<p:sldLayout"))  # not well-formed: the slide is read without it
    # the layout's "a)" is lost, the master (still related through the layout's rels) numbers the body
    assert [b["text"] for b in _blocks(a, 1)][1] == "1. first\n2. second\n3. third"
    assert a["coverage"]["failed"] == []


def test_paragraphs_read_in_one_pass_keep_their_text_breaks_and_own_properties() -> None:
    """A text body's paragraphs are read in one pass over each (no tag matcher per paragraph): a:t text and a:br
    breaks in document order (in fields too), the paragraph's own a:pPr (its first child named pPr, in any
    namespace; a pPr deeper down is not its own) and the body's own list style, looked up once per level."""
    from lxml import etree

    from extract_fn.formats.pptx_format import _paragraphs

    body = etree.fromstring(
        f'<p:txBody xmlns:p="{P_NS}" xmlns:a="{A_NS}" xmlns:o="urn:example:other">'
        '<a:bodyPr/><a:lstStyle><a:lvl1pPr><a:buAutoNum type="arabicParenR"/></a:lvl1pPr></a:lstStyle>'
        "<a:p><a:r><a:t>one</a:t></a:r></a:p>"
        "<a:p><a:r><a:t>two</a:t></a:r><a:br/><a:r><a:t>lines</a:t></a:r><a:endParaRPr/></a:p>"
        "<a:p><a:r><a:t>three</a:t></a:r><a:pPr><a:buNone/></a:pPr>"
        '<a:pPr><a:buAutoNum type="romanLcPeriod"/></a:pPr></a:p>'
        "<a:p><a:r><o:pPr><a:buNone/></o:pPr><a:t>four</a:t></a:r></a:p>"
        '<a:p><o:pPr lvl="1"><a:buAutoNum type="alphaUcPeriod" startAt="3"/></o:pPr>'
        "<a:fld><a:t>five</a:t></a:fld></a:p>"
        "<a:p><a:pPr><a:buChar char='x'/></a:pPr></a:p>"
        "<a:lstStyle/></p:txBody>"
    )
    assert _paragraphs(body) == ["1) one", "2) two\nlines", "three", "1) four", "C. five", ""]


def test_first_is_the_first_child_with_one_of_the_tags() -> None:
    from lxml import etree

    from extract_fn.formats.pptx_format import T_TXBODY, _first

    shape = etree.fromstring(
        f'<p:sp xmlns:p="{P_NS}" xmlns:a="{A_NS}"><!-- c --><p:spPr/><a:txBody n="1"/><p:txBody n="2"/></p:sp>',
        etree.XMLParser(),
    )
    assert _first(shape, T_TXBODY) is next(shape.iterchildren(*T_TXBODY))
    assert _first(shape, T_TXBODY).get("n") == "1"
    assert _first(shape[1], T_TXBODY) is None
