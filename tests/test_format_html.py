"""The HTML format module: charsets, visible text, block mapping, tables, locators, limits, corpus."""

from __future__ import annotations

import csv
import html
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from extract_fn.formats import html_format
from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.html_format import codec_for_label, prescan_charset, visible_text
from extract_fn.formats.textblocks import LineIndex
from extract_fn.limits import LIMITS
from shared.artifact import validate_artifact
from shared.contract import ErrorCode, ExtractionError


def run(src: str | bytes, **kw: Any) -> dict[str, Any]:
    data = src.encode() if isinstance(src, str) else src
    artifact = html_format.extract(data, ExtractRequest("html", **kw))
    raw = orjson.dumps(artifact)
    validate_artifact(raw, format="html", original_size=len(data))
    if "max_output_bytes" in kw:
        assert len(raw) <= kw["max_output_bytes"]
    return artifact


def texts(a: dict[str, Any]) -> list[str]:
    return [b["text"] for b in a["blocks"]]


def shown(span: str) -> str:
    """The characters a source span shows, without whitespace: tags dropped, entities decoded."""
    return re.sub(r"\s+", "", html.unescape(re.sub(r"<[^>]*>", "", span)))


def assert_locators(src: str, a: dict[str, Any], *, exact: bool = False) -> None:
    """Each placed block's span runs from the source character of its text's first non-space character to the one of
    its last; lines are the span's. ``exact``: the span shows exactly the block's text (no hidden markup in it)."""
    index = LineIndex(src)
    for b in a["blocks"]:
        loc = b["locator"]
        if loc["char_start"] == -1:
            assert (loc["char_end"], loc["line_start"], loc["line_end"]) == (-1, 0, 0)
            continue
        span = src[loc["char_start"] : loc["char_end"]]
        assert loc["line_start"] == index.line_of(loc["char_start"])
        assert loc["line_end"] == index.line_of(max(loc["char_start"], loc["char_end"] - 1))
        text = re.sub(r"\s+", "", b["text"])
        if not text:
            assert span == ""
            continue
        assert not span[:1].isspace()
        assert not span[-1:].isspace()
        seen = shown(span)
        assert seen[:1] == text[:1], (b["text"], span)
        assert seen[-1:] == text[-1:], (b["text"], span)
        if exact and "table" not in b.get("attrs", {}):
            assert seen == text, (b["text"], span)


# -- charsets -----------------------------------------------------------------------------------------------------

CAFE_1252 = "<p>café – “quoted”</p>".encode("cp1252")


def test_meta_charset_decodes() -> None:
    a = run(b'<html><head><meta charset="windows-1252"></head><body>' + CAFE_1252)
    assert texts(a) == ["café – “quoted”"]
    assert a["attrs"]["encoding"] == "cp1252"


def test_http_equiv_content_type() -> None:
    a = run(b'<meta http-equiv="Content-Type" content="text/html; charset=ISO-8859-1">' + CAFE_1252)
    assert texts(a) == ["café – “quoted”"]  # iso-8859-1 reads as windows-1252, as browsers do


def test_xml_declaration() -> None:
    a = run(b'<?xml version="1.0" encoding="windows-1252"?><html><body>' + CAFE_1252)
    assert texts(a) == ["café – “quoted”"]


def test_bom_wins_over_meta_and_option() -> None:
    body = '<meta charset="koi8-r"><p>ünïcode</p>'.encode()
    a = run(b"\xef\xbb\xbf" + body, encoding="latin-1")
    assert texts(a) == ["ünïcode"]
    assert a["attrs"]["encoding"] == "utf-8"
    b = run("\ufeff<meta charset='latin-1'><p>Grüße</p>".encode("utf-16-le"))
    assert texts(b) == ["Grüße"]


def test_meta_wins_over_option() -> None:
    a = run(b'<meta charset="cp1252">' + CAFE_1252, encoding="koi8-r")
    assert texts(a) == ["café – “quoted”"]
    assert a["options"] == {"encoding": "koi8-r"}


