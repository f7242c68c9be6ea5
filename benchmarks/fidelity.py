"""Fidelity: per corpus file and per format, the recall and precision of the words a person sees.

Every corpus ``ok`` PDF, DOCX and PPTX file is compared with its committed reference (``tests/fidelity/refs``, made
by ``tools/fidelity_refs.py``) by the rules of ``tests/fidelity/metric.py``. ``--tool kreuzberg`` or ``--tool
markitdown`` measures that tool's text (run from ``.venv-bench``, one process per file, in a network namespace of its
own, so nothing it does can leave the machine) on the same files with the same words.

    .venv/bin/python -m benchmarks.fidelity                  # ours
    .venv/bin/python -m benchmarks.fidelity --tool kreuzberg
    .venv/bin/python -m benchmarks.fidelity --format pdf --worst 5
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

from tests.fidelity.metric import (
    CORPUS,
    FLOOR_PRECISION,
    FLOOR_RECALL,
    FORMATS,
    ROOT,
    Ours,
    Score,
    corpus_files,
    extract,
    ref_path,
    reference,
    score,
    words,
)

BENCH_PYTHON = ROOT / ".venv-bench" / "bin" / "python"
TOOL_CODE = {
    "kreuzberg": "import sys\nfrom kreuzberg import extract_file_sync\nprint(extract_file_sync(sys.argv[1]).content)",
    "markitdown": (
        "import sys\nfrom markitdown import MarkItDown\nprint(MarkItDown().convert(sys.argv[1]).text_content)"
    ),
}


def tool_text(tool: str, path: Path) -> str:
    """The tool's text for a file, or '' when it fails (a failure reads nothing)."""
    cmd = [str(BENCH_PYTHON), "-c", TOOL_CODE[tool], str(path)]
    if shutil.which("unshare"):
        cmd = ["unshare", "-rn", *cmd]  # no network interface but a down loopback
    else:
        raise SystemExit("unshare (util-linux) is needed to run the other tools without network")
    done = subprocess.run(cmd, capture_output=True, timeout=600, check=False)
    if done.returncode != 0:
        print(f"  {tool} failed on {path.name}: {done.stderr.decode(errors='replace')[-200:]}", file=sys.stderr)
        return ""
    return done.stdout.decode("utf-8", errors="replace")


def measure_file(rel: str, fmt: str, tool: str | None, corpus: Path) -> Score:
    if tool is None:
        from tests.fidelity.metric import artifact_words

        try:
            ours = artifact_words(extract(rel, fmt, corpus))
        except Exception as exc:
            print(f"  ours failed on {rel}: {exc}", file=sys.stderr)
            ours = Ours(Counter(), Counter())
        return score(ours, reference(rel, fmt, ours.all))
    got = words(tool_text(tool, corpus / rel))
    return score(Ours(got, got), reference(rel, fmt, got))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tool", choices=sorted(TOOL_CODE), help="measure this tool instead of ours")
    parser.add_argument("--format", choices=FORMATS, action="append", help="only these formats")
    parser.add_argument("--worst", type=int, default=0, help="per format, list only the N lowest files")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args(argv)
    formats = args.format or list(FORMATS)
    results: dict[str, list[tuple[str, Score]]] = {f: [] for f in formats}
    for rel, fmt in corpus_files(args.corpus):
        if fmt in formats and not ref_path(rel, fmt).is_file():
            print(f"  {rel}: no reference (see tests/fidelity/refs/README.md)", file=sys.stderr)
        elif fmt in formats:
            results[fmt].append((rel, measure_file(rel, fmt, args.tool, args.corpus)))
    who = args.tool or "ours"
    print(f"# fidelity: {who}")
    summary = []
    for fmt in formats:
        rows = results[fmt]
        measured = [(rel, s) for rel, s in rows if s.ref_words]
        print(f"\n## {fmt}: {len(rows)} files, {len(measured)} with words in the reference\n")
        print("| file | ref words | our words | recall | precision |")
        print("|---|---|---|---|---|")
        shown = sorted(rows, key=lambda r: min(r[1].recall, r[1].precision))[: args.worst] if args.worst else rows
        for rel, s in shown:
            mark = " **below**" if s.recall < FLOOR_RECALL or s.precision < FLOOR_PRECISION else ""
            print(f"| {rel} | {s.ref_words} | {s.our_words} | {s.recall:.3f} | {s.precision:.3f}{mark} |")
        n = max(len(measured), 1)
        recall = sum(s.recall for _, s in measured) / n
        precision = sum(s.precision for _, s in measured) / n
        below = [rel.rsplit("/", 1)[-1] for rel, s in rows if s.recall < FLOOR_RECALL or s.precision < FLOOR_PRECISION]
        summary.append((fmt, len(measured), recall, precision, below))
    print(f"\n## summary: {who}\n")
    floor = f"{FLOOR_RECALL} recall or {FLOOR_PRECISION} precision"
    print(f"| format | mean recall / precision ({who}) | files below {floor} |")
    print("|---|---|---|")
    for fmt, n, recall, precision, below in summary:
        print(f"| {fmt} ({n} files) | {recall:.3f} / {precision:.3f} | {len(below)} ({', '.join(below)}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
