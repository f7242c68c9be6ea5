"""docx, pptx and xlsx open and parse their package one way (``zipsafe.with_package``, ``safe_xml``): each hostile
package gets the same answer in all three, the format's name and main part aside."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable

import pytest

from extract_fn.formats import extractor_for
from extract_fn.formats.base import ExtractRequest
from shared.contract import ErrorCode, ExtractionError
from tests.ole_files import encrypted_ooxml

MAIN = {"docx": "word/document.xml", "pptx": "ppt/presentation.xml", "xlsx": "xl/workbook.xml"}
CT = '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>'
OFFICE_DOCUMENT = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"


def rels(fmt: str) -> str:
    return (
        '<?xml version="1.0"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        f'<Relationship Id="rId1" Type="{OFFICE_DOCUMENT}" Target="{MAIN[fmt]}"/></Relationships>'
    )


def package(parts: dict[str, str], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name, text in parts.items():
            zf.writestr(name, text)
    return buf.getvalue()


def with_main(fmt: str, main: str) -> dict[str, str]:
    return {"[Content_Types].xml": CT, "_rels/.rels": rels(fmt), MAIN[fmt]: main}


def bad_crc(fmt: str) -> bytes:
    raw = bytearray(package(with_main(fmt, "<a>" + "x" * 5000 + "</a>"), zipfile.ZIP_STORED))
    at = raw.index(b"x" * 50)
    raw[at : at + 10] = b"y" * 10
    return bytes(raw)


def later_zip_version(fmt: str) -> bytes:
    """A package whose first central directory entry says it needs zip version 9.5 to extract (zipfile reads 6.3)."""
    raw = bytearray(package(with_main(fmt, "<a/>")))
    at = raw.index(b"PK\x01\x02")
    raw[at + 6 : at + 8] = (95).to_bytes(2, "little")
    return bytes(raw)


CASES: dict[str, tuple[Callable[[str], bytes], ErrorCode]] = {
    "a part that needs a later zip version": (later_zip_version, ErrorCode.CORRUPT),
    "not a zip": (lambda fmt: b"PK\x03\x04 garbage" * 10, ErrorCode.CORRUPT),
    "empty zip": (lambda fmt: package({}), ErrorCode.CORRUPT),
    "encrypted (OLE)": (lambda fmt: encrypted_ooxml(), ErrorCode.CORRUPT),
    "another OLE compound file": (
        lambda fmt: b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 100,
        ErrorCode.FORMAT_MISMATCH,
    ),
    "zip bomb": (lambda fmt: package(with_main(fmt, "<a>" + " " * (3 << 20) + "</a>")), ErrorCode.RESOURCE_LIMIT),
    "truncated zip": (lambda fmt: package(with_main(fmt, "<a/>" * 1000))[:-200], ErrorCode.CORRUPT),
    "bad CRC": (bad_crc, ErrorCode.CORRUPT),
    "two equivalent part names": (
        lambda fmt: package({**with_main(fmt, "<a/>"), MAIN[fmt].upper(): "<a/>"}),
        ErrorCode.CORRUPT,
    ),
    "no main part": (lambda fmt: package({"[Content_Types].xml": CT, "_rels/.rels": rels(fmt)}), ErrorCode.CORRUPT),
    "DTD in the main part": (
        lambda fmt: package(with_main(fmt, '<?xml version="1.0"?><!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>')),
        ErrorCode.CORRUPT,
    ),
    "DTD in the relationships": (
        lambda fmt: package({"_rels/.rels": '<!DOCTYPE r SYSTEM "file:///etc/passwd"><Relationships/>'}),
        ErrorCode.CORRUPT,
    ),
    "malformed main part": (lambda fmt: package(with_main(fmt, "<a><b></a>")), ErrorCode.CORRUPT),
    "malformed relationships": (
        lambda fmt: package({"_rels/.rels": "<Relationships", MAIN[fmt]: "<a/>"}),
        ErrorCode.CORRUPT,
    ),
    "empty main part": (lambda fmt: package(with_main(fmt, "")), ErrorCode.CORRUPT),
    "XML nested past libxml2's limit": (
        lambda fmt: package(with_main(fmt, "<a>" * 300 + "</a>" * 300)),
        ErrorCode.CORRUPT,
    ),
}


def answer(fmt: str, data: bytes) -> tuple[ErrorCode, str]:
    with pytest.raises(ExtractionError) as exc:
        extractor_for(fmt)(data, ExtractRequest(fmt, name=f"t.{fmt}"))
    message = exc.value.message.replace(MAIN[fmt].upper(), "MAIN").replace(MAIN[fmt], "MAIN").replace(fmt, "KIND")
    return exc.value.code, message


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_hostile_package_gets_one_answer_in_every_ooxml_format(case: str) -> None:
    make, code = CASES[case]
    answers = {fmt: answer(fmt, make(fmt)) for fmt in MAIN}
    assert answers["docx"][0] is code
    assert answers["pptx"] == answers["docx"], answers
    assert answers["xlsx"] == answers["docx"], answers


def test_a_later_zip_version_is_named_not_a_parser_failure() -> None:
    code, message = answer("docx", later_zip_version("docx"))
    assert code is ErrorCode.CORRUPT
    assert "zip file version 9.5" in message, message
    assert "save it again" in message, message


def _renamed(data: bytes, rename: dict[str, str]) -> bytes:
    """``data``'s package with some members renamed (the relationships that name them left as they are)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as out:
        for info in src.infolist():
            out.writestr(rename.get(info.filename, info.filename), src.read(info))
    return buf.getvalue()


def test_part_names_are_found_whatever_their_case() -> None:
    """OPC part names compare case-insensitively: a relationship naming ``slides/slide1.xml`` finds
    ``slides/Slide1.xml`` (PowerPoint opens such a deck). The slide was a failed unit, "missing from the package"."""
    import docx
    from pptx import Presentation

    deck = Presentation()
    slide = deck.slides.add_slide(deck.slide_layouts[1])
    slide.shapes.title.text = "Case test"
    buf = io.BytesIO()
    deck.save(buf)
    data = _renamed(buf.getvalue(), {"ppt/slides/slide1.xml": "ppt/slides/Slide1.xml"})
    a = extractor_for("pptx")(data, ExtractRequest(format="pptx"))
    assert [b["text"] for b in a["blocks"]] == ["Case test"]
    assert a["coverage"]["complete"] is True
    document = docx.Document()
    document.add_paragraph("Main part in capitals")
    buf = io.BytesIO()
    document.save(buf)
    data = _renamed(buf.getvalue(), {"word/document.xml": "word/DOCUMENT.xml"})
    a = extractor_for("docx")(data, ExtractRequest(format="docx"))
    assert [b["text"] for b in a["blocks"]] == ["Main part in capitals"]
