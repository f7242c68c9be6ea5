"""Opening zip-based office files (docx, pptx, xlsx) without trusting them.

Sizes and compression ratios are checked from the central directory before anything is inflated, and every member
is read through ``read_member`` which stops at the declared size, so a zip bomb costs a few bytes of reading and ends
in ``resource_limit``. Encrypted OOXML (an OLE compound file, not a zip) is ``corrupt`` with a message that says so,
and so is a package with two equivalent part names (OPC names compare case-insensitively). docx, pptx and xlsx all
open their package through ``with_package``, so each hostile package gets one answer whatever its format.
``refuse_member_dtd`` checks a part for a DTD (``safe_xml``) without inflating more than its prolog: xlsx checks every
XML part on opening, since calamine reads parts itself; docx and pptx parse every part through ``safe_xml.parse``.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from typing import TypeVar

from extract_fn.formats import safe_xml
from extract_fn.limits import LIMITS, Limits
from shared.contract import ErrorCode, ExtractionError

OLE_MAGIC = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"


def open_package(data: bytes, kind: str, limits: Limits = LIMITS) -> zipfile.ZipFile:
    """Open an OOXML package of ``kind`` ("docx", "pptx", "xlsx"), or raise the contract's error."""
    if data.startswith(OLE_MAGIC):
        raise ExtractionError(
            ErrorCode.CORRUPT,
            f"the {kind} file is encrypted (password-protected); remove the password and send it again",
        )
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ExtractionError(ErrorCode.CORRUPT, f"the {kind} file is not a readable zip package: {exc}") from None
    if not infos:
        raise ExtractionError(ErrorCode.CORRUPT, f"the {kind} file is an empty zip archive with no parts")
    if len(infos) > limits.zip_max_members:
        raise ExtractionError(
            ErrorCode.RESOURCE_LIMIT,
            f"the {kind} package has {len(infos)} parts, over the limit of {limits.zip_max_members}",
        )
    total = 0
    seen: set[str] = set()  # OPC part names compare case-insensitively (ECMA-376 Part 2: no two may be equivalent)
    for info in infos:
        folded = part_name(info.filename).lower()
        if folded in seen:
            raise ExtractionError(
                ErrorCode.CORRUPT,
                f"the {kind} package holds two parts named {part_name(info.filename)!r}; refusing an ambiguous package",
            )
        seen.add(folded)
        if info.flag_bits & 0x1:
            raise ExtractionError(ErrorCode.CORRUPT, f"the {kind} package has an encrypted part ({info.filename})")
        total += info.file_size
        if info.file_size > limits.zip_max_member_uncompressed:
            raise ExtractionError(
                ErrorCode.RESOURCE_LIMIT,
                f"part {info.filename} of the {kind} file inflates to {info.file_size} bytes, over the limit",
            )
        if info.file_size > limits.zip_ratio_floor and info.file_size > limits.zip_max_ratio * max(
            info.compress_size, 1
        ):
            raise ExtractionError(
                ErrorCode.RESOURCE_LIMIT,
                f"part {info.filename} of the {kind} file has a compression ratio over {limits.zip_max_ratio:.0f}:1 "
                "(a zip bomb?)",
            )
    if total > limits.zip_max_total_uncompressed:
        raise ExtractionError(ErrorCode.RESOURCE_LIMIT, f"the {kind} package inflates to {total} bytes, over the limit")
    return zf


def part_name(filename: str) -> str:
    """A member's part name: forward slashes, no leading "/" (Windows-written packages use backslashes)."""
    return filename.replace("\\", "/").lstrip("/")


def is_xml_name(filename: str) -> bool:
    return filename.lower().endswith((".xml", ".rels"))


def refuse_member_dtd(zf: zipfile.ZipFile, info: zipfile.ZipInfo, kind: str) -> None:
    """``corrupt`` for a member that declares a DTD (``safe_xml.refuse_dtd``), inflating no more than its prolog."""
    part = part_name(info.filename)
    try:
        with zf.open(info) as fh:
            safe_xml.refuse_dtd(fh, part, kind)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
        raise ExtractionError(ErrorCode.CORRUPT, f"part {part} of the {kind} file cannot be read: {exc}") from None


def read_member(zf: zipfile.ZipFile, name: str, kind: str) -> bytes:
    """A part's bytes, read no further than its declared size (a lying header cannot inflate more)."""
    try:
        info = zf.getinfo(name)
    except KeyError:
        raise ExtractionError(ErrorCode.CORRUPT, f"the {kind} package has no part {name}") from None
    try:
        with zf.open(info) as fh:
            data = fh.read(info.file_size + 1)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError) as exc:
        raise ExtractionError(ErrorCode.CORRUPT, f"part {name} of the {kind} file cannot be read: {exc}") from None
    if len(data) > info.file_size:
        raise ExtractionError(ErrorCode.CORRUPT, f"part {name} of the {kind} file is longer than its header says")
    return data


def has_member(zf: zipfile.ZipFile, name: str) -> bool:
    try:
        zf.getinfo(name)
    except KeyError:
        return False
    return True


T = TypeVar("T")


def with_package(data: bytes, kind: str, read: Callable[[zipfile.ZipFile], T], limits: Limits = LIMITS) -> T:
    """Open the package safely, run ``read`` on it, and turn a damaged archive or too-deep content into ``corrupt``."""
    zf = open_package(data, kind, limits)
    try:
        return read(zf)
    except (zipfile.BadZipFile, KeyError, EOFError, OSError) as exc:
        raise ExtractionError(ErrorCode.CORRUPT, f"the {kind} package cannot be read: {exc}") from None
    except RecursionError:
        raise ExtractionError(ErrorCode.CORRUPT, f"the {kind} file nests its content too deeply to read") from None
    finally:
        zf.close()
