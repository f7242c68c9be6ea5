"""A request's limits reach the helpers deep inside the format modules (not the module-global ``LIMITS``).

Each case lowers one limit in ``ExtractRequest.limits`` and checks the answer obeys it; with the global
``LIMITS`` read instead (as before), the default would apply and every assertion here would fail.
"""

from __future__ import annotations

import dataclasses
import io
from typing import Any

import openpyxl
import pytest
from pptx import Presentation
from pptx.util import Inches

from extract_fn.formats import extractor_for
from extract_fn.formats.base import ExtractRequest
from extract_fn.limits import LIMITS
from shared.artifact import validate_artifact
from shared.artifact_builder import serialize
from shared.contract import ErrorCode, ExtractionError


def run(fmt: str, data: bytes, **limits: Any) -> dict[str, Any]:
    request = ExtractRequest(fmt, name=f"t.{fmt}", limits=dataclasses.replace(LIMITS, **limits))
    artifact = extractor_for(fmt)(data, request)
    validate_artifact(serialize(artifact), format=fmt, original_size=len(data))
    return artifact


def test_html_title_and_spans_follow_the_request() -> None:
    data = b"<title>abcdefgh</title><table><tr><td colspan=9>a</td><td>b</td></tr></table>"
    a = run("html", data, html_max_title_chars=3, html_max_colspan=2)
    assert a["attrs"]["title"] == "abc"
    table = next(b["attrs"]["table"] for b in a["blocks"] if "table" in b.get("attrs", {}))
    assert [len(r) for r in table["rows"]] == [3]  # a, its one covered slot, b


def test_html_nesting_depth_follows_the_request() -> None:
    data = ("<div>" * 20 + "deep" + "</div>" * 20).encode()
    a = run("html", data, html_max_nesting_depth=5)
    assert a["attrs"]["nesting_flattened"] > 0
    assert any("deeper than 5 levels" in w for w in a["warnings"])


def test_markdown_nesting_and_brackets_follow_the_request() -> None:
    data = ("> " * 8 + "deep quote\n\n" + "[" * 6 + "x" + "]" * 6 + "\n").encode()
    a = run("markdown", data, markdown_max_nesting=4, markdown_max_bracket_nesting=3)
    reasons = [f["reason"] for f in a["coverage"]["failed"]]
    assert "not extracted: nested deeper than 4 levels (quotes and lists)" in reasons
    assert any("deeper than 3 levels" in w for w in a["warnings"])


def test_sql_parse_bounds_follow_the_request() -> None:
    a = run("sql", b"SELECT 1;\nSELECT ((((2))));\n", sql_max_parse_chars=12, sql_max_paren_depth=2)
    reasons = [f["reason"] for f in a["coverage"]["failed"]]
    assert any("over the 12 a statement may have" in r for r in reasons), reasons


def test_pptx_group_depth_follows_the_request() -> None:
    prs = Presentation()
    slide = prs.slides.add_slide(prs.slide_layouts[6])
    outer = slide.shapes.add_group_shape()
    inner = outer.shapes.add_group_shape()
    inner.shapes.add_textbox(Inches(1), Inches(1), Inches(2), Inches(1)).text_frame.text = "two groups deep"
    buf = io.BytesIO()
    prs.save(buf)
    a = run("pptx", buf.getvalue(), pptx_max_group_depth=1)
    assert "two groups deep" not in [b["text"] for b in a["blocks"]]
    assert any("more than 1 groups deep" in f["reason"] for f in a["coverage"]["failed"])


def _workbook() -> bytes:
    wb = openpyxl.Workbook()
    ws = wb.active
    for r in range(1, 5):
        ws.append([f"=A{r}+1", r, r * 2])
    ws.merge_cells("B1:C1")
    ws.merge_cells("B2:C2")
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def test_xlsx_attrs_bounds_follow_the_request() -> None:
    a = run("xlsx", _workbook(), xlsx_max_merged=1, xlsx_max_formulas=2)
    attrs = a["tables"][0]["attrs"]
    assert len(attrs["merged"]) == 1
    assert attrs["merged_truncated"] is True
    assert len(attrs["formulas"]) == 2


def test_xlsx_package_bounds_follow_the_request() -> None:
    with pytest.raises(ExtractionError) as exc:
        run("xlsx", _workbook(), zip_max_members=2)
    assert exc.value.code is ErrorCode.RESOURCE_LIMIT
    with pytest.raises(ExtractionError) as exc:
        run("xlsx", _workbook(), xlsx_max_sheet_cells=4)
    assert exc.value.code is ErrorCode.RESOURCE_LIMIT
