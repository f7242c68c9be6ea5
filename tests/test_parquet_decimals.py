"""Parquet DECIMAL values are plain exact digits at the column's scale, never Arrow's scientific text."""

from __future__ import annotations

import io
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq

from extract_fn.formats import parquet_format
from extract_fn.formats.base import ExtractRequest
from shared.artifact import validate_artifact
from shared.artifact_builder import serialize


def test_small_decimals_are_plain_digits() -> None:
    D = Decimal
    table = pa.table(
        {
            "rate": pa.array(
                [D("0.000000100"), D("0.000001000"), D("1.000000000"), D("0"), None], pa.decimal128(18, 9)
            ),
            "whole": pa.array([D("100"), D("0"), D("5"), D("-7"), None], pa.decimal128(5, 0)),
            "wide": pa.array([D("1.5"), D("-0.00000005"), None, D("0.10"), D("0")], pa.decimal256(50, 8)),
        }
    )
    buf = io.BytesIO()
    pq.write_table(table, buf)
    data = buf.getvalue()
    art = parquet_format.extract(data, ExtractRequest("parquet", name="d.parquet"))
    validate_artifact(serialize(art), format="parquet", original_size=len(data))
    t = art["tables"][0]
    assert [c["type"] for c in t["columns"]] == ["number", "number", "number"]
    assert [r[0] for r in t["rows"]] == ["0.000000100", "0.000001000", "1.000000000", "0.000000000", None]
    assert [r[1] for r in t["rows"]] == [100, 0, 5, -7, None]
    assert [r[2] for r in t["rows"]] == ["1.50000000", "-0.00000005", None, "0.10000000", "0.00000000"]
    assert "rate: 0.000000100" in art["blocks"][0]["text"]
