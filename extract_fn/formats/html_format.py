"""HTML: the text a browser shows, in reading order, as blocks with source locators.

Decoding (``_decode``): a byte-order mark wins; then the charset the document declares: ``<meta charset>`` or
``<meta http-equiv="Content-Type" content="...; charset=...">`` within the first 1024 bytes (the HTML prescan, which
skips comments), else an XML declaration's ``encoding``; labels map to codecs as browsers map them (``iso-8859-1``
and ``ascii`` read as windows-1252, ``gb2312`` as GB18030, ``shift_jis`` as cp932, ``euc-kr`` as cp949, a
``utf-16`` meta as UTF-8); then the ``encoding`` option; else strict UTF-8. When the declared charset does not decode
the bytes (a page that says gb2312 but is UTF-8), the option (if given, else UTF-8) is tried and a warning says so;
when that does not decode either, a windows-1252 declaration is read as the WHATWG Encoding Standard reads it (its
five bytes Python's cp1252 leaves undefined, 0x81 0x8D 0x8F 0x90 0x9D, as U+0081 ...: every byte decodes). With
no BOM and no declaration in the first 1024 bytes, when the option or UTF-8 does not decode the file, a ``<meta>``
charset later in the head (``late_charset``: comments and script/style/title/... text skipped, up to ``</head>``
or a tag that ends the head, within the first MiB) is used, as a browser re-reads a page whose tree builder meets
one, and a warning says so. When nothing decodes, the ``encoding`` error names the byte offset.

Parsing: selectolax's Lexbor, an HTML5 (WHATWG) tree builder, so malformed markup is recovered exactly as browsers
do; entities are decoded by the parser. Tree walks are iterative (10,000 nested elements are fine).

Left out: ``head`` (its ``title`` becomes ``attrs.title`` and ``<html lang>`` ``attrs.lang``), ``script``,
``style``, ``template``, ``noscript``, ``datalist``, ``canvas``, ``audio``, ``video``, ``rp``, an ``iframe``'s
content (its fallback), a ``dialog`` without ``open`` (with or without other attributes), and any element with the
``hidden`` attribute (except ``hidden="until-found"``, which find-in-page reveals) or an inline style with
``display: none`` or ``content-visibility: hidden``. ``visibility: hidden`` (or ``collapse``) hides the text of the
element and of those inside it that do not set ``visibility: visible`` again (the last declaration in the style
wins). ``aria-hidden`` hides from assistive technology only: its content is read. Images have no text (their alt
text is not shown).

Read as a browser shows it: an ``svg``'s ``text`` (with its ``tspan``/``textPath``) and ``foreignObject`` content,
not its ``title``/``desc``/``metadata`` or loose text; an ``object``'s fallback content; a closed ``details``'s body
(one click shows it). Form controls: ``textarea`` and ``button`` content; a drop-down ``select`` shows one option
(the last ``selected``, else the first not ``disabled``), a list box (``multiple`` or ``size`` > 1) every option as
a line; an ``input`` shows its ``value`` (text-like types, any unknown type, submit/reset/button), else its
``placeholder`` (text-like and password fields), a submit or reset input without ``value`` "Submit" / "Reset";
hidden, password values, checkbox, radio, range, color, file and image inputs show no text. An input's text is
placed at its attribute value's characters in the source; a default label has none, so a block that starts or ends
with one is unplaced. An ``iframe``'s ``srcdoc`` document is read as blocks of their own, unplaced (its text is in an
attribute value), whose headings open no sections of the page; past 8 srcdoc documents nested, a ``failed`` entry.

Blocks: text is collected into runs; every block-level element (p, div, section, li, h1-h6, pre, blockquote, table,
tr, td, br is not one, ...) ends the current run, so text directly inside a div or body becomes a paragraph of its
own, as browsers lay out anonymous blocks. Whitespace collapses as CSS ``white-space: normal`` renders it (``<br>``
is a ``\\n``); inside ``pre``/``listing``/``xmp``/``plaintext`` it is kept. A run becomes:

- ``heading`` inside h1-h6 (``depth`` = the level; ``keys`` = [its text, the ids inside it]);
- ``code`` inside pre (``attrs.language`` from a ``language-*``/``lang-*`` class on the pre or its code element);
- ``list``: an ``li``, ``dt`` or ``dd`` item's first run (``depth`` = list nesting, 0 for a top-level list;
  ``attrs.ordered`` for li; ``attrs.term = true`` on a dt, whose text is also a key, ``attrs.definition = true`` on
  a dd). The item's later runs and any block inside it (a nested list, a pre) follow with ``parent`` = the item; an
  item that opens with such a block gets an empty-text block so its children have a parent;
- ``paragraph`` otherwise; inside a blockquote a block carries ``attrs.quote = true`` and ``attrs.quote_depth``.
- A data table is one ``paragraph`` block: ``attrs.table = {"columns": [...], "rows": [[...]]}`` (``columns`` is
  the header row's cells when the first row is in ``thead`` or all ``th``, else ``[]`` and every row is in
  ``rows``; a colspan/rowspan cell's text stands in its first slot, the slots it covers are ``""``, so every row is
  as long as the widest); ``text`` = the caption (when there is one) and the rows as tab-separated lines, header
  first; a nested table's text is part of its cell. A layout table (``role="presentation"``/``"none"``, a heading
  inside, one cell, or mostly paragraphs) is read as ordinary flow instead.

``section_path``: the texts of the headings above the block (a heading's own path ends with itself); headings inside
a list item or blockquote do not open sections. ``parent``: the enclosing list item's block, else the heading whose
section the block is in. ``keys``: the ``id`` (and ``<a name>``) anchors that start in the block, so a ``#fragment``
finds it; a heading's text; a dt's term; a table's caption.

Locators: ``char_start``/``char_end`` are code-point offsets into the decoded source (after any BOM), end exclusive,
from the first to just past the last non-whitespace source character of the block's text: the span holds the block's
text with its inline markup and entity references (``text`` is what that span renders to). ``line_start``/
``line_end`` are the lines of those two characters (a line ends at ``\\n``, ``\\r\\n`` or ``\\r``). They are found by
matching each DOM text node, in document order, against the source's character data (``_SourceMap``); where the
parser rebuilt text that is not one source run (text moved out of a table, text merged across a stray tag) and the
block's first or last text cannot be placed, the locator says so with ``char_start = char_end = -1`` and
``line_start = line_end = 0`` rather than guess. An empty item block has the empty range where its content begins.

Coverage: unit ``chars``: ``total`` = the non-whitespace characters of the visible text (hidden content is not part
of the document a reader sees, so it is in neither count), ``extracted`` = those in the blocks. They differ only when
the artifact reached ``max_output_bytes`` (the rest is one ``failed`` entry) or a table's spans asked for a grid past
``limits.html_max_table_width`` columns or ``limits.html_max_table_cells`` cells (the block is cut there, marked
``attrs.table_truncated``,
and the cut is a ``failed`` entry).
"""

from __future__ import annotations

import copy
import functools
import html as _html
import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import selectolax
from selectolax.lexbor import LexborHTMLParser, LexborNode

from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.frame import FormatContext, format_module, release_heap
from extract_fn.formats.output_budget import BudgetKind, OutputBudget, output_budget
from extract_fn.formats.textblocks import (
    OUTPUT_LIMIT_REASON,
    LineIndex,
    SectionTracker,
)
from extract_fn.limits import Limits
from extract_fn.text_decoding import Decoded, decode_text, known_codec, refuse_wide_text, sniff_bom
from shared.artifact_builder import ArtifactBuilder, BlockRow
from shared.contract import ErrorCode, ExtractionError

PARSER: Final = "loom-html"
PARSER_VERSION: Final = f"1+selectolax-{selectolax.__version__}"

LOCATE_WINDOW: Final = 512  # source runs searched ahead for a text node before it is left unplaced

# ---------------------------------------------------------------------------------------------------------------
# Charset: the prescan of the first 1024 bytes, and browser label -> Python codec.

_PRESCAN_BYTES: Final = 1024
_PRESCAN: Final = re.compile(
    rb"<!--.*?(?:-->|\Z)|<meta(?=[\s/])(?P<meta>[^>]*)>?|</?[A-Za-z][^>]*>?|<[!?/][^>]*>?", re.S | re.I
)
_ATTR: Final = re.compile(rb"""([^\s/>=]+)\s*(?:=\s*("[^"]*"|'[^']*'|[^\s>]*))?""")
_CONTENT_CHARSET: Final = re.compile(rb"""charset\s*=\s*["']?\s*([^\s"';]+)""", re.I)
_XML_DECL: Final = re.compile(rb"""<\?xml[^>]*?encoding\s*=\s*["']([A-Za-z0-9._:-]+)["']""")

_LABELS: Final[dict[str, str]] = {}
for _codec, _names in {
    "utf-8": "utf-8 utf8 unicode-1-1-utf-8 unicode11utf8 unicode20utf8 x-unicode20utf8 utf-16 utf-16le utf-16be",
    "cp1252": "iso-8859-1 iso8859-1 iso88591 iso_8859-1 iso_8859-1:1987 latin1 l1 us-ascii ascii ansi_x3.4-1968 "
    "cp819 ibm819 iso-ir-100 csisolatin1 windows-1252 x-cp1252 cp1252 x-user-defined",
    "cp1254": "iso-8859-9 iso8859-9 iso88599 iso_8859-9 latin5 l5 windows-1254 x-cp1254 cp1254",
    "cp874": "iso-8859-11 iso8859-11 iso885911 tis-620 dos-874 windows-874",
    "gb18030": "gb2312 gbk x-gbk chinese csgb2312 csiso58gb231280 gb_2312 gb_2312-80 iso-ir-58 gb18030",
    "big5hkscs": "big5 big5-hkscs cn-big5 csbig5 x-x-big5",
    "cp932": "shift_jis shift-jis sjis ms_kanji ms932 csshiftjis windows-31j x-sjis",
    "cp949": "euc-kr euckr cseuckr csksc56011987 iso-ir-149 korean ks_c_5601-1987 ks_c_5601-1989 ksc5601 "
    "ksc_5601 windows-949",
    "euc_jp": "euc-jp cseucpkdfmtjapanese x-euc-jp",
    "iso2022_jp": "iso-2022-jp csiso2022jp",
}.items():
    for _name in _names.split():
        _LABELS[_name] = _codec


