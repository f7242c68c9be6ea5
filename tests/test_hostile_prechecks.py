"""Small hostile files answered in seconds by cheap pre-checks and complexity caps, never by the timeout, and without
the native-parser crash that was their old outcome (issue 13).

The real format modules run in a worker pool with a generous time limit: an answer of ``timeout`` fails a test
(the limit is the oracle, never an elapsed time), and ``pool.stats.replaced`` shows whether a worker died.
"""

from __future__ import annotations

import binascii
import io
import zipfile
import zlib
from typing import Any

import orjson
import pytest

from extract_fn.formats import MODULES
from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.xlsx_extent import box_cells
from extract_fn.limits import LIMITS
from extract_fn.workers import WorkerPool
from shared.artifact import validate_artifact
from shared.contract import ErrorCode, ExtractionError
from tests import hostile_inputs as hi

MIB = 1024 * 1024


def _run(pool: WorkerPool, fmt: str, data: bytes) -> bytes:
    return pool.run_sync(MODULES[fmt] + ":extract", data, ExtractRequest(format=fmt, max_output_bytes=64 * MIB))


def _refused(pool: WorkerPool, fmt: str, data: bytes) -> ExtractionError:
    """The file is refused (any code but timeout) and its worker survived."""
    replaced = pool.stats.replaced
    with pytest.raises(ExtractionError) as info:
        _run(pool, fmt, data)
    err = info.value
    assert err.code is not ErrorCode.TIMEOUT, err.message
    assert pool.stats.replaced == replaced, f"a worker died: {err.message}"
    assert "Traceback" not in err.message
    assert "/tmp" not in err.message  # nothing about the host
    return err


def _artifact(pool: WorkerPool, fmt: str, data: bytes) -> dict[str, Any]:
    replaced = pool.stats.replaced
    raw = _run(pool, fmt, data)  # a timeout raises here and fails the test
    validate_artifact(raw, format=fmt, original_size=len(data))
    assert pool.stats.replaced == replaced
    artifact: dict[str, Any] = orjson.loads(raw)
    return artifact


# ---------------------------------------------------------------------------------------------------------------
# Complexity caps: an artifact, at once


def test_html_select_of_100000_options_is_parsed_in_linear_time(pool: WorkerPool) -> None:
    """1.6 MB: Lexbor runs the selectedness rules over a select's options as each is inserted (50,000 took 28 s
    to parse); past ``html_max_select_options`` the option tags are blanked, their text kept."""
    options = "".join(f"<option>o{i}</option>" for i in range(100_000))
    artifact = _artifact(pool, "html", f"<p>Pick one</p><select>{options}</select><p>after</p>".encode())
    texts = [b["text"] for b in artifact["blocks"]]
    assert texts[0] == "Pick one"
    assert texts[-1] == "after"
    assert "o99999" in texts[1]
    blanked = 100_000 - LIMITS.html_max_select_options
    assert any(w.startswith(f"{blanked:,} options of long selects") for w in artifact["warnings"])


def test_html_of_a_million_unclosed_tags_is_answered(pool: WorkerPool) -> None:
    """2 MB of ``<o`` with no ``>``: the depth scan's tag pattern ran from each ``<`` to the end of the text (past the
    timeout); a tag now stops at the next ``<``."""
    artifact = _artifact(pool, "html", b"<o" * 1_000_000)
    assert artifact["coverage"]["complete"] is True


def test_html_srcdoc_documents_past_100_are_a_failed_entry() -> None:
    """Each srcdoc is a parse of its own (500,000 of them in 15 MB took 18.5 s): the first 100 are read."""
    from extract_fn.formats import html_format

    page = "".join(f"<iframe srcdoc='<p>frame {k}'></iframe>" for k in range(150)).encode()
    artifact = html_format.extract(page, ExtractRequest(format="html"))
    assert [b["text"] for b in artifact["blocks"]] == [f"frame {k}" for k in range(100)]
    assert artifact["coverage"]["failed"] == [
        {"unit": "iframe srcdoc documents", "reason": "not extracted: past the first 100 in the file"}
    ]


