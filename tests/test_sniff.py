"""Sniffing: what bytes are, and which requests are format_mismatch (extract_fn/sniff.py)."""

from __future__ import annotations

import codecs
import csv
import gzip
import io
import mmap
import os
import random
import zipfile
from pathlib import Path

import pytest

from extract_fn.sniff import check_format, looks_like_text, sniff
from shared.contract import FORMATS, TEXT_FORMATS, ErrorCode, ExtractionError

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
INPUT_FORMATS = set(FORMATS)  # rows of other "formats" (json-expected, html-expected, ...) are ground truth


def _manifest() -> list[dict[str, str]]:
    with (CORPUS / "MANIFEST.tsv").open(newline="", encoding="utf-8") as fh:
        return [row for row in csv.DictReader(fh, delimiter="\t") if row["format"] in INPUT_FORMATS]


MANIFEST = _manifest()


def _read(rel: str) -> bytes:
    return (CORPUS / rel).read_bytes()


def _mismatch(data: bytes, fmt: str, encoding: str | None = None) -> ExtractionError | None:
    try:
        check_format(data, fmt, encoding=encoding)
    except ExtractionError as exc:
        return exc
    return None


# ---------------------------------------------------------------------------------------------------------------
# The corpus: no input is refused as another format when sent as its own


def test_manifest_covers_every_format() -> None:
    assert {row["format"] for row in MANIFEST} == INPUT_FORMATS
    assert len(MANIFEST) > 600


def test_no_corpus_input_is_a_mismatch_as_its_own_format() -> None:
    wrong = []
    for row in MANIFEST:
        data = _read(row["path"])
        for encoding in {None, row.get("codec") or None}:
            err = _mismatch(data, row["format"], encoding)
            if err is not None and err.code == ErrorCode.FORMAT_MISMATCH:
                wrong.append(f"{row['path']} (encoding={encoding}): {err.message}")
    assert wrong == []


def test_only_the_empty_pdf_is_refused_before_its_module() -> None:
    refused = {}
    for row in MANIFEST:
        err = _mismatch(_read(row["path"]), row["format"])
        if err is not None:
            refused[row["path"]] = err.code
    assert refused == {"pdf/pdfplumber-empty.pdf": ErrorCode.CORRUPT}
    assert next(r for r in MANIFEST if r["path"] == "pdf/pdfplumber-empty.pdf")["expect"] == "corrupt"


def test_corpus_binary_files_sniff_as_their_format() -> None:
    kinds: dict[str, set[str | None]] = {}
    for row in MANIFEST:
        if row["format"] not in TEXT_FORMATS:
            kinds.setdefault(row["format"], set()).add(sniff(_read(row["path"])))
    assert kinds["pdf"] == {"pdf", None}  # None: the 0-byte file
    assert kinds["parquet"] == {"parquet"}  # PARE (encrypted footer) included
    assert kinds["docx"] == {"docx", "zip", "ole_encrypted"}  # zip: the two non-OOXML zips; and the encrypted one
    assert kinds["pptx"] == {"pptx"}
    assert kinds["xlsx"] == {"xlsx", "zip", "ole_encrypted"}


