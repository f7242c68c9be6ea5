"""The one way the extractor reads XML: every OOXML part (docx, pptx, xlsx, relationships, content types).

ECMA-376 Part 2 (Open Packaging Conventions, "XML usage", [M1.18]) forbids DTD declarations in package parts and tells
readers to treat one as an error, so a part that declares a DTD is ``corrupt``, with one message that names the part
and nothing else (not what the DTD names, so the answer never depends on what exists on the host). A billion-laughs
bomb needs a DTD, so it is refused by the same rule. Two locks, each enough on its own:

1. ``refuse_dtd`` reads the part's prolog (what precedes the root element: the XML declaration, comments,
   processing instructions, white space) before any parser sees the part, decoded as an XML parser would (a BOM;
   UTF-16/32 without one from its first bytes; else the declaration's ``encoding``; and always also byte for byte as
   ASCII, so a declaration that lies about the encoding cannot hide a DOCTYPE), and refuses a ``<!DOCTYPE``.
2. ``parser()`` is built so that libxml2 can load nothing even if 1 were bypassed: ``no_network``, ``load_dtd``,
   ``resolve_entities``, ``dtd_validation`` and ``attribute_defaults`` off, a resolver that refuses every external
   load (a file, a URL, ``/dev/zero``) before libxml2 opens it, and a check after parsing that the tree has no DTD.
   It does not pass ``collect_ids=False``: with libxml2 before 2.15 lxml implements that option by setting
   ``XML_SKIP_IDS`` in the parser context's ``loadsubset``, and libxml2 loads a declared external subset (and
   external parameter entities) whenever ``loadsubset`` is non-zero, whatever ``load_dtd`` says.

``huge_tree`` stays off, so libxml2 keeps its own limits (nesting depth 256, 10 MB text nodes) and a hostile part
fails as ``corrupt``. lxml is imported on first use, so modules that only need the builder import nothing big.
"""

from __future__ import annotations

import codecs
import functools
import re
from collections.abc import Callable
from typing import IO, Any, Final

from extract_fn.text_decoding import known_codec, sniff_bom
from shared.contract import ErrorCode, ExtractionError

FIRST_CHUNK: Final = 512  # one read holds any real part's prolog (an XML declaration is ~60 bytes)
CHUNK: Final = 64 * 1024
_XML_SPACE: Final = " \t\r\n\ufeff"
# A prolog of white space, processing instructions and comments, then an element's "<": no DOCTYPE before it.
_PLAIN_PROLOG: Final = re.compile(rb"(?:\xef\xbb\xbf)?(?:[ \t\r\n]+|<\?.*?\?>|<!--.*?-->)*<(?![!?])", re.DOTALL)
_DECL_ENCODING: Final = re.compile(rb"""<\?xml[^>]{0,512}?encoding\s*=\s*["']([A-Za-z0-9._:-]{1,64})["']""")

# libxml2's depth limit without XML_PARSE_HUGE (``xmlParserMaxDepth``), and how its error starts (the rest names an
# option the file's sender cannot set).
LIBXML2_MAX_DEPTH: Final = 256
_TOO_DEEP: Final = "Excessive depth in document"

_PARSER: Any = None


class DtdRefused(ExtractionError):
    """A part declares a DTD: the whole file is refused, so a module that skips a bad part must re-raise this."""


def dtd_refused(part: str, kind: str) -> DtdRefused:
    """The one answer for a part that declares a DTD (whatever it names, in every OOXML format)."""
    return DtdRefused(
        ErrorCode.CORRUPT,
        f"part {part} of the {kind} file declares a DTD (<!DOCTYPE>); DTDs are not allowed in OOXML packages "
        "(ECMA-376 Part 2), so the file is refused: save it again from an office application",
    )


# ---------------------------------------------------------------------------------------------------------------
# Lock 1: the prolog, before any parser


def _codec(head: bytes) -> str:
    """The codec an XML parser would decode the part with, from its first bytes (XML 1.0 Appendix F)."""
    bom = sniff_bom(head)
    if bom is not None:
        return bom[0]  # the decoded BOM is white space to the scan
    if head[:4] == b"\x00\x00\x00<":
        return "utf-32-be"
    if head[:4] == b"<\x00\x00\x00":
        return "utf-32-le"
    if len(head) >= 2 and head[0] == 0 and head[1] != 0:
        return "utf-16-be"
    if len(head) >= 2 and head[0] != 0 and head[1] == 0:
        return "utf-16-le"
    if head[:4] == b"\x4c\x6f\xa7\x94":  # "<?xm" in EBCDIC
        head = head.decode("cp037", "replace").encode("ascii", "replace")
    m = _DECL_ENCODING.match(head)
    return _declared_codec(m.group(1)) if m is not None else "utf-8"


@functools.lru_cache(maxsize=64)
def _declared_codec(label: bytes) -> str:
    return known_codec(label.decode("ascii")) or "utf-8"


