"""PPTX text as PowerPoint shows it: the master's and layout's own shapes on every slide, equations, hidden shapes,
slide-number fields, picture fills and backgrounds, text boxes on the notes page."""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable
from typing import Any

import pytest
from pptx import Presentation
from pptx.util import Inches

from extract_fn.formats import pptx_format
from tests.test_format_pptx import run
from tests.test_pptx_shapes import _png

MASTER = "ppt/slideMasters/slideMaster1.xml"
M_NS = "http://schemas.openxmlformats.org/officeDocument/2006/math"
A14_NS = "http://schemas.microsoft.com/office/drawing/2010/main"
MC_NS = "http://schemas.openxmlformats.org/markup-compatibility/2006"
IMAGE_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/image"


def _save(prs: Any) -> bytes:
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


def _patch(data: bytes, edits: dict[str, Callable[[str], str] | bytes]) -> bytes:
    """The package with parts edited (a function of the part's text) or added (bytes)."""
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            body = src.read(info.filename)
            edit = edits.get(info.filename)
            if callable(edit):
                body = edit(body.decode()).encode()
            dst.writestr(info.filename, body)
        for name, edit in edits.items():
            if name not in src.namelist():
                assert isinstance(edit, bytes), name
                dst.writestr(name, edit)
    return out.getvalue()


def _layout_of(data: bytes, slide: int) -> str:
    rels = zipfile.ZipFile(io.BytesIO(data)).read(f"ppt/slides/_rels/slide{slide}.xml.rels").decode()
    found = re.search(r"slideLayouts/(slideLayout\d+\.xml)", rels)
    assert found is not None
    return "ppt/slideLayouts/" + found.group(1)


def _sp(shape_id: int, paragraphs: str, cnv: str = "", sppr: str = "") -> str:
    return (
        f'<p:sp><p:nvSpPr><p:cNvPr id="{shape_id}" name="Shape {shape_id}"{cnv}/><p:cNvSpPr txBox="1"/><p:nvPr/>'
        f'</p:nvSpPr><p:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="914400" cy="457200"/></a:xfrm>{sppr}</p:spPr>'
        f"<p:txBody><a:bodyPr/><a:lstStyle/>{paragraphs}</p:txBody></p:sp>"
    )


def _para(text: str) -> str:
    return f'<a:p><a:r><a:rPr lang="en-US"/><a:t>{text}</a:t></a:r></a:p>'


def _slide_number_para(saved: str) -> str:
    return (
        '<a:p><a:r><a:rPr lang="en-US"/><a:t>Page </a:t></a:r><a:fld id="{B6F15528-21DE-4FAA-801E-634DDDAF4B2B}" '
        f'type="slidenum"><a:rPr lang="en-US"/><a:t>{saved}</a:t></a:fld></a:p>'
    )


def _add_shapes(shapes: str) -> Callable[[str], str]:
    return lambda xml: xml.replace("</p:spTree>", shapes + "</p:spTree>", 1)


def _texts(a: dict[str, Any], page: int) -> list[tuple[str, dict[str, Any]]]:
    return [(b["text"], b.get("attrs") or {}) for b in a["blocks"] if b["locator"]["page_start"] == page]


def _deck(slides: int = 2) -> bytes:
    prs = Presentation()
    for i in range(slides):
        s = prs.slides.add_slide(prs.slide_layouts[1])  # title and content
        s.shapes.title.text = f"Title {i + 1}"
        s.placeholders[1].text = f"Body {i + 1}"
    return _save(prs)


# --- 1. the master's and the layout's own shapes -------------------------------------------------------------


def test_master_and_layout_shapes_show_on_every_slide(monkeypatch: pytest.MonkeyPatch) -> None:
    data = _deck(3)
    layout = _layout_of(data, 1)
    data = _patch(
        data,
        {
            MASTER: _add_shapes(_sp(901, _para("ACME Corp - Confidential")) + _sp(903, _slide_number_para("‹#›"))),
            layout: _add_shapes(_sp(902, _para("DRAFT - internal only"))),
            "ppt/slides/slide3.xml": lambda x: x.replace("<p:sld ", '<p:sld showMasterSp="0" ', 1),
        },
    )
    walks: list[bool] = []
    walk = pptx_format._Deck.walk

    def counting(self: Any, tree: Any, rels: Any, template: bool) -> Any:
        walks.append(template)
        return walk(self, tree, rels, template)

    monkeypatch.setattr(pptx_format._Deck, "walk", counting)
    a = run(data)
    for n in (1, 2):
        assert _texts(a, n) == [
            (f"Title {n}", {}),
            ("ACME Corp - Confidential", {"master": True}),
            (f"Page {n}", {"master": True}),  # a slide-number field in a master's text box: each slide's number
            ("DRAFT - internal only", {"layout": True}),
            (f"Body {n}", {"placeholder": "body"}),
        ]
    # a slide that hides its background graphics (showMasterSp="0") shows neither the layout's nor the master's
    assert _texts(a, 3) == [("Title 3", {}), ("Body 3", {"placeholder": "body"})]
    # the layout's placeholders (the date, footer and number ones included) are not drawn: only its own shapes
    assert not any("Click to edit" in b["text"] for b in a["blocks"])
    assert walks.count(True) == 2  # the master and the layout each read once for the three slides
    assert a["coverage"]["complete"] is True


