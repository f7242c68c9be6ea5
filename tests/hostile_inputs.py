"""Generators of hostile inputs for the reference extractor (tests/test_extract_hostile.py).

Every input is made at test time, so nothing big lives in the repository: deep nesting in each syntax, huge single
lines, bodies of NUL bytes, zip bombs (an honest one whose part really inflates to 2 GiB, and one whose central
directory lies about the size), XML entity-expansion bombs inside OOXML packages, and files that keep a parser busy
far past a small time limit.

The 2 GiB zip bomb is written without ever holding (or even compressing) 2 GiB: a deflate stream of one chunk is
ended with a full flush, which resets the compressor's history and aligns it to a byte, so compressing the same
chunk again gives the same bytes, and the chunk's compressed form is simply repeated. Its CRC-32 is computed over the
real inflated bytes, so the member is a valid one a careless reader would inflate in full.

``start_service`` runs the reference extractor as its own process (``python -m extract_fn serve``) on a free
loopback port, for the tests that talk to it over a real socket.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import os
import random
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import requests

# ---------------------------------------------------------------------------------------------------------------
# OOXML skeletons

_CT_NS: Final = "http://schemas.openxmlformats.org/package/2006/content-types"
_REL_NS: Final = "http://schemas.openxmlformats.org/package/2006/relationships"
_OFFICE_DOC: Final = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/officeDocument"
_W_NS: Final = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
_S_NS: Final = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
_P_NS: Final = "http://schemas.openxmlformats.org/presentationml/2006/main"
_A_NS: Final = "http://schemas.openxmlformats.org/drawingml/2006/main"
_R_NS: Final = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_REL_WORKSHEET: Final = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/worksheet"
_REL_SHARED_STRINGS: Final = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/sharedStrings"
_REL_SLIDE: Final = "http://schemas.openxmlformats.org/officeDocument/2006/relationships/slide"

XML_DECL: Final = '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'

DOCX_MAIN: Final = "word/document.xml"
XLSX_SHEET: Final = "xl/worksheets/sheet1.xml"
XLSX_STRINGS: Final = "xl/sharedStrings.xml"
PPTX_SLIDE: Final = "ppt/slides/slide1.xml"

_CONTENT_TYPE: Final = {
    DOCX_MAIN: "application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml",
    "xl/workbook.xml": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml",
    XLSX_SHEET: "application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml",
    XLSX_STRINGS: "application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings+xml",
    "ppt/presentation.xml": "application/vnd.openxmlformats-officedocument.presentationml.presentation.main+xml",
    PPTX_SLIDE: "application/vnd.openxmlformats-officedocument.presentationml.slide+xml",
}


def _content_types(parts: list[str]) -> str:
    overrides = "".join(f'<Override PartName="/{p}" ContentType="{_CONTENT_TYPE[p]}"/>' for p in parts)
    return (
        f'{XML_DECL}<Types xmlns="{_CT_NS}">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        f"{overrides}</Types>"
    )


def _rels(*targets: tuple[str, str, str]) -> str:
    items = "".join(f'<Relationship Id="{rid}" Type="{kind}" Target="{target}"/>' for rid, kind, target in targets)
    return f'{XML_DECL}<Relationships xmlns="{_REL_NS}">{items}</Relationships>'


def docx_document_xml(body: str) -> str:
    return f'{XML_DECL}<w:document xmlns:w="{_W_NS}"><w:body>{body}</w:body></w:document>'


def docx_paragraph(text: str) -> str:
    return f"<w:p><w:r><w:t>{text}</w:t></w:r></w:p>"


def docx_parts(document_xml: str | bytes | None) -> dict[str, str | bytes]:
    """A minimal DOCX package's parts; ``document_xml`` None leaves the main part out (to be added by the caller)."""
    parts: dict[str, str | bytes] = {
        "[Content_Types].xml": _content_types([DOCX_MAIN]),
        "_rels/.rels": _rels(("rId1", _OFFICE_DOC, DOCX_MAIN)),
    }
    if document_xml is not None:
        parts[DOCX_MAIN] = document_xml
    return parts


def xlsx_sheet_xml(cells: str) -> str:
    return f'{XML_DECL}<worksheet xmlns="{_S_NS}"><sheetData>{cells}</sheetData></worksheet>'


def xlsx_parts(sheet_xml: str | bytes | None, shared_strings_xml: str | bytes | None = None) -> dict[str, str | bytes]:
    """A minimal XLSX package (one sheet, optionally shared strings); a None sheet is left for the caller to add."""
    listed = ["xl/workbook.xml", XLSX_SHEET] + ([XLSX_STRINGS] if shared_strings_xml is not None else [])
    wb_rels: list[tuple[str, str, str]] = [("rId1", _REL_WORKSHEET, "worksheets/sheet1.xml")]
    if shared_strings_xml is not None:
        wb_rels.append(("rId2", _REL_SHARED_STRINGS, "sharedStrings.xml"))
    parts: dict[str, str | bytes] = {
        "[Content_Types].xml": _content_types(listed),
        "_rels/.rels": _rels(("rId1", _OFFICE_DOC, "xl/workbook.xml")),
        "xl/workbook.xml": (
            f'{XML_DECL}<workbook xmlns="{_S_NS}" xmlns:r="{_R_NS}">'
            '<sheets><sheet name="Sheet1" sheetId="1" r:id="rId1"/></sheets></workbook>'
        ),
        "xl/_rels/workbook.xml.rels": _rels(*wb_rels),
    }
    if sheet_xml is not None:
        parts[XLSX_SHEET] = sheet_xml
    if shared_strings_xml is not None:
        parts[XLSX_STRINGS] = shared_strings_xml
    return parts


