"""Markdown: CommonMark 0.31.2 exactly, plus GFM tables, with line-exact locators.

Parsers: markdown-it-py with the ``commonmark`` preset and the ``table`` rule is the reference. Chosen for exactness:
it renders all 655 examples of the CommonMark 0.31.2 spec as the spec does (markdown-it-pyrs 652, cmark-gfm 644, being
on spec 0.29), and it is pure Python, so hostile nesting cannot overflow a native stack. Its block parse is slow
(0.45 s of CPU for the 2.8 MB benchmark file), so the block structure is read from markdown-it-pyrs (the Rust port of
markdown-it; ``_fast_events``, about 0.2 s with the walk of its tree) whenever a linear pre-scan (``_fast_plan``) finds
the source within the part of Markdown where the two are known to agree, and from markdown-it-py otherwise. The
artifact is the same whichever parsed the blocks: the tests compare the two on every spec example, every corpus file
and thousands of generated documents. Inline content always goes through markdown-it-py's inline parser
(``inline_text``; markdown-it-pyrs runs with no inline rule, so the three spec examples it gets wrong, all inline, do
not matter), and only where it holds inline syntax.

The fast path is declined (the reasons are what differential fuzzing found): container markup wider than
FAST_MAX_PREFIX_COLUMNS at a line's start (markdown-it-pyrs recurses on the native stack per nested container, has no
nesting limit and segfaults some 100,000 levels down; the bound keeps it far below both that and markdown-it-py's
``limits.markdown_max_nesting``), characters one parser takes for whitespace and the other not, reference definitions,
lazy continuation lines of block quotes, HTML blocks that may span blank lines inside containers, tables other than a
run of lines that all start with ``|`` (markdown-it-pyrs's table rule is its own, so it runs without one and
``_table_run_events`` ports markdown-it-py's for that shape), a tree the walk does not expect (including inline
positions it cannot trust), a Rust panic, and a source whose tree may not fit the process's memory limit
(FAST_MEMORY_PER_BYTE). It is also declined, for speed only, past FAST_MAX_BRACKETS_PER_LINE square brackets a line,
where it is the slower of the two. Decoding: ``extract_fn.text_decoding.decode_text`` (BOM, ``encoding`` option,
strict UTF-8); UTF-16/32 without a BOM is the ``encoding`` error (``refuse_wide_text``).

Blocks, in reading order:

- ``heading``: ATX and setext headings. ``depth`` = level 1..6; ``text`` = the heading's text without ``#``s or the
  underline; ``keys`` = [the text, its GitHub-style anchor slug (``## Hello, World!`` -> ``hello-world``, a repeat
  gets ``-1``, ``-2``, as GitHub numbers them)].
- ``paragraph``: a paragraph; ``text`` is its inline content as plain text (emphasis, link and code markers dropped,
  entities and escapes resolved, an image's alt text kept, inline HTML tags dropped, line breaks kept as ``\\n``).
- ``list``: one block per list item. ``text`` = the item's first paragraph (empty when the item opens with a code
  block, a heading or a nested list); the item's later content (more paragraphs, code, nested lists) follows as its
  own blocks whose ``parent`` is the item. ``depth`` = list nesting (0 for a top-level list, 1 for a list inside an
  item, ...); ``attrs.ordered``, and ``attrs.number`` for an ordered item. An item with no content at all has no
  block.
- ``code``: fenced and indented code; ``text`` = the code (without the final newline); ``attrs.language`` = the
  info string's first word, ``attrs.info`` = the whole info string when it says more.
- tables (GFM): a ``paragraph`` block with ``attrs.table = {"columns": [header cells], "rows": [[cells]]}`` (every
  row as long as the header, as GFM pads and cuts them); ``text`` = the header and rows as tab-separated lines.
- HTML blocks: a ``paragraph`` with ``attrs.html = true`` whose ``text`` is what the HTML shows (tags, comments,
  scripts and styles dropped); one that shows nothing (a comment, an image) has no block. From the first tag nested
  deeper than ``limits.markdown_html_max_nesting_depth`` on, a block's tags are dropped and its text kept, and a
  warning says how many blocks were read so (``HTML_NESTING_CUT``).
- front matter: a YAML block between ``---`` lines at the very top (closed by ``---`` or ``...``) is a ``code``
  block with ``attrs.front_matter = true`` and ``attrs.language = "yaml"``; the rest is parsed as Markdown.
- block quotes have no block of their own: every block inside one carries ``attrs.quote = true`` and
  ``attrs.quote_depth`` (1 for ``>``, 2 for ``> >``).
- thematic breaks and link reference definitions carry no text and make no block.

``section_path``: the texts of the headings above the block, outermost first (a heading's own path ends with its own
text). Only headings outside lists and quotes open sections; one inside them is a heading block of its own.
``parent``: the enclosing list item's block, else the heading of the section the block is in (for a heading, the
heading of the next higher level above it).

Locators: ``line_start``/``line_end`` are the 1-based source lines the block was parsed from (markdown-it's
``token.map``, 0-based end-exclusive, converted; trailing blank lines not included; a list item's block runs from its
marker line to the end of its first paragraph; a table's and a fenced block's include their delimiter lines).
``char_start``/``char_end`` are the code-point offsets, into the decoded text (after any BOM), of the start of
``line_start`` and the end of ``line_end`` (before its terminator), end exclusive: the whole lines, markup included.
A line ends at ``\\n``, ``\\r\\n`` or ``\\r``, as markdown-it itself counts them.

Coverage: unit ``lines``; ``total`` = the non-blank lines (a blank line holds only spaces and tabs), ``extracted`` =
the non-blank lines the parser read into the artifact (lines of markup with no text, such as a thematic break or a
reference definition, count as read). Lines are ``failed`` when content nested deeper than
``limits.markdown_max_nesting`` levels
(markdown-it's protection against runaway recursion skips it) or when the artifact reached ``max_output_bytes``
(everything from the first block that did not fit is left out); each failed entry names a line range and why.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

import orjson

from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.frame import FormatContext, format_module
from extract_fn.formats.output_budget import BudgetKind, OutputBudget, output_budget
from extract_fn.formats.textblocks import (
    OUTPUT_LIMIT_REASON,
    LineIndex,
    SectionTracker,
    Slugger,
    line_ranges_label,
    normalize_newlines,
)
from extract_fn.limits import Limits
from extract_fn.text_decoding import decode_text, refuse_wide_text
from shared.artifact_builder import ArtifactBuilder, BlockRow
from shared.contract import ErrorCode, ExtractionError

try:
    import markdown_it_pyrs
except ImportError:  # pragma: no cover - a deployment without it parses everything with markdown-it-py
    markdown_it_pyrs = None  # type: ignore[assignment]  # the module or None, read as such below

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.rules_block.state_block import StateBlock
    from markdown_it.token import Token

PARSER: Final = "loom-markdown"
# The parsers' versions, written out so that a file whose inline content needs no parse never imports markdown-it-py
# (25 ms of a 0.2 s process); tests check them against the installed packages. The artifact is the same whichever of
# the two parsed the blocks, so both are named.
MARKDOWN_IT_PY_VERSION: Final = "4.3.0"
MARKDOWN_IT_PYRS_VERSION: Final = "0.4.0"
PARSER_VERSION: Final = f"1+markdown-it-py-{MARKDOWN_IT_PY_VERSION}+markdown-it-pyrs-{MARKDOWN_IT_PYRS_VERSION}"

# Block nesting (quotes, lists, list items, paragraphs each count one level) markdown-it parses before it skips the
# rest of a container. The preset's 20 cuts a real document's 10-deep list; 100 still keeps the parser's recursion
# (about three Python frames a level) far below the interpreter's limit.
NESTING_REASON: Final = "not extracted: nested deeper than {limit} levels (quotes and lists)"

_FRONT_OPEN: Final = re.compile(r"---[ \t]*")
_FRONT_CLOSE: Final = re.compile(r"(?:---|\.\.\.)[ \t]*")
_SKIPPED_KEY: Final = "loom_skipped_lines"


@functools.cache
def _parser(max_nesting: int) -> MarkdownIt:
    """One markdown-it per process (and nesting limit, ``limits.markdown_max_nesting``); its block tokenizer records
    the line ranges the nesting limit skips."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"maxNesting": max_nesting}).enable("table")
    # Inline content is parsed on demand (``inline_text``): most paragraphs hold no inline markup at all.
    md.disable(["inline", "text_join"])
    original = md.block.tokenize

    def tokenize(state: StateBlock, start_line: int, end_line: int) -> None:
        # markdown-it drops the rest of a container once state.level reaches maxNesting (after skipping blank
        # lines and leaving less-indented lines to the outer container); note which lines that drops.
        if state.level >= max_nesting:
            line = state.skipEmptyLines(start_line)
            if line < end_line and state.sCount[line] >= state.blkIndent:
                state.env.setdefault(_SKIPPED_KEY, []).append((line, end_line))
        original(state, start_line, end_line)

    md.block.tokenize = tokenize  # type: ignore[method-assign, assignment]
    return md


