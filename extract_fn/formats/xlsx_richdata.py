"""Pictures placed in cells (Excel 365 "Place in Cell", and the ``IMAGE()`` function) and other rich values.

Such a cell is saved as an error (``<c t="e" vm="1"><v>#VALUE!</v></c>``, what older readers show) whose ``vm``
attribute (1-based) picks a record of ``xl/metadata.xml``'s ``valueMetadata``; its ``rc`` names a metadata type
(1-based, ``XLRICHVALUE``) and a record of that type's ``futureMetadata`` (0-based), whose ``xlrd:rvb i`` is the
rich value: the ``rv`` of ``xl/richData/rdrichvalue.xml`` at that index. The rich value's ``s`` picks a structure of
``rdrichvaluestructure.xml``, whose ``k`` keys name the ``v`` values in order. A structure of type ``_localImage``
(or any type naming an image, such as ``_webImage``) is a picture: its ``_rvRel:LocalImageIdentifier`` indexes the
``rel`` list of ``richValueRel.xml``, whose relationship names the picture's part (``xl/media/imageN.png``); its
``Text`` key, when present, is the alt text. A rich value of another kind that holds a ``_DisplayString`` (a linked
data type: a stock, a place) shows that string. The parts are found by the workbook's relationships
(``sheetMetadata``, ``rdRichValue``, ``rdRichValueStructure``, ``richValueRel``), else by their usual names; any link
missing or malformed leaves the cell as the error it is saved as.

A picture cell's value is null in the table, which lists the sheet's picture cells in ``attrs.cell_pictures``
(``{"cell": "B2", "alt": ...}``, the first 200); each is a picture block after the sheet's rows (``attrs.image``,
``attrs.cell``, the cell's row as ``row_start``/``row_end``), read by OCR as the drawing's pictures are.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

from extract_fn.formats.ooxml_drawing import r_attr
from extract_fn.formats.ooxml_text import local, uint_attr
from extract_fn.formats.safe_xml import DtdRefused
from extract_fn.formats.xlsx_drawings import Book
from shared.contract import ErrorCode, ExtractionError

_DEFAULTS: Final = {
    "sheetmetadata": "xl/metadata.xml",
    "rdrichvalue": "xl/richData/rdrichvalue.xml",
    "rdrichvaluestructure": "xl/richData/rdrichvaluestructure.xml",
    "richvaluerel": "xl/richData/richValueRel.xml",
}
_ALIASES: Final = {"richvalue": "rdrichvalue", "richvaluestructure": "rdrichvaluestructure"}
_IMAGE_KEY: Final = "_rvRel:LocalImageIdentifier"
MAX_LISTED: Final = 200  # picture cells listed in a table's attrs


@dataclass(frozen=True)
class RichCell:
    """What a rich-value cell shows: a picture (``part`` None when its pixels are not in the package), or a text."""

    picture: bool
    alt: str = ""
    part: str | None = None
    text: str | None = None


class RichValues:
    """The workbook's rich values, read at the first cell that names one (most workbooks have none: ``present``)."""

    def __init__(self, book: Book, workbook_rels: dict[str, tuple[str, str]]) -> None:
        self.book = book
        self.parts: dict[str, str] = {}
        for rtype, target in workbook_rels.values():
            kind = rtype.rstrip("/").rsplit("/", 1)[-1].lower()
            kind = _ALIASES.get(kind, kind)
            if kind in _DEFAULTS and book.has(target):
                self.parts.setdefault(kind, target)
        for kind, default in _DEFAULTS.items():
            if kind not in self.parts and book.has(default):
                self.parts[kind] = default
        self.present = "sheetmetadata" in self.parts and "rdrichvalue" in self.parts
        self._cells: dict[int, RichCell | None] | None = None
        self._values: list[RichCell | None] = []
        self._metadata: list[int | None] = []  # vm - 1 -> rich value index

    def cell(self, vm: int) -> RichCell | None:
        """What the cell with this ``vm`` shows, or None (not a rich value this reader knows)."""
        if self._cells is None:
            self._cells = {}
            try:
                self._load()
            except DtdRefused:
                raise
            except ExtractionError as exc:  # a malformed part: the cells stay the errors they are saved as
                if exc.code == ErrorCode.RESOURCE_LIMIT:
                    raise
                self._metadata, self._values = [], []
        if vm not in self._cells:
            i = vm - 1 if vm > 0 else 0
            rv = self._metadata[i] if 0 <= i < len(self._metadata) else None
            self._cells[vm] = self._values[rv] if rv is not None and 0 <= rv < len(self._values) else None
        return self._cells[vm]

    def _root(self, kind: str) -> Any:
        part = self.parts.get(kind)
        return self.book.parse(part) if part is not None else None

    def _load(self) -> None:
        self._metadata = _value_metadata(self._root("sheetmetadata"))
        structures = _structures(self._root("rdrichvaluestructure"))
        images = self._image_parts()
        values: list[RichCell | None] = []
        root = self._root("rdrichvalue")
        for rv in root if root is not None else ():
            if local(rv.tag) != "rv":
                continue
            s = uint_attr(rv.get("s"))
            stype, keys = structures[s] if s is not None and s < len(structures) else ("", [])
            vals = dict(zip(keys, ((v.text or "") for v in rv if local(v.tag) == "v"), strict=False))
            if "image" in stype.lower():
                index = uint_attr(vals.get(_IMAGE_KEY, "").strip())
                part = images[index] if index is not None and index < len(images) else None
                values.append(RichCell(True, " ".join(vals.get("Text", "").split()), part))
            elif vals.get("_DisplayString"):
                values.append(RichCell(False, text=vals["_DisplayString"]))
            else:
                values.append(None)
        self._values = values

    def _image_parts(self) -> list[str | None]:
        """The picture parts of ``richValueRel.xml``'s ``rel`` list, in order (None where one is missing)."""
        part = self.parts.get("richvaluerel")
        if part is None:
            return []
        root = self.book.parse(part)
        rels = self.book.rels(part)
        out: list[str | None] = []
        for el in root:
            if local(el.tag) == "rel":
                target = rels.get(r_attr(el, "id") or "")
                out.append(target[1] if target is not None and self.book.has(target[1]) else None)
        return out


