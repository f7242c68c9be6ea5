"""Where one extraction's time goes, in process: the worker's phases timed apart, then cProfile's top lines.

    .venv/bin/python -m benchmarks.profile_format FILE --format FORMAT [--top 15] [--sort tottime|cumulative]
        [--check pass|built|bytes] [--no-profile]

The phases are the worker's (``extract_fn.workers._handle``): the format module's ``extract`` (parse and build),
then the one pass that checks the built objects and serializes them a chunk at a time into the reply
(``shared.artifact.built.dump_checked`` into ``extract_fn.workers.ArtifactOut``; its CPU seconds too).
``--check built`` times the worker's steps before that pass instead: the check of the built objects
(``shared.artifact.built.holds``), then ``orjson.dumps`` of the artifact; ``--check bytes`` those before issue 17:
``orjson.dumps``, then ``check_artifact`` parsing those bytes back. The profile covers every phase
(``--no-profile``: none, for times without the profiler's cost). Peak RSS (``ru_maxrss``) is printed after each
phase. For cold-start imports use ``python -X importtime``.
"""

from __future__ import annotations

import argparse
import contextlib
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
from extract_fn.workers import ArtifactOut
from shared.artifact import check_artifact
from shared.artifact.built import dump_checked, holds
from shared.artifact.row_runs import compact_rows


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("file", type=Path)
    ap.add_argument("--format", required=True)
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--sort", default="tottime")
    ap.add_argument("--check", choices=("pass", "built", "bytes"), default="pass")
    ap.add_argument("--no-profile", action="store_true")
    ap.add_argument("--compact", action="store_true", help="keep row blocks as runs, as the worker does")
    ap.add_argument("--max-output-bytes", type=int, default=256 * 1024 * 1024)
    args = ap.parse_args()
    module = importlib.import_module(MODULES[args.format])
    data = args.file.read_bytes()
    request = ExtractRequest(format=args.format, name=args.file.name, max_output_bytes=args.max_output_bytes)
    prof = cProfile.Profile()
    if not args.no_profile:
        prof.enable()
    t0 = time.perf_counter()
    with compact_rows() if args.compact else contextlib.nullcontext():
        artifact = module.extract(data, request)
    t1 = time.perf_counter()
    phases = [f"extract {t1 - t0:.2f} s (peak {_rss_mb():.0f} MB)"]
    if args.check == "pass":
        cpu = time.process_time()
        reply = ArtifactOut(args.max_output_bytes)
        ok = dump_checked(artifact, format=args.format, original_size=len(data), write=reply.write)
        del artifact
        cpu = time.process_time() - cpu
        t3 = time.perf_counter()
        verdict = "valid" if ok else "to the bytes"
        phases.append(f"check + serialize {t3 - t1:.2f} s, {cpu:.2f} CPU-s ({verdict}, peak {_rss_mb():.0f} MB)")
        out = reply.getvalue()
        reply.close()
        if not ok:
            check_artifact(out, format=args.format, original_size=len(data))
    elif args.check == "built":
        ok = holds(artifact, format=args.format, original_size=len(data))
        t2 = time.perf_counter()
        phases.append(f"check built {t2 - t1:.2f} s ({'valid' if ok else 'to the bytes'}, peak {_rss_mb():.0f} MB)")
        out = orjson.dumps(artifact)
        del artifact
        t3 = time.perf_counter()
        phases.append(f"dumps {t3 - t2:.2f} s (peak {_rss_mb():.0f} MB)")
        if not ok:
            check_artifact(out, format=args.format, original_size=len(data))
    else:
        out = orjson.dumps(artifact)
        del artifact
        t2 = time.perf_counter()
        phases.append(f"dumps {t2 - t1:.2f} s (peak {_rss_mb():.0f} MB)")
        check_artifact(out, format=args.format, original_size=len(data))
        t3 = time.perf_counter()
        rate = len(out) / 1024 / 1024 / max(t3 - t2, 1e-9)
        phases.append(f"check bytes {t3 - t2:.2f} s ({rate:.0f} MB/s, peak {_rss_mb():.0f} MB)")
    prof.disable()
    mb = len(out) / 1024 / 1024
    under = "" if args.no_profile else " [times under the profiler]"
    print(
        f"{args.file.name}: input {len(data) / 1024 / 1024:.1f} MB, artifact {mb:.1f} MB; "
        f"{', '.join(phases)}; total {t3 - t0:.2f} s{under}"
    )
    if args.no_profile:
        return 0
    pstats.Stats(prof, stream=sys.stdout).strip_dirs().sort_stats(args.sort).print_stats(args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