def test_option_when_nothing_is_declared() -> None:
    a = run(CAFE_1252, encoding="cp1252")
    assert texts(a) == ["café – “quoted”"]


def test_prescan_skips_comments_and_stops_at_1024_bytes() -> None:
    assert prescan_charset(b'<!-- <meta charset="koi8-r"> --><meta charset="utf-8">') == "utf-8"
    assert prescan_charset(b"<p>" + b"x" * 1100 + b'<meta charset="koi8-r">') is None
    assert prescan_charset(b"<meta name=x content='charset=koi8-r'>") is None  # not an http-equiv
    assert prescan_charset(b"<META CHARSET=Shift_JIS>") == "Shift_JIS"
    assert codec_for_label("Shift_JIS") == "cp932"
    assert codec_for_label("gb2312") == "gb18030"
    assert codec_for_label("utf-16") == "utf-8"
    assert codec_for_label("no-such-charset") is None


def test_undecodable_without_declaration_is_the_encoding_error() -> None:
    with pytest.raises(ExtractionError) as exc:
        html_format.extract(CAFE_1252, ExtractRequest("html"))
    assert exc.value.code == ErrorCode.ENCODING
    offset = CAFE_1252.index("é".encode("cp1252"))
    assert f"byte offset {offset}" in exc.value.message


def test_wrong_declaration_falls_back_to_utf8_with_a_warning() -> None:
    data = '<meta charset="gb2312"><p>naïve — ok ✓</p>'.encode()
    a = run(data)
    assert texts(a) == ["naïve — ok ✓"]
    assert a["warnings"]
    assert "gb2312" in a["warnings"][0]
    with pytest.raises(ExtractionError) as exc:  # neither the declaration nor UTF-8 decodes it
        html_format.extract(b'<meta charset="utf-8"><p>\xff\xfe\xfa</p>', ExtractRequest("html"))
    assert exc.value.code == ErrorCode.ENCODING


def test_utf16_without_bom_is_the_encoding_error() -> None:
    data = "<p>plain words</p>".encode("utf-16-le")
    with pytest.raises(ExtractionError) as exc:
        html_format.extract(data, ExtractRequest("html"))
    assert exc.value.code == ErrorCode.ENCODING
    assert texts(run(data, encoding="utf-16-le")) == ["plain words"]


# -- visible text -------------------------------------------------------------------------------------------------

PAGE = """<!DOCTYPE html>
<html lang="en"><head><title> The  &amp; Title </title>
<style>p { color: red }</style><script>var s = "<p>not text</p>";</script></head>
<body>
Loose body text
<div id="intro">Div text with <b>bold</b> &amp; <a href="#">a link</a>
  <p>A paragraph<br>with a break</p>
  tail text
</div>
<h1 id="top">Main <span id="main-anchor">heading</span></h1>
<p>Under main.</p>
<div hidden>hidden attribute</div>
<div hidden="until-found">findable text</div>
<p aria-hidden="true">aria hidden</p>
<p style="color: red; display : none">display none</p>
<p style="visibility:hidden">visibility hidden</p>
<template><p>template text</p></template>
<noscript><p>noscript text</p></noscript>
<select><option>option text</option></select>
<svg><text>svg text</text></svg>
<h2>Lists</h2>
<ul>
  <li>first</li>
  <li><p>second in p</p>
    <ol><li>nested one</li><li>nested two</li></ol>
    after nested
  </li>
  <li><ul><li>only child list</li></ul></li>
</ul>
<dl><dt>Term</dt><dd>Definition</dd></dl>
<h3>Code</h3>
<pre class="language-python">
def f():
    return  1
</pre>
<blockquote><p>Quoted</p><blockquote>Twice</blockquote></blockquote>
<h2>Tables</h2>
<table id="t1">
  <caption>Scores</caption>
  <thead><tr><th>Name</th><th>Score</th><th>Note</th></tr></thead>
  <tbody>
    <tr><td>Ann</td><td>10</td><td rowspan="2">same</td></tr>
    <tr><td colspan="2">Bob &amp; Co</td></tr>
  </tbody>
</table>
<table><tr><td>x</td><td>y</td></tr><tr><td>z</td></tr></table>
<table role="presentation"><tr><td><p>Layout cell one</p></td><td><p>Layout cell two</p></td></tr></table>
</body></html>
"""


