"""The text format module: paragraphs, exact locators, line endings, pages, coverage, budgets, encodings, corpus."""

from __future__ import annotations

import csv
import random
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from extract_fn.formats import text_format
from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.textblocks import (
    LINE_BREAK_RE,
    LineIndex,
    count_line_breaks,
    line_terminator,
    normalize_newlines,
)
from shared.artifact import validate_artifact
from shared.contract import ErrorCode, ExtractionError


def run(data: bytes, **kw: Any) -> dict[str, Any]:
    """Extract and validate the artifact's bytes, as the service does before it answers."""
    artifact = text_format.extract(data, ExtractRequest("text", **kw))
    raw = orjson.dumps(artifact)
    validate_artifact(raw, format="text", original_size=len(data))
    if "max_output_bytes" in kw:
        assert len(raw) <= kw["max_output_bytes"]
    return artifact


def texts(artifact: dict[str, Any]) -> list[str]:
    return [b["text"] for b in artifact["blocks"]]


def assert_exact(decoded: str, artifact: dict[str, Any]) -> None:
    """Every block's text is its char range of the decoded text (newlines normalized), on the lines it names."""
    index = LineIndex(decoded)
    for b in artifact["blocks"]:
        loc = b["locator"]
        span = decoded[loc["char_start"] : loc["char_end"]]
        assert re.sub(r"\r\n|\r", "\n", span) == b["text"]
        assert index.line_of(loc["char_start"]) == loc["line_start"]
        assert index.line_of(max(loc["char_start"], loc["char_end"] - 1)) == loc["line_end"]


def test_paragraphs_split_on_blank_lines_with_exact_locators() -> None:
    src = "First line\nsecond line\n\n   \n  Indented para  \nmore\n\n\nLast"
    a = run(src.encode())
    assert texts(a) == ["First line\nsecond line", "Indented para  \nmore", "Last"]
    assert [(b["locator"]["line_start"], b["locator"]["line_end"]) for b in a["blocks"]] == [(1, 2), (5, 6), (9, 9)]
    assert a["blocks"][1]["locator"]["char_start"] == src.index("Indented")
    assert_exact(src, a)
    assert all(b["type"] == "paragraph" and b["section_path"] == [] and b["keys"] == [] for b in a["blocks"])
    assert a["parser"] == "loom-text"
    assert a["parser_version"].startswith("1+python")
    assert a["options"] == {}


@pytest.mark.parametrize("nl", ["\n", "\r\n", "\r"])
def test_line_endings_count_alike(nl: str) -> None:
    src = nl.join(["alpha", "beta", "", "gamma", "", "", "delta"]) + nl
    a = run(src.encode())
    assert texts(a) == ["alpha\nbeta", "gamma", "delta"]
    assert [(b["locator"]["line_start"], b["locator"]["line_end"]) for b in a["blocks"]] == [(1, 2), (4, 4), (7, 7)]
    assert_exact(src, a)
    assert a["coverage"]["total"] == 4


def test_mixed_line_endings() -> None:
    src = "a\r\nb\rc\nd\n\r\ne"
    a = run(src.encode())
    assert texts(a) == ["a\nb\nc\nd", "e"]
    assert a["blocks"][1]["locator"]["line_start"] == 6
    assert_exact(src, a)


def test_form_feed_is_a_page_break() -> None:
    src = "page one\ntext\f\nPage two\nstarts\fsame line\n"
    a = run(src.encode())
    assert texts(a) == ["page one\ntext", "Page two\nstarts", "same line"]
    assert [b["attrs"]["page"] for b in a["blocks"]] == [1, 2, 3]
    assert [b["locator"]["line_start"] for b in a["blocks"]] == [1, 3, 4]
    assert_exact(src, a)
    # line 4 holds two paragraphs but counts once: lines 1-4 are the non-blank ones
    assert a["coverage"]["total"] == 4 == a["coverage"]["extracted"]


def test_no_page_attrs_without_form_feeds() -> None:
    a = run(b"one\n\ntwo\n")
    assert all("attrs" not in b for b in a["blocks"])


def test_coverage_counts_non_blank_lines() -> None:
    a = run(b"a\nb\n\n\t \nc\n")
    cov = a["coverage"]
    assert (cov["unit"], cov["total"], cov["extracted"], cov["failed"], cov["complete"]) == ("lines", 3, 3, [], True)


@pytest.mark.parametrize("src", [b"", b"\n\n\n", b"   \t  ", b"\f\f"])
def test_empty_and_blank_inputs(src: bytes) -> None:
    a = run(src)
    assert a["blocks"] == []
    assert a["coverage"]["total"] == 0
    assert a["coverage"]["complete"] is True


def test_unicode_offsets_are_code_points() -> None:
    src = "𝔘𝔫𝔦 café\n\nnaïve 漢字 ✓"
    a = run(src.encode())
    assert_exact(src, a)
    assert a["blocks"][1]["locator"]["char_start"] == src.index("naïve")