def test_layout_that_hides_the_master_shapes_shows_its_own() -> None:
    data = _deck(1)
    layout = _layout_of(data, 1)
    data = _patch(
        data,
        {
            MASTER: _add_shapes(_sp(901, _para("master text"))),
            layout: lambda x: _add_shapes(_sp(902, _para("layout text")))(
                x.replace("<p:sldLayout ", '<p:sldLayout showMasterSp="0" ', 1)
            ),
        },
    )
    texts = [t for t, _a in _texts(run(data), 1)]
    assert texts == ["Title 1", "layout text", "Body 1"]


@pytest.mark.usefixtures("ocr_off")
def test_master_picture_is_a_block_on_each_slide_counted_once() -> None:
    data = _deck(3)
    pic = (
        '<p:pic><p:nvPicPr><p:cNvPr id="910" name="Logo" descr="ACME logo"/><p:cNvPicPr/><p:nvPr/></p:nvPicPr>'
        '<p:blipFill><a:blip r:embed="rIdLogo"/><a:stretch><a:fillRect/></a:stretch></p:blipFill>'
        '<p:spPr><a:xfrm><a:off x="0" y="0"/><a:ext cx="914400" cy="914400"/></a:xfrm></p:spPr></p:pic>'
    )
    rels = "ppt/slideMasters/_rels/slideMaster1.xml.rels"
    data = _patch(
        data,
        {
            MASTER: _add_shapes(pic),
            rels: lambda x: x.replace(
                "</Relationships>",
                f'<Relationship Id="rIdLogo" Type="{IMAGE_REL}" Target="../media/logo.png"/></Relationships>',
            ),
            "ppt/media/logo.png": _png(),
        },
    )
    a = run(data)
    for n in (1, 2, 3):
        assert ("", {"image": {"alt": "ACME logo", "name": "Logo"}, "master": True}) in _texts(a, n)
    assert "image_text" in a["coverage"]["lost"]
    assert any(w.startswith("1 picture(s) not read") for w in a["warnings"])  # one picture, however often shown


# --- 2. equations -----------------------------------------------------------------------------------------------


def test_equation_is_linear_text_in_its_paragraph() -> None:
    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[6])
    math = (
        f'<a14:m xmlns:a14="{A14_NS}"><m:oMathPara xmlns:m="{M_NS}"><m:oMath><m:r><m:t>E=m</m:t></m:r><m:sSup><m:e>'
        "<m:r><m:t>c</m:t></m:r></m:e><m:sup><m:r><m:t>2</m:t></m:r></m:sup></m:sSup></m:oMath></m:oMathPara></a14:m>"
    )
    choice = _sp(11, f'<a:p><a:r><a:rPr lang="en-US"/><a:t>Energy: </a:t></a:r>{math}</a:p>')
    fallback = _sp(11, _para(" "), sppr='<a:blipFill><a:blip r:embed="rId99"/></a:blipFill>')
    alt = (
        f'<mc:AlternateContent xmlns:mc="{MC_NS}"><mc:Choice xmlns:a14="{A14_NS}" Requires="a14">{choice}'
        f"</mc:Choice><mc:Fallback>{fallback}</mc:Fallback></mc:AlternateContent>"
    )
    a = run(_patch(_save(prs), {"ppt/slides/slide1.xml": _add_shapes(alt)}))
    assert _texts(a, 1) == [("Energy: E=mc^2", {})]
    assert a["coverage"]["complete"] is True  # the fallback picture of the equation is not a picture to read


# --- 3. hidden shapes -------------------------------------------------------------------------------------------


