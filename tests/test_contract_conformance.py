"""Extractor contract v1, the service's side, rule by rule (../shared/specs/extractor-contract-v1.txt).

Each test names the rule it proves. The rules already proven elsewhere are listed in the checklist below with the
test that proves them; this module holds the rest, and the answers to what a hostile or sloppy client may send.
Every test here runs this deployment's own format modules (no stand-ins), over HTTP: Starlette's TestClient, or a
real uvicorn on a socket where the wire matters (framing, Content-Length, chunking, raw bytes).

Checklist (rule -> test; "http::" is tests/test_extract_http.py, "cli::" tests/test_extract_cli.py, "sniff::"
tests/test_sniff.py, the rest are here):

- the two endpoints, nothing else (404, 405 as JSON) -> http::test_unknown_routes_and_methods_are_json,
  test_head_and_options
- every call carries a bearer token; a missing or wrong one is 401 -> http::test_a_missing_or_wrong_token_is_401,
  http::test_the_token_is_compared_exactly, http::test_two_authorization_headers_are_refused,
  test_authorization_edge_cases, test_live_framing_garbage_is_a_4xx[raw-ff-token, huge-auth]
- EXTRACTOR_TOKENS rotation (several tokens at once, a trailing newline in the setting) ->
  http::test_each_rotated_token_is_accepted, test_rotation_from_the_environment
- refusal to start without a token -> test_no_token_no_service, http::test_the_app_refuses_to_start_without_tokens,
  cli::test_serve_refuses_to_start_without_tokens, http::test_the_function_app_adapter
- constant-time comparison -> test_tokens_are_compared_against_every_token_as_digests,
  test_the_digest_comparison_is_what_the_docs_say
- tokens never logged (nor echoed) -> test_tokens_never_reach_a_log_or_an_answer, http::test_tokens_are_never_logged,
  cli::test_serve_stops_cleanly_and_takes_its_workers_along
- capabilities: contract_version 1, extractor name and version, max_bytes, each format with its options ->
  test_capabilities_document, http::test_capabilities, http::test_capabilities_of_a_deployment_missing_a_module
- max_bytes is the largest original taken (by Content-Length, by stream) ->
  test_max_bytes_is_the_limit_by_length_and_by_stream,
  http::test_live_too_large_by_content_length_is_refused_without_reading,
  http::test_live_too_large_chunked_stops_reading
- the query: format, name (may be empty), encoding, sql_dialect -> test_parameters_reach_the_artifact,
  test_an_empty_name_is_a_name
- invalid_option: an unknown option, one the format does not take, a refused value -> test_options_per_format,
  test_refused_option_values, http::test_invalid_option
- repeated, empty, percent-encoded and non-UTF-8 parameter names and values -> test_repeated_parameters,
  test_parameter_names_are_percent_decoded, test_an_empty_parameter_name, test_a_query_that_is_not_utf8,
  test_live_raw_bytes_in_the_query, test_live_framing_garbage_is_a_4xx[raw-latin1-query]
- format_mismatch by content, every pair of formats -> test_every_pair_of_formats,
  test_html_fragments_are_still_markdown_and_text, sniff::test_binary_samples_sent_as_every_format,
  sniff::test_whole_html_documents_are_told_from_the_other_text_formats
- each error code is a 422 with {"error": {"code", "message"}} -> test_error_bodies_have_the_contract_shape (the codes
  real modules reach), http::test_every_contract_code_is_reachable (timeout and resource_limit, with stand-in modules)
- never compressed, whatever the client accepts -> test_nothing_is_ever_compressed, http::test_nothing_is_compressed
- a Content-Type other than application/octet-stream -> test_any_content_type_is_read_as_the_file,
  test_a_multipart_body_is_415, test_a_content_encoded_body_is_415,
  http::test_a_urlencoded_form_body_is_415_saying_to_send_the_bytes (curl -d's form: it has stripped the line breaks)
- an empty body, for each format -> test_an_empty_body_for_each_format, test_live_empty_bodies
- the wire: Content-Length shorter or longer than the body, two lengths, both framings, bad chunks, Expect, HEAD,
  OPTIONS -> test_live_content_length_shorter_than_the_body, test_live_content_length_longer_than_the_body,
  test_live_framing_garbage_is_a_4xx, test_live_both_framings_and_expect_continue, test_head_and_options
- the artifact: schema_version 1, the format asked for, parser, options/attrs objects, warnings, coverage, unique
  ids, earlier parents, block types, locator pairs, char_end <= the original's size in bytes and line_end <= size + 1
  (here also within the decoded text, counted in code points), on real files of every format ->
  test_real_files_give_artifacts_within_their_originals (and every 200 of this module, through _artifact)
- keys and section_path bounded (10,000 x 1,024; 64 x 500), the cut marked on the block and in coverage.lost, never
  complete -> test_long_keys_and_deep_sections_are_cut_and_marked
- coverage.complete, when sent, equals extracted == total with no failures and no losses -> _rule_violations, on every
  artifact of this module
- never a 500 -> _answer, on every answer of this module; http::test_an_unexpected_error_is_503_not_500
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import gzip
import hashlib
import hmac
import logging
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import httpx
import orjson
import pytest
import uvicorn
from starlette.testclient import TestClient

import extract_fn.app
from extract_fn.app import _query_items, create_app, service_of
from extract_fn.settings import Settings, SettingsError
from extract_fn.workers import WorkerPool
from shared.contract import (
    BLOCK_TYPES,
    ERROR_CODE_RE,
    FORMAT_OPTIONS,
    FORMATS,
    MAX_ERROR_BODY_BYTES,
    OPTIONS,
    TEXT_FORMATS,
    ErrorCode,
    ExtractionError,
    classify_answer,
)

ROOT: Final = Path(__file__).resolve().parent.parent
CORPUS: Final = ROOT.parent / "shared" / "corpus"
TOKENS: Final = ("conf-new-7Hq2", "conf-old-Vb9x")
AUTH: Final = {"Authorization": f"Bearer {TOKENS[0]}"}
MAX_BYTES: Final = 2 * 1024 * 1024
BINARY_FORMATS: Final = tuple(f for f in FORMATS if f not in TEXT_FORMATS)

# One real file of each format (MANIFEST.tsv "ok"); the HTML one is a whole document.
SAMPLES: Final = {
    "markdown": "markdown/docling-ending-with-table.md",
    "html": "html/docling-table-05.html",
    "text": "text/chardet-utf8.txt",
    "sql": "sql/sqlfluff-jinja-templating.sql",
    "toml": "toml/toml-test/valid/spec-example-1.toml",
    "pdf": "pdf/sample-files-001-trivial.pdf",
    "docx": "docx/mammoth-tables.docx",
    "pptx": "pptx/python-pptx-minimal.pptx",
    "xlsx": "xlsx/calamine-date.xlsx",
    "csv": "csv/docling-csv-pipe.csv",
    "parquet": "parquet/parquet-testing-alltypes_plain.parquet",
}


def _manifest() -> list[dict[str, str]]:
    with (CORPUS / "MANIFEST.tsv").open(newline="", encoding="utf-8") as fh:
        return [r for r in csv.DictReader(fh, delimiter="\t") if r["format"] in FORMATS]


MANIFEST: Final = _manifest()


def _sample(fmt: str) -> bytes:
    return (CORPUS / SAMPLES[fmt]).read_bytes()


def _settings(**kw: Any) -> Settings:
    base: dict[str, Any] = {
        "tokens": TOKENS,
        "max_bytes": MAX_BYTES,
        "timeout_s": 30.0,
        "memory_limit_mb": 1024,
        "max_output_bytes": 64 * 1024 * 1024,
        "workers": 2,
    }
    base.update(kw)
    return Settings(**base)


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(2, timeout_s=30.0, memory_limit_bytes=1024 * 1024 * 1024, max_output_bytes=64 << 20) as p:
        yield p


@pytest.fixture(scope="module")
def client(pool: WorkerPool) -> Iterator[TestClient]:
    with TestClient(create_app(_settings(), pool=pool)) as c:
        yield c


# ---------------------------------------------------------------------------------------------------------------
# Helpers: every answer is checked against the contract's shapes


def _answer(response: httpx.Response) -> httpx.Response:
    """Rules every answer keeps: never a 5xx from a request the service can answer, never compressed, JSON."""
    assert response.status_code < 500, response.text
    assert "content-encoding" not in response.headers
    if response.request.method != "HEAD":
        assert response.headers["content-type"] == "application/json"
        orjson.loads(response.content)
    return response


def _error(response: httpx.Response, status: int = 422) -> tuple[str, str]:
    """The error body's code and message, after checking its shape as the contract's server reads it."""
    _answer(response)
    assert response.status_code == status, response.text
    assert len(response.content) <= MAX_ERROR_BODY_BYTES
    body = orjson.loads(response.content)
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    code, message = body["error"]["code"], body["error"]["message"]
    assert ERROR_CODE_RE.fullmatch(code), code
    assert isinstance(message, str)
    assert message.strip(), "a message a person can act on"
    assert "Traceback" not in message
    answer = classify_answer(response.status_code, None, response.content)
    if status != 401:  # the server reads 401 as "unavailable", without a code
        assert answer.code == code
    return code, message


def _contract_error(response: httpx.Response, code: str) -> str:
    got, message = _error(response)
    assert got == code, message
    assert ErrorCode(code)  # one of the contract's codes
    return message


def _extract(
    client: TestClient, body: bytes, fmt: str | None = None, headers: dict[str, str] | None = None, **params: str
) -> httpx.Response:
    query = {"format": fmt, **params} if fmt is not None else params
    return _answer(client.post("/v1/extract", params=query, content=body, headers=headers or AUTH))


_LINE_BREAK: Final = re.compile(r"\r\n|\r|\n")


def _decoded(data: bytes, encoding: str | None) -> str | None:
    """The text a text format's locators count in: after a byte-order mark, in the artifact's own encoding."""
    for bom, codec in (
        (codecs.BOM_UTF32_LE, "utf-32-le"),
        (codecs.BOM_UTF32_BE, "utf-32-be"),
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    ):
        if data.startswith(bom):
            return data[len(bom) :].decode(codec)
    try:
        return data.decode(encoding or "utf-8")
    except (UnicodeDecodeError, LookupError):
        return None


def _rule_violations(doc: Any, fmt: str, data: bytes) -> list[str]:
    """The artifact rules, checked independently of shared.artifact (which the service itself runs)."""
    bad: list[str] = []
    size = len(data)
    if not (isinstance(doc, dict) and type(doc.get("schema_version")) is int and doc["schema_version"] == 1):
        return ["schema_version is not 1"]
    if doc.get("format") != fmt:
        bad.append(f"format {doc.get('format')!r} is not the one asked for ({fmt})")
    for key in ("parser", "parser_version"):
        if not (isinstance(doc.get(key), str) and doc[key]):
            bad.append(f"{key} is not a non-empty string")
    for key in ("options", "attrs"):
        if not isinstance(doc.get(key), dict):
            bad.append(f"{key} is not an object")
    if not (isinstance(doc.get("warnings"), list) and all(isinstance(w, str) for w in doc["warnings"])):
        bad.append("warnings is not a list of strings")
    cov = doc.get("coverage", {})
    total, extracted = cov.get("total"), cov.get("extracted")
    if not (isinstance(cov.get("unit"), str) and cov["unit"]):
        bad.append("coverage.unit is not a non-empty string")
    if not (type(total) is int and type(extracted) is int and 0 <= extracted <= total):
        bad.append(f"coverage counts {extracted}/{total}")
    failed, lost = cov.get("failed"), cov.get("lost")
    if not (isinstance(failed, list) and all(isinstance(f, dict) and {"unit", "reason"} <= set(f) for f in failed)):
        bad.append("coverage.failed is not a list of {unit, reason}")
    if not (isinstance(lost, list) and all(isinstance(x, str) for x in lost)):
        bad.append("coverage.lost is not a list of strings")
        lost = []
    if "complete" in cov and cov["complete"] != (extracted == total and not failed and not lost):
        bad.append(f"coverage.complete {cov['complete']} with {extracted}/{total}, failed {failed}, lost {lost}")
    text = _decoded(data, doc["attrs"].get("encoding")) if fmt in TEXT_FORMATS else None
    lines = len(_LINE_BREAK.split(text)) if text is not None else None
    ids: set[str] = set()
    for i, block in enumerate(doc.get("blocks", [])):
        where = f"blocks[{i}]"
        bid = block.get("id")
        if not (isinstance(bid, str) and bid) or bid in ids:
            bad.append(f"{where}.id {bid!r} is empty or not unique")
        if "parent" in block and block["parent"] not in ids:
            bad.append(f"{where}.parent {block['parent']!r} is no earlier block")
        ids.add(bid)
        if block.get("type") not in BLOCK_TYPES:
            bad.append(f"{where}.type {block.get('type')!r}")
        if not isinstance(block.get("text"), str):
            bad.append(f"{where}.text is not a string")
        section, keys, attrs = block.get("section_path", []), block.get("keys", []), block.get("attrs", {})
        if len(section) > 64 or any(len(s) > 500 for s in section):
            bad.append(f"{where}.section_path is over 64 entries or an entry over 500 characters")
        if len(keys) > 10_000 or any(len(k) > 1024 for k in keys):
            bad.append(f"{where}.keys is over 10,000 keys or a key over 1,024 characters")
        if attrs.get("keys_truncated") and "exact_keys" not in lost:
            bad.append(f"{where} is keys_truncated but coverage.lost has no exact_keys")
        if attrs.get("section_truncated") and "section_path" not in lost:
            bad.append(f"{where} is section_truncated but coverage.lost has no section_path")
        bad += _locator_violations(block.get("locator", {}), where, size, text, lines)
    for i, table in enumerate(doc.get("tables") or []):
        bad += _locator_violations(table.get("locator", {}), f"tables[{i}]", size, text, lines)
    return bad


def _locator_violations(loc: dict[str, Any], where: str, size: int, text: str | None, lines: int | None) -> list[str]:
    bad = []
    for start, end, none in (("line_start", "line_end", 0), ("char_start", "char_end", -1)):
        if start not in loc and end not in loc:
            continue
        s, e = loc.get(start), loc.get(end)
        if not (type(s) is int and type(e) is int):
            bad.append(f"{where}.locator {start}/{end} is not a pair of integers: {s}, {e}")
        elif (s, e) != (none, none) and not (none + 1 <= s + (none == -1) <= e + (none == -1)):
            bad.append(f"{where}.locator {start}..{end} = {s}..{e}")
    line_end, char_end = loc.get("line_end", 0), loc.get("char_end", -1)
    if isinstance(line_end, int) and line_end > size + 1:
        bad.append(f"{where}.locator.line_end {line_end} is past the original's size plus one ({size + 1})")
    if isinstance(char_end, int) and char_end > size:
        bad.append(f"{where}.locator.char_end {char_end} is past the original's size ({size} bytes)")
    if text is not None and isinstance(char_end, int) and char_end > len(text):
        bad.append(f"{where}.locator.char_end {char_end} is past the decoded text ({len(text)} code points)")
    if lines is not None and isinstance(line_end, int) and line_end > lines:
        bad.append(f"{where}.locator.line_end {line_end} is past the decoded text's {lines} lines")
    return bad


def _artifact(response: httpx.Response, fmt: str, data: bytes) -> dict[str, Any]:
    assert response.status_code == 200, response.text
    doc: dict[str, Any] = orjson.loads(response.content)
    assert _rule_violations(doc, fmt, data) == []
    return doc


# ---------------------------------------------------------------------------------------------------------------
# Authorization and the tokens


def test_rotation_from_the_environment(pool: WorkerPool) -> None:
    # Two tokens at once, as an operator sets them while rotating: spaces, a trailing newline, an empty entry.
    settings = Settings.from_env({"EXTRACTOR_TOKENS": f" {TOKENS[0]} ,\n{TOKENS[1]}\n,", "EXTRACTOR_WORKERS": "2"})
    assert settings.tokens == TOKENS
    with TestClient(create_app(settings, pool=pool)) as c:
        for token in TOKENS:
            assert _answer(c.get("/v1/capabilities", headers={"Authorization": f"Bearer {token}"})).status_code == 200
            response = _extract(c, b"rotated\n", "text", headers={"Authorization": f"Bearer {token}"})
            assert response.status_code == 200
    # The old token removed: it is refused from the next start on.
    settings = Settings.from_env({"EXTRACTOR_TOKENS": TOKENS[0], "EXTRACTOR_WORKERS": "2"})
    with TestClient(create_app(settings, pool=pool)) as c:
        code, message = _error(c.get("/v1/capabilities", headers={"Authorization": f"Bearer {TOKENS[1]}"}), 401)
        assert code == "unauthorized"
        assert message == "the bearer token is not accepted"


@pytest.mark.parametrize("value", [None, "", " ", " , ,\n", "\n"])
def test_no_token_no_service(value: str | None) -> None:
    env = {} if value is None else {"EXTRACTOR_TOKENS": value}
    with pytest.raises(SettingsError, match="EXTRACTOR_TOKENS") as info:
        Settings.from_env(env)
    assert "refuses to start" in str(info.value)
    with pytest.raises(SettingsError, match="EXTRACTOR_TOKENS"):
        create_app(Settings.from_env(env, require_tokens=False))


def test_tokens_are_compared_against_every_token_as_digests(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Constant time: the given token is hashed to a fixed-length digest and compared with hmac.compare_digest against
    # every accepted token's digest, without stopping at a match, so neither the token matched nor its length shows.
    calls: list[tuple[int, int]] = []
    compare = hmac.compare_digest

    def counting(a: bytes, b: bytes) -> bool:
        calls.append((len(a), len(b)))
        return compare(a, b)

    monkeypatch.setattr(extract_fn.app.hmac, "compare_digest", counting)
    for header, status in (
        (f"Bearer {TOKENS[0]}", 200),  # matches the first
        (f"Bearer {TOKENS[1]}", 200),  # matches the last
        ("Bearer x", 401),
        ("Bearer " + "y" * 5000, 401),
    ):
        calls.clear()
        assert client.get("/v1/capabilities", headers={"Authorization": header}).status_code == status
        assert calls == [(32, 32)] * len(TOKENS), header


def test_authorization_edge_cases(client: TestClient) -> None:
    accepted = [
        f"bearer {TOKENS[0]}",  # the scheme is case-insensitive (RFC 7235)
        f"BeArEr {TOKENS[1]}",
        f"Bearer    {TOKENS[0]}",  # extra spaces between scheme and token
        f"  Bearer {TOKENS[0]}  ",  # around the value (HTTP trims them anyway)
    ]
    for header in accepted:
        assert _answer(client.get("/v1/capabilities", headers={"Authorization": header})).status_code == 200, header
    refused = [
        f"Bearer\t{TOKENS[0]}",  # a tab is no separator in credentials (1*SP)
        f"Bearer {TOKENS[0]} extra",
        f"Bearer {TOKENS[0].upper()}",  # the token itself is compared exactly
        f"Token {TOKENS[0]}",
        "Bearer " + "A" * 200_000,  # an extremely long header: refused, not a crash
        f"Bearer {TOKENS[0]}".replace("conf", "cönf"),
    ]
    for header in refused:
        response = client.get("/v1/capabilities", headers={"Authorization": header.encode()})
        code, message = _error(response, 401)
        assert code == "unauthorized"
        assert header[-20:] not in message  # the answer never echoes the credentials
        assert response.headers["www-authenticate"].startswith("Bearer")


def test_tokens_never_reach_a_log_or_an_answer(pool: WorkerPool, caplog: pytest.LogCaptureFixture) -> None:
    # A real uvicorn with its access log on, logging through the root logger, so caplog sees every line it writes.
    caplog.set_level(logging.DEBUG)
    app = create_app(_settings(), pool=pool)
    live = _live_server(app, log_config=None, access_log=True, log_level="debug")
    with live as (host, port), httpx.Client(base_url=f"http://{host}:{port}", timeout=30) as http:
        http.get("/v1/capabilities", headers=AUTH)
        http.get("/v1/capabilities", headers={"Authorization": "Bearer wrong-secret-Q7"})
        http.post("/v1/extract", params={"format": "text"}, content=b"x\n", headers=AUTH)
        http.post("/v1/extract", params={"format": "nope"}, content=b"x\n", headers=AUTH)
        answers = [
            http.post("/v1/extract", params={"format": "pdf"}, content=b"x\n", headers=AUTH),
            http.get("/nowhere", headers=AUTH),
        ]
    assert any(r.name == "uvicorn.access" for r in caplog.records)  # the access log was on
    for secret in (*TOKENS, "wrong-secret-Q7"):
        assert secret not in caplog.text
        assert all(secret not in r.text for r in answers)
    with pytest.raises(SettingsError) as info:
        Settings.from_env({"EXTRACTOR_TOKENS": "good-token,bad token-S3cr3t"})
    assert "S3cr3t" not in str(info.value)
    assert "good-token" not in repr(Settings.from_env({"EXTRACTOR_TOKENS": "good-token"}))


# ---------------------------------------------------------------------------------------------------------------
# GET /v1/capabilities


def test_capabilities_document(client: TestClient) -> None:
    response = _answer(client.get("/v1/capabilities?ignored=1", headers=AUTH))
    assert response.status_code == 200
    doc = response.json()
    assert type(doc["contract_version"]) is int
    assert doc["contract_version"] == 1
    assert set(doc["extractor"]) >= {"name", "version"}
    assert all(isinstance(v, str) and v for v in (doc["extractor"]["name"], doc["extractor"]["version"]))
    assert type(doc["max_bytes"]) is int
    assert doc["max_bytes"] == MAX_BYTES
    formats = [f["format"] for f in doc["formats"]]
    assert formats == list(FORMATS)  # this deployment has every module, in the contract's order, each once
    for entry in doc["formats"]:
        assert set(entry) == {"format", "options"}
        assert entry["options"] == list(FORMAT_OPTIONS[entry["format"]])
    assert {f["format"]: f["options"] for f in doc["formats"]}["sql"] == ["encoding", "sql_dialect"]
    assert {f["format"]: f["options"] for f in doc["formats"]}["markdown"] == ["encoding"]


def test_max_bytes_is_the_limit_by_length_and_by_stream(pool: WorkerPool) -> None:
    limit = 4096
    with TestClient(create_app(_settings(max_bytes=limit), pool=pool)) as c:
        assert c.get("/v1/capabilities", headers=AUTH).json()["max_bytes"] == limit
        at_limit = b"w\n" * (limit // 2)
        _artifact(_extract(c, at_limit, "text"), "text", at_limit)
        message = _contract_error(_extract(c, at_limit + b"x", "text"), "too_large")
        assert message == f"the file is {limit + 1} bytes, over this service's limit of {limit} bytes"
        streamed = c.post(
            "/v1/extract", params={"format": "text"}, content=iter([at_limit, b"more"]), headers=AUTH
        )  # chunked: no Content-Length
        assert "over this service's limit of 4096 bytes" in _contract_error(_answer(streamed), "too_large")
        streamed = c.post("/v1/extract", params={"format": "text"}, content=iter([at_limit[:100], at_limit[100:]]))
        _error(streamed, 401)  # the token is checked before anything is read
        ok = c.post(
            "/v1/extract", params={"format": "text"}, content=iter([at_limit[:100], at_limit[100:]]), headers=AUTH
        )
        _artifact(_answer(ok), "text", at_limit)


# ---------------------------------------------------------------------------------------------------------------
# POST /v1/extract: the query


def test_parameters_reach_the_artifact(client: TestClient) -> None:
    body = "name;city\nZoë;Zürich\n".encode("cp1252")
    response = _extract(client, body, "csv", name="Données 2024 ☃.csv", encoding="cp1252")
    doc = _artifact(response, "csv", body)
    assert doc["options"] == {"encoding": "cp1252"}
    assert doc["tables"][0]["name"] == "Données 2024 ☃.csv"  # percent-encoded UTF-8, decoded exactly
    sql = b"select id from users;\n"
    doc = _artifact(_extract(client, sql, "sql", sql_dialect="postgres"), "sql", sql)
    assert doc["options"] == {"sql_dialect": "postgres"}


def test_an_empty_name_is_a_name(client: TestClient) -> None:
    body = b"a,b\n1,2\n"
    for query in ("format=csv&name=", "format=csv&name", "format=csv"):
        response = _answer(client.post(f"/v1/extract?{query}", content=body, headers=AUTH))
        _artifact(response, "csv", body)


@pytest.mark.parametrize("fmt", FORMATS)
def test_options_per_format(client: TestClient, fmt: str) -> None:
    data = _sample(fmt)
    for option in OPTIONS:
        value = {"encoding": "utf-8", "sql_dialect": "mysql"}[option]
        response = _extract(client, data, fmt, **{option: value})
        if option in FORMAT_OPTIONS[fmt]:
            assert response.status_code == 200, response.text  # an option the format takes is taken
        else:
            message = _contract_error(response, "invalid_option")
            assert message == f"the {fmt} format takes no {option} option (only " + (
                "the text formats do)" if option == "encoding" else "sql do)"
            )
    for unknown in ("colour", "Format", "encoding ", "sql-dialect", "token"):
        message = _contract_error(_extract(client, data, fmt, **{unknown: "x"}), "invalid_option")
        assert message.startswith(f"unknown query parameter {unknown!r}")
        assert "format, name, encoding and sql_dialect" in message


def test_refused_option_values(client: TestClient) -> None:
    for codec in ("no-such-codec", "base64", "rot13", "undefined", "unicode_escape", "idna", "utf-8\x00"):
        message = _contract_error(_extract(client, b"text\n", "text", encoding=codec), "invalid_option")
        assert "is not a known text codec" in message, codec
    for dialect in ("postgresql9", "POSTGRES", " mysql"):
        message = _contract_error(_extract(client, b"select 1;\n", "sql", sql_dialect=dialect), "invalid_option")
        assert "GET /v1/capabilities lists them" in message
    # TOML is UTF-8 by definition: it takes the option, and refuses another codec than UTF-8 as its value.
    message = _contract_error(_extract(client, b"a = 1\n", "toml", encoding="latin-1"), "invalid_option")
    assert "utf-8" in message.lower()
    assert _extract(client, b"a = 1\n", "toml", encoding="UTF8").status_code == 200


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("format=text&format=markdown", "the format parameter is given more than once"),
        ("format=text&format=text", "the format parameter is given more than once"),
        ("format=text&name=a&name=a", "the name parameter is given more than once"),
        ("format=text&encoding=utf-8&encoding=latin-1", "the encoding parameter is given more than once"),
        ("format=sql&sql_dialect=mysql&sql_dialect=", "the sql_dialect parameter is given more than once"),
        ("name=x&format=text&format=", "the format parameter is given more than once"),
    ],
)
def test_repeated_parameters(client: TestClient, query: str, words: str) -> None:
    # Which of two values counts is anybody's guess (first? last?), so neither does: the request is refused.
    response = _answer(client.post(f"/v1/extract?{query}", content=b"x\n", headers=AUTH))
    assert words in _contract_error(response, "invalid_option")


def test_parameter_names_are_percent_decoded(client: TestClient) -> None:
    body = b"# Title\n\nText.\n"
    response = _answer(client.post("/v1/extract?%66ormat=markdown&n%61me=a%20b.md", content=body, headers=AUTH))
    _artifact(response, "markdown", body)
    response = _answer(client.post("/v1/extract?format=mark%64own&sql%5Fdialect=mysql", content=body, headers=AUTH))
    assert "the markdown format takes no sql_dialect option" in _contract_error(response, "invalid_option")
    response = _answer(client.post("/v1/extract?format=text+", content=body, headers=AUTH))  # '+' is a space
    assert "'text '" in _contract_error(response, "unsupported_format")


@pytest.mark.parametrize("query", ["=text&format=text", "format=text&=", "format=text&%20=1"])
def test_an_empty_parameter_name(client: TestClient, query: str) -> None:
    message = _contract_error(
        _answer(client.post(f"/v1/extract?{query}", content=b"x", headers=AUTH)), "invalid_option"
    )
    if query.endswith("%20=1"):
        assert message.startswith("unknown query parameter ' '")
    else:
        assert message.startswith("a query parameter has no name")


def test_a_query_that_is_not_utf8(client: TestClient) -> None:
    # Percent-encoded bytes that are not UTF-8 (a client that encoded the name in Latin-1): refused, naming the
    # parameter and the bytes, rather than replaced by U+FFFD and published under another name.
    for query, words in (
        ("format=csv&name=caf%E9.csv", "the name parameter is not UTF-8 ('caf\\xe9.csv')"),
        ("format=te%FFxt", "the format parameter is not UTF-8 ('te\\xffxt')"),
        ("format=text&encoding=%FF", "the encoding parameter is not UTF-8"),
        ("format=text&n%E4me=x", "a query parameter's name is not UTF-8: 'n\\xe4me'"),
        ("format=text&name=%ED%A0%80", "the name parameter is not UTF-8"),  # an encoded surrogate
    ):
        message = _contract_error(
            _answer(client.post(f"/v1/extract?{query}", content=b"a,b\n", headers=AUTH)), "invalid_option"
        )
        assert words in message, (query, message)
    # Raw bytes in the query (an HTTP server in front may pass them): the same answer.
    items = _query_items(b"format=csv&name=caf\xe9.csv")
    with pytest.raises(ExtractionError) as info:
        service_of(client.app).parse_query(items)
    assert info.value.code == ErrorCode.INVALID_OPTION
    assert "the name parameter is not UTF-8 ('caf\\xe9.csv')" in info.value.message


# ---------------------------------------------------------------------------------------------------------------
# POST /v1/extract: format_mismatch, by content, every pair


def _expected_kind(actual: str) -> str:
    return actual if actual in BINARY_FORMATS or actual == "html" else "text"


def test_every_pair_of_formats(client: TestClient) -> None:
    # Binary formats are told apart from each other and from text by their bytes; a whole HTML document is told
    # apart from the other text formats. Other text is read as the text format asked for (a markdown file is valid
    # text, csv or sql; TOML's parser refuses what is not TOML as corrupt).
    outcomes: dict[tuple[str, str], str] = {}
    for actual in FORMATS:
        data = _sample(actual)
        for asked in FORMATS:
            response = _extract(client, data, asked, name=Path(SAMPLES[actual]).name)
            if response.status_code == 200:
                _artifact(response, asked, data)
                outcomes[actual, asked] = "ok"
                continue
            code, message = _error(response)
            outcomes[actual, asked] = code
            if code == "format_mismatch":
                assert message == f"the file is {_expected_kind(actual)}, not {asked}"
    wrong = []
    for (actual, asked), got in outcomes.items():
        if actual == asked:
            want = {"ok"}
        elif actual in BINARY_FORMATS or asked in BINARY_FORMATS or actual == "html":
            want = {"format_mismatch"}
        elif asked == "toml":
            want = {"corrupt"}  # not valid TOML
        else:
            want = {"ok"}
        if got not in want:
            wrong.append(f"{actual} sent as {asked}: {got}, expected {sorted(want)}")
    assert wrong == []


def test_html_fragments_are_still_markdown_and_text(client: TestClient) -> None:
    for body in (b'<p align="center">logo</p>\n\n# Title\n', b"<!-- licence -->\n# Title\n", b"<div>\n</div>\n"):
        for fmt in ("markdown", "text"):
            _artifact(_extract(client, body, fmt), fmt, body)
    for body in (
        b"<!DOCTYPE html>\n<title>t</title><p>x",
        b"\xef\xbb\xbf<!-- generated -->\n<?xml version='1.0'?>\n<HTML lang=en><body>x",
        "<!doctype html><p>ü".encode("utf-16"),
    ):
        for fmt in ("markdown", "text", "csv", "sql", "toml"):
            assert _contract_error(_extract(client, body, fmt), "format_mismatch") == f"the file is html, not {fmt}"
        _artifact(_extract(client, body, "html"), "html", body)
        assert _contract_error(_extract(client, body, "pdf"), "format_mismatch") == "the file is html, not pdf"


# ---------------------------------------------------------------------------------------------------------------
# POST /v1/extract: every error code the service itself can reach with real modules, and its body


def test_error_bodies_have_the_contract_shape(client: TestClient, pool: WorkerPool) -> None:
    latin1 = (CORPUS / "text" / "chardet-latin1.txt").read_bytes()
    cases = {
        "unsupported_format": _extract(client, b"x", "docm"),
        "format_mismatch": _extract(client, _sample("pdf"), "markdown"),
        "encoding": _extract(client, latin1, "text"),
        "corrupt": _extract(client, b"a = = 1\n", "toml"),
        "invalid_option": _extract(client, b"x", "text", colour="red"),
        "too_large": _extract(client, b"z" * (MAX_BYTES + 1), "text"),
    }
    without_pdf = {f: f"extract_fn.formats.{m}:extract" for f, m in (("text", "text_format"),)}
    with TestClient(create_app(_settings(), extractors=without_pdf, pool=pool)) as c:
        cases["format_unavailable"] = _extract(c, _sample("pdf"), "pdf")
        caps = c.get("/v1/capabilities", headers=AUTH).json()
        assert [f["format"] for f in caps["formats"]] == ["text"]
    messages = {code: _contract_error(response, code) for code, response in cases.items()}
    assert messages["unsupported_format"].startswith("'docm' is not a format of extractor contract v1")
    assert messages["format_mismatch"] == "the file is pdf, not markdown"
    assert "send the right codec in the encoding option" in messages["encoding"]
    assert messages["corrupt"].startswith("not valid TOML")
    assert messages["format_unavailable"] == "this service does not extract pdf"
    assert classify_answer(422, None, cases["format_unavailable"].content).verdict == "unavailable"
    assert classify_answer(422, None, cases["corrupt"].content).verdict != "unavailable"


# ---------------------------------------------------------------------------------------------------------------
# Compression, Content-Type and Content-Encoding


def test_nothing_is_ever_compressed(pool: WorkerPool) -> None:
    # Over a real socket, where a compressing middleware or server would show. The server sends identity; a sloppy
    # client asks for everything: the answer is plain either way.
    app = create_app(_settings(max_bytes=1 << 20), pool=pool)
    big = b"the same line again and again\n" * 20_000
    with _live_server(app) as (host, port), httpx.Client(base_url=f"http://{host}:{port}", timeout=60) as http:
        for accept in ("identity", "gzip", "gzip, deflate, br, zstd", "*", "gzip;q=1.0, identity;q=0"):
            headers = {**AUTH, "Accept-Encoding": accept}
            answers = [
                http.get("/v1/capabilities", headers=headers),
                http.post("/v1/extract", params={"format": "text"}, content=big, headers=headers),
                http.post("/v1/extract", params={"format": "pdf"}, content=big, headers=headers),
                http.post("/v1/extract", params={"format": "text"}, content=big * 2, headers=headers),
                http.get("/v1/capabilities", headers={"Accept-Encoding": accept}),
                http.get("/nowhere", headers=headers),
                http.put("/v1/extract", headers=headers),
            ]
            assert [r.status_code for r in answers] == [200, 200, 422, 422, 401, 404, 405], accept
            for response in answers:
                assert "content-encoding" not in response.headers, accept
                orjson.loads(response.content)  # the bytes on the wire are the JSON itself
            assert len(answers[1].content) > len(big)  # the artifact went out whole, uncompressed


@pytest.mark.parametrize(
    "content_type",
    [
        None,
        "application/octet-stream",
        "text/plain; charset=latin-1",
        "application/pdf",
        "image/png",
        "application/json",
        "nonsense",
    ],
)
def test_any_content_type_is_read_as_the_file(client: TestClient, content_type: str | None) -> None:
    # The contract sends application/octet-stream; the format parameter and the bytes decide, so a sloppy client's
    # Content-Type changes nothing (a charset in it is no encoding option either).
    body = "Grüße\n".encode()
    headers = dict(AUTH) if content_type is None else {**AUTH, "Content-Type": content_type}
    doc = _artifact(_extract(client, body, "text", headers=headers), "text", body)
    assert [b["text"] for b in doc["blocks"]] == ["Grüße"]
    assert doc["options"] == {}


def test_a_multipart_body_is_415(client: TestClient) -> None:
    # curl -F file=@x.pdf: the body is a form envelope around the file, never the file. Reading it would put the
    # envelope into the artifact (or find the PDF inside it by luck): refused, saying how to send the file.
    response = client.post(
        "/v1/extract", params={"format": "text"}, files={"file": ("a.txt", b"hello\n")}, headers=AUTH
    )
    code, message = _error(response, 415)
    assert code == "unsupported_media_type"
    assert "multipart/form-data" in message
    assert "--data-binary" in message
    assert classify_answer(415, None, response.content).verdict == "refused"


def test_a_content_encoded_body_is_415(client: TestClient) -> None:
    body = b"hello\n"
    for coding in ("gzip", "br", "deflate, gzip", "x-unknown"):
        payload = gzip.compress(body) if coding == "gzip" else body
        response = client.post(
            "/v1/extract", params={"format": "text"}, content=payload, headers={**AUTH, "Content-Encoding": coding}
        )
        code, message = _error(response, 415)
        assert code == "unsupported_media_type"
        assert f"Content-Encoding {coding}" in message
        assert response.headers["accept-encoding"] == "identity"
    doc = _artifact(_extract(client, body, "text", headers={**AUTH, "Content-Encoding": "identity"}), "text", body)
    assert [b["text"] for b in doc["blocks"]] == ["hello"]


# ---------------------------------------------------------------------------------------------------------------
# An empty body


@pytest.mark.parametrize("fmt", FORMATS)
def test_an_empty_body_for_each_format(client: TestClient, fmt: str) -> None:
    response = _extract(client, b"", fmt)
    if fmt in TEXT_FORMATS:
        # An empty text file is a valid file of every text format: an artifact with nothing in it, complete.
        doc = _artifact(response, fmt, b"")
        assert doc["blocks"] == []
        assert (doc["coverage"]["total"], doc["coverage"]["extracted"]) == (0, 0)
        assert doc["coverage"].get("complete", True) is True
    else:
        # No binary format is 0 bytes long: there is nothing to read.
        message = _contract_error(response, "corrupt")
        assert message == f"the file is empty (0 bytes): there is no {fmt} to read"


# ---------------------------------------------------------------------------------------------------------------
# The artifact on real files


def _real_rows() -> list[dict[str, str]]:
    """Corpus files that stress locators: text outside ASCII, byte-order marks, legacy and wide codecs, CR line ends;
    and a few of each binary format. Small ones, to keep the test quick."""
    picked: list[dict[str, str]] = []
    per_format: dict[str, int] = {}
    for row in sorted(MANIFEST, key=lambda r: (r["format"], int(r["bytes"]))):
        fmt, size = row["format"], int(row["bytes"])
        if row["expect"] not in ("ok", "encoding") or size > 60_000 or (row["expect"] == "encoding" and fmt == "toml"):
            continue
        if fmt in TEXT_FORMATS:
            data = (CORPUS / row["path"]).read_bytes()
            interesting = row["codec"] or any(b > 127 for b in data) or b"\r" in data
            if not interesting or per_format.get(fmt, 0) >= 12:
                continue
        elif per_format.get(fmt, 0) >= 4 or size < 200:
            continue
        per_format[fmt] = per_format.get(fmt, 0) + 1
        picked.append(row)
    return picked


def test_real_files_give_artifacts_within_their_originals(client: TestClient) -> None:
    rows = _real_rows()
    assert {r["format"] for r in rows} == set(FORMATS)
    problems: dict[str, list[str]] = {}
    checked = 0
    for row in rows:
        data = (CORPUS / row["path"]).read_bytes()
        params = {"name": Path(row["path"]).name}
        if row["codec"]:
            params["encoding"] = row["codec"]
        response = _extract(client, data, row["format"], **params)
        if response.status_code != 200:
            problems[row["path"]] = [response.text[:200]]
            continue
        doc = orjson.loads(response.content)
        bad = _rule_violations(doc, row["format"], data)
        if bad:
            problems[row["path"]] = bad[:5]
        checked += 1
        if row["format"] in TEXT_FORMATS and row["format"] != "toml":
            text = _decoded(data, doc["attrs"].get("encoding"))
            assert text is not None, f"{row['path']}: the artifact's attrs.encoding does not decode the file"
    assert problems == {}
    assert checked >= 60


def test_long_keys_and_deep_sections_are_cut_and_marked(client: TestClient) -> None:
    long = "k" * 1100
    cases = {
        # format, body, block type to look at, the marks it must carry
        "heading over 1,024 and 500 characters": (
            "markdown",
            f"# {long}\n\nunder it\n".encode(),
            "heading",
            {"keys_truncated", "section_truncated"},
        ),
        "html id over 1,024 characters": ("html", f"<p id='{long}'>x</p>".encode(), "paragraph", {"keys_truncated"}),
        "70 nested tables": (
            "toml",
            ("[" + ".".join(f"t{i}" for i in range(70)) + "]\nv = 1\n").encode(),
            "toml_table",
            {"section_truncated"},
        ),
        "a key over 1,024 characters": ("toml", f'"{long}" = 1\n'.encode(), "toml_key", {"keys_truncated"}),
        "10,001 keys on one block": (
            "toml",
            ("t = {" + ", ".join(f"a{i} = 1" for i in range(10_001)) + "}\n").encode(),
            "toml_key",
            {"keys_truncated"},
        ),
    }
    lost_for = {"keys_truncated": "exact_keys", "section_truncated": "section_path"}
    for what, (fmt, body, block_type, marks) in cases.items():
        doc = _artifact(_extract(client, body, fmt), fmt, body)
        block = next(b for b in doc["blocks"] if b["type"] == block_type)
        for mark in marks:
            assert block.get("attrs", {}).get(mark) is True, (what, mark, block.get("attrs"))
            assert lost_for[mark] in doc["coverage"]["lost"], what
        assert doc["coverage"].get("complete", False) is False, what  # never reports itself complete
        assert len(block["keys"]) <= 10_000
        assert all(len(k) <= 1024 for k in block["keys"])
        assert len(block["section_path"]) <= 64
        assert all(len(s) <= 500 for s in block["section_path"])
        if "section_truncated" in marks and fmt == "markdown":
            assert block["section_path"] == ["k" * 500]  # the first 500 characters are kept
        if what == "10,001 keys on one block":
            assert len(block["keys"]) == 10_000  # the first 10,000 are kept
    # Within the bounds nothing is marked: 1,024-character keys and 500-character sections are whole.
    exact = f"# {'é' * 500}\n".encode()
    doc = _artifact(_extract(client, exact, "markdown"), "markdown", exact)
    assert doc["blocks"][0]["section_path"] == ["é" * 500]  # characters are code points, not bytes
    assert "attrs" not in doc["blocks"][0] or not doc["blocks"][0]["attrs"].get("section_truncated")
    assert doc["coverage"]["lost"] == []


# ---------------------------------------------------------------------------------------------------------------
# A real uvicorn: what only the wire shows


class _Live:
    def __init__(self, app: Any, **config: Any) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        config.setdefault("log_level", "warning")
        self.server = uvicorn.Server(uvicorn.Config(app, lifespan="on", **config))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True)

    def __enter__(self) -> tuple[str, int]:
        self.thread.start()
        deadline = time.monotonic() + 120  # it must start; how soon does not matter
        while not self.server.started and time.monotonic() < deadline:
            time.sleep(0.02)
        assert self.server.started
        host, port = self.sock.getsockname()
        return host, port

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
        self.sock.close()


def _live_server(app: Any, **config: Any) -> _Live:
    return _Live(app, **config)


@pytest.fixture(scope="module")
def live(pool: WorkerPool) -> Iterator[tuple[str, int]]:
    with _live_server(create_app(_settings(max_bytes=64 * 1024), pool=pool)) as address:
        yield address


# A request the live server answers 200 with its capabilities and then closes: sent after the test's bytes once an
# answer leaves the connection open, so the end of the answers is the server's close, never a silence.
_END_PROBE: Final = b"GET /v1/capabilities HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
# Only a hang reaches this: the server neither answers nor closes. How busy the machine is does not matter.
_HANG_S: Final = 120.0


class _Answers:
    """HTTP/1.1 responses read off a socket, each complete by its framing (Content-Length, chunked up to its last
    chunk, or neither: up to the close, RFC 9112 6.3): ``next()`` is the next response, or None once the server
    closed the connection (or reset it)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buf = b""
        self.eof = False

    def _more(self) -> bool:
        if self.eof:
            return False
        try:
            chunk = self.sock.recv(65536)
        except ConnectionResetError:  # a server that closes with our bytes unread resets
            chunk = b""
        except TimeoutError:
            raise AssertionError(f"the server neither answered nor closed the connection in {_HANG_S:g} s") from None
        if not chunk:
            self.eof = True
            return False
        self.buf += chunk
        return True

    def _until(self, marker: bytes) -> bytes | None:
        while marker not in self.buf:
            if not self._more():
                return None
        line, _, self.buf = self.buf.partition(marker)
        return line

    def _exactly(self, n: int) -> bytes | None:
        while len(self.buf) < n:
            if not self._more():
                return None
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def pending(self) -> bool:
        """Whether bytes of a next response have arrived already."""
        return bool(self.buf)

    def next(self) -> tuple[int, dict[str, str], bytes] | None:
        head = self._until(b"\r\n\r\n")
        if head is None:
            assert not self.buf.strip(), f"the connection ended inside a response head: {self.buf[:200]!r}"
            return None
        lines = head.decode("latin-1").split("\r\n")
        assert lines[0].startswith("HTTP/1."), lines[0]
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        if status in (100, 204, 304):
            return status, headers, b""
        if "chunked" not in headers.get("transfer-encoding", ""):
            if "content-length" not in headers:  # framed by the close (RFC 9112 6.3): the rest is the body
                while self._more():
                    pass
                body, self.buf = self.buf, b""
                return status, headers, body
            body = self._exactly(int(headers["content-length"]))
            assert body is not None, f"the connection ended inside a {status} response's body"
            return status, headers, body
        body = b""
        while True:
            size_line = self._until(b"\r\n")
            assert size_line is not None, "the connection ended inside a chunked body"
            size = int(size_line.split(b";")[0], 16)
            chunk = self._exactly(size + 2)
            assert chunk is not None, "the connection ended inside a chunk"
            assert chunk.endswith(b"\r\n"), f"a chunk of {size} bytes not followed by CRLF"
            if size == 0:
                return status, headers, body
            body += chunk[:-2]


