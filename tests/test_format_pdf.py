"""PDF format module: PDFs built in the test (text, headings, columns, tables, rotation, scans, encryption, damage)
and the real-world corpus."""

from __future__ import annotations

import csv
import io
import zlib
from pathlib import Path
from typing import Any

import orjson
import pypdfium2 as pdfium
import pytest

from extract_fn.formats import pdf_format, pdf_text
from extract_fn.formats.base import ExtractRequest
from shared.artifact import validate_artifact
from shared.contract import LOST_OCR, LOST_TABLES, ErrorCode, ExtractionError

REQ = ExtractRequest(format="pdf")


# ---------------------------------------------------------------------------------------------------------------
# A small PDF writer: pages are content streams; fonts F1 (Helvetica) and F2 (Helvetica-Bold); image Im1.


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def text_op(x: float, y: float, text: str, size: float = 10, bold: bool = False) -> str:
    return f"BT /{'F2' if bold else 'F1'} {size} Tf {x} {y} Td ({_esc(text)}) Tj ET\n"


def make_pdf(
    pages: list[str],
    *,
    rotate: dict[int, int] | None = None,
    outline: list[tuple[str, int]] | None = None,
    kids_loop: bool = False,
) -> bytes:
    objs: list[bytes] = []

    def add(body: bytes) -> int:
        objs.append(body)
        return len(objs)

    catalog = add(b"")  # filled in below
    pages_id = add(b"")
    f1 = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>")
    f2 = add(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica-Bold /Encoding /WinAnsiEncoding >>")
    img = add(
        b"<< /Type /XObject /Subtype /Image /Width 2 /Height 2 /ColorSpace /DeviceGray /BitsPerComponent 8 "
        b"/Length 4 >>\nstream\n\x00\xff\xff\x00\nendstream"
    )
    page_ids = []
    for k, content in enumerate(pages):
        raw = content.encode("latin-1")
        data = zlib.compress(raw)
        cid = add(b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream")
        rot = f" /Rotate {rotate[k]}" if rotate and k in rotate else ""
        page_ids.append(
            add(
                (
                    f"<< /Type /Page /Parent {pages_id} 0 R /MediaBox [0 0 612 792] /Resources << /Font << "
                    f"/F1 {f1} 0 R /F2 {f2} 0 R >> /XObject << /Im1 {img} 0 R >> >> /Contents {cid} 0 R{rot} >>"
                ).encode()
            )
        )
    outline_ref = ""
    if outline:
        root_id = add(b"")
        item_ids = [add(b"") for _ in outline]
        for i, (title, page_index) in enumerate(outline):
            parts = [f"/Title ({_esc(title)}) /Parent {root_id} 0 R /Dest [{page_ids[page_index]} 0 R /XYZ 0 792 0]"]
            if i > 0:
                parts.append(f"/Prev {item_ids[i - 1]} 0 R")
            if i + 1 < len(item_ids):
                parts.append(f"/Next {item_ids[i + 1]} 0 R")
            objs[item_ids[i] - 1] = ("<< " + " ".join(parts) + " >>").encode()
        objs[root_id - 1] = (
            f"<< /Type /Outlines /First {item_ids[0]} 0 R /Last {item_ids[-1]} 0 R /Count {len(item_ids)} >>"
        ).encode()
        outline_ref = f" /Outlines {root_id} 0 R"
    objs[catalog - 1] = f"<< /Type /Catalog /Pages {pages_id} 0 R{outline_ref} >>".encode()
    kids = " ".join(f"{p} 0 R" for p in page_ids)
    if kids_loop:
        kids = f"{pages_id} 0 R"
    objs[pages_id - 1] = f"<< /Type /Pages /Kids [{kids}] /Count {len(page_ids)} >>".encode()
    out = io.BytesIO()
    out.write(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objs, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % i + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref))
    return out.getvalue()


def run(data: bytes, request: ExtractRequest = REQ) -> dict[str, Any]:
    artifact = pdf_format.extract(data, request)
    validate_artifact(orjson.dumps(artifact), format="pdf", original_size=len(data))
    return artifact


def outcome(data: bytes) -> dict[str, Any] | ExtractionError:
    """The validated artifact, or the contract error the file ended in."""
    try:
        return run(data)
    except ExtractionError as exc:
        return exc


def body_lines(x: float, y: float, lines: list[str], pitch: float = 12, size: float = 10) -> str:
    return "".join(text_op(x, y - k * pitch, t, size) for k, t in enumerate(lines))


LOREM = [
    "Alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu",
    "xi omicron pi rho sigma tau upsilon phi chi psi omega alpha beta gamma",
    "delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho",
]


# ---------------------------------------------------------------------------------------------------------------


def test_headings_from_font_size_and_paragraphs() -> None:
    page1 = (
        text_op(72, 720, "Introduction", 18, bold=True)
        + body_lines(72, 690, LOREM)
        + body_lines(72, 640, LOREM[:2])
        + text_op(72, 590, "Methods", 18, bold=True)
        + body_lines(72, 560, LOREM)
    )
    page2 = text_op(72, 720, "Details", 14, bold=True) + body_lines(72, 690, LOREM)
    a = run(make_pdf([page1, page2]))
    blocks = a["blocks"]
    heads = [(b["text"], b["depth"]) for b in blocks if b["type"] == "heading"]
    assert heads == [("Introduction", 1), ("Methods", 1), ("Details", 2)]
    intro = blocks[0]
    paras = [b for b in blocks if b["type"] == "paragraph"]
    assert len(paras) == 4  # two under Introduction (a gap between them), one under Methods, one under Details
    assert paras[0]["text"] == " ".join(LOREM)
    assert paras[0]["parent"] == intro["id"]
    assert paras[0]["section_path"] == ["Introduction"]
    assert paras[1]["text"] == " ".join(LOREM[:2])
    details = next(b for b in blocks if b["text"] == "Details")
    assert details["section_path"] == ["Methods", "Details"]
    assert details["locator"] == {"page_start": 2, "page_end": 2}
    assert paras[3]["section_path"] == ["Methods", "Details"]
    assert paras[3]["parent"] == details["id"]
    assert all("page_start" in b["locator"] for b in blocks)
    assert a["coverage"] == {"unit": "pages", "total": 2, "extracted": 2, "failed": [], "lost": [], "complete": True}
    assert a["parser"] == "loom-pdf"
    assert a["parser_version"].startswith("1+pypdfium2-")
    assert a["options"] == {}


def test_headings_from_outline_win_over_fonts() -> None:
    # same-size text everywhere: only the outline can say what the headings are
    page = (
        text_op(72, 720, "Overview")
        + body_lines(72, 700, LOREM)
        + text_op(72, 640, "Scope")
        + body_lines(72, 620, LOREM[:1])
    )
    page2 = text_op(72, 720, "Appendix") + body_lines(72, 700, LOREM[:2])
    a = run(make_pdf([page, page2], outline=[("Overview", 0), ("Scope", 0), ("Appendix", 1)]))
    heads = [(b["text"], b["depth"], b["locator"]["page_start"]) for b in a["blocks"] if b["type"] == "heading"]
    assert heads == [("Overview", 1, 1), ("Scope", 1, 1), ("Appendix", 1, 2)]
    assert a["attrs"]["outline"] is True
    scope_para = next(b for b in a["blocks"] if b["text"] == LOREM[0])
    assert scope_para["section_path"] == ["Scope"]


def test_two_columns_read_column_by_column() -> None:
    left = [f"left column line {k} with some words in it" for k in range(12)]
    right = [f"right column line {k} with other words here" for k in range(12)]
    page = (
        text_op(150, 740, "A Two Column Page", 16, bold=True) + body_lines(72, 700, left) + body_lines(330, 700, right)
    )
    a = run(make_pdf([page]))
    paras = [b["text"] for b in a["blocks"] if b["type"] == "paragraph"]
    assert paras == [" ".join(left), " ".join(right)]


def _grid(x0: float, y_top: float, widths: list[float], rows: int, height: float) -> str:
    xs = [x0]
    for w in widths:
        xs.append(xs[-1] + w)
    ys = [y_top - k * height for k in range(rows + 1)]
    ops = ["0.5 w"]
    for y in ys:
        ops.append(f"{xs[0]} {y} m {xs[-1]} {y} l S")
    for x in xs:
        ops.append(f"{x} {ys[0]} m {x} {ys[-1]} l S")
    return "\n".join(ops) + "\n"


def test_ruled_table_becomes_table_and_row_blocks() -> None:
    cells = [["Name", "Count", "City"], ["Ada", "12", "London"], ["Linus", "1,024", "Helsinki"]]
    content = text_op(72, 740, "Inventory", 16, bold=True) + _grid(72, 700, [120, 80, 120], 3, 20)
    xs = [76, 196, 276]
    for r, row in enumerate(cells):
        for c, value in enumerate(row):
            content += text_op(xs[c], 700 - r * 20 - 14, value)
    content += body_lines(72, 600, LOREM[:1])
    a = run(make_pdf([content]))
    assert len(a["tables"]) == 1
    t = a["tables"][0]
    assert t["name"] == "page 1 table 1"
    assert [c["name"] for c in t["columns"]] == ["Name", "Count", "City"]
    assert [c["type"] for c in t["columns"]] == ["string", "number", "string"]
    assert t["rows"] == [["Ada", 12, "London"], ["Linus", 1024, "Helsinki"]]
    assert t["header_rows"] == 1
    assert t["locator"] == {"page_start": 1, "page_end": 1, "row_start": 1, "row_end": 3}
    rows = [b for b in a["blocks"] if b.get("attrs", {}).get("table_id") == t["id"]]
    assert [b["locator"]["row_start"] for b in rows] == [2, 3]
    assert all(b["type"] == "paragraph" and b["locator"]["row_end"] == b["locator"]["row_start"] for b in rows)
    assert rows[0]["text"] == "Name: Ada | Count: 12 | City: London"
    assert rows[0]["section_path"] == ["Inventory"]
    # the table sits between the heading and the paragraph below it, and its cells are not repeated as prose
    order = [b["text"] for b in a["blocks"]]
    assert order.index("Inventory") < order.index(rows[0]["text"]) < order.index(LOREM[0])
    assert not any("Linus" in b["text"] for b in a["blocks"] if "table_id" not in b.get("attrs", {}))


def test_aligned_text_table_without_rules() -> None:
    content = ""
    for r in range(6):
        for c in range(4):
            content += text_op(100 + c * 90, 700 - r * 16, f"r{r}c{c}")
    a = run(make_pdf([content]))
    assert len(a["tables"]) == 1
    t = a["tables"][0]
    assert [c["name"] for c in t["columns"]] == ["r0c0", "r0c1", "r0c2", "r0c3"]
    assert len(t["rows"]) == 5
    assert t["rows"][-1] == ["r5c0", "r5c1", "r5c2", "r5c3"]


def test_prose_is_not_a_table() -> None:
    a = run(make_pdf([body_lines(72, 700, LOREM * 3)]))
    assert "tables" not in a
    assert [b["type"] for b in a["blocks"]] == ["paragraph"]


def test_rotated_text_carries_orientation() -> None:
    upright = body_lines(72, 700, LOREM[:2])
    # text running bottom-to-top (rotated 90 degrees counter-clockwise)
    sideways = "BT /F1 10 Tf 0 1 -1 0 560 200 Tm (Rotated margin note) Tj ET\n"
    a = run(make_pdf([upright + sideways]))
    by_text = {b["text"]: b for b in a["blocks"]}
    assert "orientation" not in by_text[" ".join(LOREM[:2])].get("attrs", {})
    assert by_text["Rotated margin note"]["attrs"]["orientation"] == 270
    # a page shown rotated: its upright text runs in another direction than the page as displayed
    b = run(make_pdf([upright], rotate={0: 90}))
    assert b["blocks"][0]["attrs"]["orientation"] == 90


def test_annotations_a_viewer_shows_are_read_in_place() -> None:
    """A filled form field's value, a FreeText note and a stamp are drawn by their appearance streams, not the
    page's content: pdfium's text page alone left them out, and the page said complete. A hidden one stays out, and
    a caption the page prints too is read once."""
    from tests import hostile_inputs as hi

    a = run(hi.annotated_pdf())
    assert [b["text"] for b in a["blocks"]] == ["Full name: Margaret Hamilton", "Approved by legal", "Submit"]
    assert a["coverage"]["complete"] is True


def test_embedded_files_are_said_lost() -> None:
    """A portfolio's documents and a PDF's attachments are files of their own: not read, and not complete."""
    from tests import hostile_inputs as hi

    data = hi._pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R /Names << /EmbeddedFiles << /Names [(report.txt) 5 0 R] >> >> >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 7 0 R"
            b" >> >> >>",
            hi._pdf_stream(b"BT /F1 12 Tf 72 700 Td (See the attached report.) Tj ET"),
            b"<< /Type /Filespec /F (report.txt) /UF (report.txt) /EF << /F 6 0 R >> >>",
            hi._pdf_stream(b"the report", b"/Type /EmbeddedFile"),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )
    a = run(data)
    assert [b["text"] for b in a["blocks"]] == ["See the attached report."]
    assert a["coverage"]["lost"] == ["attachments"]
    assert a["coverage"]["complete"] is False
    assert a["warnings"] == [
        "the PDF carries 1 embedded file (attachments, or a portfolio's documents), not read here: send each as a "
        "file of its own"
    ]


