"""The reference extractor over HTTP (extract_fn/app.py): extractor contract v1, end to end.

Most tests use Starlette's TestClient on an app whose formats are routed to tests/hostile_extractors.py, so every
error code is reachable; the ``live`` tests run the same app under a real uvicorn on a socket; the ``real`` tests
use this deployment's own format modules.
"""

from __future__ import annotations

import asyncio
import csv
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
import uvicorn
from starlette.testclient import TestClient

import extract_fn.formats
from extract_fn.app import create_app, service_of
from extract_fn.formats.base import ExtractRequest
from extract_fn.service import default_extractors, sql_dialects
from extract_fn.settings import Settings, SettingsError
from extract_fn.workers import WorkerPool
from shared.artifact import validate_artifact
from shared.contract import FORMATS, Capabilities, ErrorCode, classify_answer

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
H = "tests.hostile_extractors:"
TOKENS = ("tok-one-5Jx9q2", "tok-two-Lm3v8Z")
MAX_BYTES = 64 * 1024
MAX_OUTPUT = 1024 * 1024
AUTH = {"Authorization": f"Bearer {TOKENS[0]}"}
# The extraction time limit: generous wherever it must not fire (however busy the machine), short only on the pool that
# runs markdown's sleep_forever, which never finishes, so that the limit firing does not depend on speed.
GENEROUS_S = 120.0
NEVER_FINISHES_S = 1.0

# Each format goes to an extractor that ends in a known way; parquet has none (format_unavailable).
EXTRACTORS = {
    "text": H + "echo",
    "sql": H + "summarize",
    "pdf": H + "summarize",
    "docx": H + "summarize",
    "markdown": H + "sleep_forever",  # timeout
    "html": H + "allocate_10gb",  # resource_limit
    "pptx": H + "exit_hard",  # resource_limit (the worker dies)
    "csv": H + "raise_value_error",  # corrupt
    "toml": H + "invalid_artifact",  # corrupt (the validator refuses the artifact)
    "xlsx": H + "raise_extraction_error",  # the module's own code (encoding)
}
PDF = (CORPUS / "pdf" / "sample-files-001-trivial.pdf").read_bytes()


def _settings(**kw: Any) -> Settings:
    base: dict[str, Any] = {
        "tokens": TOKENS,
        "max_bytes": MAX_BYTES,
        "timeout_s": GENEROUS_S,
        "memory_limit_mb": 512,
        "max_output_bytes": MAX_OUTPUT,
        "workers": 2,
    }
    base.update(kw)
    return Settings(**base)


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(2, timeout_s=GENEROUS_S, memory_limit_bytes=512 * 1024 * 1024, max_output_bytes=MAX_OUTPUT) as p:
        yield p


@pytest.fixture(scope="module")
def timeout_pool() -> Iterator[WorkerPool]:
    """For the ``timeout`` answer only: its short limit fires on markdown's extractor, which never finishes."""
    with WorkerPool(
        1, timeout_s=NEVER_FINISHES_S, memory_limit_bytes=512 * 1024 * 1024, max_output_bytes=MAX_OUTPUT
    ) as p:
        yield p


@pytest.fixture(scope="module")
def timeout_client(timeout_pool: WorkerPool) -> Iterator[TestClient]:
    app = create_app(_settings(timeout_s=NEVER_FINISHES_S), extractors=EXTRACTORS, pool=timeout_pool)
    with TestClient(app) as c:
        yield c


@pytest.fixture(scope="module")
def client(pool: WorkerPool) -> Iterator[TestClient]:
    app = create_app(_settings(), extractors=EXTRACTORS, pool=pool)
    with TestClient(app) as c:  # raise_server_exceptions: an exception escaping the app fails the test
        yield c


def _error(response: httpx.Response) -> tuple[str, str]:
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) == {"code", "message"}
    return body["error"]["code"], body["error"]["message"]


def _extract(client: TestClient, body: bytes = b"hello\nworld\n", headers: dict[str, str] | None = None, **params: str):
    params.setdefault("format", "text")
    return client.post("/v1/extract", params=params, content=body, headers=headers or AUTH)


def _contract_error(response: httpx.Response, code: str) -> str:
    assert response.status_code == 422, response.text
    got, message = _error(response)
    assert got == code, message
    answer = classify_answer(response.status_code, response.headers.get("content-encoding"), response.content)
    assert answer.code == code  # the server reads it as this code
    return message


def _served(client: TestClient) -> None:
    """The service still answers a normal request."""
    response = _extract(client, b"still here\n")
    assert response.status_code == 200, response.text
    assert response.json()["blocks"][0]["text"] == "still here"


# ---------------------------------------------------------------------------------------------------------------
# Authorization


@pytest.mark.parametrize(
    "header",
    [
        None,
        "",
        "Bearer",
        "Bearer ",
        "Bearer wrong-token",
        f"Bearer {TOKENS[0][:-1]}",  # a prefix
        f"Bearer {TOKENS[0]}x",
        f"Basic {TOKENS[0]}",
        TOKENS[0],
        f"Bearer {TOKENS[0]},{TOKENS[1]}",
    ],
    ids=["missing", "empty", "no-token", "blank-token", "wrong", "prefix", "longer", "basic", "bare", "both-joined"],
)
def test_a_missing_or_wrong_token_is_401(client: TestClient, header: str | None) -> None:
    headers = {} if header is None else {"Authorization": header}
    for response in (
        client.get("/v1/capabilities", headers=headers),
        client.post("/v1/extract?format=text", content=b"x", headers=headers),
        client.get("/no/such/path", headers=headers),  # before routing: no path is revealed
    ):
        assert response.status_code == 401
        code, _ = _error(response)
        assert code == "unauthorized"
        assert response.headers["www-authenticate"].startswith("Bearer")


@pytest.mark.parametrize(
    "header",
    [
        f"Bearer {TOKENS[0]}",
        f"Bearer {TOKENS[1]}",
        f"bearer {TOKENS[0]}",
        f"BEARER {TOKENS[1]}",
        f"Bearer   {TOKENS[0]}",
    ],
    ids=["first", "second", "lowercase-scheme", "uppercase-scheme", "extra-spaces"],
)
def test_each_rotated_token_is_accepted(client: TestClient, header: str) -> None:
    assert client.get("/v1/capabilities", headers={"Authorization": header}).status_code == 200
    assert _extract(client, headers={"Authorization": header}).status_code == 200


def test_the_liveness_probe_needs_no_token_and_reveals_nothing(client: TestClient) -> None:
    for headers in ({}, {"Authorization": "Bearer wrong-token"}, AUTH):
        response = client.get("/healthz", headers=headers)
        assert response.status_code == 200
        assert response.content == b"ok"
        assert response.headers["content-type"].startswith("text/plain")
        assert response.headers["cache-control"] == "no-store"
        assert "server" not in response.headers
        assert "www-authenticate" not in response.headers
    head = client.head("/healthz")
    assert head.status_code == 200
    assert head.content == b""


