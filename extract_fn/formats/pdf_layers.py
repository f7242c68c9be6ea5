"""Text in the layers a viewer hides (optional content turned off), found so that a page does not read it.

pdfium's text page reads every text object, whatever optional content group (OCG, a "layer") it is marked with; a
viewer draws a layer only when the document's default configuration (``/OCProperties /D``) leaves it on. A draft
watermark or a reviewer's layer, switched off, was read as the page's largest heading. Two steps, so that a common
file pays one byte search:

1. ``hidden_layer_names`` reads the configuration with pypdf, only for a file whose bytes name ``/OCProperties``
   and ``/OFF`` (or a ``/BaseState``): the names of the OCGs it turns off (``/OFF``, or every one not ``/ON`` under
   ``/BaseState /OFF``). pdfium's marks give a layer's dictionary, not its object, so layers are told apart by
   ``/Name``: a name an OCG left on shares is not hidden (its text is read rather than lost).
2. ``hidden_text_objects`` walks a page's objects, forms included, for the text objects marked ``/OC`` with such a
   layer, themselves or through a form drawn in it; the PDF module leaves out their characters.

Not covered: membership dictionaries (``/OCMD``, a visibility expression over several OCGs; read as shown), and
usage-dependent states (``/AS``: print and export states; the view state is the default one).
"""

from __future__ import annotations

import ctypes
import io
import logging
from typing import Any, Final

import pypdfium2.raw as R

_OBJECTS_WALKED: Final = 100_000  # page objects looked at for their marks (past them, the rest are read as shown)


def hidden_layer_names(data: bytes) -> frozenset[str] | None:
    """The names of the layers the default configuration hides (none shared with a shown one), or None: no layer is
    hidden, or pypdf cannot read the configuration (every layer is then read, as before)."""
    if b"/OCProperties" not in data or (b"/OFF" not in data and b"/BaseState" not in data):
        return None
    try:
        from pypdf import PdfReader

        logging.getLogger("pypdf").setLevel(logging.ERROR)
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            reader.decrypt("")
        root: Any = reader.trailer["/Root"].get_object()
        properties = root.get("/OCProperties")
        if properties is None:
            return None
        properties = properties.get_object()
        groups = [_key(g) for g in properties.get("/OCGs", [])]
        config = properties.get("/D")
        config = config.get_object() if config is not None else {}
        on = {_key(g) for g in config.get("/ON", [])}
        off = {_key(g) for g in config.get("/OFF", [])}
        hidden = {g for g in groups if g not in on} if config.get("/BaseState") == "/OFF" else off
        names = {g: _name(reader, g) for g in groups} | {g: _name(reader, g) for g in hidden}
        shown = {names[g] for g in groups if g not in hidden}
        found = frozenset(n for g in hidden if (n := names[g]) is not None and n not in shown)
        return found or None
    except Exception:  # pypdf raises many kinds on a damaged file: every layer is then read, as before
        return None


def _key(ref: Any) -> tuple[int, int] | int:
    """An OCG's identity: its object's number and generation (an array of OCGs holds references)."""
    idnum = getattr(ref, "idnum", None)
    return (idnum, ref.generation) if idnum is not None else id(ref.get_object())


def _name(reader: Any, key: tuple[int, int] | int) -> str | None:
    if not isinstance(key, tuple):
        return None
    group = reader.get_object(key[0])
    name = group.get("/Name") if hasattr(group, "get") else None
    return str(name) if name is not None else None


def hidden_text_objects(page_raw: Any, names: frozenset[str], max_depth: int) -> set[int]:
    """The addresses of the page's text objects drawn in a layer named in ``names``: marked ``/OC`` with it, or
    inside a form object that is (``max_depth`` forms deep)."""
    found: set[int] = set()
    stack: list[tuple[Any, int, bool, bool]] = [(page_raw, 0, False, False)]
    walked = 0
    while stack:
        holder, depth, is_form, hidden = stack.pop()
        count = R.FPDFFormObj_CountObjects(holder) if is_form else R.FPDFPage_CountObjects(holder)
        for k in range(count):
            walked += 1
            if walked > _OBJECTS_WALKED:
                return found
            obj = R.FPDFFormObj_GetObject(holder, k) if is_form else R.FPDFPage_GetObject(holder, k)
            if not obj:
                continue
            kind = R.FPDFPageObj_GetType(obj)
            if kind not in (R.FPDF_PAGEOBJ_TEXT, R.FPDF_PAGEOBJ_FORM):
                continue
            in_hidden = hidden or _in_layer(obj, names)
            if kind == R.FPDF_PAGEOBJ_TEXT:
                if in_hidden:
                    found.add(address(obj))
            elif depth < max_depth:
                stack.append((obj, depth + 1, True, in_hidden))
    return found


def address(obj: Any) -> int:
    """A page object's handle as a number (the same object, reached from the text page or from a walk, is equal)."""
    return ctypes.cast(obj, ctypes.c_void_p).value or 0


def _in_layer(obj: Any, names: frozenset[str]) -> bool:
    """Whether ``obj`` is marked ``/OC`` with a layer whose ``/Name`` is in ``names``."""
    for k in range(R.FPDFPageObj_CountMarks(obj)):
        mark = R.FPDFPageObj_GetMark(obj, k)
        if mark and _mark_text(R.FPDFPageObjMark_GetName, mark) == "OC":
            name = _mark_text(R.FPDFPageObjMark_GetParamStringValue, mark, b"Name")
            if name is not None and name in names:
                return True
    return False


def _mark_text(call: Any, *args: Any) -> str | None:
    """A mark's name or string parameter (UTF-16LE into a buffer; None when pdfium has none)."""
    size = ctypes.c_ulong()
    if not call(*args, None, 0, ctypes.byref(size)) or size.value < 2:
        return None
    buf = (ctypes.c_ushort * (size.value // 2 + 1))()
    if not call(*args, buf, size.value, ctypes.byref(size)):
        return None
    return bytes(memoryview(buf).cast("B")[: max(0, size.value - 2)]).decode("utf-16-le", "replace")