def test_markdown_html_block_of_300000_nested_divs_gets_a_depth_cap(pool: WorkerPool) -> None:
    """3.3 MB; Lexbor's cost grows with depth squared (100,000 took 11-30 s here, 300,000 minutes) before markdown's
    HTML blocks got a depth cap (now ``markdown_html_max_nesting_depth``: past it, tags dropped, text kept)."""
    data = hi.nested_divs_markdown(300_000)
    artifact = _artifact(pool, "markdown", data)
    assert [b["text"] for b in artifact["blocks"]] == ["deep"]
    assert artifact["blocks"][0]["attrs"]["html"] is True
    assert any(f"deeper than {LIMITS.markdown_html_max_nesting_depth} levels" in w for w in artifact["warnings"])


@pytest.mark.parametrize("fmt", ["markdown", "text", "toml", "sql"])
def test_a_2_mb_json_like_file_of_nested_brackets(pool: WorkerPool, fmt: str) -> None:
    """1,000,000 nested ``[``: markdown's link rule re-scanned each one ~100 levels down (minutes); now its
    brackets are text, and the artifact says so. The other text formats answer as they did, in seconds."""
    data = hi.nested_brackets(1_000_000)
    if fmt == "toml":
        assert _refused(pool, fmt, data).code is ErrorCode.CORRUPT  # not TOML at all
        return
    artifact = _artifact(pool, fmt, data)
    assert artifact["blocks"], artifact["coverage"]
    if fmt == "markdown":
        assert artifact["blocks"][0]["text"].startswith("[[[[")
        assert any("square brackets" in w for w in artifact["warnings"]), artifact["warnings"]


def test_markdown_links_still_parse_beside_the_bracket_cap(pool: WorkerPool) -> None:
    data = b"[a [b] c](http://x.example) and ![img [x]](y.png)\n\n" + b"[" * 40 + b" forty open brackets\n"
    artifact = _artifact(pool, "markdown", data)
    assert [b["text"] for b in artifact["blocks"]] == ["a [b] c and img [x]", "[" * 40 + " forty open brackets"]
    assert artifact["warnings"] == [
        "1 paragraph(s) nest square brackets deeper than 32 levels: their brackets were read as text, not as links "
        "or images"
    ]


# ---------------------------------------------------------------------------------------------------------------
# Pre-checks before a native parser: resource_limit, no crash


def test_a_pdf_whose_page_tree_lists_one_page_a_million_times(pool: WorkerPool) -> None:
    err = _refused(pool, "pdf", hi.repeated_page_pdf(1_000_000))
    assert err.code is ErrorCode.RESOURCE_LIMIT
    assert err.message == (
        f"the PDF lists 1,000,000 pages, over this service's limit of {LIMITS.pdf_max_pages:,} pages per file; "
        "split it into smaller files"
    )


def test_a_pdf_flate_bomb_is_refused_before_pdfium_aborts(pool: WorkerPool) -> None:
    """1 MB inflating to 1 GiB: pdfium aborted the worker (SIGABRT) allocating it."""
    err = _refused(pool, "pdf", hi.flate_bomb_pdf(1024))
    assert err.code is ErrorCode.RESOURCE_LIMIT
    # Refused by its ratio once past the floor, long before it inflates to the size limit.
    assert f"inflates more than {LIMITS.pdf_max_stream_ratio:g} times its size" in err.message
    assert "decompression bomb" in err.message


@pytest.mark.parametrize(
    "spelling", ["escaped", "reference", "hex", "ascii85", "reference_to_array", "says_it_is_an_image"]
)
def test_a_pdf_flate_bomb_whose_filter_is_spelled_otherwise_is_refused(pool: WorkerPool, spelling: str) -> None:
    """pdfium reads an escaped name, a reference and a text layer before Flate as it reads /FlateDecode; the check
    read only the last, and each of these aborted the worker (SIGABRT) inflating 1 GiB."""
    err = _refused(pool, "pdf", hi.spelled_flate_bomb_pdf(spelling))
    assert err.code is ErrorCode.RESOURCE_LIMIT
    assert "decompression bomb" in err.message


