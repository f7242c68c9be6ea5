"""Shared helpers for the OOXML formats (docx, pptx; xlsx's missing main part): package parts and relationships.

Every part is parsed by ``extract_fn.formats.safe_xml`` (the one XML parser of the extractor, xlsx's too): a part
that declares a DTD (the billion-laughs shape, or one naming a file or URL) is ``corrupt`` before any parser sees it,
and the parser itself can load nothing.
"""

from __future__ import annotations

import functools
import posixpath
import zipfile
from typing import Any

from extract_fn.formats import safe_xml
from extract_fn.formats.zipsafe import has_member, read_member
from shared.contract import ErrorCode, ExtractionError

REL_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
MC_NS = "http://schemas.openxmlformats.org/markup-compatibility/2006"


def parse_part(zf: zipfile.ZipFile, name: str, kind: str) -> Any:
    """A part's root element, through the one safe XML parser (``safe_xml``: a part with a DTD is ``corrupt``)."""
    return safe_xml.parse(read_member(zf, name, kind), name, kind)


_LOCAL_NAMES: dict[Any, str] = {}  # tag -> local name: a package uses a few hundred tags, asked for ~100 times each
_MAX_LOCAL_NAMES = 4096  # past this many distinct tags (a hostile part), names are computed, not remembered


def uint_attr(text: str | None) -> int | None:
    """An unsigned integer attribute (an EMU length, a point's index) written in ASCII digits, or None: absent,
    not such digits (``str.isdigit`` alone passes "²", which ``int`` refuses), or over 18 digits (past int64, and
    never near ``int``'s own limit of 4300 digits, a ValueError)."""
    return int(text) if text and len(text) <= 18 and text.isascii() and text.isdigit() else None


def local(tag: Any) -> str:
    """An element's local name ('' for comments, entities and processing instructions)."""
    name = _LOCAL_NAMES.get(tag)
    if name is None:
        name = tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""
        if len(_LOCAL_NAMES) < _MAX_LOCAL_NAMES:
            _LOCAL_NAMES[tag] = name
    return name


def child(el: Any, name: str) -> Any:
    """The first child element of ``el`` whose local name is ``name`` (in any namespace or none), or None."""
    return next(el.iterchildren("{*}" + name), None)


def first_children(el: Any, names: frozenset[str]) -> dict[str, Any]:
    """local name -> the first child element of ``el`` with that name (in any namespace or none), for each of
    ``names`` it has: ``child`` for several names in one pass. For the small elements read for every paragraph or
    cell (``w:pPr``, ``w:tcPr``, ``a:pPr``), cheaper than ``child`` once: lxml builds a tag matcher for each
    ``iterchildren(tag)`` (about as much as visiting two children)."""
    found: dict[str, Any] = {}
    for c in el:
        name = local(c.tag)
        if name in names and name not in found:
            found[name] = c
    return found


@functools.lru_cache(maxsize=1024)
def rels_name(part: str) -> str:
    folder, base = posixpath.split(part)
    return posixpath.join(folder, "_rels", base + ".rels")


@functools.lru_cache(maxsize=4096)  # a deck's slides name the same few layouts and masters
def resolve(part: str, target: str) -> str:
    """A relationship target as a package member name."""
    if target.startswith("/"):
        return posixpath.normpath(target.lstrip("/"))
    return posixpath.normpath(posixpath.join(posixpath.dirname(part), target))


def read_rels(zf: zipfile.ZipFile, part: str, kind: str) -> list[tuple[str, str, str]]:
    """(id, type's last path segment, member name) of a part's internal relationships; [] when it has none."""
    name = rels_name(part)
    if not has_member(zf, name):
        return []
    root = parse_part(zf, name, kind)
    out: list[tuple[str, str, str]] = []
    for rel in root:
        if local(rel.tag) != "Relationship" or rel.get("TargetMode") == "External":
            continue
        rid, rtype, target = rel.get("Id"), rel.get("Type") or "", rel.get("Target")
        if not rid or not target:
            continue
        out.append((rid, rtype.rstrip("/").rsplit("/", 1)[-1], resolve(part, target)))
    return out


def main_part(zf: zipfile.ZipFile, kind: str, default: str) -> str:
    """The package's main part (the officeDocument relationship of _rels/.rels), or ``default``."""
    for _rid, rtype, target in read_rels(zf, "", kind):
        if rtype == "officeDocument" and has_member(zf, target):
            return target
    if has_member(zf, default):
        return default
    raise no_main_part(kind, default)


def no_main_part(kind: str, default: str) -> ExtractionError:
    """The one answer for a package without its main part (docx, pptx, xlsx)."""
    return ExtractionError(
        ErrorCode.CORRUPT, f"the {kind} package has no main document part ({default}); it is not a {kind} file"
    )
