"""The fidelity metric: how many of the words a person sees the extractor gives, and how many it gives that are seen.

One source of truth for ``tests/test_fidelity.py``, ``benchmarks/fidelity.py`` and ``tools/fidelity_refs.py``.

Words: ``re.findall(r"\\w+", NFKC(text).casefold())`` as a multiset. recall = |ours & ref| / |ref|, precision =
|ours & ref| / |ours| (``&`` the multiset intersection).

The reference (``tests/fidelity/refs``, made by ``tools/fidelity_refs.py``): poppler's ``pdftotext`` of the PDF, or
of LibreOffice's PDF export of a DOCX or PPTX file. DOCX only: LibreOffice prints a document's headers and footers
on every page, where the document (and the extractor) holds them once; a person sees a running head once, so in a
DOCX reference the first and last two lines of a page that also stand at the same place on an earlier page (digits
aside: "Page 2 of 5" is "Page 1 of 5" again) are counted once, on the first page that shows them. DOCX and PPTX:
LibreOffice's line wraps are its own (its fonts and metrics are not Word's or PowerPoint's), so a word it cut over
two or more lines ("Doclin" / "g", a narrow shape a letter a line) counts as the whole word where ours has that word
(and not the pieces); a PDF's line wraps are the document's and count as pdftotext reads them.

Ours, from the artifact the extractor returns (in process, default options):

- every block's ``text``;
- but a row block (``attrs.table_id``: a PDF table's row, ``name: value | name: value``) counts its values only,
  without the column names it repeats, and each such table's header counts once: its ``columns`` names, except the
  ones the extractor made up (``column N`` for an empty header cell, `` (N)`` added to a repeated name);
- tables in ``attrs.table`` of a DOCX or PPTX block are not counted again (the block's text holds every cell).

LibreOffice prints neither comments nor speaker notes: the words of comment blocks (DOCX ``attrs.part ==
"comment"``, a PPTX ``attrs.comment``) and of speaker-notes blocks (PPTX ``attrs.notes``) stay out of precision
(they stay in the artifact, and in recall's numerator, where they can only match words that are printed).

pdftotext reads a page's text layer, never its pictures: the words the extractor read by OCR from a picture (blocks
with ``attrs.ocr`` in a DOCX or PPTX file, or on a PDF page that also has text-layer blocks) are a person's to see
but not the reference's, so they stay out of precision the same way. A scanned PDF page (every block of the page read
by OCR) is read by Tesseract in the reference too, and its words count in full.
"""

from __future__ import annotations

import csv
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT.parent / "shared" / "corpus"
REFS = ROOT / "tests" / "fidelity" / "refs"
FORMATS = ("pdf", "docx", "pptx")

# The floor every file is held to, and the targets for a format's mean.
FLOOR_RECALL = 0.9
FLOOR_PRECISION = 0.8
TARGETS = {"pdf": (0.99, 0.98), "docx": (0.98, 0.95), "pptx": (0.98, 0.95)}

_WORD_RE = re.compile(r"\w+")
_MADE_UP_NAME_RE = re.compile(r"column \d+")
_DIGITS_RE = re.compile(r"\d+")
MAX_WRAP_PIECES = 40
EDGE_LINES = 2  # lines at the top and at the bottom of a page that can be a running head or foot


def words(text: str) -> Counter[str]:
    return Counter(_WORD_RE.findall(unicodedata.normalize("NFKC", text).casefold()))


def corpus_files(corpus: Path = CORPUS) -> list[tuple[str, str]]:
    """(corpus path, format) of every ``ok`` pdf, docx and pptx row of the manifest, in its order."""
    with (corpus / "MANIFEST.tsv").open(encoding="utf-8", newline="") as fh:
        return [
            (row["path"], row["format"])
            for row in csv.DictReader(fh, delimiter="\t")
            if row["format"] in FORMATS and row["expect"] == "ok"
        ]


def ref_path(rel: str, fmt: str) -> Path:
    return REFS / fmt / (rel.replace("/", "__") + ".txt")


# -- the reference ----------------------------------------------------------------------------------------------


def _lines(text: str, fmt: str) -> list[str]:
    """The reference's lines, a DOCX's repeated running heads and feet once."""
    if fmt != "docx":
        return text.splitlines()
    seen: set[tuple[int, str]] = set()
    kept: list[str] = []
    for page in text.split("\f"):
        lines = [ln for ln in page.splitlines() if ln.strip()]
        n = len(lines)
        for k, line in enumerate(lines):
            edge = k if k < EDGE_LINES else (k - n if k >= n - EDGE_LINES else None)
            if edge is not None:
                key = (edge, _DIGITS_RE.sub("#", " ".join(line.split())))
                if key in seen:
                    continue
                seen.add(key)
            kept.append(line)
    return kept


def _rejoin_wraps(lines: list[list[str]], ours: Counter[str]) -> Counter[str]:
    """Words of the lines, a word LibreOffice's own line wrap cut in pieces counted whole where ours has it whole.

    A word may run over up to ``MAX_WRAP_PIECES`` lines (a narrow shape LibreOffice lays out a letter a line)."""
    flat: list[tuple[str, bool]] = []  # (word, is it the last word of its line)
    for line in lines:
        flat.extend((w, k == len(line) - 1) for k, w in enumerate(line))
    left = Counter(ours)
    out: Counter[str] = Counter()
    i = 0
    while i < len(flat):
        word, at_end = flat[i]
        best = 0
        acc = word
        j = i
        while at_end and j + 1 < len(flat) and j - i < MAX_WRAP_PIECES:
            j += 1
            acc += flat[j][0]
            at_end = flat[j][1]
            if left[acc] > 0 and (left[word] <= 0 or left[flat[j][0]] <= 0):
                best = j
        if best:
            joined = "".join(w for w, _ in flat[i : best + 1])
            out[joined] += 1
            left[joined] -= 1
            i = best + 1
            continue
        out[word] += 1
        left[word] -= 1
        i += 1
    return out