def test_the_service_s_body_forms_sniff_as_bytes_do(tmp_path: Path) -> None:
    """The service hands sniffing a bytearray (a body in memory) or a map of its temporary file: both must give the
    kind the bytes give (slices of a bytearray are not hashable, which the zip reading once tripped on)."""
    from extract_fn.buffering import MappedFile

    rows = [r for r in MANIFEST if r["format"] not in TEXT_FORMATS and _read(r["path"])]
    for row in rows:
        data = _read(row["path"])
        spooled = tmp_path / "body"
        spooled.write_bytes(data)
        with spooled.open("rb") as fh, MappedFile(fh.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            assert {sniff(bytearray(data)), sniff(mapped)} == {sniff(data)}, row["path"]  # type: ignore[arg-type]


def test_corpus_text_files_sniff_as_text() -> None:
    kinds = {sniff(_read(r["path"])) for r in MANIFEST if r["format"] in TEXT_FORMATS and r["format"] != "html"}
    assert kinds == {"text", None}  # None: an empty TOML file
    html = {sniff(_read(r["path"])) for r in MANIFEST if r["format"] == "html"}
    assert html == {"text", "html"}  # whole documents, and fragments (html5lib's tree tests)


def test_whole_html_documents_are_told_from_the_other_text_formats() -> None:
    documents = [
        b"<!DOCTYPE html>\n<title>t</title>",
        b"<!doctype HTML><p>x",
        b"<html>",
        b"  \r\n<HTML lang=en>",
        b'<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML 1.0 Strict//EN">',
        b"\xef\xbb\xbf<!-- generated -->\n<?xml version='1.0' encoding='utf-8'?>\n<html xmlns='x'>",
        "<!doctype html><p>\u00fc</p>".encode("utf-16"),  # a byte-order mark names the codec
    ]
    for data in documents:
        assert sniff(data) == "html", data
        assert _mismatch(data, "html") is None
        for fmt in sorted(TEXT_FORMATS - {"html"}):
            err = _mismatch(data, fmt)
            assert err is not None, (data, fmt)
            assert err.code == ErrorCode.FORMAT_MISMATCH
            assert err.message == f"the file is html, not {fmt}"
        err = _mismatch(data, "pdf")
        assert err is not None
        assert err.message == "the file is html, not pdf"
    wide = "<!doctype html><p>x</p>".encode("utf-16-le")  # no byte-order mark: only the option names the codec
    assert _mismatch(wide, "markdown", encoding="utf-16-le") is not None
    # Fragments, which markdown holds and a text file may quote, and near misses are text.
    fragments = [
        b'<p align="center">logo</p>\n\n# Title\n',
        b"<!-- licence -->\n# Title\n",
        b"<div></div>",
        b"<htmlx>",
        b"# <html> in a heading\n",
        b"<!-- never closed <html>",
        b"Text about <!DOCTYPE html> documents.\n",
    ]
    for data in fragments:
        assert sniff(data) == "text", data
        for fmt in sorted(TEXT_FORMATS):
            assert _mismatch(data, fmt) is None, (data, fmt)


# ---------------------------------------------------------------------------------------------------------------
# The matrix: binary files of the corpus sent as every other format

SAMPLES = {
    "pdf": "pdf/sample-files-001-trivial.pdf",
    "docx": "docx/mammoth-tables.docx",
    "pptx": "pptx/python-pptx-minimal.pptx",
    "xlsx": "xlsx/calamine-date.xlsx",
    "parquet": "parquet/parquet-testing-alltypes_plain.parquet",
    "zip": "docx/mammoth-hello-zip-not-docx.docx",
    "empty-zip": "xlsx/poi-invalid.xlsx",
    "ole": "xlsx/calamine-pass-protected.xlsx",
    "truncated-docx": "docx/poi-truncated62886.docx",
    "encrypted-parquet": "parquet/parquet-testing-uniform_encryption.parquet",
    "backslash-xlsx": "xlsx/calamine-issue-530-backslash-part-names.xlsx",
    "strict-docx": "docx/mammoth-strict-format.docx",
}
SAMPLE_KIND = {
    "pdf": "pdf",
    "docx": "docx",
    "pptx": "pptx",
    "xlsx": "xlsx",
    "parquet": "parquet",
    "zip": "zip",
    "empty-zip": "zip",
    "ole": "ole_encrypted",
    "truncated-docx": "docx",
    "encrypted-parquet": "parquet",
    "backslash-xlsx": "xlsx",
    "strict-docx": "docx",
}


@pytest.mark.parametrize("sample", sorted(SAMPLES))
def test_binary_samples_sent_as_every_format(sample: str) -> None:
    data = _read(SAMPLES[sample])
    kind = SAMPLE_KIND[sample]
    assert sniff(data) == kind
    for fmt in FORMATS:
        err = _mismatch(data, fmt)
        own = fmt == kind
        left_to_module = kind in ("zip", "ole_encrypted") and fmt in ("docx", "pptx", "xlsx")
        if own or left_to_module:
            assert err is None, f"{sample} as {fmt}: {err and err.message}"
        else:
            assert err is not None, f"{sample} sent as {fmt} was not refused"
            assert err.code == ErrorCode.FORMAT_MISMATCH
            assert err.message.startswith("the file is ")
            assert err.message.endswith(f", not {fmt}")


def test_mismatch_message_names_the_format() -> None:
    err = _mismatch(_read(SAMPLES["pdf"]), "markdown")
    assert err is not None
    assert err.message == "the file is pdf, not markdown"
    err = _mismatch(_read(SAMPLES["docx"]), "xlsx")
    assert err is not None
    assert err.message == "the file is docx, not xlsx"
    err = _mismatch(_read(SAMPLES["ole"]), "text")
    assert err is not None
    assert err.message == "the file is a password-protected (encrypted) Office file, not text"


def test_a_truncated_package_is_still_known_by_its_local_headers() -> None:
    data = _read(SAMPLES["pptx"])
    cut = data[: len(data) // 2]  # no central directory left
    assert sniff(cut) == "pptx"
    assert _mismatch(cut, "pptx") is None
    err = _mismatch(cut, "docx")
    assert err is not None
    assert err.message == "the file is pptx, not docx"


def _zip(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, content in members.items():
            zf.writestr(name, content)
    return buf.getvalue()


def test_a_package_with_parts_of_two_kinds_is_decided_by_its_content_types() -> None:
    content_types = (
        b'<?xml version="1.0"?><Types><Override PartName="/xl/workbook.xml" '
        b'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>'
    )
    data = _zip({"[Content_Types].xml": content_types, "xl/workbook.xml": b"<x/>", "word/stray.xml": b"<x/>"})
    assert sniff(data) == "xlsx"
    data = _zip({"word/document.xml": b"<x/>", "ppt/presentation.xml": b"<x/>"})
    assert sniff(data) == "zip"  # undecidable: the module says what is wrong


def test_an_odf_document_is_a_zip_left_to_the_ooxml_modules_and_refused_as_text() -> None:
    data = _zip({"mimetype": b"application/vnd.oasis.opendocument.text", "content.xml": b"<x/>"})
    assert sniff(data) == "zip"
    assert _mismatch(data, "docx") is None
    err = _mismatch(data, "markdown")
    assert err is not None
    assert "zip archive" in err.message


# ---------------------------------------------------------------------------------------------------------------
# Images, compressed and other binary data as text formats

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(30)
JPEG = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00" + bytes(30)
GIF = b"GIF89a\x01\x00\x01\x00\x80\x00\x00" + bytes(20)
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 " + bytes(30)
TIFF = b"II*\x00\x08\x00\x00\x00" + bytes(30)
BMP = b"BM" + (70).to_bytes(4, "little") + bytes(4) + (54).to_bytes(4, "little")
BMP += (40).to_bytes(4, "little") + bytes(40)
GZIP = gzip.compress(b"hello world" * 10)
ELF = b"\x7fELF\x02\x01\x01\x00" + bytes(56)
RANDOM = random.Random(7).randbytes(8192)
ZEROS = bytes(2048)


@pytest.mark.parametrize(
    ("data", "kind", "words"),
    [
        (PNG, "png", "a PNG image"),
        (JPEG, "jpeg", "a JPEG image"),
        (GIF, "gif", "a GIF image"),
        (WEBP, "webp", "a WebP image"),
        (TIFF, "tiff", "a TIFF image"),
        (BMP, "bmp", "a BMP image"),
        (GZIP, "gzip", "gzip-compressed data"),
        (ELF, "binary", "binary data"),
        (RANDOM, "binary", "binary data"),
        (ZEROS, "binary", "binary data"),
    ],
    ids=["png", "jpeg", "gif", "webp", "tiff", "bmp", "gzip", "elf", "random", "zeros"],
)
def test_binary_data_is_refused_as_every_text_format(data: bytes, kind: str, words: str) -> None:
    assert sniff(data) == kind
    for fmt in sorted(TEXT_FORMATS):
        err = _mismatch(data, fmt)
        assert err is not None, fmt
        assert err.code == ErrorCode.FORMAT_MISMATCH
        assert err.message == f"the file is {words}, not {fmt}"
    # As a binary format: an image is another format; unknown binary data is left to the module (corrupt).
    for fmt in ("pdf", "docx", "parquet"):
        err = _mismatch(data, fmt)
        if kind == "binary":
            assert err is None
        else:
            assert err is not None
            assert err.code == ErrorCode.FORMAT_MISMATCH


def test_random_bytes_are_binary_whatever_the_seed() -> None:
    for seed in range(20):
        data = random.Random(seed).randbytes(4096)
        assert not looks_like_text(data), seed


# ---------------------------------------------------------------------------------------------------------------
# Text in many encodings is text

PROSE = "The quick brown fox jumps over the lazy dog.\nLine two, with a tab\tand numbers 12345.\n" * 20
CJK = "日本語のテキストです。漢字とかなが混ざっています。\n中文文本，没有字节顺序标记。\n" * 20


@pytest.mark.parametrize(
    "data",
    [
        PROSE.encode("utf-8"),
        PROSE.encode("utf-16-le"),
        PROSE.encode("utf-16-be"),
        PROSE.encode("utf-32-le"),
        PROSE.encode("utf-32-be"),
        CJK.encode("utf-16-le"),
        CJK.encode("utf-16-be"),
        CJK.encode("utf-8"),
        CJK.encode("shift_jis", "ignore"),
        CJK.encode("iso-2022-jp", "ignore"),  # ESC sequences
        CJK.encode("gb18030"),
        "Grüße, señor, ça va? Ørsted Æbleskiver\n".encode("latin-1") * 30,
        "Привет, мир\n".encode("koi8-r") * 30,
        codecs.BOM_UTF16_LE + PROSE.encode("utf-16-le"),
        codecs.BOM_UTF8 + PROSE.encode("utf-8"),
        b"a,b,c\n\x00,2,3\n",  # a stray NUL (csvkit-null-byte.csv)
        b"key = 'value\x1f'\n",  # a stray control byte
        b"x",
    ],
    ids=[
        "utf8",
        "utf16le",
        "utf16be",
        "utf32le",
        "utf32be",
        "cjk-utf16le",
        "cjk-utf16be",
        "cjk-utf8",
        "shift-jis",
        "iso-2022-jp",
        "gb18030",
        "latin1",
        "koi8r",
        "utf16-bom",
        "utf8-bom",
        "nul-in-csv",
        "control-in-toml",
        "one-byte",
    ],
)
def test_text_in_any_encoding_is_no_mismatch(data: bytes) -> None:
    assert sniff(data) == "text"
    for fmt in sorted(TEXT_FORMATS):
        assert _mismatch(data, fmt) is None, fmt


def test_text_is_refused_as_a_binary_format() -> None:
    data = PROSE.encode("utf-8")
    for fmt in ("pdf", "docx", "pptx", "xlsx", "parquet"):
        err = _mismatch(data, fmt)
        assert err is not None
        assert err.message == f"the file is text, not {fmt}"


def test_the_encoding_option_makes_nul_heavy_text_text() -> None:
    # UTF-16 whose code units decode as control characters in every other reading: only the option names it.
    data = "\u0100\u0101\u0102\u0103 \u0104\u0105\n".encode("utf-16-le") * 50
    assert looks_like_text(data, encoding="utf-16-le")
    assert _mismatch(data, "text", encoding="utf-16-le") is None
    assert _mismatch(data, "text", encoding="utf_16_le") is None


def test_empty_files() -> None:
    assert sniff(b"") is None
    for fmt in sorted(TEXT_FORMATS):
        assert _mismatch(b"", fmt) is None
    for fmt in ("pdf", "docx", "pptx", "xlsx", "parquet"):
        err = _mismatch(b"", fmt)
        assert err is not None
        assert err.code == ErrorCode.CORRUPT


def test_pdf_signature_edge_cases() -> None:
    pdf = _read(SAMPLES["pdf"])
    prefixed = b"junk before the header\r\n" + pdf
    assert _mismatch(prefixed, "pdf") is None  # readers accept the header within the first KiB
    prose = b"# About PDF\n\nA PDF file starts with `%PDF-1.7` and ends with `%%EOF`.\n"
    assert sniff(prose) == "text"
    assert _mismatch(prose, "markdown") is None
    assert _mismatch(b"BMW and BMX are words, not bitmaps.\n", "text") is None
    err = _mismatch(pdf, "text")
    assert err is not None
    assert err.message == "the file is pdf, not text"


def test_the_decision_reads_only_the_start() -> None:
    big = os.urandom(4096) + PROSE.encode() * 40_000  # ~3.4 MB of text after 4 KiB of random bytes
    assert sniff(big) == "binary"
    assert sniff(PROSE.encode() * 40_000 + os.urandom(4096)) == "text"


def test_unknown_format_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="not a contract format"):
        check_format(b"x", "docm")


def _module_extract(fmt: str, data: bytes) -> object:
    import importlib

    from extract_fn.formats import MODULES
    from extract_fn.formats.base import ExtractRequest

    return importlib.import_module(MODULES[fmt]).extract(data, ExtractRequest(format=fmt))


_LEGACY = {
    "doc": ("WordDocument", "a Word 97-2003 document (.doc)"),
    "xls": ("Workbook", "an Excel 97-2003 workbook (.xls)"),
    "ppt": ("PowerPoint Document", "a PowerPoint 97-2003 presentation (.ppt)"),
}


@pytest.mark.parametrize("kind", sorted(_LEGACY))
@pytest.mark.parametrize("fmt", ["docx", "pptx", "xlsx"])
def test_a_legacy_office_file_sent_as_ooxml_is_named_not_called_encrypted(kind: str, fmt: str) -> None:
    """Every compound file used to be "encrypted (password-protected)" to docx, pptx and xlsx: a .doc renamed .docx
    sent its user after a password it never had. Its directory names what it is."""
    from tests.ole_files import compound_file

    stream, description = _LEGACY[kind]
    # The stream's own text names the encrypted package's stream too, at a sector's start: not an entry.
    data = compound_file([("\x05SummaryInformation", b""), (stream, "EncryptedPackage\0".encode("utf-16-le"))])
    assert sniff(data) == kind
    err = _mismatch(data, fmt)
    assert err is not None
    assert err.code is ErrorCode.FORMAT_MISMATCH
    assert err.message == f"the file is {description}, not {fmt}"
    with pytest.raises(ExtractionError) as info:  # the module alone (the CLI, the corpus snapshot) says the same
        _module_extract(fmt, data)
    assert (info.value.code, info.value.message) == (err.code, err.message)


def test_an_encrypted_ooxml_file_is_left_to_the_module_which_says_so() -> None:
    from tests.ole_files import compound_file

    data = compound_file([("EncryptionInfo", b"\x04\x00\x04\x00"), ("EncryptedPackage", b"\x10" + b"\0" * 7)])
    assert sniff(data) == "ole_encrypted"
    assert _mismatch(data, "docx") is None
    with pytest.raises(ExtractionError) as info:
        _module_extract("docx", data)
    assert info.value.code is ErrorCode.CORRUPT
    assert "encrypted (password-protected)" in info.value.message
    assert _mismatch(compound_file([("Contents", b"x")]), "docx") is not None  # another compound file: refused


def test_an_xlsb_workbook_is_not_taken_for_xlsx() -> None:
    """Its content type (``ms-excel.sheet.binary.macroEnabled.main``) and its xl/ folder looked like xlsx, and the
    module answered that xl/workbook.bin is not well-formed XML."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(
            "[Content_Types].xml",
            '<Types><Override PartName="/xl/workbook.bin" ContentType="application/'
            'vnd.ms-excel.sheet.binary.macroEnabled.main"/></Types>',
        )
        zf.writestr("xl/workbook.bin", b"\x83\x01\x00")
        zf.writestr("xl/worksheets/sheet1.bin", b"\x81\x01\x00")
    data = buf.getvalue()
    assert sniff(data) == "xlsb"
    err = _mismatch(data, "xlsx")
    assert err is not None
    assert err.message == "the file is an Excel binary workbook (.xlsb), not xlsx"