def test_bom_is_not_part_of_the_text() -> None:
    src = "héllo\n\nworld"
    a = run(b"\xef\xbb\xbf" + src.encode())
    assert texts(a) == ["héllo", "world"]
    assert a["blocks"][0]["locator"]["char_start"] == 0
    assert_exact(src, a)


def test_huge_single_line_is_one_block() -> None:
    line = b"word " * 10_000_000  # 50 MB, no terminator
    a = run(line)
    assert len(a["blocks"]) == 1
    block = a["blocks"][0]
    assert block["locator"] == {"line_start": 1, "line_end": 1, "char_start": 0, "char_end": len(line) - 1}
    assert len(block["text"]) == len(line) - 1
    assert a["coverage"]["total"] == 1


def test_blank_line_of_spaces_is_linear() -> None:
    a = run(b" " * 5_000_000 + b"\nend")
    assert texts(a) == ["end"]


def test_body_of_zeros_does_not_crash() -> None:
    a = run(b"\x00" * 100_000)
    assert len(a["blocks"]) == 1
    assert a["blocks"][0]["text"] == "\x00" * 100_000


def test_output_budget_cuts_and_reports() -> None:
    paragraphs = [f"paragraph number {i} " + "x" * 200 for i in range(200)]
    src = "\n\n".join(paragraphs).encode()
    a = run(src, max_output_bytes=20_000)
    n = len(a["blocks"])
    assert 0 < n < 200
    assert texts(a) == paragraphs[:n]
    cov = a["coverage"]
    assert cov["total"] == 200
    assert cov["extracted"] == n
    assert cov["complete"] is False
    assert len(cov["failed"]) == 1
    assert cov["failed"][0]["unit"] == f"lines {2 * n + 1}-399"
    assert "max_output_bytes" in cov["failed"][0]["reason"]


def test_output_budget_smaller_than_one_block() -> None:
    a = run(b"y" * 50_000, max_output_bytes=4_000)
    assert a["blocks"] == []
    assert a["coverage"]["extracted"] == 0
    assert a["coverage"]["total"] == 1
    assert a["coverage"]["failed"][0]["unit"] == "line 1"


def test_undecodable_bytes_name_the_byte_offset() -> None:
    data = "abc déjà".encode("latin-1")
    with pytest.raises(ExtractionError) as exc:
        text_format.extract(data, ExtractRequest("text"))
    assert exc.value.code == ErrorCode.ENCODING
    assert "byte offset 5" in exc.value.message
    a = run(data, encoding="latin-1")
    assert texts(a) == ["abc déjà"]
    assert a["options"] == {"encoding": "latin-1"}
    assert a["attrs"]["encoding"] == "iso8859-1"


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be", "utf-32-le"])
def test_utf16_and_utf32_without_bom_are_an_encoding_error(codec: str) -> None:
    data = "Plain ASCII words\n\nin a wide encoding".encode(codec)
    with pytest.raises(ExtractionError) as exc:
        text_format.extract(data, ExtractRequest("text"))
    assert exc.value.code == ErrorCode.ENCODING
    assert "byte offset" in exc.value.message
    assert codec.split("-", maxsplit=1)[0] in exc.value.message.lower()
    assert texts(run(data, encoding=codec)) == ["Plain ASCII words", "in a wide encoding"]


# -- the corpus ---------------------------------------------------------------------------------------------------


def _rows(kind: str) -> list[dict[str, str]]:
    from tests.conftest import CORPUS

    with (CORPUS / "MANIFEST.tsv").open(encoding="utf-8") as f:
        return [r for r in csv.DictReader(f, delimiter="\t") if r["format"] == "text" and r["expect"] == kind]


@pytest.mark.parametrize("row", _rows("ok"), ids=lambda r: r["path"])
def test_corpus_ok_files(corpus: Path, row: dict[str, str]) -> None:
    data = (corpus / row["path"]).read_bytes()
    a = run(data)
    assert "".join(texts(a)).strip(), "a file with text gives blocks with text"
    assert a["coverage"]["complete"] is True
    cs = [b["locator"]["char_start"] for b in a["blocks"]]
    assert cs == sorted(cs)


@pytest.mark.parametrize("row", _rows("encoding"), ids=lambda r: r["path"])
def test_corpus_encoding_files(corpus: Path, row: dict[str, str]) -> None:
    data = (corpus / row["path"]).read_bytes()
    with pytest.raises(ExtractionError) as exc:
        text_format.extract(data, ExtractRequest("text"))
    assert exc.value.code == ErrorCode.ENCODING
    assert re.search(r"byte offset \d+", exc.value.message)
    a = run(data, encoding=row["codec"])
    assert "".join(texts(a)).strip()
    decoded = data.decode(row["codec"])
    assert_exact(decoded, a)


