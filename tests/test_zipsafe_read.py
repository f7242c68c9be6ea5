"""``zipsafe.read_member`` reads a sound member straight from the package's bytes (``_inflate_in_memory``) and leaves
anything unusual to ``zipfile``: the bytes are the ones ``zipfile`` reads, and a damaged or lying member gets the
answer it got before."""

from __future__ import annotations

import io
import struct
import zipfile
import zlib
from pathlib import Path

import pytest

from extract_fn.formats import zipsafe
from shared.contract import ErrorCode, ExtractionError

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus"
PACKAGES = sorted(p for d in ("docx", "pptx") for p in (CORPUS / d).glob(f"*.{d}"))


def _package(parts: dict[str, bytes], method: int = zipfile.ZIP_DEFLATED) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", method) as zf:
        for name, data in parts.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _zipfile_answer(data: bytes, name: str) -> bytes | str:
    """What ``read_member`` answered before the in-memory path: through ``zipfile`` only."""
    zf = zipfile.ZipFile(io.BytesIO(data))
    info = zf.getinfo(name)
    try:
        with zf.open(info) as fh:
            out = fh.read(info.file_size + 1)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, zlib.error) as exc:
        return f"corrupt: part {name} of the docx file cannot be read: {exc}"
    if len(out) > info.file_size:
        return f"corrupt: part {name} of the docx file is longer than its header says"
    return out


def _answer(data: bytes, name: str) -> bytes | str:
    zf = zipfile.ZipFile(io.BytesIO(data))
    try:
        return zipsafe.read_member(zf, name, "docx")
    except ExtractionError as exc:
        return f"{exc.code.value}: {exc.message}"


def test_the_corpus_packages_read_in_memory_as_zipfile_reads_them() -> None:
    assert len(PACKAGES) >= 20
    members = 0
    for path in PACKAGES:
        data = path.read_bytes()
        try:
            zf = zipfile.ZipFile(io.BytesIO(data))
        except zipfile.BadZipFile:
            continue  # the corpus's broken packages: no member to read
        for info in zf.infolist():
            fast = zipsafe._inflate_in_memory(zf, info)
            assert fast is not None, (path.name, info.filename)  # a sound member takes the in-memory path
            assert fast == zf.read(info), (path.name, info.filename)
            members += 1
    assert members > 500


@pytest.mark.parametrize("method", [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED])
def test_both_methods_and_an_empty_member(method: int) -> None:
    data = _package({"a.xml": b"<a>" + b"x" * 10_000 + b"</a>", "empty.xml": b""}, method)
    zf = zipfile.ZipFile(io.BytesIO(data))
    for name in ("a.xml", "empty.xml"):
        assert zipsafe._inflate_in_memory(zf, zf.getinfo(name)) == zf.read(name)


def _damaged(kind: str) -> tuple[bytes, str]:
    body = b"<a>" + bytes(range(32, 127)) * 200 + b"</a>"
    stored = bytearray(_package({"word/document.xml": body}, zipfile.ZIP_STORED))
    deflated = bytearray(_package({"word/document.xml": body}))
    name = "word/document.xml"
    if kind == "bad CRC (stored)":
        at = stored.index(b"0123456789")
        stored[at : at + 5] = b"XXXXX"
        return bytes(stored), name
    if kind == "bad CRC (deflated)":
        cd = deflated.index(b"PK\x01\x02")
        crc_at = cd + 16  # the central directory's CRC-32
        crc = struct.unpack_from("<L", deflated, crc_at)[0]
        struct.pack_into("<L", deflated, crc_at, crc ^ 1)
        return bytes(deflated), name
    if kind == "damaged deflate stream":
        start = 30 + len(name)
        deflated[start : start + 8] = b"\xff" * 8
        return bytes(deflated), name
    if kind == "name in the local header differs":
        at = deflated.index(name.encode())  # the local header's copy comes first
        deflated[at : at + 4] = b"WORD"
        return bytes(deflated), name
    if kind == "bad local magic":
        deflated[0:4] = b"PK\x09\x09"
        return bytes(deflated), name
    if kind == "header says shorter (stored)":
        cd = stored.index(b"PK\x01\x02")
        size = struct.unpack_from("<L", stored, cd + 24)[0]
        struct.pack_into("<L", stored, cd + 24, size - 10)  # uncompressed size, central directory
        return bytes(stored), name
    if kind == "header says shorter (deflated)":
        cd = deflated.index(b"PK\x01\x02")
        size = struct.unpack_from("<L", deflated, cd + 24)[0]
        struct.pack_into("<L", deflated, cd + 24, size - 10)
        return bytes(deflated), name
    if kind == "header says longer (deflated)":
        cd = deflated.index(b"PK\x01\x02")
        size = struct.unpack_from("<L", deflated, cd + 24)[0]
        struct.pack_into("<L", deflated, cd + 24, size + 10)
        return bytes(deflated), name
    raise AssertionError(kind)


DAMAGE = [
    "bad CRC (stored)",
    "bad CRC (deflated)",
    "damaged deflate stream",
    "name in the local header differs",
    "bad local magic",
    "header says shorter (stored)",
    "header says shorter (deflated)",
    "header says longer (deflated)",
]


@pytest.mark.parametrize("kind", DAMAGE)
def test_a_damaged_member_is_left_to_zipfile_and_answered_as_before(kind: str) -> None:
    data, name = _damaged(kind)
    zf = zipfile.ZipFile(io.BytesIO(data))
    assert zipsafe._inflate_in_memory(zf, zf.getinfo(name)) is None
    before = _zipfile_answer(data, name)
    # each damage is an error, but a longer declared size: zipfile reads the shorter member, whose CRC holds
    assert isinstance(before, bytes if kind == "header says longer (deflated)" else str)
    assert _answer(data, name) == before


def test_a_damaged_deflate_stream_is_corrupt_with_what_zlib_said() -> None:
    """zlib.error is no OSError or ValueError: it escaped read_member (the worker's 'parser failed' answer)."""
    data, name = _damaged("damaged deflate stream")
    zlib_said = "Error -3 while decompressing data: invalid block type"
    assert _answer(data, name) == f"corrupt: part {name} of the docx file cannot be read: {zlib_said}"


def test_a_closed_package_is_left_to_zipfile() -> None:
    zf = zipfile.ZipFile(io.BytesIO(_package({"a.xml": b"<a/>"})))
    info = zf.getinfo("a.xml")
    zf.close()
    assert zipsafe._inflate_in_memory(zf, info) is None
    with pytest.raises(ExtractionError) as err:
        zipsafe.read_member(zf, "a.xml", "docx")
    assert err.value.code == ErrorCode.CORRUPT