def codec_for_label(label: str) -> str | None:
    """The Python codec a browser would decode with for a charset label, or None for an unknown label."""
    label = label.strip().strip("\"'").lower()
    return _LABELS.get(label) or known_codec(label)


def prescan_charset(data: bytes) -> str | None:
    """The charset label a document declares (meta in the first 1024 bytes, else an XML declaration), or None."""
    head = data[:_PRESCAN_BYTES]
    for m in _PRESCAN.finditer(head):
        meta = m.group("meta")
        if meta is None:
            continue
        label = _meta_label(meta)
        if label is not None:
            return label
    xm = _XML_DECL.match(data, 0, 256)
    if xm:
        return xm.group(1).decode("ascii")
    return None


def _meta_label(meta: bytes) -> str | None:
    """The known charset label a ``<meta>``'s attributes (the bytes after ``<meta``) declare, or None."""
    attrs: dict[bytes, bytes] = {}
    for am in _ATTR.finditer(meta):
        name = am.group(1).lower()
        if name not in attrs:
            attrs[name] = (am.group(2) or b"").strip(b"\"'")
    label = attrs.get(b"charset")
    if label is None and attrs.get(b"http-equiv", b"").strip().lower() == b"content-type":
        cm = _CONTENT_CHARSET.search(attrs.get(b"content", b""))
        label = cm.group(1) if cm else None
    if label:
        text = label.decode("ascii", "replace")
        if codec_for_label(text):
            return text
    return None


# A <meta charset> past the prescan's window, as the tree builder meets it in the head: comments and the raw text of
# script, style and the like skipped (a meta in a script's string is none), up to the end of the head (</head>, or a
# start tag a head cannot hold, which ends it: <body>, <p>, ...), within the first _LATE_META_BYTES.
_LATE_META_BYTES: Final = 1024 * 1024
_LATE_SCAN: Final = re.compile(
    rb"<!--.*?(?:-->|\Z)"
    rb"|<(?P<raw>script|style|title|textarea|xmp|noframes|noembed|noscript|template)(?=[\s/>])[^>]*>?"
    rb".*?(?:</(?P=raw)(?=[\s/>])[^>]*>?|\Z)"
    rb"|<meta(?=[\s/])(?P<meta>[^>]*)>?"
    rb"|<(?P<tag>/?[A-Za-z][^\s/>]*)[^>]*>?"
    rb"|<[!?][^>]*>?",
    re.S | re.I,
)
_HEAD_TAGS: Final = frozenset({b"html", b"head", b"base", b"basefont", b"bgsound", b"link", b"meta"})


def late_charset(data: bytes) -> tuple[str, int] | None:
    """The label a ``<meta>`` in the head declares past the first 1024 bytes (see ``_LATE_SCAN``), and its byte
    offset; None when the head has none."""
    for m in _LATE_SCAN.finditer(data, 0, min(len(data), _LATE_META_BYTES)):
        meta = m.group("meta")
        if meta is not None:
            label = _meta_label(meta)
            if label is not None:
                return label, m.start()
            continue
        tag = m.group("tag")
        if tag is not None and (tag.lower() == b"/head" or (tag[0:1] != b"/" and tag.lower() not in _HEAD_TAGS)):
            return None
    return None


def _decode(data: bytes, option: str | None) -> tuple[Decoded, str | None]:
    """The document's text by the charset rules above, and a warning when the declared charset had to be passed."""
    bom = sniff_bom(data) is not None
    label = None if bom else prescan_charset(data)
    codec = codec_for_label(label) if label else None
    try:
        return decode_text(data, option=option, declared=codec), None
    except ExtractionError as err:
        if err.code != ErrorCode.ENCODING:
            raise
        if codec is None:
            if bom:
                raise
            return _late_decode(data, option, err)
        try:
            decoded = decode_text(data, option=option)
        except ExtractionError:
            try:  # as the Encoding Standard decodes it: windows-1252 (iso-8859-1, ascii, ...) decodes every byte
                return decode_text(data, declared=codec, whatwg=True), None
            except ExtractionError:
                raise err from None
        how = "the encoding option" if decoded.source == "option" else "UTF-8"
        return decoded, f"the declared charset {label!r} does not decode the file; it was read as {how}"


def _late_decode(data: bytes, option: str | None, err: ExtractionError) -> tuple[Decoded, str | None]:
    """The text by a late ``<meta>`` charset (``late_charset``) when the option or UTF-8 does not decode it, as a
    browser changes the encoding when its tree builder meets one; else ``err``."""
    late = late_charset(data)
    if late is None:
        raise err
    label, at = late
    try:
        decoded = decode_text(data, declared=codec_for_label(label), whatwg=True)
    except ExtractionError:
        raise err from None
    how = f"the encoding option {option!r}" if option else "UTF-8"
    return decoded, (
        f"the file does not decode as {how}; it was read as {label!r}, the charset a <meta> in its head declares "
        f"at byte {at}, past the first {_PRESCAN_BYTES} bytes where a charset is looked for first"
    )


# ---------------------------------------------------------------------------------------------------------------
# The source's character data, to place DOM text nodes back in the source.

# Elements whose content the tokenizer reads as text up to their end tag; script and style give no visible text.
_RAW_SKIP: Final = frozenset({"script", "style", "iframe", "noembed", "noframes"})
_RAW_TEXT: Final = frozenset({"title", "textarea", "xmp"})  # character data (title and textarea decode entities)
# Markup the tokenizer emits no character data for: comments (with the abrupt <!--> and <!--->), doctype, bogus
# comments and processing instructions, start and end tags (quoted attribute values may hold '>'), '</>'. The start
# tag of a raw-text element above (or plaintext) is the first alternative, its name in group 1 (the only group), so
# the scan looks at no other tag's name. Its name ends where any start tag's does (at whitespace, '/', '>' or the
# end), and compares ASCII-case-insensitively, which is ``name.lower()`` for these names: the one non-ASCII letter
# that lowers to ASCII is the Kelvin sign, to 'k', and none of them holds it.
_RAW_NAMES: Final = "|".join(sorted(_RAW_SKIP | _RAW_TEXT | {"plaintext"}))
_TAG_TAIL: Final = r"(?:[^>\"']++|\"[^\"]*+\"|'[^']*+')*+>?"
_MARKUP: Final = re.compile(
    rf"<((?ai:{_RAW_NAMES}))(?=[\t\n\f\r />]|\Z){_TAG_TAIL}"
    r"|<!--(?:-?>|.*?(?:--!?>|\Z))"
    r"|<[!?][^>]*+>?"
    rf"|<[A-Za-z][^\t\n\f\r />]*+{_TAG_TAIL}"
    rf"|</[A-Za-z]{_TAG_TAIL}"
    r"|</[^A-Za-z>][^>]*+>?|</>",
    re.S,
)
_CHARREF: Final = re.compile(r"&(?:#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)|\r\n?|\x00")