def pptx_slide_xml(text: str) -> str:
    return (
        f'{XML_DECL}<p:sld xmlns:p="{_P_NS}" xmlns:a="{_A_NS}" xmlns:r="{_R_NS}"><p:cSld><p:spTree>'
        '<p:nvGrpSpPr><p:cNvPr id="1" name=""/><p:cNvGrpSpPr/><p:nvPr/></p:nvGrpSpPr><p:grpSpPr/>'
        '<p:sp><p:nvSpPr><p:cNvPr id="2" name="Text"/><p:cNvSpPr/><p:nvPr/></p:nvSpPr><p:spPr/>'
        f"<p:txBody><a:bodyPr/><a:p><a:r><a:t>{text}</a:t></a:r></a:p></p:txBody></p:sp>"
        "</p:spTree></p:cSld></p:sld>"
    )


def pptx_parts(slide_xml: str | bytes | None) -> dict[str, str | bytes]:
    parts: dict[str, str | bytes] = {
        "[Content_Types].xml": _content_types(["ppt/presentation.xml", PPTX_SLIDE]),
        "_rels/.rels": _rels(("rId1", _OFFICE_DOC, "ppt/presentation.xml")),
        "ppt/presentation.xml": (
            f'{XML_DECL}<p:presentation xmlns:p="{_P_NS}" xmlns:r="{_R_NS}">'
            '<p:sldIdLst><p:sldId id="256" r:id="rId2"/></p:sldIdLst>'
            '<p:sldSz cx="9144000" cy="6858000"/><p:notesSz cx="6858000" cy="9144000"/></p:presentation>'
        ),
        "ppt/_rels/presentation.xml.rels": _rels(("rId2", _REL_SLIDE, "slides/slide1.xml")),
    }
    if slide_xml is not None:
        parts[PPTX_SLIDE] = slide_xml
    return parts


PACKAGES: Final = {"docx": (docx_parts, DOCX_MAIN), "xlsx": (xlsx_parts, XLSX_SHEET), "pptx": (pptx_parts, PPTX_SLIDE)}


