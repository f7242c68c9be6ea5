"""Plain text: paragraphs with exact line and character locators.

Decoding: ``extract_fn.text_decoding.decode_text`` (a byte-order mark, else the ``encoding`` option, else strict
UTF-8; what does not decode is the ``encoding`` error naming the byte offset). UTF-16 or UTF-32 without a byte-order
mark, which strict UTF-8 would read as text with NULs between the characters, is the ``encoding`` error too
(``text_decoding.refuse_wide_text``).

Lines: a line ends at ``\\n``, ``\\r\\n`` or ``\\r`` (so CRLF, CR-only and mixed files number their lines the same
way an editor does); lines are numbered from 1. A line is blank when it holds only whitespace (``str.isspace``).

Blocks: one ``paragraph`` block per paragraph, a paragraph being a run of non-blank lines between blank lines. A form
feed (``\\f``) is a page break: it ends the paragraph it falls in, even mid-line, and when the file has form feeds
every block carries ``attrs.page`` (1-based: the number of form feeds before it, plus one). A very long line (a
50 MB line with no terminator) is one block; it is never split. No headings, so ``section_path`` is empty, there is
no ``parent`` and no ``keys`` (nothing in a plain paragraph is a name a user looks it up by).

Locators: ``line_start``/``line_end`` are the paragraph's first and last lines. ``char_start``/``char_end`` are
code-point offsets into the decoded text (after any byte-order mark), end exclusive, from the paragraph's first
non-whitespace character to just past its last one. ``text`` is exactly ``decoded[char_start:char_end]`` with each
``\\r\\n`` or ``\\r`` replaced by ``\\n``; inner lines keep their indentation and trailing spaces.

Coverage: unit ``lines``; ``total`` counts the non-blank lines (the lines that hold text), ``extracted`` the
non-blank lines whose text is in some block. They differ only when the artifact reached ``max_output_bytes``: the
paragraphs from there on are left out, listed in ``failed`` as one line range with the reason.
"""

from __future__ import annotations

import platform
import re
from collections.abc import Iterator
from typing import Any, Final

from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.frame import FormatContext, format_module
from extract_fn.formats.output_budget import BudgetKind, output_budget
from extract_fn.formats.textblocks import (
    OUTPUT_LIMIT_REASON,
    count_line_breaks,
    line_ranges_label,
    line_terminator,
    normalize_newlines,
)
from extract_fn.text_decoding import decode_text, refuse_wide_text
from shared.artifact_builder import ArtifactBuilder, BlockRow, line_char_locator

PARSER: Final = "loom-text"
PARSER_VERSION: Final = f"1+python{platform.python_version()}"

# A paragraph ends where a blank line follows it: one match per run of blank lines, from the terminator of the line
# before them to just past the last one's terminator (what lies between two matches is at most one paragraph, with
# blank lines only before the page's first paragraph or after its last). Only the separators are matched, so the
# engine's cost per character is its search for a separator's first character, a fast scan for a literal: a text
# whose terminators are all alike (all \n, all \r\n or all \r: ``textblocks.line_terminator``) is scanned for
# that one (``_SEP_BY_TERMINATOR``), a text that mixes them for any (``_SEP``, a class: slower). The terminators are
# possessive, so a ``\r\n`` is never read as ``\r`` then ``\n``, and so are the quantifiers, so a 50 MB line of
# spaces stays linear. A page (the text between form feeds) is scanned with endpos, so no match crosses a form
# feed. "Blank" is whitespace other than a line terminator.
_BLANK: Final = r"[^\S\r\n]*+"
_TERM: Final = r"(?:\r\n?+|\n)"
_SEP: Final = re.compile(rf"{_TERM}(?:{_BLANK}{_TERM})++")
_SEP_BY_TERMINATOR: Final = {t: re.compile(rf"{t}(?:{_BLANK}{t})++") for t in ("\n", "\r\n", "\r")}

# Blocks go to the builder in batches (``add_blocks``, a fraction of ``add_block``'s cost a block); a batch bounds
# the rows held besides the blocks.
_ROWS_AT_ONCE: Final = 4096


