"""Mutation fuzz of the extractor over HTTP: every corpus file (or those of ``--formats``) mutated ``--per-file``
times with ``--seed`` (``tools/fuzz_mutations.py``) and posted to a fresh ``python -m extract_fn serve`` on
loopback.

Findings: a 5xx, a body that is not JSON, an error code the contract does not name, ``invalid_artifact``, a
message showing the host, and each line where the worker's catch-all answered (an exception a format module let
out). Each finding's mutant is written to ``--out``. The suite runs a small share of this
(``tests/test_fuzz_smoke.py``); this is the long run, for after a change to a format module:

    .venv/bin/python -m tools.fuzz_extractor --seed 1 --per-file 4   # findings in benchmarks/out/fuzz/seed1

Session 16 ran 19,741 requests over 5 seeds (a prototype of this tool): no 5xx, 7 catch-all answers, each fixed.
"""

from __future__ import annotations

import argparse
import collections
import os
import random
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import requests

from tools.fuzz_mutations import mutate

ROOT = Path(__file__).resolve().parent.parent
CODES = {
    "unsupported_format", "format_unavailable", "format_mismatch", "encoding", "corrupt", "invalid_option",
    "too_large", "timeout", "resource_limit",
}  # fmt: skip
_CATCH_ALL = re.compile(r"extract_fn worker: the (\w+) extractor raised (\w+)")
_HOST_DETAIL = re.compile(r"Traceback|site-packages|/work/|/tmp/|/root/|/home/")
TOKEN = "fuzz-token"  # noqa: S105 - the throwaway service's own bearer token, on loopback only


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--per-file", type=int, default=4)
    parser.add_argument("--formats", default="", help="comma-separated formats (default: all)")
    parser.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "fuzz")  # ignored by git
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    out = args.out / f"seed{args.seed}"
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)  # noqa: S311 - reproducible mutants, not secrets
    rows = [line.split("\t") for line in (args.corpus / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()[1:]]
    wanted = set(filter(None, args.formats.split(",")))
    inputs = [(row[0], row[1]) for row in rows if not wanted or row[1] in wanted]

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = dict(os.environ, EXTRACTOR_TOKENS=TOKEN, EXTRACTOR_WORKERS=str(args.workers))
    log_path = out / "service.log"
    with log_path.open("wb") as log:
        service = subprocess.Popen(
            [sys.executable, "-m", "extract_fn", "serve", "--host", "127.0.0.1", "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=log,
        )
        try:
            stats, findings = _run(f"http://127.0.0.1:{port}", inputs, args, rng, out)
        finally:
            service.terminate()
            service.wait(20)
    raised = collections.Counter(_CATCH_ALL.findall(log_path.read_text(encoding="utf-8", errors="replace")))
    print("answers", dict(stats))
    print("catch-all", dict(raised))
    for finding in findings:
        print("finding", *finding)
    return 1 if findings or raised else 0


def _run(
    url: str, inputs: list[tuple[str, str]], args: argparse.Namespace, rng: random.Random, out: Path
) -> tuple[collections.Counter[str], list[tuple[str, int, str, str]]]:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    session = requests.Session()
    for _ in range(300):
        try:
            session.get(url + "/v1/capabilities", headers=headers, timeout=2)
            break
        except requests.ConnectionError:
            time.sleep(0.2)
    stats: collections.Counter[str] = collections.Counter()
    findings: list[tuple[str, int, str, str]] = []
    started = time.monotonic()
    for k, (path, fmt) in enumerate(inputs):
        data = (args.corpus / path).read_bytes()
        for m in range(args.per_file):
            mutant = mutate(data, fmt, rng)
            params = {"format": fmt, "name": os.path.basename(path)}
            try:
                r = session.post(url + "/v1/extract", params=params, data=mutant, headers=headers, timeout=300)
            except requests.RequestException as exc:
                findings.append((path, m, "request failed", repr(exc)[:200]))
                (out / f"failed_{k}_{m}.{fmt}").write_bytes(mutant)
                continue
            problem = _problem(r)
            stats[f"{r.status_code}"] += 1
            if problem:
                findings.append((path, m, problem, r.text[:300]))
                (out / f"finding_{k}_{m}.{fmt}").write_bytes(mutant)
        if k % 50 == 0:
            print(f"{k}/{len(inputs)} files, {time.monotonic() - started:.0f} s, {dict(stats)}", flush=True)
    return stats, findings


def _problem(r: requests.Response) -> str | None:
    if r.status_code >= 500:
        return f"status {r.status_code}"
    try:
        body = r.json()
    except ValueError:
        return "a body that is not JSON"
    if r.status_code == 200:
        return None
    error = body.get("error", {}) if isinstance(body, dict) else {}
    code, message = error.get("code"), str(error.get("message", ""))
    if code not in CODES:
        return f"code {code!r}"
    if _HOST_DETAIL.search(message):
        return "a message showing the host"
    if "parser failed on this file (" in message:
        return "the worker's catch-all"  # its mutant is kept (the service log says where it raised)
    return None


if __name__ == "__main__":
    raise SystemExit(main())
