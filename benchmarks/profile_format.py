"""Where one extraction's time goes, in process: the worker's three phases timed apart, then cProfile's top lines.

    .venv/bin/python -m benchmarks.profile_format FILE --format FORMAT [--top 15] [--sort tottime|cumulative]

The phases are the worker's (``extract_fn.workers._handle``): the format module's ``extract`` (parse and build),
``orjson.dumps`` of the artifact, and ``check_artifact`` on those bytes. The profile covers all three. Peak RSS
(``ru_maxrss``) is printed after each phase. For cold-start imports use ``python -X importtime``.
"""

from __future__ import annotations

import argparse
import cProfile
import importlib
import pstats
import resource
import sys
import time
from pathlib import Path

import orjson

from extract_fn.formats import MODULES
from extract_fn.formats.base import ExtractRequest
from shared.artifact import check_artifact


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", type=Path)
    ap.add_argument("--format", required=True)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--sort", default="tottime")
    ap.add_argument("--max-output-bytes", type=int, default=256 * 1024 * 1024)
    args = ap.parse_args()
    module = importlib.import_module(MODULES[args.format])
    data = args.file.read_bytes()
    request = ExtractRequest(format=args.format, name=args.file.name, max_output_bytes=args.max_output_bytes)
    prof = cProfile.Profile()
    prof.enable()
    t0 = time.perf_counter()
    artifact = module.extract(data, request)
    t1 = time.perf_counter()
    rss1 = _rss_mb()
    out = orjson.dumps(artifact)
    del artifact
    t2 = time.perf_counter()
    rss2 = _rss_mb()
    check_artifact(out, format=args.format, original_size=len(data))
    t3 = time.perf_counter()
    prof.disable()
    mb = len(out) / 1024 / 1024
    print(
        f"{args.file.name}: input {len(data) / 1024 / 1024:.1f} MB, artifact {mb:.1f} MB; extract {t1 - t0:.2f} s "
        f"(peak {rss1:.0f} MB), dumps {t2 - t1:.2f} s (peak {rss2:.0f} MB), check {t3 - t2:.2f} s "
        f"({mb / max(t3 - t2, 1e-9):.0f} MB/s, peak {_rss_mb():.0f} MB) [times under the profiler]"
    )
    pstats.Stats(prof, stream=sys.stdout).strip_dirs().sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
