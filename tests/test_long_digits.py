"""Numbers longer than Python's ``int()`` accepts (4300 digits: past it ``int`` raises ValueError, a guard against
quadratic conversion): wherever a format reads digits from the file, such a number gets the answer an out-of-range
one gets (kept as its exact digits, or the element read without it), never the worker's catch-all "the parser
failed" (found by a mutation fuzz: a CSV cell, a TOML integer, OOXML extents and chart indices)."""

from __future__ import annotations

import io
import re
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from extract_fn.formats import extractor_for
from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.ooxml_text import uint_attr
from extract_fn.formats.table_values import infer_text_column
from shared.artifact import validate_artifact
from shared.artifact_builder import serialize

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
LIMIT = sys.int_info.default_max_str_digits  # 4300
LONG = "9" * (LIMIT + 700)


def extract(fmt: str, data: bytes) -> dict[str, Any]:
    art = extractor_for(fmt)(data, ExtractRequest(fmt, name=f"t.{fmt}"))
    validate_artifact(serialize(art), format=fmt, original_size=len(data))
    return art


def test_the_limit_is_what_these_tests_exceed() -> None:
    with pytest.raises(ValueError, match="4300"):
        int(LONG)


@pytest.mark.parametrize(
    ("values", "want"),
    [
        ([LONG, "1"], [LONG, 1]),
        (["-" + LONG, None, "2"], ["-" + LONG, None, 2]),
        ([LONG[:30], "3"], [LONG[:30], 3]),  # just past int64: its digits, as before
        (["9223372036854775807", "-9223372036854775808"], [2**63 - 1, -(2**63)]),  # int64's edges stay ints
        ([LONG[:LIMIT] + "e5", "1"], [LONG[:LIMIT] + "00000", 1]),  # an exponent written out past the limit
    ],
)
def test_a_number_column_keeps_long_integers_as_their_digits(values: list[str | None], want: list[Any]) -> None:
    assert infer_text_column(values) == ("number", want)


def test_a_csv_with_a_long_integer_is_extracted() -> None:
    art = extract("csv", f"a,b\n{LONG},1\n-{LONG},2\n5,3\n".encode())
    table = art["tables"][0]
    assert table["columns"][0] == {"name": "a", "type": "number"}
    assert [r[0] for r in table["rows"]] == [LONG, "-" + LONG, 5]
    assert art["coverage"]["complete"] is True


@pytest.mark.parametrize(
    "text",
    [
        None,
        "",
        "12a",
        "\u00b2",  # superscript two: str.isdigit() says yes, int() refuses it
        "\u0663",  # Arabic-Indic three: int() reads it, OOXML's xsd:long does not
        "-5",
        "1" * 19,
        LONG,
    ],
)
def test_uint_attr_refuses_what_is_not_short_ascii_digits(text: str | None) -> None:
    assert uint_attr(text) is None


def test_uint_attr_reads_short_ascii_digits() -> None:
    assert uint_attr("0") == 0
    assert uint_attr("914400") == 914400
    assert uint_attr("9" * 18) == int("9" * 18)


def _with_attr(path: Path, attr: str, value: str) -> tuple[bytes, int]:
    """The package at ``path`` with every numeric ``attr="..."`` of its XML parts set to ``value``."""
    out = io.BytesIO()
    changed = 0
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename.endswith(".xml"):
                data, n = re.subn(rb"(\b" + attr.encode() + rb'=")[0-9]+"', rb"\g<1>" + value.encode() + b'"', data)
                changed += n
            zout.writestr(info.filename, data)
    return out.getvalue(), changed


@pytest.mark.parametrize(
    ("fmt", "name", "attr"),
    [
        ("docx", "docling-drawingml.docx", "cx"),  # a drawing's extent
        ("pptx", "docling-pptx-chart.pptx", "cx"),  # a shape's size
        ("pptx", "docling-pptx-chart.pptx", "idx"),  # a chart point's index (ooxml_chart, chart_axes)
    ],
)
@pytest.mark.parametrize("value", [LONG, "\u00b2"])
def test_an_ooxml_number_attribute_past_int_is_read_as_absent(fmt: str, name: str, attr: str, value: str) -> None:
    data, changed = _with_attr(CORPUS / fmt / name, attr, value)
    assert changed > 0
    art = extract(fmt, data)
    assert art["blocks"], "the document is still read"


@pytest.mark.parametrize("idx", [LONG, "\u00b2", "-1"])
def test_a_chart_point_with_an_index_past_int_is_skipped(idx: str) -> None:
    from lxml import etree

    from extract_fn.formats.chart_axes import _numbers

    el = etree.fromstring(
        f'<val><numCache><pt idx="1"><v>2.5</v></pt><pt idx="{idx}"><v>3</v></pt>'
        '<pt idx="3"><v>4</v></pt></numCache></val>'
    )
    assert _numbers(el, 10) == {1: 2.5, 3: 4.0}