def _layered_pdf(config: bytes, names: tuple[bytes, bytes] = (b"Reviewed", b"Draft")) -> bytes:
    """A page whose content draws a line outside any layer, one in layer 5 and one in layer 6 (marked content
    ``/OC /L1 BDC``, as layout programs write layers), under the default configuration ``config``."""
    from tests import hostile_inputs as hi

    content = (
        b"BT /F1 12 Tf 72 720 Td (Always shown.) Tj ET "
        b"/OC /L1 BDC BT /F1 12 Tf 72 690 Td (In the first layer.) Tj ET EMC "
        b"/OC /L2 BDC BT /F1 30 Tf 72 400 Td (DRAFT NOT FOR RELEASE) Tj ET EMC"
    )
    return hi._pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R /OCProperties << /OCGs [5 0 R 6 0 R] /D << %s >> >> >>" % config,
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 7 0 R"
            b" >> /Properties << /L1 5 0 R /L2 6 0 R >> >> >>",
            hi._pdf_stream(content),
            b"<< /Type /OCG /Name (%s) >>" % names[0],
            b"<< /Type /OCG /Name (%s) >>" % names[1],
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        ]
    )


@pytest.mark.parametrize(
    ("config", "names", "shown"),
    [
        (b"/ON [5 0 R] /OFF [6 0 R]", (b"Reviewed", b"Draft"), ["Always shown.", "In the first layer."]),
        (b"/BaseState /OFF /ON [6 0 R]", (b"Reviewed", b"Draft"), ["Always shown.", "DRAFT NOT FOR RELEASE"]),
        (b"/OFF [6 0 R]", (b"Same", b"Same"), ["Always shown.", "In the first layer.", "DRAFT NOT FOR RELEASE"]),
        (b"", (b"Reviewed", b"Draft"), ["Always shown.", "In the first layer.", "DRAFT NOT FOR RELEASE"]),
    ],
    ids=["off_listed", "base_state_off", "name_shared_with_a_shown_layer", "all_on"],
)
def test_text_in_a_layer_the_viewer_hides_is_not_read(
    config: bytes, names: tuple[bytes, bytes], shown: list[str]
) -> None:
    """pdfium reads every text object whatever its layer; a viewer draws a layer only when the default configuration
    leaves it on. A hidden draft watermark was read, as the page's largest heading. A layer whose name a shown one
    shares cannot be told apart through pdfium's marks: it is read."""
    a = run(_layered_pdf(config, names))
    assert sorted(b["text"] for b in a["blocks"]) == sorted(shown)
    assert a["coverage"]["complete"] is True


