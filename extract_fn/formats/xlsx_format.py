"""XLSX (and XLSM): one typed table per worksheet, one row block per non-empty data row.

How it reads (measured on the 100,000 x 10 benchmark workbook: python-calamine reads and converts the 1,000,000 cells
in 0.8 s, where a bare lxml iterparse loop over the sheet XML takes 1.8-2.7 s before converting anything; openpyxl is
slower still, by the issue's 8-15x, and loads ISO 29500 Strict workbooks with no sheets):

* The package is opened with ``zipsafe`` (size and ratio limits; an OLE container is an encrypted workbook, answered
  ``corrupt`` saying so). Part names written with Windows backslashes are accepted; two parts with one name (content
  smuggling) are ``corrupt``; any XML part (every ``.xml`` and ``.rels`` part, and every part the workbook's
  relationships name, which calamine reads whatever its extension) that declares a DTD is ``corrupt`` before any
  parser sees it, with the one answer of ``safe_xml`` (docx and pptx give the same); an unreadable root
  relationships part is ``corrupt``.
* ``workbook.xml`` and its relationships are read here (namespace-agnostic, so Transitional, ISO 29500 Strict and
  odd prefixes alike) for the sheets, their states and kinds, and ``date1904``.
* Cell values come from python-calamine, which applies the number formats: dates under the 1900 (with its 1900-02-29
  quirk) and 1904 systems, times, and elapsed-time formats (``[h]:mm:ss``) as durations.
* What calamine drops is taken from the sheet XML with narrow byte patterns, only when the part holds it: error
  cells (``t="e"``, sent as ``{"error": "#DIV/0!"}``) and formulas (``attrs.formulas``, the first 200, ``"B2":
  "=SUM(A1:A3)"``; the cell's value is the cached result).
* **Formulas with no saved result** (no ``<v>`` or an empty one, as openpyxl writes every formula, and a shared
  formula's other cells; an empty ``<v>`` of type ``str`` is the empty text, a result): this service computes no
  formula, so their cells are null, the table's ``attrs.formulas_without_result`` lists them (the first 200), a
  warning per sheet counts them and names the first five, and ``coverage.lost`` says ``formula_values`` (the rows
  are read: no failed unit). A workbook asking to be recalculated when opened (``calcPr fullCalcOnLoad``, as
  xlsxwriter saves its placeholder results of 0) gets a warning that its saved results may be stale, once it holds
  a formula with one; those values are read, so it is no loss.
* **A second look** (``xlsx_cells``): a cell whose calamine value may not be what Excel shows (a time, which is what
  calamine makes of a serial below 1 under a date format; 1900-02-28, which serial 60, Excel's 1900-02-29, also
  becomes; a whole number past 2^53, a double in calamine) is looked up in the sheet's XML, read again only then,
  with its style's number format (``styles.xml``).
* Memory: what a sheet needs from its XML is read before calamine reads the sheet, so the XML (several times the
  file) is gone first; the workbook (its shared strings) goes once calamine has read the last worksheet's cells, and
  that freed native heap is given back (``frame.release_heap``) before the cells become Python values; calamine's
  sheet (its whole cell box) goes once they are. The typed columns then take the cells' place in the sheet's own
  row lists, which become the table's rows. big.xlsx's peak in process: 301 MB (session 8), 174 MB (session 9),
  144 MB now, the row blocks kept as runs in the worker (``benchmarks/README.md``).

Decisions (documented for the artifact's readers):

* **Table per worksheet**, hidden ones included (``attrs.hidden`` true and ``attrs.state`` ``hidden`` or
  ``veryHidden``); chartsheets are no tables (listed in the artifact's ``attrs.chartsheets``; dialog and macro
  sheets in ``attrs.other_sheets``). A worksheet that only holds a chart is an empty table. The table's ``name`` is
  the sheet's; its locator holds the sheet and the rows it spans.
* **Header**: the first non-empty row of the used range (``header_rows`` 1); an empty header cell names its column by
  its letter (``C``). Columns span the used range's non-empty columns. Rows are every sheet row from under the
  header to the last non-empty one (an empty row in between is a row of nulls, with no row block), so table row
  ``i`` is sheet row ``locator.row_start + 1 + i``; row blocks carry the sheet row number (1-based, header counted).
* **Merged ranges** are represented once: the top-left cell holds the value, the other cells are null, and
  ``attrs.merged`` lists the ranges (``"A1:B2"``, the first 1,000).
* **Types**: ``number`` (an integral value is an int, past int64 its digits; any other value its exact decimal
  digits: calamine parses the cell's stored text, and the shortest text that round-trips that double is the stored
  text itself, minus any float noise the writer appended), ``string`` (shared, inline and rich text, ``_x000D_``
  escapes decoded), ``bool``, ``date``/``datetime``, ``time``, ``duration`` (``36:00:00``, negative ``-1:30:00``).
  A whole number past 2^53 is its stored digits. Under a date format, a serial below 1 is its day (1904 system:
  1904-01-01; 1900 system: the text ``1900-01-00``, as Excel shows it), serial 60 of the 1900 system the text
  ``1900-02-29``, a negative serial the number (Excel shows ``########``), each text or number with a warning.
  A column of several kinds is ``mixed``, its numbers then JSON numbers. Empty cells are null; errors fit any type.
* **Outside the cells**: after each sheet's row blocks come ``paragraph`` blocks (``locator.sheet``) for what Excel
  shows besides the cells' values: pictures placed in cells (``xlsx_richdata``; the cell is null, the table's
  ``attrs.cell_pictures`` lists them), notes and comment threads, the background picture, the drawing's charts, text
  boxes, pictures and SmartArt (``xlsx_drawings``), and the page header and footer (``xlsx_notes``). They are extra
  blocks, no units: a part that cannot be read, or an object this service does not read, is a failed unit; pictures
  whose pixels are not read make ``image_text`` lost. Their parts are read only when the sheet's relationships (or,
  for rich values, the workbook's) name them. Data-validation lists (the choices a cell's drop-down offers when it is
  opened) are not read: they are no part of what the sheet shows, and a list is most often a range of cells, read
  as cells.
* **Coverage** counts data rows (unit ``rows``) over all sheets; a table cut to fit the output budget says so in
  coverage and a warning.
"""

