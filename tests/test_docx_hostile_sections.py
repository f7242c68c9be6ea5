"""A docx whose sections reference headers by 60,000 distinct ``w:type`` values: read in linear time.

Word knows the types ``default``, ``first`` and ``even``; any other is a reference Word never shows. Each section
once went over every (kind, type) seen so far, quadratic in the sections (45,000 took past the time limit). The real
docx module runs in a worker pool with a generous time limit: an answer of ``timeout`` fails the test (the limit is
the oracle, never an elapsed time).
"""

from __future__ import annotations

import io
import zipfile

import orjson
import pytest

from extract_fn.formats import MODULES
from extract_fn.formats.base import ExtractRequest
from extract_fn.workers import WorkerPool
from shared.artifact import validate_artifact

MIB = 1024 * 1024
_W = (
    'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main" '
    'xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"'
)
_PKG = "http://schemas.openxmlformats.org/package/2006/relationships"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def _rels(*items: tuple[str, str, str]) -> str:
    body = "".join(f'<Relationship Id="{i}" Type="{_REL}/{t}" Target="{g}"/>' for i, t, g in items)
    return f'<?xml version="1.0"?><Relationships xmlns="{_PKG}">{body}</Relationships>'


def _docx(body: str, header: str, footer: str) -> bytes:
    parts = {
        "[Content_Types].xml": (
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/><Override PartName="/word/document.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
        ),
        "_rels/.rels": _rels(("rId1", "officeDocument", "word/document.xml")),
        "word/document.xml": f'<?xml version="1.0"?><w:document {_W}><w:body>{body}</w:body></w:document>',
        "word/_rels/document.xml.rels": _rels(("rH", "header", "header1.xml"), ("rF", "footer", "footer1.xml")),
        "word/header1.xml": f'<?xml version="1.0"?><w:hdr {_W}><w:p><w:r><w:t>{header}</w:t></w:r></w:p></w:hdr>',
        "word/footer1.xml": f'<?xml version="1.0"?><w:ftr {_W}><w:p><w:r><w:t>{footer}</w:t></w:r></w:p></w:ftr>',
    }
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in parts.items():
            zf.writestr(name, content)
    return buf.getvalue()


@pytest.fixture(scope="module")
def pool_answer(pool: WorkerPool) -> dict[str, object]:
    n = 60_000
    sections = "".join(
        f'<w:p><w:pPr><w:sectPr><w:headerReference w:type="t{i}" r:id="rH"/></w:sectPr></w:pPr>'
        f"<w:r><w:t>s{i}</w:t></w:r></w:p>"
        for i in range(n)
    )
    last = '<w:sectPr><w:footerReference w:type="default" r:id="rF"/></w:sectPr>'
    data = _docx(sections + last, "never shown", "the footer")
    replaced = pool.stats.replaced
    raw = pool.run_sync(MODULES["docx"] + ":extract", data, ExtractRequest(format="docx", max_output_bytes=64 * MIB))
    validate_artifact(raw, format="docx", original_size=len(data))  # a timeout raises before this
    assert pool.stats.replaced == replaced
    answer: dict[str, object] = orjson.loads(raw)
    return answer


def test_60000_sections_of_distinct_header_types(pool_answer: dict[str, object]) -> None:
    blocks = pool_answer["blocks"]
    assert isinstance(blocks, list)
    texts = [b["text"] for b in blocks]
    assert "s0" in texts
    assert "s59999" in texts
    assert "the footer" in texts
    # a header only an unknown type references is one Word never shows: not read, as before
    assert "never shown" not in texts