def test_text_drawn_past_the_page_edge_is_not_read() -> None:
    """Text placed outside the page's box (below it, right of it, or upright on a page shown turned) is never shown
    by a viewer: it was read as ordinary paragraphs (hidden keyword stuffing reads so)."""
    hidden = text_op(72, -200, "below the page") + text_op(700, 400, "right of the page")
    a = run(
        make_pdf([body_lines(72, 700, LOREM[:1]) + hidden, body_lines(72, 700, LOREM[1:2]) + hidden], rotate={1: 90})
    )
    assert [b["text"] for b in a["blocks"]] == [LOREM[0], LOREM[1]]
    edge = text_op(600, 400, "straddles the edge")  # begins on the page: shown in part, read
    assert [b["text"] for b in run(make_pdf([edge]))["blocks"]] == ["straddles the edge"]


def test_scanned_page_is_failed_unit_and_loses_ocr() -> None:
    scan = "q 500 0 0 700 50 50 cm /Im1 Do Q\n"
    a = run(make_pdf([body_lines(72, 700, LOREM[:1]), scan, ""]))
    cov = a["coverage"]
    assert cov["total"] == 3
    assert cov["extracted"] == 2  # the blank page is extracted (it has nothing to read)
    # a 2 x 2 image holds no text: OCR is not asked (tests/test_ocr.py has the OCR cases)
    assert cov["failed"] == [
        {
            "unit": "page 2",
            "reason": "no text layer (scanned image); its images are too small to hold text (not read by OCR)",
        }
    ]
    assert cov["lost"] == [LOST_OCR]
    assert cov["complete"] is False