def reference_words(text: str, fmt: str, ours: Counter[str] | None = None) -> Counter[str]:
    """The reference's words; for DOCX and PPTX (LibreOffice's layout, not the document's), ``ours`` given, a word
    cut by a line wrap counts whole where ours has it whole and not its first piece."""
    lines = _lines(text, fmt)
    if fmt == "pdf" or ours is None:
        return words("\n".join(lines))
    return _rejoin_wraps([list(words_in_order(ln)) for ln in lines], ours)


def words_in_order(text: str) -> list[str]:
    return _WORD_RE.findall(unicodedata.normalize("NFKC", text).casefold())


def reference(rel: str, fmt: str, ours: Counter[str] | None = None) -> Counter[str]:
    return reference_words(ref_path(rel, fmt).read_text(encoding="utf-8"), fmt, ours)


# -- ours -------------------------------------------------------------------------------------------------------


def _unprinted(block: dict[str, Any]) -> bool:
    attrs = block.get("attrs") or {}
    return attrs.get("part") == "comment" or bool(attrs.get("comment")) or bool(attrs.get("notes"))


def _page(block: dict[str, Any]) -> int:
    return int((block.get("locator") or {}).get("page_start") or 0)


def _text_layer_pages(artifact: dict[str, Any]) -> set[int]:
    """The pages (PDF) holding a block not read by OCR."""
    return {_page(b) for b in artifact["blocks"] if "ocr" not in (b.get("attrs") or {})}


def _picture_ocr(block: dict[str, Any], artifact: dict[str, Any], text_pages: set[int]) -> bool:
    """A block read by OCR from a picture the reference does not read (see the module's docstring)."""
    if "ocr" not in (block.get("attrs") or {}):
        return False
    return artifact.get("format") != "pdf" or _page(block) in text_pages


def _shown_names(columns: list[dict[str, Any]]) -> list[str | None]:
    """Column names as the header row showed them; None for a name the extractor made up."""
    out: list[str | None] = []
    seen: list[str] = []
    for c, col in enumerate(columns):
        name = str(col["name"])
        if name == f"column {c + 1}" and _MADE_UP_NAME_RE.fullmatch(name):
            out.append(None)
            continue
        m = re.fullmatch(r"(.*) \((\d+)\)", name)
        if m and m.group(1) in seen:
            name = m.group(1)
        seen.append(name)
        out.append(name)
    return out


def _row_values(block: dict[str, Any], names: list[str | None], columns: list[dict[str, Any]]) -> str:
    """A row block's text without its ``name: `` prefixes."""
    text = str(block["text"])
    prefixes = [f"{col['name']}: " for col in columns]
    out: list[str] = []
    pos = 0
    for k, prefix in enumerate(prefixes):
        if not text.startswith(prefix, pos):
            continue
        start = pos + len(prefix)
        end = len(text)
        for later in prefixes[k + 1 :]:  # the value runs to the next column's " | name: "
            hit = text.find(" | " + later, start)
            if hit != -1:
                end = min(end, hit)
        out.append(text[start:end])
        pos = end + 3
        if pos >= len(text):
            break
    del names
    return " ".join(out) if out else text


@dataclass(frozen=True)
class Ours:
    all: Counter[str]  # every word the artifact gives a reader
    printed: Counter[str]  # without comments and speaker notes (what LibreOffice prints), for precision


def artifact_words(artifact: dict[str, Any]) -> Ours:
    tables = {t["id"]: t for t in artifact.get("tables", [])}
    every: Counter[str] = Counter()
    unprinted: Counter[str] = Counter()
    headers_done: set[str] = set()
    text_pages = _text_layer_pages(artifact)
    for block in artifact["blocks"]:
        attrs = block.get("attrs") or {}
        table_id = attrs.get("table_id")
        table = tables.get(table_id) if table_id is not None else None
        if table is None:
            got = words(block["text"])
            every += got
            if _unprinted(block) or _picture_ocr(block, artifact, text_pages):
                unprinted += got
            continue
        names = _shown_names(table["columns"])
        if table_id not in headers_done:
            headers_done.add(table_id)
            if table.get("header_rows", 1):
                every += words(" ".join(n for n in names if n))
        every += words(_row_values(block, names, table["columns"]))
    return Ours(every, every - unprinted)


# -- scores -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Score:
    recall: float
    precision: float
    ref_words: int
    our_words: int


def score(ours: Ours, ref: Counter[str]) -> Score:
    n_ref = sum(ref.values())
    n_ours = sum(ours.printed.values())
    recall = sum((ours.all & ref).values()) / n_ref if n_ref else 1.0
    precision = sum((ours.printed & ref).values()) / n_ours if n_ours else (1.0 if not n_ref else 0.0)
    return Score(recall, precision, n_ref, n_ours)


def extract(rel: str, fmt: str, corpus: Path = CORPUS) -> dict[str, Any]:
    """The artifact the extractor returns for a corpus file, in process, with the default options."""
    from importlib import import_module

    from extract_fn.formats import MODULES
    from extract_fn.formats.base import ExtractRequest

    module = import_module(MODULES[fmt])
    result: dict[str, Any] = module.extract((corpus / rel).read_bytes(), ExtractRequest(format=fmt, name=rel))
    return result


def measure(rel: str, fmt: str, corpus: Path = CORPUS) -> Score:
    ours = artifact_words(extract(rel, fmt, corpus))
    return score(ours, reference(rel, fmt, ours.all))