from __future__ import annotations

import datetime as _dt
import html
import io
import operator
import posixpath
import re
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from extract_fn.formats import safe_xml
from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.frame import FormatContext, format_module, release_heap
from extract_fn.formats.ooxml_chart import ChartCache
from extract_fn.formats.ooxml_text import no_main_part
from extract_fn.formats.output_budget import BudgetKind, OutputBudget, output_budget
from extract_fn.formats.table_values import (
    Columns,
    add_table,
    column_type,
    exact_number,
    exact_numbers,
    format_datetime,
    format_time,
    format_timedelta,
    number_from_float,
    report_cut,
    shared_texts,
    value_text,
)
from extract_fn.formats.textblocks import OUTPUT_LIMIT_REASON
from extract_fn.formats.xlsx_cells import (
    Restored,
    column_sources,
    date_part_styles,
    restore,
    style_classes,
    suspect_rows,
)
from extract_fn.formats.xlsx_drawings import Book, add_background, add_sheet_drawings
from extract_fn.formats.xlsx_extent import box_cells
from extract_fn.formats.xlsx_notes import Persons, add_header_footer, add_sheet_comments, header_footer
from extract_fn.formats.xlsx_richdata import MAX_LISTED, RichCell, RichValues
from extract_fn.formats.zipsafe import is_xml_name, part_name, read_member, refuse_member_dtd, with_package
from shared.artifact_builder import ArtifactBuilder, clean_str, make_locator
from shared.contract import INT64_MAX, INT64_MIN, ErrorCode, ExtractionError

PARSER: Final = "loom-xlsx"
KIND: Final = "xlsx"
# calamine allocates a sheet's whole bounding box (first to last cell, 32 bytes a cell) and aborts the process when
# that fails; a box past this many cells is refused from the sheet XML before calamine sees it (xlsx_extent). 2**25:
# 32 columns of all 1,048,576 rows, or all 16,384 columns of 2,048 rows (1 GiB in calamine, 256 MiB more in Python),
# within the default 2 GiB worker limit; and above xlsx_extent's NARROW_BOX, so columns A-Z never need the exact scan.
REL_OFFICE_DOCUMENT: Final = ("/officeDocument",)
LOST_FORMULA_VALUES: Final = "formula_values"  # a formula cell with no saved result: its value is not read
LISTED_CELLS: Final = 5  # cells named in a warning
_PREFIX = rb"(?:[A-Za-z_][\w.-]*:)?"
_ERROR_CELL = re.compile(
    rb"<" + _PREFIX + rb"c\s([^>]*?\bt\s*=\s*[\"']e[\"'][^>]*)>(.*?)</" + _PREFIX + rb"c>",
    re.DOTALL,
)
# a formula cell: its attributes, the formula's attributes and text, and its cached value's text (group 4: None
# when the cell has no <v>, or an empty one)
_FORMULA_CELL = re.compile(
    rb"<" + _PREFIX + rb"c\s([^>]*)>\s*<" + _PREFIX + rb"f\b([^>]*?)(?:/>|>(.*?)</" + _PREFIX + rb"f>)"
    rb"(?:\s*<" + _PREFIX + rb"v(?:\s[^>]*)?(?:/>|>(.*?)</" + _PREFIX + rb"v>))?",
    re.DOTALL,
)
_STR_TYPE = re.compile(rb"\st\s*=\s*[\"']str[\"']")
_ERROR_TYPE = re.compile(rb"\st\s*=\s*[\"']e[\"']")
_QUOTED_E: Final = (b'"e', b"'e")  # every match of _ERROR_TYPE holds one of them (two scans, not four: 37 ms each)
_REF_ATTR = re.compile(rb"\br\s*=\s*[\"']([A-Za-z]{1,3})([0-9]{1,7})[\"']")
_V = re.compile(rb"<" + _PREFIX + rb"v(?:\s[^>]*)?>(.*?)</" + _PREFIX + rb"v>", re.DOTALL)
_VM_ATTR = re.compile(rb"\bvm\s*=\s*[\"']([0-9]{1,9})[\"']")
_ROW_OR_CELL = re.compile(rb"<" + _PREFIX + rb"(row|c)\b([^>]*?)(/?)>")
_ROW_NUMBER = re.compile(rb"\br\s*=\s*[\"']([0-9]{1,7})[\"']")


