"""The Markdown format module: block mapping, locators, sections, parents, keys, coverage, limits, corpus."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from selectolax.lexbor import LexborHTMLParser

from extract_fn.formats import markdown_format
from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.textblocks import LineIndex, Slugger, github_slug
from shared.artifact import validate_artifact
from shared.contract import ErrorCode, ExtractionError


def run(src: str | bytes, **kw: Any) -> dict[str, Any]:
    data = src.encode() if isinstance(src, str) else src
    artifact = markdown_format.extract(data, ExtractRequest("markdown", **kw))
    raw = orjson.dumps(artifact)
    validate_artifact(raw, format="markdown", original_size=len(data))
    if "max_output_bytes" in kw:
        assert len(raw) <= kw["max_output_bytes"]
    return artifact


def by_text(artifact: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["text"]: b for b in artifact["blocks"]}


def assert_whole_lines(decoded: str, artifact: dict[str, Any]) -> None:
    """Each locator is whole lines: char_start opens line_start, char_end closes line_end."""
    index = LineIndex(decoded)
    for b in artifact["blocks"]:
        loc = b["locator"]
        assert loc["char_start"] == index.line_start(loc["line_start"])
        assert loc["char_end"] == index.line_end(loc["line_end"])


DOC = """\
# Title

Intro *with* **markup**, `code` and [a link](http://x.example).
Second line &amp; an entity.

## Setup

- first item
- second item
  - nested item

    nested paragraph
- - inner first

3. three
4. four

> quoted text
> > deeper quote

```python extra words
print("hi")
```

    indented code

| Name | Value |
|------|-------|
| a    | 1     |
| b    |       |

<div align="center">
  <b>Shown</b> <!-- hidden comment -->
</div>

<!-- only a comment -->

---

[ref]: http://example.com

Setup
=====
"""


@pytest.fixture(scope="module")
def doc() -> dict[str, Any]:
    return run(DOC)


def test_headings_depth_text_keys(doc: dict[str, Any]) -> None:
    heads = [b for b in doc["blocks"] if b["type"] == "heading"]
    assert [(h["text"], h["depth"]) for h in heads] == [("Title", 1), ("Setup", 2), ("Setup", 1)]
    assert heads[0]["keys"] == ["Title", "title"]
    assert heads[1]["keys"] == ["Setup", "setup"]
    assert heads[2]["keys"] == ["Setup", "setup-1"]  # GitHub numbers a repeated anchor


def test_section_paths_and_parents(doc: dict[str, Any]) -> None:
    blocks = by_text(doc)
    title, setup = blocks["Title"], doc["blocks"][2]
    assert title["section_path"] == ["Title"]
    assert "parent" not in title
    assert setup["section_path"] == ["Title", "Setup"]
    assert setup["parent"] == title["id"]
    para = doc["blocks"][1]
    assert para["section_path"] == ["Title"]
    assert para["parent"] == title["id"]
    assert blocks["three"]["section_path"] == ["Title", "Setup"]
    last = doc["blocks"][-1]
    assert (last["text"], last["section_path"]) == ("Setup", ["Setup"])  # a level-1 heading closes both sections
    assert "parent" not in last


def test_paragraph_text_is_plain(doc: dict[str, Any]) -> None:
    assert doc["blocks"][1]["type"] == "paragraph"
    assert doc["blocks"][1]["text"] == "Intro with markup, code and a link.\nSecond line & an entity."


def test_list_items_one_block_each(doc: dict[str, Any]) -> None:
    blocks = by_text(doc)
    setup = doc["blocks"][2]["id"]
    first, second, nested = blocks["first item"], blocks["second item"], blocks["nested item"]
    assert [first["type"], second["type"], nested["type"]] == ["list", "list", "list"]
    assert (first["depth"], nested["depth"]) == (0, 1)
    assert first["parent"] == setup
    assert nested["parent"] == second["id"]
    assert first["attrs"] == {"ordered": False}
    assert blocks["nested paragraph"]["type"] == "paragraph"
    assert blocks["nested paragraph"]["parent"] == nested["id"]
    # "- - inner first": the outer item opens with a list, so it gets an empty block that is the inner's parent
    inner = blocks["inner first"]
    outer = next(b for b in doc["blocks"] if b["id"] == inner["parent"])
    assert (outer["type"], outer["text"], outer["depth"], inner["depth"]) == ("list", "", 0, 1)
    assert blocks["three"]["attrs"] == {"ordered": True, "number": 3}
    assert blocks["four"]["attrs"] == {"ordered": True, "number": 4}


def test_quotes_mark_their_blocks(doc: dict[str, Any]) -> None:
    blocks = by_text(doc)
    assert blocks["quoted text"]["attrs"] == {"quote": True, "quote_depth": 1}
    assert blocks["deeper quote"]["attrs"] == {"quote": True, "quote_depth": 2}
    assert blocks["quoted text"]["type"] == "paragraph"


def test_code_blocks(doc: dict[str, Any]) -> None:
    codes = [b for b in doc["blocks"] if b["type"] == "code"]
    assert [c["text"] for c in codes] == ['print("hi")', "indented code"]
    assert codes[0]["attrs"] == {"language": "python", "info": "python extra words"}
    assert "attrs" not in codes[1]


def test_table_block(doc: dict[str, Any]) -> None:
    table = next(b for b in doc["blocks"] if "table" in b.get("attrs", {}))
    assert table["type"] == "paragraph"
    assert table["attrs"]["table"] == {"columns": ["Name", "Value"], "rows": [["a", "1"], ["b", ""]]}
    assert table["text"] == "Name\tValue\na\t1\nb\t"


def test_html_blocks_give_their_visible_text(doc: dict[str, Any]) -> None:
    html = [b for b in doc["blocks"] if b.get("attrs", {}).get("html")]
    assert [b["text"] for b in html] == ["Shown"]  # the comment-only block has no text, so no block
    assert html[0]["type"] == "paragraph"
    assert not any("comment" in b["text"] for b in doc["blocks"])


def test_locators_are_the_source_lines(doc: dict[str, Any]) -> None:
    lines = DOC.split("\n")
    assert_whole_lines(DOC, doc)
    blocks = by_text(doc)
    table = next(b for b in doc["blocks"] if "table" in b.get("attrs", {}))
    for block, first, last in [
        (blocks["Title"], "# Title", "# Title"),
        (doc["blocks"][1], "Intro *with*", "Second line"),
        (blocks["nested item"], "  - nested item", "  - nested item"),
        (blocks['print("hi")'], "```python", "```"),
        (table, "| Name", "| b "),
        (doc["blocks"][-1], "Setup", "====="),
    ]:
        loc = block["locator"]
        assert lines[loc["line_start"] - 1].startswith(first)
        assert lines[loc["line_end"] - 1].startswith(last)
    for b in doc["blocks"]:  # a block's plain words are all in its source lines
        loc = b["locator"]
        span = DOC[loc["char_start"] : loc["char_end"]]
        for word in re.findall(r"[A-Za-z]{4,}", b["text"]):
            assert word in span


def test_coverage_counts_non_blank_lines(doc: dict[str, Any]) -> None:
    cov = doc["coverage"]
    assert cov["unit"] == "lines"
    assert cov["total"] == sum(1 for line in DOC.split("\n") if line.strip(" \t"))
    assert cov["extracted"] == cov["total"]
    assert cov["complete"] is True


def test_front_matter_is_a_code_block() -> None:
    src = "---\ntitle: Doc\ntags: [a, b]\n---\n# Heading\n\ntext\n"
    a = run(src)
    fm = a["blocks"][0]
    assert fm["type"] == "code"
    assert fm["text"] == "title: Doc\ntags: [a, b]"
    assert fm["attrs"] == {"front_matter": True, "language": "yaml"}
    assert (fm["locator"]["line_start"], fm["locator"]["line_end"]) == (1, 4)
    assert a["blocks"][1]["text"] == "Heading"
    assert a["blocks"][1]["locator"]["line_start"] == 5  # the rest keeps the file's line numbers
    assert a["coverage"]["extracted"] == a["coverage"]["total"] == 6


def test_unclosed_front_matter_is_markdown() -> None:
    a = run("---\nnot front matter\n")
    assert [b["type"] for b in a["blocks"]] == ["paragraph"]


def test_crlf_and_bom_locators() -> None:
    src = "# One\r\n\r\npara one\r\nline two\r\n\r\n- item\r\n"
    a = run(b"\xef\xbb\xbf" + src.encode())
    assert [b["text"] for b in a["blocks"]] == ["One", "para one\nline two", "item"]
    assert_whole_lines(src, a)
    para = a["blocks"][1]["locator"]
    assert src[para["char_start"] : para["char_end"]] == "para one\r\nline two"
    assert (para["line_start"], para["line_end"]) == (3, 4)


def test_slugs() -> None:
    assert github_slug("Hello, World!") == "hello-world"
    assert github_slug("Ünïcode & stuff_here") == "ünïcode--stuff_here"
    s = Slugger()
    assert [s.slug("A"), s.slug("A"), s.slug("A-1"), s.slug("A")] == ["a", "a-1", "a-1-1", "a-2"]


def test_heading_inside_a_list_is_not_a_section() -> None:
    a = run("# Top\n\n- ## In item\n\nafter\n")
    item_heading = next(b for b in a["blocks"] if b["text"] == "In item")
    assert item_heading["type"] == "heading"
    assert item_heading["section_path"] == ["Top"]
    assert a["blocks"][-1]["section_path"] == ["Top"]


def test_image_alt_text_is_kept() -> None:
    a = run("![A *red* ball](ball.png) rolls\n")
    assert a["blocks"][0]["text"] == "A red ball rolls"


def test_deep_blockquotes_do_not_crash_and_report_the_skipped_lines() -> None:
    src = "> " * 10_000 + "deep\n\nafter\n"
    a = run(src)
    assert [b["text"] for b in a["blocks"]] == ["after"]
    cov = a["coverage"]
    assert (cov["total"], cov["extracted"], cov["complete"]) == (2, 1, False)
    assert cov["failed"][0]["unit"] == "line 1"
    assert "nested deeper" in cov["failed"][0]["reason"]


def test_deep_lists_do_not_crash() -> None:
    src = "".join("  " * i + f"- item {i}\n" for i in range(400))
    a = run(src)
    depths = [b["depth"] for b in a["blocks"]]
    assert depths == list(range(len(depths)))
    assert 10 < len(depths) < 400
    cov = a["coverage"]
    assert cov["extracted"] == len(depths)
    assert cov["total"] == 400
    assert cov["failed"][0]["unit"] == f"lines {len(depths) + 1}-400"
    for b in a["blocks"][1:]:
        assert b["parent"] == a["blocks"][b["depth"] - 1]["id"]


def test_one_line_of_ten_thousand_list_markers() -> None:
    a = run("- " * 10_000 + "x\n")
    assert a["coverage"]["extracted"] == 0
    assert a["coverage"]["failed"]


def test_pathological_inlines_and_zeros() -> None:
    assert run("*" * 20_000 + "a" + "*" * 20_000 + "\n")["blocks"]
    zeros = run(b"\x00" * 10_000)
    assert zeros["blocks"][0]["text"] == "\ufffd" * 10_000  # CommonMark replaces NUL with U+FFFD


def test_output_budget_cuts_in_reading_order() -> None:
    src = "".join(f"## Section {i}\n\n{'word ' * 60}\n\n" for i in range(100))
    a = run(src, max_output_bytes=15_000)
    n = len(a["blocks"])
    assert 0 < n < 200
    cov = a["coverage"]
    assert cov["complete"] is False
    cut = cov["failed"][-1]
    assert "max_output_bytes" in cut["reason"]
    last_line = a["blocks"][-1]["locator"]["line_end"]
    first_failed = int(re.match(r"lines? (\d+)", cut["unit"]).group(1))
    assert first_failed > last_line
    assert cov["extracted"] == sum(1 for line in src.split("\n")[: first_failed - 1] if line.strip())


def test_encoding_error_and_option() -> None:
    data = "# Café\n".encode("cp1252")
    with pytest.raises(ExtractionError) as exc:
        markdown_format.extract(data, ExtractRequest("markdown"))
    assert exc.value.code == ErrorCode.ENCODING
    assert "byte offset 5" in exc.value.message
    a = run(data, encoding="cp1252")
    assert a["blocks"][0]["text"] == "Café"
    assert a["options"] == {"encoding": "cp1252"}
    assert a["parser"] == "loom-markdown"
    assert a["parser_version"].startswith("1+markdown-it-py-")


# -- the corpus ---------------------------------------------------------------------------------------------------


def _rows() -> list[dict[str, str]]:
    from tests.conftest import CORPUS

    with (CORPUS / "MANIFEST.tsv").open(encoding="utf-8") as f:
        return [r for r in csv.DictReader(f, delimiter="\t") if r["format"] == "markdown"]


@pytest.mark.parametrize("row", _rows(), ids=lambda r: r["path"])
def test_corpus_files(corpus: Path, row: dict[str, str]) -> None:
    assert row["expect"] == "ok"
    data = (corpus / row["path"]).read_bytes()
    a = run(data)
    assert a["coverage"]["complete"] is True
    assert_whole_lines(data.decode("utf-8-sig"), a)
    expected_html = (corpus / row["path"]).with_suffix(".html")
    if expected_html.exists():
        # CommonMark's reference HTML: the words it shows are the words of the blocks (images' alt text aside)
        body = LexborHTMLParser(expected_html.read_text(encoding="utf-8")).body
        shown = "".join(body.text().split()) if body is not None else ""
        mine = "".join("".join(b["text"].split()) for b in a["blocks"] if b["type"] != "list" or b["text"])
        if "<img" not in expected_html.read_text(encoding="utf-8"):
            assert mine == shown
    else:
        assert "".join(b["text"] for b in a["blocks"]).strip()


def test_inline_fast_path_matches_the_full_inline_parse(corpus: Path) -> None:
    """Content that skips markdown-it's inline parse gives the text the parse would: checked on every inline token
    of the CommonMark spec's 655 examples and of the Markdown corpus."""
    from markdown_it import MarkdownIt

    from extract_fn.formats.markdown_format import _render_inline, inline_text

    spec = (corpus / "markdown" / "commonmark-spec-0.31.2.md").read_text(encoding="utf-8")
    examples = re.findall(r"^`{32} example\n(.*?)^\.\n", spec, re.S | re.M)
    assert len(examples) == 655
    sources = [e.replace("→", "\t") for e in examples]
    sources += [p.read_text(encoding="utf-8") for p in sorted((corpus / "markdown").glob("*.md"))]
    full = MarkdownIt("commonmark", {"maxNesting": markdown_format.MAX_NESTING}).enable("table")
    checked = fast = 0
    for src in sources:
        env: dict[str, Any] = {}
        for tok in full.parse(src, env):
            if tok.type == "inline":
                assert inline_text(tok.content, env) == _render_inline(tok.children or []), tok.content
                checked += 1
                fast += not markdown_format._NEEDS_INLINE.search(tok.content)
    assert checked > 2000
    assert fast > 500
