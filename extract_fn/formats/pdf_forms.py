"""Pages whose form XObjects multiply: found before pdfium loads the page, which would parse every drawing.

A form XObject is a drawing a content stream draws by name (``/X0 Do``); a form may draw forms. pdfium parses a
page's forms when it loads the page (``FPDF_LoadPage``), each drawing anew, and stops only 40 levels down
(``kMaxFormLevel``; it does not see that a form draws itself). So a form that draws itself twice, or a chain of
forms each drawing the next twice, is parsed 2^40 times: a 1 KB page ran a worker out of its 2 GiB after 3.5 s,
and 18 levels (262,143 drawings) cost pdfium 0.6 s and 440 MB. Other readers differ too (Ghostscript stops at
the loop; pdf.js looped forever: mozilla/pdf.js#19800); ISO 32000 sets no limit.

Two steps, so that a common file pays nothing:

1. ``forms_may_multiply`` reads the bytes (``pdf_streams.streams``): only a form that draws two or more
   things, a form this pass cannot read (another filter, damage, encryption), or more forms that draw something
   than pdfium's 40 levels can make a page parse more drawings than the file holds. 3 of the corpus's 52 PDFs.
2. Then ``check_pages`` resolves the drawings by name with pypdf (imported only then, 88 ms): per page, the
   drawings pdfium would parse (a form draws only forms its own resources name, else its parent's, as in
   pdfium's ``CPDF_Form``), counted level by level as pdfium recurses, memoized by form, resources and level,
   and stopped once past the limit; and, breadth first, whether a form holding text is drawn only deeper than
   pdfium's 40 levels (pdfium reads none of its text: the page says so). A file pypdf cannot read gives None:
   pdfium reads it as before, and the worker contains what happens (a crash costs one worker and is remembered
   by the pool).

A Type 3 glyph is a content stream too, parsed when pdfium loads the page, and may draw forms: the glyphs of
the Type 3 fonts a page's or a form's resources name are counted with it (a glyph drawing a form that draws
itself twice took 5 GB in 20 s). A tiling pattern can draw forms as well; pdfium parses it only when it renders
(OCR), and it is not counted here.
"""

from __future__ import annotations

import io
import logging
import re
import zlib
from collections import Counter
from typing import Any, Final, NamedTuple

from extract_fn.formats.pdf_streams import IMAGE_SUBTYPE, stored_body, streams, unescape_names

PDFIUM_MAX_FORM_LEVEL: Final = 40  # pdfium's kMaxFormLevel (cpdf_streamcontentparser.cpp)
# A stream dictionary's /Subtype: a name (whose "#xx" escapes pdfium reads: /F#6Frm is /Form) or an indirect
# reference (to a name, perhaps inside an object stream no byte scan reads), which may be /Form.
_SUBTYPE: Final = re.compile(rb"/Subtype\s*(/[^\s/\[\]<>(){}%]*|\d+\s+\d+\s+R)")
_FLATE_ONLY: Final = re.compile(rb"/Filter\s*(?:\[\s*)?/(?:FlateDecode|Fl)\s*\]?\s*(?=[/>])")
_SCAN_BYTES: Final = 1 << 20  # a form's content read for its drawings in step 1; past it, step 2 decides
# ``/Name Do``: a name's bytes run to a delimiter or white space (ISO 32000-1 7.3.5); "#xx" is an escaped byte.
_DO: Final = re.compile(rb"/([^\s/\[\]<>(){}%]*)\s*Do\b")
_SHOWS_TEXT: Final = re.compile(rb"T[jJ]\b|\)\s*['\"]")  # a text-showing operator (can match high, in a string)
_WORK: Final = 2_000_000  # (form, name) steps of step 2 per file; past it, the pages not yet counted are over


def forms_may_multiply(data: bytes) -> bool:
    """Whether some page of ``data`` may parse more drawings than the file holds (step 1). A file with annotation
    appearances (``/AP``) counts every stream but an image: the PDF module draws appearances into their page
    (``FPDFPage_Flatten``), and pdfium makes each a form then, whatever its ``/Subtype``, so one without any can
    draw itself."""
    drawing_forms = 0
    appearances = b"/AP" in data
    for _number, head, start in streams(data):
        if not (_may_be_form(head) or (appearances and not IMAGE_SUBTYPE.search(head))):
            continue
        content = _form_content(data, head, start)
        if content is None:
            return True
        draws = content.count(b"Do")  # counts high (the bytes in a string or a name count too): never misses one
        if draws >= 2:
            return True
        drawing_forms += draws
    return drawing_forms > PDFIUM_MAX_FORM_LEVEL


def _may_be_form(head: bytes) -> bool:
    for m in _SUBTYPE.finditer(head):
        value = m.group(1)
        if value.endswith(b"R") or unescape_names(value) == b"/Form":
            return True
    return False


