"""Parquet extraction: every type's value rule, compressions, streaming and the budget, bombs, damage, the corpus."""

from __future__ import annotations

import csv
import dataclasses
import datetime as dt
import io
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from extract_fn.formats import parquet_format
from extract_fn.formats.base import ExtractRequest
from extract_fn.limits import LIMITS, Limits
from shared.artifact import validate_artifact
from shared.artifact_builder import serialize
from shared.contract import ErrorCode, ExtractionError

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


def run(
    data: bytes, *, max_bytes: int | None = None, name: str = "t.parquet", limits: Limits = LIMITS
) -> dict[str, Any]:
    req = ExtractRequest("parquet", name=name, limits=limits)
    if max_bytes is not None:
        req = ExtractRequest("parquet", name=name, max_output_bytes=max_bytes, limits=limits)
    art = parquet_format.extract(data, req)
    raw = serialize(art)
    assert len(raw) <= req.max_output_bytes
    validate_artifact(raw, format="parquet", original_size=len(data))
    return art


def error_of(data: bytes, **kw: Any) -> ExtractionError:
    with pytest.raises(ExtractionError) as exc:
        run(data, **kw)
    return exc.value


def write(table: pa.Table, **kw: Any) -> bytes:
    buf = io.BytesIO()
    pq.write_table(table, buf, **kw)
    return buf.getvalue()


def by_name(art: dict[str, Any]) -> tuple[dict[str, str], list[dict[str, Any]]]:
    t = art["tables"][0]
    names = [c["name"] for c in t["columns"]]
    return {c["name"]: c["type"] for c in t["columns"]}, [dict(zip(names, r, strict=False)) for r in t["rows"]]


UTC = dt.UTC


def _all_types() -> pa.Table:
    paris = "Europe/Paris"
    return pa.table(
        {
            "i8": pa.array([-128, None], pa.int8()),
            "i64": pa.array([2**63 - 1, -(2**63)], pa.int64()),
            "u64": pa.array([2**64 - 1, 5], pa.uint64()),
            "f32": pa.array([1.1, None], pa.float32()),
            "f64": pa.array([float("nan"), float("inf")], pa.float64()),
            "f16": pa.array([1.5, None], pa.float32()).cast(pa.float16()),
            "dec": pa.array([Decimal("12.345"), Decimal("-0.001")], pa.decimal128(10, 3)),
            "dec0": pa.array([Decimal("12"), Decimal("99999999999999999999")], pa.decimal128(20, 0)),
            "dec256": pa.array([Decimal("1.5"), None], pa.decimal256(40, 1)),
            "s": pa.array(["héllo", None], pa.string()),
            "ls": pa.array(["large", "x"], pa.large_string()),
            "bin": pa.array([b"text", b"\x00\xff"], pa.binary()),
            "fbin": pa.array([b"ab", b"\x01\x02"], pa.binary(2)),
            "b": pa.array([True, False], pa.bool_()),
            "d32": pa.array([dt.date(2021, 1, 1), dt.date(1, 1, 1)], pa.date32()),
            "d64": pa.array([dt.date(2021, 1, 2), None], pa.date64()),
            "ts_s": pa.array([dt.datetime(2021, 1, 1, 10, 0), None], pa.timestamp("s")),
            "ts_ms": pa.array([dt.datetime(2021, 1, 1, 10, 0, 0, 123000), None], pa.timestamp("ms")),
            "ts_us_utc": pa.array([dt.datetime(2021, 1, 1, 10, 0, 0, 5, tzinfo=UTC), None], pa.timestamp("us", "UTC")),
            "ts_ns_paris": pa.array([1609495200123456789, None], pa.timestamp("ns", paris)),
            "t32": pa.array([dt.time(10, 30, 15), None], pa.time32("s")),
            "t64": pa.array([37815123456789, None], pa.time64("ns")),
            "dur": pa.array([36 * 3600, -90], pa.duration("s")),
            "dur_ns": pa.array([1, None], pa.duration("ns")),
            "lst": pa.array([[1, 2], None], pa.list_(pa.int64())),
            "st": pa.array([{"x": 1, "y": "a"}, None], pa.struct([("x", pa.int32()), ("y", pa.string())])),
            "mp": pa.array([[("k", 1)], []], pa.map_(pa.string(), pa.int32())),
            "dict": pa.array(["red", "red"]).dictionary_encode(),
            "nul": pa.array([None, None], pa.null()),
            "nested_ts": pa.array([[1609495200123456789], None], pa.list_(pa.timestamp("ns"))),
            "nested_bytes": pa.array([[b"\xff"], None], pa.list_(pa.binary())),
        }
    )