def zip_parts(parts: dict[str, str | bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in parts.items():
            zf.writestr(name, content.encode("utf-8") if isinstance(content, str) else content)
    return buf.getvalue()


def small_docx(text: str = "hello from a small docx") -> bytes:
    return zip_parts(docx_parts(docx_document_xml(docx_paragraph(text))))


def inline_row(number: int, *values: str) -> str:
    """A worksheet row of inline-string cells (A, B, ...)."""
    cells = "".join(
        f'<c r="{chr(ord("A") + i)}{number}" t="inlineStr"><is><t>{v}</t></is></c>' for i, v in enumerate(values)
    )
    return f'<row r="{number}">{cells}</row>'


def small_xlsx(value: str = "hello") -> bytes:
    """One sheet: a header row and one data row."""
    return zip_parts(xlsx_parts(xlsx_sheet_xml(inline_row(1, "name") + inline_row(2, value))))


def small_pptx(text: str = "hello from a small pptx") -> bytes:
    return zip_parts(pptx_parts(pptx_slide_xml(text)))


# ---------------------------------------------------------------------------------------------------------------
# Deep nesting


def nested_blockquotes_markdown(depth: int = 100_000) -> bytes:
    """One paragraph inside ``depth`` block quotes: ``>>>>...> deep``."""
    return b">" * depth + b" deep inside the quotes\n"


def nested_lists_markdown(depth: int = 50_000) -> bytes:
    """A list item whose content starts a list, ``depth`` times: ``- - - ... - deep`` (CommonMark nests them)."""
    return b"- " * depth + b"deep inside the lists\n"


def nested_divs_html(depth: int = 200_000) -> bytes:
    return b"<!DOCTYPE html><html><body>" + b"<div>" * depth + b"deep" + b"</div>" * depth + b"</body></html>\n"


def nested_arrays_toml(depth: int = 100_000) -> bytes:
    return b"deep = " + b"[" * depth + b"1" + b"]" * depth + b"\n"


def nested_parentheses_sql(depth: int = 100_000) -> bytes:
    return b"SELECT " + b"(" * depth + b"1" + b")" * depth + b" AS deep;\n"


def nested_elements_docx(depth: int = 100_000) -> bytes:
    """A DOCX whose document.xml nests ``depth`` elements: content controls (``w:sdt`` > ``w:sdtContent``, legal
    WordprocessingML) inside each other around one paragraph. Each control carries a random tag, so the part does
    not compress like a bomb and the nesting itself is what a reader meets."""
    rng = random.Random(depth)
    levels = depth // 2
    opening = "".join(
        f'<w:sdt><w:sdtPr><w:tag w:val="{rng.getrandbits(64):016x}"/></w:sdtPr><w:sdtContent>' for _ in range(levels)
    )
    inner = opening + docx_paragraph("deep") + "</w:sdtContent></w:sdt>" * levels
    return zip_parts(docx_parts(docx_document_xml(inner)))


# ---------------------------------------------------------------------------------------------------------------
# Huge lines

_WORDS: Final = b"lorem ipsum dolor sit amet consectetur adipiscing elit sed do eiusmod tempor incididunt "


def one_line(size: int) -> bytes:
    """``size`` bytes of words and no line terminator at all."""
    return (_WORDS * (size // len(_WORDS) + 1))[:size]


def huge_line_text(size: int = 40_000_000) -> bytes:
    return one_line(size)


def huge_line_markdown(size: int = 40_000_000) -> bytes:
    return b"# A heading\n\n" + one_line(size - 13)


def huge_cell_csv(cell_size: int = 20_000_000) -> bytes:
    """A header and one row whose middle cell is one quoted field of ``cell_size`` bytes."""
    return b'id,body,tail\n1,"' + one_line(cell_size) + b'",end\n'


def paragraphs_text(count: int = 30_000, length: int = 1000) -> bytes:
    """``count`` one-line paragraphs of ``length`` bytes, blank lines between: more blocks than an artifact holds."""
    return (one_line(length) + b"\n\n") * count


# ---------------------------------------------------------------------------------------------------------------
# Slow inputs


def many_statements_sql(size: int = 16_000_000) -> bytes:
    """``size`` bytes of small SQL statements: a few seconds of parsing per megabyte (sqlglot), about 200,000
    statements for the default size."""
    statement = b"SELECT a, b + 1 AS c FROM t WHERE d = 'x' AND e IN (1, 2, 3) ORDER BY a;\n"
    return statement * (size // len(statement))


# ---------------------------------------------------------------------------------------------------------------
# Small files that cost a parser far more than their size (complexity caps and native-parser pre-checks)


def nested_divs_markdown(depth: int = 100_000) -> bytes:
    """An HTML block of ``depth`` nested ``<div>`` in Markdown (500 KB), past ``markdown_html_max_nesting_depth``."""
    return b"<div>" * depth + b"deep" + b"</div>" * depth + b"\n"


def nested_brackets(depth: int = 1_000_000) -> bytes:
    """A JSON-like array nested ``depth`` deep (2 MB for the default): ``[[[...1...]]]``."""
    return b"[" * depth + b"1" + b"]" * depth + b"\n"


def _pdf(objects: list[bytes]) -> bytes:
    """A PDF of ``objects`` (numbered from 1; 1 is the catalog) with a classic xref table."""
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)


def _pdf_stream(body: bytes, extra: bytes = b"") -> bytes:
    return b"<< /Length %d %s >>\nstream\n%s\nendstream" % (len(body), extra, body)


def one_page_pdf(contents: bytes, *, kids: int = 1, contents_extra: bytes = b"") -> bytes:
    """A PDF whose page tree lists page object 3 ``kids`` times; the page's content stream is ``contents``."""
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>"
    )
    return _pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [%s] /Count %d >>" % (b"3 0 R " * kids, kids),
            page,
            _pdf_stream(contents, contents_extra),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )


def repeated_page_pdf(times: int = 1_000_000) -> bytes:
    """6 MB: a page tree that lists one page a million times."""
    return one_page_pdf(b"BT /F1 12 Tf 72 720 Td (one page) Tj ET", kids=times)


def flate_bomb_pdf(inflated_mib: int = 1024) -> bytes:
    """1 MB: a page whose content stream inflates to ``inflated_mib`` MiB (pdfium aborts allocating it)."""
    stream, _crc, _size = _repeated_deflate(b"BT /F1 12 Tf 72 720 Td (bomb) Tj ET\n", 0x20, inflated_mib, b"")
    return one_page_pdf(zlib_wrap(stream), contents_extra=b"/Filter /FlateDecode")


def spelled_flate_bomb_pdf(spelling: str, inflated_mib: int = 1024) -> bytes:
    """``flate_bomb_pdf`` with its filter written another way pdfium reads the same: ``escaped`` (/F#6CateDecode),
    ``reference`` (/Filter 6 0 R, object 6 the name), ``hex`` ([/ASCIIHexDecode /FlateDecode], the data
    hex-encoded), ``ascii85`` ([/A85 /Fl]), ``reference_to_array`` (6 0 R holding [/AHx /FlateDecode]);
    ``says_it_is_an_image``: the content stream's dictionary claims /Subtype /Image /Width 1 (images are not
    inflated by the check, but pdfium parses a page's /Contents whatever they say)."""
    bomb = flate_bomb_pdf(inflated_mib)
    start = bomb.index(b"stream\n") + len(b"stream\n")
    end = bomb.index(b"\nendstream")
    deflated = bomb[start:end]
    filters, body, extra = {
        "escaped": (b"/F#6CateDecode", deflated, b""),
        "reference": (b"6 0 R", deflated, b"/FlateDecode"),
        "hex": (b"[/ASCIIHexDecode /FlateDecode]", binascii.hexlify(deflated) + b">", b""),
        "ascii85": (b"[/A85 /Fl]", base64.a85encode(deflated) + b"~>", b""),  # no "<~": pdfium stops there
        "reference_to_array": (b"6 0 R", binascii.hexlify(deflated) + b">", b"[/AHx /FlateDecode]"),
        "says_it_is_an_image": (b"/FlateDecode /Subtype /Image /Width 1 /Height 1", deflated, b""),
    }[spelling]
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 5 0 R >> >> >>",
        _pdf_stream(body, b"/Filter " + filters),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    if extra:
        objects.append(extra)
    return _pdf(objects)


def lzw_encode(data: bytes, *, early_change: bool = True) -> bytes:
    """``data`` as a PDF LZWDecode stream (codes of 9-12 bits, most significant first, a clear code when the table
    fills), written independently of the extractor's decoder so each checks the other."""
    early = 1 if early_change else 0
    out = bytearray()
    acc = bits = 0

    def put(code: int, width: int) -> None:
        nonlocal acc, bits
        acc, bits = (acc << width) | code, bits + width
        while bits >= 8:
            bits -= 8
            out.append((acc >> bits) & 0xFF)
        acc &= (1 << bits) - 1

    table = {bytes((i,)): i for i in range(256)}
    next_code, width = 258, 9
    put(256, width)
    word = b""
    for byte in data:
        longer = word + bytes((byte,))
        if longer in table:
            word = longer
            continue
        put(table[word], width)
        table[longer] = next_code
        next_code += 1
        if next_code + early > (1 << width) and width < 12:
            width += 1
        if next_code + early >= 4095:
            put(256, width)
            table = {bytes((i,)): i for i in range(256)}
            next_code, width = 258, 9
        word = bytes((byte,))
    if word:
        put(table[word], width)
    put(257, width)
    if bits:
        out.append((acc << (8 - bits)) & 0xFF)
    return bytes(out)


def lzw_bomb(repeats: int) -> bytes:
    """An LZW stream that grows one string of "A" to the table's longest (3,837 bytes), then repeats that code
    ``repeats`` times without a clear code: 1.5 bytes of input for each 3,837 written (pdfium keeps the full table
    and goes on reading)."""
    codes = [256, 65, *range(258, 4094), *[4093] * repeats, 257]
    out = bytearray()
    acc = bits = 0
    width, size = 9, 258
    for at, code in enumerate(codes):
        acc, bits = (acc << width) | code, bits + width
        while bits >= 8:
            bits -= 8
            out.append((acc >> bits) & 0xFF)
        acc &= (1 << bits) - 1
        if at >= 2 and size < 4094 - 1:
            size += 1
        width = 10 if size + 1 >= 512 else width
        width = 11 if size + 1 >= 1024 else width
        width = 12 if size + 1 >= 2048 else width
    if bits:
        out.append((acc << (8 - bits)) & 0xFF)
    return bytes(out)


def run_length_encode(data: bytes) -> bytes:
    """``data`` as RunLengthDecode literal runs of up to 128 bytes, then the end byte 128."""
    out = bytearray()
    for at in range(0, len(data), 128):
        piece = data[at : at + 128]
        out += bytes((len(piece) - 1,)) + piece
    return bytes(out + b"\x80")


def a85(data: bytes) -> bytes:
    """``data`` as ASCII85Decode text: groups with "z" for four zero bytes, ended by "~>" (no "<~": pdfium stops
    there)."""
    return base64.a85encode(data) + b"~>"


def chained_bomb_pdf(chain: str) -> bytes:
    """A page whose content stream decodes to about 2 GiB through a chain of filters each of which alone passes
    the first layer's check: ``flate_flate`` (4 KB: a deflated 2 MB deflate of 2 GiB), ``lzw`` (900 KB, 2.3 GB),
    ``run_length_flate`` (a 1 GiB flate bomb in RunLength literal runs), ``flate_lzw`` (the LZW bomb deflated)."""
    if chain == "flate_flate":
        inner = zlib.compressobj(9)
        deflated = b"".join(inner.compress(b" " * (1 << 24)) for _ in range(128)) + inner.flush()
        return one_page_pdf(zlib.compress(deflated, 9), contents_extra=b"/Filter [/FlateDecode /FlateDecode]")
    if chain == "lzw":
        return one_page_pdf(lzw_bomb(600_000), contents_extra=b"/Filter /LZWDecode")
    if chain == "run_length_flate":
        bomb = flate_bomb_pdf(1024)
        deflated = bomb[bomb.index(b"stream\n") + 7 : bomb.index(b"\nendstream")]
        return one_page_pdf(run_length_encode(deflated), contents_extra=b"/Filter [/RL /FlateDecode]")
    if chain == "flate_lzw":
        return one_page_pdf(zlib.compress(lzw_bomb(600_000), 9), contents_extra=b"/Filter [/Fl /LZW]")
    raise ValueError(chain)


def zlib_wrap(raw_deflate: bytes) -> bytes:
    """A raw deflate stream with the zlib header and a (wrong: never checked before the end) Adler-32 trailer."""
    return b"\x78\xda" + raw_deflate + b"\x00\x00\x00\x00"


def many_text_operators_pdf(count: int = 3_000_000) -> bytes:
    """30 KB: one page of ``count`` text-showing operators, compressed."""
    return one_page_pdf(
        zlib.compress(b"BT /F1 1 Tf " + b"(a) Tj " * count + b"ET", 9), contents_extra=b"/Filter /FlateDecode"
    )


def annotated_pdf(*, bomb: bool = False) -> bytes:
    """One page with the label "Full name:" in its content and three annotations, each with an appearance stream a
    viewer draws: a form field (widget) holding "Margaret Hamilton" beside the label, a FreeText note "Approved by
    legal", a hidden one (flag 2) holding "secret draft note", which a viewer does not show, and a push button whose
    caption "Submit" the page's content prints too, a point off (seen once). ``bomb``: the
    widget's appearance draws a form that draws itself twice (pdfium parses 2^40 drawings once it is drawn in)."""

    def appearance(text: bytes, extra: bytes = b"", at: bytes = b"2 6") -> bytes:
        body = extra + b"BT /Helv 12 Tf %s Td (%s) Tj ET" % (at, text)
        resources = b"/Font << /Helv 3 0 R >>" + (b" /XObject << /X0 9 0 R >>" if bomb else b"")
        return _pdf_stream(body, b"/Type /XObject /Subtype /Form /BBox [0 0 250 24] /Resources << %s >>" % resources)

    objects = [
        b"<< /Type /Catalog /Pages 2 0 R /AcroForm << /Fields [5 0 R] >> >>",
        b"<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 8 0 R /Resources << /Font << /F1 3 0 R >>"
        b" >> /Annots [5 0 R 6 0 R 7 0 R 13 0 R] >>",
        b"<< /Type /Annot /Subtype /Widget /FT /Tx /T (name) /V (Margaret Hamilton) /Rect [150 692 400 716]"
        b" /F 4 /P 4 0 R /AP << /N 10 0 R >> >>",
        b"<< /Type /Annot /Subtype /FreeText /Rect [72 600 300 624] /Contents (Approved by legal) /DA (/Helv 12 Tf)"
        b" /F 4 /AP << /N 11 0 R >> >>",
        b"<< /Type /Annot /Subtype /FreeText /Rect [72 500 300 524] /Contents (secret draft note) /DA (/Helv 12 Tf)"
        b" /F 2 /AP << /N 12 0 R >> >>",
        _pdf_stream(b"BT /F1 12 Tf 72 700 Td (Full name:) Tj ET BT /F1 12 Tf 72 400 Td (Submit) Tj ET"),
        _pdf_stream(
            b"/X0 Do /X0 Do",
            b"/Type /XObject /Subtype /Form /BBox [0 0 10 10] /Resources << /XObject << /X0 9 0 R >> >>",
        ),
        appearance(b"Margaret Hamilton", b"/X0 Do " if bomb else b""),
        appearance(b"Approved by legal"),
        appearance(b"secret draft note"),
        b"<< /Type /Annot /Subtype /Widget /FT /Btn /Ff 65536 /T (send) /Rect [70 395 130 415] /F 4 /P 4 0 R"
        b" /AP << /N 14 0 R >> >>",
        appearance(b"Submit", at=b"3 6"),
    ]
    return _pdf(objects)


def multiplying_forms_pdf(
    levels: int | None,
    *,
    draws: int = 2,
    name: bytes = b"/X0",
    inherit: bool = False,
    form_filter: bytes = b"",
    glyph: bool = False,
    subtype: bytes = b"/Form",
    indirect_subtype: bool = False,
) -> bytes:
    """A PDF of two pages: page 1 plain text; page 2 draws form ``X0``. ``levels=None``: X0 draws itself ``draws``
    times (a loop pdfium follows 40 levels down: draws^40 drawings); else a chain of ``levels`` forms, each drawing
    the next ``draws`` times (sum of draws^k drawings) and showing its own line of text. ``name`` is how the forms'
    content spells X0 (``/X#30`` is the same name); ``inherit``: a looping form has no resources of its own and
    finds X0 in the page's; ``form_filter``: the forms' content is stored hex-encoded (``/ASCIIHexDecode``);
    ``glyph``: page 2 draws nothing itself but shows a letter of a Type 3 font whose glyph draws X0; ``subtype``:
    how the forms spell /Form (``/F#6Frm`` is the same name); ``indirect_subtype``: their /Subtype is a reference
    to an object holding the name."""
    font = b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
    plain = _pdf_stream(b"BT /F1 12 Tf 72 720 Td (a plain page) Tj ET")
    first_form = 7
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [5 0 R 6 0 R] /Count 2 >>",
        font,
        plain,
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
        b" /Resources << /Font << /F1 3 0 R >> >> >>",
    ]
    drawing_page = len(objects) + 1
    objects.append(b"")  # the drawing page, filled in below (its content stream follows the forms)

    def form(body: bytes, next_form: int | None) -> bytes:
        xobject = b" /XObject << /X0 %d 0 R >>" % next_form if next_form is not None else b""
        resources = b"" if inherit else b" /Resources << /Font << /F1 3 0 R >>%s >>" % xobject
        if form_filter:
            body = body.hex().encode() + b">"
        return _pdf_stream(body, b"/Type /XObject /Subtype /Form /BBox [0 0 612 792]%s%s" % (resources, form_filter))

    if levels is None:
        objects.append(form(b"%s Do " % name * draws + b"BT /F1 12 Tf 72 700 Td (loop) Tj ET", first_form))
    else:
        for level in range(levels):
            last = level == levels - 1
            body = (b"" if last else b"%s Do " % name * draws) + b"BT /F1 12 Tf 72 %d Td (level %d) Tj ET" % (
                700 - 10 * level,
                level,
            )
            objects.append(form(body, None if last else first_form + level + 1))
    contents = len(objects) + 1
    fonts = b"/F1 3 0 R"
    if glyph:
        objects.append(_pdf_stream(b"BT /F3 12 Tf 72 720 Td (a) Tj ET"))
        objects.append(_pdf_stream(b"1000 0 d0 /X0 Do"))
        objects.append(
            b"<< /Type /Font /Subtype /Type3 /FontBBox [0 0 1000 1000] /FontMatrix [0.001 0 0 0.001 0 0]"
            b" /CharProcs << /a %d 0 R >> /Encoding << /Type /Encoding /Differences [97 /a] >> /FirstChar 97"
            b" /LastChar 97 /Widths [1000] /Resources << /XObject << /X0 %d 0 R >> >> >>" % (contents + 1, first_form)
        )
        fonts += b" /F3 %d 0 R" % (contents + 2)
    else:
        objects.append(_pdf_stream(b"/X0 Do"))
    objects[drawing_page - 1] = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R"
        b" /Resources << /Font << %s >> /XObject << /X0 %d 0 R >> >> >>" % (contents, fonts, first_form)
    )
    written = b"%d 0 R" % (len(objects) + 1) if indirect_subtype else subtype
    objects = [o.replace(b"/Subtype /Form", b"/Subtype " + written) for o in objects]
    if indirect_subtype:
        objects.append(b"/Form")
    return _pdf(objects)