@pytest.fixture(scope="module")
def page() -> dict[str, Any]:
    return run(PAGE)


def test_title_and_lang(page: dict[str, Any]) -> None:
    assert page["attrs"]["title"] == "The & Title"
    assert page["attrs"]["lang"] == "en"
    assert page["parser"] == "loom-html"
    assert page["parser_version"].startswith("1+selectolax-")


def test_hidden_and_non_content_left_out(page: dict[str, Any]) -> None:
    everything = "\n".join(texts(page))
    for gone in ("not text", "hidden attribute", "display none", "visibility hidden", "template text",
                 "noscript text", "color: red", "Title"):  # fmt: skip
        assert gone not in everything
    for kept in ("findable text", "aria hidden", "option text", "svg text"):  # all a browser shows
        assert kept in everything


def test_anonymous_blocks_and_whitespace(page: dict[str, Any]) -> None:
    t = texts(page)
    assert t[:4] == ["Loose body text", "Div text with bold & a link", "A paragraph\nwith a break", "tail text"]


def test_headings_sections_parents_keys(page: dict[str, Any]) -> None:
    blocks = {b["text"]: b for b in page["blocks"]}
    main = blocks["Main heading"]
    assert (main["type"], main["depth"], main["section_path"]) == ("heading", 1, ["Main heading"])
    assert main["keys"] == ["Main heading", "top", "main-anchor"]
    assert blocks["Under main."]["parent"] == main["id"]
    assert blocks["Under main."]["section_path"] == ["Main heading"]
    lists = blocks["Lists"]
    assert (lists["depth"], lists["parent"], lists["section_path"]) == (2, main["id"], ["Main heading", "Lists"])
    code = blocks["Code"]
    assert code["section_path"] == ["Main heading", "Lists", "Code"]
    tables = blocks["Tables"]
    assert tables["section_path"] == ["Main heading", "Tables"]
    assert tables["parent"] == main["id"]
    assert blocks["Div text with bold & a link"]["keys"] == ["intro"]
    assert "parent" not in blocks["Loose body text"]


def test_lists(page: dict[str, Any]) -> None:
    blocks = {b["text"]: b for b in page["blocks"]}
    first, second = blocks["first"], blocks["second in p"]
    assert (first["type"], first["depth"], first["attrs"]) == ("list", 0, {"ordered": False})
    assert second["type"] == "list"  # an item's first paragraph is its text
    one = blocks["nested one"]
    assert (one["depth"], one["parent"], one["attrs"]) == (1, second["id"], {"ordered": True})
    after = blocks["after nested"]
    assert (after["type"], after["parent"]) == ("paragraph", second["id"])
    only = blocks["only child list"]
    holder = next(b for b in page["blocks"] if b["id"] == only["parent"])
    assert (holder["type"], holder["text"], holder["depth"], only["depth"]) == ("list", "", 0, 1)
    assert holder["locator"]["char_start"] == holder["locator"]["char_end"] == only["locator"]["char_start"]
    term, definition = blocks["Term"], blocks["Definition"]
    assert (term["type"], term["keys"], term["attrs"]) == ("list", ["Term"], {"term": True})
    assert (definition["type"], definition["attrs"]) == ("list", {"definition": True})


def test_pre_keeps_whitespace(page: dict[str, Any]) -> None:
    code = next(b for b in page["blocks"] if b["type"] == "code")
    assert code["text"] == "def f():\n    return  1"
    assert code["attrs"] == {"language": "python"}


