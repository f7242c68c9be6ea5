"""Opening zip-based office files (docx, pptx, xlsx) without trusting them.

Sizes and compression ratios are checked from the central directory before anything is inflated, and every member
is read through ``read_member`` which stops at the declared size, so a zip bomb costs a few bytes of reading and ends
in ``resource_limit``. Encrypted OOXML (an OLE compound file, not a zip) is ``corrupt`` with a message that says so
(any other compound file, a legacy .doc, .xls or .ppt, is ``format_mismatch`` naming it: ``sniff.ole_kind``), and so
is a package with two equivalent part names (OPC names compare case-insensitively). docx, pptx and xlsx all
open their package through ``with_package``, so each hostile package gets one answer whatever its format.
A sound stored or deflated member is read straight from the package's bytes (``_inflate_in_memory``: the bytes
``zipfile`` would give, at a fraction of its per-member cost); any other goes through ``zipfile``.
``refuse_member_dtd`` checks a part for a DTD (``safe_xml``) without inflating more than its prolog: xlsx checks every
XML part on opening, since calamine reads parts itself; docx and pptx parse every part through ``safe_xml.parse``.
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from collections.abc import Callable
from typing import TypeVar

from extract_fn.formats import safe_xml
from extract_fn.limits import LIMITS, Limits
from extract_fn.sniff import OLE_MAGIC, mismatch, ole_kind
from shared.contract import ErrorCode, ExtractionError

# What reading a member can raise on a damaged package (zlib.error: a deflate stream that is not one)
_READ_ERRORS = (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, zlib.error)


def open_package(data: bytes, kind: str, limits: Limits = LIMITS) -> zipfile.ZipFile:
    """Open an OOXML package of ``kind`` ("docx", "pptx", "xlsx"), or raise the contract's error."""
    if data.startswith(OLE_MAGIC):
        ole = ole_kind(data)
        if ole != "ole_encrypted":  # a legacy Office file (.doc, .xls, .ppt) or another compound file
            raise mismatch(ole, kind)
        raise ExtractionError(
            ErrorCode.CORRUPT,
            f"the {kind} file is encrypted (password-protected); remove the password and send it again",
        )
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise ExtractionError(ErrorCode.CORRUPT, f"the {kind} file is not a readable zip package: {exc}") from None
    except NotImplementedError as exc:  # a member says it needs a later zip version than zipfile reads
        raise ExtractionError(
            ErrorCode.CORRUPT,
            f"the {kind} package needs a zip feature this reader does not have ({exc}); save it again as a plain "
            f".{kind}",
        ) from None
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
    except _READ_ERRORS as exc:
        raise ExtractionError(ErrorCode.CORRUPT, f"part {part} of the {kind} file cannot be read: {exc}") from None


_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zipfile's structFileHeader: 30 bytes
_LOCAL_MAGIC = b"PK\x03\x04"
_UTF8_NAME = 0x800
_UNUSUAL_FLAGS = 0x1 | 0x20 | 0x40  # encrypted, compressed patched data, strong encryption: zipfile's answers