@dataclass(slots=True)
class _Item:
    first_line: int  # 1-based line of the item's marker
    depth: int
    attrs: dict[str, Any]
    block_id: str | None = None  # set once the item's block is added


class _Cut(Exception):
    """The output budget ran out at ``line``."""

    def __init__(self, line: int) -> None:
        self.line = line


# A character that can start an inline construct in CommonMark (escape, code span, emphasis, link, image, autolink,
# raw HTML, entity), or spaces/tabs beside a line break (a hard break, or spaces the soft break drops). Content with
# none of these parses to exactly one text run equal to itself, so it is its own plain text.
_NEEDS_INLINE: Final = re.compile(r"[\\`*_\[\]!<&]|[ \t]\n|\n[ \t]")


# markdown-it's link rule reads a link's text by skipping every token inside it, and each ``[`` inside starts the
# same search again up to maxNesting levels down: inline content whose brackets nest N deep costs about
# N x min(N, limits.markdown_max_nesting) token skips (1,000,000 nested ``[``, a JSON-like file sent as Markdown:
# minutes). Links
# cannot contain links, so brackets nested this deep are no real document's: such content is read with the link
# and image rules off (its brackets are text), and the artifact says so (``LINKS_NOT_PARSED``).
_BRACKET: Final = re.compile(r"[\[\]]")
_LITERAL_BRACKETS_KEY: Final = "loom_literal_brackets"
LINKS_NOT_PARSED: Final = (
    "{count} paragraph(s) nest square brackets deeper than {limit} levels: their brackets were read as text, "
    "not as links or images"
)


def _brackets_nest_deeply(content: str, limit: int) -> bool:
    """Whether ``content``'s square brackets (unmatched ``[`` included) nest deeper than ``limit``
    (``limits.markdown_max_bracket_nesting``)."""
    if content.count("[") <= limit:
        return False
    depth = 0
    for m in _BRACKET.finditer(content):
        if m.group() == "[":
            depth += 1
            if depth > limit:
                return True
        elif depth:
            depth -= 1
    return False


@functools.cache
def _parser_without_links(max_nesting: int) -> MarkdownIt:
    """The inline parser for content whose brackets nest too deeply (``limits.markdown_max_bracket_nesting``)."""
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"maxNesting": max_nesting})
    md.inline.ruler.disable(["link", "image"])
    return md


def inline_text(content: str, env: dict[str, Any], limits: Limits) -> str:
    """The plain text of an inline token's content: markdown-it's inline parse (with the document's env, for
    reference links), its markers dropped. Content with no inline syntax (``_NEEDS_INLINE``) skips the parse."""
    # _NEEDS_INLINE as substring tests (each a C scan: 2.5x faster than the regex's character-set search)
    if not (
        "\\" in content
        or "`" in content
        or "*" in content
        or "_" in content
        or "[" in content
        or "]" in content
        or "!" in content
        or "<" in content
        or "&" in content
    ) and ("\n" not in content or not (" \n" in content or "\t\n" in content or "\n " in content or "\n\t" in content)):
        return content
    md = _parser(limits.markdown_max_nesting)
    if _brackets_nest_deeply(content, limits.markdown_max_bracket_nesting):
        md = _parser_without_links(limits.markdown_max_nesting)
        env[_LITERAL_BRACKETS_KEY] = env.get(_LITERAL_BRACKETS_KEY, 0) + 1
        if _STAND_IN_OPEN not in content and _STAND_IN_CLOSE not in content:
            # Each ``[`` or ``]`` ends the inline parser's text run (one rule chain per bracket: 2 MB of ``[`` took
            # 5 s). With links off they are text, so unescaped ones stand in as the mathematical white brackets
            # (Unicode punctuation too, so emphasis flanking is the same, but no terminator) and come back after.
            children: list[Token] = []
            # (str.replace, not str.translate: translate into non-Latin-1 characters goes a character at a time,
            # 0.15 s for 2 MB, where each replace is one C scan)
            if "\\" not in content:
                stood_in = content.replace("[", _STAND_IN_OPEN).replace("]", _STAND_IN_CLOSE)
            else:
                stood_in = _UNESCAPED_BRACKET.sub(_stand_in, content)
            md.inline.parse(stood_in, md, env, children)
            return _render_inline(children).replace(_STAND_IN_OPEN, "[").replace(_STAND_IN_CLOSE, "]")
    children = []
    md.inline.parse(content, md, env, children)
    return _render_inline(children)


_STAND_IN_OPEN: Final = "\u27e6"
_STAND_IN_CLOSE: Final = "\u27e7"
_UNESCAPED_BRACKET: Final = re.compile(r"(?<!\\)((?:\\\\)*)([\[\]])")


def _stand_in(m: re.Match[str]) -> str:
    return m.group(1) + (_STAND_IN_OPEN if m.group(2) == "[" else _STAND_IN_CLOSE)


def _render_inline(children: list[Token]) -> str:
    """Plain text of inline tokens (iterative: image alt texts may nest)."""
    parts: list[str] = []
    stack = [iter(children)]
    while stack:
        for tok in stack[-1]:
            typ = tok.type
            if typ in ("text", "code_inline", "text_special"):
                parts.append(tok.content)
            elif typ in ("softbreak", "hardbreak"):
                parts.append("\n")
            elif typ == "image" and tok.children:
                stack.append(iter(tok.children))
                break
        else:
            stack.pop()
    return "".join(parts)


# An HTML block's tags past limits.markdown_html_max_nesting_depth are dropped (``html_format.cut_deep_nesting``).
_DEEP_HTML_KEY: Final = "loom_deep_html_blocks"
HTML_NESTING_CUT: Final = (
    "{count} HTML block(s) nest tags deeper than {limit} levels: from the first tag past that depth on, their tags "
    "were dropped and their text kept"
)