def test_blockquotes(page: dict[str, Any]) -> None:
    blocks = {b["text"]: b for b in page["blocks"]}
    assert blocks["Quoted"]["attrs"] == {"quote": True, "quote_depth": 1}
    assert blocks["Twice"]["attrs"] == {"quote": True, "quote_depth": 2}


def test_tables(page: dict[str, Any]) -> None:
    tables = [b for b in page["blocks"] if "table" in b.get("attrs", {})]
    assert len(tables) == 2
    scores = tables[0]
    assert scores["type"] == "paragraph"
    assert scores["attrs"]["table"] == {
        "columns": ["Name", "Score", "Note"],
        "rows": [["Ann", "10", "same"], ["Bob & Co", "", ""]],
    }
    assert scores["text"] == "Scores\nName\tScore\tNote\nAnn\t10\tsame\nBob & Co\t\t"
    assert scores["keys"] == ["Scores", "t1"]
    plain = tables[1]
    assert plain["attrs"]["table"] == {"columns": [], "rows": [["x", "y"], ["z", ""]]}
    assert plain["text"] == "x\ty\nz\t"
    layout = [t for t in texts(page) if t.startswith("Layout")]
    assert layout == ["Layout cell one", "Layout cell two"]  # a presentation table is read as flow


def test_locators_on_the_page(page: dict[str, Any]) -> None:
    assert_locators(PAGE, page, exact=True)
    placed = [b for b in page["blocks"] if b["locator"]["char_start"] >= 0]
    assert len(placed) == len(page["blocks"])
    div = next(b for b in page["blocks"] if b["text"].startswith("Div text"))
    loc = div["locator"]
    assert PAGE[loc["char_start"] : loc["char_end"]] == 'Div text with <b>bold</b> &amp; <a href="#">a link'
    assert (loc["line_start"], loc["line_end"]) == (6, 6)


def test_coverage_counts_visible_characters(page: dict[str, Any]) -> None:
    cov = page["coverage"]
    assert cov["unit"] == "chars"
    visible = sum(len(re.sub(r"[ \n\t]", "", b["text"])) for b in page["blocks"])
    assert cov["total"] == cov["extracted"] == visible
    assert cov["complete"] is True


def test_entities_and_crlf_locators() -> None:
    src = "<p>\r\n  Fish &amp; chips&nbsp;&euro;5\r\n  &lt;b&gt;\r\n</p>\r\n<p>x &notin; y</p>"
    a = run(src)
    assert texts(a) == ["Fish & chips\xa0€5 <b>", "x ∉ y"]
    loc = a["blocks"][0]["locator"]
    assert src[loc["char_start"] : loc["char_end"]] == "Fish &amp; chips&nbsp;&euro;5\r\n  &lt;b&gt;"
    assert (loc["line_start"], loc["line_end"]) == (2, 3)
    assert_locators(src, a, exact=True)


def test_raw_text_elements_in_any_case_and_their_look_alikes() -> None:
    # The source map reads a raw-text element's content as the tokenizer does whatever the case of its name (ASCII
    # letters only): the text inside is not matched against the page's text nodes, so every paragraph after it is
    # placed exactly. Names that only look like one (a longer name, a non-ASCII capital I) are ordinary elements.
    for raw in ("<SCRIPT>x<b>y</SCRIPT>", "<ScRiPt type=a>x</script >", "<STYLE>p{}</style\n>", "<XMP>as is</XmP>"):
        src = f"<p>one</p>{raw}<p>two</p><p>x</p>"
        a = run(src)
        assert texts(a)[0] == "one", raw
        assert texts(a)[-2:] == ["two", "x"], raw
        assert_locators(src, a, exact=True)
    for look_alike in ("<scripts>x<b>y</b></scripts>", "<SCR\u0130PT>x<b>y</b></SCR\u0130PT>"):
        src = f"<p>one</p>{look_alike}<p>two</p>"
        a = run(src)
        assert texts(a) == ["one", "xy", "two"], look_alike
        assert all(b["locator"]["char_start"] >= 0 for b in a["blocks"]), look_alike
        assert_locators(src, a, exact=True)