def _encrypt(data: bytes, user: str, owner: str) -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(data)))
    writer.encrypt(user_password=user, owner_password=owner, algorithm="AES-128")
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def test_encrypted_needing_password_is_corrupt() -> None:
    data = _encrypt(make_pdf([body_lines(72, 700, LOREM[:1])]), "secret", "owner")
    with pytest.raises(ExtractionError) as err:
        pdf_format.extract(data, REQ)
    assert err.value.code == ErrorCode.CORRUPT
    assert "password" in err.value.message
    assert "encrypted" in err.value.message


def test_owner_password_only_is_extracted() -> None:
    data = _encrypt(make_pdf([body_lines(72, 700, LOREM[:1])]), "", "owner")
    a = run(data)
    assert a["blocks"][0]["text"] == LOREM[0]


@pytest.mark.parametrize("data", [b"", b"%PDF-1.7\n garbage", b"not a pdf at all", b"\x00" * 100])
def test_damaged_is_corrupt(data: bytes) -> None:
    with pytest.raises(ExtractionError) as err:
        pdf_format.extract(data, REQ)
    assert err.value.code == ErrorCode.CORRUPT


def test_truncated_pdf_is_corrupt_or_partial() -> None:
    full = make_pdf([body_lines(72, 700, LOREM), body_lines(72, 700, LOREM[:1])])
    data = full[: len(full) // 2]
    a = outcome(data)
    if isinstance(a, ExtractionError):
        assert a.code == ErrorCode.CORRUPT
    else:
        assert a["coverage"]["extracted"] <= a["coverage"]["total"]


def test_page_tree_loop_does_not_hang() -> None:
    data = make_pdf([body_lines(72, 700, LOREM[:1])], kids_loop=True)
    a = outcome(data)
    if isinstance(a, ExtractionError):
        assert a.code == ErrorCode.CORRUPT
    else:  # pdfium believes /Count but finds no page: every page it counts is a damaged unit
        assert a["coverage"]["extracted"] == 0
        assert all(f["reason"] == pdf_format.DAMAGED_REASON for f in a["coverage"]["failed"])
        assert len(a["coverage"]["failed"]) == a["coverage"]["total"]
        assert a["blocks"] == []


def test_output_budget_cuts_pages_and_reports_them() -> None:
    pages = [body_lines(72, 700, LOREM * 10) for _ in range(6)]
    data = make_pdf(pages)
    a = run(data, ExtractRequest(format="pdf", max_output_bytes=4000))
    cov = a["coverage"]
    assert 0 < cov["extracted"] < 6
    assert len(cov["failed"]) == 6 - cov["extracted"]
    assert all("output size limit" in f["reason"] for f in cov["failed"])
    assert a["warnings"]
    assert len(orjson.dumps(a)) < 8000


# ---------------------------------------------------------------------------------------------------------------
# Corpus


def _manifest(corpus_dir: Path, fmt: str) -> list[dict[str, str]]:
    with (corpus_dir / "MANIFEST.tsv").open(newline="", encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh, delimiter="\t") if r["format"] == fmt]