class _SourceMap:
    """The decoded source's runs of character data, each as the parser decodes it (entities, CR LF -> LF, NULs
    dropped), and a cursor that walks them in step with the DOM's text nodes. A run that decodes to itself (most)
    is kept as its end offset, not as a copy: it is searched in the source itself (4 MB less for big.html)."""

    __slots__ = ("_decs", "_k", "_maps", "_off", "_src", "_starts", "_tag_floor")

    def __init__(self, src: str) -> None:
        self._src = src
        self._starts: list[int] = []
        self._decs: list[str | int] = []  # a run's decoded text, or the end offset of one that is its own decoding
        self._maps: dict[int, tuple[list[int], list[tuple[int, int, int, int]]]] = {}
        self._k = 0
        self._off = 0
        self._tag_floor = 0  # past the last input tag placed
        self._scan(src)

    def _add(self, src: str, a: int, b: int) -> None:
        """A run of character data the parser decodes (entities, CR, NUL)."""
        raw = src[a:b]
        if "&" in raw or "\r" in raw or "\x00" in raw:
            dec, bps = _decode_run(raw, a)
            if bps:
                self._maps[len(self._decs)] = ([bp[0] for bp in bps], bps)
            self._starts.append(a)
            self._decs.append(dec)
        else:
            self._starts.append(a)
            self._decs.append(b)

    def _scan(self, src: str) -> None:
        """Split the source into character data and markup; raw-text elements restart the scan past their end."""
        n = len(src)
        pos = 0
        starts = self._starts
        decs = self._decs
        # without '&', CR or NUL every run is its own decoding: no run needs a look
        plain = "&" not in src and "\r" not in src and "\x00" not in src
        add = self._add
        while True:
            restarted = False
            for m in _MARKUP.finditer(src, pos):
                s = m.start()
                if s > pos:
                    if plain:
                        starts.append(pos)
                        decs.append(s)
                    else:
                        add(src, pos, s)
                pos = m.end()
                if m.lastindex is None:
                    continue
                name = m.group(1).lower()
                if name == "plaintext":
                    starts.append(pos)
                    decs.append(n)
                    return
                end = re.compile(rf"</{re.escape(name)}[\t\n\f\r />]", re.I).search(src, pos)
                stop = end.start() if end else n
                if name in _RAW_TEXT and stop > pos:
                    if name == "xmp":
                        starts.append(pos)
                        decs.append(stop)
                    else:
                        add(src, pos, stop)
                pos = stop
                restarted = True
                break
            if not restarted:
                if pos < n:
                    if plain:
                        starts.append(pos)
                        decs.append(n)
                    else:
                        add(src, pos, n)
                return

    def locate(self, data: str) -> tuple[int, int] | None:
        """The (run, offset) where ``data`` starts, searching forward from the cursor; the cursor moves past it."""
        decs = self._decs
        k = self._k
        stop = min(len(decs), k + LOCATE_WINDOW)
        off = self._off
        src = self._src
        starts = self._starts
        while k < stop:
            dec = decs[k]
            if dec.__class__ is int:  # a run that is its own decoding: searched in the source
                p = src.find(data, starts[k] + off, dec)
                if p >= 0:
                    p -= starts[k]
                    self._k, self._off = k, p + len(data)
                    return k, p
            else:
                p = dec.find(data, off)  # type: ignore[union-attr]  # a str
                if p >= 0:
                    self._k, self._off = k, p + len(data)
                    return k, p
            k += 1
            off = 0
        return None

    def place(self, core: str) -> tuple[int, int] | None:
        """``locate(core)`` and the source offsets of its start and end (``to_source``), in one call: the source
        offsets of ``core``'s first character and just past its last, or None when it cannot be placed."""
        decs = self._decs
        k = self._k
        stop = min(len(decs), k + LOCATE_WINDOW)
        off = self._off
        src = self._src
        starts = self._starts
        while k < stop:
            dec = decs[k]
            if dec.__class__ is int:  # as in ``locate``
                p = src.find(core, starts[k] + off, dec)
                if p >= 0:
                    p -= starts[k]
                    break
            else:
                p = dec.find(core, off)  # type: ignore[union-attr]  # a str
                if p >= 0:
                    break
            k += 1
            off = 0
        else:
            return None
        end = p + len(core)
        self._k, self._off = k, end
        if self._maps and k in self._maps:
            return self.to_source(k, p, end=False), self.to_source(k, end, end=True)
        start = self._starts[k]
        return start + p, start + end

    def input_tag(self) -> tuple[int, str] | None:
        """The next ``<input>`` tag (its source offset and text) between the cursor and the next run of non-blank
        character data, where the input the walk is at stands (an input has no text node to be placed by), or None;
        the search goes on past it next time. The walk takes one for every input, shown or not, in document order."""
        src = self._src
        starts = self._starts
        decs = self._decs
        k = self._k
        if not starts:
            pos, bound = 0, len(src)
        else:
            pos = 0 if (k, self._off) == (0, 0) else self.to_source(k, self._off, end=True)
            j = k + 1
            stop = min(len(decs), k + LOCATE_WINDOW)
            while j < stop:
                dec = decs[j]
                run = src[starts[j] : dec] if dec.__class__ is int else dec
                if not run.isspace():  # type: ignore[union-attr]  # a str
                    break
                j += 1
            bound = starts[j] if j < len(starts) else len(src)
        m = _INPUT_TAG.search(src, max(pos, self._tag_floor), bound)
        if m is None:
            return None
        self._tag_floor = m.end()
        return m.start(), m.group()

    def input_value(self, attr: str | None, value: str) -> tuple[int, int] | None:
        """The source offsets of the first and just past the last non-space character of attribute ``attr`` of the
        next input tag (``input_tag``) when it decodes to ``value`` (else None: the tag is not this input's)."""
        found = self.input_tag()
        if found is None or attr is None:
            return None
        start, tag = found
        for am in _TAG_ATTR.finditer(tag, 6):
            if am.group(1).lower() != attr:
                continue
            g = 2 if am.group(2) is not None else 3 if am.group(3) is not None else 4
            raw = am.group(g) or ""
            dec = _html.unescape(raw) if "&" in raw else raw
            if dec.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "\ufffd") != value:
                return None
            core = raw.strip(" \t\n\r\f")
            if not core:
                return None
            first = start + am.start(g) + len(raw) - len(raw.lstrip(" \t\n\r\f"))
            return first, first + len(core)  # the first attribute of a name is the one that counts
        return None

    def to_source(self, run: int, offset: int, *, end: bool) -> int:
        """The source offset of a decoded offset in a run (an offset inside an entity goes to its start, or to its
        end for an exclusive ``end``)."""
        start = self._starts[run]
        mapping = self._maps.get(run)
        if mapping is None:
            return start + offset
        keys, bps = mapping
        i = bisect_right(keys, offset) - 1
        if i < 0:
            return start + offset
        dec_pos, src_pos, dec_len, src_len = bps[i]
        if offset < dec_pos + dec_len or (offset == dec_pos + dec_len and dec_len == 0):
            if offset == dec_pos:
                return src_pos
            return src_pos + src_len if end else src_pos
        return src_pos + src_len + (offset - dec_pos - dec_len)


@functools.lru_cache(maxsize=4096)
def _unescape(ref: str) -> str:
    """One character reference as the HTML tokenizer decodes it in text (a page repeats the same few)."""
    return _html.unescape(ref)


def _decode_run(raw: str, base: int) -> tuple[str, list[tuple[int, int, int, int]]]:
    """A run as the parser decodes it, and its breakpoints (decoded pos, source pos, decoded len, source len)."""
    out: list[str] = []
    bps: list[tuple[int, int, int, int]] = []
    pos = 0
    dec_len = 0
    for m in _CHARREF.finditer(raw):
        s, e = m.span()
        g = m.group()
        if g[0] == "&":
            rep = _unescape(g)
            if rep == g:
                continue
        elif g[0] == "\r":
            rep = "\n"
        else:
            rep = ""
        out.append(raw[pos:s])
        dec_len += s - pos
        bps.append((dec_len, base + s, len(rep), e - s))
        out.append(rep)
        dec_len += len(rep)
        pos = e
    out.append(raw[pos:])
    return "".join(out), bps


# ---------------------------------------------------------------------------------------------------------------
# The walk.

_WS: Final = re.compile(r"[ \t\n\r\f\v\x1c-\x1f]+")  # HTML's whitespace, and the ASCII controls str.split() takes
_BR: Final = "\x00"  # a <br> in a run: the parser never leaves U+0000 in a text node, so it cannot clash
_DISPLAY_NONE: Final = re.compile(r"display\s*:\s*none|content-visibility\s*:\s*hidden", re.I)
# ``visibility`` is inherited and a descendant can set it back to visible (unlike display: none); the last one wins
_VISIBILITY: Final = re.compile(r"(?<![\w-])visibility\s*:\s*(hidden|collapse|visible)", re.I)
_LANG_CLASS: Final = re.compile(r"(?:^|\s)(?:language|lang|highlight-source)-([\w+#.-]+)")

_SKIP_SILENT: Final = frozenset({"script", "style", "template", "head"})
_SKIP_HIDDEN: Final = frozenset({"noscript", "datalist", "canvas", "audio", "video", "rp"})
# Elements ``on_enter`` looks at on their own: form controls and frames (inline), a select's options (blocks).
_SPECIAL: Final = frozenset({"input", "select", "iframe"})
_OPTIONS: Final = frozenset({"option", "optgroup"})
_SVG_SHOWN: Final = frozenset({"text", "foreignObject"})  # inside an svg, only these render their text
_SVG_UNSHOWN: Final = frozenset({"title", "desc", "metadata"})  # not rendered, even inside a text element
_MAX_SRCDOC_DEPTH: Final = 8  # iframes read inside iframes' srcdoc
# srcdoc documents read in one file: each is a parse of its own and a copy of the page's open sections (500,000
# of them in 15 MB took 18.5 s); past it, one failed entry says the rest were not read.
_MAX_SRCDOCS: Final = 100
# input types whose value (or, when it is empty, placeholder) shows as text; any unknown type is a text field too
_NO_TEXT_INPUTS: Final = frozenset({"hidden", "checkbox", "radio", "range", "color", "file", "image"})
_BUTTON_INPUTS: Final = {"submit": "Submit", "reset": "Reset", "button": ""}  # the label with no value attribute
_INPUT_TAG: Final = re.compile(r"<(?ai:input)(?=[\t\n\f\r />])(?:[^>\"']++|\"[^\"]*+\"|'[^']*+')*+>?")
_TAG_ATTR: Final = re.compile(
    r"""([^\t\n\f\r />][^\t\n\f\r /=>]*)(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:"([^"]*)"|'([^']*)'|([^\t\n\f\r >]*)))?"""
)
_BLOCK: Final = frozenset(
    {
        "address",
        "article",
        "aside",
        "blockquote",
        "body",
        "caption",
        "center",
        "dd",
        "details",
        "dialog",
        "dir",
        "div",
        "dl",
        "dt",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "frameset",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hgroup",
        "hr",
        "html",
        "legend",
        "li",
        "listing",
        "main",
        "menu",
        "nav",
        "ol",
        "p",
        "plaintext",
        "pre",
        "search",
        "section",
        "summary",
        "table",
        "tbody",
        "td",
        "tfoot",
        "th",
        "thead",
        "tr",
        "ul",
        "xmp",
        "optgroup",
        "option",
    }
)
_HEADINGS: Final = {"h1": 1, "h2": 2, "h3": 3, "h4": 4, "h5": 5, "h6": 6}
_PRE: Final = frozenset({"pre", "listing", "xmp", "plaintext"})
_LISTS: Final = frozenset({"ul", "ol", "menu", "dir", "dl"})
_ITEMS: Final = frozenset({"li", "dt", "dd"})
_TABLE_PARTS: Final = frozenset({"table", "caption", "colgroup", "col", "thead", "tbody", "tfoot", "tr", "td", "th"})

# Frame kinds: what leaving an element undoes.
_F_INLINE, _F_BLOCK, _F_HIDDEN, _F_HEADING, _F_PRE, _F_ITEM, _F_LIST, _F_QUOTE, _F_SELECT = range(9)