def test_only_the_exact_liveness_path_and_methods_skip_the_token(client: TestClient) -> None:
    for method, path in (("POST", "/healthz"), ("GET", "/healthz/"), ("GET", "/v1/healthz"), ("GET", "/HEALTHZ")):
        response = client.request(method, path)
        assert response.status_code == 401, (method, path)
        assert _error(response)[0] == "unauthorized"
    # With a token, the path has no other route: POST is a 404 like any unknown route.
    assert client.post("/healthz", headers=AUTH).status_code == 404


def test_the_token_is_compared_exactly(client: TestClient) -> None:
    response = client.get("/v1/capabilities", headers={"Authorization": f"Bearer {TOKENS[0].upper()}"})
    assert response.status_code == 401


def test_two_authorization_headers_are_refused(client: TestClient) -> None:
    headers = [("Authorization", f"Bearer {TOKENS[0]}"), ("Authorization", f"Bearer {TOKENS[1]}")]
    response = client.get("/v1/capabilities", headers=headers)
    assert response.status_code == 401


def test_tokens_are_never_logged(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    client.get("/v1/capabilities", headers={"Authorization": "Bearer some-wrong-token-XYZ"})
    _extract(client)
    _extract(client, format="csv")
    assert caplog.records  # something was logged...
    assert "some-wrong-token-XYZ" not in caplog.text
    for token in TOKENS:
        assert token not in caplog.text  # ...and no token


# ---------------------------------------------------------------------------------------------------------------
# GET /v1/capabilities


def test_capabilities(client: TestClient) -> None:
    response = client.get("/v1/capabilities", headers=AUTH)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    caps = Capabilities.model_validate_json(response.content)
    assert caps.contract_version == 1
    assert caps.extractor.name == "loom-reference"
    assert caps.extractor.version == "1.0.0"
    assert caps.max_bytes == MAX_BYTES
    assert [f.format for f in caps.formats] == [f for f in FORMATS if f in EXTRACTORS]  # contract order
    assert not caps.supports("parquet")
    assert caps.options_for("sql") == ("encoding", "sql_dialect")
    assert caps.options_for("text") == ("encoding",)
    assert caps.options_for("csv") == ("encoding",)
    assert caps.options_for("pdf") == ()
    doc = response.json()
    assert "postgres" in doc["docs"]["sql_dialects"]
    assert "" not in doc["docs"]["sql_dialects"]
    assert doc["limits"]["timeout_s"] == GENEROUS_S


def test_capabilities_of_a_deployment_missing_a_module(monkeypatch: pytest.MonkeyPatch, pool: WorkerPool) -> None:
    monkeypatch.setitem(extract_fn.formats.MODULES, "pptx", "extract_fn.formats.no_such_module_format")
    assert "pptx" not in default_extractors()
    with TestClient(create_app(_settings(), pool=pool)) as c:
        caps = Capabilities.model_validate_json(c.get("/v1/capabilities", headers=AUTH).content)
        assert not caps.supports("pptx")
        _contract_error(_extract(c, format="pptx"), "format_unavailable")


def test_head_capabilities(client: TestClient) -> None:
    response = client.head("/v1/capabilities", headers=AUTH)
    assert response.status_code == 200
    assert response.content == b""


# ---------------------------------------------------------------------------------------------------------------
# POST /v1/extract: success


def test_extract_returns_the_artifact_bytes(client: TestClient) -> None:
    body = b"first line\nsecond line\n"
    response = _extract(client, body, name="notes.txt", encoding="latin-1")
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    artifact = validate_artifact(response.content, format="text", original_size=len(body))
    assert [b.text for b in artifact.blocks] == ["first line", "second line"]
    doc = response.json()
    assert doc["attrs"]["name"] == "notes.txt"
    assert doc["options"] == {"encoding": "latin-1"}
    assert doc["attrs"]["max_output_bytes"] == MAX_OUTPUT


def test_sql_dialect_reaches_the_module(client: TestClient) -> None:
    response = _extract(client, b"select 1;", format="sql", sql_dialect="postgres", encoding="utf-8")
    assert response.status_code == 200
    assert response.json()["attrs"]["options"] == {"encoding": "utf-8", "sql_dialect": "postgres"}


def test_empty_options_are_not_given(client: TestClient) -> None:
    response = _extract(client, PDF, format="pdf", name="", encoding="", sql_dialect="")
    assert response.status_code == 200
    assert response.json()["attrs"]["options"] == {}


def test_an_empty_text_file(client: TestClient) -> None:
    response = _extract(client, b"")
    assert response.status_code == 200


@pytest.mark.parametrize("path", ["/v1/capabilities", "/v1/extract?format=text", "/v1/extract?format=nope", "/x"])
def test_nothing_is_compressed(client: TestClient, path: str) -> None:
    headers = {**AUTH, "Accept-Encoding": "gzip, deflate, br"}
    big = b"compressible line\n" * 2000
    response = client.request("POST" if "extract" in path else "GET", path, content=big, headers=headers)
    assert response.status_code in (200, 404, 422)
    assert "content-encoding" not in response.headers
    # Unauthorized answers neither.
    response = client.get(path, headers={"Accept-Encoding": "gzip"})
    assert "content-encoding" not in response.headers


# ---------------------------------------------------------------------------------------------------------------
# POST /v1/extract: every error code


def test_unsupported_format(client: TestClient) -> None:
    for fmt in ("docm", "TEXT", "json", "../text", "text\x00"):
        message = _contract_error(_extract(client, format=fmt), "unsupported_format")
        assert "not a format of extractor contract v1" in message


def test_format_unavailable(client: TestClient) -> None:
    message = _contract_error(_extract(client, format="parquet"), "format_unavailable")
    assert message == "this service does not extract parquet"
    answer = classify_answer(422, None, _extract(client, format="parquet").content)
    assert answer.verdict == "unavailable"  # so the server tries the file again later


@pytest.mark.parametrize(
    ("query", "words"),
    [
        ("format=text&colour=blue", "unknown query parameter 'colour'"),
        ("name=a.txt", "the format parameter is missing"),
        ("format=&name=a.txt", "the format parameter is missing"),
        ("format", "the format parameter is missing"),
        ("format=text&format=text", "the format parameter is given more than once"),
        ("format=text&name=a&name=b", "the name parameter is given more than once"),
        ("format=pdf&encoding=utf-8", "the pdf format takes no encoding option"),
        ("format=text&sql_dialect=postgres", "the text format takes no sql_dialect option"),
        ("format=text&encoding=no-such-codec", "encoding 'no-such-codec' is not a known text codec"),
        ("format=text&encoding=base64", "is not a known text codec"),  # a bytes-to-bytes codec
        ("format=text&encoding=utf%008", "is not a known text codec"),
        ("format=sql&sql_dialect=oracle9", "sql_dialect 'oracle9' is not one this service knows"),
        ("format=sql&sql_dialect=Postgres", "sql_dialect 'Postgres' is not one this service knows"),
        ("format=text&" + "&".join(f"p{i}=1" for i in range(200)), "more than 64 parameters"),
        ("format=text&name=" + "n" * 5000, "over this service's limit of 4096"),
    ],
    ids=[
        "unknown",
        "missing",
        "empty",
        "bare",
        "twice",
        "name-twice",
        "encoding-on-pdf",
        "dialect-on-text",
        "unknown-codec",
        "binary-codec",
        "nul-codec",
        "unknown-dialect",
        "dialect-case",
        "too-many",
        "long-name",
    ],
)
def test_invalid_option(client: TestClient, query: str, words: str) -> None:
    response = client.post(f"/v1/extract?{query}", content=PDF, headers=AUTH)
    message = _contract_error(response, "invalid_option")
    assert words in message


def test_too_large_by_content_length(client: TestClient) -> None:
    message = _contract_error(_extract(client, b"x" * (MAX_BYTES + 1)), "too_large")
    assert message == f"the file is {MAX_BYTES + 1} bytes, over this service's limit of {MAX_BYTES} bytes"
    assert _extract(client, b"x" * MAX_BYTES).status_code == 200  # the limit itself is fine


def test_too_large_by_stream(client: TestClient) -> None:
    def body() -> Iterator[bytes]:
        for _ in range(5):
            yield b"y" * (MAX_BYTES // 2)

    response = client.post("/v1/extract?format=text", content=body(), headers=AUTH)
    message = _contract_error(response, "too_large")
    assert "over this service's limit" in message


def test_format_mismatch(client: TestClient) -> None:
    message = _contract_error(_extract(client, PDF, format="markdown"), "format_mismatch")
    assert message == "the file is pdf, not markdown"
    message = _contract_error(_extract(client, b"plain words\n", format="pdf"), "format_mismatch")
    assert message == "the file is text, not pdf"


def test_an_empty_pdf_is_corrupt(client: TestClient) -> None:
    _contract_error(_extract(client, b"", format="pdf"), "corrupt")


def test_timeout(timeout_client: TestClient, timeout_pool: WorkerPool) -> None:
    message = _contract_error(_extract(timeout_client, format="markdown"), "timeout")
    assert "longer than 1 s" in message
    _pool_serves(timeout_pool)


def _pool_serves(pool: WorkerPool) -> None:
    """The pool whose worker was killed at its (short) limit serves the next extraction, given all the time it needs."""
    raw = pool.run_sync(EXTRACTORS["text"], b"still here\n", ExtractRequest(format="text"), timeout_s=GENEROUS_S)
    assert orjson.loads(raw)["blocks"][0]["text"] == "still here"


def test_resource_limit_memory(client: TestClient) -> None:
    message = _contract_error(_extract(client, format="html"), "resource_limit")
    assert "memory" in message
    _served(client)


def test_resource_limit_dead_worker(client: TestClient) -> None:
    _contract_error(_extract(client, PDF, format="pptx"), "format_mismatch")  # sniffed first: it is no pptx
    pptx = (CORPUS / "pptx" / "python-pptx-minimal.pptx").read_bytes()
    message = _contract_error(_extract(client, pptx, format="pptx"), "resource_limit")
    assert "exit status 1" in message
    _served(client)


def test_resource_limit_output(client: TestClient) -> None:
    body = b"a\n" * 30_000  # 60 KB in, about 2.5 MB of artifact out: over the 1 MiB output limit
    message = _contract_error(_extract(client, body), "resource_limit")
    assert message.endswith(f"over this service's limit of {MAX_OUTPUT} bytes")
    _served(client)


def test_corrupt_from_a_failing_parser(client: TestClient) -> None:
    message = _contract_error(_extract(client, b"a,b\n1,2\n", format="csv"), "corrupt")
    assert message == "the csv parser failed on this file (ValueError)"
    assert "shadow" not in message
    _served(client)


def test_corrupt_from_an_invalid_artifact(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="extract_fn")
    message = _contract_error(_extract(client, b"a = 1\n", format="toml"), "corrupt")
    assert "produced an invalid artifact" in message
    assert "bug in the extractor" in message
    assert "invalid artifact" in caplog.text  # the violations are logged for us
    assert "not_a_block_type" in caplog.text or "blocks[0].type" in caplog.text
    _served(client)


def test_the_modules_own_code(client: TestClient) -> None:
    xlsx = (CORPUS / "xlsx" / "calamine-date.xlsx").read_bytes()
    message = _contract_error(_extract(client, xlsx, format="xlsx"), "encoding")
    assert message == "the text does not decode (from the hostile extractor)"


def test_every_contract_code_is_reachable(client: TestClient, timeout_client: TestClient) -> None:
    pptx = (CORPUS / "pptx" / "python-pptx-minimal.pptx").read_bytes()
    xlsx = (CORPUS / "xlsx" / "calamine-date.xlsx").read_bytes()
    cases = {
        "unsupported_format": _extract(client, format="docm"),
        "format_unavailable": _extract(client, format="parquet"),
        "format_mismatch": _extract(client, PDF, format="text"),
        "encoding": _extract(client, xlsx, format="xlsx"),
        "corrupt": _extract(client, format="csv"),
        "invalid_option": _extract(client, format="text", colour="red"),
        "too_large": _extract(client, b"z" * (MAX_BYTES + 10)),
        "timeout": _extract(timeout_client, format="markdown"),
        "resource_limit": _extract(client, pptx, format="pptx"),
    }
    assert {code: _error(r)[0] for code, r in cases.items()} == {code: code for code in cases}
    assert {ErrorCode(c) for c in cases} == set(ErrorCode) - {ErrorCode.INVALID_ARTIFACT}
    _served(client)


# ---------------------------------------------------------------------------------------------------------------
# Garbage never gets a 500


def test_unknown_routes_and_methods_are_json(client: TestClient) -> None:
    for path in ("/", "/v1", "/v1/extract/", "/v2/extract", "/v1/extract/x", "/%ff%fe"):
        response = client.post(path, content=b"x", headers=AUTH)
        assert response.status_code == 404, path
        assert _error(response)[0] == "not_found"
    for method, path in (
        ("GET", "/v1/extract"),
        ("PUT", "/v1/extract"),
        ("DELETE", "/v1/extract"),
        ("POST", "/v1/capabilities"),
        ("OPTIONS", "/v1/extract"),
    ):
        response = client.request(method, path, headers=AUTH)
        assert response.status_code == 405, (method, path)
        assert _error(response)[0] == "method_not_allowed"
        assert "allow" in response.headers


@pytest.mark.parametrize(
    "query",
    [
        "format=text&name=%ff%fe%00%zz",
        "format=text&name=%",
        "format=%ff",
        "format=text;name=x",
        "format=text&&&&&",
        "=&=&=",
        "format=text&name=" + "%25" * 3000,
        "format=text&name=\u00e9\u2603",
    ],
    ids=["bad-escapes", "lone-percent", "bad-format", "semicolon", "ampersands", "empty-keys", "long", "non-ascii"],
)
def test_garbage_queries_get_a_contract_answer(client: TestClient, query: str) -> None:
    response = client.post(f"/v1/extract?{query}", content=b"words\n", headers=AUTH)
    assert response.status_code in (200, 422), response.text
    if response.status_code == 422:
        code, _ = _error(response)
        assert code in {c.value for c in ErrorCode}


def test_binary_garbage_bodies(client: TestClient) -> None:
    for body in (bytes(range(256)) * 10, b"\xff" * 100, b"\x00"):
        response = _extract(client, body, headers={**AUTH, "Content-Type": "image/png"})
        assert response.status_code in (200, 422)


def test_an_unexpected_error_is_503_not_500(pool: WorkerPool, monkeypatch: pytest.MonkeyPatch) -> None:
    app = create_app(_settings(), extractors=EXTRACTORS, pool=pool)

    async def broken(*args: object, **kwargs: object) -> bytes:
        raise RuntimeError("a bug in our own code")

    monkeypatch.setattr(service_of(app), "extract", broken)
    with TestClient(app) as c:
        response = _extract(c)
    assert response.status_code == 503
    assert _error(response)[0] == "service_unavailable"
    assert "bug" not in response.text
    assert classify_answer(503, None, response.content).verdict == "unavailable"


def test_a_pool_that_cannot_start_workers_is_503() -> None:
    broken = WorkerPool(1, timeout_s=5, memory_limit_bytes=None, max_output_bytes=MAX_OUTPUT, python="/bin/false")
    with TestClient(create_app(_settings(), extractors=EXTRACTORS, pool=broken)) as c:
        response = _extract(c)
        assert response.status_code == 503
        assert _error(response)[0] == "service_unavailable"
        assert response.headers["retry-after"] == "5"
        assert c.get("/v1/capabilities", headers=AUTH).status_code == 200  # capabilities need no worker
    broken.close()


def test_a_request_that_waited_over_a_tenth_of_its_limit_then_timed_out_is_503_with_retry_after(
    tmp_path: Path,
) -> None:
    """Not given a fair run (it waited 29.5 s of its 30 s for a worker, on the pool's clock, which the test moves),
    the request that then times out is told to try again later, not that the file is too slow."""

    class Clock:
        now = 1000.0

        def __call__(self) -> float:
            return self.now

    clock = Clock()
    gate = tmp_path / "open"
    extractors = {"text": H + "gate", "markdown": H + "sleep_forever"}
    pool = WorkerPool(1, timeout_s=30, memory_limit_bytes=None, max_output_bytes=MAX_OUTPUT, clock=clock)
    app = create_app(_settings(timeout_s=30, workers=1), extractors=extractors, pool=pool)
    with pool, TestClient(app) as c, ThreadPoolExecutor(2) as ex:
        holder = ex.submit(_extract, c, b"hold the worker\n", name=str(gate))
        assert pool.wait_for(lambda: pool.running(0) == 1, 30), "the first request never got the worker"
        late = ex.submit(_extract, c, b"# waits for the worker\n", format="markdown")
        assert pool.wait_for(lambda: pool.waiting(0) == 1, 30), "the second request never queued"
        clock.now += 29.5  # it has waited 29.5 s of its 30 s: 0.5 s (real) are left for its extraction
        gate.touch()
        assert holder.result(timeout=60).status_code == 200
        response = late.result(timeout=60)
    assert response.status_code == 503, response.text
    assert response.headers["retry-after"] == "5"
    code, message = _error(response)
    assert code == "service_unavailable"
    assert "after waiting 29.5 s for a worker" in message


# ---------------------------------------------------------------------------------------------------------------
# Settings


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({}, "EXTRACTOR_TOKENS"),
        ({"EXTRACTOR_TOKENS": " , ,"}, "EXTRACTOR_TOKENS"),
        ({"EXTRACTOR_TOKENS": "has space"}, "EXTRACTOR_TOKENS"),
        ({"EXTRACTOR_TOKENS": "tök"}, "EXTRACTOR_TOKENS"),
        ({"EXTRACTOR_MAX_BYTES": "lots"}, "EXTRACTOR_MAX_BYTES"),
        ({"EXTRACTOR_MAX_BYTES": "0"}, "EXTRACTOR_MAX_BYTES"),
        ({"EXTRACTOR_TIMEOUT_S": "-1"}, "EXTRACTOR_TIMEOUT_S"),
        ({"EXTRACTOR_TIMEOUT_S": "nan"}, "EXTRACTOR_TIMEOUT_S"),
        ({"EXTRACTOR_TIMEOUT_S": "soon"}, "EXTRACTOR_TIMEOUT_S"),
        ({"EXTRACTOR_MEMORY_LIMIT_MB": "64"}, "EXTRACTOR_MEMORY_LIMIT_MB"),
        ({"EXTRACTOR_MEMORY_LIMIT_MB": "2G"}, "EXTRACTOR_MEMORY_LIMIT_MB"),
        ({"EXTRACTOR_MAX_OUTPUT_BYTES": "0"}, "EXTRACTOR_MAX_OUTPUT_BYTES"),
        ({"EXTRACTOR_WORKERS": "0"}, "EXTRACTOR_WORKERS"),
        ({"EXTRACTOR_WORKERS": "-2"}, "EXTRACTOR_WORKERS"),
        ({"EXTRACTOR_WORKERS": "1000"}, "EXTRACTOR_WORKERS"),
    ],
)
def test_settings_errors_name_the_setting(env: dict[str, str], named: str) -> None:
    full = {"EXTRACTOR_TOKENS": "good-token"} | env if env else {}
    with pytest.raises(SettingsError, match=named):
        Settings.from_env(full)