CORPUS_DIR = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
PDF_ROWS = _manifest(CORPUS_DIR, "pdf") if (CORPUS_DIR / "MANIFEST.tsv").exists() else []


def _raw_text(data: bytes) -> str:
    pdf = pdfium.PdfDocument(data)
    try:
        out = []
        for i in range(len(pdf)):
            page = pdf[i]
            tp = page.get_textpage()
            out.append(tp.get_text_range())
            tp.close()
            page.close()
        return "".join(out)
    finally:
        pdf.close()


def test_corpus_is_present(corpus: Path) -> None:
    rows = _manifest(corpus, "pdf")
    assert sum(1 for r in rows if r["expect"] == "ok") >= 40
    assert len(PDF_ROWS) == len(rows)


@pytest.mark.parametrize("row", PDF_ROWS, ids=[r["path"] for r in PDF_ROWS])
def test_corpus_file(row: dict[str, str], corpus: Path) -> None:
    data = (corpus / row["path"]).read_bytes()
    either = "clean error or empty text both acceptable" in row["note"]
    if row["expect"] in ("corrupt", "encrypted") and not either:
        with pytest.raises(ExtractionError) as err:
            pdf_format.extract(data, REQ)
        assert err.value.code == ErrorCode.CORRUPT
        if row["expect"] == "encrypted":
            assert "encrypted" in err.value.message
            assert "password" in err.value.message
        return
    a = outcome(data)
    if isinstance(a, ExtractionError):
        assert either, f"{row['path']} ({row['expect']}): {a.code} {a.message}"
        assert a.code == ErrorCode.CORRUPT
        return
    text = "".join(b["text"] for b in a["blocks"])
    if _raw_text(data).strip():
        assert text.strip(), "pdfium finds text in this file, the artifact has none"
    if "no text layer" in row["note"] or "image-based" in row["note"]:
        # read by OCR (every block marked), or a failed unit saying why OCR could not read it and ocr lost
        if a["coverage"]["lost"]:
            assert a["coverage"]["lost"] == [LOST_OCR]
            assert a["coverage"]["failed"][0]["reason"].startswith("no text layer (scanned image); ")
        else:
            assert a["blocks"]
            assert all("ocr" in b["attrs"] for b in a["blocks"])
    assert a["coverage"]["total"] == len(pdfium.PdfDocument(data))


