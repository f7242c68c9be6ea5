"""The CLI's fixed cost at cold start: a whole ``python -m extract_fn extract`` process against the interpreter alone
and the format module alone, and against the same extraction warm in one process, A/B across source trees.

    .venv/bin/python -m benchmarks.bench_cold [ROOT ...] [--runs 7] [--files tiny|standard|PATH:FORMAT,...]
        [--inputs /tmp/bench-inputs]

Each ROOT (default: this checkout) is a source tree with its own ``extract_fn`` (``git archive main | tar -x -C
/tmp/base`` for a before). Runs are interleaved (round after round, every root in turn) so a change in the machine's
load hits both sides alike; one warm-up round is not counted (it also writes the roots' ``__pycache__``, which a
deployment has, so the environment's PYTHONDONTWRITEBYTECODE is dropped). Per file and root it prints, best and
median of the runs, CPU seconds (user + system of the process and the child it forks) and wall seconds of:

- ``cli``: the whole CLI process on the file;
- ``floor``: ``python -c "import <the format module>"`` (the interpreter plus the parser's own imports);
- ``pass``: ``python -c pass`` (the interpreter alone);
- ``warm``: the worker's handling (``extract_fn.workers._handle``: module, check, ``orjson.dumps``) run a second time
  in one process (only with ``--warm``);

and the overheads ``cli - floor`` (what the CLI adds to importing the module: the target for a tiny file is ~60 ms),
``cli - pass`` and ``cli - warm`` (the cold start as a whole: everything but the extraction itself). CPU time is what
to read on a shared machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.compare import INPUTS

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
STANDARD = INPUTS  # the standard inputs and their formats, as the main table names them
TINY_TEXT = "/tmp/bench-cold-tiny.txt"
TINY = {
    TINY_TEXT: "text",
    str(CORPUS / "markdown" / "docling-duck.md"): "markdown",
    str(CORPUS / "docx" / "mammoth-utf8-bom.docx"): "docx",
}
MEASURE_ONLY = {"EXTRACTOR_TIMEOUT_S": "3600", "EXTRACTOR_MAX_BYTES": str(512 * 1024 * 1024)}

WARM = """
import sys, time
from extract_fn.formats import MODULES
import inspect
from extract_fn.workers import _ChildState, _handle
path, fmt = sys.argv[1], sys.argv[2]
data = open(path, "rb").read()
# a list the worker empties (older trees: the bytes themselves)
inbox = lambda: [data] if "inbox" in inspect.signature(_handle).parameters else data
header = {"extractor": MODULES[fmt] + ":extract", "format": fmt, "name": path.rsplit("/", 1)[-1],
          "encoding": None, "sql_dialect": None, "max_output_bytes": 1 << 31}
state = _ChildState(0)
status, _ = _handle(state, header, inbox())
assert status in (0, 3), status
c, w = time.process_time(), time.perf_counter()
_handle(state, header, inbox())
print(time.process_time() - c, time.perf_counter() - w)
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(MEASURE_ONLY)
    return env


def _timed(cmd: list[str], cwd: Path) -> tuple[float, float, bytes]:
    """(CPU, wall, stdout) of one process and the children it waited for."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=_env(), capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd} in {cwd} failed ({proc.returncode}): {proc.stderr.decode()[-300:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall, proc.stdout


def _commands(path: str, fmt: str) -> dict[str, list[str]]:
    return {
        "cli": [sys.executable, "-m", "extract_fn", "extract", path, "--format", fmt],
        "floor": [sys.executable, "-c", f"import extract_fn.formats.{fmt}_format"],
        "pass": [sys.executable, "-c", "pass"],
    }


def _fmt(values: list[float]) -> str:
    return f"{min(values) * 1000:6.0f} {statistics.median(values) * 1000:6.0f}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("roots", nargs="*", type=Path, default=[ROOT])
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--files", default="tiny", help="tiny, standard, or PATH:FORMAT,...")
    ap.add_argument("--inputs", type=Path, default=Path("/tmp/bench-inputs"))
    ap.add_argument("--warm", action="store_true", help="also time the extraction warm in one process")
    args = ap.parse_args()
    Path(TINY_TEXT).write_text("A line of plain text for the cold start's benchmark.\n" * 20)
    if args.files == "tiny":
        files = dict(TINY)
    elif args.files == "standard":
        files = {str(args.inputs / name): fmt for name, fmt in STANDARD.items()}
    else:
        files = dict(item.rsplit(":", 1) for item in args.files.split(","))  # type: ignore[misc]
    roots = [r.resolve() for r in args.roots]
    print(f"# {os.uname().nodename}, load {os.getloadavg()[0]:.2f}; ms, best and median of {args.runs} runs")
    print(f"{'file':<28} {'root':<24} {'what':<10} {'cpu best/med':>13} {'wall best/med':>13}")
    for path, fmt in files.items():
        cpu: dict[tuple[Path, str], list[float]] = {}
        wall: dict[tuple[Path, str], list[float]] = {}
        outputs: dict[Path, bytes] = {}
        for round_ in range(args.runs + 1):
            for root in roots:
                for what, cmd in _commands(path, fmt).items():
                    c, w, out = _timed(cmd, root)
                    if what == "cli":
                        outputs.setdefault(root, out)
                        if out != outputs[root]:
                            raise RuntimeError(f"{root}: the CLI's answer for {path} changed between runs")
                    if round_:
                        cpu.setdefault((root, what), []).append(c)
                        wall.setdefault((root, what), []).append(w)
        if args.warm:
            for root in roots:
                for _ in range(3):
                    _c, _w, out = _timed([sys.executable, "-c", WARM, path, fmt], root)
                    c, w = (float(x) for x in out.split())
                    cpu.setdefault((root, "warm"), []).append(c)
                    wall.setdefault((root, "warm"), []).append(w)
        same = len(set(outputs.values())) == 1
        for root in roots:
            whats = [what for what in ("cli", "floor", "pass", "warm") if (root, what) in cpu]
            rows = [(what, cpu[root, what], wall[root, what]) for what in whats]
            for base in ("floor", "pass", "warm"):
                if (root, base) in cpu:
                    rows.append(
                        (
                            f"cli-{base}",
                            [statistics.median(cpu[root, "cli"]) - statistics.median(cpu[root, base])],
                            [statistics.median(wall[root, "cli"]) - statistics.median(wall[root, base])],
                        )
                    )
            for what, c_list, w_list in rows:
                name = Path(path).name[:28]
                print(f"{name:<28} {str(root)[-24:]:<24} {what:<10} {_fmt(c_list):>13} {_fmt(w_list):>13}")
        print(f"{Path(path).name}: answers {'byte-identical across roots' if same else 'DIFFER across roots'}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