def _parser_version() -> str:
    from importlib.metadata import version

    try:
        return f"1+python-calamine-{version('python-calamine')}"
    except Exception:  # pragma: no cover - the package is installed with the extractor
        return "1+python-calamine"


def _corrupt(message: str) -> ExtractionError:
    return ExtractionError(ErrorCode.CORRUPT, message)


# ---------------------------------------------------------------------------------------------------------------
# The package


@dataclass
class Package:
    zf: zipfile.ZipFile
    names: dict[str, str]  # normalized part name (forward slashes, no leading "/") -> the zip's own name
    charts: ChartCache = field(default_factory=ChartCache)  # each chart part read once (xlsx_charts)

    def has(self, part: str) -> bool:
        return part in self.names

    def read(self, part: str) -> bytes:
        return read_member(self.zf, self.names[part], KIND)


def workbook_package(zf: zipfile.ZipFile) -> Package:
    """The package ``zipsafe.with_package`` opened (as docx and pptx are), every XML part checked for a DTD before
    calamine, which reads the parts itself, sees any."""
    names = {part_name(info.filename): info.filename for info in zf.infolist()}  # unique: ``open_package`` checks
    for info in zf.infolist():  # before calamine or lxml reads a part
        if is_xml_name(info.filename):
            refuse_member_dtd(zf, info, KIND)
    return Package(zf, names)


def _check_prolog(pkg: Package, part: str) -> None:
    """Refuse a part that declares a DTD (``safe_xml``), reading no further than its prolog."""
    refuse_member_dtd(pkg.zf, pkg.zf.getinfo(pkg.names[part]), KIND)


def _parse_xml(pkg: Package, part: str) -> Any:
    return safe_xml.parse(pkg.read(part), part, KIND)


def _local(tag: Any) -> str:
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _attr(el: Any, name: str) -> str | None:
    """An attribute by local name, whatever its namespace (r:id in Transitional or Strict)."""
    for k, v in el.attrib.items():
        if _local(k) == name:
            return str(v)
    return None


def _rels(pkg: Package, source: str) -> dict[str, tuple[str, str]]:
    """Relationships of ``source``: id -> (type, target part)."""
    base = posixpath.dirname(source)
    rels_part = posixpath.join(base, "_rels", posixpath.basename(source) + ".rels")
    if not pkg.has(rels_part):
        return {}
    root = _parse_xml(pkg, rels_part)
    out: dict[str, tuple[str, str]] = {}
    for el in root.iter():
        if _local(el.tag) != "Relationship":
            continue
        rid, rtype, target = el.get("Id"), el.get("Type") or "", el.get("Target") or ""
        if not rid or el.get("TargetMode") == "External":
            continue
        target = target.replace("\\", "/")
        path = target.lstrip("/") if target.startswith("/") else posixpath.normpath(posixpath.join(base, target))
        out[rid] = (rtype, path)
    return out


@dataclass
class SheetInfo:
    name: str
    state: str  # visible, hidden, veryHidden
    kind: str  # worksheet, chartsheet, dialogsheet, macrosheet
    part: str | None


@dataclass
class WorkbookInfo:
    sheets: list[SheetInfo] = field(default_factory=list)
    date1904: bool = False
    full_calc_on_load: bool = False  # calcPr fullCalcOnLoad: the saved formula results are to be recomputed
    styles_part: str | None = None
    rels: dict[str, tuple[str, str]] = field(default_factory=dict)  # the workbook part's relationships


def read_workbook_info(pkg: Package) -> WorkbookInfo:
    root_rels_part = "_rels/.rels"
    workbook_part = None
    if pkg.has(root_rels_part):
        for rtype, target in _rels(pkg, "").values():
            if rtype.endswith(REL_OFFICE_DOCUMENT):
                workbook_part = target
                break
    if workbook_part is None and pkg.has("xl/workbook.xml"):
        workbook_part = "xl/workbook.xml"
    if workbook_part is None or not pkg.has(workbook_part):
        raise no_main_part(KIND, "xl/workbook.xml")
    root = _parse_xml(pkg, workbook_part)
    rels = _rels(pkg, workbook_part)
    for _rtype, target in rels.values():  # calamine reads these whatever their names end with
        if pkg.has(target) and not is_xml_name(target):
            _check_prolog(pkg, target)
    info = WorkbookInfo(rels=rels)
    info.styles_part = next((t for rtype, t in rels.values() if rtype.endswith("/styles") and pkg.has(t)), None)
    for el in root.iter():
        local = _local(el.tag)
        if local == "workbookPr":
            info.date1904 = (el.get("date1904") or "").lower() in ("1", "true")
        elif local == "calcPr":
            info.full_calc_on_load = (el.get("fullCalcOnLoad") or "").lower() in ("1", "true")
        elif local == "sheet":
            name = el.get("name") or ""
            rid = _attr(el, "id")
            rtype, part = rels.get(rid or "", ("", None))
            kind = rtype.rsplit("/", 1)[-1].lower() if rtype else "worksheet"
            info.sheets.append(SheetInfo(name, el.get("state") or "visible", kind, part))
    return info