def test_every_type_has_its_rule() -> None:
    art = run(write(_all_types()))
    types, rows = by_name(art)
    assert types == {
        "i8": "number",
        "i64": "number",
        "u64": "number",
        "f32": "number",
        "f64": "number",
        "f16": "number",
        "dec": "number",
        "dec0": "number",
        "dec256": "number",
        "s": "string",
        "ls": "string",
        "bin": "string",
        "fbin": "string",
        "b": "bool",
        "d32": "date",
        "d64": "date",
        "ts_s": "datetime",
        "ts_ms": "datetime",
        "ts_us_utc": "datetime",
        "ts_ns_paris": "datetime",
        "t32": "time",
        "t64": "time",
        "dur": "duration",
        "dur_ns": "duration",
        "lst": "string",
        "st": "string",
        "mp": "string",
        "dict": "string",
        "nul": "string",
        "nested_ts": "string",
        "nested_bytes": "string",
    }
    r0, r1 = rows
    assert r0["i8"] == -128
    assert r1["i8"] is None
    assert r0["i64"] == 2**63 - 1
    assert r1["i64"] == -(2**63)
    assert r0["u64"] == "18446744073709551615"
    assert r1["u64"] == 5
    assert r0["f32"] == 1.1  # the float32's own shortest text, not 1.100000023841858
    assert r0["f64"] is None
    assert r1["f64"] is None
    assert r0["f16"] == 1.5
    assert r0["dec"] == "12.345"
    assert r1["dec"] == "-0.001"
    assert r0["dec0"] == 12
    assert r1["dec0"] == "99999999999999999999"
    assert r0["dec256"] == "1.5"
    assert r0["s"] == "héllo"
    assert r1["s"] is None
    assert r0["ls"] == "large"
    assert r0["bin"] == "text"
    assert r1["bin"] == "base64:AP8="
    assert r0["fbin"] == "ab"
    assert r1["fbin"] == "base64:AQI="
    assert r0["b"] is True
    assert r1["b"] is False
    assert r0["d32"] == "2021-01-01"
    assert r1["d32"] == "0001-01-01"
    assert r0["d64"] == "2021-01-02"
    assert r0["ts_s"] == "2021-01-01T10:00:00"
    assert r0["ts_ms"] == "2021-01-01T10:00:00.123"
    assert r0["ts_us_utc"] == "2021-01-01T10:00:00.000005Z"
    assert r0["ts_ns_paris"] == "2021-01-01T11:00:00.123456789+01:00"
    assert r0["t32"] == "10:30:15"
    assert r0["t64"] == "10:30:15.123456789"
    assert r0["dur"] == "36:00:00"
    assert r1["dur"] == "-0:01:30"
    assert r0["dur_ns"] == "0:00:00.000000001"
    assert r0["lst"] == "[1,2]"
    assert r1["lst"] is None
    assert r0["st"] == '{"x":1,"y":"a"}'
    assert r0["mp"] == '[["k",1]]'
    assert r1["mp"] == "[]"
    assert r0["dict"] == "red"
    assert r0["nul"] is None
    assert r0["nested_ts"] == '["2021-01-01 10:00:00.123456789"]'
    assert r0["nested_bytes"] == '["base64:/w=="]'
    t = art["tables"][0]
    assert t["header_rows"] == 0
    assert t["locator"] == {"row_start": 1, "row_end": 2}
    assert t["attrs"] == {"binary_columns": ["bin", "fbin"]}
    assert any("'f64': 2 NaN or infinite" in w for w in art["warnings"])


