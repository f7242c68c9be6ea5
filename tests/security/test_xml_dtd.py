"""A DTD in a file opens nothing on the host and gets one answer, whatever it names (issue 12, item 1).

Each hostile file declares a DTD, an external parameter entity or an external entity naming one target: /etc/passwd,
/etc/shadow, /proc/self/environ, /dev/zero, a private file and a private directory (both watched with inotify, which
sees opens by any process, C parsers included), a missing file, and a URL on a loopback HTTP server that records
every connection. The DTD sits in each OOXML format's main part and root relationships part (and the workbook), in
UTF-8 with and without a BOM, UTF-16 LE with a BOM and BE without one, after 200 KB of comment, and under an XML
declaration that lies about the encoding. For every target:

- docx, pptx and xlsx answer ``corrupt`` with the same message, naming only the part (ECMA-376 Part 2 forbids DTDs);
- html and markdown (where a DOCTYPE is normal) give the same artifact, with nothing of the target in it;
- no watched path is opened and no connection reaches the server; in-process, in a worker pool whose timeout is the
  oracle for /dev/zero (a worker reading it would answer ``timeout``, not ``corrupt``), and over HTTP.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
import pytest

from extract_fn.formats import extractor_for, safe_xml
from extract_fn.formats.base import ExtractRequest
from extract_fn.service import default_extractors
from extract_fn.workers import WorkerPool
from shared.artifact import validate_artifact
from shared.contract import ErrorCode, ExtractionError
from tests import hostile_inputs as hi
from tests.security.host_probes import OpenWatch, RecordingServer, recording_server

pytestmark = pytest.mark.xdist_group("security-xml-dtd")

MiB: Final = 1024 * 1024
POOL_TIMEOUT_S: Final = 60  # generous: a worker that read /dev/zero would answer timeout after it, never corrupt
SECRET: Final = "TOP-SECRET-7f3a9c-CONTENT"
LEAK_MARKERS: Final = ("passwd", "shadow", "environ", "directory", "No such file", "127.0.0.1", "zero", "secret")

DOCTYPES: Final = {
    "system": '<!DOCTYPE {root} SYSTEM "{url}">',
    "public": '<!DOCTYPE {root} PUBLIC "-//Loom//Probe//EN" "{url}">',
    "parameter-entity": '<!DOCTYPE {root} [<!ENTITY % ext SYSTEM "{url}"> %ext;]>',
    "entity": '<!DOCTYPE {root} [<!ENTITY ext SYSTEM "{url}">]>',
}


@dataclass
class Host:
    targets: dict[str, str]  # name -> what the DTD names
    watch: OpenWatch
    server: RecordingServer
    passwd_line: str

    def touched(self) -> list[str]:
        """The watched paths opened and the server connections since the last call."""
        reached = self.watch.opened() + [f"server <- {c}" for c in self.server.connections]
        self.server.connections.clear()
        return reached

    def assert_untouched(self, where: str) -> None:
        assert self.touched() == [], f"{where}: a watched path was opened or the loopback server reached"

    def assert_no_leak(self, text: str) -> None:
        assert SECRET not in text
        assert self.passwd_line not in text


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Host]:
    root = tmp_path_factory.mktemp("dtd-targets")
    private = root / "private.dtd"
    private.write_text(f'<!ENTITY leak "{SECRET}">\n')
    directory = root / "a-directory"
    directory.mkdir()
    watch = OpenWatch([private, directory])
    with recording_server() as server:
        targets = {
            "etc-passwd": "file:///etc/passwd",
            "etc-shadow": "/etc/shadow",
            "proc-environ": "/proc/self/environ",
            "dev-zero": "file:///dev/zero",
            "private-file": str(private),
            "directory": f"file://{directory}",
            "missing": str(root / "missing.dtd"),
            "http": server.url,
        }
        try:
            yield Host(targets, watch, server, Path("/etc/passwd").read_text().splitlines()[0])
        finally:
            watch.close()


# ---------------------------------------------------------------------------------------------------------------
# Hostile OOXML packages


def _encode(xml: str, encoding: str, doctype: str) -> bytes:
    """The part with ``doctype`` after its XML declaration, written in ``encoding``."""
    assert xml.startswith(hi.XML_DECL)
    body = xml[len(hi.XML_DECL) :]
    utf16_decl = hi.XML_DECL.replace("UTF-8", "UTF-16")
    if encoding == "utf-8-bom":
        return b"\xef\xbb\xbf" + (hi.XML_DECL + doctype + body).encode()
    if encoding == "utf-16-le-bom":
        return ("\ufeff" + utf16_decl + doctype + body).encode("utf-16-le")
    if encoding == "utf-16-be":
        return (utf16_decl + doctype + body).encode("utf-16-be")
    if encoding == "long-comment":
        return (hi.XML_DECL + "<!--" + "x" * 200_000 + "-->\n" + doctype + body).encode()
    if encoding == "lying-declaration":  # says UTF-16, is UTF-8
        return (utf16_decl + doctype + body).encode()
    assert encoding == "utf-8", encoding
    return (hi.XML_DECL + doctype + body).encode()


# format -> placement -> (part, its root element's name)
PLACES: Final = {
    "docx": {"main": (hi.DOCX_MAIN, "w:document"), "rels": ("_rels/.rels", "Relationships")},
    "pptx": {"main": (hi.PPTX_SLIDE, "p:sld"), "rels": ("_rels/.rels", "Relationships")},
    "xlsx": {
        "main": (hi.XLSX_SHEET, "worksheet"),
        "rels": ("_rels/.rels", "Relationships"),
        "workbook": ("xl/workbook.xml", "workbook"),
    },
}
SMALL: Final = {
    "docx": lambda: hi.docx_parts(hi.docx_document_xml(hi.docx_paragraph("hello from docx"))),
    "pptx": lambda: hi.pptx_parts(hi.pptx_slide_xml("hello from pptx")),
    "xlsx": lambda: hi.xlsx_parts(hi.xlsx_sheet_xml(hi.inline_row(1, "hello from xlsx"))),
}
ENCODINGS: Final = ("utf-8", "utf-8-bom", "utf-16-le-bom", "utf-16-be", "long-comment", "lying-declaration")
OOXML_CASES: Final = [
    (fmt, place, enc)
    for fmt, places in PLACES.items()
    for place in places
    for enc in (ENCODINGS if place == "main" else ("utf-8", "utf-16-le-bom"))
]


def hostile_package(fmt: str, place: str, encoding: str, doctype: str) -> tuple[bytes, str]:
    parts = SMALL[fmt]()
    part, _root = PLACES[fmt][place]
    xml = parts[part]
    assert isinstance(xml, str)
    parts[part] = _encode(xml, encoding, doctype)
    return hi.zip_parts(parts), part


def doctypes(host: Host, root: str, *, skip: tuple[str, ...] = ()) -> Iterator[tuple[str, str]]:
    """(label, DOCTYPE) for every target and every way of naming it."""
    for target, url in host.targets.items():
        if target in skip:
            continue
        for shape, template in DOCTYPES.items():
            yield f"{target}/{shape}", template.format(root=root, url=url)


def answer_of(run: Callable[[bytes], Any], data: bytes) -> tuple[str, str]:
    """(code, message) of the error ``run`` raises; ("an artifact", "") when it extracts."""
    try:
        run(data)
    except ExtractionError as exc:
        return exc.code, exc.message
    return "an artifact", ""


def _in_process(fmt: str) -> Callable[[bytes], Any]:
    extract = extractor_for(fmt)
    return lambda data: extract(data, ExtractRequest(fmt, name=f"probe.{fmt}"))


def _answers(run: Callable[[bytes], Any], fmt: str, place: str, enc: str, host: Host, skip: tuple[str, ...]) -> None:
    """Every DOCTYPE in this place: corrupt, the one message naming the part, nothing touched."""
    part, root = PLACES[fmt][place]
    expected = safe_xml.dtd_refused(part, fmt).message
    assert part in expected
    assert "DTD" in expected
    answers: dict[str, tuple[str, str]] = {}
    touched: dict[str, list[str]] = {}
    for label, doctype in doctypes(host, root, skip=skip):
        data, _ = hostile_package(fmt, place, enc, doctype)
        answers[label] = answer_of(run, data)
        if reached := host.touched():
            touched[label] = reached
    assert touched == {}, "files opened or the loopback server reached"  # first: the failure that matters most
    for label, (code, message) in answers.items():
        host.assert_no_leak(message)
        assert code == ErrorCode.CORRUPT, f"{label}: {code} {message}"
    assert {message for _code, message in answers.values()} == {expected}, answers
    for marker in LEAK_MARKERS:
        assert marker not in expected.lower()


@pytest.mark.parametrize(("fmt", "place", "enc"), OOXML_CASES)
def test_ooxml_dtd_in_process(host: Host, fmt: str, place: str, enc: str) -> None:
    opened: list[str] = []
    watched = {u.removeprefix("file://") for u in host.targets.values()}

    def audit(event: str, args: tuple[Any, ...]) -> None:
        if event == "open" and isinstance(args[0], str) and args[0] in watched:
            opened.append(args[0])

    sys.addaudithook(audit)  # Python-level opens too (a hook cannot be removed; it only records)
    # /dev/zero is left to the pool below, where a worker that read it is killed at the timeout.
    _answers(_in_process(fmt), fmt, place, enc, host, skip=("dev-zero",))
    assert opened == []


def test_xlsx_refuses_a_dtd_in_any_xml_part(host: Host) -> None:
    """calamine reads parts itself, so xlsx checks every XML part on opening, read or not (docx and pptx check each
    part they parse, which is every part they read)."""
    for part in ("[Content_Types].xml", "docProps/core.xml"):
        parts = SMALL["xlsx"]()
        xml = parts.get(part, f'{hi.XML_DECL}<cp:coreProperties xmlns:cp="urn:x"/>')
        assert isinstance(xml, str)
        parts[part] = _encode(xml, "utf-8", DOCTYPES["system"].format(root="Types", url=host.targets["http"]))
        answer = answer_of(_in_process("xlsx"), hi.zip_parts(parts))
        assert answer == (ErrorCode.CORRUPT, safe_xml.dtd_refused(part, "xlsx").message)
    host.assert_untouched("xlsx parts")


def test_billion_laughs_is_the_same_answer() -> None:
    """An internal-entity bomb needs a DTD: refused by the same rule, before anything expands (was resource_limit)."""
    for fmt, make, part in (
        ("docx", hi.billion_laughs_docx, hi.DOCX_MAIN),
        ("pptx", hi.billion_laughs_pptx, hi.PPTX_SLIDE),
        ("xlsx", hi.billion_laughs_xlsx, hi.XLSX_STRINGS),
    ):
        with pytest.raises(ExtractionError) as err:
            extractor_for(fmt)(make(), ExtractRequest(fmt))
        assert (err.value.code, err.value.message) == (ErrorCode.CORRUPT, safe_xml.dtd_refused(part, fmt).message)


# ---------------------------------------------------------------------------------------------------------------
# The parser alone holds when the prolog check is bypassed


@pytest.mark.parametrize("collect_ids", [True, False], ids=["the-parser", "a-parser-that-would-load"])
def test_the_parser_loads_nothing_without_the_prolog_check(
    host: Host, monkeypatch: pytest.MonkeyPatch, collect_ids: bool
) -> None:
    """With ``refuse_dtd`` switched off, the parser still opens nothing and gives the one answer. The second case
    builds the parser the old way (``collect_ids=False``, which makes libxml2 < 2.15 load the external subset) with
    the module's resolver: the resolver alone stops every load."""
    monkeypatch.setattr(safe_xml, "refuse_dtd", lambda *_args: None)
    if not collect_ids:
        from lxml import etree

        parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, collect_ids=False)
        parser.resolvers.add(safe_xml.refusing_resolver())
        monkeypatch.setattr(safe_xml, "_PARSER", parser)
    expected = safe_xml.dtd_refused("probe.xml", "docx").message
    for label, doctype in doctypes(host, "r", skip=("dev-zero",)):
        xml = f"{hi.XML_DECL}{doctype}<r>text</r>".encode()
        answer = answer_of(lambda data: safe_xml.parse(data, "probe.xml", "docx"), xml)
        host.assert_untouched(label)
        assert answer == (ErrorCode.CORRUPT, expected), label