def _html_visible_text(html: str, env: dict[str, Any], limits: Limits) -> str:
    """What an HTML block shows: its text with tags, comments, scripts and styles dropped, whitespace collapsed."""
    from extract_fn.formats.html_format import visible_text

    text, cut = visible_text(html, limits)
    if cut:
        env[_DEEP_HTML_KEY] = env.get(_DEEP_HTML_KEY, 0) + 1
    return text


def _front_matter_end(lines: LineIndex) -> int:
    """The 1-based line closing a front matter block that opens on line 1, else 0."""
    if lines.line_count < 2 or not _FRONT_OPEN.fullmatch(lines.line_text(1)):
        return 0
    for line in range(2, lines.line_count + 1):
        if _FRONT_CLOSE.fullmatch(lines.line_text(line)):
            return line
    return 0


# -- block events: what the walk needs of either parser's output, in document order ---------------------------------
#
# (_PARA, first, last, inline content)             a paragraph (also a tight list item's)
# (_HEADING, first, last, inline content, level)
# (_ITEM, first, ordered, number or None)          a list item opens (``first``: its marker's line) ... (_ITEM_END,)
# (_LIST,) ... (_LIST_END,)                        a list (bullet or ordered)
# (_QUOTE,) ... (_QUOTE_END,)                      a block quote
# (_CODE, first, last, content, info)              fenced (``info``: the raw info string) or indented code
# (_HTML, first, last, content)                    an HTML block
# (_TABLE, first, last, rows)                      a table: the rows of raw cell contents, the header row first
#
# ``first``/``last`` are 1-based source lines (trailing blank lines may be included; the locator drops them).

_PARA, _HEADING, _ITEM, _ITEM_END, _LIST, _LIST_END, _QUOTE, _QUOTE_END, _CODE, _HTML, _TABLE = range(11)
_LIST_EV: Final = (_LIST,)
_QUOTE_EV: Final = (_QUOTE,)
_ITEM_END_EV: Final = (_ITEM_END,)
_LIST_END_EV: Final = (_LIST_END,)
_QUOTE_END_EV: Final = (_QUOTE_END,)

Event = tuple[Any, ...]


def _lines(tok: Token) -> tuple[int, int]:
    """A token's 1-based first and last line (markdown-it's map is 0-based with an exclusive end)."""
    start, end = tok.map or (0, 1)
    return start + 1, max(start + 1, end)


def _reference_events(tokens: list[Token]) -> list[Event]:
    """markdown-it-py's block tokens as events."""
    events: list[Event] = []
    append = events.append
    i = 0
    n = len(tokens)
    while i < n:
        tok = tokens[i]
        typ = tok.type
        if typ == "paragraph_open":
            first, last = _lines(tok)
            append((_PARA, first, last, tokens[i + 1].content))
            i += 3
            continue
        if typ == "heading_open":
            first, last = _lines(tok)
            append((_HEADING, first, last, tokens[i + 1].content, int(tok.tag[1])))
            i += 3
            continue
        if typ == "list_item_open":
            ordered = tok.markup in (".", ")")
            append((_ITEM, _lines(tok)[0], ordered, int(tok.info) if ordered and tok.info.isdigit() else None))
        elif typ == "list_item_close":
            append(_ITEM_END_EV)
        elif typ in ("bullet_list_open", "ordered_list_open"):
            append(_LIST_EV)
        elif typ in ("bullet_list_close", "ordered_list_close"):
            append(_LIST_END_EV)
        elif typ == "blockquote_open":
            append(_QUOTE_EV)
        elif typ == "blockquote_close":
            append(_QUOTE_END_EV)
        elif typ in ("fence", "code_block"):
            first, last = _lines(tok)
            append((_CODE, first, last, tok.content, tok.info))
        elif typ == "html_block":
            first, last = _lines(tok)
            append((_HTML, first, last, tok.content))
        elif typ == "table_open":
            first, last = _lines(tok)
            rows: list[list[str]] = []
            i += 1
            while tokens[i].type != "table_close":
                typ = tokens[i].type
                if typ == "tr_open":
                    rows.append([])
                elif typ == "inline":
                    rows[-1].append(tokens[i].content)
                i += 1
            append((_TABLE, first, last, rows))
        i += 1
    return events


# An ordered list marker's number (from its first digit: the lookbehind sees the text before ``pos``).
_DIGITS: Final = re.compile(r"(?<![0-9])([0-9]{1,9})[.)]")
_DIGITS_B: Final = re.compile(rb"(?<![0-9])([0-9]{1,9})[.)]")


# -- the fast path: markdown-it-pyrs for the block structure ---------------------------------------------------------
#
# markdown-it-pyrs (markdown-it.rs) ports markdown-it, not markdown-it-py 4.3.0, and differs from it beyond the three
# inline spec examples: Rust's notion of whitespace, a table rule of its own (other header and delimiter rules, other
# ends), lazy continuation lines of block quotes, reference definitions, HTML blocks spanning blank lines in containers
# and ``<!`` with a lowercase letter, a last line of only spaces, inline positions past tabs. Differential fuzzing
# found each of these; the pre-scan (``_fast_plan``) sends every source that holds one to markdown-it-py (or
# ``_fast_events`` and ``_tree_events`` work around it, or check for it and give up), and the fast parser runs
# without its table rule: tables are read by ``_table_run_events``, a port of markdown-it-py's table rule, in the one
# shape it is ported for (a run of lines that all start with ``|``, with a blank line or the text's edge on each side).

# Each container level open on the line where a block starts takes at least one column of that line's leading markup
# (a ``>``, a list marker, or the indentation that continues a list item), and a list level, two token levels deep,
# takes two (its marker and the space after it) except the innermost, so markdown-it's nesting level there is at
# most this + 2: below limits.markdown_max_nesting, so markdown-it-py would skip nothing either, and a thousand times
# below the depth
# at which markdown-it-pyrs's recursion overflows an 8 MiB stack.
FAST_MAX_PREFIX_COLUMNS: Final = 64
# Bytes of memory the fast path may take per source byte: markdown-it-pyrs's tree holds about 12 bytes a byte in Rust
# and 10 more in its Python nodes, beside the events (31 in all for the 28 MB of ten big.md, where markdown-it-py's
# tokens peak at 22), with a margin. A Rust allocation that fails aborts the process where markdown-it-py's raises
# MemoryError, so a source whose fast parse may not fit the process's memory limit goes to markdown-it-py.
FAST_MEMORY_PER_BYTE: Final = 48
# The fast parse reads the source a piece of about this many characters at a time (``_piece_ends``), cut just before a
# line that opens an ATX heading after a blank line.
FAST_PIECE_CHARS: Final = 1 << 18
_PIECE_BREAK: Final = re.compile(r"\n[ \t]*\n(?=#{1,6}(?:[ \t\n]|\Z))")
# markdown-it-py's table rule ends a table once it has padded this many missing cells (MAX_AUTOCOMPLETED_CELLS).
TABLE_MAX_AUTOCOMPLETED_CELLS: Final = 0x10000
# Square brackets per line (on average over the source) past which the fast parser is slower than markdown-it-py: its
# inline text node ends at every ASCII punctuation character and is joined again (about 35 ns each, 70 ms for the
# 2 MB of nested brackets of a JSON-like file sent as Markdown), where markdown-it-py's block parse costs about 14 us
# a line more (its inline parse reads such content with brackets as text, ``inline_text``, whichever parsed the
# blocks). A README has a few a line.
FAST_MAX_BRACKETS_PER_LINE: Final = 512

