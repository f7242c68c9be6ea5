"""Text a sheet shows outside its cells' values: cell notes and comment threads, and the page header and footer.

* **Notes** (legacy comments, the sheet's ``comments`` relationship, ``xl/commentsN.xml``) and **comment threads**
  (Excel 365, ``threadedComment`` relationship, ``xl/threadedComments/*.xml``; authors from the workbook's
  ``person`` part): one ``paragraph`` block per commented cell, in row then column order, with ``locator.sheet`` and
  the cell's row as ``row_start``/``row_end``, ``attrs.part`` ``comment``, ``attrs.cell`` (``"B2"``) and
  ``attrs.comment`` (``kind`` ``note`` or ``thread``, ``author`` when known, a thread's ``replies``). A note's text is
  its text as stored (Excel leads it with the author's name in bold); a thread's text is each comment on its own line,
  ``Name: text``. Excel also writes each thread as a legacy note for older versions ("[Threaded comment] Your
  version of Excel allows you to read..."): that copy is not read when the thread is.
* **Header and footer** (``headerFooter``: ``oddHeader``/``oddFooter``, ``evenHeader``/``evenFooter`` when
  ``differentOddEven``, ``firstHeader``/``firstFooter`` when ``differentFirst``), which Excel prints and shows in Page
  Layout view: a block each with ``attrs.part`` ``header``/``footer`` and ``attrs.kind`` ``default``/``even``/
  ``first`` (docx's names), its left, center and right sections one a line. Formatting codes (font, size, colour,
  bold, ...) are dropped; ``&A`` is the sheet's name; the fields that change per page or print are written as Excel's
  header dialog shows them (``&[Page]``, ``&[Pages]``, ``&[Date]``, ``&[Time]``, ``&[File]``, ``&[Path]``); a
  header picture (``&G``) is a picture whose pixels are not read.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass
from typing import Any, Final

from extract_fn.formats.ooxml_text import local, uint_attr
from extract_fn.formats.output_budget import OutputBudget
from extract_fn.formats.xlsx_drawings import Book, add_text
from shared.artifact_builder import ArtifactBuilder, make_locator

_CELL_REF = re.compile(r"\$?([A-Za-z]{1,3})\$?([0-9]{1,7})")
_THREAD_NOTE = "tc="  # the author Excel gives a thread's legacy copy: tc={thread id}
MAX_ROW: Final = 1_048_576


@dataclass
class _Comment:
    row: int
    col: int
    cell: str
    text: str
    attrs: dict[str, Any]


def _cell(ref: str | None) -> tuple[int, int, str] | None:
    """(1-based row, 0-based column, "B2") of a cell reference (a range's first cell), or None."""
    m = _CELL_REF.match((ref or "").strip())
    if m is None or not 1 <= int(m.group(2)) <= MAX_ROW:
        return None
    col = 0
    for ch in m.group(1).upper():
        col = col * 26 + ord(ch) - 64
    return int(m.group(2)), col - 1, f"{m.group(1).upper()}{int(m.group(2))}"


def _rich_text(el: Any) -> str:
    """The text of a ``text`` element (plain ``t`` or rich ``r``/``t`` runs), phonetic runs (``rPh``) left out."""
    parts: list[str] = []
    for c in el:
        name = local(c.tag)
        if name == "t":
            parts.append(c.text or "")
        elif name == "r":
            parts.extend(t.text or "" for t in c if local(t.tag) == "t")
    return "".join(parts).replace("_x000D_", "").strip()


class Persons:
    """The workbook's comment authors (``person`` part: id -> display name), read at the first thread."""

    def __init__(self, book: Book, workbook_rels: dict[str, tuple[str, str]]) -> None:
        self.book = book
        self.parts = [t for rtype, t in workbook_rels.values() if rtype.endswith("/person") and book.has(t)]
        self._names: dict[str, str] | None = None

    def name(self, builder: ArtifactBuilder, pid: str | None) -> str:
        if self._names is None:
            self._names = {}
            for part in self.parts:
                root = self.book.optional(builder, part, "comment authors")
                for el in root.iter() if root is not None else ():
                    if local(el.tag) == "person" and el.get("id"):
                        self._names[str(el.get("id"))] = " ".join((el.get("displayName") or "").split())
        return self._names.get(pid or "", "")


def _notes(builder: ArtifactBuilder, book: Book, part: str, sheet: str) -> list[_Comment]:
    root = book.optional(builder, part, f"sheet {sheet!r} notes")
    if root is None:
        return []
    authors: list[str] = []
    out: list[_Comment] = []
    for el in root:
        if local(el.tag) == "authors":
            authors = [" ".join((a.text or "").split()) for a in el if local(a.tag) == "author"]
        elif local(el.tag) == "commentList":
            for c in el:
                where = _cell(c.get("ref")) if local(c.tag) == "comment" else None
                body = next((t for t in c if local(t.tag) == "text"), None)
                if where is None or body is None:
                    continue
                text = _rich_text(body)
                aid = uint_attr(c.get("authorId"))
                author = authors[aid] if aid is not None and aid < len(authors) else ""
                attrs: dict[str, Any] = {"kind": "note"}
                if author.startswith(_THREAD_NOTE):
                    attrs["thread_copy"] = True
                elif author:
                    attrs["author"] = author
                if text:
                    out.append(_Comment(*where, text, attrs))
    return out


def _threads(builder: ArtifactBuilder, book: Book, part: str, sheet: str, persons: Persons) -> list[_Comment]:
    root = book.optional(builder, part, f"sheet {sheet!r} comment threads")
    if root is None:
        return []
    by_cell: dict[str, _Comment] = {}
    lines: dict[str, list[str]] = {}  # a thread's lines, joined once (not a copy of the text at each reply)
    for el in root:
        if local(el.tag) != "threadedComment":
            continue
        where = _cell(el.get("ref"))
        body = next((t for t in el if local(t.tag) == "text"), None)
        text = " ".join((body.text or "").split()) if body is not None else ""
        if where is None or not text:
            continue
        author = persons.name(builder, el.get("personId"))
        line = f"{author}: {text}" if author else text
        thread = by_cell.get(where[2])
        if thread is None:
            attrs: dict[str, Any] = {"kind": "thread", **({"author": author} if author else {}), "replies": 0}
            by_cell[where[2]] = _Comment(*where, line, attrs)
            lines[where[2]] = [line]
        else:
            lines[where[2]].append(line)
            thread.attrs["replies"] += 1
    for cell, thread in by_cell.items():
        thread.text = "\n".join(lines[cell])
    return list(by_cell.values())


def add_sheet_comments(
    builder: ArtifactBuilder,
    budget: OutputBudget,
    book: Book,
    *,
    sheet: str,
    sheet_rels: dict[str, tuple[str, str]],
    persons: Persons,
) -> None:
    """The sheet's notes and comment threads, a block per cell (see the module's docstring)."""
    notes: list[_Comment] = []
    threads: list[_Comment] = []
    for rtype, target in sheet_rels.values():
        if not book.has(target):
            continue
        if rtype.endswith("/comments"):
            notes += _notes(builder, book, target, sheet)
        elif rtype.endswith("/threadedComment"):
            threads += _threads(builder, book, target, sheet, persons)
    if not notes and not threads:
        return
    threaded = {t.cell for t in threads}
    kept: list[_Comment] = []
    for n in notes:
        # a thread's legacy copy is left out when its thread is read (else the copy is what is left to read)
        if not (n.attrs.pop("thread_copy", False) and n.cell in threaded):
            kept.append(n)
    comments = sorted(kept + threads, key=lambda c: (c.row, c.col))
    left = 0
    for c in comments:
        attrs = {"part": "comment", "cell": c.cell, "comment": c.attrs}
        locator = make_locator(sheet=sheet, row_start=c.row, row_end=c.row)
        if not add_text(builder, budget, c.text, sheet=sheet, attrs=attrs, locator=locator):
            left += 1
    if left:
        from extract_fn.formats.textblocks import OUTPUT_LIMIT_REASON

        builder.fail(f"sheet {sheet!r} comments", f"{left} {OUTPUT_LIMIT_REASON}")


# ---------------------------------------------------------------------------------------------------------------
# Header and footer

_HEADER_FOOTER = re.compile(
    rb"<(?:[A-Za-z_][\w.-]*:)?headerFooter\b([^>]*?)(?:/>|>(.*?)</(?:[A-Za-z_][\w.-]*:)?headerFooter>)", re.DOTALL
)
# a part's opening tag (group 1 empty; a self-closing one has group 4 ending in "/") or closing tag (group 4 None)
_HF_TAG = re.compile(rb"<(/?)(?:[A-Za-z_][\w.-]*:)?(odd|even|first)(Header|Footer)(\s[^>]*)?>")
_FIELDS: Final = {
    "P": "&[Page]",
    "N": "&[Pages]",
    "D": "&[Date]",
    "T": "&[Time]",
    "F": "&[File]",
    "Z": "&[Path]",
}
_KIND: Final = {"odd": "default", "even": "even", "first": "first"}


def header_footer_text(code: str, sheet: str) -> tuple[str, int]:
    """The text Excel prints for a header or footer string (its ``&L``/``&C``/``&R`` sections one a line, the
    formatting codes dropped) and how many pictures (``&G``) it places."""
    sections: dict[str, list[str]] = {"L": [], "C": [], "R": []}
    current = sections["C"]  # text before any section code is centred
    pictures = 0
    i, n = 0, len(code)
    while i < n:
        ch = code[i]
        if ch != "&" or i + 1 >= n:
            current.append(ch)
            i += 1
            continue
        nxt = code[i + 1]
        i += 2
        if nxt == "&":
            current.append("&")
        elif nxt in sections:
            current = sections[nxt]
        elif nxt in _FIELDS:
            current.append(_FIELDS[nxt])
        elif nxt == "A":
            current.append(sheet)
        elif nxt == "G":
            pictures += 1
        elif nxt == '"':  # &"font,style"
            end = code.find('"', i)
            i = n if end < 0 else end + 1
        elif nxt.isdigit():  # &nn: the font size
            while i < n and code[i].isdigit():
                i += 1
        elif nxt == "K":  # &KRRGGBB, or a theme colour &KTTSNNN: six characters either way
            i = min(i + 6, n)
        # any other code (&B, &I, &U, &E, &S, &X, &Y, &O, &H) toggles formatting: dropped
    lines = ["".join(sections[k]).strip() for k in "LCR"]
    return "\n".join(line for line in lines if line), pictures


def header_footer(xml: bytes) -> bytes | None:
    """The sheet XML's ``headerFooter`` element (it follows the cells: looked for after ``</sheetData>`` only, so a
    large sheet costs one backward search), or None."""
    end = xml.rfind(b"sheetData>")
    tail = xml[end:] if end >= 0 else xml
    if b"eaderFooter" not in tail:
        return None
    m = _HEADER_FOOTER.search(tail)
    return m.group(0) if m is not None else None


def _hf_parts(xml: bytes) -> list[tuple[tuple[bytes, bytes], bytes]]:
    """Each ``oddHeader`` ... ``firstFooter`` element's (name, contents), in order: one pass over the tags. An
    opening tag is matched with the first closing tag of its name after it; one that has none, or is self-closing,
    opens nothing (a search per opening tag to the end for its close would be quadratic)."""
    tags = list(_HF_TAG.finditer(xml))
    last_close: dict[tuple[bytes, bytes], int] = {}
    for t in tags:
        if t.group(1) and t.group(4) is None:
            last_close[t.group(2), t.group(3)] = t.start()
    out: list[tuple[tuple[bytes, bytes], bytes]] = []
    open_name: tuple[bytes, bytes] | None = None
    open_end = 0
    for t in tags:
        name = (t.group(2), t.group(3))
        if open_name is None:
            if not t.group(1) and not (t.group(4) or b"").endswith(b"/") and last_close.get(name, -1) >= t.end():
                open_name, open_end = name, t.end()
        elif name == open_name and t.group(1) and t.group(4) is None:
            out.append((name, xml[open_end : t.start()]))
            open_name = None
    return out


def add_header_footer(
    builder: ArtifactBuilder, budget: OutputBudget, book: Book, *, sheet: str, element: bytes | None
) -> None:
    """The sheet's header and footer blocks (see the module's docstring)."""
    if not element:
        return
    m = _HEADER_FOOTER.match(element)
    if m is None or not m.group(2):
        return
    flags = m.group(1)
    used = {"odd"}
    if re.search(rb"\bdifferentOddEven\s*=\s*[\"'](?:1|true)[\"']", flags):
        used.add("even")
    if re.search(rb"\bdifferentFirst\s*=\s*[\"'](?:1|true)[\"']", flags):
        used.add("first")
    found: dict[tuple[str, str], str] = {}
    for (which_b, part_b), body in _hf_parts(m.group(2)):
        which, part = which_b.decode(), part_b.decode().lower()
        if which in used:
            found.setdefault((part, which), html.unescape(body.decode("utf-8", "replace")))
    left = 0
    for part in ("header", "footer"):
        for which in ("odd", "even", "first"):
            code = found.get((part, which))
            if code is None:
                continue
            text, pictures = header_footer_text(code, sheet)
            book.unread_pictures += pictures
            attrs = {"part": part, "kind": _KIND[which]}
            locator = make_locator(sheet=sheet)
            if text and not add_text(builder, budget, text, sheet=sheet, attrs=attrs, locator=locator):
                left += 1
    if left:
        from extract_fn.formats.textblocks import OUTPUT_LIMIT_REASON

        builder.fail(f"sheet {sheet!r} header and footer", f"{left} {OUTPUT_LIMIT_REASON}")
