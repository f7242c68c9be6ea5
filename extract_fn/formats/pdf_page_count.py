"""The page count pdfium will report for a PDF, read from the file's bytes before pdfium parses it.

pdfium (``CPDF_Document``) takes the page count from the root page tree node's ``/Count`` when that is a number
from 1 to PDFIUM_TRUSTED_COUNT_MAX, and walks the tree only otherwise (checked on the installed build, 0 and
1,048,575 up are walked; a node without ``/Kids`` is one page). Opening a file whose page tree lists one page a
million times (6 MB of ``/Kids``) costs pdfium 0.25 s before it can say how many pages there are; finding the same
``/Count`` here takes a few searches of the bytes: the last ``startxref``, the trailer (or cross-reference stream
dictionary) it points to, its ``/Root``, the catalog's ``/Pages`` and that node's ``/Count``, each object found as
its last ``N G obj`` in the file (an incremental update appends the newer one).

Anything else (a linearized file, whose count pdfium reads from its linearization dictionary; an encrypted file,
which pdfium may not open at all; objects inside object streams; an indirect or non-integer ``/Count``; a key found
twice; a cross-reference offset that does not point at one) gives None, and pdfium counts the pages as before. So a
count is returned only where pdfium reports the same one (a test holds the two equal on every corpus PDF).
"""

from __future__ import annotations

import re
from typing import Final

# The largest root /Count pdfium takes as it is (CPDF_Document's kPageMaxNum is 0xFFFFF, exclusive).
PDFIUM_TRUSTED_COUNT_MAX: Final = 0xFFFFF - 1
_WINDOW: Final = 4096  # bytes of a dictionary searched when its end is not found sooner
_STARTXREF: Final = re.compile(rb"startxref\s+(\d+)")
_XREF_STREAM_OBJ: Final = re.compile(rb"\s*\d+\s+\d+\s+obj\b")
_ROOT: Final = re.compile(rb"/Root\s+(\d+)\s+(\d+)\s+R\b")
_PAGES: Final = re.compile(rb"/Pages\s+(\d+)\s+(\d+)\s+R\b")
_COUNT: Final = re.compile(rb"/Count\s+(\d+)(?=\s*[/>])")
_KIDS: Final = re.compile(rb"/Kids\b")
_DELIMITERS: Final = b" \t\r\n\f\x00%)>]}"  # what may stand before ``N G obj``


def _one(pattern: re.Pattern[bytes], text: bytes) -> re.Match[bytes] | None:
    """The only match of ``pattern`` in ``text``; None for none or more than one."""
    matches = pattern.finditer(text)
    first = next(matches, None)
    return first if first is not None and next(matches, None) is None else None


def _object_body(data: bytes, number: int, generation: int) -> bytes | None:
    """The bytes of the last ``number generation obj`` in ``data`` up to its ``endobj`` or ``stream``."""
    key = b"%d %d obj" % (number, generation)
    end = len(data)
    while True:
        at = data.rfind(key, 0, end)
        if at < 0:
            return None
        if at == 0 or data[at - 1] in _DELIMITERS:
            break
        end = at
    start = at + len(key)
    stop = data.find(b"endobj", start)
    if stop < 0:
        return None
    stream = data.find(b"stream", start, stop)
    return data[start : stream if stream >= 0 else stop]


def _trailer(data: bytes) -> bytes | None:
    """The trailer dictionary the last ``startxref`` points to (the cross-reference stream's dictionary for one)."""
    at = data.rfind(b"startxref")
    if at < 0:
        return None
    m = _STARTXREF.match(data, at)
    if m is None:
        return None
    offset = int(m.group(1))
    if offset >= at:
        return None
    if data.startswith(b"xref", offset):
        trailer = data.find(b"trailer", offset, at)
        return data[trailer:at] if trailer >= 0 else None
    if _XREF_STREAM_OBJ.match(data, offset) is None:
        return None
    stream = data.find(b"stream", offset, min(at, offset + _WINDOW))
    return data[offset:stream] if stream >= 0 else None


def declared_page_count(data: bytes) -> int | None:
    """The page count pdfium will report for ``data``, when it can be read from the bytes; else None."""
    if b"/Linearized" in data[:2048]:
        return None
    trailer = _trailer(data)
    if trailer is None or b"/Encrypt" in trailer:  # an encrypted file is answered by pdfium (a password, ...)
        return None
    root = _one(_ROOT, trailer)
    if root is None:
        return None
    catalog = _object_body(data, int(root.group(1)), int(root.group(2)))
    pages = _one(_PAGES, catalog) if catalog is not None else None
    if pages is None:
        return None
    node = _object_body(data, int(pages.group(1)), int(pages.group(2)))
    if node is None or _KIDS.search(node) is None:
        return None
    count = _one(_COUNT, node)
    if count is None:
        return None
    n = int(count.group(1))
    return n if 1 <= n <= PDFIUM_TRUSTED_COUNT_MAX else None