def test_settings_defaults_and_parsing() -> None:
    s = Settings.from_env({"EXTRACTOR_TOKENS": " new-token , old-token ,"})
    assert s.tokens == ("new-token", "old-token")
    assert s.max_bytes == 67108864
    assert s.timeout_s == 60
    assert s.memory_limit_mb == 2048
    assert s.max_output_bytes == 256 * 1024 * 1024
    assert s.workers >= 1
    assert "new-token" not in repr(s)
    s = Settings.from_env({"EXTRACTOR_TOKENS": "t", "EXTRACTOR_WORKERS": "3", "EXTRACTOR_MEMORY_LIMIT_MB": "0"})
    assert s.workers == 3
    assert s.memory_limit_bytes is None


def test_the_app_refuses_to_start_without_tokens() -> None:
    with pytest.raises(SettingsError, match="EXTRACTOR_TOKENS"):
        create_app(Settings(tokens=()))
    assert Settings.from_env({}, require_tokens=False).tokens == ()  # the CLI's extract needs none


# ---------------------------------------------------------------------------------------------------------------
# This deployment's own format modules


def test_a_text_file_extracts_end_to_end_with_the_real_module() -> None:
    assert "text" in default_extractors()
    path = CORPUS / "text" / "chardet-utf16le-bom.txt"
    body = path.read_bytes()
    with TestClient(create_app(_settings(workers=1, max_bytes=1 << 20))) as c:
        response = _extract(c, body, name=path.name)
        assert response.status_code == 200, response.text
        artifact = validate_artifact(response.content, format="text", original_size=len(body))
        assert artifact.format == "text"
        assert artifact.blocks
        assert "content-encoding" not in response.headers
        _contract_error(_extract(c, PDF, format="text"), "format_mismatch")
        encoded = (CORPUS / "text" / "chardet-latin1.txt").read_bytes()
        _contract_error(_extract(c, encoded), "encoding")
        assert _extract(c, encoded, encoding="latin-1").status_code == 200