def _is_probe_answer(status: int, body: bytes) -> bool:
    if status != 200:
        return False
    with contextlib.suppress(orjson.JSONDecodeError, AttributeError):
        return set(orjson.loads(body)) >= {"contract_version", "formats", "max_bytes"}
    return False


def _responses(address: tuple[str, int], request: bytes, *, half_close: bool = False) -> list[tuple[int, bytes]]:
    """Send raw bytes; every (status, body) the server answers them with, 100 Continue left out.

    The answers end when the server closes the connection. When an answer leaves it open with nothing more arrived,
    a probe (``_END_PROBE``, with the token) follows the test's bytes: HTTP/1.1 answers in order, so the probe's
    answer (dropped here) comes after every answer to the test's bytes, and its ``Connection: close`` ends them.
    ``half_close`` ends the sending instead (for a request whose body never comes: a probe would be read as its body).
    """
    with socket.create_connection(address, timeout=_HANG_S) as s:
        s.sendall(request)
        if half_close:
            s.shutdown(socket.SHUT_WR)
        answers = _Answers(s)
        out: list[tuple[int, bytes]] = []
        probed = half_close
        while (answer := answers.next()) is not None:
            status, headers, body = answer
            assert "content-encoding" not in headers
            if status == 100:
                continue
            out.append((status, body))
            if not probed and "close" not in headers.get("connection", "").lower() and not answers.pending():
                with contextlib.suppress(OSError):  # the server may be closing already: then it says so
                    s.sendall(_END_PROBE + _auth() + b"\r\n")
                probed = True
    if probed and not half_close and out and _is_probe_answer(*out[-1]):
        out.pop()
    return out


