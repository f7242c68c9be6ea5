"""DOCX list and heading numbering as Word renders it ("1.", "1.2.3", "a)", "iv.", bullets).

``Numbering`` reads ``numbering.xml``: each ``w:num`` points at an ``w:abstractNum`` (through ``w:numStyleLink``
to a numbering style's list when it has one), whose ``w:lvl`` give each level's start, format (``w:numFmt``), text
template (``w:lvlText``: ``%1.%2.`` is the level-1 and level-2 counters), restart rule and legal-numbering flag;
a ``w:num``'s ``w:lvlOverride`` may restart a level (``w:startOverride``) or replace it (``w:lvl``).

``ListCounters`` numbers the paragraphs in reading order: one set of counters per ``w:abstractNum``, shared by
the ``w:num`` (list instances) pointing at it, as Word counts them (two instances of one list with no override
number 1, 2, 3 on); an instance with a ``w:startOverride`` at a level restarts that level the first time one of its
paragraphs is at it (then the other instances go on from there). A paragraph at level L adds one to L's counter
and restarts the levels below it; a level above L not used yet counts as used at its start value (after "2." and
"2.1.1." comes "2.2.", as Word and LibreOffice number it). A level with no ``w:start`` starts at 1. Bullets are the
level's text: a Symbol/Wingdings private-use character (U+F0xx) is mapped to the character it draws (``•``, ``▪``,
``➢``, ...: ``SYMBOL_FONTS``, the map ``w:sym`` is read with too); ``o`` (the Courier New bullet) is kept as
Word shows it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from extract_fn.formats.ooxml_text import local

MAX_LEVELS = 9
# What the symbol fonts draw at a code (a U+F0xx private-use character or a w:sym's w:char, less 0xF000): the one
# map for list bullets and ``w:sym``. Symbol: the whole Adobe Symbol encoding; Wingdings: the common symbols.
_SYMBOL = (
    dict(
        zip(
            range(0x20, 0x7F),
            " !∀#∃%&∋()∗+,−./0123456789:;<=>?≅ΑΒΧΔΕΦΓΗΙϑΚΛΜΝΟΠΘΡΣΤΥςΩΞΨΖ[∴]⊥_‾αβχδεφγηιϕκλμνοπθρστυϖωξψζ{|}∼",
            strict=True,
        )
    )
    | dict(
        zip(
            range(0xA0, 0xF0),
            "€ϒ′≤⁄∞ƒ♣♦♥♠↔←↑→↓°±″≥×∝∂•÷≠≡≈…⏐⎯↵ℵℑℜ℘⊗⊕∅∩∪⊃⊇⊄⊂⊆∈∉∠∇®©™∏√⋅¬∧∨⇔⇐⇑⇒⇓◊〈®©™∑⎛⎜⎝⎡⎢⎣⎧⎨⎩⎪",
            strict=True,
        )
    )
    | dict(zip(range(0xF1, 0xFF), "〉∫⌠⎮⌡⎞⎟⎠⎤⎥⎦⎫⎬⎭", strict=True))
)
_WINGDINGS = {
    0x22: "✂", 0x28: "☎", 0x2A: "✉", 0x4A: "☺", 0x4B: "😐", 0x4C: "☹", 0x6C: "●", 0x6D: "❍", 0x6E: "■", 0x6F: "□",
    0x70: "◻", 0x71: "❑", 0x72: "❒", 0x75: "◆", 0x76: "❖", 0x77: "⬥", 0x78: "⌧", 0x9F: "•", 0xA1: "○", 0xA7: "▪",
    0xA8: "◻", 0xAB: "★", 0xD8: "➢", 0xE0: "→", 0xFB: "✗", 0xFC: "✓", 0xFD: "☒", 0xFE: "☑",
    **dict(zip(range(0x80, 0x8B), "⓪①②③④⑤⑥⑦⑧⑨⑩", strict=True)),
}  # fmt: skip
SYMBOL_FONTS: dict[str, dict[int, str]] = {"symbol": _SYMBOL, "wingdings": _WINGDINGS}
# a bullet's font is not read: each code of Word's bullet library as the font it comes in draws it
_SYMBOL_BULLETS = {
    0xB7: _SYMBOL[0xB7],  # •
    0xA8: _SYMBOL[0xA8],  # ♦
    **{code: _WINGDINGS[code] for code in (0xA7, 0xD8, 0xFC, 0x76, 0x6E, 0x71)},  # ▪ ➢ ✓ ❖ ■ ❑
}


def symbol_char(font: str | None, code: int) -> str:
    """The character a symbol font draws at ``code`` (U+F0xx or 0x00-0xFF), or "" when the font is not mapped."""
    table = SYMBOL_FONTS.get((font or "").strip().lower())
    if table is None:
        return ""
    return table.get(code - 0xF000 if code >= 0xF000 else code, "")


_ROMAN = ((1000, "m"), (900, "cm"), (500, "d"), (400, "cd"), (100, "c"), (90, "xc"), (50, "l"), (40, "xl"), (10, "x"),
          (9, "ix"), (5, "v"), (4, "iv"), (1, "i"))  # fmt: skip


def roman(n: int) -> str:
    if n <= 0 or n >= 4000:
        return str(n)
    out = []
    for value, digits in _ROMAN:
        while n >= value:
            out.append(digits)
            n -= value
    return "".join(out)


MAX_LETTER_REPEAT = 30  # past "zzz...z" (30 letters) a letter number is shown in digits: a huge w:start stays small


def letters(n: int) -> str:
    """Word's letter numbering: a..z, then aa..zz, aaa.. (the letter repeated, not base 26)."""
    if n <= 0 or n > 26 * MAX_LETTER_REPEAT:
        return str(n)
    return chr(ord("a") + (n - 1) % 26) * ((n - 1) // 26 + 1)


def _ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


_FORMATS: dict[str, Callable[[int], str]] = {
    "decimal": str,
    "decimalZero": lambda n: f"{n:02d}",
    "lowerRoman": roman,
    "upperRoman": lambda n: roman(n).upper(),
    "lowerLetter": letters,
    "upperLetter": lambda n: letters(n).upper(),
    "ordinal": _ordinal,
    "none": lambda n: "",
}


_SUPERSCRIPTS = str.maketrans(
    "0123456789abcdefghijklmnoprstuvwxyzABDEGHIJKLMNOPRTUVW",
    "⁰¹²³⁴⁵⁶⁷⁸⁹ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂ",
)


def superscript(mark: str) -> str:
    """A note mark as the superscript Word prints (``12`` -> ``¹²``, ``iv`` -> ``ⁱᵛ``); a mark with a character
    that has no superscript form stays as it is."""
    up = mark.translate(_SUPERSCRIPTS)
    return up if all(a != b or not a.isalnum() for a, b in zip(mark, up, strict=True)) else mark


def format_number(n: int, fmt: str) -> str:
    """A counter in a ``w:numFmt`` (formats not listed here are shown as decimal)."""
    return _FORMATS.get(fmt, str)(n)


@functools.lru_cache(maxsize=256)  # a document's lists use a few bullet texts, for every item
def bullet_text(text: str) -> str:
    out = []
    for ch in text:
        code = ord(ch)
        if 0xF000 <= code <= 0xF0FF:
            out.append(_SYMBOL_BULLETS.get(code - 0xF000, "•"))
        else:
            out.append(ch)
    return "".join(out).strip() or "•"


@dataclass(frozen=True)
class Level:
    start: int = 1
    fmt: str = "decimal"
    text: str = "%1."
    restart: int | None = None  # restart after this (1-based) level; None: after any higher level
    legal: bool = False
    style: str | None = None  # the paragraph style linked to this level (w:pStyle)


def _val(el: Any | None, attr: Callable[[Any, str], str | None]) -> str | None:
    return attr(el, "val") if el is not None else None


def _int(v: str | None, default: int) -> int:
    try:
        return int(v) if v is not None else default
    except ValueError:
        return default


def _level(lvl: Any, attr: Callable[[Any, str], str | None]) -> Level:
    kids = {local(c.tag): c for c in lvl}
    restart = _val(kids.get("lvlRestart"), attr)
    return Level(
        start=_int(_val(kids.get("start"), attr), 1),
        fmt=_val(kids.get("numFmt"), attr) or "decimal",
        text=_val(kids.get("lvlText"), attr) or "",
        restart=_int(restart, 0) if restart is not None else None,
        legal="isLgl" in kids and (_val(kids.get("isLgl"), attr) or "1") not in ("0", "false"),
        style=_val(kids.get("pStyle"), attr),
    )


class Numbering:
    """The list definitions of a document (empty when it has no numbering part)."""

    def __init__(
        self, root: Any | None, attr: Callable[[Any, str], str | None], style_num: Callable[[str], str | None]
    ) -> None:
        self.attr = attr
        self.style_num = style_num
        self.levels: dict[str, dict[int, Level]] = {}
        self.starts: dict[str, dict[int, int]] = {}  # startOverride per list instance
        self.shared: dict[str, str] = {}  # list instance -> its abstractNum: the counters it shares
        if root is None:
            return
        abstract: dict[str, dict[int, Level]] = {}
        links: dict[str, str] = {}
        for el in root:
            if local(el.tag) != "abstractNum":
                continue
            aid = attr(el, "abstractNumId") or ""
            abstract[aid] = {_int(attr(lvl, "ilvl"), 0): _level(lvl, attr) for lvl in el if local(lvl.tag) == "lvl"}
            link = next((c for c in el if local(c.tag) == "numStyleLink"), None)
            if link is not None and attr(link, "val"):
                links[aid] = attr(link, "val") or ""
        nums: dict[str, str] = {}
        for el in root:
            if local(el.tag) == "num":
                a_el = next((c for c in el if local(c.tag) == "abstractNumId"), None)
                nums[attr(el, "numId") or ""] = _val(a_el, attr) or ""
        for el in root:
            if local(el.tag) == "num":
                self._instance(el, nums, abstract, links)

    def _instance(
        self,
        el: Any,
        nums: dict[str, str],
        abstract: dict[str, dict[int, Level]],
        links: dict[str, str],
    ) -> None:
        attr, style_num = self.attr, self.style_num
        nid = attr(el, "numId") or ""
        aid = nums.get(nid, "")
        if aid in links and not abstract.get(aid):  # the list is defined by a numbering style's list
            linked = style_num(links[aid])
            aid = nums.get(linked or "", aid)
        levels = dict(abstract.get(aid, {}))
        starts: dict[int, int] = {}
        for ov in el:
            if local(ov.tag) != "lvlOverride":
                continue
            ilvl = _int(attr(ov, "ilvl"), 0)
            for c in ov:
                if local(c.tag) == "startOverride":
                    starts[ilvl] = _int(attr(c, "val"), 1)
                elif local(c.tag) == "lvl":
                    levels[ilvl] = _level(c, attr)
        self.levels[nid] = levels
        self.starts[nid] = starts
        self.shared[nid] = "abstract " + aid

    def level(self, num_id: str, ilvl: int) -> Level | None:
        return self.levels.get(num_id, {}).get(ilvl)

    def level_of_style(self, num_id: str, style: str | None) -> int | None:
        """The level a paragraph style is linked to in a list (``w:pStyle`` in a ``w:lvl``)."""
        if style is None:
            return None
        for ilvl, lvl in self.levels.get(num_id, {}).items():
            if lvl.style == style:
                return ilvl
        return None

    def fmt(self, num_id: str, ilvl: int) -> str:
        lvl = self.level(num_id, ilvl)
        if lvl is not None:
            return lvl.fmt
        return "decimal" if self.levels.get(num_id) else "unknown"


class ListCounters:
    """The running counters of every list instance, in reading order."""

    def __init__(self, numbering: Numbering) -> None:
        self.numbering = numbering
        self.counts: dict[str, list[int | None]] = {}  # by the abstractNum the instances share
        self.started: set[tuple[str, int]] = set()  # (instance, level) whose startOverride has restarted it

    def label(self, num_id: str, ilvl: int) -> str:
        """Count one paragraph at ``ilvl`` of list ``num_id`` and return the label Word shows ('' for none)."""
        levels = self.numbering.levels.get(num_id, {})
        lvl = levels.get(ilvl)
        if lvl is None:
            return ""
        numbering = self.numbering
        key = numbering.shared.get(num_id, num_id)
        counts = self.counts.get(key)
        if counts is None:
            counts = self.counts[key] = [None] * MAX_LEVELS
        starts = numbering.starts.get(num_id)
        if starts and ilvl in starts and (num_id, ilvl) not in self.started:
            self.started.add((num_id, ilvl))
            counts[ilvl] = None  # the instance's first paragraph at the level: its override restarts it
        for above in range(ilvl):  # a level skipped over counts as shown at its start (2. then 2.1.1 then 2.2.)
            if counts[above] is None:
                counts[above] = self._start(num_id, above, levels.get(above, Level()))
        cur = counts[ilvl]
        counts[ilvl] = self._start(num_id, ilvl, lvl) if cur is None else cur + 1
        for deeper in range(ilvl + 1, MAX_LEVELS):
            d = levels.get(deeper)
            if d is None or d.restart is None or (d.restart != 0 and d.restart > ilvl):
                counts[deeper] = None
        if lvl.fmt == "bullet":
            return bullet_text(lvl.text)
        return self._render(num_id, lvl, counts)

    def _start(self, num_id: str, ilvl: int, lvl: Level) -> int:
        return self.numbering.starts.get(num_id, {}).get(ilvl, lvl.start)

    def _render(self, num_id: str, lvl: Level, counts: list[int | None]) -> str:
        levels = self.numbering.levels.get(num_id, {})
        out = lvl.text
        for i in range(MAX_LEVELS - 1, -1, -1):
            token = f"%{i + 1}"
            if token not in out:
                continue
            other = levels.get(i, Level())
            n = counts[i]
            if n is None:
                n = self._start(num_id, i, other)
            fmt = "decimal" if lvl.legal and other.fmt != "decimalZero" else other.fmt
            out = out.replace(token, format_number(n, fmt))
        return out.strip()