@pytest.mark.parametrize("chain", ["flate_flate", "lzw", "run_length_flate", "flate_lzw"])
def test_a_pdf_bomb_behind_a_chain_of_filters_is_refused(pool: WorkerPool, chain: str) -> None:
    """pdfium decodes every filter of a stream's chain whole, one after the other; the check inflated only a first
    Flate layer, so a 4 KB page under [/FlateDecode /FlateDecode] and a 900 KB LZW page each aborted the worker
    (SIGABRT) on their way to 2 GiB."""
    err = _refused(pool, "pdf", hi.chained_bomb_pdf(chain))
    assert err.code is ErrorCode.RESOURCE_LIMIT
    assert "decompression bomb" in err.message


_TRICKS = {
    # how the stream's dictionary says /Filter, each read by pdfium as the chain that inflates to 1 GiB
    "array_past_512_bytes": b"/Filter [/FlateDecode" + b" " * 600 + b"/FlateDecode]",
    "comment_in_the_array": b"/Filter [/FlateDecode %]\n/FlateDecode]",
    "reference_in_the_array": b"/Filter [9 0 R]",
    "key_given_twice": b"/Filter /Crypt /Filter [/FlateDecode /FlateDecode]",
    "nested_dictionary_first": b"/Junk << /Filter /Crypt >> /Filter [/FlateDecode /FlateDecode]",
    "a_name_obj_before_it": b"/Filter [/FlateDecode /FlateDecode] /Junk /obj",
    "dictionary_past_4_KB": b"/Junk (" + b"x" * 5000 + b") /Filter [/FlateDecode /FlateDecode]",
    "lzw_with_a_decoy_early_change": b"/Junk << /EarlyChange 0 >> /Filter /LZWDecode",
}


@pytest.mark.parametrize("trick", list(_TRICKS), ids=list(_TRICKS))
def test_a_filter_chain_spelled_to_fool_the_check_is_still_decoded(trick: str) -> None:
    """A hostile-input review found eight dictionaries the stream check read otherwise than pdfium: each let a bomb
    through to abort the worker (SIGABRT). The dictionary's own keys are read now (the last of a repeated key, not
    a nested one's), the object's header is found past a name ``/obj`` and 4 KB, and LZW is decoded with either
    EarlyChange rule."""
    from extract_fn.formats.pdf_streams import check_streams

    if trick.startswith("lzw"):
        body = hi.lzw_bomb(600_000)
    else:
        inner = zlib.compressobj(9)
        body = zlib.compress(b"".join(inner.compress(b" " * (1 << 24)) for _ in range(64)) + inner.flush(), 9)
    data = hi.one_page_pdf(body, contents_extra=_TRICKS[trick])
    if trick == "reference_in_the_array":
        data = data.replace(b"xref", b"9 0 obj\n[/FlateDecode /FlateDecode]\nendobj\nxref", 1)
    problem = check_streams(
        data,
        max_stream_bytes=LIMITS.pdf_max_stream_bytes,
        max_total_bytes=LIMITS.pdf_max_inflated_bytes,
        max_text_operators=LIMITS.pdf_max_text_operators,
        max_ratio=LIMITS.pdf_max_stream_ratio,
        ratio_floor=LIMITS.pdf_stream_ratio_floor,
    )
    assert problem is not None
    assert "decompression bomb" in problem.message


