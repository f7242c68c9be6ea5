"""The Markdown format module: block mapping, locators, sections, parents, keys, coverage, limits, corpus."""

from __future__ import annotations

import csv
import dataclasses
import random
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from selectolax.lexbor import LexborHTMLParser

from extract_fn.formats import markdown_format
from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.frame import GcPolicy, gc_policy
from extract_fn.formats.textblocks import LineIndex, Slugger, github_slug
from extract_fn.limits import LIMITS
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


def test_ascii_slugs_are_the_per_character_rule() -> None:
    """ASCII headings take a translate table: each character is what the per-character rule (the path non-ASCII
    text takes) makes of it."""
    for code in range(128):
        ch = chr(code)
        assert github_slug(f"a{ch}B") == github_slug(f"a{ch}Bé")[:-1], repr(ch)


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


def test_output_budget_cuts_where_each_block_is_measured() -> None:
    """The walk bounds blocks and measures them in batches; the cut falls on the first block that OutputBudget.take,
    measuring each block in turn, refuses (off-by-one errors in the batch arithmetic move it)."""
    rnd = random.Random(5)
    parts = []
    for i in range(120):
        parts.append(f"{'#' * rnd.randint(1, 3)} Part {i} \u00e9\\x\n\n")
        snowmen = "\t\u2603 " * rnd.randint(0, 9)
        parts.append(f'- item {snowmen}\n  - nested "{i}"\n\n> quoted {"w " * rnd.randint(0, 40)}\n\n')
    src = "".join(parts)
    full = run(src)["blocks"]
    request = ExtractRequest("markdown")
    for max_bytes in range(9_000, 60_000, 997):
        budget = markdown_format.output_budget(
            dataclasses.replace(request, max_output_bytes=max_bytes), markdown_format.BudgetKind.TEXT
        )
        budget.charge(256)
        kept = 0
        for block in full:
            if not budget.take(block["text"], block["section_path"], block["keys"], block.get("attrs")):
                break
            kept += 1
        assert 0 < kept < len(full)
        assert run(src, max_output_bytes=max_bytes)["blocks"] == full[:kept], max_bytes


def test_nonblank_line_count_is_the_line_rule() -> None:
    """Lines holding more than spaces and tabs, a line ending at \\n, \\r\\n or \\r, counted in chunks (made small
    here so that chunk edges fall everywhere)."""
    rnd = random.Random(11)
    pieces = ["a", " ", "\t", "\n", "\r", "\r\n", "é", "\ud800", "\u3000", "\x0c"]
    for chunk in (1, 3, 1 << 20):
        for _ in range(300):
            text = "".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 40)))
            start = rnd.randint(0, len(text))
            end = rnd.randint(start, len(text))
            expected = sum(1 for line in re.split(r"\r\n|\r|\n", text[start:end]) if line.strip(" \t"))
            old = markdown_format._NONBLANK_CHUNK
            markdown_format._NONBLANK_CHUNK = chunk  # type: ignore[misc]
            try:
                assert markdown_format._count_nonblank(text, start, end) == expected, (text, start, end)
            finally:
                markdown_format._NONBLANK_CHUNK = old  # type: ignore[misc]


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
    full = MarkdownIt("commonmark", {"maxNesting": LIMITS.markdown_max_nesting}).enable("table")
    checked = fast = 0
    for src in sources:
        env: dict[str, Any] = {}
        for tok in full.parse(src, env):
            if tok.type == "inline":
                assert inline_text(tok.content, env, LIMITS) == _render_inline(tok.children or []), tok.content
                checked += 1
                fast += not markdown_format._NEEDS_INLINE.search(tok.content)
    assert checked > 2000
    assert fast > 500


# -- the fast parser (markdown-it-pyrs for the block structure) ---------------------------------------------------


