"""The decoders pdfium runs a stream's filters through, streamed, for the stream check (``pdf_streams``).

pdfium decodes each filter of a stream's chain whole before the next (``PDF_DataDecode``): a 4 KB content stream
under ``[/FlateDecode /FlateDecode]`` inflates to 2 MB and then to 2 GiB, and an LZW stream of 900 KB decodes to
2.3 GB; each aborted a worker (SIGABRT) before the check read more than the first layer. Here each layer is a
generator over the previous one's chunks, so the chain's output is measured without holding it.

Each decoder follows pdfium's own where the size of the output depends on it (``fpdf_parser_decode.cpp``,
``flatemodule.cpp``): LZW's code widths with EarlyChange, its table of 4,094 codes and its stop at an out-of-table
code; RunLength's refusal of an output of 20 MiB or more (pdfium then decodes nothing); ASCIIHex skipping any
non-hex byte and ending at ``>``; ASCII85's ``z`` and its end at the first byte outside ``!``-``u``. Predictors
(``/DecodeParms /Predictor``) never make the output larger, and are not applied.
"""

from __future__ import annotations

import binascii
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

FLATE: Final = "flate"
LZW: Final = "lzw"
HEX: Final = "hex"
A85: Final = "a85"
RUN_LENGTH: Final = "run_length"
# A filter's names as pdfium matches them (after "#xx" escapes are read).
NAMES: Final = {
    b"/FlateDecode": FLATE,
    b"/Fl": FLATE,
    b"/LZWDecode": LZW,
    b"/LZW": LZW,
    b"/ASCIIHexDecode": HEX,
    b"/AHx": HEX,
    b"/ASCII85Decode": A85,
    b"/A85": A85,
    b"/RunLengthDecode": RUN_LENGTH,
    b"/RL": RUN_LENGTH,
}
# The most each filter writes per byte it reads: deflate 258 bytes per 2 bits; an LZW code of 9 bits at most the
# 4,000 bytes of pdfium's decode stack; ASCII85's "z" four zero bytes; a RunLength pair 128 bytes.
EXPANSION: Final = {FLATE: 1032.0, LZW: 4000 * 8 / 9, HEX: 0.5, A85: 4.0, RUN_LENGTH: 64.0}
RUN_LENGTH_MAX_OUTPUT: Final = 20 * 1024 * 1024  # pdfium's kMaxStreamSize: a longer output is not decoded at all
_LZW_TABLE: Final = 4094  # codes pdfium's table holds (258 of them implied), EarlyChange counted
_LZW_WIDTHS: Final = {512 - 258: 10, 1024 - 258: 11, 2048 - 258: 12}  # table size (+ early) -> code width
_BYTES: Final = tuple(bytes((i,)) for i in range(256))
_NOT_HEX: Final = bytes(b for b in range(256) if b not in b"0123456789abcdefABCDEF")
_A85_SPACE: Final = b" \t\r\n"
_A85_END: Final = re.compile(rb"[^!-uz]")  # where pdfium stops reading ASCII85 (spaces are taken out first)


@dataclass(slots=True)
class Meter:
    """The stream's own bytes the first layer has consumed so far (for the inflation ratio)."""

    consumed: int = 0


class LayerTooLarge(Exception):
    """A layer before the last wrote more than the chain's ``max_layer_bytes`` (pdfium holds each layer whole)."""


def chain(
    layers: list[str],
    source: Iterator[bytes],
    meter: Meter,
    *,
    out_chunk: int,
    max_layer_bytes: int,
    early_change: bool = True,
) -> Iterator[bytes]:
    """The decoded stream, ``out_chunk`` bytes at a time or less: ``source`` through each of ``layers`` in order.
    Raises ``LayerTooLarge`` when a layer before the last passes ``max_layer_bytes`` (the caller bounds the last)."""
    stream = source
    for index, layer in enumerate(layers):
        first = meter if index == 0 else None
        if first is not None and layer != FLATE:
            stream = _metered(stream, first)
        if layer == FLATE:
            stream = _inflate(stream, out_chunk, first)
        elif layer == LZW:
            stream = _lzw(stream, out_chunk, early_change)
        elif layer == HEX:
            stream = _hex(stream)
        elif layer == A85:
            stream = _a85(stream)
        else:
            stream = _run_length(stream)
        if index < len(layers) - 1:
            stream = _bounded(stream, max_layer_bytes)
    return stream


def _metered(chunks: Iterator[bytes], meter: Meter) -> Iterator[bytes]:
    for chunk in chunks:
        meter.consumed += len(chunk)
        yield chunk


def _bounded(chunks: Iterator[bytes], limit: int) -> Iterator[bytes]:
    size = 0
    for chunk in chunks:
        size += len(chunk)
        if size > limit:
            raise LayerTooLarge
        yield chunk


def _inflate(chunks: Iterator[bytes], out_chunk: int, meter: Meter | None) -> Iterator[bytes]:
    """Flate, ``out_chunk`` bytes at a time; it stops where the data ends or is damaged (pdfium keeps what it
    inflated). As the first layer it counts the bytes it consumed exactly (zlib leaves some unread)."""
    inflater = zlib.decompressobj()
    fed = 0
    for chunk in chunks:
        fed += len(chunk)
        pending = chunk
        while True:
            try:
                out = inflater.decompress(pending, out_chunk)
            except zlib.error:
                return
            pending = inflater.unconsumed_tail
            if meter is not None:  # past the end, what is left over is in unused_data (and the tail too)
                meter.consumed = fed - len(inflater.unused_data if inflater.eof else pending)
            if out:
                yield out
            if inflater.eof:
                return
            if not pending and not out:
                break


