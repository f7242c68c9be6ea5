"""Violation paths: ``$`` for the document, then field names joined by dots and indices in brackets; a key that is
not an identifier is written as a JSON string in brackets: ``blocks[1].attrs["a b"][0]``."""

from __future__ import annotations

import json
import re
from typing import Final

_IDENT: Final = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def segment(part: object) -> str:
    if type(part) is int:
        return f"[{part}]"
    if type(part) is str and _IDENT.fullmatch(part):
        return f".{part}"
    if type(part) is str:
        return "[" + json.dumps(part) + "]"
    return f"[{part!r}]"


def join(base: str, parts: tuple[object, ...]) -> str:
    """``base`` (a path, or "" for the document) followed by ``parts``."""
    s = base + "".join(segment(p) for p in parts)
    return s[1:] if not base and s.startswith(".") else s or "$"


def field(base: str, name: str) -> str:
    return f"{base}.{name}" if base else name