class _PrologScan:
    """Decoded text in, in pieces: whether a DOCTYPE comes before the root element (None: not known yet)."""

    def __init__(self, codec: str) -> None:
        self._decoder = codecs.getincrementaldecoder(codec)(errors="replace")
        self._buf = ""
        self._until = ""  # the end of the comment or processing instruction being skipped

    def feed(self, data: bytes, final: bool) -> bool | None:
        try:
            buf = self._buf + self._decoder.decode(data, final)
        except (UnicodeError, ValueError, TypeError):  # a codec that fails even with errors="replace"
            return False
        while True:
            if self._until:
                end = buf.find(self._until)
                if end < 0:  # keep only what could start the end marker: a long comment costs no memory
                    self._buf = buf[-(len(self._until) - 1) :]
                    return False if final else None
                buf, self._until = buf[end + len(self._until) :], ""
            buf = buf.lstrip(_XML_SPACE)
            if len(buf) < 9 and not final:  # too short to tell "<!DOCTYPE" from "<!--" or an element
                self._buf = buf
                return None
            if buf.startswith("<?"):
                buf, self._until = buf[2:], "?>"
            elif buf.startswith("<!--"):
                buf, self._until = buf[4:], "-->"
            else:
                return buf[:9].upper() == "<!DOCTYPE"


def _declares_dtd(read: Callable[[int], bytes]) -> bool:
    first = read(FIRST_CHUNK)
    codec = _codec(first)
    if codec == "utf-8" and _PLAIN_PROLOG.match(first):  # the common case, in one regex: UTF-8 makes ASCII only
        return False  # from ASCII bytes, so these bytes are the text's prolog
    scans = [_PrologScan(codec) for codec in dict.fromkeys((codec, "latin-1"))]
    chunk = first
    while True:
        final = not chunk
        answers = [scan.feed(chunk, final) for scan in scans]
        if any(answers):
            return True
        scans = [scan for scan, answer in zip(scans, answers, strict=True) if answer is None]
        if not scans or final:
            return False
        chunk = read(CHUNK)


def refuse_dtd(source: bytes | memoryview | IO[bytes], part: str, kind: str) -> None:
    """Raise ``dtd_refused`` when the part (its bytes, or a stream read no further than its prolog) declares a DTD."""
    if isinstance(source, bytes):
        first = source[:FIRST_CHUNK]
        if _codec(first) == "utf-8" and _PLAIN_PROLOG.match(first):  # ``_declares_dtd``'s first test, without its
            return  # reader: nearly every part is decided here
    if isinstance(source, bytes | memoryview):
        view, pos = memoryview(source), 0

        def read(n: int) -> bytes:
            nonlocal pos
            pos += n
            return bytes(view[pos - n : pos])

        found = _declares_dtd(read)
    else:
        found = _declares_dtd(source.read)
    if found:
        raise dtd_refused(part, kind)


# ---------------------------------------------------------------------------------------------------------------
# Lock 2: a parser that loads nothing


class _ExternalLoadRefused(Exception):
    """Raised by the parser's resolver: libxml2 asked for something outside the part."""


def refusing_resolver() -> Any:
    """An lxml resolver that refuses every load libxml2 asks for (a DTD, an entity, a file, a URL)."""
    from lxml import etree

    class RefuseAll(etree.Resolver):  # type: ignore[misc]
        def resolve(self, url: str | None, pubid: str | None, context: Any) -> Any:
            raise _ExternalLoadRefused

    return RefuseAll()


def parser() -> Any:
    """The one lxml parser (made on first use; a worker is single-threaded, so one instance serves every parse)."""
    global _PARSER  # noqa: PLW0603 - a per-process singleton
    if _PARSER is None:
        from lxml import etree

        parser = etree.XMLParser(
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            dtd_validation=False,
            attribute_defaults=False,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
        )
        parser.resolvers.add(refusing_resolver())
        _PARSER = parser
    return _PARSER


def parse(data: bytes, part: str, kind: str) -> Any:
    """The root element of a part, or the contract's error for a part that is not safe, well-formed XML."""
    refuse_dtd(data, part, kind)
    from lxml import etree

    try:
        root = etree.fromstring(data, parser())
    except _ExternalLoadRefused:
        raise dtd_refused(part, kind) from None
    except etree.XMLSyntaxError as exc:
        if str(exc).startswith(_TOO_DEEP):
            raise ExtractionError(
                ErrorCode.CORRUPT,
                f"part {part} of the {kind} file nests its XML elements more than {LIBXML2_MAX_DEPTH} levels deep, "
                "past the XML parser's limit (nested tables or content controls this deep cannot be read here)",
            ) from None
        raise ExtractionError(
            ErrorCode.CORRUPT, f"part {part} of the {kind} file is not well-formed XML: {exc}"
        ) from None
    except (ValueError, MemoryError) as exc:
        raise ExtractionError(ErrorCode.CORRUPT, f"part {part} of the {kind} file cannot be parsed: {exc}") from None
    if root is None:
        raise ExtractionError(ErrorCode.CORRUPT, f"part {part} of the {kind} file is empty")
    docinfo = root.getroottree().docinfo
    if docinfo.internalDTD is not None or docinfo.externalDTD is not None:
        raise dtd_refused(part, kind)
    return root
