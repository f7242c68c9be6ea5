"""What a file's bytes are, and whether they can be the format the server asked for.

``sniff(data)`` names what the bytes are: ``pdf``, ``docx``, ``pptx``, ``xlsx``, ``parquet``, ``zip`` (a zip that is
no OOXML package), ``xlsb`` (an Excel binary workbook), ``ole_encrypted`` (a password-protected OOXML file, which is
an OLE compound file), ``doc``, ``xls``, ``ppt`` (legacy Office files), ``ole`` (another compound file), an image
(``png``, ``jpeg``, ``gif``, ``webp``, ``tiff``, ``bmp``), ``gzip``, ``binary`` (other binary data), ``html`` (text
that is a whole HTML document: it opens with a ``<!DOCTYPE html ...>`` or ``<html ...>`` tag, after a byte-order mark,
white space, an XML declaration and comments, and markup follows that tag: another tag, a comment, or the end of the
file, not prose) or ``text``; ``None`` for no bytes at all.

``check_format(data, fmt)`` raises ``format_mismatch`` when the content is plainly another format than the one asked
for. It only decides what it can decide from signatures and byte statistics, and leaves every doubtful case to the
format module, which answers ``corrupt`` (or ``encoding``) for a damaged file of the right kind:

- a text format (markdown, html, text, sql, toml, csv) refuses any recognised binary format and binary data. Text in
  any encoding passes: UTF-8, UTF-16/32 with or without a byte-order mark, legacy single- and multi-byte codecs,
  ISO-2022 (which uses ESC), and text with a stray NUL or control byte.
- the text formats are told apart only where the bytes say so beyond doubt: a whole HTML document is refused as
  every other text format ("the file is html, not markdown"), except a markdown file wrapped in an HTML document:
  one whose sample holds a markdown block outside the markup (a line, not in a tag, comment, script, style, pre or
  textarea, that opens an ATX heading ``# Title``, a list item ``- x`` / ``1. x`` or a code fence) is read as the
  markdown it is (CommonMark reads the HTML around it as HTML blocks). A file that opens with the doctype and goes
  on in prose ("<!DOCTYPE html> is the first line of ...") is no HTML document. Any other text is read as the
  format asked for (a markdown file sent as text is text; HTML fragments are valid markdown), and a parser that
  cannot read it answers ``corrupt`` (TOML).
- pdf refuses another recognised format and plain text; a damaged PDF without its header is left to the module.
- docx, pptx and xlsx refuse each other and every other recognised format, legacy Office files (.doc, .xls, .ppt:
  the OLE directory names their main stream) and .xlsb included; a zip that is no OOXML package and an encrypted
  OOXML file are left to the module, which says what is wrong with them.
- parquet refuses every other recognised format and text.
- an empty file of a binary format is ``corrupt`` here (there is nothing for a parser to read).

Sniffing reads at most a few KiB from the start and the zip central directory, so it costs the same on any size.
"""

from __future__ import annotations

import codecs
import io
import re
import struct
import unicodedata
from typing import Final

from extract_fn.text_decoding import sniff_bom
from shared.contract import FORMATS, TEXT_FORMATS, ErrorCode, ExtractionError

SAMPLE_BYTES: Final = 4096  # how much of the start the text/binary decision looks at
PDF_HEADER_WINDOW: Final = 1024  # readers accept junk before %PDF- within the first KiB
MAX_ZIP_NAMES: Final = 5000  # central-directory entries (or local headers) read to tell OOXML kinds apart
LOCAL_SCAN_BYTES: Final = 4 * 1024 * 1024  # how far a truncated zip is scanned for local file headers
MAX_CONTENT_TYPES_BYTES: Final = 1024 * 1024

OOXML_KINDS: Final = ("docx", "pptx", "xlsx")
IMAGE_KINDS: Final = ("png", "jpeg", "gif", "webp", "tiff", "bmp")

_DESCRIPTIONS: Final[dict[str, str]] = {
    "pdf": "pdf",
    "docx": "docx",
    "pptx": "pptx",
    "xlsx": "xlsx",
    "parquet": "parquet",
    "zip": "a zip archive that is no docx, pptx or xlsx package",
    "ole": "an OLE compound file that is no Office document",
    "ole_encrypted": "a password-protected (encrypted) Office file",
    "doc": "a Word 97-2003 document (.doc)",
    "xls": "an Excel 97-2003 workbook (.xls)",
    "ppt": "a PowerPoint 97-2003 presentation (.ppt)",
    "xlsb": "an Excel binary workbook (.xlsb)",
    "png": "a PNG image",
    "jpeg": "a JPEG image",
    "gif": "a GIF image",
    "webp": "a WebP image",
    "tiff": "a TIFF image",
    "bmp": "a BMP image",
    "gzip": "gzip-compressed data",
    "binary": "binary data",
    "html": "html",
    "text": "text",
}

