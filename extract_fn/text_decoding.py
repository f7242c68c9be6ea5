"""Turning a text file's bytes into text, by the contract's rules.

Order: a byte-order mark wins; then the format's own declaration (HTML meta charset, XML declaration), passed in by
the format module; then the caller's ``encoding`` option; else strict UTF-8. What does not decode is the ``encoding``
error, naming the byte offset. The BOM is not part of the decoded text, so character offsets start after it.

A declaration read by a format whose labels are WHATWG's (HTML: ``decode_text(..., whatwg=True)``) decodes as the
WHATWG Encoding Standard does where it differs from Python's codec: its windows-1252 (``iso-8859-1``, ``ascii``,
``windows-1252`` and the other labels a browser reads as it) maps the five bytes Python's cp1252 leaves undefined
(0x81, 0x8D, 0x8F, 0x90, 0x9D) to the C1 controls of the same value, U+0081 and so on, so it decodes every byte.

The one wide-text policy (``refuse_wide_text``): text read as UTF-8 by default (no BOM, no declaration, no option)
that is really UTF-16 or UTF-32 without a byte-order mark is the ``encoding`` error. Every format that reads text
applies it (text, markdown, html, csv, sql here; toml, which is UTF-8 by definition, on its own decoding).
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass
from typing import Final

from shared.contract import ErrorCode, ExtractionError

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),  # before UTF-16 LE: it starts with the same two bytes
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)


@dataclass(frozen=True, slots=True)
class Decoded:
    text: str
    encoding: str  # the codec used (Python's canonical name)
    source: str  # "bom", "declared", "option" or "default"


# Python codecs that turn bytes into str but are no character set a file is written in: ``undefined`` fails on every
# input (with a bare UnicodeError), the escape codecs read backslash escapes, idna and punycode read domain labels.
NOT_FILE_CHARSETS: Final = frozenset({"undefined", "unicode-escape", "raw-unicode-escape", "idna", "punycode"})


def known_codec(name: str) -> str | None:
    """Python's canonical name of a text codec a file can be written in, or None when there is no such codec."""
    try:
        info = codecs.lookup(name)
    except (LookupError, ValueError):
        return None
    if not getattr(info, "_is_text_encoding", True):
        return None
    if info.name.replace("_", "-") in NOT_FILE_CHARSETS:
        return None
    return info.name


# WHATWG's windows-1252 index: cp1252 with its five undefined bytes read as the C1 controls of the same value.
_CP1252_UNDEFINED: Final = frozenset(b"\x81\x8d\x8f\x90\x9d")
_WHATWG_C1: Final = "loom-whatwg-windows-1252"  # the error handler that reads them so
_WHATWG_ERRORS: Final = {"cp1252": _WHATWG_C1}  # Python codec -> error handler making it the WHATWG decoder


def _whatwg_c1(exc: UnicodeError) -> tuple[str, int]:
    """Read one of cp1252's undefined bytes as WHATWG's windows-1252 does; any other error stays an error."""
    if isinstance(exc, UnicodeDecodeError) and exc.end == exc.start + 1 and exc.object[exc.start] in _CP1252_UNDEFINED:
        return chr(exc.object[exc.start]), exc.end
    raise exc


codecs.register_error(_WHATWG_C1, _whatwg_c1)


def sniff_bom(data: bytes) -> tuple[str, int] | None:
    for bom, enc in _BOMS:
        if data.startswith(bom):
            return enc, len(bom)
    return None


def decode_text(
    data: bytes, *, option: str | None = None, declared: str | None = None, whatwg: bool = False
) -> Decoded:
    """The text by the module's rules; ``whatwg``: ``declared`` is the codec of a WHATWG label, decoded as the
    Encoding Standard decodes it (see the module doc)."""
    bom = sniff_bom(data)
    if bom is not None:
        bom_enc, skip = bom
        return Decoded(_decode(data[skip:], bom_enc, offset=skip, source="the byte-order mark"), bom_enc, "bom")
    if declared:
        enc = known_codec(declared)
        if enc is not None:
            errors = _WHATWG_ERRORS.get(enc, "strict") if whatwg else "strict"
            text = _decode(data, enc, source=f"the file's declared charset {declared!r}", errors=errors)
            return Decoded(text, enc, "declared")
    if option:
        enc = known_codec(option)
        if enc is None:  # the service checks options before this; a direct caller gets the same code
            raise ExtractionError(ErrorCode.INVALID_OPTION, f"encoding {option!r} is not a known codec")
        return Decoded(_decode(data, enc, source=f"the encoding option {option!r}"), enc, "option")
    return Decoded(_decode(data, "utf-8", source="UTF-8 (no encoding option was given)"), "utf-8", "default")


ENCODING_OPTION_ADVICE: Final = "send the right codec in the encoding option (encoding={codec})"


def refuse_wide_text(data: bytes, source: str, sample: int, advice: str = ENCODING_OPTION_ADVICE) -> None:
    """Raise the ``encoding`` error when UTF-8 by default read what is really UTF-16 or UTF-32 without a BOM.

    ASCII-range UTF-16 is valid UTF-8 (every other byte a NUL), so strict decoding alone lets it through. Applies
    only to text decoded by the default (``source == "default"``): no BOM, no declaration, no ``encoding`` option.
    The sign, in the first ``sample`` bytes (``limits.wide_text_sample``): NULs in one byte position of each 2 (or
    4) and almost none in the others; a body of nothing but NULs is not this (it is left to the format, and decodes
    as text). ``advice`` ends the message, ``{codec}`` naming the codec the bytes look like.
    """
    if source != "default" or b"\x00" not in data[:sample]:
        return
    sample_bytes = data[:sample]
    for width, codec in ((4, "utf-32"), (2, "utf-16")):
        if len(sample_bytes) < width * 2:
            continue
        lanes = [sample_bytes[i::width] for i in range(width)]
        nul = [lane.count(0) / len(lane) for lane in lanes]
        text_lanes = [i for i, share in enumerate(nul) if share < 0.05]
        if len(text_lanes) != 1 or any(share < 0.5 for i, share in enumerate(nul) if i != text_lanes[0]):
            continue
        endian = "le" if text_lanes[0] == 0 else "be" if text_lanes[0] == width - 1 else None
        if endian is None:
            continue
        offset = data.index(b"\x00")
        nth = _ORDINALS.get(width, f"{width}th")
        raise ExtractionError(
            ErrorCode.ENCODING,
            f"the text does not decode as UTF-8 (no encoding option was given): NUL bytes from byte offset {offset} "
            f"at every {nth} position look like {codec.upper()}-{endian.upper()} without a byte-order mark; "
            + advice.format(codec=f"{codec}-{endian}"),
        )


_ORDINALS = {2: "second", 4: "fourth"}  # the code-unit widths of UTF-16 and UTF-32


def _decode(data: bytes, enc: str, *, offset: int = 0, source: str, errors: str = "strict") -> str:
    try:
        return codecs.decode(data, enc, errors)
    except UnicodeDecodeError as exc:
        pos = exc.start + offset
        raise ExtractionError(
            ErrorCode.ENCODING,
            f"the text does not decode as {source}: invalid bytes at byte offset {pos}; "
            f"send the right codec in the encoding option",
        ) from None
    except UnicodeError as exc:  # a codec that fails without saying where
        raise ExtractionError(
            ErrorCode.ENCODING,
            f"the text does not decode as {source} ({exc}); send the right codec in the encoding option",
        ) from None