def _auth() -> bytes:
    return f"Authorization: Bearer {TOKENS[1]}\r\n".encode()


def _post(query: bytes, headers: bytes, body: bytes = b"") -> bytes:
    return b"POST /v1/extract?" + query + b" HTTP/1.1\r\nHost: x\r\n" + _auth() + headers + b"\r\n" + body


def test_live_content_length_shorter_than_the_body(live: tuple[str, int]) -> None:
    # HTTP/1.1 frames the body by Content-Length: the first 5 bytes are the file; the rest is the next request on
    # the connection, which is no request at all (a 400 from the HTTP server), never part of this file.
    request = _post(b"format=text", b"Content-Length: 5\r\n", b"short and the rest\r\n\r\n")
    answers = _responses(live, request)
    assert answers[0][0] == 200
    assert [b["text"] for b in orjson.loads(answers[0][1])["blocks"]] == ["short"]
    assert all(400 <= status < 500 for status, _ in answers[1:])


def test_live_content_length_longer_than_the_body(live: tuple[str, int]) -> None:
    # The client promises 100 bytes, sends 3 and stops sending: the file never arrived whole, so nothing is
    # extracted from a part of it; the service answers nothing or a 4xx, and serves the next request.
    answers = _responses(live, _post(b"format=text", b"Content-Length: 100\r\n", b"abc"), half_close=True)
    assert all(400 <= status < 500 for status, _ in answers), answers
    ok = _responses(live, _post(b"format=text", b"Content-Length: 3\r\nConnection: close\r\n", b"abc"))
    assert [status for status, _ in ok] == [200]


