"""Throughput of ``shared.artifact.validate_artifact`` on a ~50 MB artifact with 200,000 blocks.

Run: ``.venv/bin/python -m benchmarks.bench_validator [--runs N] [--blocks N]``. Prints MB/s, blocks/s and the peak
RSS of the process. The artifact is deterministic (seeded) and shaped like a real one: markdown-style headings and
paragraphs with line and character locators, section paths, lookup keys, some attrs, and two typed tables.
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


def _peak_rss_mb() -> float:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _measure(fn: Callable[..., Any], raw: bytes, size: int, runs: int) -> tuple[list[float], list[float]]:
    walls: list[float] = []
    cpus: list[float] = []
    for _ in range(runs):
        c0, t0 = time.process_time(), time.perf_counter()
        result = fn(raw, format="markdown", original_size=size)
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
        del result
    return walls, cpus


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--blocks", type=int, default=200_000)
    ap.add_argument("--table-rows", type=int, default=10_000, help="rows in each of the two tables")
    args = ap.parse_args(argv)

    artifact, size = make_artifact(args.blocks, table_rows=args.table_rows)
    raw = orjson.dumps(artifact)
    del artifact
    mb = len(raw) / 1e6
    print(f"artifact: {mb:.1f} MB, {args.blocks:,} blocks, 2 tables x {args.table_rows:,} rows x 10 columns")

    art = validate_artifact(raw, format="markdown", original_size=size)
    if len(art.blocks) != args.blocks or art.blocks[-1].locator.line_start is None:
        raise SystemExit("the benchmark artifact did not come back whole")
    del art

    gc.disable()
    c0 = time.process_time()
    orjson.loads(raw)
    parse_s = time.process_time() - c0
    gc.enable()
    print(f"baseline, orjson.loads alone (gc paused): {parse_s * 1000:.0f} ms cpu, {mb / parse_s:.0f} MB/s")

    for fn in (validate_artifact, check_artifact):
        walls, cpus = _measure(fn, raw, size, args.runs)
        for label, times in (("cpu", cpus), ("wall", walls)):
            best, median = min(times), sorted(times)[len(times) // 2]
            print(
                f"{fn.__name__:<17} {label:>4}: median {median * 1000:5.0f} ms = {mb / median:5.1f} MB/s,"
                f" {args.blocks / median:9,.0f} blocks/s (best {best * 1000:.0f} ms = {mb / best:.1f} MB/s)"
            )
    print(f"peak RSS of the process (generator included): {_peak_rss_mb():.0f} MB")
    print("cpu: this process's own time; wall also counts waiting for a core on a busy machine")


if __name__ == "__main__":
    main()