def test_row_blocks() -> None:
    art = run(write(pa.table({"id": [1, 2], "name": ["a", None]})), name="people.parquet")
    assert art["tables"][0]["name"] == "people.parquet"
    b0, b1 = art["blocks"]
    assert b0["text"] == "id: 1 | name: a"
    assert b1["text"] == "id: 2"
    assert b0["locator"] == {"row_start": 1, "row_end": 1}
    assert b1["locator"] == {"row_start": 2, "row_end": 2}
    assert b0["attrs"] == {"table_id": "t0"}
    assert art["coverage"]["complete"] is True


def test_row_block_texts_with_and_without_nulls_in_the_batch() -> None:
    """A batch with no null anywhere is joined at once, a batch with nulls column by column: the same texts."""
    full = {
        "id": [1, -2],
        "x": [0.5, 1.0],
        "ok": [True, False],
        "s": ["é {0}", "|"],
        "d": [dt.date(2021, 1, 2), dt.date(1999, 12, 31)],
        "m": pa.array([Decimal("1.50"), Decimal("-0.25")], pa.decimal128(5, 2)),
    }
    want = [
        "id: 1 | x: 0.5 | ok: true | s: é {0} | d: 2021-01-02 | m: 1.50",
        "id: -2 | x: 1 | ok: false | s: | | d: 1999-12-31 | m: -0.25",
    ]
    art = run(write(pa.table(full)))
    assert [b["text"] for b in art["blocks"]] == want
    holes = {k: pa.concat_arrays([pa.array(v) if not isinstance(v, pa.Array) else v, pa.nulls(1, pa.array(v).type)])
             for k, v in full.items()}  # fmt: skip
    holes["id"] = pa.array([1, -2, 3])
    art = run(write(pa.table(holes)))
    assert [b["text"] for b in art["blocks"]] == [*want, "id: 3"]


def test_one_column_without_nulls() -> None:
    art = run(write(pa.table({"only": ["a", "b"]})))
    assert [b["text"] for b in art["blocks"]] == ["only: a", "only: b"]


def test_int96_timestamps() -> None:
    data = write(
        pa.table({"t": pa.array([dt.datetime(2021, 1, 1, 10, 0, 0, 123456)], pa.timestamp("us"))}),
        use_deprecated_int96_timestamps=True,
    )
    types, rows = by_name(run(data))
    assert types == {"t": "datetime"}
    assert rows[0]["t"] == "2021-01-01T10:00:00.123456"


@pytest.mark.parametrize("codec", ["snappy", "gzip", "brotli", "zstd", "lz4", "none"])
def test_compressions(codec: str) -> None:
    data = write(pa.table({"n": list(range(100)), "s": [f"v{i}" for i in range(100)]}), compression=codec)
    _, rows = by_name(run(data))
    assert rows[99] == {"n": 99, "s": "v99"}


def test_streams_row_groups_and_cuts_at_the_budget() -> None:
    n = 30_000
    data = write(
        pa.table({"id": pa.array(range(n), pa.int64()), "s": [f"row {i}" for i in range(n)]}), row_group_size=1000
    )
    art = run(data, max_bytes=300_000)
    cov = art["coverage"]
    assert cov["total"] == n
    assert 0 < cov["extracted"] < n
    assert len(art["tables"][0]["rows"]) == len(art["blocks"]) == cov["extracted"]
    assert art["tables"][0]["rows"][-1] == [cov["extracted"] - 1, f"row {cov['extracted'] - 1}"]
    assert any(f"{cov['extracted']} of {n} rows" in w for w in art["warnings"])
    [failed] = cov["failed"]
    assert failed["unit"].endswith(f"rows {cov['extracted'] + 1}-{n}")  # parquet rows count from 1


def test_decompression_bomb_is_refused_before_decoding() -> None:
    # The bound is 1000:1 to over 64 MiB; lowered here so the bomb stays small to build.
    data = write(pa.table({"s": ["a" * (8 * 1024 * 1024)]}), compression="zstd", use_dictionary=False)
    assert len(data) < 10_000
    err = error_of(data, limits=dataclasses.replace(LIMITS, parquet_bomb_floor=1024 * 1024))
    assert err.code == ErrorCode.RESOURCE_LIMIT
    assert "bomb" in err.message
    assert "before decoding" in err.message