def test_every_real_module_gives_a_contract_answer() -> None:
    # Whatever state each format module is in, the service answers 200 with a valid artifact or a 422 contract error.
    with (CORPUS / "MANIFEST.tsv").open(newline="", encoding="utf-8") as fh:
        rows = [r for r in csv.DictReader(fh, delimiter="\t") if r["expect"] == "ok" and int(r["bytes"]) > 100]
    with TestClient(create_app(_settings(workers=2, max_bytes=4 << 20, memory_limit_mb=2048))) as c:
        caps = Capabilities.model_validate_json(c.get("/v1/capabilities", headers=AUTH).content)
        assert [f.format for f in caps.formats] == [f for f in FORMATS if f in default_extractors()]
        for fmt in [f.format for f in caps.formats]:
            row = min((r for r in rows if r["format"] == fmt), key=lambda r: int(r["bytes"]))
            body = (CORPUS / row["path"]).read_bytes()
            response = _extract(c, body, format=fmt, name=Path(row["path"]).name)
            assert response.status_code in (200, 422), (fmt, response.status_code, response.text)
            if response.status_code == 200:
                validate_artifact(response.content, format=fmt, original_size=len(body))
            else:
                assert _error(response)[0] in {c.value for c in ErrorCode}


# ---------------------------------------------------------------------------------------------------------------
# A real uvicorn on a socket


