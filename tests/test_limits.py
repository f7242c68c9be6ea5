"""The limits object: one frozen definition, documented in docs/extractor.md exactly as ``limits_table`` renders it."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from extract_fn.formats.base import ExtractRequest
from extract_fn.limits import LIMITS, Limits, limits_table

DOC = Path(__file__).resolve().parent.parent / "docs" / "extractor.md"


def test_the_docs_table_is_the_limits_object() -> None:
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"<!-- limits-table:start -->\n(.*?)\n<!-- limits-table:end -->", text, re.S)
    assert found is not None, "docs/extractor.md has no limits table between its markers"
    assert found.group(1) == limits_table(), "docs/extractor.md's limits table differs from extract_fn/limits.py"


def test_every_limit_has_a_reason_and_a_row() -> None:
    table = limits_table()
    for f in dataclasses.fields(Limits):
        assert f.metadata.get("reason"), f"{f.name} has no reason"
        assert f"| `{f.name}` |" in table


def test_the_limits_are_frozen_and_a_request_carries_them() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        LIMITS.pdf_max_pages = 1  # type: ignore[misc]
    assert ExtractRequest("text").limits is LIMITS
    lower = dataclasses.replace(LIMITS, pdf_max_pages=1)
    assert ExtractRequest("pdf", limits=lower).limits.pdf_max_pages == 1