@pytest.mark.parametrize(
    ("filters", "encode"),
    [
        (b"/LZWDecode", hi.lzw_encode),
        (b"[/FlateDecode /FlateDecode]", lambda raw: zlib.compress(zlib.compress(raw))),
        (b"[/RL /AHx /A85 /Fl]", lambda raw: hi.run_length_encode(binascii.hexlify(hi.a85(zlib.compress(raw))))),
    ],
    ids=["lzw", "flate_flate", "four_layers"],
)
def test_a_pdf_page_behind_a_chain_of_filters_is_read(pool: WorkerPool, filters: bytes, encode: Any) -> None:
    """The check decodes a chain as pdfium does: an ordinary page under LZW or several layers is read, not refused."""
    raw = b"BT /F1 24 Tf 72 700 Td (chained filters read) Tj ET"
    artifact = _artifact(pool, "pdf", hi.one_page_pdf(encode(raw), contents_extra=b"/Filter " + filters))
    assert [b["text"] for b in artifact["blocks"]] == ["chained filters read"]
    assert artifact["coverage"]["complete"] is True


def test_a_pdf_stream_that_inflates_steeply_but_stays_under_the_floor_is_read() -> None:
    """The ratio counts only past ``pdf_stream_ratio_floor``: a small, very repetitive content stream is read."""
    from extract_fn.formats.pdf_streams import check_streams

    raw = b"q 1 0 0 1 0 0 cm Q\n" * 200_000  # 3.8 MB of one drawing command, ~1000:1
    data = hi.one_page_pdf(zlib.compress(raw, 9), contents_extra=b"/Filter /FlateDecode")
    common = {"max_stream_bytes": 1 << 30, "max_total_bytes": 1 << 30, "max_text_operators": 1 << 30}
    assert check_streams(data, max_ratio=200.0, ratio_floor=32 << 20, **common) is None
    problem = check_streams(data, max_ratio=200.0, ratio_floor=1 << 20, **common)
    assert problem is not None
    assert "inflates more than 200 times its size" in problem.message


def test_a_pdf_stream_at_a_normal_ratio_is_read_past_the_floor() -> None:
    """A stream past the floor at an ordinary ratio (text-like content, ~3:1) passes the ratio check."""
    import random

    from extract_fn.formats.pdf_streams import check_streams

    rng = random.Random(7)
    words = [bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 9))) for _ in range(5000)]
    raw = b" ".join(rng.choice(words) for _ in range(700_000))  # ~4 MB of word salad
    data = hi.one_page_pdf(zlib.compress(raw, 9), contents_extra=b"/Filter /FlateDecode")
    common = {"max_stream_bytes": 1 << 30, "max_total_bytes": 1 << 30, "max_text_operators": 1 << 30}
    assert check_streams(data, max_ratio=200.0, ratio_floor=1 << 20, **common) is None


def test_a_pdf_page_of_3_million_text_operators(pool: WorkerPool) -> None:
    """30 KB: the worker ran out of memory after ~15 s (pdfium aborts on some variants)."""
    err = _refused(pool, "pdf", hi.many_text_operators_pdf(3_000_000))
    assert err.code is ErrorCode.RESOURCE_LIMIT
    assert f"more than {LIMITS.pdf_max_text_operators:,} text operators" in err.message


_MULTIPLYING_FORMS = {
    "loop": {"levels": None},
    "chain_of_18": {"levels": 18},  # 262,143 drawings: 0.6 s and 440 MB of pdfium, past the limit of 100,000
    "escaped_name": {"levels": None, "name": b"/X#30"},
    "inherited_resources": {"levels": None, "inherit": True},
    "hex_encoded_forms": {"levels": None, "form_filter": b" /Filter /ASCIIHexDecode"},
    "type3_glyph": {"levels": None, "glyph": True},  # 5 GB in 20 s: pdfium parses the glyph as it loads the page
    "escaped_subtype": {"levels": None, "subtype": b"/F#6Frm"},
    "indirect_subtype": {"levels": None, "indirect_subtype": True},
}