def test_a_repetitive_column_under_the_bomb_floor_is_read() -> None:
    data = write(pa.table({"s": ["ACTIVE"] * 1_000_000}), compression="zstd", use_dictionary=False)
    art = run(data, max_bytes=200_000)  # a high ratio (~1000:1) but a small inflated size: no bomb
    assert art["coverage"]["total"] == 1_000_000
    assert art["tables"][0]["rows"][0] == ["ACTIVE"]


def test_a_value_larger_than_the_budget_is_refused() -> None:
    data = write(pa.table({"s": ["x" * 300_000]}), compression="none")
    err = error_of(data, max_bytes=200_000)
    assert err.code == ErrorCode.RESOURCE_LIMIT


def test_not_parquet_and_truncated() -> None:
    assert error_of(b"hello world, not parquet").code == ErrorCode.CORRUPT
    good = write(pa.table({"a": [1]}))
    assert error_of(good[:-10]).code == ErrorCode.CORRUPT
    assert error_of(good[:-8] + (10**6).to_bytes(4, "little") + b"PAR1").code == ErrorCode.CORRUPT  # footer length
    assert error_of(good[:-8] + b"\x01\x00\x00\x00PAR1").code == ErrorCode.CORRUPT


def test_checksum_mismatch_is_corrupt() -> None:
    data = bytearray(write(pa.table({"a": list(range(1000))}), compression="none", write_page_checksum=True))
    pos = bytes(data).find((500).to_bytes(8, "little"))
    assert pos > 0
    data[pos] ^= 0x01
    err = error_of(bytes(data))
    assert err.code == ErrorCode.CORRUPT
    assert "CRC" in err.message or "checksum" in err.message


# -- the corpus ----------------------------------------------------------------------------------------------------


def _entries() -> list[dict[str, str]]:
    with (CORPUS / "MANIFEST.tsv").open(newline="", encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh, delimiter="\t") if r["format"] == "parquet"]


BOMB = "parquet/parquet-testing-large_string_map.brotli.parquet"


@pytest.mark.parametrize("entry", _entries(), ids=lambda e: e["path"])
def test_corpus_file(corpus: Path, entry: dict[str, str]) -> None:
    data = (corpus / entry["path"]).read_bytes()
    if entry["path"] == BOMB:  # MANIFEST: "a clean resource-limit error is acceptable, hanging/OOM is not"
        assert error_of(data).code == ErrorCode.RESOURCE_LIMIT
        return
    if entry["expect"] == "ok":
        art = run(data)
        t = art["tables"][0]
        assert art["coverage"]["extracted"] == art["coverage"]["total"] == len(t["rows"])
        if t["rows"]:
            assert any(v is not None for row in t["rows"] for v in row)
        return
    err = error_of(data)
    assert err.code == ErrorCode.CORRUPT
    if entry["expect"] == "encrypted":
        assert "encrypted" in err.message


def _corpus(name: str) -> dict[str, Any]:
    return run((CORPUS / "parquet" / f"parquet-testing-{name}.parquet").read_bytes())


def test_corpus_alltypes_plain() -> None:
    types, rows = by_name(_corpus("alltypes_plain"))
    assert len(rows) == 8
    assert types["timestamp_col"] == "datetime"
    assert types["bool_col"] == "bool"
    assert rows[0] == {
        "id": 4,
        "bool_col": True,
        "tinyint_col": 0,
        "smallint_col": 0,
        "int_col": 0,
        "bigint_col": 0,
        "float_col": 0.0,
        "double_col": 0.0,
        "date_string_col": "03/01/09",
        "string_col": "0",
        "timestamp_col": "2009-03-01T00:00:00",
    }
    assert rows[1]["float_col"] == 1.1
    assert rows[1]["double_col"] == 10.1
    assert rows[1]["timestamp_col"] == "2009-03-01T00:01:00"


def test_corpus_decimals() -> None:
    for name in ("byte_array_decimal", "fixed_length_decimal", "fixed_length_decimal_legacy", "int32_decimal"):
        types, rows = by_name(_corpus(name))
        assert types == {"value": "number"}
        assert [r["value"] for r in rows[:3]] == ["1.00", "2.00", "3.00"]
        assert rows[23]["value"] == "24.00"