# ---------------------------------------------------------------------------------------------------------------
# Cells


def col_letters(col: int) -> str:
    """0-based column index -> letters (0 -> A, 26 -> AA)."""
    out = ""
    col += 1
    while col:
        col, rem = divmod(col - 1, 26)
        out = chr(65 + rem) + out
    return out


def col_index(letters: str) -> int:
    n = 0
    for ch in letters.upper():
        n = n * 26 + (ord(ch) - 64)
    return n - 1


def cell_ref(row: int, col: int) -> str:
    return f"{col_letters(col)}{row + 1}"


def _scan_errors(xml: bytes, rich: dict[tuple[int, int], int] | None = None) -> dict[tuple[int, int], str]:
    """(row, col) 0-based -> the error text, for cells of type e; ``rich`` (when given) gets each such cell's ``vm``
    (a rich value's metadata: a picture in the cell, ``xlsx_richdata``)."""
    out: dict[tuple[int, int], str] = {}
    # Most sheets hold no error cell. The regex has no literal to skip ahead by (0.3 s on a 37 MB sheet): the quoted
    # ``e`` it needs, one of four spellings, is found first by bytes.find (a few times faster).
    if not any(q in xml for q in _QUOTED_E) or _ERROR_TYPE.search(xml) is None:
        return out
    for m in _ERROR_CELL.finditer(xml):
        ref = _REF_ATTR.search(m.group(1))
        if ref is None:  # placed by position, as calamine places it: the whole sheet is walked (rare)
            return _positional_errors(xml, rich)
        _error_cell(m, (int(ref.group(2)) - 1, col_index(ref.group(1).decode())), out, rich)
    return out


def _error_cell(
    m: re.Match[bytes], where: tuple[int, int], out: dict[tuple[int, int], str], rich: dict[tuple[int, int], int] | None
) -> None:
    v = _V.search(m.group(2))
    if v is None:
        return
    text = html.unescape(v.group(1).decode("utf-8", "replace")).strip()
    if text:
        out[where] = text
        if rich is not None:
            vm = _VM_ATTR.search(m.group(1))
            if vm is not None:
                rich[where] = int(vm.group(1))


def _positional_errors(xml: bytes, rich: dict[tuple[int, int], int] | None) -> dict[tuple[int, int], str]:
    """``_scan_errors`` for a sheet with cells (or rows) without an ``r``: a row without one follows the row before,
    a cell without one the cell before in its row (calamine's and Excel's reading)."""
    out: dict[tuple[int, int], str] = {}
    row, col = -1, -1
    for m in _ROW_OR_CELL.finditer(xml):
        attrs = m.group(2)
        if m.group(1) == b"row":
            r = _ROW_NUMBER.search(attrs)
            row, col = (int(r.group(1)) - 1 if r is not None else row + 1), -1
            continue
        ref = _REF_ATTR.search(attrs)
        if ref is not None:
            row, col = int(ref.group(2)) - 1, col_index(ref.group(1).decode())
        else:
            col += 1
        if m.group(3) or _ERROR_TYPE.search(attrs) is None:
            continue
        cell = _ERROR_CELL.match(xml, m.start())
        if cell is not None and row >= 0:
            _error_cell(cell, (row, col), out, rich)
    return out


@dataclass
class Formulas:
    """A sheet's formula cells, as its XML holds them."""

    found: dict[str, str] = field(default_factory=dict)  # the first ``limit`` formulas with text, by cell
    more: bool = False  # formulas with text past those
    cached: int = 0  # formula cells with a saved result
    unsaved: int = 0  # formula cells with none (openpyxl writes every formula so; a shared formula's other cells)
    unsaved_refs: list[str] = field(default_factory=list)  # the first ``limit`` of them


def _scan_formulas(xml: bytes, limit: int) -> Formulas:
    """The sheet's formulas (``Formulas``). A formula cell has no saved result when it has no ``<v>`` or an empty
    one, unless it is of type ``str`` (a formula whose result is the empty text, as Excel saves it)."""
    out = Formulas()
    if b"<f" not in xml and b":f" not in xml:
        return out
    found = out.found
    for m in _FORMULA_CELL.finditer(xml):
        attrs = m.group(1)
        ref = _REF_ATTR.search(attrs)
        name = f"{ref.group(1).decode().upper()}{int(ref.group(2))}" if ref is not None else None
        value = m.group(4)
        if value or (value is not None and _STR_TYPE.search(attrs) is not None):
            out.cached += 1
        else:
            out.unsaved += 1
            if name is not None and len(out.unsaved_refs) < limit:
                out.unsaved_refs.append(name)
        body = m.group(3)
        if name is None or not body or out.more:
            continue
        if len(found) >= limit:
            out.more = True
            continue
        text = html.unescape(body.decode("utf-8", "replace"))
        found[name] = clean_str("=" + text)[:2000]
    return out