@pytest.mark.parametrize(
    "request_bytes",
    [
        _post(b"format=text", b"Content-Length: 3\r\nContent-Length: 4\r\n", b"abcd"),  # two lengths
        _post(b"format=text", b"Transfer-Encoding: chunked\r\n", b"zz\r\nabc\r\n0\r\n\r\n"),  # a bad chunk size
        _post(b"format=text", b"Content-Length: -1\r\n", b"abc"),
        _post(b"format=text", b"Content-Length: 0x10\r\n", b"abc"),
        b"POST /v1/extract?format=text&name=caf\xe9 HTTP/1.1\r\nHost: x\r\n" + _auth() + b"Content-Length: 1\r\n\r\nx",
        b"POST /v1/extract?format=text HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\r\nContent-Length: 0\r\n\r\n",
        b"GET /v1/capabilities HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + b"a" * 200_000 + b"\r\n\r\n",
    ],
    ids=["two-lengths", "bad-chunk", "negative-length", "hex-length", "raw-latin1-query", "raw-ff-token", "huge-auth"],
)
def test_live_framing_garbage_is_a_4xx(live: tuple[str, int], request_bytes: bytes) -> None:
    answers = _responses(live, request_bytes)
    if len(request_bytes) < 100_000:  # past the HTTP parser's header limit the answer may be lost to a reset
        assert answers, "no answer at all"
    assert all(400 <= status < 500 for status, _ in answers), answers
    ok = _responses(live, _post(b"format=text", b"Content-Length: 2\r\nConnection: close\r\n", b"ok"))
    assert [status for status, _ in ok] == [200]  # and the service goes on