OLE_MAGIC: Final = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
_ZIP_LOCAL = b"PK\x03\x04"
_ZIP_CENTRAL = b"PK\x01\x02"
_ZIP_END = b"PK\x05\x06"
_ZIP_STARTS: Final = (_ZIP_LOCAL, _ZIP_END, b"PK\x07\x08")

# Signatures of other binary formats: refused as text, left to the module otherwise.
_BINARY_PREFIXES: Final = (
    b"\x7fELF",
    b"7z\xbc\xaf\x27\x1c",
    b"Rar!\x1a\x07",
    b"\xfd7zXZ\x00",
    b"\x28\xb5\x2f\xfd",  # zstd
    b"SQLite format 3\x00",
    b"\x00asm",
    b"\xca\xfe\xba\xbe",  # Java class / Mach-O fat
    b"\xfe\xed\xfa\xce",
    b"\xfe\xed\xfa\xcf",
    b"\xce\xfa\xed\xfe",
    b"\xcf\xfa\xed\xfe",
    b"OggS\x00",
    b"fLaC\x00\x00\x00",
    b"\x00\x00\x01\x00\x01\x00",  # ICO with one image
    b"wOFF",
    b"wOF2",
    b"\x04\x22\x4d\x18",  # lz4 frame
)
_BZIP2 = re.compile(rb"BZh[1-9]1AY&SY")

# Controls that do not occur in text (tab, LF, VT, FF, CR and ESC, which ISO-2022 uses, do).
_TEXT_CONTROLS: Final = frozenset({9, 10, 11, 12, 13, 27})
_BAD_BYTES: Final = bytes(b for b in range(256) if (b < 32 and b not in _TEXT_CONTROLS) or b == 127)
_GOOD_BYTES: Final = bytes(b for b in range(256) if b not in _BAD_BYTES)
_BAD_CHARS: Final = frozenset(chr(b) for b in _BAD_BYTES)

# How many implausible characters a decoding may show and still be read as text.
_UTF8_MAX_BAD = 0.25  # valid UTF-8 is itself strong evidence of text
_WIDE_MAX_BAD = 0.05  # UTF-16/32 decode random bytes now and then: also count unassigned code points
_BYTE_MAX_BAD = 0.08  # single-byte view: real text has ~0 controls, random bytes ~10.5%

_BOMS: Final = (
    codecs.BOM_UTF8,
    codecs.BOM_UTF32_LE,
    codecs.BOM_UTF32_BE,
    codecs.BOM_UTF16_LE,
    codecs.BOM_UTF16_BE,
)


def describe(kind: str) -> str:
    return _DESCRIPTIONS.get(kind, kind)


def sniff(data: bytes) -> str | None:
    """What the bytes are (see the module doc), or None for an empty file."""
    if not data:
        return None
    kind = _signature(data, lenient_pdf=False)
    if kind is not None:
        return kind
    if not looks_like_text(data):
        return "binary"
    return "html" if is_html_document(data) else "text"


def check_format(data: bytes, fmt: str, *, encoding: str | None = None) -> None:
    """Raise ``format_mismatch`` if ``data`` is plainly not ``fmt`` (``corrupt`` if a binary format is empty).

    ``encoding`` is the request's codec option, if any: text in that codec is text even when it holds NUL bytes.
    """
    if fmt not in FORMATS:
        raise ValueError(f"{fmt!r} is not a contract format")
    if not data:
        if fmt not in TEXT_FORMATS:
            raise ExtractionError(ErrorCode.CORRUPT, f"the file is empty (0 bytes): there is no {fmt} to read")
        return
    kind = _signature(data, lenient_pdf=fmt == "pdf")
    if fmt in TEXT_FORMATS:
        if kind is None:
            if not looks_like_text(data, encoding=encoding):
                kind = "binary"
            elif fmt != "html" and is_html_document(data, encoding=encoding, markdown_inside=fmt == "markdown"):
                kind = "html"
            else:
                return
        raise mismatch(kind, fmt)
    if kind is None:
        kind = ("html" if is_html_document(data) else "text") if looks_like_text(data) else "binary"
    if kind in (fmt, "binary"):  # unknown binary: let the parser say what is wrong with it
        return
    if fmt in OOXML_KINDS and kind in ("zip", "ole_encrypted"):  # not OOXML, or encrypted: the module says which
        return
    raise mismatch(kind, fmt)