def _kind(v: Any) -> str:
    t = type(v)
    if t is float:
        return "number"
    if t is str:
        return "string"
    if t is bool:
        return "bool"
    if t is _dt.date:
        return "date"
    if t is _dt.datetime:
        return "datetime"
    if t is _dt.time:
        return "time"
    if t is _dt.timedelta:
        return "duration"
    if t is int:
        return "number"
    return "string"


def _converter(kind: str, col_type: str) -> Callable[[Any], Any]:
    if kind == "number":
        exact = col_type == "number"
        return lambda v: number_from_float(float(v), exact_text=exact)
    if kind == "date":
        return lambda v: v.isoformat()
    if kind == "datetime":
        return format_datetime
    if kind == "time":
        return format_time
    if kind == "duration":
        return format_timedelta
    if kind == "string":
        return clean_str
    return lambda v: v


def convert_column(values: list[Any], types: set[type] | None = None) -> tuple[str, list[Any], int]:
    """Calamine values of one column -> (column type, JSON-ready values, count of NaN/Inf dropped).

    ``""`` (an empty cell) is null; an error dict stays as it is and fits any type. ``types``: the values' types,
    when the caller has them. An int (a whole number's stored digits, ``xlsx_cells``) is exact: past int64 its digits
    in a number column.
    """
    if types is None:
        types = set(map(type, values))
    kinds: set[str] = set()
    for t in types:
        if t is str:
            if any(v for v in values if type(v) is str):
                kinds.add("string")
        elif t is dict or t is type(None):
            continue
        else:
            kinds.add(_kind(next(v for v in values if type(v) is t)))
    col_type = column_type(kinds)
    # One converter per Python type, looked up per value (a comprehension, no per-value branching in Python); a
    # column of one type maps its converter in C.
    by_type: dict[type, Callable[[Any], Any]] = {type(None): _none, dict: _same, str: _str_or_none}
    for t in types:
        if t not in by_type:
            by_type[t] = _converter(_kind_of_type(t), col_type)
    if int in by_type:
        by_type[int] = _exact_int if col_type == "number" else _int_number
    if float in by_type and col_type == "number":
        by_type[float] = exact_number  # number_from_float(float(v), exact_text=True), without the two calls
    only = next(iter(types)) if len(types) == 1 else None
    if only is float and col_type == "number":
        out: list[Any] = exact_numbers(values)
    elif only is str and all(values):  # no empty cell: the values as they are when all ASCII (clean_str's no-op)
        out = list(values) if all(map(str.isascii, values)) else list(map(clean_str, values))
    elif only is not None:
        out = list(map(by_type[only], values))
    else:
        out = [by_type[type(v)](v) for v in values]
    dropped = 0
    if float in by_type and None in out:
        dropped = sum(1 for v, o in zip(values, out, strict=True) if o is None and type(v) is float)
    if col_type in _TEXT_TYPES and set(map(type, out)) <= _STR_OR_NONE:
        out = shared_texts(out)  # calamine makes a string per cell, a shared string's too
    return col_type, out, dropped


_TEXT_TYPES: Final = frozenset({"string", "date", "datetime", "time", "duration"})
_STR_OR_NONE: Final = frozenset({str, type(None)})


def _none(v: Any) -> None:
    return None


def _exact_int(v: int) -> int | str:
    return v if INT64_MIN <= v <= INT64_MAX else str(v)


def _int_number(v: int) -> int | float:  # in a mixed column a number is a JSON number
    return v if INT64_MIN <= v <= INT64_MAX else float(v)


def _same(v: Any) -> Any:
    return v


def _str_or_none(v: str) -> str | None:
    return clean_str(v) if v else None


def _kind_of_type(t: type) -> str:
    return {
        float: "number",
        int: "number",
        bool: "bool",
        _dt.date: "date",
        _dt.datetime: "datetime",
        _dt.time: "time",
        _dt.timedelta: "duration",
    }.get(t, "string")


class SecondLook:
    """The workbook's lazily read facts a sheet's second look needs (``xlsx_cells``): the styles' number-format kinds,
    read once, and each sheet's XML, read again only when a cell needs it."""

    def __init__(self, pkg: Package, info: WorkbookInfo) -> None:
        self.pkg = pkg
        self.info = info
        self._styles: list[str | None] | None = None
        self._date_styles: frozenset[int] | None = None

    def styles(self) -> list[str | None]:
        if self._styles is None:
            part = self.info.styles_part
            self._styles = style_classes(_parse_xml(self.pkg, part)) if part is not None else []
        return self._styles

    def date_styles(self) -> frozenset[int]:
        if self._date_styles is None:
            self._date_styles = date_part_styles(self.styles())
        return self._date_styles

    def sheet(self, info: SheetInfo | None) -> SheetLook | None:
        if info is None or not info.part or not self.pkg.has(info.part):
            return None
        return SheetLook(self, info.part, self.info.date1904)