def test_live_raw_bytes_in_the_query(live: tuple[str, int]) -> None:
    # Percent-encoded is how a query carries non-ASCII; raw bytes never reach the app (the HTTP parser refuses them),
    # and percent-encoded bytes that are not UTF-8 are invalid_option.
    answers = _responses(live, _post(b"format=text&name=caf%E9", b"Content-Length: 1\r\nConnection: close\r\n", b"x"))
    assert [status for status, _ in answers] == [422]
    assert orjson.loads(answers[0][1])["error"]["code"] == "invalid_option"
    answers = _responses(
        live, _post(b"format=text&name=caf%C3%A9", b"Content-Length: 1\r\nConnection: close\r\n", b"x")
    )
    assert [status for status, _ in answers] == [200]


def test_live_both_framings_and_expect_continue(live: tuple[str, int]) -> None:
    # Content-Length and Transfer-Encoding together: the framing is ambiguous (RFC 9112 6.1, how request smuggling
    # starts), so it is refused and the connection closed, whatever follows on it.
    request = _post(b"format=text", b"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n")
    answers = _responses(live, request + b"5\r\nchunk\r\n0\r\n\r\n" + _post(b"format=text", b"Content-Length: 0\r\n"))
    assert [status for status, _ in answers] == [400]
    assert orjson.loads(answers[0][1])["error"]["code"] == "bad_request"
    request = _post(b"format=text", b"Expect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n", b"ok")
    answers = _responses(live, request)
    assert [status for status, _ in answers] == [200]