@pytest.fixture(scope="module")
def live(pool: WorkerPool) -> Iterator[tuple[str, int]]:
    yield from _serve(create_app(_settings(), extractors=EXTRACTORS, pool=pool))


@pytest.fixture(scope="module")
def live_timeout(timeout_pool: WorkerPool) -> Iterator[tuple[str, int]]:
    yield from _serve(create_app(_settings(timeout_s=NEVER_FINISHES_S), extractors=EXTRACTORS, pool=timeout_pool))


def _serve(app: Any) -> Iterator[tuple[str, int]]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)  # TCP: asyncio sets TCP_NODELAY
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    host, port = sock.getsockname()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.02)
    assert server.started
    yield host, port
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


def _raw(address: tuple[str, int], request: bytes, *, then: bytes = b"") -> tuple[int, dict[str, str], bytes]:
    """Send raw bytes, read one response (the server may answer before the request body is complete)."""
    with socket.create_connection(address, timeout=GENEROUS_S) as s:
        s.sendall(request)
        if then:
            s.sendall(then)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
        head, _, rest = data.partition(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split()[1])
        headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:])}
        length = int(headers.get("content-length", "0"))
        while len(rest) < length:
            chunk = s.recv(65536)
            if not chunk:
                break
            rest += chunk
    return status, headers, rest


def _auth_line() -> bytes:
    return f"Authorization: Bearer {TOKENS[1]}\r\n".encode()


def test_live_too_large_by_content_length_is_refused_without_reading(live: tuple[str, int]) -> None:
    # A declared gigabyte, and no body at all: an answer proves the server did not wait for the body.
    request = (
        b"POST /v1/extract?format=text HTTP/1.1\r\nHost: x\r\n" + _auth_line() + b"Content-Length: 1000000000\r\n"
        b"Content-Type: application/octet-stream\r\n\r\n"
    )
    status, headers, body = _raw(live, request)
    assert status == 422
    assert orjson.loads(body)["error"]["code"] == "too_large"
    assert "content-encoding" not in headers
    absurd = request.replace(
        b"Content-Length: 1000000000", b"Content-Length: 99999999999999999999"
    )  # h11 takes 20 digits
    status, _, body = _raw(live, absurd)
    assert (status, orjson.loads(body)["error"]["code"]) == (422, "too_large")


def test_live_too_large_chunked_stops_reading(live: tuple[str, int]) -> None:
    # Chunks past the limit, and the body never ends: the answer comes once the limit is passed.
    chunk = b"q" * 16384
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(6))
    request = (
        b"POST /v1/extract?format=text HTTP/1.1\r\nHost: x\r\n" + _auth_line() + b"Transfer-Encoding: chunked\r\n\r\n"
    )
    status, _, body = _raw(live, request, then=chunks)
    assert status == 422
    assert orjson.loads(body)["error"]["code"] == "too_large"


def test_live_garbage_requests_never_get_500(live: tuple[str, int]) -> None:
    garbage = [
        b"POST /v1/extract?format=text&name=\xff\xfe\x80 HTTP/1.1\r\nHost: x\r\n"
        + _auth_line()
        + b"Content-Length: 3\r\n\r\nabc",
        b"POST /v1/extract?format=%ff%00 HTTP/1.1\r\nHost: x\r\n" + _auth_line() + b"Content-Length: 3\r\n\r\nabc",
        b"POST /v1/extract?"
        + b"a=" * 30000
        + b" HTTP/1.1\r\nHost: x\r\n"
        + _auth_line()
        + b"Content-Length: 0\r\n\r\n",
        b"GET /v1/capabilities HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer \xff\xfe\r\n\r\n",
        b"BREW /v1/extract HTTP/1.1\r\nHost: x\r\n" + _auth_line() + b"\r\n",
        b"POST /v1/extract?format=text HTTP/1.1\r\nHost: x\r\n" + _auth_line() + b"Content-Length: zz\r\n\r\n",
    ]
    for request in garbage:
        status, headers, _ = _raw(live, request)
        assert 400 <= status < 500, (request[:60], status)
        assert "content-encoding" not in headers


