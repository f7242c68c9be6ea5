"""Seeded mutations of real files for fuzzing the extractor: bytes flipped, cut, inserted and repeated; a text
format's syntax tokens put in; an OOXML package's XML members changed (attributes set to edge values, elements
deleted, repeated, moved, their text replaced) and zipped again; a PDF's sizing numbers (``/Width``, ``/Count``,
``/Length``, ``/BBox``...) set to edge values and its uncompressed content's operators repeated.

One ``random.Random`` drives every choice, so a seed and a file give the same mutant on any machine.
``tests/test_fuzz_smoke.py`` runs a few per format in the suite; ``tools/fuzz_extractor.py`` many over HTTP.
"""

from __future__ import annotations

import contextlib
import copy
import io
import random
import re
import zipfile
from collections.abc import Callable
from typing import Final

TOKENS: Final[dict[str, list[str]]] = {
    "markdown": [
        "```", "~~~", "|", "|---|", "<div>", "</div>", "[x]: ", "![a](", "> ", "- ", "1. ", "#", "\t", "\\", "<!--",
        "$$", "*", "_", "\x00", "\r", "\u202e", "\ufeff", "&#0;", "&amp", "<script>", "[", "](", "9" * 5000,
    ],
    "html": [
        "<table>", "<tr>", "<td colspan=99999>", "<td rowspan=0>", "</table>", "<ol start=-5>", "<li value=1e9>",
        "<h1>", "<pre>", "<svg>", "<math>", "<!--", "-->", "<![CDATA[", "<template>", "&#x10FFFF;", "&#xD800;",
        "<br>", "<img alt=", "<frameset>", "<base href=file:///etc/passwd>", "\x00", "<div>" * 50,
    ],
    "toml": [
        "[", "]", "[[", "]]", "=", '"', "'''", '"""', "{", "}", ",", ".", "#", "\n", "1979-05-27T07:32:00Z", "inf",
        "nan", "0x7FFFFFFFFFFFFFFF", "9223372036854775808", "\\u0000", "\\U0010FFFF", "a.b.c", "\t", "1" * 5000,
    ],
    "sql": [
        "'", '"', "`", "--", "/*", "*/", ";", "$$", "BEGIN", "END", "CREATE TABLE", "(", ")", "\\", "E'", "$tag$",
        "\n", "\x00", "GO\n", "DELIMITER //\n",
    ],
    "csv": [
        ",", '"', '""', "\n", "\r\n", "\r", ";", "\t", "\x00", "=cmd|", "1e400", "-0", "NaN", "2020-13-45", "\ufeff",
        "\xff", "7" * 5000,
    ],
    "text": ["\x00", "\r", "\u2028", "\ufeff", "\x1b[31m", "\u202e", "\xff\xfe", "\n\n\n", "\t", "```", "<div>"],
}  # fmt: skip
_EDGE_VALUES: Final = [
    "-1", "0", "99999999999999999999", "", "abc", "1e308", "NaN", "-2147483649", "A1:XFD1048576", "#,##0.00",
    "rId1", "rId999", "\uffff", "1" * 5000,
]  # fmt: skip
_EDGE_TEXT: Final = ["", "\u202e\u0301", "x" * 5000, "\t\n", "=SUM(A1)", "\U0001f600", "9" * 5000]
_ATTRIBUTE: Final = re.compile(
    rb'\b(w:val|val|r:id|r:embed|count|ilvl|numId|gridSpan|vMerge|w:w|start|lvl|idx|x|y|cx|cy|ref|r|s|t)="[^"]*"'
)
PACKAGES: Final = ("docx", "pptx", "xlsx")
# A PDF key whose value is a number (or the first of an array of numbers), and the edge values put there.
_PDF_NUMBER: Final = re.compile(
    rb"(/(?:Width|Height|Count|Length|N|First|Size|BitsPerComponent|Columns|Rows|K|Rotate|XStep|YStep|"
    rb"FirstChar|LastChar|Prev|W|Index|BBox|MediaBox|Matrix|Widths|Predictor|Colors)\s*\[?\s*)(-?[0-9.]+)"
)
_PDF_EDGE: Final = [b"0", b"-1", b"1e9", b"2147483648", b"99999999999999999999", b"0.0001", b"-0", b"65535", b"3"]
_PDF_OPERATORS: Final = [b" Do", b" Tj", b" TJ", b" q", b" Q", b" BT", b" ET", b" cm", b" re f", b" BI", b" ID", b" EI"]


def mutate(data: bytes, fmt: str, rng: random.Random) -> bytes:
    """One mutant of ``data``, a file of ``fmt``."""
    if fmt in PACKAGES:
        return mutate_package(data, rng) if rng.random() < 0.85 else mutate_bytes(data, rng)
    if fmt == "pdf":
        return mutate_pdf(data, rng) if rng.random() < 0.5 else mutate_bytes(data, rng)
    if fmt == "parquet":
        return mutate_bytes(data, rng)
    return mutate_text(data, fmt, rng)


def mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    if not data:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 64)))
    b = bytearray(data)
    op = rng.randrange(5)
    if op == 0:
        for _ in range(rng.randint(1, 10)):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif op == 1:
        del b[rng.randrange(len(b)) :]
    elif op == 2:
        i = rng.randrange(len(b))
        b[i:i] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 32)))
    elif op == 3:
        i = rng.randrange(len(b))
        k = rng.randrange(len(b))
        b[k:k] = b[i : i + rng.randint(1, 4096)] * rng.randint(1, 20)
    else:
        i = rng.randrange(len(b))
        del b[i : i + rng.randint(1, 512)]
    return bytes(b)


def mutate_pdf(data: bytes, rng: random.Random) -> bytes:
    """Numbers after the keys that size things set to edge values; uncompressed content's operators repeated."""

    def edge(m: re.Match[bytes]) -> bytes:
        return m.group(1) + (rng.choice(_PDF_EDGE) if rng.random() < 0.3 else m.group(2))

    out = _PDF_NUMBER.sub(edge, data, count=rng.randint(1, 50))
    for _ in range(rng.randint(0, 3)):
        op = rng.choice(_PDF_OPERATORS)
        at = out.find(op, rng.randrange(len(out) + 1))
        if at >= 0:
            out = out[:at] + op * rng.choice([2, 10, 1000]) + out[at + len(op) :]
    return out


def mutate_text(data: bytes, fmt: str, rng: random.Random) -> bytes:
    try:
        s = data.decode("utf-8")
    except UnicodeDecodeError:
        return mutate_bytes(data, rng)
    tokens = TOKENS.get(fmt, TOKENS["text"])
    for _ in range(rng.randint(1, 12)):
        op = rng.randrange(4)
        i = rng.randrange(len(s) + 1)
        if op == 0:
            s = s[:i] + rng.choice(tokens) + s[i:]
        elif op == 1 and s:
            s = s[:i] + s[i + rng.randint(1, 200) :]
        elif op == 2 and s:
            s = s[:i] + s[i : i + rng.randint(1, 400)] * rng.randint(2, 30) + s[i:]
        else:
            s = s[:i] + rng.choice(tokens) * rng.randint(1, 300) + s[i:]
    out = s.encode("utf-8", "surrogatepass")
    return out if rng.random() > 0.1 else mutate_bytes(out, rng)


def mutate_package(data: bytes, rng: random.Random) -> bytes:
    """An OOXML package with 1-3 of its XML members changed (and sometimes one left out), zipped again."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as package:
            members = {info.filename: package.read(info) for info in package.infolist()}
    except (zipfile.BadZipFile, OSError, ValueError, NotImplementedError, EOFError):
        return mutate_bytes(data, rng)
    xml = [name for name in members if name.endswith((".xml", ".rels"))]
    changes: list[Callable[[bytes, random.Random], bytes]] = [_edge_attributes, mutate_tree, mutate_tree, _cut]
    for _ in range(rng.randint(1, 3)):
        if xml:
            name = rng.choice(xml)
            members[name] = rng.choice(changes)(members[name], rng)
    if xml and rng.random() < 0.1:
        del members[rng.choice(xml)]
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as package:
        for name, body in members.items():
            package.writestr(name, body)
    return out.getvalue()


def _edge_attributes(xml: bytes, rng: random.Random) -> bytes:
    def edge(m: re.Match[bytes]) -> bytes:
        return m.group(1) + b'="' + rng.choice(_EDGE_VALUES).encode() + b'"'

    return _ATTRIBUTE.sub(edge, xml, count=rng.randint(1, 20))


def _cut(xml: bytes, rng: random.Random) -> bytes:
    return xml[: rng.randrange(len(xml) + 1)]


def mutate_tree(xml: bytes, rng: random.Random) -> bytes:
    """A well-formed change: elements deleted, repeated (up to 50 times), moved or copied elsewhere, an attribute
    set to an edge value, an element's text replaced."""
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, huge_tree=False)
    try:
        root = etree.fromstring(xml, parser)
    except etree.XMLSyntaxError:
        return xml
    for _ in range(rng.randint(1, 8)):
        elements = list(root.iter(etree.Element))  # elements only: comments and PIs take no attributes
        if len(elements) < 2:
            break
        element = rng.choice(elements[1:])
        parent = element.getparent()
        target = rng.choice(elements)
        movable = target is not element and element not in target.iterancestors()
        op = rng.randrange(6)
        if parent is None:
            continue
        if op == 0:
            parent.remove(element)
        elif op == 1:
            for _ in range(rng.choice([1, 1, 2, 50])):
                parent.insert(parent.index(element), copy.deepcopy(element))
        elif op == 2 and movable:
            target.append(element)
        elif op == 3 and element.attrib:
            _try(element.set, rng.choice(list(element.attrib)), rng.choice(_EDGE_VALUES))
        elif op == 4:
            _try(setattr, element, "text", rng.choice(_EDGE_TEXT))
        elif op == 5 and movable:
            target.insert(0, copy.deepcopy(element))
    out: bytes = etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)
    return out


def _try(change: Callable[..., object], *args: object) -> None:
    """``change(*args)``, unless lxml refuses the value (a character XML cannot hold)."""
    with contextlib.suppress(ValueError):
        change(*args)
