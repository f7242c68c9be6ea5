"""The one output budget (``extract_fn.formats.output_budget``): the reserve of each kind of format, and what each
way of spending it answers."""

from __future__ import annotations

import dataclasses

import pytest

from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.frame import FormatContext
from extract_fn.formats.output_budget import BudgetKind, OutputBudget, output_budget
from extract_fn.limits import LIMITS
from shared.artifact_builder import ArtifactBuilder
from shared.contract import ErrorCode, ExtractionError


def request(max_bytes: int) -> ExtractRequest:
    return ExtractRequest("text", max_output_bytes=max_bytes)


@pytest.mark.parametrize(
    ("kind", "max_bytes", "limit"),
    [
        (BudgetKind.TEXT, 1_000_000, 1_000_000 - LIMITS.output_reserve_text),
        (BudgetKind.TEXT, 1000, 500),  # the text reserve is at most half
        (BudgetKind.TABLE, 1_000_000, 1_000_000 - LIMITS.output_reserve_table),
        (BudgetKind.KEYED, 1_000_000, 1_000_000 - LIMITS.output_reserve_keyed),
        (BudgetKind.PAGED, 1_000_000, int(1_000_000 * LIMITS.output_share_paged)),
    ],
)
def test_each_kind_keeps_its_reserve(kind: BudgetKind, max_bytes: int, limit: int) -> None:
    assert output_budget(request(max_bytes), kind).limit == limit
    assert FormatContext(b"", request(max_bytes)).output_budget(kind).limit == limit


def test_the_reserve_comes_from_the_request_limits() -> None:
    limits = dataclasses.replace(LIMITS, output_reserve_keyed=10)
    req = ExtractRequest("sql", max_output_bytes=100, limits=limits)
    assert output_budget(req, BudgetKind.KEYED).limit == 90


def test_take_bytes_exhausts_for_good() -> None:
    budget = OutputBudget(100, 0)
    assert budget.take_bytes(60)
    assert not budget.take_bytes(50)
    assert budget.exhausted
    assert not budget.take_bytes(1)  # a later small block does not slip in
    assert budget.used == 60


def test_take_measures_a_text_block_as_its_json() -> None:
    budget = OutputBudget(10_000, 0)
    assert budget.take("hello", ["A"], [], None)
    assert budget.used == len(b'["hello",["A"],[],null]') + OutputBudget.BLOCK_OVERHEAD
    assert not budget.take("x" * 10_000, [], [], None)
    assert budget.exhausted


def test_require_is_resource_limit_past_the_budget() -> None:
    budget = OutputBudget(1000, 100)
    budget.require(900, "table 't'")
    assert budget.remaining == 0
    with pytest.raises(ExtractionError) as exc:
        budget.require(1, "table 'u'")
    assert exc.value.code is ErrorCode.RESOURCE_LIMIT
    assert "table 'u' alone needs about 1 bytes" in exc.value.message


def test_paged_formats_check_the_builder_estimate_of_measured_blocks() -> None:
    plain = ArtifactBuilder("pdf", parser="p", parser_version="1", unit="pages")
    measured = ArtifactBuilder("pdf", parser="p", parser_version="1", unit="pages", measure_blocks=True)
    for b in (plain, measured):
        b.add_block("paragraph", "text", section_path=["Chapter"], attrs={"k": "v"}, locator={"page_start": 1})
    assert plain.text_chars == 4 + 64
    assert measured.text_chars == 4 + 64 + 48 + len("Chapter") + 4 + len(b'{"k":"v"}') + 24
    budget = OutputBudget(1000, 900)  # a limit of 100
    assert not budget.over(plain.text_chars)
    assert budget.over(measured.text_chars)