class _Shown:
    """What ``visibility`` and SVG leave shown below the elements gone into: a stack of the changes, each undone
    when the element that made it is left (``frame``: the element's depth in the walker's frames)."""

    __slots__ = ("changes", "invisible", "svg", "svg_text")

    def __init__(self) -> None:
        self.invisible = False  # visibility: hidden or collapse, inherited
        self.svg = 0  # svg elements open
        self.svg_text = False  # inside an svg, in a text (or foreignObject) element
        self.changes: list[tuple[int, bool, int, bool]] = []

    @property
    def muted(self) -> bool:
        return self.invisible or (self.svg > 0 and not self.svg_text)

    def enter(self, frame: int, tag: str | None, attrs: dict[str, str | None]) -> bool:
        """Note what the element entered changes; whether it changed anything (``leave`` is then owed)."""
        invisible, svg, svg_text = self.invisible, self.svg, self.svg_text
        if tag == "svg":
            svg += 1
            svg_text = False
        elif svg:
            if tag in _SVG_SHOWN:
                svg_text = True
            elif tag in _SVG_UNSHOWN:
                svg_text = False
        if attrs:
            style = attrs.get("style")
            if style:
                visible = _visibility(style)
                if visible is not None:
                    invisible = not visible
        if (invisible, svg, svg_text) == (self.invisible, self.svg, self.svg_text):
            return False
        self.changes.append((frame, self.invisible, self.svg, self.svg_text))
        self.invisible, self.svg, self.svg_text = invisible, svg, svg_text
        return True

    def leave(self, frame: int) -> bool:
        """Undo the change the element at ``frame`` made, if it made one; whether it did."""
        if self.changes and self.changes[-1][0] == frame:
            _, self.invisible, self.svg, self.svg_text = self.changes.pop()
            return True
        return False


@dataclass(slots=True)
class _Item:
    depth: int
    attrs: dict[str, Any]
    is_term: bool
    block_id: str | None = None


@dataclass(slots=True)
class _Typed:
    kind: int  # _F_HEADING, _F_PRE or _F_ITEM
    level: int = 0
    language: str | None = None
    item: _Item | None = None


class _Cut(Exception):  # control flow, not an error
    """The output budget ran out."""


def _is_hidden(tag: str | None, attrs: dict[str, str | None]) -> bool:
    """Whether the element and all it holds are not rendered (``display: none`` and its like; ``aria-hidden`` hides
    from assistive technology only, so it does not count, and ``visibility`` is ``_visibility``'s)."""
    if tag in _SKIP_HIDDEN:
        return True
    if not attrs:
        return tag == "dialog"
    if "hidden" in attrs and (attrs["hidden"] or "").strip().lower() != "until-found":
        return True
    style = attrs.get("style")
    if style and _DISPLAY_NONE.search(style):
        return True
    return tag == "dialog" and "open" not in attrs


def _visibility(style: str) -> bool | None:
    """What an inline style sets ``visibility`` to: False for hidden or collapse, True for visible, None unset."""
    found = _VISIBILITY.findall(style)
    return found[-1].lower() == "visible" if found else None


def _shown_options(node: LexborNode, attrs: dict[str, str | None]) -> set[int] | None:
    """The options a ``select`` shows: None for a list box (``multiple`` or ``size`` > 1: every option), else the
    drop-down's one option, as a set of ``mem_id``: the last with ``selected``, else the first not disabled."""
    if attrs:
        if "multiple" in attrs:
            return None
        try:
            if int((attrs.get("size") or "1").strip()) > 1:
                return None
        except ValueError:
            pass
    chosen = None
    first = None
    for option in node.css("option"):
        option_attrs = option.attributes
        if "selected" in option_attrs:
            chosen = option
        elif first is None and "disabled" not in option_attrs:
            first = option
    if chosen is None:
        chosen = first
    return set() if chosen is None else {chosen.mem_id}


def _input_text(attrs: dict[str, str | None]) -> tuple[str, str | None] | None:
    """The text an ``input`` shows and the attribute it comes from (None for a button's default label), or None.

    A text-like field (text, search, email, number, a date, an unknown type...) shows its ``value``, or its
    ``placeholder`` while the value is empty; a password field only its placeholder; submit, reset and button
    inputs their ``value``, else "Submit" / "Reset" (a button input: nothing); hidden, checkbox, radio, range,
    color, file and image inputs no text."""
    kind = (attrs.get("type") or "text").strip().lower()
    if kind in _NO_TEXT_INPUTS:
        return None
    value = attrs.get("value")
    if kind in _BUTTON_INPUTS:
        if value is None:
            label = _BUTTON_INPUTS[kind]
            return (label, None) if label else None
        return value, "value"
    if kind != "password" and value and value.strip():
        return value, "value"
    placeholder = attrs.get("placeholder")
    if placeholder and placeholder.strip():
        return placeholder, "placeholder"
    return None


def _nonspace(text: str) -> int:
    """The characters of a block's text that are not collapsible whitespace (what coverage counts)."""
    n = len(text) - text.count(" ") - text.count("\n")
    if "\t" in text or "\r" in text or "\f" in text:
        n -= text.count("\t") + text.count("\r") + text.count("\f")
    return n