def image_pages_pdf(pages: int = 500, side_pt: int = 72, image_px: int = 300, *, width_pt: int | None = None) -> bytes:
    """A scan-like PDF: ``pages`` pages without a text layer, each showing one (shared) blank ``image_px`` square
    image over a square page of ``side_pt`` points (``width_pt`` wide, if given). 500 pages ask OCR for far more than
    a file's OCR cap and budget; a page of 4,800 points is 20,000 x 20,000 pixels at 300 dpi."""
    pixels = zlib.compress(b"\xff" * (image_px * image_px), 9)
    image = _pdf_stream(
        pixels,
        b"/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 "
        b"/Filter /FlateDecode" % (image_px, image_px),
    )
    width_pt = side_pt if width_pt is None else width_pt
    content = b"q %d 0 0 %d 0 0 cm /Im1 Do Q" % (width_pt, side_pt)
    first_page = 5
    kids = b" ".join(b"%d 0 R" % (first_page + k) for k in range(pages))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
        image,
        _pdf_stream(content),
    ]
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 %d %d] /Contents 4 0 R"
        b" /Resources << /XObject << /Im1 3 0 R >> >> >>"
    )
    objects += [page % (width_pt, side_pt)] * pages
    return _pdf(objects)


def overlapping_runs_pdf(
    runs: int = 60, letters: int = 1000, *, step: float = 0.5, rotate: int = 0, in_form: bool = False
) -> bytes:
    """Two pages: page 1 plain text; page 2 ``runs`` runs of ``letters`` one-letter ``Tj`` on one line, each run
    starting ``step`` points right of the last, over one another (2 KB compressed). pdfium's text reader inserts
    each letter into its sorted line past every letter further right: 60 x 1,000 took it 13 s. ``step`` large
    enough and the runs sit side by side; ``rotate``: page 2's /Rotate; ``in_form``: the runs are a form XObject
    page 2 draws once (its own objects: one)."""
    runs_content = b"".join(
        b"BT /F1 1 Tf %g 720 Td " % (72 + k * step) + b"(a) Tj " * letters + b"ET " for k in range(runs)
    )
    plain = b"BT /F1 12 Tf 72 720 Td (a plain page) Tj ET"
    page = (
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R%s"
        b" /Resources << /Font << /F1 5 0 R >> /XObject << /X0 8 0 R >> >> >>"
    )
    runs_stream = _pdf_stream(zlib.compress(runs_content, 9), b"/Filter /FlateDecode")
    form = _pdf_stream(
        zlib.compress(runs_content, 9),
        b"/Type /XObject /Subtype /Form /BBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >>"
        b" /Filter /FlateDecode",
    )
    return _pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R 4 0 R] /Count 2 >>",
            page % (6, b""),
            page % (7, b" /Rotate %d" % rotate if rotate else b""),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            _pdf_stream(plain),
            _pdf_stream(b"/X0 Do") if in_form else runs_stream,
            form,
        ]
    )


