"""Markdown: CommonMark 0.31.2 exactly, plus GFM tables, with line-exact locators.

Parser: markdown-it-py with the ``commonmark`` preset and the ``table`` rule. Chosen for exactness: it renders all
655 examples of the CommonMark 0.31.2 spec as the spec does (markdown-it-pyrs 652, cmark-gfm 644, being on spec
0.29), and it is pure Python, so hostile nesting cannot overflow a native stack (markdown-it-pyrs segfaults on 50,000
nested brackets). It is also the slow part: about 0.45 s of CPU for the 2.8 MB benchmark file
(``benchmarks/bench_text_formats.py``). Inline content is parsed only where it holds inline syntax
(``inline_text``); the block parse is the rest. Decoding: ``extract_fn.text_decoding.decode_text`` (BOM,
``encoding`` option, strict UTF-8); UTF-16/32 without a BOM is the ``encoding`` error (``refuse_wide_text``).

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
  scripts and styles dropped); one that shows nothing (a comment, an image) has no block.
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
reference definition, count as read). Lines are ``failed`` when content nested deeper than ``MAX_NESTING`` levels
(markdown-it's protection against runaway recursion skips it) or when the artifact reached ``max_output_bytes``
(everything from the first block that did not fit is left out); each failed entry names a line range and why.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Any, Final

import markdown_it
from markdown_it import MarkdownIt
from markdown_it.rules_block.state_block import StateBlock
from markdown_it.token import Token

from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.textblocks import (
    OUTPUT_LIMIT_REASON,
    LineIndex,
    OutputBudget,
    SectionTracker,
    Slugger,
    line_ranges_label,
    no_gc,
    refuse_wide_text,
)
from extract_fn.text_decoding import decode_text
from shared.artifact_builder import ArtifactBuilder, make_locator
from shared.contract import ErrorCode, ExtractionError

PARSER: Final = "loom-markdown"
PARSER_VERSION: Final = f"1+markdown-it-py-{markdown_it.__version__}"

# Block nesting (quotes, lists, list items, paragraphs each count one level) markdown-it parses before it skips the
# rest of a container. The preset's 20 cuts a real document's 10-deep list; 100 still keeps the parser's recursion
# (about three Python frames a level) far below the interpreter's limit.
MAX_NESTING: Final = 100
NESTING_REASON: Final = f"not extracted: nested deeper than {MAX_NESTING} levels (quotes and lists)"
MAX_FAILED_ENTRIES: Final = 50

_NONBLANK_LINE: Final = re.compile(r"[^ \t\r\n][^\r\n]*+")  # one match per line holding more than spaces and tabs
_FRONT_OPEN: Final = re.compile(r"---[ \t]*")
_FRONT_CLOSE: Final = re.compile(r"(?:---|\.\.\.)[ \t]*")
_SKIPPED_KEY: Final = "loom_skipped_lines"


@functools.cache
def _parser() -> MarkdownIt:
    """One markdown-it per process; its block tokenizer records the line ranges the nesting limit skips."""
    md = MarkdownIt("commonmark", {"maxNesting": MAX_NESTING}).enable("table")
    # Inline content is parsed on demand (``inline_text``): most paragraphs hold no inline markup at all.
    md.disable(["inline", "text_join"])
    original = md.block.tokenize

    def tokenize(state: StateBlock, start_line: int, end_line: int) -> None:
        # markdown-it drops the rest of a container once state.level reaches maxNesting (after skipping blank
        # lines and leaving less-indented lines to the outer container); note which lines that drops.
        if state.level >= MAX_NESTING:
            line = state.skipEmptyLines(start_line)
            if line < end_line and state.sCount[line] >= state.blkIndent:
                state.env.setdefault(_SKIPPED_KEY, []).append((line, end_line))
        original(state, start_line, end_line)

    md.block.tokenize = tokenize  # type: ignore[method-assign]
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


def inline_text(content: str, env: dict[str, Any]) -> str:
    """The plain text of an inline token's content: markdown-it's inline parse (with the document's env, for
    reference links), its markers dropped. Content with no inline syntax skips the parse."""
    if not _NEEDS_INLINE.search(content):
        return content
    md = _parser()
    children: list[Token] = []
    md.inline.parse(content, md, env, children)
    return _render_inline(children)


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


def _html_visible_text(html: str) -> str:
    """What an HTML block shows: its text with tags, comments, scripts and styles dropped, whitespace collapsed."""
    from extract_fn.formats.html_format import visible_text

    return visible_text(html)


def _front_matter_end(lines: LineIndex) -> int:
    """The 1-based line closing a front matter block that opens on line 1, else 0."""
    if lines.line_count < 2 or not _FRONT_OPEN.fullmatch(lines.line_text(1)):
        return 0
    for line in range(2, lines.line_count + 1):
        if _FRONT_CLOSE.fullmatch(lines.line_text(line)):
            return line
    return 0


class _Walker:
    """Turns markdown-it's token stream into blocks; iterative, with explicit container stacks."""

    def __init__(self, builder: ArtifactBuilder, lines: LineIndex, budget: OutputBudget, env: dict[str, Any]) -> None:
        self.b = builder
        self.env = env  # markdown-it's env: the reference definitions inline links resolve against
        self.lines = lines
        self.budget = budget
        self.sections = SectionTracker()
        self.slugger = Slugger()
        self.items: list[_Item] = []
        self.list_depth = 0
        self.quote_depth = 0

    # -- locators -------------------------------------------------------------------------------------------------

    def _locator(self, first: int, last: int) -> dict[str, Any]:
        """Lines ``first..last`` (1-based, inclusive) without trailing blank lines, and their characters."""
        lines = self.lines
        while last > first and not lines.line_text(last).strip(" \t"):
            last -= 1
        return make_locator(
            line_start=first, line_end=last, char_start=lines.line_start(first), char_end=lines.line_end(last)
        )

    # -- emitting -------------------------------------------------------------------------------------------------

    def _add(
        self,
        type_: str,
        text: str,
        first: int,
        last: int,
        *,
        depth: int | None = None,
        attrs: dict[str, Any] | None = None,
        keys: list[str] | None = None,
        section_path: list[str] | None = None,
        parent: str | None = None,
        own_parent: bool = False,
    ) -> str:
        if self.quote_depth:
            attrs = dict(attrs) if attrs else {}
            attrs["quote"] = True
            attrs["quote_depth"] = self.quote_depth
        path = self.sections.path if section_path is None else section_path
        if not self.budget.take(text, path, keys or (), attrs):
            raise _Cut(first)
        if not own_parent:
            parent = self._container_parent()
        return self.b.add_block(
            type_,
            text,
            locator=self._locator(first, last),
            section_path=path,
            keys=keys or (),
            parent=parent,
            depth=depth,
            attrs=attrs,
        )

    def _container_parent(self) -> str | None:
        for item in reversed(self.items):
            if item.block_id is not None:
                return item.block_id
        return self.sections.heading_id

    def _materialize(self, upto: int) -> None:
        """Give every pending item among ``items[:upto]`` its (empty-text) block, outermost first."""
        for item in self.items[:upto]:
            if item.block_id is None:
                item.block_id = self._item_block(item, "", item.first_line, item.first_line)

    def _item_block(self, item: _Item, text: str, first: int, last: int) -> str:
        parent = None
        for outer in reversed(self.items):
            if outer is not item and outer.block_id is not None:
                parent = outer.block_id
                break
        if parent is None:
            parent = self.sections.heading_id
        return self._add("list", text, first, last, depth=item.depth, attrs=item.attrs, parent=parent, own_parent=True)

    def leaf(self, type_: str, text: str, first: int, last: int, **kw: Any) -> None:
        """A block that is content of the innermost open item (or of no item)."""
        self._materialize(len(self.items))
        self._add(type_, text, first, last, **kw)

    def paragraph(self, text: str, first: int, last: int, attrs: dict[str, Any] | None = None) -> None:
        items = self.items
        if items and items[-1].block_id is None and attrs is None:
            item = items[-1]
            self._materialize(len(items) - 1)
            item.block_id = self._item_block(item, text, item.first_line, last)
            return
        if not text.strip():
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
        path = self.sections.path_with(level, text)
        parent = self.sections.parent_for(level)
        bid = self._add(
            "heading", text, first, last, depth=level, keys=keys, section_path=path, parent=parent, own_parent=True
        )
        self.sections.enter(level, text, bid)

    # -- the walk -------------------------------------------------------------------------------------------------

    def walk(self, tokens: list[Token]) -> None:
        i = 0
        n = len(tokens)
        while i < n:
            tok = tokens[i]
            typ = tok.type
            if typ == "paragraph_open":
                inline = tokens[i + 1]
                first, last = _lines(tok)
                self.paragraph(inline_text(inline.content, self.env), first, last)
                i += 3
                continue
            if typ == "heading_open":
                first, last = _lines(tok)
                self.heading(int(tok.tag[1]), inline_text(tokens[i + 1].content, self.env), first, last)
                i += 3
                continue
            if typ == "list_item_open":
                first, _ = _lines(tok)
                attrs: dict[str, Any] = {"ordered": tok.markup in (".", ")")}
                if attrs["ordered"] and tok.info.isdigit():
                    attrs["number"] = int(tok.info)
                self._materialize(len(self.items))  # a nested list is content of the item it sits in
                self.items.append(_Item(first, self.list_depth - 1, attrs))
            elif typ == "list_item_close":
                self.items.pop()
            elif typ in ("bullet_list_open", "ordered_list_open"):
                self.list_depth += 1
            elif typ in ("bullet_list_close", "ordered_list_close"):
                self.list_depth -= 1
            elif typ == "blockquote_open":
                self.quote_depth += 1
            elif typ == "blockquote_close":
                self.quote_depth -= 1
            elif typ in ("fence", "code_block"):
                first, last = _lines(tok)
                code = tok.content[:-1] if tok.content.endswith("\n") else tok.content
                attrs = {}
                info = tok.info.strip()
                if info:
                    attrs["language"] = info.split(maxsplit=1)[0]
                    if info != attrs["language"]:
                        attrs["info"] = info
                self.leaf("code", code, first, last, attrs=attrs or None)
            elif typ == "html_block":
                first, last = _lines(tok)
                text = _html_visible_text(tok.content)
                if text:
                    self.paragraph(text, first, last, attrs={"html": True})
            elif typ == "table_open":
                i = self._table(tokens, i)
                continue
            i += 1

    def _table(self, tokens: list[Token], i: int) -> int:
        first, last = _lines(tokens[i])
        columns: list[str] = []
        rows: list[list[str]] = []
        row: list[str] = []
        in_head = False
        n = len(tokens)
        i += 1
        while i < n:
            typ = tokens[i].type
            if typ == "table_close":
                break
            if typ == "thead_open":
                in_head = True
            elif typ == "thead_close":
                in_head = False
            elif typ == "tr_open":
                row = []
            elif typ == "tr_close":
                if in_head:
                    columns = row
                else:
                    rows.append(row)
            elif typ == "inline":
                row.append(inline_text(tokens[i].content, self.env))
            i += 1
        text = "\n".join("\t".join(r) for r in [columns, *rows])
        self.leaf("paragraph", text, first, last, attrs={"table": {"columns": columns, "rows": rows}})
        return i + 1