class _Walker:
    def __init__(
        self,
        builder: ArtifactBuilder,
        budget: OutputBudget,
        source: _SourceMap | None,
        lines: LineIndex | None,
        limits: Limits,
    ) -> None:
        self.b = builder
        self.fail: Callable[[str, str], None] = builder.fail  # a failed unit (the artifact's)
        self.limits = limits
        self.budget = budget
        self.source = source
        self.lines = lines
        self.sections = SectionTracker()
        self.frames: list[int] = []
        self.typed: list[_Typed] = []
        self.items: list[_Item] = []  # open list items, outermost first
        self.done = 0  # items[:done] have their blocks; the rest are pending (always a suffix)
        self.hidden = 0  # hidden elements open (display: none and the like): their content is not looked at
        self.shown = _Shown()
        self.changes = self.shown.changes  # not empty inside an svg or an element that set visibility
        self.mute = 0  # hidden + whether visibility or SVG hides the text here: text is read while it is 0
        self.selects: list[set[int] | None] = []  # the open selects' shown options (_shown_options)
        self.srcdoc_depth = 0
        self.srcdocs = [0]  # srcdoc documents read in the file (shared with the walkers of table cells' srcdocs)
        self.pre = 0
        self.quote = 0
        self.list_depth = 0
        self.cut = False
        self.cut_line = 0
        self.total = 0
        self.extracted = 0
        # the current run
        self.pieces: list[str] = []
        self.first = -2  # source offset of the run's first non-space character; -2 none yet, -1 unplaced
        self.last = -1
        self.ids: list[str] = []  # anchors waiting for the next block
        self.anchors: list[tuple[int, str, int]] = []  # (frame depth, id, text nodes seen when it was entered)
        self.seen = 0  # non-blank text nodes taken so far
        # blocks made, for one ``ArtifactBuilder.add_blocks`` at the end (``add_rows``)
        self.rows: list[BlockRow] = []
        self.depths: list[int | None] = []
        self.next_id = len(builder.blocks)

    # -- text --------------------------------------------------------------------------------------------------

    def _place(self, data: str) -> tuple[int, int] | None:
        """Source offsets of ``data``'s first non-space character and of the end of its last one."""
        src = self.source
        if src is None:
            return None
        # The text without its edge whitespace: the parser may have merged whitespace from beyond a tag into the
        # node (the newline after </body>), but the characters between the first and last non-space ones are one
        # source run unless the parser moved or merged text (then the node stays unplaced).
        return src.place(data.strip(" \t\n\r\f"))

    def on_text(self, node: LexborNode) -> None:
        data = node.text_content
        if not data:
            return
        if self.mute:
            if self.source is not None and not data.isspace():
                self.source.locate(data.strip(" \t\n\r\f"))
            return
        self.pieces.append(data)  # whitespace collapses when the run is flushed, once for the whole run
        if data.isspace():
            return
        self.seen += 1
        where = self._place(data)
        if self.first == -2:
            self.first = where[0] if where else -1
        self.last = where[1] if where else -1

    def walk(self, root: LexborNode) -> None:
        """``_traverse(root, self.on_enter, self.on_leave, self.on_text)`` with ``on_text`` inlined: text nodes are
        most of a page's nodes, and a call per node was a tenth of the module's time."""
        if not self.on_enter(root):
            return
        on_enter = self.on_enter
        on_leave = self.on_leave
        source = self.source
        root_id = root.mem_id
        node = root.first_child
        if node is None:
            on_leave(root)
            return
        while True:
            if node.is_text_node:
                data = node.text_content
                if data:
                    if self.mute:
                        if source is not None and not data.isspace():
                            source.locate(data.strip(" \t\n\r\f"))
                    else:
                        self.pieces.append(data)  # whitespace collapses when the run is flushed
                        if not data.isspace():
                            self.seen += 1
                            where = source.place(data.strip(" \t\n\r\f")) if source is not None else None
                            if where is None:
                                if self.first == -2:
                                    self.first = -1
                                self.last = -1
                            else:
                                if self.first == -2:
                                    self.first = where[0]
                                self.last = where[1]
            elif node.is_element_node and on_enter(node):
                child = node.first_child
                if child is not None:
                    node = child
                    continue
                on_leave(node)
            while True:
                nxt = node.next
                if nxt is not None:
                    node = nxt
                    break
                node = node.parent
                if node is None:
                    return
                on_leave(node)
                if node.mem_id == root_id:
                    return

    # -- elements ----------------------------------------------------------------------------------------------

    def on_enter(self, node: LexborNode) -> bool:
        tag = node.tag
        if tag in _SKIP_SILENT:
            return False
        if self.hidden:
            if tag in _SPECIAL:
                if tag == "iframe":
                    return False  # its content is raw text, no source run: nothing to step the cursor over
                if tag == "input" and self.source is not None:
                    self.source.input_tag()  # stepped over, as text in hidden content is
            self.frames.append(_F_INLINE)
            return True
        attrs = node.attributes
        if tag in _SKIP_HIDDEN or ((attrs or tag == "dialog") and _is_hidden(tag, attrs)):
            if tag == "input" and self.source is not None:
                self.source.input_tag()
            self._hide()
            return True
        anchor = (attrs.get("id") or (attrs.get("name") if tag == "a" else None)) if attrs else None
        if tag == "br":
            self.pieces.append("\n" if self.pre else _BR)
            return False
        if tag not in _BLOCK:
            if tag in _SPECIAL:
                entered = self._special(node, tag, attrs)
                if entered is not None:
                    return entered
            self.frames.append(_F_INLINE)
            if (attrs and "style" in attrs) or self.changes or tag == "svg":
                self._shown(tag, attrs)
            if anchor:
                self._anchor(anchor)
            return True
        if self.selects and tag in _OPTIONS:
            entered = self._special(node, tag, attrs)
            if entered is not None:
                return entered
        if self.pieces:
            self.flush()  # the run before this block ends here; an anchor on the block belongs to what follows
        if tag == "table" and not _is_layout_table(node, attrs):
            self._table(node, anchor)
            return False
        if tag in _HEADINGS:
            self.typed.append(_Typed(_F_HEADING, level=_HEADINGS[tag]))
            self.frames.append(_F_HEADING)
        elif tag in _PRE:
            self.typed.append(_Typed(_F_PRE, language=_language(node, attrs)))
            self.pre += 1
            self.frames.append(_F_PRE)
        elif tag in _ITEMS:
            item_attrs: dict[str, Any] = {}
            if tag == "li":
                parent = node.parent
                item_attrs["ordered"] = parent is not None and parent.tag == "ol"
            elif tag == "dt":
                item_attrs["term"] = True
            else:
                item_attrs["definition"] = True
            item = _Item(max(0, self.list_depth - 1), item_attrs, tag == "dt")
            self.items.append(item)  # its block comes with its first content (outer pending items with it)
            self.typed.append(_Typed(_F_ITEM, item=item))
            self.frames.append(_F_ITEM)
        elif tag in _LISTS:
            self.list_depth += 1
            self.frames.append(_F_LIST)
        elif tag == "blockquote":
            self.quote += 1
            self.frames.append(_F_QUOTE)
        else:
            self.frames.append(_F_BLOCK)
        if (attrs and "style" in attrs) or self.changes:
            self._shown(tag, attrs)
        if anchor:
            self._anchor(anchor)
        return True

    def _hide(self) -> None:
        """Enter an element whose content is not rendered."""
        self.hidden += 1
        self.mute += 1
        self.frames.append(_F_HIDDEN)

    def _shown(self, tag: str | None, attrs: dict[str, str | None]) -> None:
        """Note the visibility (or SVG text) the element just entered sets (its frame is the last)."""
        if self.shown.enter(len(self.frames), tag, attrs):
            self.mute = self.hidden + self.shown.muted
            if tag == "text" and self.shown.svg:
                self.pieces.append(" ")  # each svg text is placed on its own

    def _special(self, node: LexborNode, tag: str, attrs: dict[str, str | None]) -> bool | None:
        """A form control or iframe: whether to go into it, or None to treat it as any other element."""
        if tag == "input":
            if not self.mute:
                self._input(attrs)
            elif self.source is not None:
                self.source.input_tag()
            return False
        if tag == "iframe":
            srcdoc = attrs.get("srcdoc") if attrs else None
            if srcdoc is not None and not self.mute:
                self._srcdoc(srcdoc)
            return False  # the content of an iframe element is never shown
        if tag == "select":
            if self.mute:
                return None
            self.selects.append(_shown_options(node, attrs))
            self.pieces.append(" ")
            self.frames.append(_F_SELECT)
            if (attrs and "style" in attrs) or self.changes:
                self._shown(tag, attrs)
            return True
        # option, optgroup
        if not self.selects or self.selects[-1] is None:
            return None  # in a list box (or outside a select) each option is a line of its own
        if tag == "option" and node.mem_id not in self.selects[-1]:
            self._hide()  # a drop-down shows one option
            return True
        self.frames.append(_F_INLINE)
        if (attrs and "style" in attrs) or self.changes:
            self._shown(tag, attrs)
        return True

    def _input(self, attrs: dict[str, str | None]) -> None:
        """The text an input shows, as a piece of the run (placed at its attribute's characters in the source)."""
        placed = _placed_input(self.source, attrs)
        if placed is None:
            return
        text, where = placed
        text = text.replace("\x00", "")
        if not text.strip():
            return
        pad = "" if self.pre else " "  # an input is a box of its own on the line
        self.pieces.extend((pad, text, pad))
        self.seen += 1
        self.first, self.last = _spanned(self.first, self.last, where)

    def _srcdoc(self, srcdoc: str) -> None:
        """An iframe's ``srcdoc`` document, read as blocks of its own. Its text is in an attribute value, where it
        cannot be placed: its blocks are unplaced (char_start = char_end = -1)."""
        if self.pieces:
            self.flush()
        if self.srcdoc_depth >= _MAX_SRCDOC_DEPTH:
            self.fail(
                "the srcdoc of an iframe",
                f"not extracted: iframes nested more than {_MAX_SRCDOC_DEPTH} deep in srcdoc documents",
            )
            return
        if not _take_srcdoc(self.srcdocs, self.fail):
            return
        html, _ = cut_deep_nesting(srcdoc, self.limits.html_max_nesting_depth)
        tree = LexborHTMLParser(html)
        body = tree.body
        if body is None:
            return
        source, self.source = self.source, None
        sections = copy.deepcopy(self.sections)  # the frame's headings open no sections of the page
        self.srcdoc_depth += 1
        try:
            self.walk(body)
            self.flush()
        finally:
            self.source = source
            self.sections = sections
            self.srcdoc_depth -= 1

    def _anchor(self, anchor: str) -> None:
        """An id on the element just entered: a key of the block its text goes to (dropped if it has none)."""
        self.ids.append(anchor)
        self.anchors.append((len(self.frames), anchor, self.seen))

    def on_leave(self, node: LexborNode) -> None:
        depth = len(self.frames)
        kind = self.frames.pop()
        if self.anchors and self.anchors[-1][0] == depth:
            _, anchor, seen = self.anchors.pop()
            if seen == self.seen and anchor in self.ids:  # an empty element: its id names no text
                del self.ids[len(self.ids) - 1 - self.ids[::-1].index(anchor)]
        if self.changes and self.changes[-1][0] == depth:
            if self.shown.svg_text and node.tag == "text":
                self.pieces.append(" ")
            self.shown.leave(depth)
            self.mute = self.hidden + self.shown.muted
        if kind == _F_INLINE:
            return
        if kind == _F_HIDDEN:
            self.hidden -= 1
            self.mute -= 1
            return
        if kind == _F_SELECT:
            self.selects.pop()
            self.pieces.append(" ")
            return
        if self.pieces:
            self.flush()
        if kind == _F_HEADING:
            self.typed.pop()
        elif kind == _F_PRE:
            self.typed.pop()
            self.pre -= 1
        elif kind == _F_ITEM:
            self.typed.pop()
            self.items.pop()
            self.done = min(self.done, len(self.items))
        elif kind == _F_LIST:
            self.list_depth -= 1
        elif kind == _F_QUOTE:
            self.quote -= 1

    # -- blocks ------------------------------------------------------------------------------------------------

    def flush(self) -> None:
        pieces = self.pieces
        if not pieces:
            return
        first, last = self.first, self.last
        self.pieces = []
        self.first = -2
        self.last = -1
        if first == -2:  # nothing but whitespace
            return
        top = self.typed[-1] if self.typed else None
        if top is not None and top.kind == _F_PRE:
            text = "".join(pieces).lstrip("\n").rstrip()
            count = _nonspace(text)
        else:
            text = "".join(pieces)
            # Collapse as CSS does. Printable ASCII without two spaces in a row (most runs) has nothing to collapse
            # but its edge spaces; other ASCII text goes through str.split(), which splits on exactly _WS's
            # characters (and is faster than the regex); the rest through _WS.
            if not (text.isascii() and text.isprintable() and "  " not in text):
                text = " ".join(text.split()) if text.isascii() else _WS.sub(" ", text)
                if _BR in text:
                    text = "\n".join(line.strip(" ") for line in text.split(_BR))
                    text = text.strip("\n")
            text = text.strip(" ")
            # what is left of HTML's whitespace is single spaces and <br>'s newlines
            count = len(text) - text.count(" ") - text.count("\n")
        if not text:
            return
        self.total += count
        if self.cut:
            return
        ids, self.ids = self.ids, []
        try:
            self._emit(text, top, first, last, ids)
        except _Cut:
            self.cut = True
            self.cut_line = self._line(first)
            return
        self.extracted += count

    def _line(self, pos: int) -> int:
        if pos < 0 or self.lines is None:
            return 0
        return self.lines.line_of(pos)

    def _locator(self, first: int, last: int) -> dict[str, Any]:
        """The block's locator, as ``make_locator`` gives it: built directly (a block's largest fixed cost was the
        checks), as every pair holds by construction: 0 <= first <= last, and lines of offsets in that order."""
        lines = self.lines
        if first < 0 or last < 0 or last < first or lines is None:
            return {"line_start": 0, "line_end": 0, "char_start": -1, "char_end": -1}
        return {
            "line_start": lines.line_of(first),
            "line_end": lines.line_of(max(first, last - 1)),
            "char_start": first,
            "char_end": last,
        }

    def _add(
        self,
        type_: str,
        text: str,
        locator: dict[str, Any],
        *,
        parent: str | None,
        depth: int | None = None,
        attrs: dict[str, Any] | None = None,
        keys: list[str] | None = None,
        section_path: list[str] | None = None,
    ) -> str:
        if self.quote:
            attrs = dict(attrs) if attrs else {}
            attrs["quote"] = True
            attrs["quote_depth"] = self.quote
        path = self.sections.path if section_path is None else section_path
        if keys is None:
            keys = []
        if not self.budget.take(text, path, keys, attrs):
            raise _Cut
        block_id = f"b{self.next_id}"
        self.next_id += 1
        self.rows.append((block_id, type_, text, parent, path, locator, keys, attrs))
        self.depths.append(depth)
        return block_id

    def add_rows(self) -> None:
        """Hand the blocks made so far to the builder (one ``add_blocks``: a fraction of ``add_block``'s cost a
        block)."""
        if self.rows:
            self.b.add_blocks(self.rows, depths=self.depths)
            self.rows, self.depths = [], []

    def _container_parent(self) -> str | None:
        """The innermost item with a block, else the heading of the current section."""
        if self.done:
            return self.items[self.done - 1].block_id
        return self.sections.heading_id

    def _materialize(self, upto: int, at: int = -1) -> None:
        """Give every pending item among ``items[:upto]`` an empty-text block (at source offset ``at``)."""
        while self.done < upto:
            item = self.items[self.done]
            item.block_id = self._add(
                "list", "", self._locator(at, at), parent=self._container_parent(), depth=item.depth, attrs=item.attrs
            )
            self.done += 1

    def _emit(self, text: str, top: _Typed | None, first: int, last: int, ids: list[str]) -> None:
        locator = self._locator(first, last)
        if top is not None and top.kind == _F_ITEM and top.item is not None and top.item.block_id is None:
            item = top.item
            self._materialize(len(self.items) - 1, first)
            keys = [text, *ids] if item.is_term else ids
            item.block_id = self._add(
                "list", text, locator, parent=self._container_parent(), depth=item.depth, attrs=item.attrs, keys=keys
            )
            self.done = len(self.items)
            return
        if self.done < len(self.items):
            self._materialize(len(self.items), first)
        if top is not None and top.kind == _F_HEADING:
            keys = [text, *ids]
            if self.items or self.quote:
                self._add("heading", text, locator, parent=self._container_parent(), depth=top.level, keys=keys)
                return
            level = top.level
            bid = self._add(
                "heading",
                text,
                locator,
                parent=self.sections.parent_for(level),
                depth=level,
                keys=keys,
                section_path=self.sections.path_with(level, text),
            )
            self.sections.enter(level, text, bid)
            return
        if top is not None and top.kind == _F_PRE:
            attrs = {"language": top.language} if top.language else None
            self._add("code", text, locator, parent=self._container_parent(), attrs=attrs, keys=ids)
            return
        # the innermost item with a block, else the section's heading (_container_parent, inlined for paragraphs)
        parent = self.items[self.done - 1].block_id if self.done else self.sections.heading_id
        self._add("paragraph", text, locator, parent=parent, keys=ids)

    # -- tables ------------------------------------------------------------------------------------------------

    def _table(self, table: LexborNode, anchor: str | None) -> None:
        reader = _TableReader(self)
        _traverse(table, reader.on_enter, reader.on_leave, reader.on_text)
        grid = reader.grid()
        if not grid and not reader.caption:
            return
        columns: list[str] = []
        rows = grid
        if grid and reader.header_first:
            columns, rows = grid[0], grid[1:]
        lines_out = [reader.caption] if reader.caption else []
        lines_out.extend("\t".join(r) for r in ([columns] if columns else []) + rows)
        text = "\n".join(lines_out)
        if not text.strip():
            return
        count = _nonspace(text)
        # the table's whole text counts, so a grid cut short by its bounds shows in coverage
        self.total += _nonspace(reader.caption) + sum(_nonspace(t) for row in reader.rows for t, _, _ in row.cells)
        if self.cut:
            return
        keys = [reader.caption] if reader.caption else []
        if anchor:
            keys.append(anchor)
        keys.extend(reader.ids)
        table_attrs: dict[str, Any] = {"table": {"columns": columns, "rows": rows}}
        first, last = reader.first, reader.last
        if reader.truncated:
            table_attrs["table_truncated"] = True
            where = f"the table at line {self._line(first)}" if first >= 0 else "a table"
            self.fail(
                f"cells of {where}",
                f"not extracted: its spans ask for more than {self.limits.html_max_table_width:,} columns or "
                f"{self.limits.html_max_table_cells:,} "
                "cells; the grid was cut there",
            )
        try:
            self._materialize(len(self.items), first)
            self._add(
                "paragraph",
                text,
                self._locator(first, last),
                parent=self._container_parent(),
                attrs=table_attrs,
                keys=keys,
            )
        except _Cut:
            self.cut = True
            self.cut_line = self._line(first)
            return
        self.extracted += count