def test_hidden_shapes_and_groups_are_left_out() -> None:
    prs = Presentation()
    s = prs.slides.add_slide(prs.slide_layouts[6])
    s.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1)).text_frame.text = "Visible text"
    group = (
        '<p:grpSp><p:nvGrpSpPr><p:cNvPr id="40" name="Group 40" hidden="1"/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr>'
        f"<p:grpSpPr/>{_sp(41, _para('in a hidden group'))}</p:grpSp>"
    )
    hidden_pic = (
        '<p:pic><p:nvPicPr><p:cNvPr id="42" name="Old chart" hidden="1"/><p:cNvPicPr/><p:nvPr/></p:nvPicPr>'
        '<p:blipFill><a:blip r:embed="rId77"/></p:blipFill><p:spPr/></p:pic>'
    )
    shapes = _sp(30, _para("SECRET old pricing"), cnv=' hidden="1"') + group + hidden_pic + _sp(31, _para("After"))
    a = run(_patch(_save(prs), {"ppt/slides/slide1.xml": _add_shapes(shapes)}))
    assert [t for t, _a in _texts(a, 1)] == ["Visible text", "After"]
    assert a["coverage"]["lost"] == []  # a hidden picture is not seen: nothing of it is lost


# --- 4. slide-number fields -------------------------------------------------------------------------------------


def test_slide_number_fields_show_the_slide_position_from_first_slide_number() -> None:
    prs = Presentation()
    for i in range(3):
        s = prs.slides.add_slide(prs.slide_layouts[6])
        s.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1)).text_frame.text = f"file {i + 1}"
    data = _save(prs)
    number = (
        '<p:sp><p:nvSpPr><p:cNvPr id="50" name="Slide Number"/><p:cNvSpPr/><p:nvPr><p:ph type="sldNum" idx="12"/>'
        "</p:nvPr></p:nvSpPr><p:spPr/><p:txBody><a:bodyPr/><a:lstStyle/>{}</p:txBody></p:sp>"
    )

    def reorder(xml: str) -> str:  # the third slide first: its saved "3" is stale
        ids = re.findall(r"<p:sldId [^>]*/>", xml)
        xml = xml.replace("".join(ids), ids[2] + ids[0] + ids[1])
        return xml.replace("<p:presentation ", '<p:presentation firstSlideNum="10" ', 1)

    edits: dict[str, Callable[[str], str] | bytes] = {
        f"ppt/slides/slide{n}.xml": _add_shapes(number.format(_slide_number_para(saved)))
        for n, saved in ((1, "‹#›"), (2, "2"), (3, "3"))
    }
    edits["ppt/presentation.xml"] = reorder
    a = run(_patch(data, edits))
    assert [[t for t, _a in _texts(a, n)] for n in (1, 2, 3)] == [
        ["file 3", "Page 10"],
        ["file 1", "Page 11"],
        ["file 2", "Page 12"],
    ]


def test_date_fields_keep_their_saved_text() -> None:
    prs = Presentation()
    prs.slides.add_slide(prs.slide_layouts[6])
    date = (
        '<a:p><a:fld id="{1D8BD707-D9CF-40AE-B4C6-C98DA3205C09}" type="datetime1"><a:rPr lang="en-US"/>'
        "<a:t>3/14/2024</a:t></a:fld></a:p>"
    )
    a = run(_patch(_save(prs), {"ppt/slides/slide1.xml": _add_shapes(_sp(60, date))}))
    assert [t for t, _a in _texts(a, 1)] == ["3/14/2024"]


# --- 5. picture fills and backgrounds ---------------------------------------------------------------------------


def _picture_deck() -> bytes:
    prs = Presentation()
    for _ in range(3):
        s = prs.slides.add_slide(prs.slide_layouts[6])
        s.shapes.add_picture(io.BytesIO(_png()), Inches(1), Inches(1))  # for the image part and its relationship
    data = _save(prs)
    z = zipfile.ZipFile(io.BytesIO(data))

    def rid(n: int) -> str:
        found = re.search(
            r'Id="(rId\d+)"[^>]*relationships/image"', z.read(f"ppt/slides/_rels/slide{n}.xml.rels").decode()
        )
        assert found is not None
        return found.group(1)

    def fill(xml: str) -> str:  # slide 1: a rounded rectangle filled with the picture, with text on it
        xml = re.sub(r"<p:pic>.*</p:pic>", "", xml, flags=re.S)
        sppr = (
            f'<a:prstGeom prst="roundRect"><a:avLst/></a:prstGeom><a:blipFill><a:blip r:embed="{rid(1)}"/></a:blipFill>'
        )
        return _add_shapes(_sp(5, _para("Caption on the picture"), sppr=sppr))(xml)

    def background(xml: str) -> str:  # slide 2: the picture as the slide's background
        xml = re.sub(r"<p:pic>.*</p:pic>", "", xml, flags=re.S)
        bg = f'<p:bg><p:bgPr><a:blipFill><a:blip r:embed="{rid(2)}"/></a:blipFill><a:effectLst/></p:bgPr></p:bg>'
        return xml.replace("<p:cSld>", "<p:cSld>" + bg, 1)

    def plain(xml: str) -> str:  # slide 3: nothing but what its layout and master show
        return re.sub(r"<p:pic>.*</p:pic>", "", xml, flags=re.S)

    return _patch(
        data, {"ppt/slides/slide1.xml": fill, "ppt/slides/slide2.xml": background, "ppt/slides/slide3.xml": plain}
    )


