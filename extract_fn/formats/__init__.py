"""Format modules, one per contract format, loaded lazily so a worker imports only what it uses."""

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