def test_parts_without_a_dtd_still_parse() -> None:
    for data in (
        f"{hi.XML_DECL}<!-- a comment --><?pi x?><r>ok</r>".encode(),
        ("\ufeff" + hi.XML_DECL.replace("UTF-8", "UTF-16") + "<r>ok</r>").encode("utf-16-le"),
        b"<r>ok</r>",
        f"{hi.XML_DECL}<!--{'x' * 100_000}--><r>ok</r>".encode(),
    ):
        assert safe_xml.parse(data, "p.xml", "docx").text == "ok"


# ---------------------------------------------------------------------------------------------------------------
# html and markdown: a DOCTYPE is normal there, and opens nothing either


def html_doc(doctype: str) -> bytes:
    return (
        f"{doctype}\n<html><head><title>Probe</title></head><body><h1>Heading</h1><p>visible text</p>"
        f"<svg>{doctype}<text>in svg</text></svg></body></html>"
    ).encode()


def xhtml_doc(doctype: str) -> bytes:
    return (
        f'{hi.XML_DECL}{doctype}<html xmlns="http://www.w3.org/1999/xhtml"><head><title>Probe</title></head>'
        "<body><p>visible text</p></body></html>"
    ).encode()


def markdown_doc(doctype: str) -> bytes:
    return f"# Heading\n\n{doctype}\n\nvisible text with inline {doctype} html\n\n<div>\n{doctype}\n</div>\n".encode()


