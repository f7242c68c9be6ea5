"""Before/after table of the eleven format modules: two checkouts side by side, each format in process.

    .venv/bin/python -m benchmarks.bench_formats_ab ROOT_A ROOT_B [--inputs DIR] [--runs 5] [--formats toml,sql]

ROOT_A and ROOT_B are checkout roots (``git archive <commit> | tar -x -C /tmp/base`` gives one for a commit). Each
measurement is a fresh interpreter (the root first on ``sys.path``, ``PYTHONHASHSEED=0`` as
``tools/corpus_snapshot.py`` runs: sqlglot's answers depend on set order) that imports the format module, reads the
standard input and times one ``extract`` call: CPU seconds (``time.process_time``) and wall seconds. The two roots
are interleaved (A B, then B A, ...) so a busy machine disturbs both alike; the best of ``--runs`` is reported, with
the ratio B/A. The artifacts of both roots are hashed (``orjson.dumps``): ``same`` says whether they are byte-
identical (``NO (m/n)``: m and n distinct artifacts over the runs of A and B). Inputs: the standard ones
(``../shared/bench/gen.py DIR``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

# format -> standard input (``shared/bench/gen.py``)
INPUTS: dict[str, str] = {
    "markdown": "big.md",
    "html": "big.html",
    "text": "big.txt",
    "sql": "big.sql",
    "toml": "big.toml",
    "csv": "big.csv",
    "xlsx": "big.xlsx",
    "parquet": "big.parquet",
    "pdf": "doc200.pdf",
    "docx": "big.docx",
    "pptx": "big.pptx",
}

_CHILD = r"""
import hashlib, importlib, sys, time
root, fmt, path = sys.argv[1:4]
sys.path.insert(0, root)
import orjson
from extract_fn.formats import MODULES
from extract_fn.formats.base import ExtractRequest
module = importlib.import_module(MODULES[fmt])
assert module.__file__.startswith(root), (module.__file__, root)
data = open(path, "rb").read()
request = ExtractRequest(fmt, name=path.rsplit("/", 1)[-1])
cpu, wall = time.process_time(), time.perf_counter()
artifact = module.extract(data, request)
cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
print(cpu, wall, hashlib.sha256(orjson.dumps(artifact)).hexdigest())
"""


_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONHASHSEED": "0"}


def run_once(root: Path, fmt: str, path: Path) -> tuple[float, float, str]:
    """CPU seconds, wall seconds and the artifact's sha256 of one extraction by ``root``'s module."""
    proc = subprocess.run(
        [sys.executable, "-s", "-c", _CHILD, str(root), fmt, str(path)],
        cwd=root,
        env=_ENV,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        raise SystemExit(f"{root} {fmt}: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    cpu, wall, digest = proc.stdout.split()
    return float(cpu), float(wall), digest


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root_a", type=Path)
    ap.add_argument("root_b", type=Path)
    ap.add_argument("--inputs", type=Path, default=Path("/tmp/bench-inputs"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--formats", default=",".join(INPUTS))
    args = ap.parse_args()
    roots = (args.root_a.resolve(), args.root_b.resolve())
    print(f"A = {roots[0]}\nB = {roots[1]}\nbest of {args.runs}, interleaved; seconds\n")
    print("| format | input | A CPU | B CPU | B/A CPU | A wall | B wall | B/A wall | same artifact |")
    print("|---|---|---|---|---|---|---|---|---|")
    for fmt in args.formats.split(","):
        path = args.inputs / INPUTS[fmt]
        results: dict[Path, list[tuple[float, float, str]]] = {r: [] for r in roots}
        for i in range(args.runs):
            for root in roots if i % 2 == 0 else roots[::-1]:
                results[root].append(run_once(root, fmt, path))
        a, b = (results[r] for r in roots)
        a_cpu, b_cpu = min(x[0] for x in a), min(x[0] for x in b)
        a_wall, b_wall = min(x[1] for x in a), min(x[1] for x in b)
        digests_a, digests_b = {x[2] for x in a}, {x[2] for x in b}
        same = "yes" if digests_a == digests_b and len(digests_a) == 1 else f"NO ({len(digests_a)}/{len(digests_b)})"
        print(
            f"| {fmt} | {path.name} | {a_cpu:.3f} | {b_cpu:.3f} | {b_cpu / a_cpu:.2f} | {a_wall:.3f} | {b_wall:.3f} "
            f"| {b_wall / a_wall:.2f} | {same} |",
            flush=True,
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
