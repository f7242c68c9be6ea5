"""The stream check's decoders (``extract_fn.formats.pdf_filters``) against independent ones: pypdf's filters and
the standard library, on valid data fed whole and a byte at a time (each decoder carries state across chunks)."""

from __future__ import annotations

import base64
import binascii
import random
import zlib
from collections.abc import Iterator

import pytest
from pypdf.filters import ASCII85Decode, ASCIIHexDecode, LZWDecode, RunLengthDecode

from extract_fn.formats import pdf_filters as f
from tests import hostile_inputs as hi


def _text(rng: random.Random, size: int) -> bytes:
    words = [bytes(rng.choice(b"abcdefgh ()Tj") for _ in range(rng.randint(1, 7))) for _ in range(60)]
    return b"".join(rng.choice(words) for _ in range(size))[:size]


def _decode(layers: list[str], data: bytes, piece: int, *, early_change: bool = True) -> bytes:
    source: Iterator[bytes] = (data[at : at + piece] for at in range(0, len(data), piece))
    chain = f.chain(layers, source, f.Meter(), out_chunk=1 << 16, max_layer_bytes=1 << 30, early_change=early_change)
    return b"".join(chain)


SIZES = [0, 1, 2, 255, 4_000, 70_000]


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("piece", [1, 1 << 16])
def test_lzw_decodes_what_pypdf_decodes(size: int, piece: int) -> None:
    data = _text(random.Random(size), size)
    encoded = hi.lzw_encode(data)
    assert LZWDecode.decode(encoded) == data  # the test's encoder is right
    assert _decode([f.LZW], encoded, piece) == data


def test_lzw_without_early_change() -> None:
    data = _text(random.Random(5), 20_000)
    assert _decode([f.LZW], hi.lzw_encode(data, early_change=False), 1 << 16, early_change=False) == data


def test_lzw_keeps_reading_a_full_table_and_counts_its_longest_string() -> None:
    """The bomb's shape: codes growing one string to the table's end, then that code again and again; each repeat
    writes the 3,837 bytes pdfium's table holds for it (the sum of 1 to 3,837 before)."""
    out = _decode([f.LZW], hi.lzw_bomb(10), 1 << 16)
    assert out == b"A" * (3837 * 3838 // 2 + 10 * 3837)


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("piece", [1, 1 << 16])
def test_run_length_decodes_what_pypdf_decodes(size: int, piece: int) -> None:
    rng = random.Random(size)
    encoded = bytearray()
    while len(encoded) < size:
        if rng.random() < 0.5:
            run = bytes(rng.randrange(256) for _ in range(rng.randint(1, 128)))
            encoded += bytes((len(run) - 1,)) + run
        else:
            encoded += bytes((rng.randint(129, 255), rng.randrange(256)))
    encoded += b"\x80"
    assert _decode([f.RUN_LENGTH], bytes(encoded), piece) == RunLengthDecode.decode(bytes(encoded))


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("piece", [1, 1 << 16])
def test_ascii_hex_decodes_what_pypdf_decodes(size: int, piece: int) -> None:
    data = bytes(random.Random(size).randrange(256) for _ in range(size))
    encoded = b" \n".join(binascii.hexlify(data)[at : at + 61] for at in range(0, 2 * size, 61)) + b"> trailing"
    assert _decode([f.HEX], encoded, piece) == data == ASCIIHexDecode.decode(encoded)


def test_ascii_hex_with_an_odd_digit_ends_in_a_zero_nibble() -> None:
    assert _decode([f.HEX], b"4142 4>", 1) == b"AB@"


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("piece", [1, 1 << 16])
def test_ascii85_decodes_what_pypdf_decodes(size: int, piece: int) -> None:
    rng = random.Random(size)
    data = bytes(0 if rng.random() < 0.3 else rng.randrange(256) for _ in range(size)) + b"\0\0\0\0" * 3
    text = base64.a85encode(data)  # "z" for each group of four zero bytes
    encoded = b"\r\n".join(text[at : at + 75] for at in range(0, len(text), 75)) + b"~>"
    assert _decode([f.A85], encoded, piece) == data == ASCII85Decode.decode(encoded)


def test_a_chain_decodes_its_layers_in_order() -> None:
    data = _text(random.Random(9), 50_000)
    encoded = hi.run_length_encode(binascii.hexlify(hi.a85(zlib.compress(hi.lzw_encode(data)))))
    assert _decode([f.RUN_LENGTH, f.HEX, f.A85, f.FLATE, f.LZW], encoded, 4096) == data


def test_a_layer_before_the_last_that_writes_too_much_stops_the_chain() -> None:
    """pdfium holds each layer's output whole: the chain bounds all but the last (its caller bounds that one)."""
    twice = zlib.compress(zlib.compress(b"\0" * 3_000_000))
    chain = f.chain([f.FLATE, f.FLATE], iter([twice]), f.Meter(), out_chunk=1 << 16, max_layer_bytes=1000)
    with pytest.raises(f.LayerTooLarge):
        b"".join(chain)


def test_the_first_flate_layer_meters_the_bytes_it_consumed() -> None:
    deflated = zlib.compress(b"x" * 100_000)
    meter = f.Meter()
    chain = f.chain([f.FLATE], iter([deflated + b"\nendstream junk"]), meter, out_chunk=1 << 16, max_layer_bytes=1)
    assert b"".join(chain) == b"x" * 100_000
    assert meter.consumed == len(deflated)