# A line start followed by enough characters of container markup to hold FAST_MAX_PREFIX_COLUMNS columns (a tab is
# at most 4); only such lines are measured, with _CONTAINER_MARKUP: the indentation, ``>``s and list markers (each
# followed by a space, a tab or the line's end) a line opens with.
_MARKUP_CHARS: Final = r"[ \t>*+\-.)0-9]"
_WIDE_MARKUP: Final = re.compile(rf"\n{_MARKUP_CHARS}{{{FAST_MAX_PREFIX_COLUMNS // 4}}}")
_CONTAINER_MARKUP: Final = re.compile(r"(?:[ \t]*+(?:>|(?:[-+*]|[0-9]{1,9}[.)])(?=[ \t\n]|$)))*")
# Characters that one parser's string operations count as whitespace, or case-fold to an ASCII letter, and the other's
# do not (Python's str.isspace and re's case folding, markdown-it-py's mdTrim, Rust's char::is_whitespace and Unicode
# case folding).
_DIVERGENT_CHARS: Final = re.compile(
    "[\x0b\x0c\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff\u0130\u0131\u017f\u212a]"
)
_DIVERGENT_ASCII: Final = "\x0b\x0c\x1c\x1d\x1e\x1f"
# A line whose leading markup holds a ``>`` (it may continue a block quote), and the leading markup itself.
_QUOTE_LINE: Final = re.compile(rf"\n{_MARKUP_CHARS}*>")
_LEADING_MARKUP: Final = re.compile(rf"{_MARKUP_CHARS}*+")
_MARKERS_TO_SPACES: Final = str.maketrans("-+*.)0123456789", " " * 15)
# The start of an HTML block that can span blank lines (CommonMark's kinds 1 to 5) behind container markup, where the
# two parsers end it differently, and a kind-4 start with a lowercase letter, which markdown-it-pyrs does not take for
# one.
_SPANNING_HTML: Final = re.compile(rf"\n{_MARKUP_CHARS}+(?:<[!?]|<(?i:script|pre|style|textarea))|\n<![a-z]")
# A line markdown-it-py's table rule could take as a delimiter row, in any container: nothing but container markup and
# ``|:-`` characters, one ``-`` at least (possessive: no backtracking).
_DELIMITER_LINE: Final = re.compile(r"\n[ \t>|:*+.)0-9]*+-[ \t>|:*+.)0-9-]*+(?=\n|\Z)")
_BLANK_LINE: Final = re.compile(r"[ \t]*+(?:\n|\Z)")
_BLANK_LINE_AT: Final = re.compile(r"[ \t]*+(?:[\r\n]|\Z)")  # a line of the decoded text holding only spaces and tabs
_TAB_INDENTED: Final = re.compile(rf"\n{_MARKUP_CHARS}*?\t")


@functools.cache
def _fast_parser() -> Any:
    """markdown-it-pyrs with CommonMark's block rules and no inline rule (inline content comes back as one text node,
    which ``inline_text`` parses with markdown-it-py) and no table rule (tables are ``_table_run_events``')."""
    assert markdown_it_pyrs is not None
    rules: list[Any] = [
        "blockquote",
        "code",
        "fence",
        "heading",
        "hr",
        "lheading",
        "list",
        "paragraph",
        "reference",
        "html_block",
    ]
    return markdown_it_pyrs.MarkdownIt("zero").enable_many(rules)


class _NotFast(Exception):
    """markdown-it-pyrs's tree holds something the walk does not expect: markdown-it-py parses the text instead."""


def _nesting_bounded(text: str) -> bool:
    """Whether no line of ``text`` (the source after a newline) opens with more than FAST_MAX_PREFIX_COLUMNS columns
    of container markup (linear: only lines that open with enough candidate characters are measured)."""
    for m in _WIDE_MARKUP.finditer(text):
        markup = _CONTAINER_MARKUP.match(text, m.start() + 1).group()  # type: ignore[union-attr]  # matches ""
        if len(markup) + 3 * markup.count("\t") > FAST_MAX_PREFIX_COLUMNS:
            return False
    return True


def _quotes_continue_explicitly(text: str) -> bool:
    """Whether every non-blank line after a line that may continue a block quote repeats that line's ``>`` markers
    at the same columns (list markers counted as their width in spaces): a block quote with no lazy continuation
    line, the one place markdown-it-pyrs and markdown-it-py end block quotes differently. ``text`` is the source
    after a newline."""
    for m in _QUOTE_LINE.finditer(text):
        lead = _LEADING_MARKUP.match(text, m.start() + 1).group()  # type: ignore[union-attr]
        end = text.find("\n", m.end())
        if end < 0 or _BLANK_LINE.match(text, end + 1):
            continue
        after = _LEADING_MARKUP.match(text, end + 1).group()  # type: ignore[union-attr]
        if "\t" in lead or "\t" in after:
            return False
        quote = lead[: lead.rindex(">") + 1].translate(_MARKERS_TO_SPACES)
        if after[: after.rfind(">") + 1].translate(_MARKERS_TO_SPACES) != quote:
            return False
    return True


def _table_runs(src: str) -> dict[int, list[str]] | None:
    """The runs of lines that may hold a table, by their first line (1-based): each a maximal run of non-blank lines
    that all start with ``|``. None when a line that markdown-it-py's table rule could take as a delimiter row, under a
    line with a ``|``, lies elsewhere."""
    runs: dict[int, list[str]] = {}
    run_end = -1  # the offset where the last run found ends
    counted_to, line_no = 0, 1  # src.count("\n", 0, counted_to) + 1
    for m in _DELIMITER_LINE.finditer(src):
        delimiter = m.start()  # the newline before the delimiter row
        header = src.rfind("\n", 0, delimiter) + 1
        if "|" not in src[header:delimiter]:
            continue
        if delimiter < run_end:
            continue  # in the run found last
        # the run around the header: back to a blank line (or the start), on to a blank line (or the end)
        start = header
        while start > 0:
            prev = src.rfind("\n", 0, start - 1) + 1
            if _BLANK_LINE.match(src, prev):
                break
            start = prev
        end = header
        while end < len(src) and not _BLANK_LINE.match(src, end):
            nxt = src.find("\n", end)
            end = len(src) if nxt < 0 else nxt + 1
        lines = src[start:end].rstrip("\n").split("\n")
        if not all(line[:1] == "|" for line in lines):
            return None
        line_no += src.count("\n", counted_to, start)
        counted_to = start
        runs[line_no] = lines
        run_end = end
    return runs


def _fast_plan(src: str) -> tuple[dict[int, list[str]], list[int]] | None:
    """For a source the fast parser may read (newlines normalized), its table runs and the lines (1-based) whose
    leading markup holds a tab; None for any other source."""
    if src.isascii():  # (a scan for the few ASCII ones is 4x faster than the regex)
        if any(ch in src for ch in _DIVERGENT_ASCII):
            return None
    elif _DIVERGENT_CHARS.search(src):
        return None
    if "]:" in src:  # no reference definition: markdown-it-pyrs reads some otherwise
        return None
    if src.count("[") + src.count("]") > FAST_MAX_BRACKETS_PER_LINE * (src.count("\n") + 1):
        return None
    text = "\n" + src
    if _SPANNING_HTML.search(text) or not _nesting_bounded(text) or not _quotes_continue_explicitly(text):
        return None
    runs = _table_runs(src)
    if runs is None:
        return None
    tab_lines = []
    counted_to, line_no = 0, 0
    for m in _TAB_INDENTED.finditer(text):
        line_no += text.count("\n", counted_to, m.start() + 1)
        counted_to = m.start() + 1
        tab_lines.append(line_no)
    return runs, tab_lines