def declared_image_pdf(width: int, height: int, *, text: bytes = b"") -> bytes:
    """One page drawing one image whose dictionary says ``width`` x ``height`` pixels over a few bytes of data (the
    size pdfium's render decodes it at); ``text``: a line of text layer above it, so the page has text and the image
    is a region to read. A real 30,000 x 30,000 image compresses to 0.9 MB and took pdfium 1.1 GB to render."""
    image = _pdf_stream(
        zlib.compress(b"\xff" * 4096),
        b"/Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray /BitsPerComponent 8 "
        b"/Filter /FlateDecode" % (width, height),
    )
    content = b"q 500 0 0 600 50 50 cm /Im1 Do Q"
    if text:
        content += b" BT /F1 12 Tf 72 740 Td (%s) Tj ET" % text
    return _pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [5 0 R] /Count 1 >>",
            image,
            _pdf_stream(content),
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R"
            b" /Resources << /XObject << /Im1 3 0 R >> /Font << /F1 6 0 R >> >> >>",
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )


def huge_picture_png(width: int = 20_000, height: int = 20_000) -> bytes:
    """A PNG whose header says ``width`` x ``height`` (1-bit grey) over a few bytes of data: 400 megapixels claimed
    in 100 bytes."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def docx_with_picture(png: bytes) -> bytes:
    """A docx whose one paragraph holds a picture (``word/media/image1.png``)."""
    drawing = (
        '<w:p><w:r><w:drawing><wp:inline xmlns:wp="http://schemas.openxmlformats.org/drawingml/2006/'
        'wordprocessingDrawing"><wp:extent cx="5486400" cy="5486400"/><wp:docPr id="1" name="Picture 1"/>'
        f'<a:graphic xmlns:a="{_A_NS}"><a:graphicData uri="http://schemas.openxmlformats.org/drawingml/2006/picture">'
        '<pic:pic xmlns:pic="http://schemas.openxmlformats.org/drawingml/2006/picture"><pic:blipFill>'
        f'<a:blip xmlns:r="{_R_NS}" r:embed="rIdImg"/></pic:blipFill></pic:pic></a:graphicData></a:graphic>'
        "</wp:inline></w:drawing></w:r></w:p>"
    )
    parts = docx_parts(docx_document_xml(docx_paragraph("a picture follows") + drawing))
    parts["word/_rels/document.xml.rels"] = _rels(
        ("rIdImg", "http://schemas.openxmlformats.org/officeDocument/2006/relationships/image", "media/image1.png")
    )
    parts["word/media/image1.png"] = png
    return zip_parts(parts)


def far_corners_xlsx() -> bytes:
    """A few KB: cells at A1 and XFD1048576, a bounding box of 17 billion cells (calamine aborts allocating 512 GiB)."""
    cells = (
        '<row r="1"><c r="A1" t="inlineStr"><is><t>first</t></is></c></row>'
        '<row r="1048576"><c r="XFD1048576" t="inlineStr"><is><t>last</t></is></c></row>'
    )
    return zip_parts(xlsx_parts(xlsx_sheet_xml(cells)))


# ---------------------------------------------------------------------------------------------------------------
# XML entity expansion (billion laughs)


def billion_laughs_doctype(root: str, levels: int = 10, fanout: int = 10) -> str:
    """A DOCTYPE whose entity ``&lol{levels-1};`` expands to ``fanout ** levels`` copies of "lol"."""
    ents = ['<!ENTITY lol0 "lol">']
    ents += [f'<!ENTITY lol{i} "{("&lol" + str(i - 1) + ";") * fanout}">' for i in range(1, levels)]
    return f"<!DOCTYPE {root} [{''.join(ents)}]>"


def billion_laughs_docx(levels: int = 10) -> bytes:
    doctype = billion_laughs_doctype("w:document", levels)
    xml = (
        f'{XML_DECL}{doctype}<w:document xmlns:w="{_W_NS}"><w:body>'
        f"{docx_paragraph(f'&lol{levels - 1};')}</w:body></w:document>"
    )
    return zip_parts(docx_parts(xml))


def billion_laughs_xlsx(levels: int = 10) -> bytes:
    """The bomb in the shared strings part (where a reader looks up a cell's text), referenced by cell A1."""
    doctype = billion_laughs_doctype("sst", levels)
    strings = (
        f'{XML_DECL}{doctype}<sst xmlns="{_S_NS}" count="1" uniqueCount="1"><si><t>&lol{levels - 1};</t></si></sst>'
    )
    sheet = xlsx_sheet_xml('<row r="1"><c r="A1" t="s"><v>0</v></c></row>')
    return zip_parts(xlsx_parts(sheet, strings))


def billion_laughs_pptx(levels: int = 10) -> bytes:
    doctype = billion_laughs_doctype("p:sld", levels)
    slide = pptx_slide_xml(f"&lol{levels - 1};").replace("<p:sld ", doctype + "<p:sld ", 1)
    return zip_parts(pptx_parts(slide))


# ---------------------------------------------------------------------------------------------------------------
# Zip bombs

_CHUNK: Final = 1 << 20


def _repeated_deflate(prefix: bytes, fill: int, count: int, suffix: bytes) -> tuple[bytes, int, int]:
    """Raw deflate of ``prefix + bytes([fill]) * (count * 1 MiB) + suffix`` without compressing the middle more than
    once: (the stream, its CRC-32, its inflated size)."""
    chunk = bytes([fill]) * _CHUNK
    comp = zlib.compressobj(9, zlib.DEFLATED, -15)
    head = comp.compress(prefix) + comp.flush(zlib.Z_FULL_FLUSH)
    once = comp.compress(chunk) + comp.flush(zlib.Z_FULL_FLUSH)
    again = comp.compress(chunk) + comp.flush(zlib.Z_FULL_FLUSH)
    if once != again:  # pragma: no cover - zlib's full flush resets the history, so this holds
        raise RuntimeError("a full flush did not make the compressed chunk repeatable")
    tail = comp.compress(suffix) + comp.flush(zlib.Z_FINISH)
    crc = zlib.crc32(prefix)
    for _ in range(count):
        crc = zlib.crc32(chunk, crc)
    crc = zlib.crc32(suffix, crc)
    return head + once * count + tail, crc, len(prefix) + count * _CHUNK + len(suffix)


def _dos_time() -> tuple[int, int]:
    return (0 << 11) | (0 << 5), ((2024 - 1980) << 9) | (1 << 5) | 1


def package_with_member(
    parts: dict[str, str | bytes],
    name: str,
    stream: bytes,
    crc: int,
    size: int,
    *,
    declared_size: int | None = None,
) -> bytes:
    """A zip of ``parts`` (deflated by zipfile) plus member ``name`` whose raw deflate ``stream`` is written as is.

    ``declared_size`` (default: ``size``) is the inflated size the local header and the central directory state:
    another value makes a lying header.
    """
    declared = size if declared_size is None else declared_size
    if declared > 0xFFFFFFFF or len(stream) > 0xFFFFFFFF:
        raise ValueError("this writer makes no zip64 records")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for part, content in parts.items():
            zf.writestr(part, content.encode("utf-8") if isinstance(content, str) else content)
    # Re-read what zipfile wrote: its local records stay as they are, the central directory is rebuilt below.
    base = buf.getvalue()
    with zipfile.ZipFile(io.BytesIO(base)) as zf:
        infos = zf.infolist()
    cd_offset = struct.unpack_from("<I", base, len(base) - 22 + 16)[0]
    local_end = cd_offset
    mtime, mdate = _dos_time()
    encoded = name.encode("utf-8")
    offset = local_end
    local = struct.pack(
        "<4sHHHHHIIIHH", b"PK\x03\x04", 20, 0, 8, mtime, mdate, crc, len(stream), declared, len(encoded), 0
    )
    out = io.BytesIO()
    out.write(base[:local_end])
    out.write(local)
    out.write(encoded)
    out.write(stream)
    central = io.BytesIO()
    entries = 0
    for info in infos:
        fname = info.filename.encode("utf-8")
        central.write(
            struct.pack(
                "<4sHHHHHHIIIHHHHHII",
                b"PK\x01\x02",
                20,
                20,
                info.flag_bits,
                info.compress_type,
                mtime,
                mdate,
                info.CRC,
                info.compress_size,
                info.file_size,
                len(fname),
                0,
                0,
                0,
                0,
                0,
                info.header_offset,
            )
        )
        central.write(fname)
        entries += 1
    central.write(
        struct.pack(
            "<4sHHHHHHIIIHHHHHII",
            b"PK\x01\x02",
            20,
            20,
            0,
            8,
            mtime,
            mdate,
            crc,
            len(stream),
            declared,
            len(encoded),
            0,
            0,
            0,
            0,
            0,
            offset,
        )
    )
    central.write(encoded)
    entries += 1
    cd = central.getvalue()
    cd_start = out.tell()
    out.write(cd)
    out.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, entries, entries, len(cd), cd_start, 0))
    return out.getvalue()