TEXT_CASES: Final = {"html": html_doc, "xhtml": xhtml_doc, "markdown": markdown_doc}


def _text_answers(run: Callable[[bytes], bytes], case: str, host: Host) -> None:
    fmt = "markdown" if case == "markdown" else "html"
    make = TEXT_CASES[case]
    answers: dict[str, set[str]] = {}  # per DOCTYPE shape (HTML5 ends a DOCTYPE at its first ">"), whatever target
    for label, doctype in doctypes(host, "html"):
        data = make(doctype)
        raw = run(data)
        validate_artifact(raw, format=fmt, original_size=len(data))
        host.assert_untouched(label)
        host.assert_no_leak(raw.decode())
        url = next(u for u in host.targets.values() if u in doctype)
        artifact = orjson.loads(raw)
        texts = [(b["type"], b["text"].replace(url, "URL")) for b in artifact["blocks"]]
        assert any("visible text" in text for _type, text in texts), texts
        answers.setdefault(label.split("/")[1], set()).add(repr(texts))
    for shape, seen in answers.items():
        assert len(seen) == 1, (shape, seen)


@pytest.mark.parametrize("case", list(TEXT_CASES))
def test_html_and_markdown_doctype_in_process(host: Host, case: str) -> None:
    fmt = "markdown" if case == "markdown" else "html"
    extract = extractor_for(fmt)
    _text_answers(lambda data: orjson.dumps(extract(data, ExtractRequest(fmt))), case, host)


