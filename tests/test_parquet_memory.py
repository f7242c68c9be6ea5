"""Issue 17: a 1,000,000-row Parquet file (the benchmark's shape, generated here) extracts in a worker whose memory
limit is 1 GiB. The time limit is generous on purpose: this checks memory, never speed (benchmarks/ has the speed)."""

from __future__ import annotations

import datetime as dt
import random

import pyarrow as pa
import pyarrow.parquet as pq

from extract_fn.formats import MODULES
from extract_fn.formats.base import ExtractRequest
from extract_fn.workers import SpooledReply, WorkerPool

ROWS = 1_000_000
MIB = 1024 * 1024
WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa", "lambda"]


def million_rows() -> bytes:
    """The shape of ../shared/bench/gen.py's big.parquet: id, name, amount, flag, when; row groups of 100,000."""
    rng = random.Random(2)
    epoch_days = (dt.date(2020, 1, 1) - dt.date(1970, 1, 1)).days
    table = pa.table(
        {
            "id": pa.array(range(ROWS), pa.int64()),
            "name": pa.array([WORDS[i % len(WORDS)] for i in range(ROWS)]),
            "amount": pa.array([round(rng.random() * 1e4, 2) for _ in range(ROWS)], pa.float64()),
            "flag": pa.array([i % 2 == 0 for i in range(ROWS)]),
            "when": pa.array([epoch_days + i % 3000 for i in range(ROWS)], pa.int32()).cast(pa.date32()),
        }
    )
    out = pa.BufferOutputStream()
    pq.write_table(table, out, row_group_size=100_000)
    return bytes(out.getvalue())


def test_a_million_row_parquet_file_extracts_under_a_1_gib_worker_limit() -> None:
    data = million_rows()
    request = ExtractRequest(format="parquet", name="million.parquet", max_output_bytes=256 * MIB)
    with WorkerPool(1, timeout_s=1800, memory_limit_bytes=1024 * MIB, max_output_bytes=256 * MIB) as pool:
        raw = pool.run_sync(f"{MODULES['parquet']}:extract", data, request)
    body = raw.read_all() if isinstance(raw, SpooledReply) else raw
    # Read where it is cheap, without parsing 250 MB back in the test process: every row is in, the last one too.
    assert body.startswith(b'{"schema_version"')
    assert b'"total":1000000,"extracted":1000000' in body
    assert b'"complete":true' in body
    assert b'"id":"rt0.999999"' in body
    assert b"id: 999999 | name: " in body
