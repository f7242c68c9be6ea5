"""DOCX format module: documents built in the test (python-docx and hand-written parts), hostile packages, corpus."""

from __future__ import annotations

import csv
import io
import re
import zipfile
from pathlib import Path
from typing import Any

import docx
import orjson
import pytest
from lxml import etree

from extract_fn.formats import docx_format
from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.ooxml_text import child, first_children
from shared.artifact import validate_artifact
from shared.contract import ErrorCode, ExtractionError
from tests.ole_files import encrypted_ooxml

REQ = ExtractRequest(format="docx")
W_NS = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R_NS = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
NS = (
    f'xmlns:w="{W_NS}" xmlns:r="{R_NS}" '
    'xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006" '
    'xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape" '
    'xmlns:v="urn:schemas-microsoft-com:vml" '
    'xmlns:m="http://schemas.openxmlformats.org/officeDocument/2006/math"'
)
REL_BASE = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"


def run(data: bytes, request: ExtractRequest = REQ) -> dict[str, Any]:
    artifact = docx_format.extract(data, request)
    validate_artifact(orjson.dumps(artifact), format="docx", original_size=len(data))
    return artifact


def make_docx(
    body: str, *, parts: dict[str, str] | None = None, prolog: str = "", document: str | None = None
) -> bytes:
    """A minimal package: word/document.xml with ``body``; ``parts`` maps word/<name> to XML, related by type."""
    parts = parts or {}
    rels = [
        f'<Relationship Id="rId{i}" Type="{REL_BASE}{name.split(".")[0].rstrip("0123456789")}" Target="{name}"/>'
        for i, name in enumerate(parts, start=10)
    ]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(
            "[Content_Types].xml",
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="xml" ContentType="application/xml"/></Types>',
        )
        zf.writestr(
            "_rels/.rels",
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            f'<Relationship Id="rId1" Type="{REL_BASE}officeDocument" Target="word/document.xml"/></Relationships>',
        )
        zf.writestr(
            "word/document.xml",
            document
            if document is not None
            else f'<?xml version="1.0" encoding="UTF-8"?>{prolog}<w:document {NS}><w:body>{body}</w:body></w:document>',
        )
        zf.writestr(
            "word/_rels/document.xml.rels",
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            + "".join(rels)
            + "</Relationships>",
        )
        for name, xml in parts.items():
            zf.writestr(f"word/{name}", xml)
    return buf.getvalue()


def p(text: str, ppr: str = "") -> str:
    return f'<w:p>{f"<w:pPr>{ppr}</w:pPr>" if ppr else ""}<w:r><w:t xml:space="preserve">{text}</w:t></w:r></w:p>'


# ---------------------------------------------------------------------------------------------------------------


