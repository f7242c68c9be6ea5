"""How many cells a worksheet's bounding box holds, read from its XML before calamine allocates that box.

calamine builds a sheet as one dense array from the first to the last cell (``Range::from_sparse``, 32 bytes a
cell) and aborts the process when the allocation fails: a 4.7 KB sheet with cells at A1 and XFD1048576 asks for
512 GiB. ``box_cells(xml, limit)`` answers with the box's cell count when it may pass ``limit``, else ``None``.

The normal case costs two literal-prefixed scans of the part (measured in docs/extractor.md), which prove the box
small without reading every reference: every cell tag starts ``<c r="`` (so no cell is placed by position and every
reference is written one way), no cell tag is prefixed, and no reference is past a tier whose box is within ``limit``
(columns A-Z and rows below 1,000,000; else columns A-ZZ and rows below 10,000). Anything else (cells without
``r``, prefixed tags, other attribute syntax, far references) takes the exact pass, which places every cell as
calamine does (a cell's ``r``, else the next column; a row's ``r``, else the next row; a self-closing ``<c/>`` holds
no value and is not in calamine's box, which matters: gnumeric writes styled empty cells out to row 1,048,574):
about 2.5 s for the 37 MB benchmark sheet, paid only by such files.
"""

from __future__ import annotations

import re
from typing import Final

# A cell tag that does not start ``<c r="`` (no r, r not first, other whitespace), or a prefixed cell tag: then the
# plain scan cannot see every cell's place.
_ODD_CELL: Final = re.compile(rb'<c(?:>|/>|(?! r=")\s)')
# One pass for the common case: a cell tag other than <c r="A1"> .. <c r="Z999999"> (an odd tag, or a reference past
# column Z or row 999,999).
_NOT_NARROW: Final = re.compile(rb'<c(?:[>/\t\r\n]| (?!r="[A-Za-z][0-9]{1,6}"))')
_PREFIXED_CELL: Final = re.compile(rb":c[\s/>]")
# Tiers the plain scan proves, over every cell's reference.
_WIDE: Final = re.compile(rb'<c r="[A-Za-z]{2}')  # a column past Z
_WIDER: Final = re.compile(rb'<c r="[A-Za-z]{3}')  # a column past ZZ
_DEEPER: Final = re.compile(rb'<c r="[A-Za-z]{1,2}[0-9]{5}')  # with columns A-ZZ: a row past 9,999
NARROW_BOX: Final = 26 * 999_999
WIDE_BOX: Final = 702 * 9_999
_TAG: Final = re.compile(
    rb"<(?:[A-Za-z_][\w.-]*:)?(row|c)(?=[\s/>])(?:[^>]*?\sr\s*=\s*[\"']\s*([A-Za-z]{0,3})([0-9]{1,10}))?[^>]*?(/?)>"
)


def _column(letters: bytes) -> int:
    n = 0
    for ch in letters.upper():
        n = n * 26 + (ch - 64)
    return n


def _exact(xml: bytes) -> int:
    """The box's cells, placing every cell as calamine does."""
    row = col = 0
    rmin = cmin = 1 << 62
    rmax = cmax = -1
    for tag, letters, number, empty in _TAG.findall(xml):
        if tag == b"row":
            row = int(number) if number and not letters else row + 1
            col = 0
            continue
        if letters and number:
            col, row = _column(letters), int(number)
        else:
            col += 1
        if empty:  # <c .../> holds no value: calamine leaves it out of the box (styled cells far out are common)
            continue
        rmin = min(rmin, row)
        rmax = max(rmax, row)
        cmin = min(cmin, col)
        cmax = max(cmax, col)
    if rmax < 0:
        return 0
    return (rmax - rmin + 1) * (cmax - cmin + 1)


def _within_tiers(xml: bytes, limit: int) -> bool:
    """Whether the plain scan proves the box within ``limit`` (see the module docstring)."""
    if _PREFIXED_CELL.search(xml):
        return False
    if not _NOT_NARROW.search(xml):  # every cell <c r="...">, columns A-Z, rows below 1,000,000
        return limit >= NARROW_BOX
    if _ODD_CELL.search(xml) or not _WIDE.search(xml):  # odd cells, or a row past 999,999 in columns A-Z
        return False
    return limit >= WIDE_BOX and not _WIDER.search(xml) and not _DEEPER.search(xml)


def box_cells(xml: bytes, limit: int) -> int | None:
    """The sheet's bounding-box cell count when it may be over ``limit`` (exact then), else None (proven within)."""
    if _within_tiers(xml, limit):
        return None
    cells = _exact(xml)
    return cells if cells > limit else None
