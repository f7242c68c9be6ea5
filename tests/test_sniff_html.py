"""Whole HTML documents against the other text formats: refused only beyond doubt (extract_fn/sniff.py)."""

from __future__ import annotations

import pytest

from extract_fn.sniff import SAMPLE_BYTES, check_format, is_html_document, sniff
from shared.contract import TEXT_FORMATS, ErrorCode, ExtractionError


def _mismatch(data: bytes, fmt: str) -> ExtractionError | None:
    try:
        check_format(data, fmt)
    except ExtractionError as e:
        return e
    return None


PROSE = [
    b"<!DOCTYPE html> is the first line of every HTML5 page.\n\nThis note explains why.\n",
    b"<!doctype html>\nis what a page starts with.\n",
    b"<html> is the root element of a page.\n",
    b"<!-- note -->\n<HTML lang=en> tags name the language: see below.\n",
    b"<!DOCTYPE html",  # never closed
    b"<!DOCTYPE html PUBLIC ... without its end " + b"x" * SAMPLE_BYTES + b">\n<p>",  # not closed in the sample
    b"<!doctype html>" + b" " * SAMPLE_BYTES + b"<p>",  # blank to the sample's end: not beyond doubt
]


@pytest.mark.parametrize("data", PROSE)
def test_a_doctype_followed_by_prose_is_text(data: bytes) -> None:
    assert not is_html_document(data)
    assert sniff(data) == "text"
    for fmt in sorted(TEXT_FORMATS):
        assert _mismatch(data, fmt) is None, fmt


DOCUMENTS = [
    b"<!DOCTYPE html>\n<html><head><title>t</title></head><body><p>x</p></body></html>",
    b"<!doctype html><meta charset=utf-8><p>x",
    b"<!DOCTYPE html>\n<!-- built -->\n<html>",
    b"<html>\n<head>",
    b"<html></html>",
    b"<!DOCTYPE html>\n",  # nothing after it: the end of the file
    b'<!DOCTYPE html PUBLIC "-//W3C//DTD HTML 4.01//EN" "http://www.w3.org/TR/html4/strict.dtd">\n<HTML>',
    # markdown-looking lines inside markup, scripts, styles, pre and comments are no markdown
    b"<!doctype html>\n<html><head>\n<style>\n* { margin: 0 }\n#x { }\n</style>\n<script>\n/**\n * @license\n"
    b" */\n</script></head>\n<body>\n<pre>\n# a shell comment\n- not a list\n</pre>\n<!--\n# hidden\n-->\n"
    b"<div\n  class=x\n>\nplain text\n</div>\n<p>1.5 is a number</p></body></html>\n",
]


@pytest.mark.parametrize("data", DOCUMENTS)
def test_a_doctype_followed_by_markup_is_html(data: bytes) -> None:
    assert is_html_document(data)
    for fmt in sorted(TEXT_FORMATS - {"html"}):
        err = _mismatch(data, fmt)
        assert err is not None, fmt
        assert err.code == ErrorCode.FORMAT_MISMATCH
        assert err.message == f"the file is html, not {fmt}"


WRAPPED_MARKDOWN = [
    b"<html>\n<body>\n\n# Real markdown heading\n\nSome *markdown* text.\n\n</body>\n</html>\n",
    b"<!DOCTYPE html>\n<html><body>\nIntro.\n\n- one\n- two\n</body></html>\n",
    b"<html>\n<body>\n\n1. first\n2. second\n</body></html>\n",
    b"<html><body>\n\n```python\nprint(1)\n```\n</body></html>\n",
]


@pytest.mark.parametrize("data", WRAPPED_MARKDOWN)
def test_markdown_wrapped_in_an_html_document_is_markdown(data: bytes) -> None:
    assert sniff(data) == "html"  # it opens as a whole document
    assert _mismatch(data, "markdown") is None  # but holds markdown: read as markdown, not refused for good
    for fmt in ("text", "sql", "toml", "csv"):  # the other text formats still refuse a whole document
        assert _mismatch(data, fmt) is not None, fmt