def test_structure_from_python_docx() -> None:
    d = docx.Document()
    d.add_heading("The Title", level=0)
    d.add_heading("Chapter One", level=1)
    d.add_paragraph("Opening paragraph.")
    d.add_paragraph("first bullet", style="List Bullet")
    d.add_paragraph("nested bullet", style="List Bullet 2")
    d.add_paragraph("first step", style="List Number")
    d.add_heading("Section 1.1", level=2)
    d.add_paragraph("Deep text.")
    t = d.add_table(rows=3, cols=3)
    for r in range(3):
        for c in range(3):
            t.cell(r, c).text = f"c{r}{c}"
    t.cell(1, 0).merge(t.cell(1, 1))  # horizontal merge: gridSpan
    t.cell(1, 2).merge(t.cell(2, 2))  # vertical merge: vMerge
    d.add_heading("Chapter Two", level=1)
    d.add_paragraph("Closing.")
    d.sections[0].header.paragraphs[0].text = "Running header"
    d.sections[0].footer.paragraphs[0].text = "Page footer"
    d.add_comment(d.paragraphs[2].runs, text="A reviewer's remark", author="Rev")
    buf = io.BytesIO()
    d.save(buf)
    a = run(buf.getvalue())
    blocks = a["blocks"]
    simple = [(b["type"], b.get("depth"), b["text"]) for b in blocks]
    assert simple[:7] == [
        ("heading", 0, "The Title"),
        ("heading", 1, "Chapter One"),
        ("paragraph", None, "Opening paragraph."),
        ("list", 0, "• first bullet"),  # the label Word shows leads the text (the Symbol bullet as U+2022)
        ("list", 0, "• nested bullet"),  # "List Bullet 2" is its own list at level 0 in Word's default template
        ("list", 0, "1. first step"),
        ("heading", 2, "Section 1.1"),
    ]
    by_text = {b["text"]: b for b in blocks}
    assert by_text["• first bullet"]["attrs"]["list"]["format"] == "bullet"
    assert by_text["• first bullet"]["attrs"]["list"]["label"] == "•"
    step = dict(by_text["1. first step"]["attrs"]["list"])
    assert step.pop("num_id")
    assert step == {"level": 0, "format": "decimal", "label": "1."}
    assert by_text["• first bullet"]["attrs"]["list"]["num_id"] != by_text["1. first step"]["attrs"]["list"]["num_id"]
    deep = by_text["Deep text."]
    assert deep["section_path"] == ["The Title", "Chapter One", "Section 1.1"]
    assert deep["parent"] == by_text["Section 1.1"]["id"]
    assert by_text["Chapter One"]["parent"] == by_text["The Title"]["id"]
    assert by_text["Chapter Two"]["section_path"] == ["The Title", "Chapter Two"]
    table = next(b for b in blocks if "table" in b.get("attrs", {}))
    assert table["attrs"]["table"] == {
        "columns": ["c00", "c01", "c02"],
        "rows": [["c10\nc11", None, "c12\nc22"], ["c20", "c21", None]],
    }
    assert table["section_path"] == ["The Title", "Chapter One", "Section 1.1"]
    # headers, footers and comments come after the body
    tail = [(b["text"], b["attrs"]["part"]) for b in blocks if "part" in b.get("attrs", {})]
    assert tail == [("Running header", "header"), ("Page footer", "footer"), ("A reviewer's remark", "comment")]
    assert blocks.index(by_text["Closing."]) < blocks.index(by_text["Running header"])
    assert by_text["A reviewer's remark"]["attrs"]["author"] == "Rev"
    assert by_text["Running header"]["section_path"] == []
    cov = a["coverage"]
    assert cov["unit"] == "paragraphs"
    assert cov["complete"] is True
    assert cov["total"] == cov["extracted"] >= 15


def test_textboxes_notes_tracked_changes_fields_and_outline_level() -> None:
    textbox = (
        '<w:p><w:r><w:t>Anchor text.</w:t></w:r><w:r><mc:AlternateContent><mc:Choice Requires="wps">'
        "<w:drawing><wps:txbx><w:txbxContent>" + p("Inside the box") + "</w:txbxContent></wps:txbx></w:drawing>"
        "</mc:Choice><mc:Fallback><w:pict><v:textbox><w:txbxContent>" + p("Inside the box") + "</w:txbxContent>"
        "</v:textbox></w:pict></mc:Fallback></mc:AlternateContent></w:r></w:p>"
    )
    tracked = (
        '<w:p><w:r><w:t xml:space="preserve">Kept </w:t></w:r><w:del><w:r><w:delText>removed</w:delText></w:r>'
        '</w:del><w:ins><w:r><w:t>added</w:t></w:r></w:ins><w:r><w:fldChar w:fldCharType="begin"/></w:r>'
        '<w:r><w:instrText> PAGE </w:instrText></w:r><w:r><w:fldChar w:fldCharType="separate"/></w:r>'
        '<w:r><w:t>7</w:t></w:r><w:r><w:fldChar w:fldCharType="end"/></w:r>'
        '<w:r><w:footnoteReference w:id="1"/></w:r></w:p>'
    )
    nested = p("level two item", '<w:numPr><w:ilvl w:val="2"/><w:numId w:val="5"/></w:numPr>')
    body = p("Outline heading", '<w:outlineLvl w:val="1"/>') + textbox + tracked + nested
    math = "<w:p><m:oMath><m:r><m:t>x=1</m:t></m:r></m:oMath></w:p>"
    footnotes = (
        f'<w:footnotes {NS}><w:footnote w:type="separator" w:id="-1"><w:p><w:r><w:separator/></w:r></w:p>'
        f'</w:footnote><w:footnote w:id="1">{p("The footnote text.")}</w:footnote></w:footnotes>'
    )
    endnotes = f'<w:endnotes {NS}><w:endnote w:id="1">{p("An endnote.")}</w:endnote></w:endnotes>'
    a = run(make_docx(body + math, parts={"footnotes.xml": footnotes, "endnotes.xml": endnotes}))
    texts = [(b["type"], b["text"], b.get("attrs", {})) for b in a["blocks"]]
    assert texts[0][:2] == ("heading", "Outline heading")
    assert a["blocks"][0]["depth"] == 2
    assert texts[1][1] == "Anchor text."
    assert texts[2][1:] == ("Inside the box", {"textbox": True})
    assert texts[3][1] == "Kept added7¹"  # the footnote reference as Word prints it
    assert texts[4][:2] == ("list", "level two item")
    assert a["blocks"][4]["depth"] == 2
    assert texts[4][2]["list"] == {"num_id": "5", "level": 2, "format": "unknown"}
    assert texts[5][1] == "x=1"
    assert [t[1] for t in texts].count("Inside the box") == 1  # the VML fallback is not read twice
    # a cited note leads with the mark Word prints (footnotes 1, 2, ...; an uncited endnote has none)
    assert texts[6][1:] == ("1 The footnote text.", {"part": "footnote", "note_id": "1", "mark": "1"})
    assert texts[7][1:] == ("An endnote.", {"part": "endnote", "note_id": "1"})
    assert a["blocks"][2]["section_path"] == ["Outline heading"]