def test_corpus_uint64_nested_and_nan() -> None:
    _, rows = by_name(_corpus("concatenated_gzip_members"))
    assert rows[0] == {"long_col": 1}
    assert rows[512] == {"long_col": 513}
    _, rows = by_name(_corpus("nested_lists.snappy"))
    assert rows[0] == {"a": '[[["a","b"],["c"]],[null,["d"]]]', "b": 1}
    art = _corpus("float16_nonzeros_and_nans")
    _, rows = by_name(art)
    assert rows[0]["x"] is None
    assert rows[1]["x"] == 1.0
    assert any("NaN" in w for w in art["warnings"])
    _, rows = by_name(_corpus("binary"))
    assert rows[0]["foo"] == "base64:AA=="  # a control byte is no text


def test_corpus_incorrect_map_schema_is_read_as_a_list_of_entries() -> None:
    types, rows = by_name(_corpus("incorrect_map_schema"))
    assert types == {"my_map": "string"}
    assert rows[0]["my_map"] == '[{"key":"parent","value":"another"},{"key":"name","value":"report"}]'


def test_corpus_bomb_is_refused_from_the_footer() -> None:
    err = error_of((CORPUS / BOMB).read_bytes())
    assert err.code == ErrorCode.RESOURCE_LIMIT
    assert "2147483749" in err.message
    assert "before decoding" in err.message


def test_corpus_footer_row_count_disagreement() -> None:
    art = _corpus("repeated_no_annotation")
    assert art["coverage"]["total"] == 6
    assert any("footer says 0 rows" in w for w in art["warnings"])


def _varint2(n: int) -> bytes:
    """``n``'s zigzag varint in exactly two bytes (non-minimal where it fits one: readers accept it)."""
    z = (n << 1) ^ (n >> 63)
    assert 0 <= z < 1 << 14
    return bytes([(z & 0x7F) | 0x80, z >> 7])


def _footer_rows_set(data: bytes, rows: int, new: int) -> bytes:
    """``data`` with the footer's own row count (FileMetaData field 3: header byte 0x16, then the zigzag varint)
    made ``new``, in as many bytes; the row groups' counts (the same bytes) are left as they are."""
    footer_at = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    old = b"\x16" + _varint2(rows)
    start = data.find(old, footer_at)
    while start != -1:
        patched = data[: start + 1] + _varint2(new) + data[start + 3 :]
        try:
            if pq.ParquetFile(pa.BufferReader(patched)).metadata.num_rows == new:
                return patched
        except (OSError, pa.ArrowException):
            pass
        start = data.find(old, start + 1)
    raise AssertionError(f"no footer row count of {rows} found")


def test_a_negative_footer_row_count_is_read_with_a_warning() -> None:
    data = _footer_rows_set(write(pa.table({"a": list(range(77))})), 77, -42)
    art = run(data)
    assert art["coverage"]["total"] == art["coverage"]["extracted"] == 77
    assert art["coverage"]["complete"] is True
    assert art["tables"][0]["locator"] == {"row_start": 1, "row_end": 77}
    assert len(art["tables"][0]["rows"]) == 77
    assert any("row count (-42) is negative" in w for w in art["warnings"]), art["warnings"]


def test_a_created_by_that_is_not_utf8_is_left_out_with_a_warning() -> None:
    data = write(pa.table({"a": [1, 2, 3]}))
    assert data.count(b"parquet-cpp-arrow") == 1
    art = run(data.replace(b"parquet-cpp-arrow", b"parquet-\xff\xfe\xfd-arrow"))
    assert art["attrs"]["created_by"] == ""
    assert [r[0] for r in art["tables"][0]["rows"]] == [1, 2, 3]
    assert any("created_by" in w and "not UTF-8" in w for w in art["warnings"]), art["warnings"]


def test_a_column_name_that_is_not_utf8_is_corrupt_with_what_python_said() -> None:
    data = write(pa.table({"name_ok": [1]}))
    err = error_of(data.replace(b"name_ok", b"name\xff\xfeo"))
    assert err.code == ErrorCode.CORRUPT
    assert "cannot be read" in err.message, err.message
    assert "utf-8" in err.message, err.message