BOMB_SIZE: Final = 2 * 1024 * 1024 * 1024  # what the bomb part inflates to


def _bomb_parts(kind: str, *, inflated: int) -> tuple[dict[str, str | bytes], str, bytes, int, int]:
    factory, main = PACKAGES[kind]
    parts = factory(None)
    # The main part: well-formed XML up to a text node of ~2 GiB of spaces, then closed again, so a reader that
    # trusted it would parse all of it.
    if kind == "docx":
        before, after = docx_document_xml(docx_paragraph("\x00")).split("\x00")
    elif kind == "xlsx":
        before, after = xlsx_sheet_xml('<row r="1"><c r="A1" t="inlineStr"><is><t>\x00</t></is></c></row>').split(
            "\x00"
        )
    else:
        before, after = pptx_slide_xml("\x00").split("\x00")
    count = (inflated - len(before) - len(after)) // _CHUNK
    stream, crc, size = _repeated_deflate(before.encode(), ord(" "), count, after.encode())
    return parts, main, stream, crc, size


def zip_bomb(kind: str, inflated: int = BOMB_SIZE) -> bytes:
    """A ``kind`` package (docx, xlsx, pptx) whose main part honestly inflates to about ``inflated`` bytes."""
    parts, main, stream, crc, size = _bomb_parts(kind, inflated=inflated)
    return package_with_member(parts, main, stream, crc, size)


