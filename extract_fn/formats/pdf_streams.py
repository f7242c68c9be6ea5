"""A pass over a PDF's compressed streams before pdfium sees the file: inflated sizes and text operators, bounded.

pdfium inflates a page's content stream whole and aborts the process when an allocation fails (a 1 MB file whose
content stream inflates to 1 GiB), and a page of millions of text-showing operators runs the worker out of memory
after many seconds. Streams are never inside object streams, so every one is found by its ``stream`` keyword in the
file's bytes, whatever the xref looks like. Each filtered stream is decoded here through its whole chain
(``pdf_filters``: pdfium decodes each layer whole, so ``[/FlateDecode /FlateDecode]`` or LZW alone can reach
gigabytes from a few KB) piece by piece, nothing kept, until it ends or passes a limit, and its text-showing
operators (``Tj``, ``TJ``, ``'``, ``"``) are counted on the way (an approximation that can only count high: the same
bytes inside a string count too); a stream stored without a filter has its operators counted as it is. The filter is
read as pdfium reads it: a name's "#xx" escapes (/F#6CateDecode is /FlateDecode), a reference (resolved where its
object is not inside an object stream, else tried as Flate), /Crypt skipped, an image filter ending the chain.

Not checked: image streams (a dictionary with ``/Subtype /Image`` and a ``/Width``; pdfium does not decode them to
read text), unless a page's ``/Contents`` or a Type 3 font's ``/CharProcs`` names them (found in the file's bytes
and its object streams: pdfium parses those as content whatever their dictionary says); a chain other than Flate
alone that cannot write more than the ratio floor or 3 bytes per allowed text operator; and encrypted files (their
streams do not decode as they are). What slips through is still contained by the worker (a crash costs one worker
and is remembered by the pool).
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Final

from extract_fn.formats import pdf_filters

# ``stream`` and its end of line; an ``endstream`` match is skipped after the search (a look-behind at the start of
# the pattern keeps the regex engine from searching for the literal: 95 ms against 2.5 ms for 6 MB).
_STREAM: Final = re.compile(rb"stream(?:\r\n|\n|\r)")
_OBJ_WINDOW: Final = 4096  # bytes of an object read where it is looked up (a filter's, a number's)
_DICT_WINDOW: Final = 1 << 20  # bytes before ``stream`` searched for its object's header (rfind: nothing copied)
_OBJ_KEYWORD: Final = re.compile(rb"(?:^|[\s>\]])\d+\s+\d+\s+\Z")  # "N G " right before an "obj" keyword
# The /Filter entry: a name, an array of names, or a reference to either (found as its ``N G obj`` in the file when
# it is not inside an object stream). Names are read as pdfium reads them: "#xx" is an escaped byte.
_FILTER_ITEM: Final = re.compile(rb"/[^\s/\[\]<>(){}%]*|\d+\s+\d+\s+R")
_NAME_ESCAPE: Final = re.compile(rb"#([0-9A-Fa-f]{2})")
_REFERENCE: Final = re.compile(rb"(\d+)\s+(\d+)\s+R")
IMAGE_SUBTYPE: Final = re.compile(rb"/Subtype\s*/Image\b")  # an image XObject's dictionary (here and pdf_forms)
_OBJSTM: Final = re.compile(rb"/Type\s*/ObjStm\b")
_OBJSTM_BYTES: Final = 16 * 1024 * 1024
# /Contents N G R, /Contents [refs], /CharProcs << /name N G R ... >>: what they name is parsed as content.
_CONTENT_REFS: Final = re.compile(rb"/Contents\s*(?:\d+\s+\d+\s+R|\[[^\]]{0,65536}\])|/CharProcs\s*<<[^>]{0,65536}>>")
_REFERENCE_NUMBER: Final = re.compile(rb"(\d+)\s+\d+\s+R")
_OBJ_HEADER: Final = re.compile(rb"(\d+)\s+\d+\s+$")
_ARRAY_OBJECT: Final = re.compile(rb"obj\s*\[")
_WIDTH: Final = re.compile(rb"/Width\s+\d")
_IN_CHUNK: Final = 64 * 1024
_OUT_CHUNK: Final = 4 * 1024 * 1024


@dataclass(frozen=True, slots=True)
class StreamProblem:
    """Why the file is refused: ``message`` says what and the limit."""

    message: str


def streams(data: bytes) -> Iterator[tuple[int, bytes, int]]:
    """Each stream of ``data``: its number (1-based, in file order), its dictionary's bytes and where its data
    starts."""
    number = 0
    for m in _STREAM.finditer(data):
        if data[m.start() - 3 : m.start()] == b"end":
            continue
        number += 1
        yield number, _dictionary(data, m.start()), m.end()


def stored_body(data: bytes, start: int) -> bytes:
    """The data of a stream stored without a filter: up to its ``endstream`` (or the file's end)."""
    end = data.find(b"endstream", start)
    return data[start : end if end >= 0 else len(data)]


def _dictionary(data: bytes, start: int) -> bytes:
    """The stream's dictionary: the bytes from its object's ``N G obj`` (the last before ``start`` whose number and
    generation stand before it, so a name ``/obj`` in the dictionary does not cut it) to ``start``, within
    ``_DICT_WINDOW`` (else the last 4 KB)."""
    low = max(0, start - _DICT_WINDOW)
    at = start
    while (at := data.rfind(b"obj", low, at)) >= 0:
        if _OBJ_KEYWORD.search(data, max(0, at - 32), at) is not None:
            return data[at:start]
    return data[max(0, start - 4096) : start]


def check_streams(
    data: bytes,
    *,
    max_stream_bytes: int,
    max_total_bytes: int,
    max_text_operators: int,
    max_ratio: float = float("inf"),
    ratio_floor: int = 0,
) -> StreamProblem | None:
    """The first limit a compressed stream of ``data`` passes once inflated, or None. A stream past ``ratio_floor``
    inflated bytes that inflates more than ``max_ratio`` times what it consumed is a bomb: refused there, without
    inflating (and scanning) the rest up to ``max_stream_bytes``."""
    total = 0
    # A chain other than Flate alone is decoded only when it could write more than this: the size limit's floor,
    # or as many bytes as the text operators allowed take at 3 bytes each ("()'"), whichever is less.
    skip_below = min(ratio_floor or max_stream_bytes, max_stream_bytes, 3 * max_text_operators)
    parsed: set[bytes] | None = None  # the objects pdfium parses as content, found on the first image-like stream
    for number, head, start in streams(data):
        if IMAGE_SUBTYPE.search(head) and _WIDTH.search(head):
            if parsed is None:
                parsed = _parsed_as_content(data)
            if _object_number(data, start) not in parsed:
                continue
        if b"/Filter" not in head:  # stored as is: only its operators can be too many
            raw = stored_body(data, start)
            if _text_operators(raw) > max_text_operators:
                return _too_many_operators(number, max_text_operators)
            continue
        layers = _filters(data, head)
        if not layers:
            continue
        if layers[0] == pdf_filters.FLATE:  # zlib finds where its data ends
            body, begin, end = data, start, len(data)
        else:
            body = stored_body(data, start)
            if _most_output(layers, body) <= skip_below:
                continue
            begin, end = 0, len(body)
        # LZW is decoded with either code-width rule (EarlyChange 1 and 0): how pdfium reads /DecodeParms (escaped
        # names, references, arrays, "00") is not read here, and the larger size counts.
        for early_change in (True, False) if pdf_filters.LZW in layers else (True,):
            meter = pdf_filters.Meter()
            decoded = pdf_filters.chain(
                layers,
                _pieces(body, begin, end),
                meter,
                out_chunk=_OUT_CHUNK,
                max_layer_bytes=max_stream_bytes,
                early_change=early_change,
            )
            size = operators = 0
            try:
                for out in decoded:
                    size += len(out)
                    total += len(out)
                    operators += _text_operators(out)
                    if size > ratio_floor and size > max_ratio * max(1, meter.consumed):
                        return StreamProblem(
                            f"compressed stream {number} of the PDF inflates more than {max_ratio:g} times its size "
                            f"(past {ratio_floor:,} bytes), over this service's limit (a decompression bomb?)"
                        )
                    if size > max_stream_bytes:
                        raise pdf_filters.LayerTooLarge
                    if total > max_total_bytes:
                        return StreamProblem(
                            f"the PDF's compressed streams inflate to more than {max_total_bytes:,} bytes in all, "
                            "over this service's limit"
                        )
                    if operators > max_text_operators:
                        return _too_many_operators(number, max_text_operators)
            except pdf_filters.LayerTooLarge:
                return StreamProblem(
                    f"compressed stream {number} of the PDF inflates to more than {max_stream_bytes:,} bytes, "
                    "over this service's limit (a decompression bomb?)"
                )
    return None


def _parsed_as_content(data: bytes) -> set[bytes]:
    """The numbers of the objects a page's ``/Contents`` or a Type 3 font's ``/CharProcs`` name: streams pdfium
    parses as content whatever their own dictionary says (a bomb calling itself an image is still inflated). Read
    from the file's bytes and from its object streams (``_OBJSTM_BYTES`` inflated in all), one array's references
    followed where ``/Contents`` names an array object."""
    numbers: set[bytes] = set()
    arrays: dict[bytes, bytes] = {}
    _content_refs(data, numbers, arrays)
    budget = _OBJSTM_BYTES  # all object streams together: each is read and let go
    for m in _OBJSTM.finditer(data):
        begin = _STREAM.search(data, m.end(), m.end() + _OBJ_WINDOW)
        if begin is None or budget <= 0:
            continue
        try:
            text = zlib.decompressobj().decompress(data[begin.end() : begin.end() + budget], budget)
        except zlib.error:
            continue
        budget -= len(text)
        _content_refs(text, numbers, arrays)
    for number in [n for n in numbers if n in arrays]:
        numbers.update(_REFERENCE_NUMBER.findall(arrays[number]))
    return numbers


def _content_refs(text: bytes, numbers: set[bytes], arrays: dict[bytes, bytes]) -> None:
    """Adds to ``numbers`` what ``text``'s /Contents and /CharProcs name, and to ``arrays`` its array objects."""
    for m in _CONTENT_REFS.finditer(text):
        numbers.update(_REFERENCE_NUMBER.findall(m.group(0)))
    for m in _ARRAY_OBJECT.finditer(text):  # "obj [" first: a literal the search can skip to
        header = _OBJ_HEADER.search(text[max(0, m.start() - 32) : m.start()])
        end = text.find(b"]", m.end(), m.end() + 65536)
        if header is not None and end >= 0:
            arrays[header.group(1)] = text[m.end() : end]


def _object_number(data: bytes, start: int) -> bytes | None:
    """The number of the object whose stream starts at ``start`` (its ``N G obj``), or None."""
    window = data[max(0, start - _OBJ_WINDOW) : start]
    at = window.rfind(b"obj")
    m = _OBJ_HEADER.search(window[max(0, at - 32) : at]) if at >= 0 else None
    return m.group(1) if m is not None else None


def _filters(data: bytes, head: bytes) -> list[str] | None:
    """The filters pdfium decodes a stream through, in order, as ``pdf_filters`` names them: the dictionary's own
    /Filter (``top_level_value``: not one in a nested dictionary, the last where a key repeats, comments skipped),
    a name or an array, each reference resolved where its object is outside object streams (else tried as Flate),
    /Crypt left out, and cut before the first image filter (pdfium hands the data decoded so far to the image
    decoder, or to the content parser). None: no filter pdfium decodes, or an array with another filter before its
    last (pdfium then decodes nothing)."""
    value = top_level_value(head, b"/Filter")
    if value is None:
        return None
    value = _resolved_name(data, value)
    if value is None:
        return [pdf_filters.FLATE]
    names = [_resolved_name(data, item) for item in _FILTER_ITEM.findall(_COMMENT.sub(b" ", value))]
    layers: list[str] = []
    for at, name in enumerate(names):
        if name is None:  # a reference this pass cannot resolve: tried as Flate (one that is not stops at once)
            layers.append(pdf_filters.FLATE)
        elif name in pdf_filters.NAMES:
            layers.append(pdf_filters.NAMES[name])
        elif name != b"/Crypt":
            if at < len(names) - 1:
                return None
            break
    return layers or None


def _resolved_name(data: bytes, value: bytes) -> bytes | None:
    """``value`` with its name escapes read, a reference (``N G R``) replaced by its object's body (None where it
    cannot be found, as inside an object stream)."""
    ref = _REFERENCE.fullmatch(value.strip())
    if ref is None:
        return unescape_names(value.strip())
    body = _object_body(data, ref.group(1), ref.group(2))
    return unescape_names(body.strip()) if body is not None else None


_COMMENT: Final = re.compile(rb"%[^\r\n]*")
# A dictionary's tokens as far as finding its own keys needs them: comments, literal strings (one level of nested
# parentheses, escapes), hex strings, dictionary brackets, names, and anything else up to a delimiter.
_TOKEN: Final = re.compile(
    rb"%[^\r\n]*|\((?:\\.|[^\\()]|\((?:\\.|[^\\()])*\))*\)|<<|>>|<[0-9A-Fa-f\s]*>|\[|\]|/[^\s/\[\]<>(){}%]*"
    rb"|[^\s/\[\]<>(){}%]+",
    re.S,
)
_VALUE: Final = re.compile(rb"\s*(?:%[^\r\n]*\s*)*(\d+\s+\d+\s+R|/[^\s/\[\]<>(){}%]*|\[)")


def top_level_value(head: bytes, key: bytes) -> bytes | None:
    """The value of ``key`` (a name, as pdfium reads names) in the stream's own dictionary, the first ``<<`` of
    ``head``: not in a dictionary nested in it, the last where the key repeats (pdfium keeps the last); a name, a
    reference or an array's bytes (to its ``]``, a comment or string in it skipped), or None."""
    depth = 0
    found: bytes | None = None
    for m in _TOKEN.finditer(head):
        token = m.group()
        if token == b"<<":
            depth += 1
        elif token == b">>":
            depth -= 1
            if depth <= 0:
                break
        elif depth == 1 and token[:1] == b"/" and unescape_names(token) == key:
            value = _VALUE.match(head, m.end())
            if value is not None:
                found = value.group(1) if value.group(1) != b"[" else _array(head, value.end())
    return found


def _array(head: bytes, at: int) -> bytes:
    """The bytes of the array whose ``[`` ends before ``at``, to its ``]`` (strings and comments skipped over)."""
    parts = []
    for m in _TOKEN.finditer(head, at):
        token = m.group()
        if token == b"]":
            break
        if token[:1] not in (b"%", b"("):
            parts.append(token)
    return b" ".join(parts)


def _most_output(layers: list[str], body: bytes) -> float:
    """The most ``layers`` can write from ``body`` (an ASCII85 first layer by its count of "z")."""
    if layers[0] == pdf_filters.A85:
        most = len(body) * 0.8 + body.count(b"z") * 3.2
        layers = layers[1:]
    else:
        most = float(len(body))
    for layer in layers:
        most *= pdf_filters.EXPANSION[layer]
    return most


def _pieces(data: bytes, start: int, end: int) -> Iterator[bytes]:
    """``data[start:end]`` in ``_IN_CHUNK`` pieces."""
    for at in range(start, end, _IN_CHUNK):
        yield data[at : min(at + _IN_CHUNK, end)]


def _object_body(data: bytes, number: bytes, generation: bytes) -> bytes | None:
    """The body of the last ``number generation obj`` in ``data`` (at most 4 KB), or None."""
    at = data.rfind(b"\n" + number + b" " + generation + b" obj")
    if at < 0:
        at = data.rfind(b"\r" + number + b" " + generation + b" obj")
    if at < 0:
        return None
    body = data[at : at + _OBJ_WINDOW]
    end = body.find(b"endobj")
    return body[body.index(b"obj") + 3 : end if end >= 0 else len(body)]


def unescape_names(text: bytes) -> bytes:
    """``text`` with each name's "#xx" escapes read as the bytes they stand for, as pdfium reads names."""
    return _NAME_ESCAPE.sub(_unescape, text) if b"#" in text else text


def _unescape(m: re.Match[bytes]) -> bytes:
    return bytes((int(m.group(1), 16),))


def _text_operators(chunk: bytes) -> int:
    """How often ``Tj``, ``TJ``, ``'`` and ``"`` occur in ``chunk``. Each count runs only when its first byte is there
    at all (a memchr, ten times faster than a count): 4 MiB of a flate bomb's zeros cost 21 ms in four counts and 1 ms
    in three memchr's."""
    n = 0
    if b"T" in chunk:
        n += chunk.count(b"Tj") + chunk.count(b"TJ")
    if b"'" in chunk:
        n += chunk.count(b"'")
    if b'"' in chunk:
        n += chunk.count(b'"')
    return n


def _too_many_operators(number: int, limit: int) -> StreamProblem:
    return StreamProblem(
        f"stream {number} of the PDF holds more than {limit:,} text operators, over this service's limit for one "
        "content stream"
    )
