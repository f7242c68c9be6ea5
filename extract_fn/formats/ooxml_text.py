"""Shared helpers for the OOXML formats (docx, pptx): safe XML parsing of package parts and relationships (and
``SizedBuilder``, the size-aware artifact builder pdf, docx and pptx use).

Parsing is lxml with ``resolve_entities=False``, ``no_network=True``, ``load_dtd=False`` and ``huge_tree=False``:
no entity is ever expanded or fetched, and libxml2 keeps its own limits (nesting depth 256, 10 MB text nodes), so a
hostile part fails as ``corrupt``. A part that declares internal entities (the billion-laughs shape; no real OOXML
part has a DTD) is refused as ``resource_limit``; a part that only declares an external entity is read with the
reference left out (never fetched).
"""

from __future__ import annotations

import posixpath
import zipfile
from typing import Any

import orjson

from extract_fn.formats.zipsafe import has_member, read_member
from shared.artifact_builder import ArtifactBuilder
from shared.contract import ErrorCode, ExtractionError

REL_NS = "http://schemas.openxmlformats.org/package/2006/relationships"
MC_NS = "http://schemas.openxmlformats.org/markup-compatibility/2006"

_PARSER: Any = None


def _parser() -> Any:
    """The one XML parser (made on first use, so the pdf module can import this file without lxml)."""
    global _PARSER  # noqa: PLW0603 - a per-process singleton
    if _PARSER is None:
        from lxml import etree

        _PARSER = etree.XMLParser(
            resolve_entities=False,
            no_network=True,
            load_dtd=False,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
            collect_ids=False,
        )
    return _PARSER


def parse_xml(data: bytes, part: str, kind: str) -> Any:
    """The root element of a part, or the contract's error for a part that is not safe, well-formed XML."""
    from lxml import etree

    try:
        root = etree.fromstring(data, _parser())
    except etree.XMLSyntaxError as exc:
        if "amplification" in str(exc) or "entity loop" in str(exc).lower():
            raise ExtractionError(
                ErrorCode.RESOURCE_LIMIT,
                f"part {part} of the {kind} file expands XML entities past the parser's limit; entity expansion is "
                "refused",
            ) from None
        raise ExtractionError(
            ErrorCode.CORRUPT, f"part {part} of the {kind} file is not well-formed XML: {exc}"
        ) from None
    except (ValueError, MemoryError) as exc:
        raise ExtractionError(ErrorCode.CORRUPT, f"part {part} of the {kind} file cannot be parsed: {exc}") from None
    if root is None:
        raise ExtractionError(ErrorCode.CORRUPT, f"part {part} of the {kind} file is empty")
    dtd = root.getroottree().docinfo.internalDTD
    if dtd is not None:
        for entity in dtd.iterentities():
            if entity.system_url is None:
                raise ExtractionError(
                    ErrorCode.RESOURCE_LIMIT,
                    f"part {part} of the {kind} file declares XML entities ({entity.name}); entity expansion is "
                    "refused",
                )
    return root


def parse_part(zf: zipfile.ZipFile, name: str, kind: str) -> Any:
    return parse_xml(read_member(zf, name, kind), name, kind)


def local(tag: Any) -> str:
    """An element's local name ('' for comments, entities and processing instructions)."""
    if not isinstance(tag, str):
        return ""
    return tag.rsplit("}", 1)[-1]


def rels_name(part: str) -> str:
    folder, base = posixpath.split(part)
    return posixpath.join(folder, "_rels", base + ".rels")


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
    raise ExtractionError(
        ErrorCode.CORRUPT, f"the {kind} package has no main document part ({default}); it is not a {kind} file"
    )


class SizedBuilder(ArtifactBuilder):
    """An ArtifactBuilder whose running size estimate also counts each block's section path and attrs.

    ``ArtifactBuilder.text_chars`` counts a block's text; a deep section path or a table in ``attrs`` repeats text
    in every block, so the formats that stop near ``request.max_output_bytes`` (pdf, docx, pptx) measure those too.
    """

    def add_block(self, type: str, text: str, **kwargs: Any) -> str:
        block_id = super().add_block(type, text, **kwargs)
        block = self.blocks[-1]
        extra = 48 + sum(len(p) + 4 for p in block["section_path"])
        if "attrs" in block:
            extra += len(orjson.dumps(block["attrs"]))
        if block["locator"]:
            extra += 24 * len(block["locator"])
        self.text_chars += extra
        return block_id