def _language(node: LexborNode, attrs: dict[str, str | None]) -> str | None:
    for cls in (attrs.get("class"), _first_code_class(node)):
        if cls:
            m = _LANG_CLASS.search(cls)
            if m:
                return m.group(1)
    return None


def _first_code_class(node: LexborNode) -> str | None:
    child = node.first_child
    while child is not None and child.is_text_node and not (child.text_content or "").strip():
        child = child.next
    if child is not None and child.tag == "code":
        return child.attributes.get("class")
    return None


def _is_layout_table(node: LexborNode, attrs: dict[str, str | None]) -> bool:
    role = (attrs.get("role") or "").strip().lower()
    if role in ("presentation", "none"):
        return True
    if node.css_first("h1, h2, h3, h4, h5, h6") is not None:
        return True
    cells = len(node.css("td, th"))
    if cells <= 1:
        return True
    paragraphs = len(node.css("p"))
    return paragraphs >= 2 and paragraphs * 2 >= cells


@dataclass(slots=True)
class _Row:
    head: bool  # in thead
    cells: list[tuple[str, int, int]]  # (text, colspan, rowspan)
    th: list[bool]


class _TableReader:
    """Collects a data table's caption and cells (a nested table's text joins the cell it is in)."""

    def __init__(self, walker: _Walker) -> None:
        self.w = walker
        self.rows: list[_Row] = []
        self.cell: list[str] | None = None
        self.caption = ""
        self.caption_parts: list[str] = []
        self.in_caption = 0
        self.depth = 0  # tables open: 1 inside this table, more inside a nested one
        self.thead = 0
        self.hidden = 0
        self.frames: list[bool] = []  # per element gone into: whether it hid its content
        self.shown = _Shown()  # the visibility the table is in, and what its elements change
        self.shown.invisible, self.shown.svg, self.shown.svg_text = (
            walker.shown.invisible,
            walker.shown.svg,
            walker.shown.svg_text,
        )
        self.selects: list[tuple[int, set[int] | None]] = []  # (frame, shown options) of the open selects
        self.first = -2
        self.last = -1
        self.ids: list[str] = []
        self.header_first = False
        self.truncated = False

    def _target(self) -> list[str] | None:
        if self.cell is not None:
            return self.cell
        return self.caption_parts if self.in_caption else None

    def on_enter(self, node: LexborNode) -> bool:
        tag = node.tag
        if tag in _SKIP_SILENT:
            return False
        if self.hidden:
            if tag in _SPECIAL:
                if tag == "iframe":
                    return False
                if tag == "input" and self.w.source is not None:
                    self.w.source.input_tag()
            self.hidden += 1
            self.frames.append(True)
            return True
        attrs = node.attributes
        if _is_hidden(tag, attrs) or (
            tag == "option"
            and self.selects
            and self.selects[-1][1] is not None
            and node.mem_id not in self.selects[-1][1]
        ):
            if tag == "input" and self.w.source is not None:
                self.w.source.input_tag()
            self.hidden += 1
            self.frames.append(True)
            return True
        if tag in {"input", "iframe"}:
            self._control(tag, attrs)
            return False
        if attrs:
            anchor = attrs.get("id") or (attrs.get("name") if tag == "a" else None)
            if anchor:
                self.ids.append(anchor)
        if tag == "br":
            target = self._target()
            if target is not None:
                target.append(" ")
            return False
        self.frames.append(False)
        if tag == "select":
            self.selects.append((len(self.frames), _shown_options(node, attrs)))
        if (attrs and "style" in attrs) or self.shown.svg or tag == "svg":
            self.shown.enter(len(self.frames), tag, attrs)
        if tag == "table":
            self.depth += 1
        if self.depth > 1 or tag not in _TABLE_PARTS:
            target = self._target()
            if target is not None and tag in _BLOCK:
                target.append(" ")
            return True
        if tag == "caption":
            self.in_caption += 1
        elif tag == "thead":
            self.thead += 1
        elif tag == "tr":
            self.rows.append(_Row(self.thead > 0, [], []))
        elif tag in ("td", "th"):
            if not self.rows:
                self.rows.append(_Row(self.thead > 0, [], []))
            row = self.rows[-1]
            colspan = attrs.get("colspan") if attrs else None
            rowspan = attrs.get("rowspan") if attrs else None
            row.cells.append(
                (
                    "",
                    1 if colspan is None else _span(colspan, self.w.limits.html_max_colspan, zero=1),
                    1 if rowspan is None else _span(rowspan, self.w.limits.html_max_rowspan, zero=0),
                )
            )
            row.th.append(tag == "th")
            self.cell = []
        return True

    def _control(self, tag: str, attrs: dict[str, str | None]) -> None:
        """An input's text, or an iframe's srcdoc text (unplaced), into the cell or caption."""
        target = None if self.shown.muted else self._target()
        source = self.w.source
        if tag == "iframe":
            srcdoc = attrs.get("srcdoc") if attrs else None
            if srcdoc is None or target is None:
                return
            text = _fragment_text(srcdoc, self.w.limits, self.w.srcdoc_depth + 1, self.w.b, self.w.srcdocs)
            where = None
        else:
            placed = _placed_input(source, attrs) if target is not None else None
            if placed is None:
                if target is None and source is not None:
                    source.input_tag()  # not shown here: its tag is still stepped over
                return
            text, where = placed
        if target is None or not text.strip():
            return
        target.append(f" {text} ")
        self.first, self.last = _spanned(self.first, self.last, where)

    def on_leave(self, node: LexborNode) -> None:
        depth = len(self.frames)
        if self.frames.pop():
            self.hidden -= 1
            return
        if self.selects and self.selects[-1][0] == depth:
            self.selects.pop()
        if self.shown.changes and self.shown.changes[-1][0] == depth:
            self.shown.leave(depth)
        tag = node.tag
        nested = self.depth > 1
        if tag == "table":
            self.depth -= 1
        if nested or tag not in _TABLE_PARTS:
            if tag in _BLOCK:
                target = self._target()
                if target is not None:
                    target.append(" ")
            return
        if tag == "caption":
            self.in_caption -= 1
            if not self.in_caption:
                self.caption = _collapse_cell("".join(self.caption_parts))
        elif tag == "thead":
            self.thead -= 1
        elif tag in ("td", "th") and self.cell is not None:
            text = _collapse_cell("".join(self.cell))
            row = self.rows[-1]
            row.cells[-1] = (text, *row.cells[-1][1:])
            self.cell = None

    def on_text(self, node: LexborNode) -> None:
        data = node.text_content
        if not data:
            return
        source = self.w.source
        if self.hidden or self.shown.muted:
            if source is not None and not data.isspace():
                source.locate(data.strip(" \t\n\r\f"))
            return
        target = self._target()
        if target is None:
            return  # whitespace the parser left between rows
        target.append(data)
        if data.isspace():
            return
        where = self.w._place(data)
        if self.first == -2:
            self.first = where[0] if where else -1
        self.last = where[1] if where else -1

    def grid(self) -> list[list[str]]:
        """The rows as a rectangular grid: a spanning cell's text in its first slot, "" in the slots it covers.

        Bounded whatever the spans ask: rows at most ``limits.html_max_table_width`` slots wide, and no more than
        ``limits.html_max_table_cells`` slots (those rowspans cover included); past either the table is cut and marked.
        """
        limits = self.w.limits
        if _unspanned_rows(self.rows, limits):  # what _spanned_grid gives a table without spans, cut nowhere
            grid = [[text for text, _, _ in row.cells] for row in self.rows]
            width = max(map(len, grid), default=0)
        else:
            grid, width = self._spanned_grid(limits)
        if width * len(grid) > limits.html_max_table_cells:  # short rows padded to the widest
            self.truncated = True
            grid = grid[: max(1, limits.html_max_table_cells // max(1, width))]
        for out in grid:
            if len(out) < width:
                out.extend("" for _ in range(width - len(out)))
        if grid:
            first = self.rows[0]
            self.header_first = first.head or (bool(first.th) and all(first.th))
        return grid

    def _spanned_grid(self, limits: Limits) -> tuple[list[list[str]], int]:
        """The grid's rows, each as wide as its own slots, and the widest row's width."""
        grid: list[list[str]] = []
        covered: set[tuple[int, int]] = set()  # slots taken by rowspans from rows above
        width = 0
        cells = 0
        n_rows = len(self.rows)
        for r, row in enumerate(self.rows):
            out: list[str] = []
            c = 0
            for text, colspan, rowspan in row.cells:
                while (r, c) in covered:
                    covered.discard((r, c))
                    out.append("")
                    c += 1
                span = min(colspan, limits.html_max_table_width - c)
                if span <= 0:
                    self.truncated = True
                    break
                out.append(text)
                out.extend("" for _ in range(span - 1))
                down = n_rows - r if rowspan == 0 else min(rowspan, n_rows - r)
                if (down - 1) * span + len(covered) + cells > limits.html_max_table_cells:
                    self.truncated = True
                    down = 1
                for rr in range(r + 1, r + down):
                    for cc in range(c, c + span):
                        covered.add((rr, cc))
                c += span
            while (r, c) in covered:
                covered.discard((r, c))
                out.append("")
                c += 1
            cells += len(out)
            if cells > limits.html_max_table_cells:
                self.truncated = True
                break
            width = max(width, len(out))
            grid.append(out)
        return grid, width


def _unspanned_rows(rows: list[_Row], limits: Limits) -> bool:
    """Whether no cell of ``rows`` spans (colspan and rowspan 1) and the grid is within the limits as it is: then
    the grid is the rows' texts."""
    total = 0
    for row in rows:
        n = len(row.cells)
        if n > limits.html_max_table_width:
            return False
        total += n
        for _, colspan, rowspan in row.cells:
            if colspan != 1 or rowspan != 1:
                return False
    return total <= limits.html_max_table_cells


def _collapse_cell(text: str) -> str:
    """A cell's or caption's text, whitespace collapsed and stripped (``_WS.sub(" ", text).strip()``; printable ASCII
    without two spaces in a row has nothing to collapse)."""
    if text.isascii() and text.isprintable() and "  " not in text:
        return text.strip()
    return _WS.sub(" ", text).strip()


def _span(value: str | None, limit: int, *, zero: int) -> int:
    """A colspan or rowspan as a count of slots (at most ``limit``); ``zero`` is what a 0 means (rowspan=0: the rest
    of the table's rows, answered as 0)."""
    try:
        n = int((value or "1").strip())
    except ValueError:
        return 1
    if n < 0:
        return 1
    if n == 0:
        return zero
    return min(n, limit)


def _traverse(
    root: LexborNode,
    on_enter: Callable[[LexborNode], bool],
    on_leave: Callable[[LexborNode], None],
    on_text: Callable[[LexborNode], None],
) -> None:
    """Visit ``root`` and its descendants in document order without recursion.

    ``on_enter(element)`` returns whether to go into the element; ``on_leave`` is called for each element gone
    into, after its children.
    """
    if not on_enter(root):
        return
    root_id = root.mem_id
    node = root.first_child
    if node is None:
        on_leave(root)
        return
    while True:
        if node.is_text_node:
            on_text(node)
        elif node.is_element_node and on_enter(node):
            child = node.first_child
            if child is not None:
                node = child
                continue
            on_leave(node)
        while True:
            nxt = node.next
            if nxt is not None:
                node = nxt
                break
            node = node.parent
            if node is None:
                return
            on_leave(node)
            if node.mem_id == root_id:
                return


# ---------------------------------------------------------------------------------------------------------------


def _run(tree: LexborHTMLParser, walker: _Walker) -> None:
    _walk_tree(tree, walker)
    walker.add_rows()


def _walk_tree(tree: LexborHTMLParser, walker: _Walker) -> None:
    """Walk ``tree`` into ``walker``'s rows (``add_rows`` hands them to the builder)."""
    root = tree.root
    if root is None:
        return
    # head is left out, but its text is stepped over so the source cursor stays in step
    head = tree.head
    if head is not None and walker.source is not None:
        walker.hidden += 1
        walker.mute += 1
        _traverse(head, lambda n: n.tag not in ("script", "style", "template"), lambda n: None, walker.on_text)
        walker.hidden -= 1
        walker.mute -= 1
    body = tree.body
    walker.walk(body if body is not None else root)
    walker.flush()


def _fragment_text(html: str, limits: Limits, srcdoc_depth: int, builder: ArtifactBuilder, srcdocs: list[int]) -> str:
    """The text an iframe's srcdoc shows, its blocks' texts joined by newlines (inside a table cell); past
    ``_MAX_SRCDOC_DEPTH`` nested srcdoc documents, or ``_MAX_SRCDOCS`` in the file (``srcdocs`` counts them),
    nothing, and a ``failed`` entry in ``builder``."""
    if srcdoc_depth > _MAX_SRCDOC_DEPTH:
        builder.fail(
            "the srcdoc of an iframe",
            f"not extracted: iframes nested more than {_MAX_SRCDOC_DEPTH} deep in srcdoc documents",
        )
        return ""
    if not _take_srcdoc(srcdocs, builder.fail):
        return ""
    html, _ = cut_deep_nesting(html, limits.html_max_nesting_depth)
    tree = LexborHTMLParser(html)
    sub = ArtifactBuilder("html", parser=PARSER, parser_version=PARSER_VERSION, unit="chars")
    walker = _Walker(sub, OutputBudget(1 << 62, 0), None, None, limits)
    walker.srcdoc_depth = srcdoc_depth
    walker.srcdocs = srcdocs
    walker.fail = builder.fail
    _run(tree, walker)
    return "\n".join(b["text"] for b in sub.blocks if b["text"])


def _take_srcdoc(srcdocs: list[int], fail: Any) -> bool:
    """Whether one more srcdoc document may be read (``_MAX_SRCDOCS`` in a file); the first past it is a failed
    entry for all the rest."""
    srcdocs[0] += 1
    if srcdocs[0] <= _MAX_SRCDOCS:
        return True
    if srcdocs[0] == _MAX_SRCDOCS + 1:
        fail("iframe srcdoc documents", f"not extracted: past the first {_MAX_SRCDOCS} in the file")
    return False


def visible_text(html: str, limits: Limits) -> tuple[str, bool]:
    """What an HTML fragment (a Markdown HTML block) shows, its blocks' texts joined by newlines, and whether its tags
    nested deeper than ``limits.markdown_html_max_nesting_depth`` (``cut_deep_nesting``: from the first tag past that
    depth on, its tags are dropped and its text kept)."""
    html, cut = cut_deep_nesting(html, limits.markdown_html_max_nesting_depth)
    tree = LexborHTMLParser(html)
    builder = ArtifactBuilder("html", parser=PARSER, parser_version=PARSER_VERSION, unit="chars")
    walker = _Walker(builder, OutputBudget(1 << 62, 0), None, None, limits)  # a fragment's text: unbudgeted
    _run(tree, walker)
    return "\n".join(b["text"] for b in builder.blocks if b["text"]), cut


# HTML5 parsers have no depth limit, and Lexbor's tree building grows with depth squared (200,000 nested <div>s take
# minutes). Tags past this depth are blanked out before parsing: same length, newlines kept, so every offset and line
# number of the source still holds; their text stays in the enclosing element.
# A tag runs to its ">" without another "<" in it: a "<" with no ">" after it (a hostile page of "<o<o<o...") makes
# each try stop at the next "<", not scan to the end of the text (1 MB of them took past the timeout before).
_TAG_RE: Final = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)[^<>]*>")
# Void elements and elements whose end tag may be left out (a browser closes them implicitly) do not count as depth.
_FLAT_ELEMENTS: Final = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
        "p",
        "li",
        "dt",
        "dd",
        "tr",
        "td",
        "th",
        "option",
        "optgroup",
        "thead",
        "tbody",
        "tfoot",
        "colgroup",
        "caption",
        "rb",
        "rt",
        "rtc",
        "rp",
        "html",
        "head",
        "body",
    ]
)
_NOT_NEWLINE: Final = re.compile(r"[^\r\n]")


