"""Make the fidelity references: an independent reading of every corpus ``ok`` PDF, DOCX and PPTX file.

PDF: ``pdftotext -enc UTF-8 FILE -`` (poppler-utils; reading-order mode, no ``-layout``). DOCX and PPTX:
``soffice --headless --convert-to pdf --outdir DIR FILE`` (LibreOffice), then the same ``pdftotext`` on the PDF.
A page that ``pdftotext`` finds no text on (a scan) is read instead by Tesseract's own command line from Debian:
``pdftoppm -r 300 -f N -l N -png`` then ``tesseract PAGE.png - --psm 1`` (orientation and script detection on), a
reading independent of the extractor's pipeline (its own renderer, build and page segmentation). Each reference is
written as it comes (pages separated by form feeds) to
``tests/fidelity/refs/<format>/<corpus path, slashes as __>.txt``, and ``tests/fidelity/refs/README.md`` records
the commands and the tools' versions, so the suite (``tests/test_fidelity.py``) needs neither tool. The words and the
rules that compare them are in ``tests/fidelity/metric.py``.

    apt-get install -y poppler-utils libreoffice-writer-nogui libreoffice-impress-nogui tesseract-ocr
    .venv/bin/python tools/fidelity_refs.py            # every file
    .venv/bin/python tools/fidelity_refs.py --format docx

LibreOffice runs with a private profile in a temporary folder (so it never meets another LibreOffice of the
machine) and never goes on the network for a local file.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.fidelity.metric import CORPUS, REFS, corpus_files, ref_path  # noqa: E402

PDFTOTEXT = ["pdftotext", "-enc", "UTF-8"]
NO_NETWORK = ["unshare", "-rn"]  # a network namespace of its own: a hostile file's external entity goes nowhere
TIMEOUT_S = 600


def _version(cmd: list[str]) -> str:
    done = subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120)
    return (done.stdout + done.stderr).strip().splitlines()[0]


def pdf_text(pdf: Path, scans: Path | None = None) -> str:
    """``pdftotext``'s reading; with ``scans`` (a work folder), pages without a text layer are read by Tesseract."""
    done = subprocess.run([*NO_NETWORK, *PDFTOTEXT, str(pdf), "-"], capture_output=True, check=True, timeout=TIMEOUT_S)
    text = done.stdout.decode("utf-8")
    if scans is None:
        return text
    pages = text.split("\f")
    for i, page in enumerate(pages[:-1] if pages and pages[-1] == "" else pages):
        if not page.strip():
            pages[i] = scanned_page_text(pdf, i + 1, scans)
    return "\f".join(pages)


def scanned_page_text(pdf: Path, number: int, work: Path) -> str:
    """Tesseract's reading of one page rendered at 300 dpi by poppler."""
    work.mkdir(parents=True, exist_ok=True)
    prefix = work / "page"
    for old in work.glob("page*.png"):
        old.unlink()
    render = [*NO_NETWORK, "pdftoppm", "-r", "300", "-f", str(number), "-l", str(number), "-png", str(pdf), str(prefix)]
    subprocess.run(render, capture_output=True, check=True, timeout=TIMEOUT_S)
    image = next(iter(sorted(work.glob("page*.png"))), None)
    if image is None:
        return ""
    done = subprocess.run(
        [*NO_NETWORK, "tesseract", str(image), "-", "--psm", "1"], capture_output=True, check=True, timeout=TIMEOUT_S
    )
    return done.stdout.decode("utf-8")


def office_pdf(src: Path, out_dir: Path, profile: Path) -> Path | None:
    """LibreOffice's PDF of a file, or None when it cannot load the file."""
    subprocess.run(
        [
            *NO_NETWORK,
            "soffice",
            f"-env:UserInstallation={profile.as_uri()}",
            "--headless",
            "--convert-to",
            "pdf",
            "--outdir",
            str(out_dir),
            str(src),
        ],
        capture_output=True,
        check=True,
        timeout=TIMEOUT_S,
    )
    out = out_dir / (src.stem + ".pdf")
    return out if out.is_file() else None


def write_readme(missing: list[str]) -> None:
    poppler = _version(["pdftotext", "-v"])
    office = _version(["soffice", "--version"])
    tesseract = _version(["tesseract", "--version"])
    (REFS / "README.md").write_text(
        f"""# Fidelity references

Independent readings of every `../shared/corpus` file of format pdf, docx or pptx whose `MANIFEST.tsv` row expects
`ok`, made by `tools/fidelity_refs.py`; `tests/test_fidelity.py` and `benchmarks/fidelity.py` compare the
extractor's words with them (the rules: `tests/fidelity/metric.py`).

- pdf: `pdftotext -enc UTF-8 FILE -`; a page it finds no text on (a scan) is read by `pdftoppm -r 300 -f N -l N -png
  FILE PAGE` then `tesseract PAGE.png - --psm 1` (Tesseract's own command line, Debian's build)
- docx, pptx: `soffice -env:UserInstallation=file:///tmp/... --headless --convert-to pdf --outdir DIR FILE`, then
  `pdftotext -enc UTF-8 DIR/FILE.pdf -`

The tools run under `unshare -rn` (a network namespace of their own: nothing a file points at can be fetched).
Each file is `<format>/<corpus path with / as __>.txt`, the tool's output as it came (pages end with a form feed).

{"".join(f"No reference for `{rel}`: LibreOffice cannot load it.{chr(10)}" for rel in missing)}
Made with:

- {poppler} (poppler-utils, Debian)
- {office} (libreoffice-writer-nogui, libreoffice-impress-nogui, Debian)
- {tesseract} (tesseract-ocr, Debian; pages without a text layer only)
""",
        encoding="utf-8",
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--format", choices=("pdf", "docx", "pptx"), help="only this format's files")
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    args = parser.parse_args(argv)
    missing: list[str] = []
    with tempfile.TemporaryDirectory(prefix="fidelity-refs-") as tmp:
        work = Path(tmp)
        for rel, fmt in corpus_files(args.corpus):
            if args.format and fmt != args.format:
                continue
            src = args.corpus / rel
            pdf = src if fmt == "pdf" else office_pdf(src, work / "out", work / "profile")
            out = ref_path(rel, fmt)
            out.parent.mkdir(parents=True, exist_ok=True)
            if pdf is None:
                print(f"{rel}: LibreOffice cannot load it: no reference", file=sys.stderr)
                out.unlink(missing_ok=True)
                missing.append(rel)
                continue
            out.write_text(pdf_text(pdf, work / "scans" if fmt == "pdf" else None), encoding="utf-8")
            print(f"{rel}: {out.stat().st_size} bytes", file=sys.stderr)
    if args.format is None:
        write_readme(missing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