def _lines(tok: Token) -> tuple[int, int]:
    """A token's 1-based first and last line (markdown-it's map is 0-based with an exclusive end)."""
    start, end = tok.map or (0, 1)
    return start + 1, max(start + 1, end)


def _count_nonblank(text: str, start: int, end: int) -> int:
    return sum(1 for _ in _NONBLANK_LINE.finditer(text, start, end))


def extract(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    """The artifact of one file (see the module docstring); raises ExtractionError (encoding, resource_limit)."""
    with no_gc():
        return _extract(data, request)


def _extract(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    decoded = decode_text(data, option=request.encoding)
    refuse_wide_text(data, decoded.source)
    text = decoded.text
    del data
    builder = ArtifactBuilder(
        "markdown", parser=PARSER, parser_version=PARSER_VERSION, unit="lines", options=request.options()
    )
    builder.attrs["encoding"] = decoded.encoding
    budget = OutputBudget(request.max_output_bytes)
    budget.charge(256)
    lines = LineIndex(text)
    env: dict[str, Any] = {}
    walker = _Walker(builder, lines, budget, env)

    cut_line = 0
    source = text
    front_end = _front_matter_end(lines)
    if front_end:
        body = "\n".join(lines.line_text(n) for n in range(2, front_end))
        try:
            walker.leaf("code", body, 1, front_end, attrs={"front_matter": True, "language": "yaml"})
        except _Cut as cut:
            cut_line = cut.line
        # Blank the front matter's lines rather than cutting them, so markdown-it's line numbers stay the file's.
        source = "\n" * front_end + text[lines.line_start(front_end + 1) :] if front_end < lines.line_count else ""

    if not cut_line:
        try:
            tokens = _parser().parse(source, env)
        except RecursionError:
            raise ExtractionError(
                ErrorCode.RESOURCE_LIMIT, "the Markdown nests too deeply to parse (recursion limit)"
            ) from None
        del source
        try:
            walker.walk(tokens)
        except _Cut as cut:
            cut_line = cut.line
        del tokens

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
        reason = OUTPUT_LIMIT_REASON if count < 0 else NESTING_REASON
        if n_entry < MAX_FAILED_ENTRIES or count < 0:
            builder.fail(line_ranges_label(first, last), reason)
        elif n_entry == MAX_FAILED_ENTRIES:
            builder.fail("more line ranges", reason)
    builder.coverage(total=total, extracted=max(0, total - failed_lines))
    return builder.build()
