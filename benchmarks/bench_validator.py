"""Throughput of ``shared.artifact.validate_artifact`` and ``check_artifact`` on two artifacts, by CPU time.

Run: ``.venv/bin/python -m benchmarks.bench_validator [--case blocks|tables|all] [--runs N] [--blocks N] [--rows N]``.
Prints MB/s, blocks/s or rows/s and the peak RSS of the process. Each artifact is deterministic and shaped like a real
one:

- ``blocks`` (~54 MB): 200,000 markdown-style headings and paragraphs with line and character locators, section
  paths, lookup keys, some attrs, and two small typed tables (10,000 rows each).
- ``tables`` (~420 MB): a Parquet-style table of 1,000,000 rows x 10 typed columns (number ints, decimal digit
  strings, doubles, strings, bools, dates, date-times, nulls, big integers as digits, a few cell errors) and its
  1,000,000 row blocks (``attrs.table_id`` and a row locator each), as the extractor makes for a big tabular file.

Times are CPU time of this process (``time.process_time``), best and median of N runs: on a machine shared with other
work, wall time mostly measures the wait for a core.
"""

from __future__ import annotations

import argparse
import gc
import random
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

import orjson

from shared.artifact import check_artifact, validate_artifact

WORDS = [
    "extraction",
    "contract",
    "artifact",
    "locator",
    "section",
    "paragraph",
    "heading",
    "table",
    "column",
    "value",
    "ingestion",
    "orchestrator",
    "service",
    "blob",
    "queue",
    "storage",
    "document",
    "page",
    "sheet",
    "parser",
    "version",
    "coverage",
    "unit",
    "bound",
    "rule",
    "névé",
    "Zürich",
    "東京",
    "данные",
]


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n_words))