def lying_zip_bomb(kind: str, inflated: int = BOMB_SIZE, declared: int = 64 * 1024) -> bytes:
    """A package whose main part inflates to ``inflated`` bytes while every header says it is ``declared`` bytes
    (a small, harmless-looking ratio): only a reader that stops at the declared size is safe."""
    parts, main, stream, crc, size = _bomb_parts(kind, inflated=inflated)
    return package_with_member(parts, main, stream, crc, size, declared_size=declared)


# ---------------------------------------------------------------------------------------------------------------
# The service as its own process

ROOT: Final = Path(__file__).resolve().parent.parent
CORPUS: Final = ROOT.parent / "shared" / "corpus"
_SETTINGS_PREFIX: Final = "EXTRACTOR_"
STARTUP_TIMEOUT_S: Final = 60.0
_QUIET: Final = ("--log-level", "warning")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@dataclass
class LiveService:
    """A running ``python -m extract_fn serve``: its base URL, token and process (whose output goes to ``log``)."""

    base_url: str
    token: str
    proc: subprocess.Popen[bytes]
    log: Path
    _local: threading.local = field(default_factory=threading.local)

    @property
    def headers(self) -> dict[str, str]:
        # As the server sends them: the bearer token, and no compression of the answer.
        return {"Authorization": f"Bearer {self.token}", "Accept-Encoding": "identity"}

    def _session(self) -> requests.Session:
        session = getattr(self._local, "session", None)
        if session is None:
            session = self._local.session = requests.Session()
        return session

    def capabilities(self, timeout: float = 30) -> requests.Response:
        return self._session().get(f"{self.base_url}/v1/capabilities", headers=self.headers, timeout=timeout)

    def extract(
        self, fmt: str, data: Any, *, name: str = "", timeout: float = 180, **options: str
    ) -> requests.Response:
        """POST /v1/extract with ``data`` (bytes, or an iterator of chunks: sent chunked) as the body."""
        params = {"format": fmt, "name": name, **options}
        headers = {**self.headers, "Content-Type": "application/octet-stream"}
        return self._session().post(
            f"{self.base_url}/v1/extract", params=params, data=data, headers=headers, timeout=timeout
        )

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log_tail(self, chars: int = 6000) -> str:
        try:
            text = self.log.read_text("utf-8", "replace")
        except OSError:
            return "(no log)"
        return text[-chars:]


