"""pdfium's per-line and per-character text calls without ctypes' per-argument conversion, for ``pdf_format``.

pypdfium2's raw bindings declare every function's ``argtypes``, so ctypes converts and checks each argument on each
call (``from_param``; an out-parameter passed as a ``c_double`` is wrapped in a new reference every time). The page
reader makes several calls per line and per character of a cut line (about 40,000 on the benchmark's doc200.pdf)
and the conversion was more than half of each call's cost. These are the same C functions, called through function
pointers of their own with no ``argtypes``. A caller passes only what ctypes hands to C unchanged:

- a pypdfium2 handle (a ctypes pointer, such as ``PdfTextPage.raw``),
- a Python ``int`` where C takes an ``int`` (a character or rectangle index, a count),
- ``ctypes.byref`` of an out-parameter (``OutParams`` holds them; a bare ``c_double`` would go by value).

``text_object`` gives an object's address (an ``int``), which only ``text_object_font`` (declared to take one)
takes; a font is an address too, used as a key while its page is open. ``page_object`` and ``form_object`` give
pypdfium2 handles, as the checked calls do, so the checked calls take them too.
"""

from __future__ import annotations

import ctypes
from typing import Any

import pypdfium2.raw as R


def _unchecked(fn: Any, restype: Any) -> Any:
    """``fn``'s C function through a pointer with no ``argtypes`` (ctypes passes the arguments as they are)."""
    address = ctypes.cast(fn, ctypes.c_void_p).value
    unchecked = type(fn)(address)
    unchecked.restype = restype
    return unchecked


# (textpage, index, byref left, byref right, byref bottom, byref top) -> bool
char_box = _unchecked(R.FPDFText_GetCharBox, ctypes.c_int)
# (textpage, index, byref x, byref y) -> bool
char_origin = _unchecked(R.FPDFText_GetCharOrigin, ctypes.c_int)
# (textpage, index) -> points
font_size = _unchecked(R.FPDFText_GetFontSize, ctypes.c_double)
# (textpage, index, byref FS_MATRIX) -> bool
char_matrix = _unchecked(R.FPDFText_GetMatrix, ctypes.c_int)
# (textpage, start, count) -> rectangles
count_rects = _unchecked(R.FPDFText_CountRects, ctypes.c_int)
# (textpage, rectangle index, byref left, byref top, byref right, byref bottom) -> bool
rect = _unchecked(R.FPDFText_GetRect, ctypes.c_int)
# (textpage, index) -> 1 when the character's font maps it to no Unicode text
unicode_map_error = _unchecked(R.FPDFText_HasUnicodeMapError, ctypes.c_int)
# (textpage, index) -> the character's text object (an address; None for a character pdfium made up)
text_object = _unchecked(R.FPDFText_GetTextObject, ctypes.c_void_p)
# (text object address) -> its font (an address)
text_object_font = _unchecked(R.FPDFTextObj_GetFont, ctypes.c_void_p)
text_object_font.argtypes = (ctypes.c_void_p,)

# (page, index) and (form object, index) -> the object (a pypdfium2 handle, as the checked call gives it)
page_object = _unchecked(R.FPDFPage_GetObject, R.FPDFPage_GetObject.restype)
form_object = _unchecked(R.FPDFFormObj_GetObject, R.FPDFFormObj_GetObject.restype)
# (object handle) -> FPDF_PAGEOBJ_*
object_type = _unchecked(R.FPDFPageObj_GetType, ctypes.c_int)
# (object handle, byref left, byref bottom, byref right, byref top: c_float) -> bool
object_bounds = _unchecked(R.FPDFPageObj_GetBounds, ctypes.c_int)
# (object handle, byref FS_MATRIX) -> bool
object_matrix = _unchecked(R.FPDFPageObj_GetMatrix, ctypes.c_int)


class OutParams:
    """Out-parameters reused across calls: the values (``a``..``d``, ``m``) and their references (``pa``..``pd``,
    ``pm``), which are what the calls above take."""

    __slots__ = ("a", "b", "c", "d", "m", "pa", "pb", "pc", "pd", "pm")

    def __init__(self) -> None:
        self.a, self.b, self.c, self.d = ctypes.c_double(), ctypes.c_double(), ctypes.c_double(), ctypes.c_double()
        self.m = R.FS_MATRIX()
        self.pa, self.pb, self.pc, self.pd = (ctypes.byref(v) for v in (self.a, self.b, self.c, self.d))
        self.pm = ctypes.byref(self.m)