def test_properties_read_in_one_pass_take_the_first_or_last_as_before() -> None:
    """A paragraph's and a row's properties are read in one pass over their children: the last pStyle counts, the
    first outlineLvl and numPr (and numId, ilvl in it), in any namespace; a row's gridBefore/gridAfter, a cell's
    gridSpan (the last of each)."""
    other = 'xmlns:o="urn:example:other"'
    body = (
        p("Styled twice", '<w:pStyle w:val="Heading1"/><w:pStyle w:val="Heading3"/>')
        + p("Outlined twice", '<w:outlineLvl w:val="1"/><w:outlineLvl w:val="4"/>')
        + p(
            "Listed",
            f'<o:numPr {other}><o:numId w:val="7"/><o:ilvl w:val="1"/><o:ilvl w:val="3"/></o:numPr>'
            '<w:numPr><w:numId w:val="8"/></w:numPr>',
        )
        + '<w:tbl><w:tr><w:trPr><w:gridBefore w:val="1"/><w:gridAfter w:val="2"/></w:trPr>'
        '<w:tc><w:tcPr><w:gridSpan w:val="3"/><w:gridSpan w:val="2"/></w:tcPr>' + p("wide") + "</w:tc></w:tr>"
        "<w:tr><w:tc>" + p("a") + "</w:tc></w:tr></w:tbl>"
    )
    blocks = run(make_docx(body))["blocks"]
    assert [(b["type"], b.get("depth"), b["text"]) for b in blocks[:3]] == [
        ("heading", 3, "Styled twice"),
        ("heading", 2, "Outlined twice"),
        ("list", 1, "Listed"),
    ]
    assert blocks[2]["attrs"]["list"]["num_id"] == "7"
    assert blocks[3]["attrs"]["table"] == {"columns": [None, "wide", None, None, None], "rows": [["a"] + [None] * 4]}


def test_first_children_is_child_for_several_names() -> None:
    root = etree.fromstring(
        '<r xmlns:a="urn:a"><!-- c --><a:x n="1"/><y n="2"/><a:x n="3"/><z/><y n="4"/></r>', etree.XMLParser()
    )
    found = first_children(root, frozenset({"x", "y", "w"}))
    assert {name: el.get("n") for name, el in found.items()} == {"x": "1", "y": "2"}
    assert all(found[name] is child(root, name) for name in ("x", "y"))
    assert first_children(root[1], frozenset({"x"})) == {}