@dataclass
class SheetLook:
    book: SecondLook
    part: str
    date1904: bool
    _xml: bytes | None = None

    def restore(self, values: list[Any], rows: list[int], row0: int, col: int, notes: Restored) -> None:
        """Put in ``values`` (one column, ``values[i]`` the sheet's 0-based row ``row0 + i``) what Excel shows for
        each of ``rows`` (``xlsx_cells.restore``)."""
        styles = self.book.styles()
        floats = [i for i in rows if type(values[i]) is float]  # past 2^53: any style; a date's: a date format's
        dated = [i for i in rows if type(values[i]) is not float] if self.book.date_styles() else []
        rows = sorted(floats + dated) if floats and dated else floats or dated
        if not rows:
            return
        if self._xml is None:
            self._xml = self.book.pkg.read(self.part)
        letters = col_letters(col)
        only = None if floats else self.book.date_styles()
        sources = column_sources(self._xml, letters, [row0 + i + 1 for i in rows], only)
        for i in rows:
            src = sources.get(row0 + i + 1)
            if src is not None:
                where = f"{letters}{row0 + i + 1}"
                values[i] = restore(values[i], src, styles, date1904=self.date1904, where=where, notes=notes)


# ---------------------------------------------------------------------------------------------------------------


def _body(ctx: FormatContext) -> dict[str, Any]:
    return with_package(ctx.data, KIND, lambda zf: _extract(zf, ctx.data, ctx.request), ctx.limits)


extract = format_module(_body)


def _extract(zf: zipfile.ZipFile, data: bytes, request: ExtractRequest) -> dict[str, Any]:
    pkg = workbook_package(zf)
    limits = request.limits
    wb_info = read_workbook_info(pkg)
    try:
        import python_calamine as pc

        book = pc.CalamineWorkbook.from_filelike(io.BytesIO(data))
        meta = list(book.sheets_metadata)
    except BaseException as exc:  # calamine's own errors, and a Rust panic (pyo3's PanicException is no Exception)
        _reraise_fatal(exc)
        raise _corrupt(f"the xlsx workbook cannot be read: {' '.join(str(exc).split())[:300]}") from None

    builder = ArtifactBuilder(
        "xlsx", parser=PARSER, parser_version=_parser_version(), unit="rows", options=request.options()
    )
    builder.attrs["date1904"] = wb_info.date1904
    budget = output_budget(request, BudgetKind.TABLE)
    by_name = {s.name: s for s in wb_info.sheets}
    chartsheets: list[str] = []
    other_sheets: list[str] = []  # dialog sheets, macro sheets: no worksheet cells calamine reads
    total_rows = kept_rows = 0
    cached_formulas = 0
    second_look = SecondLook(pkg, wb_info)
    parts = Book(
        pkg.zf, pkg.names, lambda part: _rels(pkg, part), lambda part: _parse_xml(pkg, part), limits, pkg.charts
    )
    rich_values = RichValues(parts, wb_info.rels)
    persons = Persons(parts, wb_info.rels)
    if wb_info.sheets and not meta:
        raise _corrupt(f"the workbook lists {len(wb_info.sheets)} sheets but none of them can be read")
    types = [str(m.typ).rsplit(".", 1)[-1].lower() for m in meta]
    last_worksheet = max((i for i, typ in enumerate(types) if typ == "worksheet"), default=-1)
    for i, (m, typ) in enumerate(zip(meta, types, strict=True)):
        name = str(m.name)
        info = by_name.get(name)
        state = info.state if info is not None else _state_from_calamine(m)
        if typ != "worksheet":
            (chartsheets if typ == "chartsheet" else other_sheets).append(name)
            part_xml = pkg.read(info.part) if info is not None and info.part and pkg.has(info.part) else b""
            _sheet_extras(builder, budget, parts, name, info=info, page_text=header_footer(part_xml), persons=persons)
            continue
        xml = b""
        if info is not None and info.part and pkg.has(info.part):
            xml = pkg.read(info.part)
        cells = box_cells(xml, limits.xlsx_max_sheet_cells)
        if cells is not None:
            raise ExtractionError(
                ErrorCode.RESOURCE_LIMIT,
                f"sheet {name!r} spans {cells:,} cells from its first to its last cell, over this service's limit of "
                f"{limits.xlsx_max_sheet_cells:,} cells per sheet (a stray cell far from the data does this: "
                f"delete the empty "
                "rows and columns in between, or move it)",
            )
        # what calamine drops, read from the sheet's XML now, so the XML (often several times the file) is gone
        # before calamine's cells are (big.xlsx: 37 MB)
        rich: dict[tuple[int, int], int] | None = {} if rich_values.present else None
        errors = _scan_errors(xml, rich) if xml else {}
        formulas = _scan_formulas(xml, limits.xlsx_max_formulas) if xml else Formulas()
        cached_formulas += formulas.cached
        page_text = header_footer(xml) if xml else None
        del xml
        try:
            sheet = book.get_sheet_by_name(name)
            if i == last_worksheet:
                # the workbook (its shared strings) is read: its heap goes back before the sheet's cells become
                # Python objects (big.xlsx: 37 MB off the extraction's peak)
                del book
                release_heap(len(data))
            grid = sheet.to_python(skip_empty_area=True)
            start = sheet.start
            merged = list(sheet.merged_cell_ranges or [])
            # calamine's sheet holds its whole cell box (32 bytes a cell, one native allocation): gone before the
            # rows become blocks, not after (big.xlsx: 40 MB off the extraction's peak)
            del sheet
        except BaseException as exc:
            _reraise_fatal(exc)
            raise _corrupt(
                f"sheet {name!r} of the xlsx workbook cannot be read: {' '.join(str(exc).split())[:300]}"
            ) from None
        cell_pictures = _rich_cells(grid, start, errors, rich, rich_values)
        total, kept = _add_sheet(
            builder,
            budget,
            request=request,
            name=name,
            state=state,
            grid=grid,
            start=start,
            merged=merged,
            errors=errors,
            formulas=formulas,
            second_look=second_look.sheet(info),
            cell_pictures=cell_pictures,
        )
        del grid
        for cell, row, picture in cell_pictures:
            locator = make_locator(sheet=name, row_start=row, row_end=row)
            attrs = {"image": {"alt": picture.alt}, "cell": cell}
            if not parts.picture(builder, budget, sheet=name, locator=locator, attrs=attrs, part=picture.part):
                builder.fail(f"sheet {name!r} cell pictures", OUTPUT_LIMIT_REASON)
                break
        _sheet_extras(builder, budget, parts, name, info=info, page_text=page_text, persons=persons)
        total_rows += total
        kept_rows += kept
    if chartsheets:
        builder.attrs["chartsheets"] = chartsheets
    if other_sheets:
        builder.attrs["other_sheets"] = other_sheets
    if wb_info.full_calc_on_load and cached_formulas:
        builder.warn(
            f"the workbook asks to be recalculated when it is opened (calcPr fullCalcOnLoad): its {cached_formulas} "
            "formula value(s) are the results saved in the file, which may be stale (some writers save 0 for every "
            "formula)"
        )
    parts.finish(builder)
    builder.coverage(total=total_rows, extracted=kept_rows)
    return builder.build()


