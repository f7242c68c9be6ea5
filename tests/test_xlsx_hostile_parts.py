"""Hostile xlsx parts read without a crash and in linear time: attribute numbers ``int`` refuses ("²", 5,000
digits) in notes and rich values, self-closing header/footer elements, long comment threads, and the second look's
cells whose ``r`` is single-quoted.

The real xlsx module runs in a worker pool with a generous time limit: an answer of ``timeout`` fails a test (the
limit is the oracle, never an elapsed time; each stall input took well past it before its fix), and
``pool.stats.replaced`` shows whether a worker died.
"""

from __future__ import annotations

import io
import zipfile
from typing import Any

import orjson
import pytest

from extract_fn.formats import MODULES
from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.xlsx_notes import _hf_parts
from extract_fn.workers import WorkerPool
from shared.artifact import validate_artifact

MIB = 1024 * 1024
_S = 'xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"'
_RD = "http://schemas.microsoft.com/office/spreadsheetml/2017/richdata"
_PKG = "http://schemas.openxmlformats.org/package/2006/relationships"
_REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
_A1 = '<row r="1"><c r="A1" t="inlineStr"><is><t>x</t></is></c></row>'
_RICH_CELL = '<row r="1"><c r="A1" t="e" vm="1"><v>#VALUE!</v></c></row>'


def _rels(*items: tuple[str, str, str]) -> str:
    body = "".join(f'<Relationship Id="{i}" Type="{_REL}/{t}" Target="{g}"/>' for i, t, g in items)
    return f'<?xml version="1.0"?><Relationships xmlns="{_PKG}">{body}</Relationships>'


def _xlsx(
    cells: str = _A1,
    tail: str = "",
    sheet_rels: tuple[tuple[str, str, str], ...] = (),
    extra: dict[str, str] | None = None,
    styles: str | None = None,
) -> bytes:
    parts = {
        "[Content_Types].xml": (
            '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/xl/workbook.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
            '<Override PartName="/xl/worksheets/sheet1.xml" '
            'ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/></Types>'
        ),
        "_rels/.rels": _rels(("rId1", "officeDocument", "xl/workbook.xml")),
        "xl/workbook.xml": (
            f'<?xml version="1.0"?><workbook {_S} xmlns:r="{_REL}">'
            '<sheets><sheet name="S0" sheetId="1" r:id="rId1"/></sheets></workbook>'
        ),
        "xl/_rels/workbook.xml.rels": _rels(
            ("rId1", "worksheet", "worksheets/sheet1.xml"), *([("rSt", "styles", "styles.xml")] if styles else [])
        ),
        "xl/worksheets/sheet1.xml": (
            f'<?xml version="1.0"?><worksheet {_S} xmlns:r="{_REL}"><sheetData>{cells}</sheetData>{tail}</worksheet>'
        ),
    }
    if styles:
        parts["xl/styles.xml"] = styles
    if sheet_rels:
        parts["xl/worksheets/_rels/sheet1.xml.rels"] = _rels(*sheet_rels)
    parts.update(extra or {})
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in parts.items():
            zf.writestr(name, content)
    return buf.getvalue()


def _artifact(pool: WorkerPool, data: bytes) -> dict[str, Any]:
    replaced = pool.stats.replaced
    raw = pool.run_sync(MODULES["xlsx"] + ":extract", data, ExtractRequest(format="xlsx", max_output_bytes=64 * MIB))
    validate_artifact(raw, format="xlsx", original_size=len(data))  # a crash or a timeout raises before this
    assert pool.stats.replaced == replaced
    artifact: dict[str, Any] = orjson.loads(raw)
    return artifact


def _blocks(artifact: dict[str, Any], part: str) -> list[dict[str, Any]]:
    return [b for b in artifact["blocks"] if b.get("attrs", {}).get("part") == part]


# ---------------------------------------------------------------------------------------------------------------
# Numbers int() refuses: the reference is ignored, never the catch-all

_BAD_NUMBERS = pytest.mark.parametrize("bad", ["\u00b2", "9" * 5000], ids=["superscript-two", "5000-digits"])


@_BAD_NUMBERS
def test_a_note_whose_author_id_int_refuses_has_no_author(pool: WorkerPool, bad: str) -> None:
    comments = (
        f'<?xml version="1.0"?><comments {_S}><authors><author>a</author></authors><commentList>'
        f'<comment ref="A1" authorId="{bad}"><text><t>note</t></text></comment></commentList></comments>'
    )
    data = _xlsx(sheet_rels=(("rC", "comments", "../comments1.xml"),), extra={"xl/comments1.xml": comments})
    (note,) = _blocks(_artifact(pool, data), "comment")
    assert note["text"] == "note"
    assert "author" not in note["attrs"]["comment"]