# markdown-it-py's table rule (markdown_it/rules_block/table.py) for a run of lines that all start with ``|`` at the
# top level: what its header, delimiter and row checks, escapedSplit and mdTrim make of such lines (a test holds the
# port to the original on generated runs).
_MD_TRIM_CHARS: Final = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029"
    "\u202f\u205f\u3000"
)
_HEADER_CELL: Final = re.compile(r"^:?-+:?$")


def _escaped_split(string: str) -> list[str]:
    """markdown-it-py's escapedSplit: split at ``|`` not preceded by a backslash (which the cell then loses)."""
    result: list[str] = []
    current = ""
    last = 0
    escaped = False
    for pos, ch in enumerate(string):
        if ch == "|":
            if not escaped:
                result.append(current + string[last:pos])
                current = ""
                last = pos + 1
            else:
                current += string[last : pos - 1]
                last = pos
        escaped = ch == "\\"
    result.append(current + string[last:])
    return result


def _row_cells(line: str) -> list[str]:
    columns = _escaped_split(line.strip(_MD_TRIM_CHARS))
    if columns and columns[0] == "":
        columns.pop(0)
    if columns and columns[-1] == "":
        columns.pop()
    return columns


def _table_header(lines: list[str], i: int) -> list[str] | None:
    """The header cells of a table starting at ``lines[i]``, if markdown-it-py's table rule starts one there."""
    if i + 1 >= len(lines):
        return None
    delimiter = lines[i + 1]
    if len(delimiter) < 2 or delimiter[0] not in "|-:" or delimiter[1] not in "|-: \t":
        return None
    if delimiter[0] == "-" and delimiter[1] in " \t":
        return None
    if delimiter.strip("|-: \t"):
        return None
    columns = delimiter.split("|")
    aligns = 0
    for k, column in enumerate(columns):
        cell = column.strip(_MD_TRIM_CHARS)
        if not cell:
            if k == 0 or k == len(columns) - 1:
                continue
            return None
        if not _HEADER_CELL.search(cell):
            return None
        aligns += 1
    if "|" not in lines[i].strip(_MD_TRIM_CHARS):
        return None
    header = _row_cells(lines[i])
    if not header or len(header) != aligns:
        return None
    return [cell.strip(_MD_TRIM_CHARS) for cell in header]


def _table_run_events(lines: list[str], first_line: int) -> list[Event]:
    """The paragraphs and tables markdown-it-py makes of a run of lines that all start with ``|`` (``first_line`` is
    the first one's 1-based number)."""
    events: list[Event] = []
    n = len(lines)
    para = -1  # the run line the open paragraph starts on
    i = 0
    while i < n:
        header = _table_header(lines, i)
        if header is None:
            if para < 0:
                para = i
            i += 1
            continue
        if para >= 0:
            content = "\n".join(lines[para:i]).strip(_MD_TRIM_CHARS)
            events.append((_PARA, first_line + para, first_line + i - 1, content))
            para = -1
        count = len(header)
        rows = [header]
        autocompleted = 0
        j = i + 2
        while j < n:
            columns = _row_cells(lines[j])
            autocompleted += count - len(columns)
            if autocompleted > TABLE_MAX_AUTOCOMPLETED_CELLS:
                break
            rows.append(
                [(c.strip(_MD_TRIM_CHARS) if c else "") for c in columns[:count]] + [""] * (count - len(columns))
            )
            j += 1
        events.append((_TABLE, first_line + i, first_line + j - 1, rows))
        i = j
    if para >= 0:
        events.append((_PARA, first_line + para, first_line + n - 1, "\n".join(lines[para:]).strip(_MD_TRIM_CHARS)))
    return events


def _memory_room() -> int | None:
    """Bytes the process may still allocate under its RLIMIT_DATA and RLIMIT_AS soft limits (the worker sets them),
    or None when neither is set."""
    import resource

    data_limit = resource.getrlimit(resource.RLIMIT_DATA)[0]
    as_limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if data_limit == resource.RLIM_INFINITY and as_limit == resource.RLIM_INFINITY:
        return None
    try:
        with open("/proc/self/statm", "rb") as f:  # pages: size resident shared text lib data dirty
            fields = f.read().split()
        page = resource.getpagesize()
        size, data = int(fields[0]) * page, int(fields[5]) * page
    except (OSError, IndexError, ValueError):  # not Linux: count nothing used (the margin covers the interpreter)
        size = data = 0
    room = []
    if data_limit != resource.RLIM_INFINITY:
        room.append(data_limit - data)
    if as_limit != resource.RLIM_INFINITY:
        room.append(as_limit - size)
    return max(0, min(room))