def make_artifact(n_blocks: int = 200_000, *, table_rows: int = 10_000, seed: int = 7) -> tuple[dict[str, Any], int]:
    """A realistic artifact dict and the original size its locators fit in."""
    rng = random.Random(seed)
    blocks: list[dict[str, Any]] = []
    line = 1
    char = 0
    section: list[str] = []
    heading_id = None
    for i in range(n_blocks):
        if i % 20 == 0:
            depth = 1 + (i // 20) % 4
            title = _text(rng, 2)
            section = [*section[: depth - 1], title]  # depth 1-4: up to 3 entries above
            text = f"{'#' * depth} {title}"
            block: dict[str, Any] = {
                "id": f"b{i}",
                "type": "heading",
                "text": text,
                "depth": depth,
                "section_path": section[:-1],
                "locator": {"line_start": line, "line_end": line, "char_start": char, "char_end": char + len(text)},
                "keys": [f"heading:{title[:40]}"],
            }
            heading_id = f"b{i}"
            lines = 1
        else:
            kind = rng.choice(("paragraph", "paragraph", "paragraph", "list", "code"))
            text = _text(rng, rng.randint(1, 5))
            lines = rng.randint(1, 4)
            block = {
                "id": f"b{i}",
                "type": kind,
                "text": text,
                "parent": heading_id,
                "section_path": list(section),
                "locator": {
                    "line_start": line,
                    "line_end": line + lines - 1,
                    "char_start": char,
                    "char_end": char + len(text),
                },
                "keys": [],
            }
            if kind == "code":
                block["attrs"] = {"language": "python", "fence": {"info": "python", "line": line}}
            if i % 7 == 0:
                block["keys"] = [f"ref:{i}", f"anchor-{i % 1000}"]
        blocks.append(block)
        line += lines + 1
        char += len(text) + 2
    tables = []
    for t in range(2):
        rows = [
            [
                f"row {r}",
                r * 3,
                r * 0.25,
                r % 2 == 0,
                f"2024-{1 + r % 12:02d}-{1 + r % 28:02d}",
                f"2024-01-01T{r % 24:02d}:00:00Z",
                f"{r % 24:02d}:30:00",
                f"{30 + r % 20}:00:00",
                None if r % 11 == 0 else ("x" if r % 3 else 1.5),
                "12.345" if r % 5 == 0 else {"error": "#DIV/0!"} if r % 17 == 0 else r,
            ]
            for r in range(table_rows)
        ]
        tables.append(
            {
                "id": f"t{t}",
                "name": f"Sheet{t + 1}",
                "columns": [
                    {"name": n, "type": ty}
                    for n, ty in (
                        ("label", "string"),
                        ("count", "number"),
                        ("ratio", "number"),
                        ("flag", "bool"),
                        ("day", "date"),
                        ("at", "datetime"),
                        ("clock", "time"),
                        ("took", "duration"),
                        ("any", "mixed"),
                        ("amount", "number"),
                    )
                ],
                "rows": rows,
                "header_rows": 1,
                "locator": {"sheet": f"Sheet{t + 1}", "row_start": 1, "row_end": table_rows + 1},
                "attrs": {"hidden": t == 1},
            }
        )
    artifact = {
        "schema_version": 1,
        "format": "markdown",
        "parser": "loom-markdown",
        "parser_version": "1+markdown-it-py4.3.0",
        "options": {"encoding": "utf-8"},
        "attrs": {"front_matter": {"title": "bench"}},
        "warnings": [],
        "coverage": {"unit": "lines", "total": line, "extracted": line, "failed": [], "lost": [], "complete": True},
        "blocks": blocks,
        "tables": tables,
    }
    return artifact, char + 10


TABLE_COLUMNS = (
    ("id", "number"),
    ("amount", "number"),
    ("ratio", "number"),
    ("name", "string"),
    ("city", "string"),
    ("active", "bool"),
    ("day", "date"),
    ("at", "datetime"),
    ("note", "string"),
    ("score", "number"),
)
CITIES = ("Zürich", "東京", "Lisboa", "Oslo", "Lagos", "Lima", "Perth", "Quito")


def make_table_artifact(n_rows: int = 1_000_000) -> tuple[dict[str, Any], int]:
    """A Parquet-style artifact: one typed table of ``n_rows`` rows and a row block per row, as the extractor makes
    them (text ``name: value | ...`` over the non-null cells, ``attrs.table_id``, a row locator), and the original
    size its locators fit in."""
    prefixes = [f"{name}: " for name, _ in TABLE_COLUMNS]
    rows: list[list[Any]] = []
    blocks: list[dict[str, Any]] = []
    base_ts = 1_700_000_000
    for r in range(n_rows):
        ts = base_ts + r * 37 + r % 29  # distinct date-times, a few thousand a day
        day, sec = divmod(ts, 86_400)
        date = f"{2023 + (day // 365) % 3}-{1 + day % 12:02d}-{1 + day % 28:02d}"
        row = [
            r + 1,  # number: integers
            f"{r * 7919 % 100_000}.{r % 100:02d}" if r % 50 else None,  # number: exact decimal digits, some nulls
            None if r % 13 == 0 else r % 4000 * 0.25,  # number: doubles
            f"customer {r * 31 % 50_000}",  # string
            CITIES[r % 8] if r % 7 else None,  # string, some nulls
            r % 3 == 0,  # bool
            date,  # date
            f"{date}T{sec // 3600:02d}:{sec // 60 % 60:02d}:{sec % 60:02d}Z",  # datetime
            None if r % 5 else f"follow up {r % 97}",  # string, mostly null
            # number: integers, an integer past 64 bits as its digits, a cell error now and then
            {"error": "#N/A"} if r % 1000 == 999 else (r % 1001 - 500 if r % 4 else "1234567890123456789012"),
        ]
        rows.append(row)
        text = " | ".join(
            p + (v if type(v) is str else orjson.dumps(v).decode())
            for p, v in zip(prefixes, row, strict=True)
            if v is not None
        )
        blocks.append(
            {
                "id": f"rt0.{r}",
                "type": "paragraph",
                "text": text,
                "section_path": [],
                "locator": {"row_start": r + 1, "row_end": r + 1},
                "keys": [],
                "attrs": {"table_id": "t0"},
            }
        )
    table = {
        "id": "t0",
        "name": "events.parquet",
        "columns": [{"name": n, "type": t} for n, t in TABLE_COLUMNS],
        "rows": rows,
        "header_rows": 0,
        "locator": {"row_start": 1, "row_end": n_rows} if n_rows else {},
        "attrs": {},
    }
    artifact = {
        "schema_version": 1,
        "format": "parquet",
        "parser": "loom-parquet",
        "parser_version": "1+pyarrow",
        "options": {},
        "attrs": {},
        "warnings": [],
        "coverage": {"unit": "rows", "total": n_rows, "extracted": n_rows, "failed": [], "lost": [], "complete": True},
        "blocks": blocks,
        "tables": [table],
    }
    return artifact, 40 * n_rows + 1024  # a Parquet file's size: locators hold rows only, so any size fits


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _measure(fn: Callable[..., Any], raw: bytes, fmt: str, size: int, runs: int) -> tuple[list[float], list[float]]:
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(runs):
        c0, t0 = time.process_time(), time.perf_counter()
        result = fn(raw, format=fmt, original_size=size)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        del result
    return walls, cpus


def _run_case(raw: bytes, fmt: str, size: int, unit: str, count: int, runs: int) -> None:
    mb = len(raw) / 1e6
    gc.disable()
    parse_s = []
    for _ in range(min(runs, 3)):
        c0 = time.process_time()
        doc = orjson.loads(raw)
        parse_s.append(time.process_time() - c0)
        del doc
    gc.enable()
    best = min(parse_s)
    print(f"baseline, orjson.loads alone (gc paused): best {best * 1000:.0f} ms cpu = {mb / best:.0f} MB/s")
    for fn in (validate_artifact, check_artifact):
        walls, cpus = _measure(fn, raw, fmt, size, runs)
        for label, times in (("cpu", cpus), ("wall", walls)):
            best, median = min(times), sorted(times)[len(times) // 2]
            print(
                f"{fn.__name__:<17} {label:>4}: best {best * 1000:5.0f} ms = {mb / best:5.1f} MB/s,"
                f" {count / best:9,.0f} {unit}/s (median {median * 1000:.0f} ms = {mb / median:.1f} MB/s)"
            )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--case", choices=("blocks", "tables", "all"), default="all")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--blocks", type=int, default=200_000, help="blocks of the block-heavy artifact")
    ap.add_argument("--table-rows", type=int, default=10_000, help="rows in each of its two tables")
    ap.add_argument("--rows", type=int, default=1_000_000, help="rows (and row blocks) of the table-heavy artifact")
    args = ap.parse_args(argv)

    if args.case in ("blocks", "all"):
        artifact, size = make_artifact(args.blocks, table_rows=args.table_rows)
        raw = orjson.dumps(artifact)
        del artifact
        print(
            f"blocks: {len(raw) / 1e6:.1f} MB, {args.blocks:,} blocks, 2 tables x {args.table_rows:,} rows x 10 columns"
        )
        art = validate_artifact(raw, format="markdown", original_size=size)
        if len(art.blocks) != args.blocks or art.blocks[-1].locator.line_start is None:
            raise SystemExit("the benchmark artifact did not come back whole")
        del art
        _run_case(raw, "markdown", size, "blocks", args.blocks, args.runs)
        del raw
    if args.case in ("tables", "all"):
        artifact, size = make_table_artifact(args.rows)
        raw = orjson.dumps(artifact)
        del artifact
        print(f"tables: {len(raw) / 1e6:.1f} MB, 1 table x {args.rows:,} rows x 10 columns, {args.rows:,} row blocks")
        art = validate_artifact(raw, format="parquet", original_size=size)
        if art.tables is None or len(art.tables[0].rows) != args.rows or len(art.blocks) != args.rows:
            raise SystemExit("the benchmark artifact did not come back whole")
        del art
        _run_case(raw, "parquet", size, "rows", args.rows, args.runs)
        del raw
    print(f"peak RSS of the process (generator included): {_peak_rss_mb():.0f} MB")
    print("cpu: this process's own time; wall also counts waiting for a core on a busy machine")


if __name__ == "__main__":
    main()