# _TAG_RE's matches (the same spans), as (end-tag slash, name, "/" when the tag ends with "/>"): findall's tuples,
# with no match object per tag.
_TAG_PARTS_RE: Final = re.compile(r"<(/?)([A-Za-z][A-Za-z0-9-]*)(?:[^<>]*(/)|[^<>]*)>")


def _deeper_than(text: str, max_depth: int) -> bool:
    """Whether ``_flatten_deep_nesting``'s depth count goes past ``max_depth`` anywhere in ``text`` (when it does
    not, nothing is blanked: the common case, answered without the positions)."""
    depth = 0
    counted: dict[str, bool] = {}  # tag name as written -> whether it counts (a page repeats a few names)
    for end, name, closed in _TAG_PARTS_RE.findall(text):
        counts = counted.get(name)
        if counts is None:
            counts = counted[name] = name.lower() not in _FLAT_ELEMENTS
        if not counts:
            continue
        if end:
            if depth:
                depth -= 1
        elif not closed:
            depth += 1
            if depth > max_depth:
                return True
    return False


def _flatten_deep_nesting(text: str, max_depth: int) -> tuple[str, int]:
    """``text`` with tags nested past ``max_depth`` (``limits.html_max_nesting_depth``) blanked out, and how many
    were."""
    if text.count("<") <= max_depth or not _deeper_than(text, max_depth):
        return text, 0
    depth = 0
    cuts: list[tuple[int, int]] = []
    for m in _TAG_RE.finditer(text):
        counts = m.group(2).lower() not in _FLAT_ELEMENTS
        if m.group(1):  # an end tag: blanked inside the too-deep region
            if depth > max_depth:
                cuts.append(m.span())
            if counts and depth:
                depth -= 1
        else:  # a start tag: every tag inside the too-deep region is blanked, list items and cells too
            if counts and not m.group(0).endswith("/>"):
                depth += 1
            if depth > max_depth:
                cuts.append(m.span())
    if not cuts:
        return text, 0
    parts: list[str] = []
    pos = 0
    for start, end in cuts:
        parts.append(text[pos:start])
        parts.append(_NOT_NEWLINE.sub(" ", text[start:end]))
        pos = end
    parts.append(text[pos:])
    return "".join(parts), len(cuts)