# ---------------------------------------------------------------------------------------------------------------
# Through the worker pool (every target, /dev/zero too) and the HTTP service


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(2, timeout_s=POOL_TIMEOUT_S, memory_limit_bytes=1024 * MiB, max_output_bytes=64 * MiB) as p:
        yield p


@pytest.mark.parametrize(("fmt", "place", "enc"), [c for c in OOXML_CASES if c[2] in ("utf-8", "utf-16-le-bom")])
def test_ooxml_dtd_in_the_worker_pool(host: Host, pool: WorkerPool, fmt: str, place: str, enc: str) -> None:
    extractor = default_extractors()[fmt]
    _answers(lambda data: pool.run_sync(extractor, data, ExtractRequest(fmt)), fmt, place, enc, host, skip=())


@pytest.mark.parametrize("case", list(TEXT_CASES))
def test_html_and_markdown_doctype_in_the_worker_pool(host: Host, pool: WorkerPool, case: str) -> None:
    fmt = "markdown" if case == "markdown" else "html"
    extractor = default_extractors()[fmt]
    _text_answers(lambda data: pool.run_sync(extractor, data, ExtractRequest(fmt)), case, host)


@pytest.fixture(scope="module")
def service() -> Iterator[hi.LiveService]:
    settings = {"EXTRACTOR_TIMEOUT_S": str(POOL_TIMEOUT_S), "EXTRACTOR_WORKERS": "2"}
    with hi.start_service(settings) as live:
        yield live


def test_over_http(host: Host, service: hi.LiveService) -> None:
    for fmt in PLACES:
        part, root = PLACES[fmt]["main"]
        expected = {"error": {"code": "corrupt", "message": safe_xml.dtd_refused(part, fmt).message}}
        for label, doctype in doctypes(host, root):
            data, _ = hostile_package(fmt, "main", "utf-8", doctype)
            response = service.extract(fmt, data, name=f"probe.{fmt}")
            assert response.status_code == 422, (label, response.text[:300])
            assert response.json() == expected, label
            host.assert_untouched(label)
    for case in TEXT_CASES:
        fmt = "markdown" if case == "markdown" else "html"

        def run(data: bytes, fmt: str = fmt) -> bytes:
            response = service.extract(fmt, data, name="probe")
            assert response.status_code == 200, response.text[:300]
            return response.content

        _text_answers(run, case, host)