@pytest.mark.usefixtures("ocr_off")
def test_picture_fill_and_background_are_pictures() -> None:
    a = run(_picture_deck())
    assert _texts(a, 1) == [
        ("", {"image": {"alt": "", "name": "Shape 5"}}),
        ("Caption on the picture", {}),
    ]
    assert _texts(a, 2) == [("", {"image": {"alt": ""}, "background": True})]
    assert _texts(a, 3) == []
    assert "image_text" in a["coverage"]["lost"]
    assert a["coverage"]["complete"] is False
    assert any(w.startswith("2 picture(s) not read") for w in a["warnings"])


def test_picture_fill_is_read_by_ocr(monkeypatch: pytest.MonkeyPatch) -> None:
    """The picture of a fill goes through the same OCR as a ``p:pic`` (its part read through its relationship)."""
    from extract_fn.ocr.pictures import PictureReader

    seen: list[str | None] = []

    def picture(self: Any, member: str | None) -> tuple[list[Any], bool]:
        seen.append(member)
        return [], True

    monkeypatch.setattr(PictureReader, "picture", picture)
    a = run(_picture_deck())
    assert len(seen) == 2
    assert all(m and m.startswith("ppt/media/") for m in seen)
    assert a["coverage"]["lost"] == []


@pytest.mark.usefixtures("ocr_off")
def test_master_background_picture_shows_on_slides_without_their_own() -> None:
    data = _deck(2)
    rels = "ppt/slideMasters/_rels/slideMaster1.xml.rels"
    bg = '<p:bg><p:bgPr><a:blipFill><a:blip r:embed="rIdBg"/></a:blipFill><a:effectLst/></p:bgPr></p:bg>'
    solid = '<p:bg><p:bgPr><a:solidFill><a:srgbClr val="FFFFFF"/></a:solidFill><a:effectLst/></p:bgPr></p:bg>'
    data = _patch(
        data,
        {
            MASTER: lambda x: re.sub(r"<p:bg>.*?</p:bg>", "", x, flags=re.S).replace("<p:cSld>", "<p:cSld>" + bg, 1),
            rels: lambda x: x.replace(
                "</Relationships>",
                f'<Relationship Id="rIdBg" Type="{IMAGE_REL}" Target="../media/bg.png"/></Relationships>',
            ),
            "ppt/media/bg.png": _png(),
            "ppt/slides/slide2.xml": lambda x: x.replace("<p:cSld>", "<p:cSld>" + solid, 1),  # its own: no picture
        },
    )
    a = run(data)
    assert _texts(a, 1)[1] == ("", {"image": {"alt": ""}, "background": True, "master": True})
    assert not any("background" in attrs for _t, attrs in _texts(a, 2))
    assert "image_text" in a["coverage"]["lost"]


# --- 7. the notes page's text boxes -----------------------------------------------------------------------------


def test_notes_page_text_boxes_are_notes_blocks() -> None:
    prs = Presentation()
    s = prs.slides.add_slide(prs.slide_layouts[6])
    s.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1)).text_frame.text = "Slide text"
    s.notes_slide.notes_text_frame.text = "Say hello"
    data = _save(prs)
    notes = next(n for n in zipfile.ZipFile(io.BytesIO(data)).namelist() if n.startswith("ppt/notesSlides/notesSlide"))
    box = _sp(40, _para("Presenter: remember the demo link"))
    hidden = _sp(41, _para("not shown"), cnv=' hidden="1"')
    a = run(_patch(data, {notes: _add_shapes(box + hidden)}))
    assert _texts(a, 1) == [
        ("Slide text", {}),
        ("Say hello", {"notes": True}),
        ("Presenter: remember the demo link", {"notes": True}),
    ]