def _sheet_extras(
    builder: ArtifactBuilder,
    budget: OutputBudget,
    book: Book,
    name: str,
    *,
    info: SheetInfo | None,
    page_text: bytes | None,
    persons: Persons,
) -> None:
    """What the sheet shows besides its cells, after its rows: notes and comment threads, its background picture,
    its drawings (charts, text boxes, pictures, SmartArt), then its page header and footer (``xlsx_notes``,
    ``xlsx_drawings``). Parts are read only when the sheet's relationships name them."""
    sheet_rels = book.rels(info.part) if info is not None and info.part and book.has(info.part) else {}
    if sheet_rels:
        add_sheet_comments(builder, budget, book, sheet=name, sheet_rels=sheet_rels, persons=persons)
        add_background(builder, budget, book, sheet=name, sheet_rels=sheet_rels)
        add_sheet_drawings(builder, budget, book, sheet=name, sheet_rels=sheet_rels)
    add_header_footer(builder, budget, book, sheet=name, element=page_text)


def _rich_cells(
    grid: list[list[Any]],
    start: tuple[int, int] | None,
    errors: dict[tuple[int, int], str],
    rich: dict[tuple[int, int], int] | None,
    rich_values: RichValues,
) -> list[tuple[str, int, RichCell]]:
    """Error cells that hold a rich value (``xlsx_richdata``): a picture is taken out of ``errors`` (its cell is
    null), a linked data type's display string replaces its error; returns the pictures as (cell, 1-based row,
    picture), in row then column order."""
    if not rich:
        return []
    r0, c0 = (start or (0, 0))[0], (start or (0, 0))[1]
    out: list[tuple[str, int, RichCell]] = []
    for (r, c), vm in sorted(rich.items()):
        value = rich_values.cell(vm)
        if value is None:
            continue
        del errors[(r, c)]
        i, j = r - r0, c - c0
        if 0 <= i < len(grid) and 0 <= j < len(grid[i]):
            grid[i][j] = None if value.picture else value.text
        if value.picture:
            out.append((cell_ref(r, c), r + 1, value))
    return out


def _reraise_fatal(exc: BaseException) -> None:
    if isinstance(exc, KeyboardInterrupt | SystemExit | MemoryError):
        raise exc


def _state_from_calamine(m: Any) -> str:
    v = str(m.visible).rsplit(".", 1)[-1]
    return {"Visible": "visible", "Hidden": "hidden", "VeryHidden": "veryHidden"}.get(v, "visible")