@contextlib.contextmanager
def start_service(settings: Mapping[str, str], *, token: str = "tok-live-7Qm2xR") -> Iterator[LiveService]:
    """Run the service with ``settings`` (EXTRACTOR_* variables; EXTRACTOR_TOKENS is ``token``) until the block ends.

    It is stopped with SIGTERM (uvicorn's graceful shutdown), then SIGKILL if it lingers; its workers die with it.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SETTINGS_PREFIX)}
    env.update(settings)
    env["EXTRACTOR_TOKENS"] = token
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONFAULTHANDLER"] = "1"  # a worker that crashes in C leaves its Python stack in the log
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), *([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])])
    fd, log_name = tempfile.mkstemp(prefix="extract-fn-live-", suffix=".log")
    log = Path(log_name)
    proc: subprocess.Popen[bytes] | None = None
    try:
        for _attempt in range(3):  # another process may take the free port between our probe and uvicorn's bind
            port = _free_port()
            proc = subprocess.Popen(
                [sys.executable, "-m", "extract_fn", "serve", "--host", "127.0.0.1", "--port", str(port), *_QUIET],
                cwd=ROOT,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=fd,
                stderr=fd,
            )
            service = LiveService(f"http://127.0.0.1:{port}", token, proc, log)
            if _wait_ready(service):
                break
            _stop(proc)
            if "address already in use" not in service.log_tail().lower():
                raise RuntimeError(f"the extractor service did not start:\n{service.log_tail()}")
        else:
            raise RuntimeError(f"the extractor service found no free port:\n{service.log_tail()}")
        yield service
    finally:
        if proc is not None:
            _stop(proc)
        os.close(fd)
        log.unlink(missing_ok=True)


def _wait_ready(service: LiveService) -> bool:
    deadline = time.monotonic() + STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if not service.alive():
            return False
        try:
            if service.capabilities(timeout=5).status_code == 200:
                return True
        except requests.ConnectionError:
            pass
        time.sleep(0.1)
    return False


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