def _form_content(data: bytes, head: bytes, start: int) -> bytes | None:
    """A form's content (at most ``_SCAN_BYTES``), or None where this pass cannot read it whole."""
    if b"/Filter" not in head:
        return stored_body(data, start)
    if not _FLATE_ONLY.search(head):
        return None
    inflater = zlib.decompressobj()
    try:
        content = inflater.decompress(data[start : start + _SCAN_BYTES], _SCAN_BYTES)
    except zlib.error:
        return None
    return content if inflater.eof else None


class FormPages(NamedTuple):
    """0-based pages: ``over``, on which pdfium would parse more than the limit of form drawings; ``unreached``, on
    which a form holding text is drawn only deeper than the 40 levels pdfium follows (its text is not read)."""

    over: set[int]
    unreached: set[int]


def check_pages(data: bytes, limit: int) -> FormPages | None:
    """Each page's form drawings counted (step 2), or None when pypdf cannot read the file."""
    try:
        from pypdf import PdfReader

        logging.getLogger("pypdf").setLevel(logging.ERROR)  # its notes on a damaged file are not the service's
        reader = PdfReader(io.BytesIO(data), strict=False)
        if reader.is_encrypted:
            reader.decrypt("")  # a file with an owner password only opens so; one asking for a password, not here
        counter = _DrawingCounter(limit)
        pages = FormPages(set(), set())
        for index in range(len(reader.pages)):
            try:
                page = reader.pages[index]
                contents = page.get_contents()
                names = _names(contents.get_data() if contents is not None else b"")  # the page's content, once
                resources = _resolved(page.get("/Resources"))
                drawings = counter.page(names, resources) + counter.appearances(page, resources)
                if counter.exhausted or drawings > limit:
                    pages.over.add(index)
                elif counter.unreached_text(names, resources):
                    pages.unreached.add(index)
            except Exception:  # a page pypdf cannot count (it raises many kinds): not loaded, its neighbours are
                pages.over.add(index)
        return pages
    except Exception:  # pypdf cannot open the file (it raises many kinds, and RecursionError): pdfium decides
        return None