def mismatch(kind: str, fmt: str) -> ExtractionError:
    """``format_mismatch``: the file is ``kind`` (a name ``sniff`` gives), not ``fmt``."""
    return ExtractionError(ErrorCode.FORMAT_MISMATCH, f"the file is {describe(kind)}, not {fmt}")


# ---------------------------------------------------------------------------------------------------------------
# Signatures


def _signature(data: bytes, *, lenient_pdf: bool) -> str | None:
    """The kind a signature names, or None when no known signature matches."""
    head = data[:32]
    if head.startswith(b"%PDF-"):
        return "pdf"
    if head.startswith(_ZIP_STARTS):
        return _ooxml_kind(data) or "zip"
    if head.startswith(OLE_MAGIC):
        return ole_kind(data)
    if len(data) >= 12 and head[:4] in (b"PAR1", b"PARE") and data[-4:] == head[:4]:
        return "parquet"
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if head.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "gif"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "webp"
    if head.startswith((b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")):
        return "tiff"
    if _is_bmp(head):
        return "bmp"
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(_BINARY_PREFIXES) or _BZIP2.match(head) or _is_media(head):
        return "binary"
    pos = data.find(b"%PDF-", 0, PDF_HEADER_WINDOW + 5)
    if pos > 0 and (lenient_pdf or (b"%%EOF" in data[-1024:] and not looks_like_text(data))):
        return "pdf"
    return None


def _is_bmp(head: bytes) -> bool:
    # "BM", file size, two reserved zero words, pixel offset, then a DIB header of a known size.
    if len(head) < 18 or not head.startswith(b"BM") or head[6:10] != b"\x00\x00\x00\x00":
        return False
    dib = struct.unpack_from("<I", head, 14)[0]
    return dib in (12, 16, 40, 52, 56, 64, 108, 124)


def _is_media(head: bytes) -> bool:
    if head[4:8] == b"ftyp":  # ISO base media: mp4, mov, heic, avif
        return True
    return head.startswith(b"RIFF") and head[8:12] in (b"WAVE", b"AVI ", b"ACON")


# ---------------------------------------------------------------------------------------------------------------
# OLE compound files

# The stream that names what an OLE compound file holds, first match wins: an encrypted OOXML package (MS-OFFCRYPTO
# keeps it in "EncryptedPackage"), or the main stream of a legacy Word, Excel (BIFF8, or BIFF5's "Book") or
# PowerPoint file.
_OLE_STREAMS: Final = (
    ("EncryptedPackage", "ole_encrypted"),
    ("WordDocument", "doc"),
    ("Workbook", "xls"),
    ("Book", "xls"),
    ("PowerPoint Document", "ppt"),
)
_OLE_ENTRY: Final = 128  # a directory entry's size; entries sit in sectors of 512 or 4,096 bytes after the header
_OLE_MAX_HITS: Final = 10_000  # occurrences of a name looked at (the file's own text may hold it too)


def ole_kind(data: bytes) -> str:
    """What an OLE compound file holds: ``ole_encrypted`` (a password-protected OOXML file), ``doc``, ``xls``,
    ``ppt``, or ``ole`` (something else), from the names of its directory entries."""
    return next((kind for name, kind in _OLE_STREAMS if _has_ole_entry(data, name)), "ole")


def _has_ole_entry(data: bytes, name: str) -> bool:
    """Whether a directory entry of ``data`` names a stream or storage ``name``: its UTF-16 name and terminator at
    an entry's start (a multiple of 128 bytes into the file), the name's size in bytes after the 64 bytes of the
    name field, then the type 1 (storage) or 2 (stream). Document text can hold the name, but not in that shape."""
    raw = name.encode("utf-16-le") + b"\0\0"
    size = struct.pack("<H", len(raw))
    at = data.find(raw, 512)
    for _ in range(_OLE_MAX_HITS):
        if at < 0:
            return False
        if at % _OLE_ENTRY == 0 and data[at + 64 : at + 66] == size and data[at + 66 : at + 67] in (b"\1", b"\2"):
            return True
        at = data.find(raw, at + 1)
    return False


# ---------------------------------------------------------------------------------------------------------------
# Zip packages


def _ooxml_kind(data: bytes) -> str | None:
    """docx, pptx or xlsx from the package's part names (its [Content_Types].xml when they disagree)."""
    names = _central_names(data)
    kinds = _kinds_from_names(names)
    if not kinds:  # truncated (no central directory) or damaged: the local headers still name the parts
        names = names + _local_names(data)
        kinds = _kinds_from_names(names)
    if len(kinds) > 1:
        return _kind_from_content_types(data)
    if not kinds:
        return None
    kind = kinds.pop()
    if kind == "xlsx" and _is_xlsb(names):
        return "xlsb"
    return kind


_TOP_KINDS: Final = {"word": "docx", "ppt": "pptx", "xl": "xlsx"}


def _is_xlsb(names: list[bytes]) -> bool:
    """An Excel binary workbook: its package has ``xl/workbook.bin`` and no ``xl/workbook.xml``."""
    lowered = {bytes(name).lower().lstrip(b"/") for name in names}
    return b"xl/workbook.bin" in lowered and b"xl/workbook.xml" not in lowered


def _kinds_from_names(names: list[bytes]) -> set[str]:
    """The OOXML kinds the parts' top folders name. A package has a thousand parts in a few folders: each distinct
    top is decoded (UTF-8, bad bytes replaced) and lowercased once. The separators are ASCII, which no UTF-8
    sequence holds (and a replaced bad sequence never swallows), so cutting the bytes first is cutting the text."""
    # bytes(): the body may be a bytearray (the service's buffer) or a map, whose slices are not hashable
    tops = {bytes(name.lstrip(b"/\\").split(b"/", 1)[0].split(b"\\", 1)[0]) for name in names}
    return {kind for top in tops if (kind := _TOP_KINDS.get(_name(top).lower())) is not None}


_CENTRAL_HEAD: Final = struct.Struct("<4s24xHHH")  # a central-directory entry's signature; name, extra, comment sizes


def _central_names(data: bytes) -> list[bytes]:
    end = data.rfind(_ZIP_END, max(0, len(data) - 65_557))
    if end < 0 or end + 22 > len(data):
        return []
    count, cd_size, cd_offset = struct.unpack_from("<HII", data, end + 10)
    if cd_offset + cd_size > end:  # zip64, or a prefixed/damaged archive: the local headers will do
        return []
    names: list[bytes] = []
    pos = cd_offset
    head = _CENTRAL_HEAD.unpack_from
    for _ in range(min(count, MAX_ZIP_NAMES)):
        if pos + 46 > end:
            break
        signature, n, m, k = head(data, pos)
        if signature != _ZIP_CENTRAL:
            break
        names.append(data[pos + 46 : pos + 46 + n])
        pos += 46 + n + m + k
    return names


def _local_names(data: bytes) -> list[bytes]:
    names: list[bytes] = []
    pos = data.find(_ZIP_LOCAL, 0, LOCAL_SCAN_BYTES)
    while pos >= 0 and len(names) < MAX_ZIP_NAMES:
        if pos + 30 <= len(data):
            n = struct.unpack_from("<H", data, pos + 26)[0]
            names.append(data[pos + 30 : pos + 30 + n])
        pos = data.find(_ZIP_LOCAL, pos + 4, LOCAL_SCAN_BYTES)
    return names


def _name(raw: bytes) -> str:
    return raw.decode("utf-8", "replace")


_MAIN_TYPES: Final = (
    ("docx", re.compile(rb"wordprocessingml\.(document|template)\.main\+xml|ms-word\.(document|template)\.macro")),
    ("pptx", re.compile(rb"presentationml\.(presentation|slideshow|template)\.main\+xml|ms-powerpoint\.")),
    ("xlsx", re.compile(rb"spreadsheetml\.(sheet|template)\.main\+xml|ms-excel\.(sheet|template|addin)\.")),
)


def _kind_from_content_types(data: bytes) -> str | None:
    import zipfile  # here: only a zip needs it, and a text format's cold start need not load it (nor pathlib)

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            info = next((i for i in zf.infolist() if i.filename.lower() == "[content_types].xml"), None)
            if info is None or info.file_size > MAX_CONTENT_TYPES_BYTES:
                return None
            with zf.open(info) as fh:
                xml = fh.read(MAX_CONTENT_TYPES_BYTES)
    except Exception:  # any damage: the module will say what it is
        return None
    found = [kind for kind, pattern in _MAIN_TYPES if pattern.search(xml)]
    return found[0] if len(found) == 1 else None


# ---------------------------------------------------------------------------------------------------------------
# Text or binary


def looks_like_text(data: bytes, *, encoding: str | None = None) -> bool:
    """Whether the start of ``data`` reads as text in some encoding (``encoding`` first, when given)."""
    if not data:
        return True
    if data.startswith(_BOMS):
        return True
    sample = data[:SAMPLE_BYTES]
    final = len(data) <= SAMPLE_BYTES
    candidates: list[str] = [encoding] if encoding else []
    candidates += ["utf-8", "utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"]
    for codec in candidates:
        try:
            text = codecs.getincrementaldecoder(codec)("strict").decode(sample, final=final)
        except (UnicodeDecodeError, LookupError, ValueError, TypeError):
            continue
        wide = _canonical(codec).startswith(("utf-16", "utf-32"))
        limit = _WIDE_MAX_BAD if wide else _UTF8_MAX_BAD if _canonical(codec) == "utf-8" else _BYTE_MAX_BAD
        if text and _bad_ratio(text, wide=wide) <= limit:
            return True
    # Any single-byte legacy codec: judge the bytes themselves.
    bad = len(sample.translate(None, _GOOD_BYTES))
    return bad / len(sample) <= _BYTE_MAX_BAD


def _canonical(codec: str) -> str:
    try:
        return codecs.lookup(codec).name
    except LookupError:
        return codec


def _bad_ratio(text: str, *, wide: bool) -> float:
    bad = 0
    for ch in text:
        if ch in _BAD_CHARS or (wide and ord(ch) > 127 and unicodedata.category(ch) in ("Cn", "Co", "Cs")):
            bad += 1
    return bad / len(text)


# ---------------------------------------------------------------------------------------------------------------
# A whole HTML document

_HTML_PROLOG: Final = re.compile(r"\s*(?:<\?xml[^>]*\?>|<!--.*?-->)", re.DOTALL)
_HTML_START: Final = re.compile(r"\s*(?:<!doctype\s+html|<html)(?=[\s>])[^<>]*>", re.IGNORECASE)
_HTML_COMMENT: Final = re.compile(r"\s*<!--.*?-->", re.DOTALL)
_HTML_MARKUP: Final = re.compile(r"\s*(?:</?[A-Za-z]|<[!?])")  # a tag, a declaration or comment, or a PI
_HTML_END: Final = re.compile(r"\s*\Z")


# Markdown inside a document: its markup (raw-text elements, pre, comments, then every tag) blanked, a line that
# opens a markdown block HTML text hardly does: an ATX heading, a bullet or ordered list item, a code fence.
_HTML_OPAQUE: Final = re.compile(
    r"<(script|style|pre|textarea|xmp|template)(?=[\s/>]).*?(?:</\1\s*>|\Z)|<!--.*?(?:-->|\Z)", re.I | re.S
)
_HTML_TAG: Final = re.compile(r"</?[A-Za-z][^>]*>?|<[!?][^>]*>?")
_MARKDOWN_BLOCK: Final = re.compile(r"^ {0,3}(?:#{1,6}[ \t]+\S|[-*+][ \t]+\S|\d{1,9}[.)][ \t]+\S|```|~~~)", re.M)


def is_html_document(data: bytes, *, encoding: str | None = None, markdown_inside: bool = False) -> bool:
    """Whether the text opens as a whole HTML document: a ``<!DOCTYPE html ...>`` or ``<html ...>`` tag, after a
    byte-order mark, white space, an XML declaration and comments, followed by markup (a tag, a comment) or the end
    of the file. A fragment (``<p>``, ``<div>``), which markdown may hold, is not one, nor text that opens with the
    doctype and goes on in prose ("<!DOCTYPE html> is the first line of every page"). With ``markdown_inside``, nor
    a document whose sample holds a markdown block outside its markup (``_MARKDOWN_BLOCK``): markdown wrapped in
    ``<html><body>``."""
    sample = data[:SAMPLE_BYTES]
    text = _head_text(sample, encoding).lstrip("\ufeff")
    pos = 0
    while (m := _HTML_PROLOG.match(text, pos)) is not None and m.end() > pos:
        pos = m.end()
    start = _HTML_START.match(text, pos)
    if start is None:
        return False
    pos = start.end()
    while (m := _HTML_COMMENT.match(text, pos)) is not None:
        pos = m.end()
    if _HTML_MARKUP.match(text, pos) is None:
        return len(sample) == len(data) and _HTML_END.match(text, pos) is not None
    if markdown_inside:
        rest = _HTML_TAG.sub("\x00", _HTML_OPAQUE.sub("\x00", text[pos:]))
        return _MARKDOWN_BLOCK.search(rest) is None
    return True


def _head_text(sample: bytes, encoding: str | None) -> str:
    bom = sniff_bom(sample)
    if bom is not None:
        codec, skip = bom
        return sample[skip:].decode(codec, "ignore")
    if encoding:
        try:
            return codecs.decode(sample, encoding, "ignore")
        except (LookupError, ValueError, TypeError):
            pass
    return sample.decode("latin-1")  # markup is ASCII in every ASCII-compatible encoding