def test_whitespace_collapses_in_every_kind_of_run() -> None:
    src = (
        "<p>plain words</p><p> edge spaces </p><p>two  spaces</p><p>tab\tand\nnewline</p><p>x\x1fy</p>"
        "<p>nbsp\xa0 kept</p><p>caf\xe9  au\tlait</p><p> one<br> two </p>"
        "<table><tr><td> a  b </td><td>c\xa0</td></tr><tr><td>d\te</td><td>f</td></tr></table>"
    )
    a = run(src)
    assert texts(a)[:8] == [
        "plain words",
        "edge spaces",
        "two spaces",
        "tab and newline",
        "x y",
        "nbsp\xa0 kept",
        "caf\xe9 au lait",
        "one\ntwo",
    ]
    assert a["blocks"][8]["attrs"]["table"]["rows"] == [["a b", "c"], ["d e", "f"]]
    assert a["coverage"]["total"] == a["coverage"]["extracted"] == 69 + 6  # the non-space characters
    assert_locators(src, a)


def test_text_after_body_end_is_still_placed() -> None:
    src = "<html><body><p>one</p>\n  trailing words\n</body>\n</html>\n"
    a = run(src)
    assert texts(a) == ["one", "trailing words"]
    loc = a["blocks"][1]["locator"]
    assert src[loc["char_start"] : loc["char_end"]] == "trailing words"


def test_foster_parented_text_is_not_guessed() -> None:
    src = "<table><a>1<td>2</td>3</table>"
    a = run(src)
    assert_locators(src, a)
    assert any(b["locator"]["char_start"] == -1 for b in a["blocks"])


def test_malformed_markup_is_recovered_like_a_browser() -> None:
    a = run("<p>one<p>two<b>bold<i>both</b>italic</i><h2>head<p>in p</h2>")
    assert texts(a)[:2] == ["one", "twoboldbothitalic"]
    assert "head" in texts(a)


def test_visible_text_helper() -> None:
    assert visible_text('<div align="center"><b>Shown</b><!-- c --><script>x</script></div>', LIMITS) == (
        "Shown",
        False,
    )
    assert visible_text("<!-- only a comment -->", LIMITS) == ("", False)


def test_cut_deep_nesting_stops_at_the_first_tag_past_the_depth() -> None:
    """Depth counts as for the flattening (void, self-closing and optional-end elements do not count; end tags
    close): the first start tag past the depth and every tag after it become a space, the text stays."""
    from extract_fn.formats.html_format import cut_deep_nesting

    shallow = "<div><p><br><img/><span>a</span><span>b</span></div>" * 50
    assert cut_deep_nesting(shallow, 2) == (shallow, False)
    deep = "<div>" * 3 + "<span>a</span>" + "<b><i>x</i></b>" + "</div>" * 3 + "<div>tail</div>"
    cut, was_cut = cut_deep_nesting(deep, 4)
    assert was_cut
    assert cut == "<div>" * 3 + "<span>a</span><b>" + " x" + " " * 6 + "tail "  # </i></b>, 3 </div>, <div>
    assert cut_deep_nesting(deep, 5) == (deep, False)
    text, was_cut = visible_text("<div>" * 50_000 + "deep" + "</div>" * 50_000, LIMITS)
    assert (text, was_cut) == ("deep", True)


@pytest.mark.parametrize(
    "src",
    [
        "<div>" * 10_000 + "deep" + "</div>" * 10_000,
        "<blockquote>" * 10_000 + "deep",
        "<table><tr><td>" * 10_000 + "deep",
        "<span>" * 10_000 + "deep",
        "<ul><li>" * 10_000 + "deep",
    ],
    ids=["divs", "quotes", "tables", "spans", "lists"],
)
def test_deep_nesting_does_not_crash(src: str) -> None:
    a = run(src)
    assert texts(a)[-1] == "deep"
    loc = a["blocks"][-1]["locator"]
    assert src[loc["char_start"] : loc["char_end"]] == "deep"
    if src.startswith("<ul>"):  # every item opens with a list: a chain of empty items, each the next one's parent
        assert len(a["blocks"]) == 10_000
        assert a["blocks"][-1]["depth"] == 9_999
        assert all(b["parent"] == p["id"] for p, b in zip(a["blocks"], a["blocks"][1:], strict=False))


