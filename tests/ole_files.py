"""Minimal OLE compound files (MS-CFB version 3: 512-byte sectors, every stream in regular sectors) for the tests of
what a compound file sent as docx, pptx or xlsx is: legacy Office files and encrypted OOXML."""

from __future__ import annotations

import struct

SECTOR = 512
_FREE, _END, _FAT = 0xFFFFFFFF, 0xFFFFFFFE, 0xFFFFFFFD
_MIN_STREAM = 4096  # smaller streams live in the mini stream; padding each to this keeps them in regular sectors


def compound_file(streams: list[tuple[str, bytes]]) -> bytes:
    """A compound file whose root storage holds ``streams`` (name, data), as a chain of right siblings."""
    padded = [(name, data.ljust(_MIN_STREAM, b"\0")) for name, data in streams]
    dir_sectors = -(-(1 + len(padded)) * 128 // SECTOR)
    data_sectors = [-(-len(data) // SECTOR) for _, data in padded]
    fat_sectors = 1
    while fat_sectors + dir_sectors + sum(data_sectors) > fat_sectors * SECTOR // 4:
        fat_sectors += 1
    fat = [_FAT] * fat_sectors
    dir_start = len(fat)
    fat += [dir_start + i + 1 for i in range(dir_sectors - 1)] + [_END]
    starts = []
    for count in data_sectors:
        starts.append(len(fat))
        fat += [len(fat) + i + 1 for i in range(count - 1)] + [_END]
    fat += [_FREE] * (fat_sectors * SECTOR // 4 - len(fat))
    header = bytearray(SECTOR)
    header[:8] = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
    struct.pack_into("<HHHHH", header, 24, 0x3E, 3, 0xFFFE, 9, 6)
    struct.pack_into("<IIIIIIIII", header, 40, 0, fat_sectors, dir_start, 0, _MIN_STREAM, _END, 0, _END, 0)
    struct.pack_into("<109I", header, 76, *range(fat_sectors), *[_FREE] * (109 - fat_sectors))
    entries = [_entry("Root Entry", 5, 1 if padded else _FREE, _FREE, _END, 0)]
    for i, (name, data) in enumerate(padded):
        right = i + 2 if i + 1 < len(padded) else _FREE
        entries.append(_entry(name, 2, _FREE, right, starts[i], len(data)))
    directory = b"".join(entries).ljust(dir_sectors * SECTOR, b"\0")
    body = b"".join(data.ljust(-(-len(data) // SECTOR) * SECTOR, b"\0") for _, data in padded)
    return bytes(header) + struct.pack(f"<{len(fat)}I", *fat) + directory + body


def _entry(name: str, kind: int, child: int, right: int, start: int, size: int) -> bytes:
    entry = bytearray(128)
    raw = name.encode("utf-16-le") + b"\0\0"
    entry[: len(raw)] = raw
    struct.pack_into("<HBB", entry, 64, len(raw), kind, 1)
    struct.pack_into("<III", entry, 68, _FREE, right, child)
    struct.pack_into("<III", entry, 116, start, size, 0)
    return bytes(entry)


def encrypted_ooxml() -> bytes:
    """The shape of a password-protected OOXML file (MS-OFFCRYPTO): a compound file holding EncryptionInfo and
    EncryptedPackage (here without a real key or package)."""
    return compound_file([("EncryptionInfo", b"\x04\x00\x04\x00"), ("EncryptedPackage", b"\x10" + b"\0" * 7)])
