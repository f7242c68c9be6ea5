"""Every corpus answer judged from its objects (shared.artifact.built) and from its JSON: the same verdict.

Each input of ``../shared/corpus`` (the manifest's rows of a format, with the codec option where a row has one)
runs through its format module in process, as the worker runs it; an input the module refuses has no artifact."""

from __future__ import annotations

import csv
import importlib
from pathlib import Path
from typing import Any, Final

import pytest

from extract_fn.formats import MODULES
from extract_fn.formats.base import ExtractRequest
from shared.contract import FORMATS, ExtractionError
from tests.built_verdict import assert_same_verdict

CORPUS: Final = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


def _rows() -> list[tuple[str, str, str | None]]:
    out: list[tuple[str, str, str | None]] = []
    with (CORPUS / "MANIFEST.tsv").open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            if row["format"] in FORMATS:
                out.append((row["path"], row["format"], None))
                if row["codec"]:
                    out.append((row["path"], row["format"], row["codec"]))
    return out


ROWS: Final = _rows()


@pytest.mark.parametrize("fmt", sorted({fmt for _, fmt, _ in ROWS}))
def test_every_corpus_answer_has_the_same_verdict_both_ways(fmt: str) -> None:
    extract = importlib.import_module(MODULES[fmt]).extract
    judged: dict[bool | None, int] = {}
    for path, row_fmt, codec in ROWS:
        if row_fmt != fmt:
            continue
        data = (CORPUS / path).read_bytes()
        request = ExtractRequest(format=fmt, name=Path(path).name, encoding=codec, max_output_bytes=256 * 2**20)
        try:
            artifact: Any = extract(data, request)
        except ExtractionError:
            continue
        said = assert_same_verdict(artifact, fmt, len(data))
        judged[said] = judged.get(said, 0) + 1
    assert judged.get(True, 0) > 0, judged  # the corpus's answers are valid: the objects' check passes them