def _lzw(chunks: Iterator[bytes], out_chunk: int, early_change: bool) -> Iterator[bytes]:
    """LZW as pdfium's ``CLZWDecoder`` reads it: codes of 9-12 bits, most significant first, none read from fewer
    bits than it needs; 256 clears the table, 257 ends; a code past the table repeats the last string and its
    first byte; the table stops growing at 4,094 (EarlyChange counted), and a code after one past the table ends
    the data. About 1 µs a code here (a 1 MB stream: ~0.7 s), so only a stream that could pass a limit is read."""
    early = 1 if early_change else 0
    table: list[bytes] = []
    width = 9
    acc = bits = 0
    old_code = -1
    old = b""
    out: list[bytes] = []
    size = 0
    for chunk in chunks:
        for byte in chunk:
            acc = (acc << 8) | byte
            bits += 8
            if bits < width:
                continue
            bits -= width
            code = acc >> bits
            acc &= (1 << bits) - 1
            if code < 256:
                string = _BYTES[code]
                if old_code >= 0:
                    _lzw_add(table, old + string, early)
            elif code == 256:
                table.clear()
                old_code, width = -1, 9
                continue
            elif code == 257 or old_code < 0:
                yield b"".join(out)
                return
            else:
                string = table[code - 258] if code - 258 < len(table) else old + old[:1]
                if old_code >= 258 and old_code - 258 >= len(table):
                    out.append(string)
                    yield b"".join(out)
                    return
                _lzw_add(table, old + string[:1], early)
            width = _LZW_WIDTHS.get(len(table) + early, width)
            old_code, old = code, string
            out.append(string)
            size += len(string)
            if size >= out_chunk:
                yield b"".join(out)
                out, size = [], 0
    if out:
        yield b"".join(out)


def _lzw_add(table: list[bytes], string: bytes, early: int) -> None:
    if len(table) + early < _LZW_TABLE:
        table.append(string)


def _run_length(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """RunLength: a length byte under 128 copies that many bytes plus one, over 128 repeats the next byte 257 minus
    it times, 128 ends. pdfium refuses an output of ``RUN_LENGTH_MAX_OUTPUT`` or more: the output stops there."""
    buffer = b""
    total = 0
    for chunk in chunks:
        buffer += chunk
        out: list[bytes] = []
        at, end = 0, len(buffer)
        while at < end:
            length = buffer[at]
            if length == 128:
                yield b"".join(out)
                return
            if length < 128:
                if at + length + 2 > end:
                    break
                out.append(buffer[at + 1 : at + length + 2])
                total += length + 1
                at += length + 2
            else:
                if at + 1 >= end:
                    break
                out.append(_BYTES[buffer[at + 1]] * (257 - length))
                total += 257 - length
                at += 2
            if total >= RUN_LENGTH_MAX_OUTPUT:
                yield b"".join(out)
                return
        buffer = buffer[at:]
        yield b"".join(out)
    if buffer:  # pdfium pads a cut-off run with zeros
        length = buffer[0]
        yield bytes(length + 1 if length < 128 else 257 - length)


def _hex(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """ASCIIHex: every byte that is not a hex digit skipped, ``>`` the end, an odd last digit followed by 0."""
    carry = b""
    for chunk in chunks:
        end = chunk.find(b">")
        digits = carry + (chunk if end < 0 else chunk[:end]).translate(None, _NOT_HEX)
        carry = b""
        if len(digits) % 2:
            digits, carry = digits[:-1], digits[-1:]
        yield binascii.unhexlify(digits)
        if end >= 0:
            break
    if carry:
        yield binascii.unhexlify(carry + b"0")


def _a85(chunks: Iterator[bytes]) -> Iterator[bytes]:
    """ASCII85 as pdfium reads it: spaces, tabs and line ends skipped, ``z`` four zero bytes (dropping a group begun
    before it), the end at the first byte outside ``!``-``u`` (``~>``; an opening ``<~`` too: pdfium reads the
    ``<`` as a digit and stops at the ``~``), each group's value taken modulo 2^32."""
    carry = b""
    for chunk in chunks:
        text = chunk.translate(None, _A85_SPACE)
        end = _A85_END.search(text)
        stop = end.start() if end is not None else -1
        text = carry + (text if stop < 0 else text[:stop])
        out: list[bytes] = []
        pieces = text.split(b"z")
        for k, piece in enumerate(pieces):
            if k:
                out.append(b"\0\0\0\0")
            full = len(piece) // 5 * 5
            out.append(_a85_groups(piece[:full]))
            carry = piece[full:]
        yield b"".join(out)
        if stop >= 0:
            break
    if len(carry) > 1:
        yield _a85_groups(carry + b"u" * (5 - len(carry)))[: len(carry) - 1]


def _a85_groups(text: bytes) -> bytes:
    """Whole groups of five ASCII85 digits (no ``z``) as their four bytes each."""
    values = bytearray()
    for at in range(0, len(text), 5):
        value = 0
        for c in text[at : at + 5]:
            value = value * 85 + c - 33
        values += (value & 0xFFFFFFFF).to_bytes(4, "big")
    return bytes(values)