def test_strict_namespace_and_empty_document() -> None:
    strict = (
        '<?xml version="1.0"?><w:document xmlns:w="http://purl.oclc.org/ooxml/wordprocessingml/main">'
        "<w:body><w:p><w:r><w:t>Strict text</w:t></w:r></w:p></w:body></w:document>"
    )
    a = run(make_docx("", document=strict))
    assert [b["text"] for b in a["blocks"]] == ["Strict text"]
    empty = run(make_docx("<w:p/>"))
    assert empty["blocks"] == []
    assert empty["coverage"]["total"] == empty["coverage"]["extracted"] == 1


# -- hostile ----------------------------------------------------------------------------------------------------


def test_billion_laughs_is_refused() -> None:
    lol = (
        '<!DOCTYPE w:document [<!ENTITY lol "lol">'
        + "".join(
            f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * 10 if i > 1 else "&lol;" * 10}">' for i in range(1, 10)
        )
        + "]>"
    )
    data = make_docx(p("&lol9;"), prolog=lol)
    with pytest.raises(ExtractionError) as err:
        docx_format.extract(data, REQ)
    # A DTD is refused before anything expands: corrupt, as in pptx and xlsx (it was resource_limit before issue 12)
    assert err.value.code == ErrorCode.CORRUPT
    assert "DTD" in err.value.message


def test_external_entity_is_never_resolved(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT")
    prolog = f'<!DOCTYPE w:document [<!ENTITY ext SYSTEM "file://{secret}">]>'
    with pytest.raises(ExtractionError) as err:  # a DTD is refused outright (tests/security/test_xml_dtd.py)
        docx_format.extract(make_docx(p("before &ext; after"), prolog=prolog), REQ)
    assert err.value.code == ErrorCode.CORRUPT
    assert "DTD" in err.value.message
    assert "TOP-SECRET" not in err.value.message
    assert str(secret) not in err.value.message


def test_deep_nesting_is_corrupt_not_recursion() -> None:
    depth = 10_000
    body = "<w:sdt><w:sdtContent>" * depth + p("deep") + "</w:sdtContent></w:sdt>" * depth
    with pytest.raises(ExtractionError) as err:
        docx_format.extract(make_docx(body), REQ)
    assert err.value.code == ErrorCode.CORRUPT


def test_moderate_nesting_is_read_iteratively() -> None:
    depth = 60  # within the XML parser's depth limit, past nothing: content controls in content controls
    body = "<w:sdt><w:sdtContent>" * depth + p("still read") + "</w:sdtContent></w:sdt>" * depth
    a = run(make_docx(body))
    assert [b["text"] for b in a["blocks"]] == ["still read"]


def test_zip_bomb_is_resource_limit() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("[Content_Types].xml", "<Types/>")
        zf.writestr("word/document.xml", b"<w:document>" + b" " * (20 * 1024 * 1024) + b"</w:document>")
    data = buf.getvalue()
    assert len(data) < 200_000
    with pytest.raises(ExtractionError) as err:
        docx_format.extract(data, REQ)
    assert err.value.code == ErrorCode.RESOURCE_LIMIT


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"", "zip"),
        (b"PK\x05\x06" + b"\x00" * 18, "empty"),
        (encrypted_ooxml(), "encrypted"),
        (b"just text", "zip"),
    ],
)
def test_not_a_package_is_corrupt(data: bytes, needle: str) -> None:
    with pytest.raises(ExtractionError) as err:
        docx_format.extract(data, REQ)
    assert err.value.code == ErrorCode.CORRUPT
    assert needle in err.value.message


def test_package_without_document_and_broken_xml_are_corrupt() -> None:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr("hello", "world")
    with pytest.raises(ExtractionError) as err:
        docx_format.extract(buf.getvalue(), REQ)
    assert err.value.code == ErrorCode.CORRUPT
    assert "word/document.xml" in err.value.message
    with pytest.raises(ExtractionError) as err2:
        docx_format.extract(make_docx("", document="<w:document><w:body><w:p>"), REQ)
    assert err2.value.code == ErrorCode.CORRUPT