def _add_sheet(
    builder: ArtifactBuilder,
    budget: OutputBudget,
    *,
    request: ExtractRequest,
    name: str,
    state: str,
    grid: list[list[Any]],
    start: tuple[int, int] | None,
    merged: list[Any],
    errors: dict[tuple[int, int], str],
    formulas: Formulas,
    second_look: SheetLook | None = None,
    cell_pictures: Sequence[tuple[str, int, RichCell]] = (),
) -> tuple[int, int]:
    """Add the sheet's table and row blocks; return (data rows, rows kept). ``grid`` is emptied once its values
    are in the table's columns."""
    attrs: dict[str, Any] = {"state": state}
    if state != "visible":
        attrs["hidden"] = True
    r0, c0 = (start or (0, 0))[0], (start or (0, 0))[1]
    # Overlay what calamine drops: error cells; null out the non-top-left cells of merged ranges.
    for (r, c), text in errors.items():
        i, j = r - r0, c - c0
        if 0 <= i < len(grid) and 0 <= j < len(grid[i]):
            grid[i][j] = {"error": text}
    if merged:
        refs: list[str] = []
        for (mr0, mc0), (mr1, mc1) in merged:
            if len(refs) < request.limits.xlsx_max_merged:
                refs.append(f"{cell_ref(mr0, mc0)}:{cell_ref(mr1, mc1)}")
            for i in range(max(mr0 - r0, 0), min(mr1 - r0 + 1, len(grid))):
                row = grid[i]
                for j in range(max(mc0 - c0, 0), min(mc1 - c0 + 1, len(row))):
                    if (i + r0, j + c0) != (mr0, mc0):
                        row[j] = None
        attrs["merged"] = refs
        if len(merged) > request.limits.xlsx_max_merged:
            attrs["merged_truncated"] = True
    if cell_pictures:
        attrs["cell_pictures"] = [{"cell": cell, "alt": p.alt} for cell, _row, p in cell_pictures[:MAX_LISTED]]
        if len(cell_pictures) > MAX_LISTED:
            attrs["cell_pictures_truncated"] = True
    if formulas.found:
        attrs["formulas"] = formulas.found
        if formulas.more:
            attrs["formulas_truncated"] = True
    if formulas.unsaved:
        # no value to read: Excel computes them on opening, this service computes no formula
        attrs["formulas_without_result"] = formulas.unsaved_refs
        builder.lose(LOST_FORMULA_VALUES)
        listed = ", ".join(formulas.unsaved_refs[:LISTED_CELLS])
        more_refs = "..." if formulas.unsaved > LISTED_CELLS else ""
        builder.warn(
            f"sheet {name!r}: {formulas.unsaved} formula cell(s) have no saved result ({listed}{more_refs}), so their "
            "values are null: this service computes no formula; open and save the file in Excel to store them"
        )

    # The used range: first and last non-empty rows and columns.
    def filled(v: Any) -> bool:
        return v is not None and v != ""

    # (a row is filled unless every cell is None or "": counted in C, a million cells in a few ms)
    nonempty_rows = [i for i, row in enumerate(grid) if row.count(None) + row.count("") != len(row)]
    if not nonempty_rows:
        add_table(
            builder, budget, name=name, columns=[], rows=[], first_row=1, header_rows=1,
            table_locator=make_locator(sheet=name), attrs=attrs, section_path=[name], sheet=name,
        )  # fmt: skip
        return 0, 0
    first, last = nonempty_rows[0], nonempty_rows[-1]
    width = max(len(row) for row in grid)
    used_cols = [j for j in range(width) if any(j < len(grid[i]) and filled(grid[i][j]) for i in nonempty_rows)]
    cfirst, clast = used_cols[0], used_cols[-1]
    attrs["range"] = f"{cell_ref(first + r0, cfirst + c0)}:{cell_ref(last + r0, clast + c0)}"

    header = grid[first]
    body = grid[first + 1 : last + 1]
    columns: list[tuple[str, str]] = []
    typed: list[Sequence[Any]] = []
    dropped = 0
    shortest = min(map(len, body), default=0)
    restored = Restored()
    for j in range(cfirst, clast + 1):
        if j < shortest:  # every row reaches the column (the usual sheet): picked in C
            col_values = list(map(operator.itemgetter(j), body))
        else:
            col_values = [row[j] if j < len(row) else None for row in body]
        types = set(map(type, col_values))
        if second_look is not None:
            suspects = suspect_rows(col_values, types, second_look.date1904)
            if suspects:
                second_look.restore(col_values, suspects, first + r0 + 1, j + c0, restored)
                types = set(map(type, col_values))
        col_type, values, bad = convert_column(col_values, types)
        dropped += bad
        h = header[j] if j < len(header) else None
        if filled(h):
            _, hv, _ = convert_column([h])
            col_name = value_text(hv[0]).strip() or col_letters(j + c0)
        else:
            col_name = col_letters(j + c0)
        columns.append((col_name, col_type))
        typed.append(values)
    # the columns hold every value now: the sheet's own cells (and those a column replaced) go before the table's
    # blocks are made (big.xlsx: a million cells); the typed columns are the table's rows (``Columns``: the builder
    # checks and keeps them by column, and no list is made a row)
    grid.clear()
    rows = Columns(typed, len(body) if typed else 0)
    del body, typed
    if dropped:
        builder.warn(f"sheet {name!r}: {dropped} NaN or infinite value(s) sent as null")
    for warning in restored.warnings(name):
        builder.warn(warning)
    header_row_no = first + r0 + 1
    total = len(rows)
    _, kept = add_table(
        builder,
        budget,
        name=name,
        columns=columns,
        rows=rows,
        first_row=header_row_no + 1,
        header_rows=1,
        table_locator=make_locator(sheet=name, row_start=header_row_no, row_end=last + r0 + 1),
        attrs=attrs,
        section_path=[name],
        sheet=name,
    )
    report_cut(builder, f"sheet {name!r}", kept, total, request.max_output_bytes, first_row=header_row_no + 1)
    return total, kept
