"""PPTX format module: decks built in the test (python-pptx, then edited parts), hostile packages, corpus."""

from __future__ import annotations

import csv
import io
import re
import zipfile
from pathlib import Path
from typing import Any

import orjson
import pytest
from pptx import Presentation
from pptx.chart.data import CategoryChartData
from pptx.enum.chart import XL_CHART_TYPE
from pptx.util import Inches

from extract_fn.formats import pptx_format
from extract_fn.formats.base import ExtractRequest
from shared.artifact import validate_artifact
from shared.contract import ErrorCode, ExtractionError
from tests.ole_files import encrypted_ooxml

REQ = ExtractRequest(format="pptx")


def run(data: bytes, request: ExtractRequest = REQ) -> dict[str, Any]:
    artifact = pptx_format.extract(data, request)
    validate_artifact(orjson.dumps(artifact), format="pptx", original_size=len(data))
    return artifact


def build_deck() -> bytes:
    prs = Presentation()
    s1 = prs.slides.add_slide(prs.slide_layouts[0])
    s1.shapes.title.text = "Quarterly Review"
    s1.placeholders[1].text = "Prepared by the team"

    s2 = prs.slides.add_slide(prs.slide_layouts[1])
    s2.shapes.title.text = "Results"
    tf = s2.placeholders[1].text_frame
    tf.text = "Revenue grew"
    tf.add_paragraph().text = "Costs fell"
    box = s2.shapes.add_textbox(Inches(1), Inches(5), Inches(3), Inches(1))
    box.text_frame.text = "A loose note"
    outer = s2.shapes.add_group_shape()
    outer.shapes.add_textbox(Inches(5), Inches(5), Inches(2), Inches(1)).text_frame.text = "grouped one"
    inner = outer.shapes.add_group_shape()
    inner.shapes.add_textbox(Inches(5), Inches(6), Inches(2), Inches(1)).text_frame.text = "grouped deeper"
    table = s2.shapes.add_table(3, 3, Inches(1), Inches(2), Inches(6), Inches(1.5)).table
    for r in range(3):
        for c in range(3):
            table.cell(r, c).text = f"t{r}{c}"
    table.cell(1, 0).merge(table.cell(1, 1))
    table.cell(1, 2).merge(table.cell(2, 2))
    s2.notes_slide.notes_text_frame.text = "Say the numbers slowly"

    s3 = prs.slides.add_slide(prs.slide_layouts[6])  # blank: no title
    s3.shapes.add_textbox(Inches(1), Inches(1), Inches(4), Inches(1)).text_frame.text = "Untitled slide text"

    s4 = prs.slides.add_slide(prs.slide_layouts[5])  # title only
    s4.shapes.title.text = "Backup"
    s4._element.set("show", "0")
    data = CategoryChartData()
    data.categories = ["North", "South"]
    data.add_series("Sales 2024", (1.5, 2.5))
    chart = s4.shapes.add_chart(XL_CHART_TYPE.COLUMN_CLUSTERED, Inches(1), Inches(2), Inches(6), Inches(4), data)
    chart.chart.has_title = True
    chart.chart.chart_title.text_frame.text = "Sales by region"
    buf = io.BytesIO()
    prs.save(buf)
    return buf.getvalue()


def replace_part(data: bytes, name: str, content: bytes | None) -> bytes:
    src = zipfile.ZipFile(io.BytesIO(data))
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            if info.filename == name:
                if content is not None:
                    dst.writestr(name, content)
                continue
            dst.writestr(info, src.read(info.filename))
    return out.getvalue()


def slide_xml(data: bytes, n: int) -> str:
    return zipfile.ZipFile(io.BytesIO(data)).read(f"ppt/slides/slide{n}.xml").decode()


# ---------------------------------------------------------------------------------------------------------------