def test_output_budget_cuts_and_reports() -> None:
    body = "".join(p(f"Paragraph number {i} " + "words " * 40) for i in range(400))
    a = run(make_docx(body), ExtractRequest(format="docx", max_output_bytes=20_000))
    cov = a["coverage"]
    assert 0 < cov["extracted"] < cov["total"] == 400
    assert cov["failed"][0]["unit"] == f"paragraphs {cov['extracted'] + 1}-400"
    assert a["warnings"]


# -- corpus -----------------------------------------------------------------------------------------------------

CORPUS_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


def _rows(fmt: str) -> list[dict[str, str]]:
    if not (CORPUS_DIR / "MANIFEST.tsv").exists():
        return []
    with (CORPUS_DIR / "MANIFEST.tsv").open(newline="", encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh, delimiter="\t") if r["format"] == fmt]


DOCX_ROWS = _rows("docx")
_TEXT_RE = re.compile(rb"<(?:\w+:)?t(?:\s[^>]*)?>\s*[^<\s]")


def _has_text(data: bytes) -> bool:
    """An independent look: does any text run of the main part or a header/footer/note/comment hold text?"""
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return any(
            _TEXT_RE.search(zf.read(n))
            for n in zf.namelist()
            if re.match(r"word/(document|header\d*|footer\d*|footnotes|endnotes|comments)\.xml$", n)
        )


def test_corpus_is_present(corpus: Path) -> None:
    assert len(DOCX_ROWS) == len(_rows("docx")) >= 30
    assert (corpus / "MANIFEST.tsv").exists()


@pytest.mark.parametrize("row", DOCX_ROWS, ids=[r["path"] for r in DOCX_ROWS])
def test_corpus_file(row: dict[str, str], corpus: Path) -> None:
    data = (corpus / row["path"]).read_bytes()
    if row["expect"] != "ok":
        with pytest.raises(ExtractionError) as err:
            docx_format.extract(data, REQ)
        assert err.value.code == ErrorCode.CORRUPT
        if row["expect"] == "encrypted":
            assert "encrypted" in err.value.message
        return
    if "XXE" in row["note"]:  # its document.xml declares a DTD: refused, never fetched (the note: "a clean
        with pytest.raises(ExtractionError) as err:  # rejection is acceptable"; tests/security/test_xml_dtd.py)
            docx_format.extract(data, REQ)
        assert err.value.code == ErrorCode.CORRUPT
        assert "declares a DTD" in err.value.message
        return
    a = run(data)
    text = "".join(b["text"] for b in a["blocks"])
    if _has_text(data):
        assert text.strip()
    assert_complete_unless_pictures(a, _has_media(data))


def _has_media(data: bytes) -> bool:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return any(n.startswith("word/media/") for n in zf.namelist())


def assert_complete_unless_pictures(a: dict[str, Any], has_media: bool) -> None:
    """Complete, or (for a package with pictures) incomplete only because the pictures' pixels were not read."""
    cov = a["coverage"]
    assert cov["failed"] == []
    if cov["lost"]:
        assert has_media
        assert cov["lost"] == ["image_text"]
        assert any("picture(s) not read" in w for w in a["warnings"])
        assert cov["complete"] is False
    else:
        assert cov["complete"] is True


def test_corpus_details(corpus: Path) -> None:
    tables = run((corpus / "docx/python-docx-tbl-cell-access.docx").read_bytes())
    merged = [b["attrs"]["table"] for b in tables["blocks"] if "table" in b.get("attrs", {})]
    assert merged[1]["rows"][0] == ["4", None, "6"]  # a gridSpan continuation is null, its text not repeated
    boxes = run((corpus / "docx/mammoth-text-box.docx").read_bytes())
    assert [b["text"] for b in boxes["blocks"] if b.get("attrs", {}).get("textbox")] == ["Datum plane"]
    notes = run((corpus / "docx/mammoth-footnotes.docx").read_bytes())
    assert any(b.get("attrs", {}).get("part") == "footnote" for b in notes["blocks"])
    numbered = run((corpus / "docx/docling-headers-numbered.docx").read_bytes())
    assert sum(1 for b in numbered["blocks"] if b["type"] == "heading") >= 3