def _value_metadata(root: Any) -> list[int | None]:
    """For each ``valueMetadata`` record (in order): the rich value index it names, or None."""
    if root is None:
        return []
    types: list[str] = []
    future: dict[str, list[int | None]] = {}
    records: list[tuple[str, str] | None] = []
    for el in root:
        name = local(el.tag)
        if name == "metadataTypes":
            types = [t.get("name") or "" for t in el if local(t.tag) == "metadataType"]
        elif name == "futureMetadata":
            entries: list[int | None] = []
            for bk in el:
                if local(bk.tag) != "bk":
                    continue
                rvb = next((d for d in bk.iter() if local(d.tag) == "rvb"), None)
                i = (rvb.get("i") or "") if rvb is not None else ""
                entries.append(uint_attr(i) if len(i) < 10 else None)
            future[el.get("name") or ""] = entries
        elif name == "valueMetadata":
            for bk in el:
                if local(bk.tag) != "bk":
                    continue
                rc = next((c for c in bk if local(c.tag) == "rc"), None)
                records.append((rc.get("t") or "", rc.get("v") or "") if rc is not None else None)
    out: list[int | None] = []
    for rec in records:
        index = None
        t, v = (uint_attr(rec[0]), uint_attr(rec[1])) if rec is not None else (None, None)
        if t is not None and v is not None:
            t -= 1
            entries = future.get(types[t], []) if 0 <= t < len(types) else []
            index = entries[v] if v < len(entries) else None
        out.append(index)
    return out


def _structures(root: Any) -> list[tuple[str, list[str]]]:
    """Each structure's type and key names, in order."""
    if root is None:
        return []
    return [
        (s.get("t") or "", [k.get("n") or "" for k in s if local(k.tag) == "k"]) for s in root if local(s.tag) == "s"
    ]