def cut_deep_nesting(text: str, max_depth: int) -> tuple[str, bool]:
    """``text`` with every tag from the first one nested past ``max_depth`` on replaced by a space (its text kept), and
    whether there was one. Depth counts as in ``_flatten_deep_nesting``, but the scan stops at the first tag too deep
    and the rest goes through one regex substitution: 100,000 nested ``<div>`` (500 KB) cost 0.3 s to flatten tag by
    tag and 0.25 s of Lexbor's at depth 10,000, against a few ms here at depth 1,000. Offsets are not kept: for a
    fragment whose text is all that is wanted."""
    if text.count("<") - text.count("</") <= max_depth:  # at most that many start tags: no depth past it
        return text, False
    depth = 0
    for m in _TAG_RE.finditer(text):
        if m.group(2).lower() in _FLAT_ELEMENTS:
            continue
        if m.group(1):
            if depth:
                depth -= 1
        elif not m.group(0).endswith("/>"):
            depth += 1
            if depth > max_depth:
                start = m.start()
                return text[:start] + _TAG_RE.sub(" ", text[start:]), True
    return text, False


def _placed_input(source: _SourceMap | None, attrs: dict[str, str | None]) -> tuple[str, tuple[int, int] | None] | None:
    """The text an input shows and where its attribute's characters sit in the source (None: not placed), or None
    when it shows none; either way its tag is stepped over in the source (every input takes one, in order)."""
    shown = _input_text(attrs)
    if shown is None:
        if source is not None:
            source.input_tag()
        return None
    text, attr = shown
    return text, source.input_value(attr, text) if source is not None else None


def _spanned(first: int, last: int, where: tuple[int, int] | None) -> tuple[int, int]:
    """A block's (first, last) source characters once a control's text is added: ``where`` it sits in the source,
    or None where it cannot be placed (-1: the block is unplaced); ``first`` is -2 while the block has no text."""
    if where is None:
        return (-1 if first == -2 else first), -1
    return (where[0] if first == -2 else first), where[1]


_SELECT_OR_OPTION_RE: Final = re.compile(r"<(/?)(select|option)(?=[\s/>])[^>]*>?", re.IGNORECASE)


def _cap_options(text: str, per_select: int, in_all: int) -> tuple[str, int]:
    """``text`` with the option tags of a select past its first ``per_select`` options, or past ``in_all`` options in
    all, blanked (spaces: every offset stays), and how many were. Lexbor runs the HTML selectedness rules over a
    select's options as each is inserted: 20,000 options in one select took 3 s to parse, 50,000 took 28 s."""
    if text.count("<o") + text.count("<O") <= per_select:  # a cheap bound: no page with fewer can pass a cap
        return text, 0
    cuts: list[tuple[int, int]] = []
    in_select = False
    here = kept = 0
    for m in _SELECT_OR_OPTION_RE.finditer(text):
        if m.group(2).lower() == "select":
            in_select, here = not m.group(1), 0
            continue
        if not in_select:
            continue
        if not m.group(1):
            here += 1
            if here <= per_select and kept < in_all:
                kept += 1
                continue
        elif here <= per_select and kept <= in_all:
            continue
        cuts.append(m.span())
    if not cuts:
        return text, 0
    out: list[str] = []
    last = 0
    for start, end in cuts:
        out += [text[last:start], " " * (end - start)]
        last = end
    out.append(text[last:])
    return "".join(out), sum(1 for start, _ in cuts if text[start + 1] != "/")


def _body(ctx: FormatContext) -> dict[str, Any]:
    """The artifact of one file (see the module docstring); raises ExtractionError (encoding, resource_limit)."""
    return _extract(ctx.data, ctx.request)


extract = format_module(_body)


def _extract(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    decoded, warning = _decode(data, request.encoding)
    refuse_wide_text(data, decoded.source, request.limits.wide_text_sample)
    text = decoded.text
    del data
    builder = ArtifactBuilder(
        "html", parser=PARSER, parser_version=PARSER_VERSION, unit="chars", options=request.options()
    )
    builder.attrs["encoding"] = decoded.encoding
    if warning:
        builder.warn(warning)
    budget = output_budget(request, BudgetKind.TEXT)
    budget.charge(512)

    limits = request.limits
    text, flattened = _flatten_deep_nesting(text, limits.html_max_nesting_depth)
    if flattened:
        builder.warn(
            f"{flattened} tags nested deeper than {limits.html_max_nesting_depth} levels were read as plain "
            f"text containers "
            "(their text is kept; their structure is not)"
        )
        builder.attrs["nesting_flattened"] = flattened
    text, blanked = _cap_options(text, limits.html_max_select_options, limits.html_max_options)
    if blanked:
        builder.warn(
            f"{blanked:,} options of long selects (past {limits.html_max_select_options:,} in one, or "
            f"{limits.html_max_options:,} in all) were read as loose text, not as options"
        )
    tree = LexborHTMLParser(text)
    title_node = tree.head.css_first("title") if tree.head is not None else None
    if title_node is not None:
        title = _WS.sub(" ", title_node.text(deep=True)).strip()[: limits.html_max_title_chars]
        if title:
            builder.attrs["title"] = title
            budget.charge(len(title.encode("utf-8")) * 2 + 16)
    root = tree.root
    if root is not None:
        lang = (root.attributes.get("lang") or "").strip()
        if lang:
            builder.attrs["lang"] = lang[:100]
            budget.charge(len(lang.encode("utf-8")) + 16)

    walker = _Walker(builder, budget, _SourceMap(text), LineIndex(text), limits)
    _walk_tree(tree, walker)
    # Lexbor's tree lives in malloc's heap and the blocks made next in Python's own arenas: the tree is freed, and
    # its heap given back, before the rows become blocks (about 8 MB of the worker's peak for big.html).
    del tree, root, title_node
    release_heap(len(text))
    walker.add_rows()
    if walker.cut:
        missing = walker.total - walker.extracted
        where = f"from line {walker.cut_line} on" if walker.cut_line else "after the last block"
        builder.fail(f"{missing} characters of text {where}", OUTPUT_LIMIT_REASON)
    builder.coverage(total=walker.total, extracted=walker.extracted)
    return builder.build()
