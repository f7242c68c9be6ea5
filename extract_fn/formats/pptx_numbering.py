"""PowerPoint's automatic paragraph numbers (``a:buAutoNum``) as the slide shows them: ``1.``, ``a)``, ``(iv)``.

A paragraph with ``a:buAutoNum`` at level L (``a:pPr/@lvl``) takes the next number of level L in its text body
(from ``startAt``, 1 by default) and restarts the levels below it; a paragraph at level L without one restarts
level L and the levels below. Only numbers set on the slide's own paragraphs are read (a layout's or master's list
style that numbers a placeholder is not followed); bullet characters are not text and are left out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from extract_fn.formats.docx_numbering import letters, roman
from extract_fn.formats.ooxml_text import local

_BASES: dict[str, Callable[[int], str]] = {
    "arabic": str,
    "alphaLc": letters,
    "alphaUc": lambda n: letters(n).upper(),
    "romanLc": roman,
    "romanUc": lambda n: roman(n).upper(),
}
_SUFFIXES = {
    "Period": "{}.",
    "ParenR": "{})",
    "ParenBoth": "({})",
    "Plain": "{}",
    "Minus": "{} -",
    "DbPeriod": "{}.",
}


def auto_number(scheme: str, n: int) -> str:
    """A number in an ``ST_TextAutonumberScheme`` (``arabicPeriod`` -> ``3.``); unknown schemes as ``3.``."""
    for base, fn in _BASES.items():
        if scheme.startswith(base):
            pattern = _SUFFIXES.get(scheme[len(base) :], "{}.")
            return pattern.format(fn(n))
    return f"{n}."


class AutoNumbers:
    """The running numbers of one text body."""

    def __init__(self) -> None:
        self.counts: dict[int, int] = {}

    def label(self, ppr: Any | None) -> str:
        try:
            level = int(ppr.get("lvl") or "0") if ppr is not None else 0
        except ValueError:
            level = 0
        auto = next((c for c in ppr if local(c.tag) == "buAutoNum"), None) if ppr is not None else None
        for deeper in [k for k in self.counts if k > level or (auto is None and k == level)]:
            del self.counts[deeper]
        if auto is None:
            return ""
        try:
            start = int(auto.get("startAt") or "1")
        except ValueError:
            start = 1
        n = self.counts.get(level, start - 1) + 1
        self.counts[level] = n
        return auto_number(auto.get("type") or "arabicPeriod", n)