def test_live_extract_and_capabilities_over_http(live: tuple[str, int]) -> None:
    base = f"http://{live[0]}:{live[1]}"
    headers = {**AUTH, "Accept-Encoding": "gzip"}
    with httpx.Client(base_url=base, timeout=GENEROUS_S) as http:
        caps = http.get("/v1/capabilities", headers=headers)
        assert caps.status_code == 200
        assert "content-encoding" not in caps.headers
        Capabilities.model_validate_json(caps.content)
        response = http.post(
            "/v1/extract", params={"format": "text", "name": "a.txt"}, content=b"one\ntwo\n", headers=headers
        )
        assert response.status_code == 200
        assert "content-encoding" not in response.headers
        validate_artifact(response.content, format="text", original_size=8)
        # A streamed (chunked) body within the limit is read whole.
        streamed = http.post(
            "/v1/extract", params={"format": "text"}, content=iter([b"alpha\n", b"beta\n"]), headers=headers
        )
        assert streamed.status_code == 200
        assert [b["text"] for b in streamed.json()["blocks"]] == ["alpha", "beta"]
        assert http.post("/v1/extract", params={"format": "text"}, content=b"x").status_code == 401


def test_live_timeout_then_served(live_timeout: tuple[str, int], timeout_pool: WorkerPool) -> None:
    with httpx.Client(base_url=f"http://{live_timeout[0]}:{live_timeout[1]}", timeout=GENEROUS_S) as http:
        timeout = http.post("/v1/extract", params={"format": "markdown"}, content=b"x", headers=AUTH)
        assert timeout.status_code == 422
        assert timeout.json()["error"]["code"] == "timeout"
        assert http.get("/v1/capabilities", headers=AUTH).status_code == 200  # the server is still up
    _pool_serves(timeout_pool)


def test_the_sql_dialects_are_sqlglots() -> None:
    import sqlglot

    installed = tuple(sorted(d.value for d in sqlglot.Dialects if d.value))
    assert sql_dialects() == installed, (
        f"sqlglot {sqlglot.__version__} names other dialects: write them in extract_fn/sql_dialect_names.py"
    )


