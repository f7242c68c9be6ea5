"""Text fixes for what pdfium's text page gives, so a PDF's words read as a person reads them.

- ``compose``: TeX (and other typesetters) draw an accented letter as the letter and a spacing accent placed over
  it; pdfium gives both characters, the accent before the letter or after it ("na¨ıve", "Aviac¸a˜o"). The page
  reader (``pdf_format``) composes an accent with the neighbour its box lies over ("naïve", "Aviação"; a dotless i
  under an accent is an i).
- ``space_direction_changes``: in a right-to-left line (Arabic, Hebrew) pdfium gives the characters in logical order
  but leaves out the space between a left-to-right run and the right-to-left word next to it ("Pythonمن"); the two
  runs are separate words on the page (pdftotext keeps them apart with directional marks), so a space goes between a
  left-to-right letter and a right-to-left letter that touch.
"""

from __future__ import annotations

import re
import unicodedata

# spacing accent -> combining accent
_ACCENTS = {
    "\u00a8": "\u0308",  # diaeresis
    "\u00b4": "\u0301",  # acute
    "\u0060": "\u0300",  # grave
    "\u02c6": "\u0302",  # circumflex
    "\u005e": "\u0302",
    "\u02dc": "\u0303",  # tilde
    "\u00b8": "\u0327",  # cedilla
    "\u02c7": "\u030c",  # caron
    "\u02d8": "\u0306",  # breve
    "\u02d9": "\u0307",  # dot above
    "\u02da": "\u030a",  # ring above
    "\u02dd": "\u030b",  # double acute
    "\u00af": "\u0304",  # macron
    "\u02db": "\u0328",  # ogonek
}
_BASE = {"\u0131": "i", "\u0237": "j"}  # dotless i and j carry the accent's dot-free form
ACCENT_RE = re.compile("[" + re.escape("".join(_ACCENTS)) + "]")
_RTL_RE = re.compile("[\u0590-\u08ff\ufb1d-\ufdff\ufe70-\ufeff]")


def _compose(letter: str, accent: str) -> str | None:
    base = _BASE.get(letter, letter)
    composed = unicodedata.normalize("NFC", base + _ACCENTS[accent])
    return composed if len(composed) == 1 else None


def is_accent(ch: str) -> bool:
    return ch in _ACCENTS


def compose(letter: str, accent: str) -> str | None:
    """The letter with the spacing accent over (or under) it, if Unicode has it as one character."""
    if not (letter.isalpha() and accent in _ACCENTS):
        return None
    return _compose(letter, accent)


def _direction(ch: str) -> str:
    kind = unicodedata.bidirectional(ch)
    if kind in ("R", "AL"):
        return "R"
    if kind == "L":
        return "L"
    return ""


def space_direction_changes(text: str) -> str:
    """A space between a left-to-right letter and a right-to-left letter that touch (either way round)."""
    if text.isascii() or not _RTL_RE.search(text):
        return text
    out: list[str] = []
    prev = ""
    for ch in text:
        cur = _direction(ch) if ch.isalnum() else ""
        if cur and prev and cur != prev:
            out.append(" ")
        out.append(ch)
        prev = cur
    return "".join(out)