def _inflate_in_memory(zf: zipfile.ZipFile, info: zipfile.ZipInfo) -> bytes | None:
    """The member's bytes read straight from the package's buffer, or None to let ``zipfile`` read it.

    ``zipfile``'s reader costs ~0.1 ms a member in Python (a deck is hundreds of small parts). This path takes only
    a member ``zipfile`` would read without complaint, and returns exactly the bytes it would: stored or deflated,
    its local header's magic and name as ``zipfile`` checks them, inside the package (and inside ``zipfile``'s own
    overlap bound where the interpreter has one), inflating to its declared size and no further, with the central
    directory's CRC-32. Anything else (damaged, lying, another method) goes the ``zipfile`` way, which raises what it
    raised before."""
    fp = zf.fp
    if fp.__class__ is not io.BytesIO or info.flag_bits & _UNUSUAL_FLAGS or info.compress_type not in (0, 8):
        return None
    data = fp.getvalue()  # the package's own bytes object (a BytesIO made from bytes shares them, unwritten)
    offset = info.header_offset
    header = data[offset : offset + _LOCAL_HEADER.size]
    if len(header) != _LOCAL_HEADER.size:
        return None
    fields = _LOCAL_HEADER.unpack(header)
    if fields[0] != _LOCAL_MAGIC:
        return None
    name_start = offset + _LOCAL_HEADER.size
    raw_name = data[name_start : name_start + fields[10]]
    codec = "utf-8" if fields[3] & _UTF8_NAME else (getattr(zf, "metadata_encoding", None) or "cp437")
    try:
        name = raw_name.decode(codec)
    except UnicodeDecodeError:
        return None
    if name != info.orig_filename:
        return None
    start = name_start + fields[10] + fields[11]
    end = start + info.compress_size
    bound = getattr(info, "_end_offset", None)
    if end > len(data) or (bound is not None and end > bound):
        return None
    raw = memoryview(data)[start:end]
    if info.compress_type == 0:
        out = bytes(raw) if info.compress_size == info.file_size else None
    else:
        inflater = zlib.decompressobj(-15)
        try:
            out = inflater.decompress(raw, info.file_size + 1)
        except zlib.error:
            return None
        if not inflater.eof or inflater.unconsumed_tail or inflater.unused_data or len(out) != info.file_size:
            return None
    if out is None or zlib.crc32(out) != info.CRC:
        return None
    return out


def member_info(zf: zipfile.ZipFile, name: str) -> zipfile.ZipInfo | None:
    """The member a part name names, or None. OPC part names compare case-insensitively (ECMA-376 Part 2 9.1.1.1):
    a relationship naming ``slides/slide1.xml`` finds ``slides/Slide1.xml`` (``open_package`` refuses a package
    with two equivalent names, so the match is one)."""
    try:
        return zf.getinfo(name)
    except KeyError:
        pass
    folded: dict[str, zipfile.ZipInfo] | None = getattr(zf, "_folded_names", None)
    if folded is None:
        folded = {part_name(info.filename).lower(): info for info in zf.infolist()}
        zf._folded_names = folded  # type: ignore[attr-defined]  # the package's own index, built on first miss
    return folded.get(part_name(name).lower())


def read_member(zf: zipfile.ZipFile, name: str, kind: str) -> bytes:
    """A part's bytes, read no further than its declared size (a lying header cannot inflate more)."""
    info = member_info(zf, name)
    if info is None:
        raise ExtractionError(ErrorCode.CORRUPT, f"the {kind} package has no part {name}")
    fast = _inflate_in_memory(zf, info)
    if fast is not None:
        return fast
    try:
        with zf.open(info) as fh:
            data = fh.read(info.file_size + 1)
    except _READ_ERRORS as exc:
        raise ExtractionError(ErrorCode.CORRUPT, f"part {name} of the {kind} file cannot be read: {exc}") from None
    if len(data) > info.file_size:
        raise ExtractionError(ErrorCode.CORRUPT, f"part {name} of the {kind} file is longer than its header says")
    return data


def has_member(zf: zipfile.ZipFile, name: str) -> bool:
    return member_info(zf, name) is not None


T = TypeVar("T")


def with_package(data: bytes, kind: str, read: Callable[[zipfile.ZipFile], T], limits: Limits = LIMITS) -> T:
    """Open the package safely, run ``read`` on it, and turn a damaged archive or too-deep content into ``corrupt``."""
    zf = open_package(data, kind, limits)
    try:
        return read(zf)
    except (zipfile.BadZipFile, KeyError, EOFError, OSError, zlib.error) as exc:
        raise ExtractionError(ErrorCode.CORRUPT, f"the {kind} package cannot be read: {exc}") from None
    except RecursionError:
        raise ExtractionError(ErrorCode.CORRUPT, f"the {kind} file nests its content too deeply to read") from None
    finally:
        zf.close()
