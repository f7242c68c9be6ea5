"""PowerPoint's automatic paragraph numbers (``a:buAutoNum``) as the slide shows them: ``1.``, ``a)``, ``(iv)``.

A paragraph with ``a:buAutoNum`` at level L (``a:pPr/@lvl``) takes the next number of level L in its text body
(from ``startAt``, 1 by default) and restarts the levels below it; a paragraph at level L without one restarts
level L and the levels below. A paragraph that sets no bullet of its own (``a:buAutoNum``, ``a:buChar``,
``a:buBlip``, ``a:buNone``) takes the first one its level (``a:lvl{L+1}pPr``) gets from the list styles it
inherits, nearest first: its text body's ``a:lstStyle``, then for a placeholder the matching layout placeholder's,
the matching master placeholder's, and the master's ``p:txStyles`` (``titleStyle`` for titles, ``otherStyle`` for
date, footer, slide number and header, ``bodyStyle`` for the rest). A text box or shape that is no placeholder
inherits its own ``a:lstStyle`` only. Bullet characters are not text and are left out.
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


BULLETS = frozenset({"buAutoNum", "buChar", "buBlip", "buNone"})


def _bullet(ppr: Any | None) -> Any | None:
    """The bullet element a paragraph properties element sets (its first child named one of ``BULLETS``, in any
    namespace or none), or None when it sets none. A loop over its few children: an ``iterchildren`` of the four
    names would build a tag matcher for each paragraph, more than this costs."""
    if ppr is None:
        return None
    for c in ppr:
        if local(c.tag) in BULLETS:
            return c
    return None


def inherited_bullet(styles: list[Any], level: int) -> Any | None:
    """The first bullet the list styles (``a:lstStyle``, ``p:bodyStyle``..., nearest first) give ``level``."""
    want = f"{{*}}lvl{level + 1}pPr"
    for style in styles:
        ppr = next(style.iterchildren(want), None)
        if (bullet := _bullet(ppr)) is not None:
            return bullet
    return None


class InheritedBullets:
    """The bullets a list of list styles (nearest first) gives each level, each level looked up once: a placeholder's
    layout, master and ``p:txStyles`` styles are the same on every slide of its layout."""

    def __init__(self, styles: list[Any]) -> None:
        self.styles = styles
        self.levels: dict[int, Any | None] = {}

    def get(self, level: int) -> Any | None:
        if level not in self.levels:
            self.levels[level] = inherited_bullet(self.styles, level)
        return self.levels[level]


NO_INHERITED = InheritedBullets([])


class AutoNumbers:
    """The running numbers of one text body (``styles``: its own list styles, then ``inherited``, the ones it
    inherits, nearest first)."""

    def __init__(self, styles: list[Any] | None = None, inherited: InheritedBullets = NO_INHERITED) -> None:
        self.counts: dict[int, int] = {}
        self.styles = styles or []
        self.own = InheritedBullets(self.styles)  # each level looked up once per body, not once per paragraph
        self.inherited = inherited

    def label(self, ppr: Any | None) -> str:
        try:
            level = int(ppr.get("lvl") or "0") if ppr is not None else 0
        except ValueError:
            level = 0
        bullet = _bullet(ppr)
        if bullet is None and self.styles:
            bullet = self.own.get(level)
        if bullet is None:
            bullet = self.inherited.get(level)
        auto = bullet if bullet is not None and local(bullet.tag) == "buAutoNum" else None
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