def test_deck_structure() -> None:
    a = run(build_deck())
    blocks = a["blocks"]
    simple = [(b["type"], b["text"], b["locator"]["page_start"]) for b in blocks]
    assert simple[:3] == [
        ("heading", "Quarterly Review", 1),
        ("paragraph", "Prepared by the team", 1),
        ("heading", "Results", 2),
    ]
    by_text = {b["text"]: b for b in blocks}
    results = by_text["Results"]
    assert results["depth"] == 1
    assert results["section_path"] == ["Results"]
    body = by_text["Revenue grew\nCosts fell"]
    assert body["section_path"] == ["Results"]
    assert body["parent"] == results["id"]
    assert body["locator"] == {"page_start": 2, "page_end": 2}
    assert body["attrs"] == {"placeholder": "body"}
    assert "grouped one" in by_text
    assert "grouped deeper" in by_text
    tbl = next(b for b in blocks if "table" in b.get("attrs", {}))
    assert tbl["attrs"]["table"] == {
        "columns": ["t00", "t01", "t02"],
        "rows": [["t10\nt11", None, "t12\nt22"], ["t20", "t21", None]],  # python-pptx moves merged text
    }
    notes = by_text["Say the numbers slowly"]
    assert notes["attrs"] == {"notes": True}
    assert blocks.index(notes) == max(i for i, b in enumerate(blocks) if b["locator"]["page_start"] == 2)
    untitled = by_text["Untitled slide text"]
    assert untitled["section_path"] == []
    assert "parent" not in untitled
    backup = by_text["Backup"]
    assert backup["attrs"] == {"hidden": True}
    chart = next(b for b in blocks if b.get("attrs", {}).get("chart"))
    assert chart["attrs"]["hidden"] is True
    for piece in ("Sales by region", "North", "South"):
        assert piece in chart["text"]
    # no legend: the series name is not printed on the slide, so it is in the values' table only
    assert "Sales 2024" not in chart["text"]
    assert chart["attrs"]["table"]["columns"] == ["", "Sales 2024"]
    assert a["coverage"] == {"unit": "slides", "total": 4, "extracted": 4, "failed": [], "lost": [], "complete": True}
    assert a["parser"] == "loom-pptx"


def test_deck_without_slides() -> None:
    buf = io.BytesIO()
    Presentation().save(buf)
    a = run(buf.getvalue())
    assert a["blocks"] == []
    assert a["coverage"]["total"] == 0
    assert a["coverage"]["complete"] is True


def test_missing_chart_part_is_a_failed_shape() -> None:
    data = build_deck()
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    chart = next(n for n in names if re.match(r"ppt/charts/chart\d+\.xml$", n))
    a = run(replace_part(data, chart, None))
    failed = a["coverage"]["failed"]
    assert len(failed) == 1
    assert re.fullmatch(r"slide 4 shape \d+", failed[0]["unit"])
    assert a["coverage"]["extracted"] == 4  # the slide itself was read
    assert "Backup" in [b["text"] for b in a["blocks"]]


def test_broken_slide_is_a_failed_unit_others_extracted() -> None:
    data = replace_part(build_deck(), "ppt/slides/slide3.xml", b"<p:sld><unclosed>")
    a = run(data)
    assert a["coverage"]["extracted"] == 3
    assert a["coverage"]["failed"][0]["unit"] == "slide 3"
    assert "Untitled slide text" not in [b["text"] for b in a["blocks"]]


# -- hostile ----------------------------------------------------------------------------------------------------


def _nested_groups(xml: str, depth: int, text: str) -> bytes:
    group = "<p:grpSp>"  # kept minimal so 10,000 of them stay under the zip-bomb guard's ratio floor
    sp = (
        '<p:sp><p:nvSpPr><p:cNvPr id="100" name="t"/><p:cNvSpPr txBox="1"/><p:nvPr/></p:nvSpPr><p:spPr/>'
        f"<p:txBody><a:bodyPr/><a:p><a:r><a:t>{text}</a:t></a:r></a:p></p:txBody></p:sp>"
    )
    nested = group * depth + sp + "</p:grpSp>" * depth
    return xml.replace("</p:spTree>", nested + "</p:spTree>", 1).encode()


def test_nested_groups_are_read_iteratively() -> None:
    data = build_deck()
    a = run(replace_part(data, "ppt/slides/slide3.xml", _nested_groups(slide_xml(data, 3), 120, "at the bottom")))
    found = [b for b in a["blocks"] if b["text"] == "at the bottom"]
    assert len(found) == 1
    assert found[0]["locator"]["page_start"] == 3


def test_ten_thousand_nested_groups_fail_the_slide_cleanly() -> None:
    data = build_deck()
    hostile = replace_part(data, "ppt/slides/slide3.xml", _nested_groups(slide_xml(data, 3), 10_000, "deep"))
    a = run(hostile)
    assert a["coverage"]["failed"][0]["unit"] == "slide 3"
    assert a["coverage"]["extracted"] == 3


