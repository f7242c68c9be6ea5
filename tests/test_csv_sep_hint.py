"""Excel's ``sep=X`` first line: the delimiter, and no record; line numbers stay the file's."""

from __future__ import annotations

from typing import Any

import pytest

from extract_fn.formats import csv_format
from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.csv_format import sep_hint
from shared.artifact import validate_artifact
from shared.artifact_builder import serialize


def run(data: bytes) -> dict[str, Any]:
    art = csv_format.extract(data, ExtractRequest("csv", name="t.csv"))
    validate_artifact(serialize(art), format="csv", original_size=len(data))
    return art


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"])
def test_sep_line_sets_the_delimiter_and_is_no_row(bom: bytes) -> None:
    art = run(bom + b"sep=;\r\nName;Wert;Datum\r\nA;1;2024-03-15\r\nB;2,5;2024-03-16\r\n")
    assert art["attrs"]["delimiter"] == ";"
    assert art["attrs"]["sep_line"] is True
    t = art["tables"][0]
    assert [(c["name"], c["type"]) for c in t["columns"]] == [("Name", "string"), ("Wert", "string"), ("Datum", "date")]
    assert t["rows"] == [["A", "1", "2024-03-15"], ["B", "2,5", "2024-03-16"]]
    assert t["locator"] == {"line_start": 2, "line_end": 4, "row_start": 1, "row_end": 3}
    assert [(b["locator"]["row_start"], b["locator"]["line_start"]) for b in art["blocks"]] == [(2, 3), (3, 4)]
    assert art["coverage"]["total"] == 2
    assert art["coverage"]["complete"] is True


def test_sep_hint_forms() -> None:
    assert sep_hint("sep=;\nA;B\n") == ";"
    assert sep_hint('"sep=|"\r\nA|B\n') == "|"
    assert sep_hint("sep=\t\nA\tB\n") == "\t"
    assert sep_hint("sep=;") == ";"
    assert sep_hint("sep=;;\nA;B\n") is None  # not exactly one character
    assert sep_hint("sep=\nA;B\n") is None
    assert sep_hint("Sep=;\nA;B\n") is None
    assert sep_hint("a,sep=;\n") is None


def test_a_hint_that_is_not_the_data_delimiter_still_wins() -> None:
    art = run(b"sep=,\na;b,c\n1;2,3\n")
    assert [c["name"] for c in art["tables"][0]["columns"]] == ["a;b", "c"]
    assert art["tables"][0]["rows"] == [["1;2", 3]]