@pytest.mark.parametrize("shape", list(_MULTIPLYING_FORMS), ids=list(_MULTIPLYING_FORMS))
def test_a_pdf_page_whose_forms_multiply_is_failed_and_the_others_read(pool: WorkerPool, shape: str) -> None:
    """2 KB: a form drawing itself twice ran the worker out of its 2 GiB in 3.5 s (pdfium parses each drawing anew,
    40 levels down). Each shape is one way the drawing is found: by name, escaped, through the page's resources, in
    a stream the byte scan cannot read, from a Type 3 font's glyph, a /Subtype spelled with an escape or held in
    another object."""
    artifact = _artifact(pool, "pdf", hi.multiplying_forms_pdf(**_MULTIPLYING_FORMS[shape]))
    coverage = artifact["coverage"]
    assert coverage["extracted"] == 1
    assert [f["unit"] for f in coverage["failed"]] == ["page 2"]
    assert f"would be drawn more than {LIMITS.pdf_max_form_drawings:,} times" in coverage["failed"][0]["reason"]
    assert coverage["complete"] is False
    assert [b["text"] for b in artifact["blocks"]] == ["a plain page"]


def test_a_pdf_annotation_whose_appearance_multiplies_forms_fails_its_page(pool: WorkerPool) -> None:
    """The module draws the annotations a viewer shows into the page before reading it (``FPDFPage_Flatten``), so
    an appearance stream's forms are parsed as the page's: they are counted with the page's own drawings."""
    artifact = _artifact(pool, "pdf", hi.annotated_pdf(bomb=True))
    coverage = artifact["coverage"]
    assert [f["unit"] for f in coverage["failed"]] == ["page 1"]
    assert f"would be drawn more than {LIMITS.pdf_max_form_drawings:,} times" in coverage["failed"][0]["reason"]


def test_a_pdf_appearance_without_a_form_subtype_that_draws_itself_fails_its_page(pool: WorkerPool) -> None:
    """pdfium makes an appearance stream a form when it draws it into the page, whatever its /Subtype: one with
    none that draws itself twice passed the byte scan (which looked at /Subtype /Form only) and aborted the worker
    once flattened (SIGABRT after 6 s at 2 GiB)."""
    data = hi._pdf(
        [
            b"<< /Type /Catalog /Pages 2 0 R >>",
            b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
            b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R"
            b" >> >> /Annots [6 0 R] >>",
            hi._pdf_stream(b"BT /F1 12 Tf 72 700 Td (hello) Tj ET"),
            b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
            b"<< /Type /Annot /Subtype /FreeText /Rect [72 600 300 624] /F 4 /AP << /N 7 0 R >> >>",
            hi._pdf_stream(b"/X0 Do /X0 Do", b"/BBox [0 0 250 24] /Resources << /XObject << /X0 7 0 R >> >>"),
        ]
    )
    artifact = _artifact(pool, "pdf", data)
    assert [f["unit"] for f in artifact["coverage"]["failed"]] == ["page 1"]


def test_a_pdf_page_pypdf_cannot_count_fails_alone(pool: WorkerPool) -> None:
    """An /Annots that is no array made pypdf's count raise on page 1, and the whole file went unchecked: page 2's
    self-doubling form then aborted the worker. Such an /Annots is read as none (as pdfium reads it), and a page
    that cannot be counted at all is not loaded while the others are counted."""
    data = hi.multiplying_forms_pdf(None).replace(
        b"/Contents 4 0 R /Resources", b"/Contents 4 0 R /Annots 5 /Resources", 1
    )
    artifact = _artifact(pool, "pdf", data)
    assert [f["unit"] for f in artifact["coverage"]["failed"]] == ["page 2"]
    assert [b["text"] for b in artifact["blocks"]] == ["a plain page"]


def test_a_pdf_page_of_many_annotations_is_read_without_them(pool: WorkerPool) -> None:
    """pdfium's flattening grows with the square of a page's annotations (40,000 took 17 s, 100,000 the timeout):
    past ``pdf_max_annotations`` they are not drawn in, and a failed unit says so; the page's own text is read."""
    n = LIMITS.pdf_max_annotations + 1
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >>"
        b" >> /Annots [" + b" ".join(b"%d 0 R" % (7 + i) for i in range(n)) + b"] >>",
        hi._pdf_stream(b"BT /F1 12 Tf 72 700 Td (hello) Tj ET"),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        hi._pdf_stream(b"BT /F1 12 Tf 2 6 Td (note) Tj ET", b"/Type /XObject /Subtype /Form /BBox [0 0 250 24]"),
    ] + [b"<< /Type /Annot /Subtype /FreeText /Rect [72 100 300 124] /F 4 /AP << /N 6 0 R >> >>"] * n
    artifact = _artifact(pool, "pdf", hi._pdf(objects))
    assert [b["text"] for b in artifact["blocks"]] == ["hello"]
    assert [f["unit"] for f in artifact["coverage"]["failed"]] == ["page 1 annotations"]


