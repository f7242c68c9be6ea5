"""Snapshot every corpus answer, to prove a refactor changes no behaviour.

Runs each format module on every input of ``../shared/corpus`` (``MANIFEST.tsv``: format, and a codec for rows that
need the ``encoding`` option) and writes ``{key: answer}`` as JSON, where the answer is the sha256 of the artifact's
orjson bytes or the error's ``code: message``. A row with a codec is run twice, without and with the option (keys
``path`` and ``path?encoding=codec``). Extra files (``--extra DIR``, e.g. the benchmark inputs of
``../shared/bench/gen.py``) are run by their extension's format.

Each file runs in a forked child through ``extract_fn.workers.run_forked``, the CLI's path: the same worker code
(module, GC pause, output limit, validator) with the default settings' limits, so a hostile file cannot take the
snapshot down. The service's own pre-checks (size, sniff) are not applied: every module sees every file. The script
runs itself under ``PYTHONHASHSEED=0``: some answers depend on set order (sqlglot names the first missing argument
of its choice in a parse error: sql/sakila-sqlserver-schema.sql differs between hash seeds, before and after alike).

    .venv/bin/python tools/corpus_snapshot.py /tmp/before.json          # at the old commit
    .venv/bin/python tools/corpus_snapshot.py /tmp/after.json           # after the change
    .venv/bin/python tools/corpus_snapshot.py --compare /tmp/before.json /tmp/after.json
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from extract_fn.formats import MODULES  # noqa: E402
from extract_fn.formats.base import ExtractRequest  # noqa: E402
from extract_fn.settings import Settings  # noqa: E402
from extract_fn.workers import run_forked  # noqa: E402
from shared.contract import FORMATS, ExtractionError  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"
EXTENSIONS = {"md": "markdown", "txt": "text", "htm": "html"}


def _inputs(corpus: Path, extra: list[Path]) -> list[tuple[str, Path, str, str | None]]:
    """(key, file, format, encoding option) for every input to run."""
    out: list[tuple[str, Path, str, str | None]] = []
    with (corpus / "MANIFEST.tsv").open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["format"] not in FORMATS:
                continue
            out.append((row["path"], corpus / row["path"], row["format"], None))
            if row["codec"]:
                out.append(
                    (f"{row['path']}?encoding={row['codec']}", corpus / row["path"], row["format"], row["codec"])
                )
    for folder in extra:
        for path in sorted(folder.iterdir()):
            ext = path.suffix.lstrip(".").lower()
            fmt = EXTENSIONS.get(ext, ext)
            if fmt in FORMATS:
                out.append((f"extra/{path.name}", path, fmt, None))
    return out


def answer(path: Path, fmt: str, encoding: str | None, settings: Settings) -> str:
    """The sha256 of the artifact's bytes, or ``code: message``."""
    request = ExtractRequest(format=fmt, name=path.name, encoding=encoding, max_output_bytes=settings.max_output_bytes)
    try:
        raw = run_forked(
            f"{MODULES[fmt]}:extract",
            path.read_bytes(),
            request,
            timeout_s=settings.timeout_s,
            memory_limit_bytes=settings.memory_limit_bytes,
            max_output_bytes=settings.max_output_bytes,
        )
    except ExtractionError as exc:
        return f"{exc.code.value}: {exc.message}"
    if isinstance(raw, bytes):
        return hashlib.sha256(raw).hexdigest()
    try:  # a big artifact: the child's reply file
        raw.file.seek(0)
        return hashlib.file_digest(raw.file, "sha256").hexdigest()
    finally:
        raw.close()


def snapshot(out: Path, corpus: Path, extra: list[Path], only: str | None) -> None:
    settings = Settings()
    result: dict[str, str] = {}
    for key, path, fmt, encoding in _inputs(corpus, extra):
        if only is not None and fmt != only:
            continue
        result[key] = answer(path, fmt, encoding, settings)
        print(f"{key}: {result[key][:100]}", file=sys.stderr)
    out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"{len(result)} answers in {out}", file=sys.stderr)


def compare(before: Path, after: Path) -> int:
    """0 if both snapshots hold the same answers; else each difference on stdout and 1."""
    old = json.loads(before.read_text(encoding="utf-8"))
    new = json.loads(after.read_text(encoding="utf-8"))
    diffs = sorted(k for k in old.keys() | new.keys() if old.get(k) != new.get(k))
    for key in diffs:
        print(f"{key}\n  before: {old.get(key)}\n  after:  {new.get(key)}")
    print(f"{len(old)} before, {len(new)} after, {len(diffs)} different")
    return 1 if diffs else 0


def main(argv: list[str] | None = None) -> int:
    if os.environ.get("PYTHONHASHSEED") != "0":  # the children fork from this process and keep its seed
        os.execve(sys.executable, [sys.executable, *sys.argv], {**os.environ, "PYTHONHASHSEED": "0"})  # noqa: S606 (our own interpreter, again)
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=Path, nargs="?", help="the JSON file to write")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument("--extra", type=Path, action="append", default=[], help="a folder of more inputs")
    parser.add_argument("--format", dest="only", choices=FORMATS, help="only this format's inputs")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if args.out is None:
        parser.error("the output file is required")
    snapshot(args.out, args.corpus, args.extra, args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