def _fast_events(source: str) -> list[Event] | None:
    """The block events of ``source`` from markdown-it-pyrs, or None when it must not or cannot read it.

    It reads ``source`` as markdown-it-py does (newlines normalized, NUL as U+FFFD: the line numbers stay the file's);
    its node positions are UTF-8 byte offsets into that text (``_tree_events`` counts their lines).
    """
    if markdown_it_pyrs is None:
        return None
    src = normalize_newlines(source)
    if "\0" in src:
        src = src.replace("\0", "\ufffd")
    tail = src.rfind("\n") + 1
    if tail < len(src) and not src[tail:].strip(" \t"):
        src = src[:tail]  # markdown-it-py gives a last line of only spaces and tabs, with no newline, no line at all
    plan = _fast_plan(src)
    if plan is None:
        return None
    runs, tab_lines = plan
    buf: str | bytes
    if src.isascii():
        buf = src
    else:
        try:
            buf = src.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate (from a codec that lets one through): markdown-it-py copes
            return None
    room = _memory_room()
    if room is not None and len(buf) * FAST_MEMORY_PER_BYTE > room:
        return None
    ascii_ = isinstance(buf, str)
    del buf  # each piece is encoded on its own
    try:
        return _piecewise_events(src, ascii_, runs, tab_lines)
    except (MemoryError, KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # _NotFast, a node shaped otherwise than this walk knows, or a Rust panic (pyo3's
        return None  # PanicException, a BaseException): markdown-it-py parses the text


def _piece_ends(src: str) -> list[int]:
    """Where the fast parse cuts ``src`` into pieces parsed one at a time (offsets, the last ``len(src)``): about
    every FAST_PIECE_CHARS, just before an ATX heading at column 0 that follows a blank line (``_PIECE_BREAK``).

    Such a heading ends every open block but an open fence or an HTML block that may span blank lines (CommonMark's
    kinds 1 to 5), so the blocks before it are what they would be without the text after it, and the text after it
    parses as a document of its own (reference definitions, the one way text acts on text before it, never take the
    fast path). ``_piece_events`` checks each piece for the open fence or HTML block."""
    ends = []
    pos = FAST_PIECE_CHARS
    while pos < len(src):
        m = _PIECE_BREAK.search(src, pos)
        if m is None:
            break
        ends.append(m.end())
        pos = m.end() + FAST_PIECE_CHARS
    ends.append(len(src))
    return ends


def _piecewise_events(src: str, ascii_: bool, runs: dict[int, list[str]], tab_lines: list[int]) -> list[Event]:
    """The block events of ``src`` from markdown-it-pyrs, parsed a piece at a time (``_piece_ends``): a tree takes
    some 20 bytes of memory a source byte, so one piece's tree at a time keeps the fast path's peak to a few MB. A
    piece that ends inside an open fence or HTML block is parsed again with all the text after it."""
    events: list[Event] = []
    ends = _piece_ends(src)
    start, line = 0, 1
    k = 0
    while k < len(ends):
        end = ends[k]
        piece = src[start:end]
        buf: str | bytes = piece if ascii_ else piece.encode("utf-8")
        root = _fast_parser().tree(piece)
        if end < len(src) and _open_at_end(root, buf):
            ends[k + 1 :] = []
            ends[k] = len(src)
            continue
        lines = piece.count("\n")
        events += _tree_events(root, buf, runs, tab_lines, first_line=line, end_line=line + lines)
        del root
        line += lines
        start = end
        k += 1
    return events


def _open_at_end(root: Any, buf: str | bytes) -> bool:
    """Whether a fence or HTML block of the piece ``buf`` (which ends with a blank line) runs into that blank line:
    one that the text after the piece could still continue. (A node's position ends before its last line's
    newline: a block closed before the blank line ends before the blank line starts.)"""
    blank = buf.rfind("\n" if isinstance(buf, str) else b"\n", 0, len(buf) - 1) + 1  # type: ignore[arg-type]
    node = root
    while node.children:
        node = node.children[-1]
        if node.name in ("fence", "html_block") and node.srcmap is not None and node.srcmap[1] >= blank:
            return True
    return False


def _leaf_event(node: Any, name: str, opening: str | bytes, first: int, last: int) -> Event:
    """The event of a heading, code or HTML block node on lines ``first..last`` (``opening``: its first line, from
    the node's start)."""
    if name in ("heading", "lheading"):
        kids = node.children
        if kids and (len(kids) != 1 or kids[0].name != "text"):
            raise _NotFast(name)
        content = kids[0].meta["content"] if kids else ""
        return (_HEADING, first, last, content, node.meta["level"])
    if name == "fence":
        info = opening if isinstance(opening, str) else opening.decode("utf-8")
        if info[:1] not in ("`", "~"):
            raise _NotFast(name)
        # markdown-it-py's info string: the rest of the opening line after the run of markers
        return (_CODE, first, last, node.meta["content"], info.lstrip(info[0]))
    if name == "code_block":
        return (_CODE, first, last, node.meta["content"], "")
    if name == "html_block":
        return (_HTML, first, last, node.meta["content"])
    raise _NotFast(name)


def _tree_events(
    root: Any, buf: str | bytes, runs: dict[int, list[str]], tab_lines: list[int], *, first_line: int, end_line: int
) -> list[Event]:
    """markdown-it-pyrs's tree of a piece of the source, lines ``first_line`` to before ``end_line``, as block events
    (iterative). A paragraph at the top level that is one of ``runs`` becomes the table run's events.

    A node's line is 1 + the newlines before its byte offset, counted from the offset asked for last (the walk asks
    in document order, so each stretch of the text is counted about once, in C)."""
    events: list[Event] = []
    append = events.append
    # (typed loosely: each is the str or the bytes one, as buf is)
    digits: re.Pattern[Any] = _DIGITS if isinstance(buf, str) else _DIGITS_B
    newline: Any = "\n" if isinstance(buf, str) else b"\n"
    count: Callable[[Any, int, int], int] = buf.count
    find: Callable[[Any, int, int], int] = buf.find
    runs_left = sum(1 for run in runs if first_line <= run < end_line) if runs else 0
    at, at_line = 0, first_line  # an offset and its line

    # the children being walked, and their parent's name; the events that close the parents
    stack: list[tuple[Iterator[Any], str]] = [(iter(root.children), "root")]
    closers: list[Event | None] = [None]
    while stack:
        children, parent = stack[-1]
        for node in children:
            name = node.name
            if name == "paragraph":
                start, end = node.srcmap
                kids = node.children
                if len(kids) != 1 or kids[0].name != "text" or end <= start:
                    raise _NotFast(name)
                at_line += count(newline, at, start) if start >= at else -count(newline, start, at)
                first = at_line
                at = start
                if first in runs and parent == "root":
                    lines = runs[first]
                    at_line += count(newline, at, end - 1)
                    at = end - 1
                    if at_line != first + len(lines) - 1:
                        raise _NotFast(name)
                    events += _table_run_events(lines, first)
                    runs_left -= 1
                    continue
                content = kids[0].meta["content"]
                if "\n" not in content:
                    if find(newline, start, end - 1) >= 0:
                        raise _NotFast(name)
                    last = first
                else:
                    last = first + content.count("\n")
                    if count(newline, start, end - 1) != last - first:
                        raise _NotFast(name)
                at, at_line = end - 1, last
                append((_PARA, first, last, content))
            elif name == "text" and parent == "list_item":  # a tight list item's paragraph
                # An inline node's position is mapped back from its content, which markdown-it-pyrs maps wrongly
                # past a tab of indentation: its lines are trusted only when they agree with the content's line
                # count and no line around them is indented with a tab.
                start, end = node.srcmap
                if end <= start:
                    raise _NotFast(name)
                content = node.meta["content"]
                at_line += count(newline, at, start) if start >= at else -count(newline, start, at)
                first = at_line
                at = start
                if "\n" not in content:
                    if find(newline, start, end - 1) >= 0:
                        raise _NotFast(name)
                    last = first
                else:
                    last = first + content.count("\n")
                    if count(newline, start, end - 1) != last - first:
                        raise _NotFast(name)
                at, at_line = end - 1, last
                if tab_lines and bisect_left(tab_lines, first - 1) != bisect_right(tab_lines, last + 1):
                    raise _NotFast(name)
                append((_PARA, first, last, content))
            elif name == "list_item":
                start = node.srcmap[0]
                number = None
                if parent == "ordered_list":  # the item's own number, as markdown-it-py reads it off its marker
                    m = digits.match(buf, start)
                    if m is None:
                        raise _NotFast(name)
                    number = int(m.group(1))
                at_line += count(newline, at, start) if start >= at else -count(newline, start, at)
                at = start
                append((_ITEM, at_line, parent == "ordered_list", number))
                stack.append((iter(node.children), name))
                closers.append(_ITEM_END_EV)
                break
            elif name in ("bullet_list", "ordered_list"):
                append(_LIST_EV)
                stack.append((iter(node.children), name))
                closers.append(_LIST_END_EV)
                break
            elif name == "blockquote":
                append(_QUOTE_EV)
                stack.append((iter(node.children), name))
                closers.append(_QUOTE_END_EV)
                break
            else:
                if name == "hr":
                    continue
                start, end = node.srcmap
                if end <= start:
                    raise _NotFast(name)
                at_line += count(newline, at, start) if start >= at else -count(newline, start, at)
                first = at_line
                at = start
                last = first + count(newline, start, end - 1)
                at, at_line = end - 1, last
                eol = find(newline, start, len(buf))
                append(_leaf_event(node, name, buf[start : eol if eol >= 0 else len(buf)], first, last))
        else:
            stack.pop()
            closer = closers.pop()
            if closer is not None:
                append(closer)
    if runs_left:
        raise _NotFast("table")
    return events


# The output budget's bounds (``_Walker``): a string's JSON takes at most 6 bytes a code point (``\\u001f``; UTF-8
# takes at most 4) and its quotes; a block's ``(text, section_path, keys, attrs)`` array its brackets and commas and
# the block's overhead beside.
_BLOCK_BOUND: Final = 2 + 5 + OutputBudget.BLOCK_OVERHEAD
_SETTLE_EVERY: Final = 2048
_INT64: Final = 1 << 63


def _strings_bound(strings: list[str]) -> int:
    """A bound of the JSON of a list of strings."""
    return 6 * sum(map(len, strings)) + 3 * len(strings) + 2


def _attrs_bound(attrs: dict[str, Any]) -> int:
    """A bound of the JSON of attrs of bools, nulls and int64s; for other attrs, a number past any budget (they are
    measured)."""
    size = 2
    for name, value in attrs.items():
        cls = value.__class__
        if cls is bool or value is None or (cls is int and -_INT64 <= value < _INT64):
            size += 6 * len(name) + 24  # quotes, colon, comma, at most 20 characters of value
        else:
            return _UNBOUNDED
    return size


_UNBOUNDED: Final = 1 << 62


class _Walker:
    """Turns block events into blocks; iterative, with explicit container stacks. (Hot: one call chain per block,
    positional tuples; the semantics are those of the module docstring.)

    Blocks are gathered as rows for ``ArtifactBuilder.add_blocks`` (``flush``). Each is charged to the output budget
    as it is made, so a cut falls on the first block that does not fit, as ``OutputBudget.take`` would place it:
    while a bound of the block's JSON (``_bound``) fits in what is left, the block is only bounded, and the bounded
    ones are measured exactly, in one ``orjson.dumps``, every ``_SETTLE_EVERY`` blocks and whenever a bound does not
    fit (``_settle``). Only the innermost open list item can still lack its block: an item's block is made before
    anything nested in it (``_item_block``)."""

    def __init__(
        self, builder: ArtifactBuilder, lines: LineIndex, budget: OutputBudget, env: dict[str, Any], limits: Limits
    ) -> None:
        self.b = builder
        self.limits = limits
        self.env = env  # markdown-it's env: the reference definitions inline links resolve against
        self.lines = lines
        self.budget = budget
        self.sections = SectionTracker()
        self.slugger = Slugger()
        self.items: list[_Item] = []
        self.list_depth = 0
        self.quote_depth = 0
        self.rows: list[BlockRow] = []
        self.depths: list[int | None] = []
        self.next_id = len(builder.blocks)
        self.bounded: list[tuple[str, list[str], list[str], dict[str, Any] | None]] = []  # charged by their bound
        self.room = budget.remaining  # the budget left less the bounds of ``bounded``
        self.path: list[str] | None = None  # the last section path bounded, and its bound
        self.path_bound = 0

    # -- emitting -------------------------------------------------------------------------------------------------

    def _add(
        self,
        type_: str,
        text: str,
        first: int,
        last: int,
        *,
        depth: int | None,
        attrs: dict[str, Any] | None,
        keys: list[str],
        path: list[str],
        parent: str | None,
    ) -> str:
        """Add one block (``parent`` as given), its locator lines ``first..last`` without trailing blank lines."""
        if self.quote_depth:
            attrs = dict(attrs) if attrs else {}
            attrs["quote"] = True
            attrs["quote_depth"] = self.quote_depth
        # the output budget (see the class docstring)
        if path is not self.path:
            self.path = path
            self.path_bound = _strings_bound(path)
        bound = (
            6 * len(text)
            + self.path_bound
            + (_strings_bound(keys) if keys else 2)
            + (4 if attrs is None else _attrs_bound(attrs))
            + _BLOCK_BOUND
        )
        if bound <= self.room:
            self.room -= bound
            bounded = self.bounded
            bounded.append((text, path, keys, attrs))
            if len(bounded) >= _SETTLE_EVERY:
                self._settle()
        else:
            self._settle()
            if not self.budget.take(text, path, keys, attrs):
                raise _Cut(first)
            self.room = self.budget.remaining
        lines = self.lines
        if last > first:
            source = lines.text
            while last > first and _BLANK_LINE_AT.match(source, lines.line_start(last)):
                last -= 1
        locator = {
            "line_start": first,
            "line_end": last,
            "char_start": lines.line_start(first),
            "char_end": lines.line_end(last),
        }
        block_id = f"b{self.next_id}"
        self.next_id += 1
        self.rows.append((block_id, type_, text, parent, path, locator, keys, attrs))
        self.depths.append(depth)
        return block_id

    def _settle(self) -> None:
        """Charge the bounded blocks their exact size: what ``OutputBudget.take`` charges each, summed."""
        bounded = self.bounded
        if bounded:
            # orjson writes a list as "[" + its items' JSON joined by "," + "]"
            exact = len(orjson.dumps(bounded)) - 1 - len(bounded)
            self.budget.charge(exact + OutputBudget.BLOCK_OVERHEAD * len(bounded))
            self.bounded = []
            self.room = self.budget.remaining

    def flush(self) -> None:
        """Hand the blocks made so far to the builder."""
        self._settle()
        if self.rows:
            self.b.add_blocks(self.rows, depths=self.depths)
            self.rows, self.depths = [], []

    def _item_block(self, item: _Item, text: str, last: int) -> str:
        """The block of ``item``, the innermost open item (whose outer items have theirs)."""
        items = self.items
        parent = items[-2].block_id if len(items) > 1 else self.sections.heading_id
        block_id = self._add(
            "list",
            text,
            item.first_line,
            last,
            depth=item.depth,
            attrs=item.attrs,
            keys=[],
            path=self.sections.path,
            parent=parent,
        )
        item.block_id = block_id
        return block_id

    def leaf(
        self,
        type_: str,
        text: str,
        first: int,
        last: int,
        *,
        depth: int | None = None,
        attrs: dict[str, Any] | None = None,
        keys: list[str] | None = None,
    ) -> None:
        """A block that is content of the innermost open item (or of no item)."""
        items = self.items
        if items:
            item = items[-1]
            parent = item.block_id
            if parent is None:  # an item's first content that is not a paragraph: the item's block is empty
                parent = self._item_block(item, "", item.first_line)
        else:
            parent = self.sections.heading_id
        self._add(
            type_,
            text,
            first,
            last,
            depth=depth,
            attrs=attrs,
            keys=[] if keys is None else keys,
            path=self.sections.path,
            parent=parent,
        )

    def paragraph(self, text: str, first: int, last: int, attrs: dict[str, Any] | None = None) -> None:
        items = self.items
        if items and attrs is None:
            item = items[-1]
            if item.block_id is None:  # the item's first paragraph is the item's own text
                self._item_block(item, text, last)
                return
        if not text or text.isspace():
            return
        self.leaf("paragraph", text, first, last, attrs=attrs)

    def heading(self, level: int, text: str, first: int, last: int) -> None:
        keys = [text]
        slug = self.slugger.slug(text)
        if slug:
            keys.append(slug)
        if self.items or self.quote_depth:
            self.leaf("heading", text, first, last, depth=level, keys=keys)
            return
        sections = self.sections
        path = sections.path_with(level, text)
        block_id = self._add(
            "heading",
            text,
            first,
            last,
            depth=level,
            attrs=None,
            keys=keys,
            path=path,
            parent=sections.parent_for(level),
        )
        sections.enter(level, text, block_id)

    # -- the walk -------------------------------------------------------------------------------------------------

    def walk(self, events: list[Event]) -> None:
        env = self.env
        limits = self.limits
        items = self.items
        paragraph = self.paragraph
        for ev in events:
            kind = ev[0]
            if kind == _PARA:
                paragraph(inline_text(ev[3], env, limits), ev[1], ev[2])
            elif kind == _ITEM:
                attrs: dict[str, Any] = {"ordered": ev[2]}
                if ev[3] is not None:
                    attrs["number"] = ev[3]
                if items and items[-1].block_id is None:  # a nested list is content of the item it sits in
                    self._item_block(items[-1], "", items[-1].first_line)
                items.append(_Item(ev[1], self.list_depth - 1, attrs))
            elif kind == _ITEM_END:
                items.pop()
            elif kind == _LIST:
                self.list_depth += 1
            elif kind == _LIST_END:
                self.list_depth -= 1
            elif kind == _HEADING:
                self.heading(ev[4], inline_text(ev[3], env, limits), ev[1], ev[2])
            elif kind == _QUOTE:
                self.quote_depth += 1
            elif kind == _QUOTE_END:
                self.quote_depth -= 1
            elif kind == _CODE:
                _, first, last, content, info = ev
                code = content[:-1] if content.endswith("\n") else content
                attrs = {}
                info = info.strip()
                if info:
                    attrs["language"] = info.split(maxsplit=1)[0]
                    if info != attrs["language"]:
                        attrs["info"] = info
                self.leaf("code", code, first, last, attrs=attrs or None)
            elif kind == _HTML:
                text = _html_visible_text(ev[3], env, limits)
                if text:
                    paragraph(text, ev[1], ev[2], {"html": True})
            elif kind == _TABLE:
                _, first, last, raw_rows = ev
                columns = [inline_text(cell, env, limits) for cell in raw_rows[0]]
                rows = [[inline_text(cell, env, limits) for cell in row] for row in raw_rows[1:]]
                text = "\n".join("\t".join(r) for r in [columns, *rows])
                self.leaf("paragraph", text, first, last, attrs={"table": {"columns": columns, "rows": rows}})


def _count_nonblank(text: str, start: int, end: int) -> int:
    """The lines of ``text[start:end]`` that hold more than spaces and tabs (a line ends at ``\\n``, ``\\r\\n`` or
    ``\\r``): in UTF-8, spaces and tabs deleted, the lines left that are not empty (C loops, a megabyte at a time)."""
    total = 0
    pos = start
    while pos < end:
        stop = text.find("\n", pos + _NONBLANK_CHUNK, end)
        stop = end if stop < 0 else stop + 1
        data = text[pos:stop].encode("utf-8", "surrogatepass").translate(None, b" \t")
        if b"\r" in data:
            data = data.replace(b"\r", b"\n")  # a \r\n becomes an empty line, which is not counted
        lines = data.split(b"\n")
        total += len(lines) - lines.count(b"")
        pos = stop
    return total


_NONBLANK_CHUNK: Final = 1 << 20


def _body(ctx: FormatContext) -> dict[str, Any]:
    """The artifact of one file (see the module docstring); raises ExtractionError (encoding, resource_limit)."""
    return _extract(ctx.data, ctx.request)


extract = format_module(_body)


def _extract(data: bytes, request: ExtractRequest, *, fast: bool = True) -> dict[str, Any]:
    decoded = decode_text(data, option=request.encoding)
    refuse_wide_text(data, decoded.source, request.limits.wide_text_sample)
    text = decoded.text
    del data
    builder = ArtifactBuilder(
        "markdown", parser=PARSER, parser_version=PARSER_VERSION, unit="lines", options=request.options()
    )
    builder.attrs["encoding"] = decoded.encoding
    budget = output_budget(request, BudgetKind.TEXT)
    budget.charge(256)
    lines = LineIndex(text)
    env: dict[str, Any] = {}
    limits = request.limits
    walker = _Walker(builder, lines, budget, env, limits)

    cut_line = 0
    source = text
    front_end = _front_matter_end(lines)
    if front_end:
        body = "\n".join(lines.line_text(n) for n in range(2, front_end))
        try:
            walker.leaf("code", body, 1, front_end, attrs={"front_matter": True, "language": "yaml"})
        except _Cut as cut:
            cut_line = cut.line
        # Blank the front matter's lines rather than cutting them, so the parser's line numbers stay the file's.
        source = "\n" * front_end + text[lines.line_start(front_end + 1) :] if front_end < lines.line_count else ""

    if not cut_line:
        # the fast parser's container depth stays below the nesting limit (FAST_MAX_PREFIX_COLUMNS), whose skips
        # only markdown-it-py reports: a request with a lower limit reads with markdown-it-py
        fast = fast and limits.markdown_max_nesting > FAST_MAX_PREFIX_COLUMNS + 2
        events = _fast_events(source) if fast else None
        if events is None:
            try:
                tokens = _parser(limits.markdown_max_nesting).parse(source, env)
            except RecursionError:
                raise ExtractionError(
                    ErrorCode.RESOURCE_LIMIT, "the Markdown nests too deeply to parse (recursion limit)"
                ) from None
            events = _reference_events(tokens)
            del tokens
        del source
        try:
            walker.walk(events)
        except _Cut as cut:
            cut_line = cut.line
        del events
    walker.flush()

    # Coverage: every non-blank line is read by some markdown-it rule, except the ones the nesting limit skipped
    # and the ones past the output cut.
    total = _count_nonblank(text, 0, len(text))
    failed_lines = 0
    skipped: list[tuple[int, int]] = sorted(env.get(_SKIPPED_KEY, []))
    failures: list[tuple[int, int, int]] = []  # (first line, last line, non-blank lines), 1-based
    for start, end in skipped:  # 0-based, end exclusive
        first, last = start + 1, min(end, lines.line_count)
        if cut_line:
            last = min(last, cut_line - 1)
        if last < first:
            continue
        count = _count_nonblank(text, lines.line_start(first), lines.line_end(last))
        if count:
            failures.append((first, last, count))
    if cut_line:
        last = max(cut_line, lines.line_count)
        count = _count_nonblank(text, lines.line_start(cut_line), len(text))
        failures.append((cut_line, last, -count))
    for n_entry, (first, last, count) in enumerate(failures):
        failed_lines += abs(count)
        reason = OUTPUT_LIMIT_REASON if count < 0 else NESTING_REASON.format(limit=limits.markdown_max_nesting)
        if n_entry < limits.markdown_max_failed_entries or count < 0:
            builder.fail(line_ranges_label(first, last), reason)
        elif n_entry == limits.markdown_max_failed_entries:
            builder.fail("more line ranges", reason)
    literal = env.get(_LITERAL_BRACKETS_KEY, 0)
    if literal:
        builder.warn(LINKS_NOT_PARSED.format(count=literal, limit=limits.markdown_max_bracket_nesting))
    deep_html = env.get(_DEEP_HTML_KEY, 0)
    if deep_html:
        builder.warn(HTML_NESTING_CUT.format(count=deep_html, limit=limits.markdown_html_max_nesting_depth))
    builder.coverage(total=total, extracted=max(0, total - failed_lines))
    return builder.build()