def _body(ctx: FormatContext) -> dict[str, Any]:
    """The artifact of one file (see the module docstring); raises ExtractionError (encoding, resource_limit)."""
    return _extract(ctx.data, ctx.request)


extract = format_module(_body)


def _paragraphs(text: str, start: int, end: int, sep: re.Pattern[str]) -> Iterator[tuple[int, str]]:
    """Each paragraph of the page ``text[start:end]``: the offset of its first non-blank character and its text from
    there to just past its last one (what lies between two separators, stripped; a stretch of blank lines at the
    page's start or end holds none)."""
    for m in sep.finditer(text, start, end):
        found = _stripped(text, start, m.start())
        if found is not None:
            yield found
        start = m.end()
    found = _stripped(text, start, end)
    if found is not None:
        yield found


def _stripped(text: str, start: int, end: int) -> tuple[int, str] | None:
    """``text[start:end]`` without its leading and trailing whitespace, and where that begins; None when blank."""
    piece = text[start:end]
    stripped = piece.strip()
    if not stripped:
        return None
    if piece[0].isspace():  # only then count the lead (lstrip copies)
        start += len(piece) - len(piece.lstrip())
    return start, stripped


def _extract(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    decoded = decode_text(data, option=request.encoding)
    refuse_wide_text(data, decoded.source, request.limits.wide_text_sample)
    text = decoded.text
    del data
    builder = ArtifactBuilder(
        "text", parser=PARSER, parser_version=PARSER_VERSION, unit="lines", options=request.options()
    )
    builder.attrs["encoding"] = decoded.encoding
    budget = output_budget(request, BudgetKind.TEXT)
    budget.charge(256)

    only = line_terminator(text)  # the one terminator the text uses, or None
    has_cr = only != "\n"
    has_ff = "\f" in text
    sep = _SEP_BY_TERMINATOR[only] if only is not None else _SEP
    total = 0  # non-blank lines
    extracted = 0
    counted_to = 0  # the last line counted in total (a line split by a form feed holds two paragraphs)
    cut_line = 0  # the first line left out once the budget ran out
    line = 1  # the line at `pos` (the end of the last paragraph)
    pos = 0
    page = 1
    page_start = 0
    n = len(text)
    rows: list[BlockRow] = []  # blocks for the builder's add_blocks, _ROWS_AT_ONCE at a time
    blocks = 0  # blocks made
    while page_start <= n:
        page_end = text.find("\f", page_start) if has_ff else -1
        if page_end < 0:
            page_end = n
        for char_start, stripped in _paragraphs(text, page_start, page_end, sep):
            line += count_line_breaks(text, pos, char_start, has_cr=has_cr, only=only)
            breaks = count_line_breaks(stripped, 0, len(stripped), has_cr=has_cr, only=only)
            line_start, line_end = line, line + breaks
            char_end = char_start + len(stripped)
            pos, line = char_end, line_end  # so each line break is counted once
            new_lines = line_end - max(line_start - 1, counted_to)
            if new_lines > 0:
                total += new_lines
                counted_to = line_end
            if cut_line:
                continue
            block_text = normalize_newlines(stripped) if has_cr else stripped
            attrs = {"page": page} if has_ff else None
            if not budget.take(block_text, (), (), attrs):
                cut_line = line_start
                continue
            locator = line_char_locator(line_start, line_end, char_start, char_end)
            rows.append((f"b{blocks}", "paragraph", block_text, None, (), locator, [], attrs))
            blocks += 1
            if len(rows) == _ROWS_AT_ONCE:
                builder.add_blocks(rows)
                rows = []
            if new_lines > 0:
                extracted += new_lines
        page += 1
        page_start = page_end + 1

    builder.add_blocks(rows)
    if cut_line:
        builder.fail(line_ranges_label(cut_line, max(cut_line, counted_to)), OUTPUT_LIMIT_REASON)
    builder.coverage(total=total, extracted=extracted)
    return builder.build()
