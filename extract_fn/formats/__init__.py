"""Format modules, one per contract format. A CLI run imports only the one its file needs; the service's workers import
every module (and the libraries the modules import lazily) at start (``warm_imports``)."""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from typing import Any

from extract_fn.formats.base import ExtractRequest
from shared.contract import FORMATS

Extractor = Callable[[bytes, ExtractRequest], dict[str, Any]]

# format name -> module implementing it (a module missing here makes the format unavailable in capabilities)
MODULES: dict[str, str] = {fmt: f"extract_fn.formats.{fmt}_format" for fmt in FORMATS}


# Libraries a format module imports on first use rather than at its own import (a CLI run imports only what its one
# file needs). The service's workers import them at start with the modules (``warm_imports``), so no request pays
# them ("module", or "module:attribute.path" to read an attribute that imports lazily). A name missing here costs
# only that first request's import, never an answer. pyarrow is left out on purpose: it is 43 MB of every worker
# (a third of a warm one) for a format most requests are not, and its import (about 0.1 CPU-s) is small next to
# extracting a Parquet file; parquet's first request on a worker imports it (benchmarks/README.md, "Memory against
# the artifact").
DEFERRED_IMPORTS: dict[str, tuple[str, ...]] = {
    "markdown": ("markdown_it", "markdown_it_pyrs", "markdown_it.rules_block.state_block", "markdown_it.token"),
    "xlsx": ("python_calamine", "lxml.etree"),
    "docx": ("lxml.etree", "extract_fn.formats.ooxml_chart", "extract_fn.ocr.pictures"),
    "pptx": ("lxml.etree", "extract_fn.formats.ooxml_chart", "extract_fn.ocr.pictures"),
    "pdf": ("extract_fn.ocr.blocks", "extract_fn.ocr.config", "extract_fn.ocr.pdf_pages"),
}


def warm_imports(extractors: dict[str, str]) -> list[str]:
    """What a worker imports before its first request for ``extractors`` (format -> "module:function"): each
    extractor and the libraries its format imports lazily, once each, in that order."""
    names = [*extractors.values()]
    for fmt in extractors:
        names += DEFERRED_IMPORTS.get(fmt, ())
    return list(dict.fromkeys(names))


def available_formats() -> list[str]:
    """The formats whose module exists in this deployment."""
    out = []
    for fmt in FORMATS:
        try:
            importlib.util.find_spec(MODULES[fmt])
        except ModuleNotFoundError:
            continue
        if importlib.util.find_spec(MODULES[fmt]) is not None:
            out.append(fmt)
    return out


def extractor_for(fmt: str) -> Extractor:
    return importlib.import_module(MODULES[fmt]).extract