# The paragraphs of the module docstring's rules, read line by line: the model the module's scan is tested against.
_ATOMS = ["a", "bc", " ", "\t", "\n", "\r", "\r\n", "\f", "\v", "\x1c", "\x85", "\u2028", "\u00a0", "é", "\U0001f600"]


def _model(src: str) -> tuple[list[tuple[str, dict[str, int], dict[str, int] | None]], int]:
    """The blocks (text, locator, attrs) and coverage total the docstring's rules give ``src``: on each page (the
    text between form feeds), each run of lines that are not all whitespace is a paragraph, from its first
    non-whitespace character to just past its last one."""
    index = LineIndex(src)
    has_ff = "\f" in src
    blocks: list[tuple[str, dict[str, int], dict[str, int] | None]] = []
    lines_with_text: set[int] = set()
    at = 0
    for page_no, page in enumerate(src.split("\f"), 1):
        breaks = list(re.finditer(r"\r\n|\r|\n", page))
        starts = [at] + [at + m.end() for m in breaks]
        ends = [at + m.start() for m in breaks] + [at + len(page)]
        runs: list[list[tuple[int, int]]] = [[]]
        for s, e in zip(starts, ends, strict=True):
            if src[s:e].strip():
                runs[-1].append((s, e))
            elif runs[-1]:
                runs.append([])
        for run_ in filter(None, runs):
            first, last = run_[0][0], run_[-1][1]
            piece = src[first:last]
            char_start = first + len(piece) - len(piece.lstrip())
            char_end = first + len(piece.rstrip())
            line_start, line_end = index.line_of(char_start), index.line_of(char_end - 1)
            locator = {"line_start": line_start, "line_end": line_end, "char_start": char_start, "char_end": char_end}
            text = re.sub(r"\r\n|\r", "\n", src[char_start:char_end])
            blocks.append((text, locator, {"page": page_no} if has_ff else None))
            lines_with_text.update(range(line_start, line_end + 1))
        at += len(page) + 1
    return blocks, len(lines_with_text)


@pytest.mark.parametrize("seed", range(8))
def test_paragraphs_are_those_of_the_line_by_line_model(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(400):
        mixed = "".join(rng.choice(_ATOMS) for _ in range(rng.randint(0, 48)))
        # and the same lines with one terminator throughout (the module scans those for that one)
        for src in [mixed] + [LINE_BREAK_RE.sub(t, mixed) for t in ("\n", "\r\n", "\r")]:
            a = run(src.encode())
            blocks, total = _model(src)
            assert [(b["text"], b["locator"], b.get("attrs")) for b in a["blocks"]] == blocks, repr(src)
            assert a["coverage"]["total"] == a["coverage"]["extracted"] == total, repr(src)


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("a\r\nb", ["a\nb"]),  # a CRLF is one terminator, never CR then an empty line then LF
        ("a\r\r\nb", ["a", "b"]),  # CR, then CRLF: the line between them is blank
        ("a\n\u2028\nb", ["a", "b"]),  # a line of Unicode whitespace is blank
        ("a\u2028b\n\x85\n", ["a\u2028b"]),  # which is no terminator inside a line
        ("\n  \n\t\nx  \n  y", ["x  \n  y"]),  # blank lines before the first paragraph
        ("x\n \t ", ["x"]),  # a blank last line without a terminator
    ],
)
def test_blank_line_separators(src: str, expected: list[str]) -> None:
    a = run(src.encode())
    assert texts(a) == expected
    assert_exact(src, a)


def test_more_blocks_than_one_batch() -> None:
    n = 2 * text_format._ROWS_AT_ONCE + 3
    a = run(b"p\n\n" * n)
    assert [b["id"] for b in a["blocks"]] == [f"b{i}" for i in range(n)]
    assert [b["locator"]["line_start"] for b in a["blocks"]] == list(range(1, 2 * n, 2))
    assert a["coverage"]["total"] == a["coverage"]["extracted"] == n


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("", "\n"),
        ("a", "\n"),
        ("a\nb\n", "\n"),
        ("a\r\nb\r\n", "\r\n"),
        ("a\rb", "\r"),
        ("a\r\nb\n", None),
        ("a\r\nb\r", None),
        ("a\rb\n", None),
        ("\n\r", None),
    ],
)
def test_line_terminator(src: str, expected: str | None) -> None:
    assert line_terminator(src) == expected
    if expected is not None:  # then counting it alone counts every terminator
        assert count_line_breaks(src, 0, len(src), has_cr=True, only=expected) == len(LINE_BREAK_RE.findall(src))


def test_normalize_newlines_is_the_terminator_regex() -> None:
    rng = random.Random(14)
    for _ in range(2000):
        src = "".join(rng.choice(["\r", "\n", "\r\n", "a", " "]) for _ in range(rng.randint(0, 24)))
        assert normalize_newlines(src) == LINE_BREAK_RE.sub("\n", src), repr(src)
    plain = "no carriage return\n"
    assert normalize_newlines(plain) is plain