class _DrawingCounter:
    """Counts the form drawings pdfium parses for a page, sharing what it learned between pages."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.work = 0
        self.exhausted = False
        self._names: dict[int, Counter[bytes]] = {}  # id(form) -> its content's drawings by name
        self._memo: dict[tuple[int, int, int], int] = {}  # (id(form), id(resources), level) -> drawings under it
        self._glyph_memo: dict[tuple[int, int], int] = {}  # (id(Type 3 font), id(resources)) -> its glyphs' drawings
        self._keep: list[Any] = []  # what an id() above names stays alive while the ids are keys
        self._keys: dict[bytes, str] = {}  # a name's bytes in content -> its key in a pypdf dictionary
        self._appearances: set[int] = set()  # id() of annotation appearance streams (forms once drawn in)

    def page(self, names: Counter[bytes], resources: Any) -> int:
        """The drawings parsed for a page whose content draws ``names`` with ``resources``."""
        return self._drawings(names, resources, 0) + self._glyphs(resources)

    def appearances(self, page: Any, resources: Any) -> int:
        """The drawings parsed for the appearance streams of the page's annotations: the PDF module draws them into
        the page (``FPDFPage_Flatten``) before it loads it again, each a form. Every state of each counts (pdfium
        draws one: this counts high)."""
        total = 0
        annotations = _resolved(page.get("/Annots"))
        for entry in annotations if isinstance(annotations, list) else ():  # pdfium reads no other kind
            self.work += 1
            if self.work > _WORK:
                self.exhausted = True
                return self.limit + 1
            annotation = _resolved(entry)
            appearance: Any = _resolved(annotation.get("/AP")) if hasattr(annotation, "get") else None
            normal: Any = _resolved(appearance.get("/N")) if hasattr(appearance, "get") else None
            if not hasattr(normal, "get"):
                continue
            states = [normal] if hasattr(normal, "get_data") else [_resolved(v) for v in normal.values()]
            for form in states:
                if hasattr(form, "get_data"):
                    self._appearances.add(id(form))  # pdfium makes it a form when it draws it in
                    self._keep.append(form)
                    total += 1 + self._form(form, resources, 1)
            if total > self.limit:
                return self.limit + 1
        return total

    def unreached_text(self, page_names: Counter[bytes], page_resources: Any) -> bool:
        """Whether a form holding text is drawn on the page only deeper than pdfium's levels: breadth first from the
        page's content, so each form is met at the least level it is drawn at."""
        frontier = [(page_names, page_resources)]
        seen: set[tuple[int, int]] = set()
        level = 0
        while frontier:
            level += 1
            deeper: list[tuple[Counter[bytes], Any]] = []
            for names, resources in frontier:
                xobjects = _resolved(resources.get("/XObject")) if resources is not None else None
                if xobjects is None:
                    continue
                for name in names:
                    self.work += 1
                    if self.work > _WORK:
                        return False  # not known: the drawing count above already bounds what pdfium parses
                    form = self._form_named(xobjects, name)
                    if form is None:
                        continue
                    form_resources = _own_resources(form, resources)
                    key = (id(form), id(form_resources))
                    if key in seen:
                        continue
                    seen.add(key)
                    self._keep += [form, form_resources]
                    if level > PDFIUM_MAX_FORM_LEVEL:
                        if _SHOWS_TEXT.search(form.get_data()):
                            return True
                        continue
                    deeper.append((self._form_names(form), form_resources))
            frontier = deeper
        return False

    def _form_names(self, form: Any) -> Counter[bytes]:
        names = self._names.get(id(form))
        if names is None:
            names = self._names[id(form)] = _names(form.get_data())
            self._keep.append(form)
        return names

    def _drawings(self, names: Counter[bytes], resources: Any, level: int) -> int:
        """The drawings parsed for content that draws ``names`` with ``resources``, ``level`` forms down."""
        xobjects = _resolved(resources.get("/XObject")) if resources is not None else None
        if xobjects is None:
            return 0
        total = 0
        for name, times in names.items():
            self.work += 1
            if self.work > _WORK:
                self.exhausted = True
                return self.limit + 1
            form = self._form_named(xobjects, name)
            if form is None:
                continue
            total += times * (1 + self._form(form, resources, level + 1))
            if total > self.limit:
                return self.limit + 1
        return total

    def _form_named(self, xobjects: Any, name: bytes) -> Any:
        """The form XObject ``name`` stands for in ``xobjects``, or None (missing, or another kind of XObject)."""
        form = _resolved(xobjects.get(self._key(name)))
        if form is None or not hasattr(form, "get"):
            return None
        return form if _resolved(form.get("/Subtype")) == "/Form" or id(form) in self._appearances else None

    def _key(self, name: bytes) -> str:
        """``name`` as pypdf spells the same name read from a dictionary (``NameObject.read_from_stream``)."""
        key = self._keys.get(name)
        if key is None:
            from pypdf.generic import NameObject

            raw = NameObject.unnumber(b"/" + name)
            for charset in (*NameObject.CHARSETS, "charmap"):
                try:
                    key = raw.decode(charset)
                    break
                except UnicodeDecodeError:
                    continue
            self._keys[name] = key = key or raw.decode("latin-1")
        return key

    def _form(self, form: Any, parent_resources: Any, level: int) -> int:
        if level > PDFIUM_MAX_FORM_LEVEL:  # pdfium parses no deeper
            return 0
        resources = _own_resources(form, parent_resources)
        key = (id(form), id(resources), level)
        known = self._memo.get(key)
        if known is not None:
            return known
        names = self._form_names(form)
        self._keep.append(resources)
        self._memo[key] = 0  # while it is counted: a form reached again through a glyph adds nothing
        count = self._memo[key] = min(self.limit + 1, self._drawings(names, resources, level) + self._glyphs(resources))
        return count

    def _glyphs(self, resources: Any) -> int:
        """The drawings parsed for the glyphs of the Type 3 fonts ``resources`` names: a Type 3 glyph is a content
        stream, parsed when pdfium loads the page's text (once per font), and may draw forms."""
        fonts = _resolved(resources.get("/Font")) if resources is not None else None
        if fonts is None:
            return 0
        total = 0
        for value in fonts.values():
            font = _resolved(value)
            if font is not None and _resolved(font.get("/Subtype")) == "/Type3":
                total += self._type3(font, resources)
                if total > self.limit:
                    return self.limit + 1
        return total

    def _type3(self, font: Any, parent_resources: Any) -> int:
        resources = _own_resources(font, parent_resources)  # as pdfium's CPDF_Type3Font
        key = (id(font), id(resources))
        known = self._glyph_memo.get(key)
        if known is not None:
            return known
        self._keep += [font, resources]
        self._glyph_memo[key] = 0  # while it is counted (a glyph drawing a form that shows text in this font)
        procs = _resolved(font.get("/CharProcs"))
        total = 0
        for proc in procs.values() if procs is not None else ():
            glyph = _resolved(proc)
            if glyph is not None and hasattr(glyph, "get_data"):
                total += self._drawings(_names(glyph.get_data()), resources, 0)
                if total > self.limit:
                    total = self.limit + 1
                    break
        self._glyph_memo[key] = total
        return total


def _names(content: bytes) -> Counter[bytes]:
    """The names a content stream draws with ``Do`` (their bytes, without the "/"), each with how often."""
    return Counter(m.group(1) for m in _DO.finditer(content))


def _own_resources(holder: Any, parent_resources: Any) -> Any:
    """A form's or Type 3 font's own /Resources, else those of what draws it (as pdfium's ``CPDF_Form``)."""
    own = _resolved(holder.get("/Resources"))
    return own if own is not None else parent_resources


def _resolved(value: Any) -> Any:
    return value.get_object() if value is not None else None