@pytest.mark.parametrize("kwargs", [{"levels": 12}, {"levels": None, "draws": 1}], ids=["chain_of_12", "single_loop"])
def test_a_pdf_page_whose_forms_stay_under_the_limit_is_read(pool: WorkerPool, kwargs: dict[str, Any]) -> None:
    """A chain of 12 forms drawing the next twice (4,095 drawings) and a form drawing itself once (pdfium stops 40
    levels down: 40 drawings) are read with their text."""
    artifact = _artifact(pool, "pdf", hi.multiplying_forms_pdf(**kwargs))
    coverage = artifact["coverage"]
    assert coverage["failed"] == []
    assert coverage["extracted"] == 2
    text = " ".join(b["text"] for b in artifact["blocks"])
    assert ("level 11" if kwargs["levels"] else "loop") in text


def test_a_pdf_page_whose_text_is_in_forms_too_deep_for_pdfium_says_so(pool: WorkerPool) -> None:
    """pdfium reads forms 40 levels down: the page is read, and a failed unit says the deeper text is not."""
    artifact = _artifact(pool, "pdf", hi.multiplying_forms_pdf(42, draws=1))
    coverage = artifact["coverage"]
    assert coverage["extracted"] == 2
    assert [f["unit"] for f in coverage["failed"]] == ["page 2 deep forms"]
    assert coverage["complete"] is False
    text = " ".join(b["text"] for b in artifact["blocks"])
    assert "level 39" in text


@pytest.mark.parametrize(
    ("rotate", "in_form"),
    [(0, False), (90, False), (180, False), (0, True)],
    ids=["upright", "quarter_turn", "upside_down", "inside_a_form"],
)
def test_a_pdf_page_of_letters_drawn_over_one_another_is_failed_before_the_text_reader(
    pool: WorkerPool, rotate: int, in_form: bool
) -> None:
    """2 KB: 60 runs of 1,000 one-letter ``Tj`` over one another held a worker 13 s (120 runs: the timeout) in
    pdfium's text reader, sorting its line; the same inside a form the page draws once. On a page turned a
    quarter the line runs down the page: the same letters, replayed along y, are within the limit."""
    artifact = _artifact(pool, "pdf", hi.overlapping_runs_pdf(rotate=rotate, in_form=in_form))
    coverage = artifact["coverage"]
    if rotate == 90:
        assert coverage["failed"] == []
        return
    assert [f["unit"] for f in coverage["failed"]] == ["page 2"]
    assert f"more than {LIMITS.pdf_max_text_order_steps:,} steps" in coverage["failed"][0]["reason"]
    assert [b["text"] for b in artifact["blocks"]] == ["a plain page"]


def test_a_pdf_line_of_20000_letters_in_reading_order_is_read(pool: WorkerPool) -> None:
    """Letters set one after another cost the sort one step each, however many there are on a line."""
    artifact = _artifact(pool, "pdf", hi.overlapping_runs_pdf(runs=1, letters=20_000))
    assert artifact["coverage"]["failed"] == []
    assert artifact["coverage"]["extracted"] == 2


def test_a_small_pdf_under_every_pre_check_still_extracts(pool: WorkerPool) -> None:
    data = hi.one_page_pdf(b"BT /F1 12 Tf 72 720 Td (" + b"one page " * 3 + b") Tj ET", kids=1)
    artifact = _artifact(pool, "pdf", data)
    assert artifact["coverage"]["extracted"] == 1
    assert "one page" in artifact["blocks"][0]["text"]