def test_billion_laughs_is_refused() -> None:
    data = build_deck()
    xml = slide_xml(data, 1)
    decl, rest = xml.split("?>", 1)
    ents = '<!ENTITY a "aaaaaaaaaa">' + "".join(
        f'<!ENTITY a{i} "{("&a" + (str(i - 1) if i > 1 else "") + ";") * 10}">' for i in range(1, 9)
    )
    lol = f"{decl}?><!DOCTYPE p:sld [{ents}]>" + rest.replace("Quarterly Review", "&a8;")
    with pytest.raises(ExtractionError) as err:
        pptx_format.extract(replace_part(data, "ppt/slides/slide1.xml", lol.encode()), REQ)
    # A DTD is refused before anything expands: corrupt, as in docx and xlsx (it was resource_limit before issue 12)
    assert err.value.code == ErrorCode.CORRUPT
    assert "DTD" in err.value.message


def test_zip_bomb_and_non_packages() -> None:
    data = replace_part(build_deck(), "ppt/slides/slide1.xml", b"<p:sld>" + b" " * (16 * 1024 * 1024) + b"</p:sld>")
    with pytest.raises(ExtractionError) as err:
        pptx_format.extract(data, REQ)
    assert err.value.code == ErrorCode.RESOURCE_LIMIT
    for bad in (b"", b"PK\x03\x04broken", encrypted_ooxml()):
        with pytest.raises(ExtractionError) as err2:
            pptx_format.extract(bad, REQ)
        assert err2.value.code == ErrorCode.CORRUPT


def test_output_budget_cuts_slides() -> None:
    prs = Presentation()
    for i in range(40):
        s = prs.slides.add_slide(prs.slide_layouts[1])
        s.shapes.title.text = f"Slide {i}"
        s.placeholders[1].text = "text " * 200
    buf = io.BytesIO()
    prs.save(buf)
    a = run(buf.getvalue(), ExtractRequest(format="pptx", max_output_bytes=10_000))
    cov = a["coverage"]
    assert 0 < cov["extracted"] < 40
    assert len(cov["failed"]) == 40 - cov["extracted"]
    assert cov["failed"][-1]["unit"] == "slide 40"
    assert a["warnings"]


# -- corpus -----------------------------------------------------------------------------------------------------

CORPUS_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


def _rows(fmt: str) -> list[dict[str, str]]:
    if not (CORPUS_DIR / "MANIFEST.tsv").exists():
        return []
    with (CORPUS_DIR / "MANIFEST.tsv").open(newline="", encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh, delimiter="\t") if r["format"] == fmt]


PPTX_ROWS = _rows("pptx")
_TEXT_RE = re.compile(rb"<a:t>\s*[^<\s]")


def _has_slide_text(data: bytes) -> bool:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return any(_TEXT_RE.search(zf.read(n)) for n in zf.namelist() if re.match(r"ppt/slides/slide\d+\.xml$", n))


def test_corpus_is_present(corpus: Path) -> None:
    assert len(PPTX_ROWS) == len(_rows("pptx")) >= 24
    assert (corpus / "MANIFEST.tsv").exists()


@pytest.mark.parametrize("row", PPTX_ROWS, ids=[r["path"] for r in PPTX_ROWS])
def test_corpus_file(row: dict[str, str], corpus: Path) -> None:
    data = (corpus / row["path"]).read_bytes()
    if row["expect"] != "ok":
        with pytest.raises(ExtractionError) as err:
            pptx_format.extract(data, REQ)
        assert err.value.code == ErrorCode.CORRUPT
        return
    a = run(data)
    if _has_slide_text(data):
        assert "".join(b["text"] for b in a["blocks"]).strip()
    slides = len(Presentation(io.BytesIO(data)).slides)
    assert a["coverage"]["total"] == slides
    assert all(1 <= b["locator"]["page_start"] <= slides for b in a["blocks"])


def test_corpus_notes_and_groups(corpus: Path) -> None:
    a = run((corpus / "pptx/python-pptx-prs-notes.pptx").read_bytes())
    assert [b["text"] for b in a["blocks"] if b.get("attrs", {}).get("notes")] == ["Notes"]
    b = run((corpus / "pptx/docling-powerpoint-sample.pptx").read_bytes())
    assert [x["text"] for x in b["blocks"] if x["type"] == "heading"] == ["Test Table Slide", "Second slide title"]