def test_slide_comments_legacy_and_modern_are_read_with_their_authors() -> None:
    """Comments show in PowerPoint's pane (and docx reads its own): they were not read at all."""
    prs = Presentation()
    for title in ("Slide one", "Slide two"):
        prs.slides.add_slide(prs.slide_layouts[5]).shapes.title.text = title
    p188 = "http://schemas.microsoft.com/office/powerpoint/2018/8/main"
    p_ns = "http://schemas.openxmlformats.org/presentationml/2006/main"
    a_ns = "http://schemas.openxmlformats.org/drawingml/2006/main"
    legacy_rel = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/comments"
    modern_rel = "http://schemas.microsoft.com/office/2018/10/relationships/comments"

    def rel(kind: str, target: str) -> Callable[[str], str]:
        return lambda xml: xml.replace(
            "</Relationships>", f'<Relationship Id="rId90" Type="{kind}" Target="{target}"/></Relationships>'
        )

    data = _patch(
        _save(prs),
        {
            "ppt/slides/_rels/slide1.xml.rels": rel(legacy_rel, "../comments/comment1.xml"),
            "ppt/slides/_rels/slide2.xml.rels": rel(modern_rel, "../comments/modernComment_1.xml"),
            "ppt/comments/comment1.xml": (
                f'<p:cmLst xmlns:p="{p_ns}"><p:cm authorId="0" idx="1"><p:pos x="0" y="0"/>'
                "<p:text>Check the revenue number</p:text></p:cm></p:cmLst>"
            ).encode(),
            "ppt/commentAuthors.xml": (
                f'<p:cmAuthorLst xmlns:p="{p_ns}"><p:cmAuthor id="0" name="Ann" initials="A" lastIdx="1" clrIdx="0"/>'
                "</p:cmAuthorLst>"
            ).encode(),
            "ppt/comments/modernComment_1.xml": (
                f'<p188:cmLst xmlns:p188="{p188}" xmlns:a="{a_ns}"><p188:cm id="{{1}}" authorId="{{B}}">'
                f'<p188:replyLst><p188:reply id="{{2}}" authorId="{{A}}"><p188:txBody><a:bodyPr/>{_para("Done")}'
                f"</p188:txBody></p188:reply></p188:replyLst><p188:txBody><a:bodyPr/>{_para('Use the new logo')}"
                "</p188:txBody></p188:cm></p188:cmLst>"
            ).encode(),
            "ppt/authors.xml": (
                f'<p188:authorLst xmlns:p188="{p188}"><p188:author id="{{A}}" name="Ann"/>'
                '<p188:author id="{B}" name="Bob"/></p188:authorLst>'
            ).encode(),
        },
    )
    a = run(data)
    comments = [
        (b["locator"]["page_start"], b["text"], b["attrs"].get("author"))
        for b in a["blocks"]
        if b.get("attrs", {}).get("part") == "comment"
    ]
    assert comments == [(1, "Check the revenue number", "Ann"), (2, "Use the new logo", "Bob"), (2, "Done", "Ann")]


def test_a_comments_part_shared_by_every_slide_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """400 slides pointing at one part of 100,000 comments held a worker past its timeout: it was parsed per slide."""
    prs = Presentation()
    for k in range(5):
        prs.slides.add_slide(prs.slide_layouts[5]).shapes.title.text = f"Slide {k}"
    p_ns = "http://schemas.openxmlformats.org/presentationml/2006/main"
    kind = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/comments"

    def rel(xml: str) -> str:
        target = "../comments/comment1.xml"
        return xml.replace(
            "</Relationships>", f'<Relationship Id="rId90" Type="{kind}" Target="{target}"/></Relationships>'
        )

    edits: dict[str, Callable[[str], str] | bytes] = {f"ppt/slides/_rels/slide{k}.xml.rels": rel for k in range(1, 6)}
    edits["ppt/comments/comment1.xml"] = (
        f'<p:cmLst xmlns:p="{p_ns}"><p:cm><p:text>Shared</p:text></p:cm></p:cmLst>'.encode()
    )
    data = _patch(_save(prs), edits)
    parsed: list[str] = []
    real = pptx_format.parse_part
    monkeypatch.setattr(pptx_format, "parse_part", lambda zf, name, kind: parsed.append(name) or real(zf, name, kind))
    a = run(data)
    assert [b["text"] for b in a["blocks"] if b.get("attrs", {}).get("part") == "comment"] == ["Shared"] * 5
    assert parsed.count("ppt/comments/comment1.xml") == 1