def _metadata(t: str = "1", i: str = "0") -> str:
    return (
        f'<?xml version="1.0"?><metadata {_S} xmlns:xlrd="{_RD}"><metadataTypes count="1">'
        '<metadataType name="XLRICHVALUE"/></metadataTypes><futureMetadata name="XLRICHVALUE" count="1"><bk>'
        f'<extLst><ext uri="x"><xlrd:rvb i="{i}"/></ext></extLst></bk></futureMetadata>'
        f'<valueMetadata count="1"><bk><rc t="{t}" v="0"/></bk></valueMetadata></metadata>'
    )


def _rich_values(s: str) -> str:
    return f'<?xml version="1.0"?><rvData xmlns="{_RD}" count="1"><rv s="{s}"><v>0</v><v>5</v></rv></rvData>'


@_BAD_NUMBERS
@pytest.mark.parametrize("where", ["rv-s", "rc-t", "rvb-i"])
def test_a_rich_value_reference_int_refuses_is_ignored(pool: WorkerPool, bad: str, where: str) -> None:
    meta = _metadata(t=bad) if where == "rc-t" else _metadata(i=bad) if where == "rvb-i" else _metadata()
    values = _rich_values(bad if where == "rv-s" else "0")
    data = _xlsx(_RICH_CELL, extra={"xl/metadata.xml": meta, "xl/richData/rdrichvalue.xml": values})
    assert _artifact(pool, data)["format"] == "xlsx"


# ---------------------------------------------------------------------------------------------------------------
# Linear time


def test_self_closing_header_elements_open_nothing() -> None:
    """``<oddHeader />`` is no opening tag (the old regex took it for one, then searched to the end for its close,
    once an element); an opening tag is matched with the first close of its name after it."""
    body = b"<oddHeader />" * 3 + b"<oddHeader>&amp;Ca</oddHeader><evenHeader/><oddFooter>b</oddFooter><firstHeader>"
    assert _hf_parts(body) == [((b"odd", b"Header"), b"&amp;Ca"), ((b"odd", b"Footer"), b"b")]
    nested = b"<oddHeader>x<evenFooter>y</oddHeader>z</evenFooter><evenFooter>w</evenFooter>"
    assert _hf_parts(nested) == [((b"odd", b"Header"), b"x<evenFooter>y"), ((b"even", b"Footer"), b"w")]


def test_40000_self_closing_header_elements(pool: WorkerPool) -> None:
    """2.5 KB deflated: past the time limit before (a search to the end for each element's close)."""
    tail = (
        '<headerFooter differentFirst="1">' + "<oddHeader />" * 40_000 + "<oddFooter>&amp;A</oddFooter></headerFooter>"
    )
    (footer,) = _blocks(_artifact(pool, _xlsx(tail=tail)), "footer")
    assert footer["text"] == "S0"


def test_a_thread_of_200000_replies(pool: WorkerPool) -> None:
    """Each reply once added to the thread's text by a copy of it (80,000 took 18 s; 200,000, ~6 times that)."""
    ns = 'xmlns="http://schemas.microsoft.com/office/spreadsheetml/2018/threadedcomments"'
    body = "".join(
        f'<threadedComment ref="A1" id="{{{i}}}"><text>{i:060}</text></threadedComment>' for i in range(200_000)
    )
    data = _xlsx(
        sheet_rels=(("rT", "threadedComment", "../threadedComments/t1.xml"),),
        extra={"xl/threadedComments/t1.xml": f'<?xml version="1.0"?><ThreadedComments {ns}>{body}</ThreadedComments>'},
    )
    (thread,) = _blocks(_artifact(pool, data), "comment")
    assert thread["attrs"]["comment"]["replies"] == 199_999
    assert thread["text"].startswith(f"{0:060}\n{1:060}\n")
    assert thread["text"].endswith(f"\n{199_999:060}")


def test_40000_time_cells_whose_r_is_single_quoted(pool: WorkerPool) -> None:
    """The second look found each such cell by a search to the sheet's end and then a regex over the whole sheet
    (20,000 cells, 105 KB, took past the time limit); it now indexes the column once."""
    styles = (
        f'<?xml version="1.0"?><styleSheet {_S}><cellXfs count="3"><xf numFmtId="0"/>'
        '<xf numFmtId="21" applyNumberFormat="1"/><xf numFmtId="14" applyNumberFormat="1"/></cellXfs></styleSheet>'
    )  # (a date style in the book is what makes the second look search the time cells' tags)
    n = 40_000
    cells = "".join(f"<row r='{i}'><c r='A{i}' s='1'><v>0.5</v></c></row>" for i in range(1, n + 1))
    artifact = _artifact(pool, _xlsx(cells, styles=styles))
    texts = [b["text"] for b in artifact["blocks"]]
    assert len(texts) == n - 1  # the first row is the header
    assert all(t == "12:00:00: 12:00:00" for t in texts)