def test_the_service_process_names_the_dialects_without_importing_sqlglot() -> None:
    """sqlglot is its workers' import (about 30 MB): the app and the dialect names leave it out of the service."""
    code = (
        "import sys\n"
        "import extract_fn.app\n"
        "from extract_fn.service import sql_dialects\n"
        "assert 'postgres' in sql_dialects()\n"
        "print('sqlglot' in sys.modules)\n"
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# ---------------------------------------------------------------------------------------------------------------
# Inside Azure Functions: the app behind func.AsgiMiddleware, as func.AsgiFunctionApp serves it


def test_the_function_app_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio

    import azure.functions as func

    def create_asgi_app() -> Any:  # what function_app.build_app hands func.AsgiFunctionApp
        return create_app(Settings.from_env(os.environ))

    monkeypatch.delenv("EXTRACTOR_TOKENS", raising=False)
    with pytest.raises(SettingsError, match="EXTRACTOR_TOKENS"):
        create_asgi_app()
    monkeypatch.setenv("EXTRACTOR_TOKENS", "fn-token-1,fn-token-2")
    monkeypatch.setenv("EXTRACTOR_WORKERS", "1")
    app = create_asgi_app()
    middleware = func.AsgiMiddleware(app)

    async def scenario() -> list[func.HttpResponse]:
        assert await middleware.notify_startup()
        requests = [
            func.HttpRequest(
                "GET", "http://host/v1/capabilities", headers={"Authorization": "Bearer fn-token-2"}, body=b""
            ),
            func.HttpRequest(
                "POST",
                "http://host/v1/extract?format=text&name=a.txt",
                headers={"Authorization": "Bearer fn-token-1", "Accept-Encoding": "gzip"},
                body=b"alpha\nbeta\n",
            ),
            func.HttpRequest(
                "POST",
                "http://host/v1/extract?format=pdf",
                headers={"Authorization": "Bearer fn-token-1"},
                body=b"words\n",
            ),
            func.HttpRequest("POST", "http://host/v1/extract?format=text", headers={}, body=b"x"),
        ]
        return [await middleware.handle_async(r) for r in requests]

    try:
        caps, ok, mismatch, unauthorized = asyncio.run(scenario())
    finally:
        service_of(app).close()
    assert caps.status_code == 200
    Capabilities.model_validate_json(caps.get_body())
    assert ok.status_code == 200
    validate_artifact(ok.get_body(), format="text", original_size=11)
    assert "content-encoding" not in {k.lower() for k, _ in ok.headers.items()}
    assert mismatch.status_code == 422
    assert orjson.loads(mismatch.get_body())["error"]["code"] == "format_mismatch"
    assert unauthorized.status_code == 401


def test_live_a_stalled_upload_is_408_not_held_for_ever(live: tuple[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    # Declares 1,000 bytes, sends 10, then nothing: the service gives up after BODY_IDLE_TIMEOUT_S with a 408 (a
    # server reads it as "unavailable, try again later") instead of holding the connection and its bytes.
    import extract_fn.app as app_module

    monkeypatch.setattr(app_module, "BODY_IDLE_TIMEOUT_S", 0.5)
    request = (
        b"POST /v1/extract?format=text HTTP/1.1\r\nHost: x\r\n" + _auth_line() + b"Content-Length: 1000\r\n"
        b"Content-Type: application/octet-stream\r\n\r\n0123456789"
    )
    status, headers, body = _raw(live, request)
    assert status == 408
    assert orjson.loads(body)["error"]["code"] == "request_timeout"
    assert "content-encoding" not in headers


# ---------------------------------------------------------------------------------------------------------------
# Requests a person gets wrong


def test_a_urlencoded_form_body_is_415_saying_to_send_the_bytes(client: TestClient) -> None:
    # What curl -d @file sends (it has also stripped the file's line breaks): refused, not read as garbage.
    response = _extract(
        client, b"a,b1,2", headers={**AUTH, "Content-Type": "application/x-www-form-urlencoded"}, format="csv"
    )
    assert response.status_code == 415
    code, message = _error(response)
    assert code == "unsupported_media_type"
    assert "--data-binary" in message
    assert "application/octet-stream" in message
    assert _extract(client, b"ok\n", headers={**AUTH, "Content-Type": "text/plain"}).status_code == 200


@pytest.mark.parametrize(
    "value",
    [
        "@Microsoft.KeyVault(SecretUri=https://vault.invalid/secrets/extractor-token/)",
        "@Microsoft.KeyVault(VaultName=vault;SecretName=extractor-token)",
        "good-token,@microsoft.keyvault(SecretUri=https://vault.invalid/secrets/t/)",
    ],
)
def test_an_unresolved_key_vault_reference_is_refused_at_start(value: str) -> None:
    with pytest.raises(SettingsError, match="EXTRACTOR_TOKENS is an unresolved Key Vault reference") as info:
        Settings.from_env({"EXTRACTOR_TOKENS": value})
    assert "vault.invalid" not in str(info.value)  # the message names the setting, not its value


@pytest.mark.parametrize(
    ("env", "named"),
    [
        ({"EXTRACTOR_SPOOL_BYTES": "0"}, "EXTRACTOR_SPOOL_BYTES"),
        ({"EXTRACTOR_BUFFER_BYTES": "10", "EXTRACTOR_SPOOL_BYTES": "100"}, "EXTRACTOR_BUFFER_BYTES"),
        ({"EXTRACTOR_HEADER_TIMEOUT_S": "0"}, "EXTRACTOR_HEADER_TIMEOUT_S"),
        ({"EXTRACTOR_BODY_TIMEOUT_S": "inf"}, "EXTRACTOR_BODY_TIMEOUT_S"),
        ({"EXTRACTOR_MAX_CONNECTIONS": "-1"}, "EXTRACTOR_MAX_CONNECTIONS"),
        ({"EXTRACTOR_CALLER_WORKERS": "x"}, "EXTRACTOR_CALLER_WORKERS"),
        ({"EXTRACTOR_CALLER_MAX_REQUESTS": "-3"}, "EXTRACTOR_CALLER_MAX_REQUESTS"),
    ],
)
def test_availability_settings_errors_name_the_setting(env: dict[str, str], named: str) -> None:
    with pytest.raises(SettingsError, match=named):
        Settings.from_env({"EXTRACTOR_TOKENS": "good-token"} | env)


def test_a_connection_cap_above_the_descriptor_limit_is_refused() -> None:
    from extract_fn.server import connection_cap

    assert connection_cap(_settings(), limit=1024) == 480  # half of what is left after the reserve
    assert connection_cap(_settings(), limit=1_000_000) == 4096
    assert connection_cap(_settings(max_connections=900), limit=1024) == 900
    with pytest.raises(SettingsError, match="EXTRACTOR_MAX_CONNECTIONS"):
        connection_cap(_settings(max_connections=1000), limit=1024)


# ---------------------------------------------------------------------------------------------------------------
# The service's memory: bodies within a shared budget, spooled past it; big artifacts through a file


def test_an_upload_stays_within_the_budget_and_spools_past_it() -> None:
    from extract_fn.buffering import BufferBudget, Upload

    budget = BufferBudget(100)
    small, large = Upload(budget, 60), Upload(budget, 60)
    small.write(b"a" * 50)
    large.write(b"b" * 40)  # 90 of 100 in memory
    large.write(b"c" * 15)  # 105 would pass the budget: this one goes to a file and gives its 40 back
    assert (small.spooled, large.spooled, budget.used) == (False, True, 50)
    large.write(b"d" * 1000)
    assert budget.used == 50
    assert bytes(small.data()) == b"a" * 50
    data = large.data()
    assert data[:3] == b"bbb"
    assert data.startswith(b"bb")
    assert data.startswith((b"x", b"bbbb"))
    assert len(data) == 1055
    assert data.find(b"d") == 55
    small.close()
    large.close()
    assert budget.used == 0
    assert budget.peak <= budget.limit
    declared = Upload(budget, 60, expected=61)  # a Content-Length past the threshold goes to a file at once
    assert declared.spooled
    declared.close()


@pytest.fixture(scope="module")
def spooling_pool() -> Iterator[WorkerPool]:
    with WorkerPool(
        2,
        timeout_s=30,
        memory_limit_bytes=512 * 1024 * 1024,
        max_output_bytes=MAX_OUTPUT,
        spool_reply_bytes=4096,
        caller_max_requests=2,
    ) as p:
        yield p


GUARDED = {"header_timeout_s": 0.5, "body_timeout_s": 1.5, "max_connections": 12}


@pytest.fixture(scope="module")
def guarded(spooling_pool: WorkerPool) -> Iterator[tuple[tuple[str, int], Any]]:
    """The app under ``build_server`` (what ``serve`` runs), with short limits and a small buffer budget."""
    from extract_fn.server import build_server

    settings = _settings(buffer_bytes=48 * 1024, spool_bytes=16 * 1024, **GUARDED)
    app = create_app(settings, extractors=EXTRACTORS, pool=spooling_pool)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    server = build_server(app, settings, log_level="warning")
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    started = threading.Event()
    for _ in range(2000):
        if server.started or started.wait(0.01):
            break
    assert server.started
    yield sock.getsockname(), server
    server.should_exit = True
    thread.join(timeout=10)
    sock.close()


def test_live_concurrent_uploads_stay_within_the_buffer_budget(guarded: tuple[tuple[str, int], Any]) -> None:
    import hashlib

    address, server = guarded
    budget = _budget_of(server)
    bodies = [bytes([65 + i]) * (40_000 + i) for i in range(8)]  # 8 x 40 KB against a 48 KB budget

    def post(body: bytes) -> tuple[int, dict[str, Any]]:
        with httpx.Client(base_url=f"http://{address[0]}:{address[1]}", timeout=30) as http:
            r = http.post("/v1/extract", params={"format": "sql"}, content=body, headers=AUTH)
            return r.status_code, r.json()

    with ThreadPoolExecutor(8) as ex:
        answers = list(ex.map(post, bodies))
    for body, (status, doc) in zip(bodies, answers, strict=True):
        if status == 503:  # the pool (2 workers + queue) may refuse some: never a wrong or partial file
            assert doc["error"]["code"] == "service_unavailable"
            continue
        assert status == 200, doc
        assert doc["attrs"]["sha256"] == hashlib.sha256(body).hexdigest()  # a spooled body reaches the worker whole
    assert budget.peak <= budget.limit
    assert budget.spooled >= 1
    assert budget.used == 0


def _budget_of(server: Any) -> Any:
    app = server.config.loaded_app
    while not hasattr(app, "state") or not hasattr(app.state, "budget"):
        app = app.app
    return app.state.budget


def test_live_a_big_artifact_is_streamed_from_a_file(guarded: tuple[tuple[str, int], Any]) -> None:
    address, _ = guarded
    body = b"".join(b"row %d\n" % i for i in range(4000))
    with httpx.Client(base_url=f"http://{address[0]}:{address[1]}", timeout=30) as http:
        r = http.post("/v1/extract", params={"format": "text"}, content=body, headers=AUTH)
    assert r.status_code == 200
    assert int(r.headers["content-length"]) == len(r.content) > 4096
    validate_artifact(r.content, format="text", original_size=len(body))


def test_a_spooled_artifact_is_streamed_to_its_announced_length() -> None:
    """A reply file that holds more than its reply announced (a worker that wrote on) sends the length only."""
    import tempfile

    from extract_fn.app import _artifact_response
    from extract_fn.workers import SpooledReply

    file = tempfile.TemporaryFile()  # noqa: SIM115  (closed by the response, as the service's)
    file.write(b"x" * 3_000_000)
    file.seek(0)
    response = _artifact_response(SpooledReply(file, 2_500_000))

    async def body() -> bytes:
        return b"".join([chunk async for chunk in response.body_iterator])  # type: ignore[attr-defined]

    assert asyncio.run(body()) == b"x" * 2_500_000
    assert response.headers["content-length"] == "2500000"
    assert file.closed


def test_live_a_callers_full_share_is_503_before_its_body_is_read(
    guarded: tuple[tuple[str, int], Any], spooling_pool: WorkerPool
) -> None:
    address, _ = guarded
    places = [spooling_pool.admit(0), spooling_pool.admit(0)]  # caller 0 (TOKENS[0]) holds its share of 2
    try:
        # 1,000 bytes declared and none sent: an answer proves the body was never waited for.
        request = (
            b"POST /v1/extract?format=text HTTP/1.1\r\nHost: x\r\n"
            + f"Authorization: Bearer {TOKENS[0]}\r\n".encode()
            + b"Content-Length: 1000\r\n\r\n"
        )
        status, headers, body = _raw(address, request)
        assert status == 503
        assert headers["retry-after"] == "5"
        assert headers["connection"] == "close"  # its body was never read: the connection carries nothing more
        assert "share" in orjson.loads(body)["error"]["message"]
        other = _raw(address, request.replace(TOKENS[0].encode(), TOKENS[1].encode()) + b"x" * 1000)
        assert other[0] == 200  # the other caller is served
    finally:
        for place in places:
            place.release()


# ---------------------------------------------------------------------------------------------------------------
# The HTTP layer under abuse (extract_fn serve): slow heads, slow bodies, too many connections, ambiguous framing


def _closed_by_server(s: socket.socket, *, keep_sending: bytes = b"", rounds: int = 400) -> bytes:
    """Read until the server closes the connection (sending ``keep_sending`` between reads); what it said. Fails
    if the server keeps the connection open for all ``rounds`` (each waits at most 50 ms for the server)."""
    import select

    said = b""
    for _ in range(rounds):
        if keep_sending:
            try:
                s.sendall(keep_sending)
            except OSError:  # reset: the server is gone
                return said
        readable, _, _ = select.select([s], [], [], 0.05)
        if readable:
            try:
                chunk = s.recv(65536)
            except ConnectionResetError:
                return said
            if not chunk:
                return said
            said += chunk
    raise AssertionError(f"the server kept the connection open (it said {said[:80]!r})")


def _still_served(address: tuple[str, int]) -> None:
    with httpx.Client(base_url=f"http://{address[0]}:{address[1]}", timeout=30) as http:
        r = http.post("/v1/extract", params={"format": "text"}, content=b"still here\n", headers=AUTH)
    assert r.status_code == 200
    assert r.json()["blocks"][0]["text"] == "still here"


def test_live_a_head_that_never_completes_is_closed(guarded: tuple[tuple[str, int], Any]) -> None:
    address, server = guarded
    before = server.guard_stats.header_timeouts
    with socket.create_connection(address, timeout=10) as s:
        s.sendall(b"POST /v1/extract?format=text HTTP/1.1\r\nHost: x\r\n")
        # A header line at a time (slowloris): data arriving does not extend the time for the head.
        said = _closed_by_server(s, keep_sending=b"X-Slow: 1\r\n")
    assert said.startswith(b"HTTP/1.1 408 ")
    assert b'"request_timeout"' in said
    assert server.guard_stats.header_timeouts == before + 1
    _still_served(address)


def test_live_a_body_that_dribbles_is_cut_off_by_the_whole_body_deadline(guarded: tuple[tuple[str, int], Any]) -> None:
    address, _ = guarded
    with socket.create_connection(address, timeout=10) as s:
        s.sendall(
            b"POST /v1/extract?format=text HTTP/1.1\r\nHost: x\r\n" + _auth_line() + b"Content-Length: 60000\r\n\r\n"
        )
        said = _closed_by_server(s, keep_sending=b"x")  # a byte at a time: never idle, never complete
    assert said.startswith(b"HTTP/1.1 408 ")
    assert b"within 1.5 s" in said
    _still_served(address)


def test_live_a_request_with_content_length_and_transfer_encoding_closes_the_connection(
    guarded: tuple[tuple[str, int], Any],
) -> None:
    address, _ = guarded
    smuggled = b"GET /v1/capabilities HTTP/1.1\r\nHost: x\r\n" + _auth_line() + b"\r\n"
    with socket.create_connection(address, timeout=10) as s:
        s.sendall(
            b"POST /v1/extract?format=text HTTP/1.1\r\nHost: x\r\n" + _auth_line() + b"Content-Length: 5\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n" + smuggled
        )
        said = _closed_by_server(s)
    head, _, body = said.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"connection: close" in head.lower()
    assert orjson.loads(body)["error"]["code"] == "bad_request"
    assert said.count(b"HTTP/1.1 ") == 1  # what followed was never answered as a request of its own


def test_live_connections_past_the_cap_are_closed_and_the_service_recovers(
    guarded: tuple[tuple[str, int], Any],
) -> None:
    address, server = guarded
    cap = GUARDED["max_connections"]
    refused_before = server.guard_stats.refused_connections
    timed_out_before = server.guard_stats.header_timeouts
    fds_before = len(os.listdir("/proc/self/fd"))
    held: list[socket.socket] = []
    try:
        for _ in range(5 * cap):  # partial heads, all left hanging
            s = socket.create_connection(address, timeout=10)
            s.sendall(b"GET /v1/capabilities HTTP/1.1\r\nHost: x\r\n")
            held.append(s)
        assert len(server.server_state.connections) <= cap
        # This process holds both ends: the client sockets, and on the server side at most the cap.
        assert len(os.listdir("/proc/self/fd")) - fds_before <= len(held) + cap + 4
        for s in held:  # every one is closed by the server: at once past the cap, at the header timeout otherwise
            _closed_by_server(s)
    finally:
        for s in held:
            s.close()
    refused = server.guard_stats.refused_connections - refused_before
    timed_out = server.guard_stats.header_timeouts - timed_out_before
    # Past the cap a connection is closed at once (those the kernel still queued are taken as the first ones close).
    assert refused >= cap
    assert refused + timed_out == len(held)
    _still_served(address)


def test_live_an_abuse_storm_writes_a_bounded_number_of_log_lines(guarded: tuple[tuple[str, int], Any]) -> None:
    from extract_fn import log_limits

    address, _ = guarded
    lines: dict[int, logging.LogRecord] = {}  # a record reaches the handler on each logger it propagates through

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines[id(record)] = record

    handler = Collect(level=logging.WARNING)
    loggers = [logging.getLogger(name) for name in log_limits.LIMITED_LOGGERS]
    for lg in loggers:
        lg.addHandler(handler)
    try:
        for _ in range(300):  # each is an invalid request uvicorn warns about
            with socket.create_connection(address, timeout=10) as s:
                s.sendall(b"NOT HTTP AT ALL\x00\r\n\r\n")
                _closed_by_server(s)
    finally:
        for lg in loggers:
            lg.removeHandler(handler)
    assert len(lines) <= log_limits.DEFAULT_BURST + 1
    assert log_limits.install().dropped_total > 0
    _still_served(address)