def test_corpus_outline_and_columns(corpus: Path) -> None:
    a = run((corpus / "pdf/sample-files-009-geotopo-117-pages.pdf").read_bytes())
    heads = [b for b in a["blocks"] if b["type"] == "heading"]
    assert [h["text"] for h in heads[:3]] == [
        "1 Topologische Grundbegriffe",
        "1.1 Topologische Räume",
        "1.2 Metrische Räume",
    ]
    assert heads[1]["depth"] == 2
    assert heads[1]["parent"] == heads[0]["id"]
    b = run((corpus / "pdf/sample-files-026-multicolumn.pdf").read_bytes())
    texts = [x["text"] for x in b["blocks"]]
    # the first column's text ends before the second column's begins
    first = next(i for i, t in enumerate(texts) if t.startswith("This is a sample document"))
    second = next(i for i, t in enumerate(texts) if t.startswith("pellentesque ante"))
    assert first < second
    assert "pellentesque" not in texts[first]
    assert any(t.get("name") == "page 3 table 1" for t in b.get("tables", []))


def test_corpus_rotated_table(corpus: Path) -> None:
    a = run((corpus / "pdf/camelot-anticlockwise-table-1.pdf").read_bytes())
    assert a["tables"]
    t = a["tables"][0]
    assert t["attrs"]["orientation"] == 270
    kerala = [r for r in t["rows"] if "Kerala" in r]
    assert len(kerala) == 1
    assert kerala[0][kerala[0].index("Kerala") + 1] in ("5738", 5738)


