"""Seconds and peak RSS of the tabular format modules (csv, xlsx, parquet) on the standard benchmark inputs.

Run: ``.venv/bin/python -m benchmarks.bench_tabular DIR [--runs N] [--validate]`` where DIR holds ``big.csv``,
``big.xlsx`` and ``big.parquet`` as written by ``../shared/bench/gen.py DIR`` (generate them in a separate venv:
it needs xlsxwriter and friends, never installed into the runtime one).

Each run is a fresh process (so peak RSS is that extraction's alone, imports included): it reads the file, times
``extract`` (in-module wall and CPU seconds: CPU time is the steadier figure on a shared machine), and reports the
process's peak RSS. With ``--validate`` it also times serializing
the artifact and ``shared.artifact.validate_artifact`` on the bytes, as the service does before answering.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

_CHILD = r"""
import json, resource, sys, time
from extract_fn.formats.base import ExtractRequest
import importlib
fmt, path, validate = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
mod = importlib.import_module(f"extract_fn.formats.{fmt}_format")
if fmt == "xlsx":
    import python_calamine, lxml.etree  # imports are not the extraction
if fmt == "parquet":
    import pyarrow.parquet
data = open(path, "rb").read()
rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
c0 = time.process_time()
t0 = time.perf_counter()
art = mod.extract(data, ExtractRequest(fmt, name=path.rsplit("/", 1)[-1]))
t1 = time.perf_counter()
c1 = time.process_time()
out = {"seconds": t1 - t0, "cpu": c1 - c0, "rows": art["coverage"]["extracted"], "total": art["coverage"]["total"],
       "blocks": len(art["blocks"]), "rss_before_mb": rss0}
if validate:
    from shared.artifact_builder import serialize
    from shared.artifact import validate_artifact
    t2 = time.perf_counter()
    raw = serialize(art)
    t3 = time.perf_counter()
    validate_artifact(raw, format=fmt, original_size=len(data))
    t4 = time.perf_counter()
    out.update({"serialize_s": t3 - t2, "validate_s": t4 - t3, "artifact_mb": len(raw) / 1e6})
out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps(out))
"""

INPUTS = (("csv", "big.csv"), ("xlsx", "big.xlsx"), ("parquet", "big.parquet"))


def run_one(fmt: str, path: Path, validate: bool) -> dict[str, float]:
    root = Path(__file__).resolve().parent.parent
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, fmt, str(path), "1" if validate else "0"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dir", type=Path)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--validate", action="store_true")
    ap.add_argument("--only", choices=[f for f, _ in INPUTS])
    args = ap.parse_args()
    for fmt, name in INPUTS:
        if args.only and fmt != args.only:
            continue
        path = args.dir / name
        if not path.exists():
            print(f"{name}: missing (generate it with ../shared/bench/gen.py {args.dir})")
            continue
        results = [run_one(fmt, path, args.validate) for _ in range(args.runs)]
        secs = statistics.median(r["seconds"] for r in results)
        cpu = statistics.median(r["cpu"] for r in results)
        rss = statistics.median(r["peak_rss_mb"] for r in results)
        r0 = results[0]
        line = (
            f"{name}: extract {secs:.2f} s wall, {cpu:.2f} s CPU (medians of {args.runs}), peak RSS {rss:.0f} MB "
            f"(after imports and reading the file: {r0['rss_before_mb']:.0f} MB); "
            f"rows {r0['rows']}/{r0['total']}, blocks {r0['blocks']}"
        )
        if args.validate:
            line += (
                f"; serialize {statistics.median(r['serialize_s'] for r in results):.2f} s, "
                f"validate {statistics.median(r['validate_s'] for r in results):.2f} s, "
                f"artifact {r0['artifact_mb']:.0f} MB"
            )
        print(line, flush=True)


if __name__ == "__main__":
    main()
