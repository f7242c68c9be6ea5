"""Hostile inputs against the reference extractor running as its own process, over a real socket.

One ``python -m extract_fn serve`` runs for the module with small limits (768 MiB per worker, a 32 MiB artifact,
96 MiB originals, 2 workers) and a time limit no honest input reaches even on a slow, busy machine; the two tests of
the time limit itself get a second service with a 10 s limit and an input that needs far more. Each test sends one
kind of hostile input (built by tests/hostile_inputs.py, the big ones at test time) and checks two things:

- the answer is the contract's: a 422 whose error body carries the expected code, or a 200 whose artifact passes the
  shared validator and is honest about anything it left out (``coverage`` says so, never a silent loss);
- the service is still whole right after it: its process runs, ``GET /v1/capabilities`` is 200 and a small
  Markdown file extracts to a valid artifact.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Final

import orjson
import pytest
import requests

from shared.artifact import validate_artifact
from shared.contract import FORMATS, TEXT_FORMATS, classify_answer
from tests import hostile_inputs as hi

pytestmark = pytest.mark.xdist_group("extract-hostile")  # one service for the module, even under xdist

MiB: Final = 1024 * 1024
# The big honest inputs must never meet the time limit, however slow the machine: a 40 MB Markdown line takes 2-5 s
# on a quiet 2-core machine and went past 10 s under a load average of 24 (so no test here depends on speed).
TIMEOUT_S: Final = 600
# The time-limit tests' own service: a hostile file that needs minutes meets this limit on any machine.
STRICT_TIMEOUT_S: Final = 10
MAX_BYTES: Final = 96 * MiB
MAX_OUTPUT: Final = 32 * MiB
SETTINGS: Final = {
    "EXTRACTOR_TIMEOUT_S": str(TIMEOUT_S),
    "EXTRACTOR_MEMORY_LIMIT_MB": "768",
    "EXTRACTOR_MAX_OUTPUT_BYTES": str(MAX_OUTPUT),
    "EXTRACTOR_WORKERS": "2",
    "EXTRACTOR_MAX_BYTES": str(MAX_BYTES),
    # OCR's time budget is its own setting (default 30 s, at most half the time limit), not half of 600 s
    "EXTRACTOR_OCR_BUDGET_S": "5",
}
STRICT_SETTINGS: Final = {**SETTINGS, "EXTRACTOR_TIMEOUT_S": str(STRICT_TIMEOUT_S)}
PROBE: Final = b"# Health check\n\nThe service still answers after a hostile file.\n"
PARQUET_BOMB: Final = hi.CORPUS / "parquet" / "parquet-testing-large_string_map.brotli.parquet"


@pytest.fixture(scope="module")
def service() -> Iterator[hi.LiveService]:
    with hi.start_service(SETTINGS) as live:
        yield live


@pytest.fixture(scope="module")
def strict_service() -> Iterator[hi.LiveService]:
    with hi.start_service(STRICT_SETTINGS) as live:
        yield live


# ---------------------------------------------------------------------------------------------------------------
# Checking answers


def _where(service: hi.LiveService) -> str:
    return f"\n--- service log (tail) ---\n{service.log_tail()}"


def assert_error(service: hi.LiveService, response: requests.Response, *codes: str) -> str:
    """The answer is a 422 contract error body with one of ``codes``; its message."""
    assert response.status_code == 422, (
        f"expected 422 {codes}, got {response.status_code}: {response.text[:500]}{_where(service)}"
    )
    assert "content-encoding" not in response.headers
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    code, message = body["error"]["code"], body["error"]["message"]
    assert code in codes, f"expected {codes}, got {code}: {message}{_where(service)}"
    assert message.strip(), "an error needs a message a person can act on"
    answer = classify_answer(response.status_code, response.headers.get("content-encoding"), response.content)
    assert answer.code == code, answer  # the server reads the same code
    return str(message)


def assert_artifact(service: hi.LiveService, response: requests.Response, fmt: str, size: int) -> dict[str, Any]:
    """The answer is a 200 artifact that passes the shared validator; the artifact as data."""
    assert response.status_code == 200, (
        f"expected 200, got {response.status_code}: {response.text[:500]}{_where(service)}"
    )
    assert "content-encoding" not in response.headers
    assert len(response.content) <= MAX_OUTPUT, "the artifact is over the service's own output limit"
    validate_artifact(response.content, format=fmt, original_size=size)
    artifact: dict[str, Any] = orjson.loads(response.content)
    assert artifact["format"] == fmt
    return artifact


def assert_honest(artifact: dict[str, Any], needle: str) -> None:
    """``needle`` is in some block's text, or the artifact says it left something out.

    The contract: coverage.failed lists each unit not extracted, and complete (when sent) is false then.
    """
    if any(needle in block["text"] for block in artifact["blocks"]):
        return
    coverage = artifact["coverage"]
    assert coverage.get("complete") is not True, f"{needle!r} is missing from a 'complete' artifact: {coverage}"
    assert coverage["failed"], (
        f"{needle!r} was left out, but coverage.failed does not list the unit not extracted "
        f"(extracted {coverage['extracted']} of {coverage['total']}, warnings {artifact['warnings']})"
    )


def assert_cut_honestly(artifact: dict[str, Any]) -> None:
    """An artifact cut at the output limit says so: fewer units extracted than there are, each listed as failed."""
    coverage = artifact["coverage"]
    assert coverage["extracted"] < coverage["total"], coverage
    assert coverage.get("complete") is not True, coverage
    assert coverage["failed"], (
        f"the artifact was cut (extracted {coverage['extracted']} of {coverage['total']}) but coverage.failed "
        f"does not list what was left out; warnings: {artifact['warnings']}"
    )


def assert_healthy(service: hi.LiveService) -> None:
    """Right after a hostile input: the process runs, capabilities answer, and small files extract (two at once, so
    both workers are asked when both are idle)."""
    assert service.alive(), f"the service process exited ({service.proc.returncode}){_where(service)}"
    caps = service.capabilities()
    assert caps.status_code == 200, f"capabilities: {caps.status_code} {caps.text[:300]}{_where(service)}"
    assert caps.json()["contract_version"] == 1
    with ThreadPoolExecutor(2) as pool:
        responses = list(pool.map(lambda i: service.extract("markdown", PROBE, name=f"probe{i}.md"), range(2)))
    for response in responses:
        artifact = assert_artifact(service, response, "markdown", len(PROBE))
        texts = [b["text"] for b in artifact["blocks"]]
        assert texts == ["Health check", "The service still answers after a hostile file."], texts
        assert artifact["coverage"]["complete"] is True


def test_the_service_runs_with_the_small_limits(service: hi.LiveService) -> None:
    caps = service.capabilities().json()
    assert caps["max_bytes"] == MAX_BYTES
    assert [f["format"] for f in caps["formats"]] == list(FORMATS)
    assert caps["limits"] == {
        "timeout_s": TIMEOUT_S,
        "memory_limit_mb": 768,
        "max_output_bytes": MAX_OUTPUT,
        "workers": 2,
    }
    assert_healthy(service)


# ---------------------------------------------------------------------------------------------------------------
# Deep nesting: an answer in well under the time limit, never a crash or a stack overflow


def test_markdown_with_100000_nested_block_quotes(service: hi.LiveService) -> None:
    data = hi.nested_blockquotes_markdown(100_000)
    artifact = assert_artifact(service, service.extract("markdown", data, name="quotes.md"), "markdown", len(data))
    assert_honest(artifact, "deep inside the quotes")
    assert_healthy(service)


def test_markdown_with_50000_nested_lists(service: hi.LiveService) -> None:
    data = hi.nested_lists_markdown(50_000)
    artifact = assert_artifact(service, service.extract("markdown", data, name="lists.md"), "markdown", len(data))
    assert_honest(artifact, "deep inside the lists")
    assert_healthy(service)


def test_html_with_200000_nested_divs(service: hi.LiveService) -> None:
    """2.2 MB of HTML: a browser caps the tree's depth and shows the text; so should the extractor, well inside the
    time limit (a parser whose cost grows with depth squared needs minutes for this file)."""
    data = hi.nested_divs_html(200_000)
    artifact = assert_artifact(service, service.extract("html", data, name="divs.html"), "html", len(data))
    assert_honest(artifact, "deep")
    assert_healthy(service)


def test_toml_with_100000_nested_arrays(service: hi.LiveService) -> None:
    data = hi.nested_arrays_toml(100_000)
    message = assert_error(service, service.extract("toml", data, name="deep.toml"), "resource_limit")
    assert "nest" in message.lower()
    assert_healthy(service)


def test_sql_with_100000_nested_parentheses(service: hi.LiveService) -> None:
    data = hi.nested_parentheses_sql(100_000)
    artifact = assert_artifact(service, service.extract("sql", data, name="deep.sql"), "sql", len(data))
    assert [b["type"] for b in artifact["blocks"]] == ["sql_statement"]  # the statement is kept as text
    assert artifact["blocks"][0]["text"].startswith("SELECT (((")
    coverage = artifact["coverage"]
    assert coverage["failed"], coverage  # ...and said to be unparsed
    assert "sql_structure" in coverage["lost"]
    assert_healthy(service)


def test_docx_whose_document_nests_100000_elements(service: hi.LiveService) -> None:
    data = hi.nested_elements_docx(100_000)
    message = assert_error(service, service.extract("docx", data, name="deep.docx"), "corrupt")
    assert message.startswith("part word/document.xml of the docx file nests its XML elements more than 256 levels")
    assert "XML_PARSE_HUGE" not in message  # libxml2's advice names a parser option, not what the sender can do
    assert_healthy(service)


# ---------------------------------------------------------------------------------------------------------------
# Huge lines: one block too big for the 32 MiB artifact is left out and said to be


@pytest.mark.parametrize("size", [40_000_000, 80_000_000], ids=["40MB", "80MB"])
def test_a_huge_single_line_text_file(service: hi.LiveService, size: int) -> None:
    """One line of 40 MB (80 MB: still under max_bytes), too big for the artifact: left out, and said to be."""
    data = hi.huge_line_text(size)
    artifact = assert_artifact(service, service.extract("text", data, name="line.txt"), "text", len(data))
    assert_cut_honestly(artifact)
    assert_healthy(service)


def test_a_40_mb_single_line_markdown_file(service: hi.LiveService) -> None:
    data = hi.huge_line_markdown(40_000_000)
    artifact = assert_artifact(service, service.extract("markdown", data, name="line.md"), "markdown", len(data))
    assert artifact["blocks"][0]["type"] == "heading"
    assert artifact["blocks"][0]["text"] == "A heading"
    assert_cut_honestly(artifact)
    assert_healthy(service)


def test_a_20_mb_single_csv_cell(service: hi.LiveService) -> None:
    """The cell fits the original but not the artifact twice over (a table row and its row block carry it)."""
    data = hi.huge_cell_csv(20_000_000)
    artifact = assert_artifact(service, service.extract("csv", data, name="cell.csv"), "csv", len(data))
    if artifact["coverage"]["extracted"] < artifact["coverage"]["total"]:
        assert_cut_honestly(artifact)
    else:  # kept: then whole, in the table
        assert len(artifact["tables"][0]["rows"][0][1]) == 20_000_000
    assert_healthy(service)


# ---------------------------------------------------------------------------------------------------------------
# 8 MB of NUL bytes as each format


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_body_of_zeros(service: hi.LiveService, fmt: str) -> None:
    data = bytes(8 * MiB)
    response = service.extract(fmt, data, name=f"zeros.{fmt}")
    if fmt in TEXT_FORMATS:
        message = assert_error(service, response, "format_mismatch")
        assert "binary" in message, message  # "the file is binary data, not csv"
        assert fmt in message, message
    else:
        message = assert_error(service, response, "corrupt", "format_mismatch").lower()
        # It says what the file is: not the format asked for (no PDF / zip / Parquet structure), or binary data.
        assert fmt in message, message
        assert "not" in message or "binary" in message, message
    assert_healthy(service)


# ---------------------------------------------------------------------------------------------------------------
# Time: a file that keeps a parser busy far past the limit costs one worker for the limit, never the service


def slow_sql() -> bytes:
    """16 MB of small statements (200,000): the SQL module splits, parses and keys them all, 25-40 s here, so the
    10 s limit comes first."""
    return hi.many_statements_sql(16_000_000)


def test_a_file_that_takes_longer_than_the_limit_is_a_timeout_while_normal_requests_are_served(
    strict_service: hi.LiveService,
) -> None:
    service = strict_service
    data = slow_sql()
    with ThreadPoolExecutor(1) as pool:
        slow = pool.submit(service.extract, "sql", data, name="slow.sql")
        time.sleep(0.5)  # the hostile file is on its way to a worker (its upload takes milliseconds)
        for i in range(3):
            body = f"# Normal {i}\n\nserved beside a hostile file\n".encode()
            artifact = assert_artifact(service, service.extract("markdown", body, name="n.md"), "markdown", len(body))
            assert artifact["blocks"][0]["text"] == f"Normal {i}"
        # The normal files were answered while the hostile one still held its worker (it runs for the whole limit).
        assert not slow.done(), "the hostile file ended before the normal requests beside it"
        message = assert_error(service, slow.result(), "timeout")
    assert f"{STRICT_TIMEOUT_S} s" in message
    assert_healthy(service)


def test_a_normal_request_waits_for_a_worker_when_both_are_busy(strict_service: hi.LiveService) -> None:
    """Two hostile files take both workers; a normal file queued behind them is answered within its own deadline
    (queue time counts toward it): served if a worker came free in time, else 503 with Retry-After, never late and
    never a hang. Once the hostile files have their ``timeout``, the same file is served."""
    service = strict_service
    data = slow_sql()
    body = b"# Queued\n\nserved after the workers were replaced\n"
    with ThreadPoolExecutor(3) as pool:
        slow = [pool.submit(service.extract, "sql", data, name=f"slow{i}.sql") for i in range(2)]
        time.sleep(0.5)
        normal = pool.submit(service.extract, "markdown", body, name="queued.md")
        queued = normal.result()
        if queued.status_code != 200:
            assert queued.status_code == 503, queued.text
            assert queued.headers.get("Retry-After"), queued.headers
            assert queued.json()["error"]["code"] == "service_unavailable"
        for future in slow:
            ended = future.result()
            if ended.status_code == 503:  # it waited for a worker (the last test's being replaced), then ran out
                assert ended.headers.get("Retry-After"), ended.headers
                assert ended.json()["error"]["code"] == "service_unavailable"
            else:
                assert_error(service, ended, "timeout")
    retried = queued if queued.status_code == 200 else service.extract("markdown", body, name="queued.md")
    artifact = assert_artifact(service, retried, "markdown", len(body))
    assert artifact["blocks"][0]["text"] == "Queued"
    assert_healthy(service)


# ---------------------------------------------------------------------------------------------------------------
# Zip bombs and entity-expansion bombs


@pytest.mark.parametrize("inflated", [hi.BOMB_SIZE, 400 * MiB], ids=["2GiB", "400MiB"])
@pytest.mark.parametrize("kind", ["docx", "xlsx", "pptx"])
def test_a_zip_bomb(service: hi.LiveService, kind: str, inflated: int) -> None:
    """The main part really inflates to ``inflated`` bytes of XML from ~2 MB (or 0.4 MB): refused from the zip's
    directory before anything is inflated."""
    data = hi.zip_bomb(kind, inflated)
    assert len(data) < 3 * MiB
    message = assert_error(service, service.extract(kind, data, name=f"bomb.{kind}"), "resource_limit")
    assert hi.PACKAGES[kind][1] in message  # names the part
    assert_healthy(service)


@pytest.mark.parametrize("kind", ["docx", "xlsx", "pptx"])
def test_a_zip_bomb_whose_headers_lie_about_its_size(service: hi.LiveService, kind: str) -> None:
    """The headers say 64 KiB; the part inflates to 2 GiB. A reader that stops at the stated size sees a damaged
    part (its CRC fails): the file is corrupt, or (a deck whose one slide is damaged) that slide is listed as failed.
    """
    data = hi.lying_zip_bomb(kind)
    response = service.extract(kind, data, name=f"liar.{kind}")
    if response.status_code == 200:
        artifact = assert_artifact(service, response, kind, len(data))
        assert not any(block["text"].strip() for block in artifact["blocks"])
        coverage = artifact["coverage"]
        assert coverage["failed"], coverage
        assert coverage["extracted"] < coverage["total"], coverage
    else:
        assert_error(service, response, "corrupt")
    assert_healthy(service)


@pytest.mark.parametrize(
    ("kind", "make"),
    [("docx", hi.billion_laughs_docx), ("xlsx", hi.billion_laughs_xlsx), ("pptx", hi.billion_laughs_pptx)],
    ids=["docx", "xlsx", "pptx"],
)
def test_xml_billion_laughs(service: hi.LiveService, kind: str, make: Any) -> None:
    """Ten levels of ten entities: 10**10 "lol"s (30 GB) if expanded. Refused, never expanded: OOXML forbids DTDs,
    so the one answer in every OOXML format is ``corrupt`` naming the part (it was ``resource_limit`` in docx/pptx)."""
    data = make()
    assert len(data) < 4096
    message = assert_error(service, service.extract(kind, data, name=f"laughs.{kind}"), "corrupt")
    assert "declares a DTD" in message, message
    assert_healthy(service)


def test_the_corpus_parquet_decompression_bomb(service: hi.LiveService) -> None:
    """4 KB whose string column decodes to over 2 GB (MANIFEST: STRESS/DECOMPRESSION BOMB)."""
    data = PARQUET_BOMB.read_bytes()
    message = assert_error(service, service.extract("parquet", data, name=PARQUET_BOMB.name), "resource_limit")
    assert "bomb" in message or "inflates" in message, message
    assert_healthy(service)


# ---------------------------------------------------------------------------------------------------------------
# Size limits


def test_a_body_over_max_bytes_with_content_length(service: hi.LiveService) -> None:
    data = bytes(MAX_BYTES + 1)
    response = service.extract("text", data, name="big.txt")
    assert response.request.headers["Content-Length"] == str(MAX_BYTES + 1)
    message = assert_error(service, response, "too_large")
    assert str(MAX_BYTES) in message
    assert_healthy(service)


def test_a_chunked_body_over_max_bytes(service: hi.LiveService) -> None:
    sent = 0

    def body() -> Iterator[bytes]:
        nonlocal sent
        chunk = b"chunked text " * (MiB // 13)
        while sent < 2 * MAX_BYTES:  # far past the limit: the service stops reading at it
            sent += len(chunk)
            yield chunk

    response = service.extract("text", body(), name="stream.txt")
    assert response.request.headers["Transfer-Encoding"] == "chunked"
    assert "Content-Length" not in response.request.headers
    message = assert_error(service, response, "too_large")
    assert str(MAX_BYTES) in message
    assert_healthy(service)


def test_a_body_of_exactly_max_bytes_is_read(service: hi.LiveService) -> None:
    """At the limit, not over it: read and sniffed (NUL bytes are no text), not refused as too_large."""
    data = bytes(MAX_BYTES)
    assert_error(service, service.extract("text", data, name="limit.txt"), "format_mismatch")
    assert_healthy(service)


def test_an_artifact_that_would_pass_the_output_limit_is_cut_honestly(service: hi.LiveService) -> None:
    """30 MB of one-line paragraphs of 1,000 characters: 30,000 blocks, more than a 32 MiB artifact holds with their
    locators. The service's design cuts the artifact below the limit and says where (never a silent loss)."""
    data = hi.paragraphs_text(30_000, 1000)
    paragraph = hi.one_line(1000).decode()
    response = service.extract("text", data, name="paragraphs.txt")
    artifact = assert_artifact(service, response, "text", len(data))
    assert_cut_honestly(artifact)
    blocks = artifact["blocks"]
    assert 0 < len(blocks) < 30_000
    assert all(block["text"] == paragraph.strip() for block in blocks)
    # What is kept is the start of the file, in order, and the failed range starts right after it.
    assert blocks[-1]["locator"]["line_end"] == 2 * len(blocks) - 1
    assert artifact["coverage"]["failed"][0]["unit"].startswith(f"lines {2 * len(blocks) + 1}-")
    assert_healthy(service)


