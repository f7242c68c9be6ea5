"""Helpers shared by the text-like format modules (``markdown_format``, ``html_format``, ``text_format``).

- ``LineIndex``: offset <-> line mapping over a decoded text. A line ends at ``\\n``, ``\\r\\n`` or ``\\r`` (the
  terminator is not part of the line); lines are numbered from 1; offsets are code points of the decoded text.
- ``SectionTracker``: the heading stack that gives ``section_path`` and a block's enclosing heading (``parent``).
- ``Slugger``: GitHub-style heading anchors (``Hello, World!`` -> ``hello-world``, repeats get ``-1``, ``-2``).
- ``line_ranges_label``: a failed unit's name (``line 7``, ``lines 7-12``).

(The wide-text policy, UTF-16/32 without a byte-order mark, is ``extract_fn.text_decoding.refuse_wide_text``.)
"""

from __future__ import annotations

import re
import unicodedata
from array import array
from bisect import bisect_right
from typing import Final

LINE_BREAK_RE: Final = re.compile(r"\r\n|\r|\n")


def normalize_newlines(text: str) -> str:
    """``\\r\\n`` and ``\\r`` -> ``\\n`` (a no-op, without a copy, for text that has no ``\\r``)."""
    if "\r" not in text:
        return text
    # The pairs first, then the lone ``\r`` left: what ``LINE_BREAK_RE.sub("\\n", text)`` gives (both read a ``\r\n``
    # left to right as one terminator), at about a sixth of its cost.
    return text.replace("\r\n", "\n").replace("\r", "\n")


def line_terminator(text: str) -> str | None:
    """The one line terminator ``text`` uses (``\\n``, ``\\r\\n`` or ``\\r``; ``\\n`` for a text without any), or None
    when it mixes them."""
    if "\r" not in text:  # a search, several times faster than a count
        return "\n"
    if "\n" not in text:
        return "\r"
    crs = text.count("\r")
    if crs == text.count("\n") == text.count("\r\n"):
        return "\r\n"
    return None


def count_line_breaks(text: str, start: int, end: int, *, has_cr: bool, only: str | None = None) -> int:
    """How many line terminators (``\\n``, ``\\r\\n``, ``\\r``) lie in ``text[start:end]``.

    ``start`` and ``end`` must not split a ``\\r\\n`` pair; ``has_cr`` says whether the text holds any ``\\r``
    and ``only`` which terminator it uses when it uses one alone (``line_terminator``): one count instead of three
    (both checked once by the caller, not on every call).
    """
    if only is not None:
        return text.count(only, start, end)
    n = text.count("\n", start, end)
    if has_cr:
        n += text.count("\r", start, end) - text.count("\r\n", start, end)
    return n


class LineIndex:
    """Line starts of a decoded text, as a compact array (8 bytes a line, for files of millions of lines)."""

    __slots__ = ("_has_cr", "_starts", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._has_cr = "\r" in text
        starts = array("q", [0])
        if self._has_cr:
            starts.extend(m.end() for m in LINE_BREAK_RE.finditer(text))
        else:
            pos = 0
            find = text.find
            while True:
                i = find("\n", pos)
                if i < 0:
                    break
                pos = i + 1
                starts.append(pos)
        self._starts = starts

    @property
    def line_count(self) -> int:
        """The number of lines: an empty text has none, and a final terminator does not open another line."""
        n = len(self._starts)
        if n and self._starts[-1] == len(self.text):
            n -= 1  # the empty "line" after a final terminator (or the empty text)
        return n

    def line_of(self, offset: int) -> int:
        """The 1-based line holding ``offset`` (an offset at a terminator belongs to the line it ends)."""
        return bisect_right(self._starts, offset)

    def line_start(self, line: int) -> int:
        """The offset of the first character of the 1-based ``line``."""
        return self._starts[line - 1]

    def line_end(self, line: int) -> int:
        """The offset just past the last character of the 1-based ``line`` (before its terminator)."""
        if line >= len(self._starts):
            return len(self.text)
        nxt = self._starts[line]
        if self._has_cr and nxt >= 2 and self.text[nxt - 2 : nxt] == "\r\n":
            return nxt - 2
        return nxt - 1

    def line_text(self, line: int) -> str:
        return self.text[self.line_start(line) : self.line_end(line)]


class SectionTracker:
    """The headings above the current position: a heading of level L closes every open heading of level >= L."""

    __slots__ = ("_path", "_stack")

    def __init__(self) -> None:
        self._stack: list[tuple[int, str, str]] = []  # (level, text, block id)
        self._path: list[str] = []

    def enter(self, level: int, text: str, block_id: str) -> None:
        """Record a heading (call after its block is added, with its id)."""
        stack = self._stack
        while stack and stack[-1][0] >= level:
            stack.pop()
        stack.append((level, text, block_id))
        self._path = [t for _, t, _ in stack]

    def path_with(self, level: int, text: str) -> list[str]:
        """The section path a new heading of ``level`` will have (the headings above it, then itself)."""
        return [t for lvl, t, _ in self._stack if lvl < level] + [text]

    def parent_for(self, level: int) -> str | None:
        """The id of the heading that encloses a new heading of ``level``."""
        for lvl, _, bid in reversed(self._stack):
            if lvl < level:
                return bid
        return None

    @property
    def path(self) -> list[str]:
        """The current section path; the same list object until the next heading (callers must not mutate it)."""
        return self._path

    @property
    def heading_id(self) -> str | None:
        """The id of the innermost open heading."""
        return self._stack[-1][2] if self._stack else None


# github_slug of ASCII text: letters and digits (lower-cased before), ``-`` and ``_`` kept, a space -> ``-``, every
# other ASCII character (punctuation, symbols, controls: none of category L, M, N or Pc but ``_``) dropped.
_ASCII_SLUG: Final = str.maketrans(
    {" ": "-"} | {chr(c): None for c in range(128) if not (chr(c).isalnum() or chr(c) in "-_ ")}
)


def github_slug(text: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation and symbols dropped, spaces -> ``-``."""
    if text.isascii():
        return text.lower().translate(_ASCII_SLUG)
    out: list[str] = []
    for ch in text.lower():
        if ch == " ":
            out.append("-")
        elif ch in "-_" or ch.isalnum():
            out.append(ch)
        else:
            cat = unicodedata.category(ch)
            if cat[0] in "LMN" or cat == "Pc":
                out.append(ch)
    return "".join(out)


class Slugger:
    """Unique GitHub-style slugs within one document: the second ``Intro`` is ``intro-1``."""

    __slots__ = ("_seen",)

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}

    def slug(self, text: str) -> str:
        base = github_slug(text)
        slug = base
        if slug in self._seen:
            n = self._seen[base]
            while True:
                n += 1
                slug = f"{base}-{n}"
                if slug not in self._seen:
                    break
            self._seen[base] = n
        self._seen[slug] = 0
        return slug


def line_ranges_label(start: int, end: int) -> str:
    """``line 7`` or ``lines 7-12`` (1-based, inclusive)."""
    return f"line {start}" if start == end else f"lines {start}-{end}"


OUTPUT_LIMIT_REASON: Final = "not extracted: the artifact reached its output limit (max_output_bytes)"
