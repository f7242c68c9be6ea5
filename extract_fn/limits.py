"""Every limit the format modules apply, in one frozen object (after Kreuzberg's ``extractors/security.rs``).

Each field is named once, with its default and the reason for it (``reason`` in the field's metadata, which
``limits_table`` renders for docs/extractor.md; a test keeps the two equal). No limit here has a setting: the
service's own limits (original size, time, memory, artifact size) are settings (``extract_fn.settings``) and the
artifact size reaches the modules as ``ExtractRequest.max_output_bytes``. ``LIMITS`` is built once, at import; a
request carries it (``ExtractRequest.limits``) and the frame hands it to the module in its context, so a test
lowers one limit with ``dataclasses.replace(LIMITS, ...)`` instead of patching a module.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Final


def _limit(default: Any, reason: str) -> Any:
    return field(default=default, metadata={"reason": reason})


@dataclass(frozen=True, slots=True)
class Limits:
    # Zip packages (docx, pptx, xlsx), checked from the central directory before anything is inflated.
    zip_max_members: int = _limit(20_000, "parts in one package; a real document has at most a few thousand")
    zip_max_total_uncompressed: int = _limit(1024**3, "bytes all parts inflate to (1 GiB): a zip bomb's sum")
    zip_max_member_uncompressed: int = _limit(512 * 1024**2, "bytes one part inflates to (512 MiB)")
    zip_max_ratio: float = _limit(200.0, "inflated / compressed size of a part over `zip_ratio_floor`: a bomb's sign")
    zip_ratio_floor: int = _limit(1024**2, "bytes a part must inflate to before its ratio counts (1 MiB)")

    # The output budget: the share of max_output_bytes the blocks may take, the rest is the envelope's.
    output_share_paged: float = _limit(
        0.92, "pdf, docx, pptx: share of max_output_bytes their size estimate may reach before they stop adding"
    )
    output_reserve_keyed: int = _limit(
        64 * 1024, "sql, toml: bytes of max_output_bytes kept for coverage, warnings and the artifact's frame"
    )
    output_reserve_text: int = _limit(
        16 * 1024, "text, markdown, html: bytes kept for the envelope (at most half of max_output_bytes)"
    )
    output_reserve_table: int = _limit(16_384, "csv, xlsx, parquet: bytes kept for coverage, warnings and columns")

    # Text.
    wide_text_sample: int = _limit(
        64 * 1024, "bytes looked at for UTF-16/32 without a byte-order mark (NULs in every other position)"
    )

    # html.
    html_max_nesting_depth: int = _limit(
        10_000, "nested tags; deeper ones are read as plain text containers (Lexbor: ~1 s here, minutes at 200,000)"
    )
    html_max_select_options: int = _limit(
        2_000,
        "options of one select kept as options (Lexbor's cost grows with the square of a select's options: 20,000 "
        "took 3 s, 50,000 28 s); past it their tags are blanked and their text is loose",
    )
    html_max_options: int = _limit(20_000, "options kept as options in all of a page's selects (see the above)")
    html_max_title_chars: int = _limit(2000, "characters of the document title kept in attrs")
    html_max_table_cells: int = _limit(
        1_000_000, "slots in one table's grid (colspan/rowspan can ask for far more than the source holds)"
    )
    html_max_table_width: int = _limit(16_384, "slots in a table row (the contract's bound on a table's columns)")
    html_max_colspan: int = _limit(1000, "a cell's colspan (the HTML standard's limit)")
    html_max_rowspan: int = _limit(65534, "a cell's rowspan (the HTML standard's limit)")

    # markdown.
    markdown_max_nesting: int = _limit(
        100, "nested quotes and lists; deeper content is a failed unit (markdown-it's own maxNesting)"
    )
    markdown_max_bracket_nesting: int = _limit(
        32,
        "nested `[` in one paragraph; past it links and images are off there (markdown-it re-scans each `[`: "
        "1,000,000 of them took minutes)",
    )
    markdown_max_failed_entries: int = _limit(50, "failed line ranges listed in coverage")
    markdown_html_max_nesting_depth: int = _limit(
        1000,
        "nested tags in one HTML block; from the first tag deeper on, its tags are dropped and its text kept "
        "(Lexbor's cost grows with depth squared: 0.25 s at 10,000)",
    )

    # pdf: checked before pdfium reads the file (pdf_streams; pdfium aborts on a failed allocation).
    pdf_max_pages: int = _limit(
        20_000, "pages in one file (~35 s at 1.75 ms a page; a page tree can list one page a million times)"
    )
    pdf_max_stream_bytes: int = _limit(256 * 1024**2, "bytes one stream inflates to (pdfium inflates it whole)")
    pdf_max_inflated_bytes: int = _limit(1024**3, "bytes all compressed streams inflate to (bounds the check: ~2 s)")
    pdf_max_stream_ratio: float = _limit(
        200.0, "inflated / compressed size of one stream past `pdf_stream_ratio_floor`: a bomb's sign, as in zips"
    )
    pdf_stream_ratio_floor: int = _limit(32 * 1024**2, "bytes a stream must inflate to before its ratio counts")
    pdf_max_text_operators: int = _limit(
        500_000, "text-showing operators in one content stream (3,000,000 ran a worker out of memory after 15 s)"
    )
    pdf_max_outline_entries: int = _limit(10_000, "outline (bookmark) entries read")
    pdf_max_path_objects: int = _limit(20_000, "path objects of a page read for ruling lines; past it none are used")
    pdf_max_path_segments: int = _limit(200_000, "path segments of a page read for ruling lines")
    pdf_max_form_drawings: int = _limit(
        100_000,
        "form XObject drawings pdfium parses for one page (a form that draws itself twice is parsed 2^40 times); "
        "past it the page is failed, not loaded",
    )
    pdf_max_text_order_steps: int = _limit(
        20_000_000,
        "steps pdfium's text reader takes ordering one page's text objects by line (~0.25 s; 60 runs of 1,000 "
        "one-letter Tj drawn over one another took 13 s); past it the page is failed, not read",
    )
    pdf_max_annotations: int = _limit(
        1_000,
        "annotations of one page drawn into it for reading (pdfium's flattening grows with their square: 20,000 "
        "took 4 s, 40,000 17 s); past it they are not read and a failed unit says so",
    )
    pdf_max_form_depth: int = _limit(6, "form XObjects nested in form XObjects, walked for text and lines")
    pdf_max_table_cells: int = _limit(200_000, "cells of one ruled grid before it is not taken as a table")

    # OCR (extract_fn.ocr; its page cap and time budget are settings: EXTRACTOR_OCR_MAX_PAGES, EXTRACTOR_OCR_BUDGET_S).
    ocr_dpi: int = _limit(300, "resolution a page without a text layer is rendered at for OCR")
    ocr_max_image_pixels: int = _limit(
        16_000_000,
        "pixels of a page render or a picture given to OCR (a 20,000 x 20,000 picture is refused before it is "
        "decoded; a page larger than that is rendered at a lower resolution)",
    )
    ocr_max_render_image_pixels: int = _limit(
        160_000_000,
        "pixels of the images pdfium decodes to render one PDF page (or region) for OCR, their declared sizes "
        "summed: an A0 sheet scanned at 300 dpi is 139 M (pdfium decodes each image whole, ~4 bytes a pixel in "
        "colour: a 1 MB file of one 30,000 x 30,000 image took 1.1 GB); past it the page is not rendered",
    )
    ocr_min_picture_pixels: int = _limit(
        40_000, "pixels a picture (or a PDF image region) must have to be read by OCR (an icon holds no text to read)"
    )

    # pptx.
    pptx_max_group_depth: int = _limit(200, "shape groups nested in groups; deeper shapes are not read")

    # sql.
    sql_parse_budget_chars: int = _limit(
        4 * 1024**2,
        "characters given to sqlglot per file (work, not seconds: the same artifact on any machine; a few seconds of "
        "parsing on the benchmark machine); the statements past it are only split and keyed by keywords",
    )
    sql_max_parse_chars: int = _limit(256 * 1024, "characters of a statement given to the parser")
    sql_max_paren_depth: int = _limit(150, "parentheses nested in a statement given to the parser (its recursion)")

    # toml.
    toml_rs_max_depth: int = _limit(
        32, "nesting proved below this goes to toml-rs (which recurses unbounded); deeper files to the Python parser"
    )

    # xlsx.
    xlsx_max_sheet_cells: int = _limit(
        1 << 25, "cells in a sheet's bounding box, read before calamine allocates 32 bytes a cell (it aborts on OOM)"
    )
    xlsx_max_formulas: int = _limit(200, "formulas kept per sheet in attrs")
    xlsx_max_merged: int = _limit(1_000, "merged ranges kept per sheet in attrs")

    # parquet: the footer is checked before decoding.
    parquet_bomb_ratio: float = _limit(1000.0, "decoded / stored size of a column chunk over `parquet_bomb_floor`")
    parquet_bomb_floor: int = _limit(64 * 1024**2, "bytes a column chunk must decode to before its ratio counts")
    parquet_max_depth: int = _limit(64, "nested list/map/struct levels in the schema")


LIMITS: Final = Limits()


def limits_table(limits: Limits = LIMITS) -> str:
    """The limits as a Markdown table: name, default, reason (the one in docs/extractor.md)."""
    rows = ["| limit | default | reason |", "|---|---|---|"]
    for f in dataclasses.fields(limits):
        value = getattr(limits, f.name)
        shown = f"{value:,}" if isinstance(value, int) else f"{value:g}"
        rows.append(f"| `{f.name}` | {shown} | {f.metadata['reason']} |")
    return "\n".join(rows)