def test_live_empty_bodies(live: tuple[str, int]) -> None:
    for framing in (b"Content-Length: 0\r\n", b"Transfer-Encoding: chunked\r\n", b""):
        body = b"0\r\n\r\n" if b"chunked" in framing else b""
        for fmt in ("markdown", "pdf"):
            answers = _responses(live, _post(b"format=" + fmt.encode(), framing + b"Connection: close\r\n", body))
            assert len(answers) == 1
            status, raw = answers[0]
            if fmt == "markdown":
                assert status == 200
                assert orjson.loads(raw)["blocks"] == []
            else:
                assert status == 422
                assert orjson.loads(raw)["error"]["code"] == "corrupt"


def test_head_and_options(client: TestClient) -> None:
    # HEAD on capabilities is a GET without a body; /v1/extract is POST only. No browser calls this API, so there
    # is no CORS: OPTIONS is 405 like any other method, and a preflight without a token is 401.
    head = client.head("/v1/capabilities", headers=AUTH)
    assert (head.status_code, head.content) == (200, b"")
    assert "content-encoding" not in head.headers
    for method, path, allow in (
        ("HEAD", "/v1/extract", "POST"),
        ("OPTIONS", "/v1/extract", "POST"),
        ("OPTIONS", "/v1/capabilities", "GET, HEAD"),
        ("GET", "/v1/extract", "POST"),
        ("POST", "/v1/capabilities", "GET, HEAD"),
    ):
        response = client.request(method, path, headers=AUTH)
        assert response.status_code == 405, (method, path)
        assert set(response.headers["allow"].split(", ")) == set(allow.split(", "))
        if method != "HEAD":
            code, message = _error(response, 405)
            assert (code, message) == ("method_not_allowed", f"{method} is not allowed on {path}")
    preflight = client.options(
        "/v1/extract", headers={"Origin": "https://example.com", "Access-Control-Request-Method": "POST"}
    )
    assert _error(preflight, 401)[0] == "unauthorized"
    assert "access-control-allow-origin" not in preflight.headers


async def client_app_stub(scope: Any, receive: Any, send: Any) -> None:
    raise AssertionError("not called")


def test_the_digest_comparison_is_what_the_docs_say() -> None:
    # The accepted tokens are kept only as SHA-256 digests (no token string on the middleware).
    middleware = extract_fn.app.BearerAuthMiddleware(client_app_stub, TOKENS)
    assert middleware._digests == [hashlib.sha256(t.encode()).digest() for t in TOKENS]
    assert all(token not in repr(vars(middleware)) for token in TOKENS)