# ---------------------------------------------------------------------------------------------------------------
# OCR (extract_fn.ocr): bounded by the file's OCR page cap, its time budget (at most half the 10 s timeout here) and
# the pixel cap, never by the service's timeout


def test_a_pdf_of_500_image_pages_stops_at_the_ocr_cap_or_budget(service: hi.LiveService) -> None:
    data = hi.image_pages_pdf(500)
    response = service.extract("pdf", data, name="scans.pdf")
    artifact = assert_artifact(service, response, "pdf", len(data))
    coverage = artifact["coverage"]
    assert coverage["total"] == 500
    assert coverage["extracted"] == 0  # a blank image holds no text
    assert coverage["lost"] == ["ocr"]
    reasons = [f["reason"] for f in coverage["failed"]]
    assert len(reasons) == 500
    assert all(r.startswith("no text layer (scanned image); ") for r in reasons)
    not_read = [r for r in reasons if "not read by OCR: the file" in r]
    assert len(not_read) >= 500 - 40  # the OCR cap (40) or the budget stopped it, and says which
    assert_healthy(service)


def test_a_page_of_20000_by_20000_pixels_is_read_within_the_pixel_cap(service: hi.LiveService) -> None:
    data = hi.image_pages_pdf(1, side_pt=4800)  # 66.7 inches: 20,000 x 20,000 pixels at 300 dpi
    response = service.extract("pdf", data, name="poster.pdf")
    artifact = assert_artifact(service, response, "pdf", len(data))
    assert artifact["coverage"]["failed"] == [
        {"unit": "page 1", "reason": "no text layer (scanned image); OCR found no text in this image"}
    ]
    assert_healthy(service)


def test_a_20000_by_20000_picture_in_a_docx_is_refused_before_decoding(service: hi.LiveService) -> None:
    data = hi.docx_with_picture(hi.huge_picture_png(20_000, 20_000))
    response = service.extract("docx", data, name="poster.docx")
    artifact = assert_artifact(service, response, "docx", len(data))
    assert [b["text"] for b in artifact["blocks"]] == ["a picture follows", ""]  # the picture's block: no text read
    assert artifact["coverage"]["lost"] == ["image_text", "ocr"]
    assert any("word/media/image1.png was not read by OCR" in w for w in artifact["warnings"]), artifact["warnings"]
    assert_healthy(service)