def test_body_of_zeros() -> None:
    a = run(b"\x00" * 50_000)
    assert a["blocks"] == []


def test_output_budget() -> None:
    src = "".join(f"<h2>Part {i}</h2><p>{'lorem ipsum ' * 40}</p>" for i in range(100))
    a = run(src, max_output_bytes=20_000)
    cov = a["coverage"]
    assert 0 < len(a["blocks"]) < 200
    assert cov["complete"] is False
    assert cov["extracted"] == sum(len(re.sub(r"\s", "", t)) for t in texts(a))
    assert cov["total"] == sum(len(f"Part{i}") for i in range(100)) + 100 * len("loremipsum" * 40)
    assert len(cov["failed"]) == 1
    assert "max_output_bytes" in cov["failed"][0]["reason"]


def test_big_colspan_is_bounded() -> None:
    a = run('<table><tr><td colspan="99999">a</td><td>b</td></tr><tr><td rowspan="0">c</td></tr></table>')
    table = a["blocks"][0]["attrs"]["table"]
    assert len(table["rows"][0]) == 1001  # colspan is capped at 1000, as the HTML standard caps it
    assert all(len(r) == 1001 for r in table["rows"])


# -- the corpus ---------------------------------------------------------------------------------------------------


def _rows(kind: str) -> list[dict[str, str]]:
    from tests.conftest import CORPUS

    with (CORPUS / "MANIFEST.tsv").open(encoding="utf-8") as f:
        return [r for r in csv.DictReader(f, delimiter="\t") if r["format"] == "html" and r["expect"] == kind]


_NOT_SHOWN = ("script", "style", "template", "noscript", "head", "math")
_SVG_SHOWN = ("text", "foreignObject")  # inside an svg only these show their text


def _tree_has_text(tree: str) -> bool:
    """Whether an html5lib expected tree holds a non-blank text node that a reader sees."""
    stack: list[tuple[int, str]] = []
    for line in tree.splitlines():
        m = re.match(r"\| ( *)(.*)", line)
        if not m:
            continue
        indent, item = len(m.group(1)), m.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if item.startswith("<") and not item.startswith("<!"):
            stack.append((indent, item[1:].split(">")[0].split()[-1]))
        elif item.startswith('"') and item.strip('"').strip() and not any(name in _NOT_SHOWN for _, name in stack):
            names = [name for _, name in stack]
            if "svg" not in names or any(name in _SVG_SHOWN for name in names[names.index("svg") :]):
                return True
    return False


@pytest.mark.parametrize("row", _rows("ok"), ids=lambda r: r["path"])
def test_corpus_ok_files(corpus: Path, row: dict[str, str]) -> None:
    path = corpus / row["path"]
    data = path.read_bytes()
    a = run(data)
    assert a["coverage"]["complete"] is True
    tree = path.with_suffix(".tree.txt")
    has_text = _tree_has_text(tree.read_text(encoding="utf-8")) if tree.exists() else True
    assert bool("".join(texts(a)).strip()) == has_text
    if not a["warnings"]:
        src = data.decode(a["attrs"]["encoding"])
        if src.startswith("\ufeff"):
            src = src[1:]
        assert_locators(src, a)
        if len(a["blocks"]) > 20:  # real pages: nearly every block is placed in the source
            placed = sum(1 for b in a["blocks"] if b["locator"]["char_start"] >= 0)
            assert placed >= 0.95 * len(a["blocks"])