def test_broken_geometry_falls_back_to_plain_text(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_args: Any, **_kwargs: Any) -> list[Any]:
        raise ValueError("cannot convert float NaN to integer")

    monkeypatch.setattr(pdf_format, "_layout_page", broken)
    a = run(make_pdf([body_lines(72, 700, LOREM[:2])]))
    assert [b["text"] for b in a["blocks"]] == LOREM[:2]
    assert a["coverage"]["extracted"] == 1
    assert "broken geometry" in a["warnings"][0]


# -- fidelity (issue 15): tables never eat text, every word once ------------------------------------------------


def test_lines_drawn_over_prose_are_not_a_table() -> None:
    # a figure's box grid drawn over running text: its lines cut words ("Contr" | "ol"), so it is no table
    prose = [
        "Supercalifragilistic words run straight across the drawn lines here",
        "Extraordinarily long sentences continue right through every column",
        "Nevertheless the paragraph keeps going beyond the figure's borders",
        "Unbelievably the remaining words cross the vertical rules as well",
    ]
    content = _grid(72, 700, [100, 100, 100], 4, 20) + body_lines(76, 686, prose, pitch=20)
    a = run(make_pdf([content]))
    assert "tables" not in a
    text = " ".join(b["text"] for b in a["blocks"])
    for line in prose:
        assert line in text


def test_prose_beside_aligned_labels_is_not_a_table() -> None:
    # a figure's labels in a grid on the left, a paragraph's lines on the right at the same baselines
    content = ""
    labels = [["Trace", "Number", "String", "Linked"], ["Trace", "Boolean", "Number", "Closed"]] * 2
    for r, row in enumerate(labels):
        for c, label in enumerate(row):
            content += text_op(60 + c * 50, 700 - r * 12, label, 8)
    prose = [
        "it has been blacklisted. We now avoid that problem by patching the",
        "bytecode. We define an extra no-op bytecode that indicates a loop",
        "header. The VM calls into the trace monitor every time the interpreter",
        "executes a loop header no-op. To blacklist a fragment, we simply replace",
        "the loop header no-op with a regular no-op. Thus, the interpreter will",
        "never again even call into the trace monitor, as the figure shows.",
    ]
    content += body_lines(290, 712, prose)  # the paragraph runs on above and below the labels
    a = run(make_pdf([content]))
    assert "tables" not in a
    text = " ".join(b["text"] for b in a["blocks"])
    for line in prose:
        assert line in text


def test_abandoned_table_detection_is_in_coverage() -> None:
    import dataclasses

    from extract_fn.limits import LIMITS

    request = ExtractRequest(format="pdf", limits=dataclasses.replace(LIMITS, pdf_max_path_objects=2))
    cells = [["Name", "Count"], ["Ada", "12"], ["Linus", "1024"]]
    content = _grid(72, 700, [120, 80], 3, 20)
    for r, row in enumerate(cells):
        for c, value in enumerate(row):
            content += text_op([76, 196][c], 700 - r * 20 - 14, value)
    a = run(make_pdf([content]), request)
    assert a["coverage"]["lost"] == [LOST_TABLES]
    assert a["coverage"]["complete"] is False
    assert any("page 1: table detection abandoned" in w and "paths" in w for w in a["warnings"])
    assert "Linus" in " ".join(b["text"] for b in a["blocks"])  # the text is still read


