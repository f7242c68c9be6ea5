"""The CLI's cold start imports what one extraction uses, not what only the service does (issue 17).

``python -X importtime`` logs every module a process imports, and the CLI's forked child inherits the flag, so one
run lists what the parent and the child loaded. The modules refused here are the service's (asyncio with ssl and
socket, the thread pool, subprocess, the HTTP stack, pydantic, tracing) or another path's (Pillow and the OCR
engine for a docx without pictures, the chart stack for one without charts; zipfile, pathlib, and shutil for
argparse's terminal width, for a text file; tomllib for a version the CLI never prints): the CLI loaded each
before, and each cost a cold start milliseconds (docs/architecture.md, "The cold start imports what it uses").
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"

SERVICE_ONLY = frozenset(
    {
        "asyncio",
        "ssl",
        "subprocess",
        "tempfile",
        "concurrent.futures.thread",
        "hashlib",
        "tomllib",
        "extract_fn.buffering",
        "extract_fn.app",
        "starlette",
        "uvicorn",
        "h11",
        "pydantic",
        "opentelemetry",
        "shared.tracing",
        "shared.artifact_models",
    }
)


def _imported(path: Path, fmt: str) -> set[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXTRACTOR_")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "extract_fn", "extract", str(path), "--format", fmt],
        capture_output=True,
        env=env,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr.decode(errors="replace")[-2000:]
    assert proc.stdout.startswith(b'{"schema_version":')  # an artifact, extracted in the child
    names = set()
    for line in proc.stderr.decode(errors="replace").splitlines():
        if line.startswith("import time:") and "imported package" not in line:
            names.add(line.rsplit("|", 1)[1].strip())
    # The log is whole: the parent's modules and the child's (the check is imported in the child, after the fork;
    # the format module itself is loaded with importlib.import_module, which importtime does not log).
    assert {"extract_fn.workers", "shared.artifact.built"} <= names
    return names


@pytest.mark.parametrize(
    ("path", "fmt", "also_refused"),
    [
        (CORPUS / "text" / "chardet-utf8.txt", "text", {"zipfile", "shutil", "pathlib", "PIL"}),
        (CORPUS / "markdown" / "docling-duck.md", "markdown", {"zipfile", "shutil", "PIL"}),
        (
            CORPUS / "docx" / "mammoth-utf8-bom.docx",
            "docx",
            {"PIL", "extract_fn.ocr.blocks", "extract_fn.ocr.engine", "extract_fn.formats.ooxml_chart"},
        ),
    ],
    ids=["text", "markdown", "docx-without-pictures"],
)
def test_the_cli_imports_nothing_only_the_service_needs(path: Path, fmt: str, also_refused: set[str]) -> None:
    loaded = _imported(path, fmt)
    assert sorted(loaded & (SERVICE_ONLY | also_refused)) == []