@pytest.mark.parametrize("row", _rows("encoding"), ids=lambda r: r["path"])
def test_corpus_encoding_files(corpus: Path, row: dict[str, str]) -> None:
    data = (corpus / row["path"]).read_bytes()
    with pytest.raises(ExtractionError) as exc:
        html_format.extract(data, ExtractRequest("html"))
    assert exc.value.code == ErrorCode.ENCODING
    assert re.search(r"byte offset \d+", exc.value.message)
    a = run(data, encoding=row["codec"])
    assert "".join(texts(a)).strip()
    assert_locators(data.decode(row["codec"]), a)


def test_table_grid_is_bounded_and_the_cut_reported() -> None:
    wide = "<table><tr>" + '<td colspan="1000">w</td>' * 20 + "</tr></table>"
    a = run(wide)
    block = a["blocks"][0]
    assert block["attrs"]["table_truncated"] is True
    assert len(block["attrs"]["table"]["rows"][0]) == LIMITS.html_max_table_width
    tall = '<table><tr><td colspan="1000" rowspan="0">x</td></tr>' + "<tr><td>y</td></tr>" * 1100 + "</table>"
    b = run(tall)
    table = b["blocks"][0]["attrs"]["table"]
    assert b["blocks"][0]["attrs"]["table_truncated"] is True
    assert len(table["rows"]) * len(table["rows"][0]) <= LIMITS.html_max_table_cells
    cov = b["coverage"]
    assert cov["complete"] is False
    assert cov["extracted"] < cov["total"] == 1101
    assert cov["failed"][0]["unit"] == "cells of the table at line 1"


def test_nesting_past_the_depth_limit_is_flattened_not_parsed_quadratically() -> None:
    """200,000 nested <div>s: Lexbor's tree building is quadratic in depth, so tags past the depth limit are
    blanked (same length, so locators still point into the source) and the text is kept."""
    from extract_fn.formats.html_format import _flatten_deep_nesting

    body = "<div>" * 200_000 + "deep\ntext" + "</div>" * 200_000
    data = f"<html><body>{body}<p>after</p></body></html>".encode()
    flat, count = _flatten_deep_nesting(data.decode(), LIMITS.html_max_nesting_depth)
    assert len(flat) == len(data)
    assert count == 2 * (200_000 - LIMITS.html_max_nesting_depth)
    assert flat.count("\n") == 1
    artifact = html_format.extract(data, ExtractRequest(format="html"))
    validate_artifact(orjson.dumps(artifact), format="html", original_size=len(data))
    assert [b["text"] for b in artifact["blocks"]] == ["deep text", "after"]
    assert artifact["attrs"]["nesting_flattened"] == count
    assert any(f"nested deeper than {LIMITS.html_max_nesting_depth}" in w for w in artifact["warnings"])
    decoded = data.decode()
    for block in artifact["blocks"]:
        loc = block["locator"]
        if loc.get("char_start", -1) >= 0:
            assert block["text"].split()[0] in decoded[loc["char_start"] : loc["char_end"]]


def test_shallow_documents_are_not_touched_by_the_depth_limit() -> None:
    from extract_fn.formats.html_format import _flatten_deep_nesting

    doc = "<div>" * 10_000 + "x" + "</div>" * 10_000 + "<p>" * 20_000
    assert _flatten_deep_nesting(doc, LIMITS.html_max_nesting_depth) == (doc, 0)