def test_corpus_figures_do_not_eat_text(corpus: Path) -> None:
    a = run((corpus / "pdf/pdfjs-tracemonkey.pdf").read_bytes())
    assert not [t["name"] for t in a.get("tables", []) if t["locator"]["page_start"] in (6, 7)]
    heads = [b["text"] for b in a["blocks"] if b["type"] == "heading"]
    assert "4.1 Nesting Algorithm" in heads
    assert "4.2 Blacklisting with Nesting" in heads
    text = " ".join(b["text"] for b in a["blocks"])
    assert "Figure 8. Control flow graph of a loop with two nested loops" in text
    # a word broken at a line-end hyphen is whole again, and TeX's accent over a dotless i is one letter
    assert "dynamic languages" in text
    assert "naïve" in text
    # a hyphen a compound holds stays when the line breaks at it ("stop-the-" "world", "IEEE-" "754"), and a word
    # broken before a capital is still one word ("Trace-" "Monkey")
    assert "stop-the-world" in text
    assert "IEEE-754" in text
    assert "TraceMonkey" in text
    assert "Trace-Monkey" not in text
    b = run((corpus / "pdf/pdfplumber-federal-register-2020-17221.pdf").read_bytes())
    assert "Agência Nacional de Aviação Civil" in " ".join(x["text"] for x in b["blocks"])  # accents after letters


def test_corpus_right_to_left_words_stay_apart(corpus: Path) -> None:
    a = run((corpus / "pdf/docling-right-to-left-01.pdf").read_bytes())
    text = " ".join(b["text"] for b in a["blocks"])
    assert "Python من" in text
    assert "Pythonمن" not in text


def test_corpus_unmapped_glyphs_are_left_out_and_said(corpus: Path) -> None:
    a = run((corpus / "pdf/sample-files-015-arabic-habibi.pdf").read_bytes())
    text = " ".join(b["text"] for b in a["blocks"])
    assert "habibi" in text
    assert "ϲΒϴΒ" not in text
    # Drawn, so seen: the page is read (extracted), and a unit of it says what is not, so the file is not complete.
    assert a["coverage"]["extracted"] == a["coverage"]["total"] == 1
    failed = a["coverage"]["failed"]
    assert [f["unit"] for f in failed] == ["page 1 glyphs"]
    assert "characters are left out: their font maps them to no text" in failed[0]["reason"]
    assert a["coverage"]["complete"] is False


def test_text_fixes() -> None:
    assert pdf_text.compose("ı", "¨") == "ï"
    assert pdf_text.compose("a", "˜") == "ã"
    assert pdf_text.compose("2", "^") is None
    assert pdf_text.space_direction_changes("R وPython من") == "R و Python من"
    assert pdf_text.space_direction_changes("שלוםWorld") == "שלום World"  # Hebrew too, either way round
    assert pdf_text.space_direction_changes("Worldשלום") == "World שלום"
    assert pdf_text.space_direction_changes("plain text") == "plain text"


def test_corpus_superscript_stays_on_its_line(corpus: Path) -> None:
    # pdfium gives the exponent of "X = R²" a line of its own above; it is read where it stands, after the R
    a = run((corpus / "pdf/sample-files-009-geotopo-117-pages.pdf").read_bytes())
    texts = [b["text"] for b in a["blocks"] if b["locator"]["page_start"] == 12]
    assert texts[2] in ("X = R 2", "X = R2")
    assert "2" not in texts[:2]


def test_corpus_footnote_mark_is_not_run_into_its_word(corpus: Path) -> None:
    a = run((corpus / "pdf/pdfplumber-federal-register-2020-17221.pdf").read_bytes())
    text = " ".join(b["text"] for b in a["blocks"])
    assert "1 Preliminary KNKT.18.10.35.04" in text
    assert "1Preliminary" not in text