def _both(src: str | bytes, **kw: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """The artifact as extract makes it (fast parser where allowed) and as markdown-it-py alone makes it."""
    data = src.encode() if isinstance(src, str) else src
    request = ExtractRequest("markdown", **kw)
    with gc_policy(GcPolicy.PAUSE):
        return markdown_format._extract(data, request), markdown_format._extract(data, request, fast=False)


def _fast_taken(src: str) -> bool:
    return markdown_format._fast_events(src) is not None


def _spec_examples(corpus: Path) -> list[str]:
    spec = (corpus / "markdown" / "commonmark-spec-0.31.2.md").read_text(encoding="utf-8")
    examples = re.findall(r"^`{32} example\n(.*?)^\.\n", spec, re.S | re.M)
    assert len(examples) == 655
    return [e.replace("→", "\t") for e in examples]


def test_fast_parser_is_identical_on_the_spec_examples(corpus: Path) -> None:
    """Every CommonMark example: the same artifact whichever parser read the blocks; most take the fast parser."""
    fast = 0
    for n, src in enumerate(_spec_examples(corpus), 1):
        mine, reference = _both(src)
        assert mine == reference, f"example {n}: {src!r}"
        fast += _fast_taken(src)
    assert fast > 500


def test_fast_parser_is_identical_on_the_corpus(corpus: Path) -> None:
    paths = sorted((corpus / "markdown").glob("**/*.md"))
    assert len(paths) > 100
    fast = 0
    for path in paths:
        data = path.read_bytes()
        mine, reference = _both(data)
        assert mine == reference, path.name
        fast += _fast_taken(data.decode("utf-8-sig"))
    assert fast > 60


# Pieces of Markdown, container markup above all, that differential fuzzing combines; the two generators found every
# difference the fast path's guards now send to markdown-it-py (see _fast_plan).
_PREFIXES = [
    *[""] * 3, "> ", ">", "> > ", "- ", "* ", "+ ", "1. ", "2) ", "10. ", "  ", "   ", "    ", "     ", "\t", " - ",
    "  - ", "    - ", "- - ", "> - ", "- > ", "  > ", "1. - ", "-\t", ">\t", " > ", "0. ", "1234567890. ",
]  # fmt: skip
_CONTENTS = [
    "foo", "bar baz", "a *b* c", "# h", "## h ##", "#", "####### x", "---", "***", "- - -", "===", "=", "-", "```",
    "```py x", "~~~", "````", "``` ```", "<div>", "</div>", "<!-- c -->", "<!--", "-->", "<script>", "</script>",
    "<pre>", "<?x", "?>", "<!X", "<!x", "<![CDATA[", "]]>", '<a href="x">', "</b> t", "| a | b |", "|---|---|",
    "| 1 | 2 |", "a | b", "--- | ---", ":-:|", "| x \\| y |", "`code`", "\\", "  ", "", "", "text  ", "x\\", "&amp;",
    "[foo]", "[foo]: /url", "[Foo  bar]: <x> 't'", "![img](u)", "1.", "+", "2)", "> x", "é ü 日本", "😀", "\xa0x",
    "a\u3000", "\x0c",
]  # fmt: skip


def _generated(rnd: random.Random) -> str:
    lines = []
    for _ in range(rnd.randint(1, 14)):
        prefix = rnd.choice(_PREFIXES)
        if rnd.random() < 0.3:
            prefix = rnd.choice(_PREFIXES) + prefix
        content = rnd.choice(_CONTENTS)
        if rnd.random() < 0.2:
            content += " " + rnd.choice(_CONTENTS)
        lines.append(prefix + content)
        if rnd.random() < 0.2:
            lines.append("")
    src = "\n".join(lines) + rnd.choice(["", "\n", "\n\n", "\n  ", "\n  \n"])
    return src.replace("\n", "\r\n") if rnd.random() < 0.05 else src


def _mutated(rnd: random.Random, examples: list[str]) -> str:
    """Spec examples glued together, with pieces inserted and characters dropped."""
    chars = list("\n".join(rnd.sample(examples, rnd.randint(1, 3))))
    for _ in range(rnd.randint(0, 6)):
        i = rnd.randrange(len(chars) + 1)
        if rnd.random() < 0.6:
            chars[i:i] = rnd.choice(_PREFIXES + _CONTENTS + ["\n", "\n\n", "|", "\t"])
        elif i < len(chars):
            del chars[i]
    return "".join(chars)


@pytest.mark.parametrize("seed", range(4))
def test_fast_parser_is_identical_on_generated_markdown(corpus: Path, seed: int) -> None:
    rnd = random.Random(seed)
    examples = _spec_examples(corpus)
    fast = 0
    for _ in range(400):
        src = _generated(rnd) if rnd.random() < 0.5 else _mutated(rnd, examples)
        mine, reference = _both(src)
        assert mine == reference, repr(src)
        fast += _fast_taken(src)
    assert fast > 40


_WORDS = [
    "alpha", "beta", "gamma", "delta", "quick", "brown", "fox", "jumps", "over", "lazy", "dog", "install", "run",
    "config", "value", "path", "file",
]  # fmt: skip


def _sentence(rnd: random.Random) -> str:
    words = [rnd.choice(_WORDS) for _ in range(rnd.randint(3, 12))]
    for k, word in enumerate(words):
        mark = rnd.random()
        if mark < 0.05:
            words[k] = f"`{word}`"
        elif mark < 0.08:
            words[k] = f"**{word}**"
        elif mark < 0.1:
            words[k] = f"[{word}](http://x.example/{word})"
    return " ".join(words).capitalize() + rnd.choice([".", ".", "!", ":"])


def _document(rnd: random.Random) -> str:
    """A README-like document: headings, paragraphs, nested lists, code (tabs in it), tables, quotes, HTML."""
    lines: list[str] = []
    for _ in range(rnd.randint(3, 25)):
        kind = rnd.random()
        if kind < 0.15:
            lines.append(rnd.choice(["#", "##", "###"]) + " " + _sentence(rnd))
        elif kind < 0.35:
            lines += [_sentence(rnd) for _ in range(rnd.randint(1, 3))]
        elif kind < 0.55:
            ordered = rnd.random() < 0.3
            for i in range(rnd.randint(1, 4)):
                marker = f"{i + 1}." if ordered else "-"
                lines.append(f"{marker} {_sentence(rnd)}")
                pad = " " * (len(marker) + 1)
                if rnd.random() < 0.3:
                    lines += [f"{pad}* {_sentence(rnd)}" for _ in range(rnd.randint(1, 3))]
                if rnd.random() < 0.1:
                    lines += ["", pad + _sentence(rnd)]
        elif kind < 0.65:
            body = [
                rnd.choice(["x = 1", "\tif x {", "\t\treturn", "    nested: true", "}", "$ make | tee"])
                for _ in range(3)
            ]
            lines += ["```" + rnd.choice(["", "go", "bash"]), *body, "```"]
        elif kind < 0.75:
            n = rnd.randint(2, 4)
            lines += ["| " + " | ".join(rnd.choice(_WORDS) for _ in range(n)) + " |", "|" + "---|" * n]
            for _ in range(rnd.randint(0, 4)):
                cells = [rnd.choice([*_WORDS, "`a|b`", "x \\| y", ""]) for _ in range(rnd.randint(n - 1, n + 1))]
                lines.append("| " + " | ".join(cells) + " |")
        elif kind < 0.82:
            lines += ["> " + _sentence(rnd) for _ in range(rnd.randint(1, 3))]
        elif kind < 0.87:
            lines += ['<p align="center">', '  <img src="x.png" alt="logo">', "</p>"]
        elif kind < 0.93:
            lines += [_sentence(rnd), rnd.choice(["===", "---"])]
        else:
            lines += ["<!-- " + _sentence(rnd) + " -->"]
        lines.append("")
    return "\n".join(lines)


def test_fast_parser_takes_and_matches_readme_like_documents() -> None:
    rnd = random.Random(3)
    for _ in range(150):
        src = _document(rnd)
        assert _fast_taken(src), src
        mine, reference = _both(src)
        assert mine == reference, src


def test_table_port_matches_markdown_it_py() -> None:
    """``_table_run_events`` (markdown-it-py's table rule for runs of lines starting with ``|``) against
    markdown-it-py itself, on generated runs: headers, delimiter rows, escapes, padding, the autocompletion limit."""
    rnd = random.Random(7)
    cells = ["a", "b c", "", "  ", " x ", "\\|", "a\\|b", "\\\\|", "\\", "`a|b`", ":", "-", "---", ":-:", "é", "\t"]
    delimiters = ["---", ":--", "--:", ":-:", "-", "  ---  ", "- -", "", "x", "-:-", "---\t"]
    md = markdown_format._parser(LIMITS.markdown_max_nesting)
    for n in range(3000):
        lines = []
        for _ in range(rnd.randint(1, 7)):
            pool = delimiters if rnd.random() < 0.35 else cells
            body = "|".join(rnd.choice(pool) for _ in range(rnd.randint(1, 4)))
            lines.append(rnd.choice(["|", "| ", "|\t"]) + body + rnd.choice(["|", "", " |", "\\|", " "]))
        if n == 0:  # past markdown-it-py's 65,536 padded cells the table ends and the rest is a paragraph
            lines = ["|" + "|".join("h" * 300) + "|", "|" + "|".join("-" * 300) + "|"] + ["|x|"] * 230
        text = "\n".join(lines)
        expected = markdown_format._reference_events(md.parse(text, {}))
        assert markdown_format._table_run_events(lines, 1) == expected, text


@pytest.mark.parametrize(
    "src",
    [
        "a\xa0b\n",  # whitespace to one parser and not the other
        "[foo]: /url\n\n[foo]\n",  # reference definitions
        "> quote\nlazy line\n",  # a lazy continuation line of a block quote
        "- <!-- comment\n\n  -->\n",  # an HTML block that may span blank lines, in a container
        "<!doctype html>\n",  # kind 4 with a lowercase letter
        "text\n| a |\n|---|\n",  # a table that does not stand alone
        "- " * 40 + "deep\n",  # nesting past FAST_MAX_PREFIX_COLUMNS
        "[" * 1500 + "x" + "]" * 1500 + "\n\npara\n",  # more brackets than FAST_MAX_BRACKETS_PER_LINE: slower there
    ],
)
def test_fast_path_guards(src: str) -> None:
    assert not _fast_taken(src)
    mine, reference = _both(src)
    assert mine == reference


def test_fast_path_takes_plain_documents_and_standalone_tables() -> None:
    src = "# T\n\npara\n\n- a\n- b\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```py\nx\n```\n\n> q\n> r\n"
    assert _fast_taken(src)
    mine, reference = _both(src)
    assert mine == reference
    assert [b["type"] for b in mine["blocks"]] == [
        "heading",
        "paragraph",
        "list",
        "list",
        "paragraph",
        "code",
        "paragraph",
    ]


def test_fast_path_at_its_bracket_density_bound() -> None:
    """The fast parser declines a source with more square brackets than FAST_MAX_BRACKETS_PER_LINE a line (its
    cost per ASCII punctuation character outweighs what it saves per line) and takes one at the bound; the artifact
    is the same either way."""
    bound = markdown_format.FAST_MAX_BRACKETS_PER_LINE
    at_bound = "[" * (bound - 1) + "x]\n"  # two lines (the text after the last newline counts as one)
    assert _fast_taken(at_bound + "[" * bound)
    assert not _fast_taken(at_bound + "[" * (bound + 1))
    for src in (at_bound + "[" * bound, at_bound + "[" * (bound + 1)):
        mine, reference = _both(src)
        assert mine == reference


def test_html_block_nested_past_its_cap_keeps_its_text_and_says_so() -> None:
    """An HTML block whose tags nest past limits.markdown_html_max_nesting_depth: from the first tag too deep on its
    tags are dropped (one substitution, not Lexbor's tree at that depth) and its text kept; a warning says so. At the
    cap the block is read as before, with no warning."""
    cap = LIMITS.markdown_html_max_nesting_depth

    def html_block(depth: int) -> str:
        return "<div>" * depth + "<b>deep</b> &amp; <i>text</i>" + "</div>" * depth + "\n\nafter\n"

    at_cap = run(html_block(cap - 1))  # <b> is the cap-th level
    assert [b["text"] for b in at_cap["blocks"]] == ["deep & text", "after"]
    assert at_cap["warnings"] == []
    past = run(html_block(cap + 5))
    assert [b["text"] for b in past["blocks"]] == ["deep & text", "after"]
    assert past["blocks"][0]["attrs"]["html"] is True
    assert past["warnings"] == [markdown_format.HTML_NESTING_CUT.format(count=1, limit=cap)]
    assert past["coverage"]["complete"]
    lowered = dataclasses.replace(LIMITS, markdown_html_max_nesting_depth=3)
    a = markdown_format.extract(html_block(3).encode(), ExtractRequest("markdown", limits=lowered))
    assert [b["text"] for b in a["blocks"]] == ["deep & text", "after"]
    assert a["warnings"] == [markdown_format.HTML_NESTING_CUT.format(count=1, limit=3)]


def test_fast_path_at_its_nesting_bound() -> None:
    """The deepest container markup the fast parser is given, and one column more."""
    width = markdown_format.FAST_MAX_PREFIX_COLUMNS
    for src in ("- " * (width // 2) + "x\n", "> " * (width // 2) + "x\n", ">" * width + " x\n"):
        assert _fast_taken(src)
        mine, reference = _both(src)
        assert mine == reference
        assert mine["coverage"]["complete"]
    assert not _fast_taken(">" * (width + 1) + " x\n")


_PATHOLOGICAL = {
    "brackets": "'[' * 50_000 + 'x\\n'",
    "images": "'![' * 20_000 + 'x\\n'",
    "quotes": "'>' * 100_000 + ' x\\n'",
    "spaced quotes": "'> ' * 100_000 + 'x\\n'",
    "list markers": "'- ' * 50_000 + 'x\\n'",
    "ordered markers": "'1. ' * 50_000 + 'x\\n'",
    "indented lists": "''.join('  ' * i + '- x\\n' for i in range(3_000))",
    "quoted lists": "'> - ' * 30_000 + 'x\\n'",
    "emphasis": "'*' * 50_000 + 'a' + '_' * 50_000 + '\\n'",
    "links": "'[a](' * 50_000 + '\\n'",
    "table": "'|' + '|'.join('h' * 5_000) + '|\\n|' + '-|' * 5_000 + '\\n' + '|x|\\n' * 20",
}


@pytest.mark.parametrize("name", sorted(_PATHOLOGICAL))
def test_pathological_nesting_never_crashes_the_process(name: str) -> None:
    """Each in a process of its own, so a native stack overflow would show as a signal, not a test error."""
    code = (
        "import sys\n"
        "from extract_fn.formats import markdown_format\n"
        "from extract_fn.formats.base import ExtractRequest\n"
        f"src = {_PATHOLOGICAL[name]}\n"
        "a = markdown_format.extract(src.encode(), ExtractRequest('markdown'))\n"
        "print(len(a['blocks']), a['coverage']['total'])\n"
    )
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run(
        [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=240, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    _blocks, total = map(int, proc.stdout.split())
    assert total >= 1


def test_parser_versions_are_the_installed_ones() -> None:
    import markdown_it
    import markdown_it_pyrs

    assert markdown_it.__version__ == markdown_format.MARKDOWN_IT_PY_VERSION
    assert markdown_it_pyrs.__version__ == markdown_format.MARKDOWN_IT_PYRS_VERSION
    assert run("x\n")["parser_version"] == "1+markdown-it-py-4.3.0+markdown-it-pyrs-0.4.0"


def test_md_trim_chars_are_markdown_it_pys() -> None:
    from markdown_it.common.utils import MD_TRIM_CHARS

    assert markdown_format._MD_TRIM_CHARS == MD_TRIM_CHARS


def test_plain_markdown_does_not_import_markdown_it_py() -> None:
    """markdown-it-py (25 ms to import) loads only for inline syntax or the fallback parse."""
    code = (
        "import sys\n"
        "from extract_fn.formats import markdown_format\n"
        "from extract_fn.formats.base import ExtractRequest\n"
        "a = markdown_format.extract(b'# Title\\n\\nplain words\\n\\n- item\\n', ExtractRequest('markdown'))\n"
        "assert len(a['blocks']) == 3, a\n"
        "print('markdown_it' in sys.modules)\n"
    )
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "False"


def test_fast_path_keeps_to_the_memory_limit() -> None:
    """Under a heap limit too small for markdown-it-pyrs's tree of the file the fast path steps aside (a failed Rust
    allocation would abort the worker), and markdown-it-py extracts the file."""
    code = (
        "import resource\n"
        "from extract_fn.formats import markdown_format\n"
        "from extract_fn.formats.base import ExtractRequest\n"
        "src = ('# Title\\n\\n' + 'plain words ' * 20 + '\\n\\n- item\\n\\n') * 8_000\n"
        "room = 80 * 1024 * 1024\n"
        "used = int(open('/proc/self/statm').read().split()[5]) * resource.getpagesize()\n"
        "resource.setrlimit(resource.RLIMIT_DATA, (used + room, resource.RLIM_INFINITY))\n"
        "assert len(src) * markdown_format.FAST_MEMORY_PER_BYTE > room\n"
        "assert markdown_format._fast_events(src) is None\n"
        "assert markdown_format._fast_events(src[:100_000]) is not None\n"
        "a = markdown_format.extract(src.encode(), ExtractRequest('markdown'))\n"
        "print(len(a['blocks']))\n"
    )
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "24000"


def test_deeply_nested_brackets_read_as_text_match_the_parser_without_links() -> None:
    """Content whose brackets nest past the cap is parsed with its brackets standing in as non-terminator
    punctuation (fast); its text is exactly what markdown-it without the link rules gives (slow: a rule chain per
    bracket), escapes, code spans, emphasis beside brackets and HTML included."""
    import random

    from extract_fn.formats import markdown_format as mf

    deep = "[" * (LIMITS.markdown_max_bracket_nesting + 1)
    cases = [
        deep + "a *b* `c[d]` \\[e\\] \\\\[f] **g**" + "]" * 40,
        "x*[" * 35 + "y]*z" * 35,
        deep + " <span>[h]</span> &#91; ![img](u) [link](v)",
        deep + "\\\\\\[ q ] ``[``]`` *[x]*y",
    ]
    rng = random.Random(3)
    for _ in range(2000):
        cases.append(deep + "".join(rng.choice("[]*_`\\ ab!<>&#") for _ in range(rng.randint(1, 30))))
    slow = mf._parser_without_links(LIMITS.markdown_max_nesting)
    for content in cases:
        children: list[Any] = []
        slow.inline.parse(content, slow, {}, children)
        assert mf.inline_text(content, {}, LIMITS) == mf._render_inline(children), content


_PIECE_CASES = [
    "# a\n\ntext\n\n## b\n\nmore\n",
    "# a\n\n```\ncode\n\n# not a heading\n```\n\n# b\n\nafter\n",  # a fence open where a piece would end
    "# a\n\n~~~~ py\ncode\n\n# still code\n\n~~~\n\n# code too\n",  # never closed
    "<script>\nx\n\n# inside the script block\n</script>\n\n# y\n",  # an HTML block that spans blank lines
    "<!--\n\n# in the comment\n-->\n\n# z\n",
    "- item\n  ```\n  code\n\n# h\n\n- next\n",  # a fence in an item: the heading ends both
    "> quote\n> ```\n\n# h\n\n> more\n",
    "| a | b |\n|---|---|\n| 1 | 2 |\n\n# h\n\n| c |\n|---|\n| 3 |\n\n## i\n\n| d |\n",  # table runs in pieces
    "# é\n\nü *x*\n\n# ö\n\n日本\n\n#\n\n####### not a heading\n\n#x\n\n# 😀 \t\n",
    "text\n  \n# h\n\t\n## i\n\n    code\n\n# j\n\n1. one\n2. two\n\n# k\n",
    "# a\n\n```\nunclosed\n\n# b\n\n<div>\n\n# c\n",
]


def _piece_sources(corpus: Path) -> list[str]:
    rnd = random.Random(7)
    docs = [_document(rnd) for _ in range(60)]
    paths = sorted((corpus / "markdown").glob("**/*.md"))
    return [*_PIECE_CASES, *docs, *(p.read_bytes().decode("utf-8-sig") for p in paths)]


def test_the_fast_parse_in_pieces_makes_the_events_of_one_parse(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Cut at every heading that may start a piece, the fast parse makes the same events as one parse of the whole
    source, and the artifact is markdown-it-py's."""
    sources = _piece_sources(corpus)
    whole = [markdown_format._fast_events(src) for src in sources]
    monkeypatch.setattr(markdown_format, "FAST_PIECE_CHARS", 1)
    cut = 0
    for src, events in zip(sources, whole, strict=True):
        assert markdown_format._fast_events(src) == events, src[:300]
        cut += len(markdown_format._piece_ends(markdown_format.normalize_newlines(src))) > 1
        mine, reference = _both(src)
        assert mine == reference, src[:300]
    assert cut > 60
    assert all(events is not None for events in whole[: len(_PIECE_CASES)])


def test_a_piece_that_ends_in_an_open_fence_is_parsed_with_the_rest(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(markdown_format, "FAST_PIECE_CHARS", 1)
    src = "# a\n\n# f\n\n```\ncode\n\n# not a heading\n```\n\n# b\n\n<pre>\n\n# kept\n\n</pre>\n\n# c\n"
    ends = markdown_format._piece_ends(src)
    assert [src[end : end + 3] for end in ends] == ["# f", "# n", "# b", "# k", "# c", ""]
    parsed: list[str] = []
    real = markdown_format._fast_parser()

    class Recording:
        def tree(self, piece: str) -> Any:
            parsed.append(piece)
            return real.tree(piece)

    monkeypatch.setattr(markdown_format, "_fast_parser", Recording)
    events = markdown_format._fast_events(src)
    assert events is not None
    # the fence's piece is parsed again with all the rest; nothing is cut after that
    assert parsed == [src[: ends[0]], src[ends[0] : ends[1]], src[ends[0] :]]
    blocks = run(src)["blocks"]
    assert [b["type"] for b in blocks] == ["heading", "heading", "code", "heading", "paragraph", "heading"]
    assert blocks[2]["text"] == "code\n\n# not a heading"
    assert blocks[4]["text"] == "# kept"