def test_blocks_keep_the_builders_bounds_and_marks() -> None:
    """The walk's blocks reach the builder as rows (``add_blocks``): a heading past the section path's bound, an
    element with a key past the key's bound, non-ASCII text and nested items keep add_block's cuts, marks and
    parents."""
    from shared.contract import LOST_EXACT_KEYS, LOST_SECTION_PATH, MAX_KEY_CHARS, MAX_SECTION_CHARS

    long_heading = "h" * (MAX_SECTION_CHARS + 10)
    long_id = "k" * (MAX_KEY_CHARS + 1)
    a = run(
        f"<h1>{long_heading}</h1><p>under it</p>"
        f'<p id="{long_id}">keyed</p><p>caf\u00e9 \u2603</p>'
        "<ul><li>outer<ul><li>inner</li></ul></li></ul>"
    )
    blocks = {b["text"]: b for b in a["blocks"]}
    under = blocks["under it"]
    assert under["section_path"] == ["h" * MAX_SECTION_CHARS]
    assert under["attrs"]["section_truncated"] is True
    assert under["parent"] == blocks[long_heading]["id"]
    keyed = blocks["keyed"]
    assert keyed["keys"] == []
    assert keyed["attrs"]["keys_truncated"] is True
    assert "caf\u00e9 \u2603" in blocks
    assert blocks["inner"]["parent"] == blocks["outer"]["id"]
    assert blocks["inner"]["depth"] == 1
    assert [b["id"] for b in a["blocks"]] == [f"b{n}" for n in range(len(a["blocks"]))]
    assert LOST_SECTION_PATH in a["coverage"]["lost"]
    assert LOST_EXACT_KEYS in a["coverage"]["lost"]


def test_a_big_document_frees_its_tree_before_the_blocks_are_made(monkeypatch: pytest.MonkeyPatch) -> None:
    """From frame.RELEASE_HEAP_FROM on, Lexbor's tree is gone when the freed heap is asked back (before the rows become
    blocks), and nothing else changes."""
    import weakref

    import extract_fn.buffering
    import extract_fn.formats.frame

    src = "<html lang='en'><head><title>T</title></head><body><h1>A</h1><p>one</p><ul><li>two</li></ul></body></html>"
    trees: list[weakref.ref[Any]] = []

    class Tracked(html_format.LexborHTMLParser):  # type: ignore[misc]
        def __init__(self, html: str) -> None:
            super().__init__(html)
            trees.append(weakref.ref(self))

    alive_at_trim: list[int] = []
    blocks_at_trim: list[int] = []
    real_add_blocks = html_format.ArtifactBuilder.add_blocks
    made: list[int] = []

    def add_blocks(self: Any, rows: Any, **kw: Any) -> None:
        made.append(len(rows))
        real_add_blocks(self, rows, **kw)

    def release() -> None:
        alive_at_trim.append(sum(ref() is not None for ref in trees))
        blocks_at_trim.append(len(made))

    small = run(src)
    monkeypatch.setattr(html_format, "LexborHTMLParser", Tracked)
    monkeypatch.setattr(html_format.ArtifactBuilder, "add_blocks", add_blocks)
    monkeypatch.setattr(extract_fn.buffering, "release_memory", release)
    assert run(src) == small
    assert alive_at_trim == []  # below the threshold: not asked
    monkeypatch.setattr(extract_fn.formats.frame, "RELEASE_HEAP_FROM", len(src))
    big = run(src)
    assert orjson.dumps(big) == orjson.dumps(small)
    assert trees
    assert alive_at_trim == [0]
    assert blocks_at_trim == [1]  # the rows of the first run only: this run's became blocks after the trim
    assert made[-1] == len(big["blocks"])


@pytest.mark.parametrize("entity", ["", " &amp;"])
def test_the_source_map_places_runs_kept_as_offsets_and_decoded_runs(entity: str) -> None:
    """Runs that are their own decoding are searched in the source itself, decoded ones in their decoding: both
    place text at its source offsets, the cursor moving forward through both kinds."""
    src = f"<p>one{entity} two</p><p>plain text</p><xmp>x &amp; y</xmp><p>one more</p>"
    smap = html_format._SourceMap(src)
    first = smap.place("one")
    assert first == (src.index("one"), src.index("one") + 3)
    assert smap.place("plain") == (src.index("plain"), src.index("plain") + 5)
    assert smap.locate("text") is not None
    assert smap.place("x &amp; y") == (src.index("x &amp;"), src.index("x &amp;") + 9)  # xmp: raw text
    assert smap.place("one") == (src.index("one more"), src.index("one more") + 3)
    assert smap.place("two") is None  # behind the cursor