def test_an_xlsx_whose_cells_span_a1_to_xfd1048576_is_refused_before_calamine_aborts(pool: WorkerPool) -> None:
    """1.6 KB: calamine aborted the worker allocating 512 GiB for the sheet's bounding box."""
    err = _refused(pool, "xlsx", hi.far_corners_xlsx())
    assert err.code is ErrorCode.RESOURCE_LIMIT
    assert err.message.startswith(
        f"sheet 'Sheet1' spans 17,179,869,184 cells from its first to its last cell, over this service's limit of "
        f"{LIMITS.xlsx_max_sheet_cells:,} cells per sheet"
    )


def test_a_sheet_whose_dimension_element_alone_claims_the_whole_grid_is_read(pool: WorkerPool) -> None:
    """The <dimension> element is the writer's claim, not where cells are: it is not what the check reads."""
    sheet = hi.xlsx_sheet_xml(hi.inline_row(1, "name") + hi.inline_row(2, "v")).replace(
        "<sheetData>", '<dimension ref="A1:XFD1048576"/><sheetData>'
    )
    artifact = _artifact(pool, "xlsx", hi.zip_parts(hi.xlsx_parts(sheet)))
    assert artifact["tables"][0]["rows"] == [["v"]]


LIMIT = LIMITS.xlsx_max_sheet_cells


def _c(ref: str = "", sep: str = " ") -> bytes:
    """A cell holding a value (``<c r="A1"><v>1</v></c>``; no ``r`` when ``ref`` is empty)."""
    attr = f'{sep}r="{ref}"' if ref else ""
    return f"<c{attr}><v>1</v></c>".encode()


FAR = 16_384 * 1_048_576


@pytest.mark.parametrize(
    ("xml", "cells"),
    [
        (b'<row r="1">' + _c("A1") + b'</row><row r="1048576">' + _c("XFD1048576") + b"</row>", FAR),
        # cells placed by position (no r): a far row, then a row of 16,384 cells
        (b'<row r="1">' + _c() + b'</row><row r="1048576">' + _c() * 16_384 + b"</row>", FAR),
        (b'<row r="1"><c r = "XFD1"><v>1</v></c></row><row r=\'1048576\'>' + _c("A1048576") + b"</row>", FAR),
        (_c("XFD1", sep="\t") + _c("A1048576"), FAR),
        (b'<x:row r="1"><x:c r="XFD1"><x:v>1</x:v></x:c></x:row><x:c r="A1048576"><x:v>1</x:v></x:c>', FAR),
        (_c("A1") + _c("AG1048576"), 33 * 1_048_576),
        # within the limit: None
        (_c("A1") + _c("AF1048576"), None),
        (_c("A1") + _c("Z999999"), None),
        (_c("B2") + _c("ZZ9999"), None),
        (_c("A1"), None),
        (b"", None),
        # styled cells without a value are not in calamine's box (the corpus's gnumeric file has them far out)
        (_c("A1") + b'<c r="XFD1048576" s="1"/>' + b'<c r="AAA1048574" s="1"/>', None),
    ],
)
def test_box_cells(xml: bytes, cells: int | None) -> None:
    assert box_cells(xml, LIMIT) == cells


def test_box_cells_takes_the_fast_path_on_the_benchmark_shape() -> None:
    """A dense 10-column sheet (the standard benchmark's shape) is proven within the limit by the plain scan."""
    rows = "".join(hi.inline_row(r, *(f"v{r}" for _ in range(10))) for r in range(1, 2001))
    xml = hi.xlsx_sheet_xml(rows).encode()
    from extract_fn.formats import xlsx_extent

    assert xlsx_extent._within_tiers(xml, LIMIT)
    assert box_cells(xml, LIMIT) is None
    with zipfile.ZipFile(io.BytesIO(hi.far_corners_xlsx())) as zf:
        assert not xlsx_extent._within_tiers(zf.read(hi.XLSX_SHEET), LIMIT)
