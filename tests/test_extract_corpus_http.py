"""Every input of the real-world corpus (../shared/corpus, MANIFEST.tsv) through the running service over HTTP.

One ``python -m extract_fn serve`` (2 workers, the other settings at their defaults) serves the module. The module's
fixture sends every input once without options and, for a row with a codec, once more with ``encoding=<codec>``,
three at a time, and keeps the answers; one test per input then holds its answers to the manifest:

- ``ok``: 200, an artifact the shared validator passes for the format and the original's size, of that format;
- ``corrupt``: 422 ``corrupt``; ``encrypted``: 422 ``corrupt`` whose message says encrypted or password;
- ``encoding``: 422 ``encoding`` without the option, and 200 with ``encoding=<codec>`` (text without U+FFFD);
- where a row's note accepts another outcome (a clean error for a bomb, lenient extraction of a damaged file, empty
  text for an unreadable page), that outcome, checked as far as the note says (``NOTED``);
- never a 5xx, never a compressed answer, and the service is whole at the end.

Rows whose format ends in ``-expected`` are ground truth for other tests, not inputs.
"""

from __future__ import annotations

import codecs
import csv
import hashlib
import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import orjson
import pytest

from shared.artifact import validate_artifact
from shared.contract import FORMATS, TEXT_FORMATS
from tests import hostile_inputs as hi

pytestmark = pytest.mark.xdist_group("extract-corpus-http")  # one service for the module, even under xdist

CORPUS: Final = hi.CORPUS
CONCURRENCY: Final = 3
SETTINGS: Final = {"EXTRACTOR_WORKERS": "2"}


@dataclass(frozen=True)
class Row:
    path: str
    format: str
    bytes: int
    sha256: str
    expect: str
    note: str
    codec: str

    @property
    def name(self) -> str:
        return Path(self.path).name


def _manifest() -> list[Row]:
    with (CORPUS / "MANIFEST.tsv").open(encoding="utf-8", newline="") as fh:
        rows = [
            Row(r["path"], r["format"], int(r["bytes"]), r["sha256"], r["expect"], r["note"] or "", r["codec"] or "")
            for r in csv.DictReader(fh, delimiter="\t")
        ]
    return [r for r in rows if not r.format.endswith("-expected")]


ROWS: Final = _manifest()

# Rows whose note accepts another answer than `expect` (MANIFEST.tsv's note column, quoted in each comment).
NOTED: Final[dict[str, str]] = {
    # "a clean resource-limit error is acceptable, hanging/OOM is not"
    "parquet/parquet-testing-large_string_map.brotli.parquet": "or resource_limit",
    # "empty or literal entity is correct; a clean rejection is acceptable"
    "docx/poi-external-entity-in-text.docx": "or corrupt, never the entity fetched",
    # "Acceptable: extract as UTF-8 with a warning, or the encoding error; never mojibake"
    "html/readability-qq-charset-mismatch.html": "or encoding, else utf-8 with a warning",
    # "clean error or empty text both acceptable"
    "pdf/pdfjs-pdfbox-4352-bad-xref-entries.pdf": "or empty text",
    # "must not crash/hang (error or partial text acceptable)"
    "docx/poi-clusterfuzz-xwpf-5313273089884160.docx": "or partial text",
    "pptx/poi-clusterfuzz-xslf-6254434927378432.pptx": "or partial text",
    # "openpyxl ignores the root rels and reads 2 sheets - lenient extraction acceptable"
    "xlsx/poi-xlsx-corrupted.xlsx": "or lenient extraction",
}


@dataclass
class Answer:
    status: int = 0
    content_type: str = ""
    content_encoding: str | None = None
    body: bytes = b""
    error: str = ""  # the exception, when there was no HTTP answer at all
    seconds: float = 0.0

    @property
    def code(self) -> str | None:
        if self.status != 422:
            return None
        try:
            return str(orjson.loads(self.body)["error"]["code"])
        except (orjson.JSONDecodeError, KeyError, TypeError):
            return None

    @property
    def message(self) -> str:
        return str(orjson.loads(self.body)["error"]["message"])

    def show(self) -> str:
        if self.error:
            return f"no answer: {self.error}"
        return f"HTTP {self.status}: {self.body[:400]!r}"


@dataclass
class Run:
    answers: dict[tuple[str, str | None], Answer]
    seconds: float
    slowest: list[tuple[float, str]]


@pytest.fixture(scope="module")
def service() -> Iterator[hi.LiveService]:
    with hi.start_service(SETTINGS) as live:
        yield live


@pytest.fixture(scope="module")
def corpus_run(service: hi.LiveService) -> Run:
    """Every corpus input sent once (and once more with its codec), ``CONCURRENCY`` at a time, biggest first."""
    jobs: list[tuple[Row, str | None]] = [(r, None) for r in ROWS] + [(r, r.codec) for r in ROWS if r.codec]
    jobs.sort(key=lambda job: -job[0].bytes)
    lock = threading.Lock()
    answers: dict[tuple[str, str | None], Answer] = {}

    def send(job: tuple[Row, str | None]) -> None:
        row, codec = job
        answer = Answer()
        data = (CORPUS / row.path).read_bytes()
        options = {"encoding": codec} if codec else {}
        started = time.perf_counter()
        try:
            response = service.extract(row.format, data, name=row.name, timeout=300, **options)
        except Exception as exc:  # recorded and reported by the row's test
            answer.error = f"{type(exc).__name__}: {exc}"
        else:
            answer.status = response.status_code
            answer.content_type = response.headers.get("content-type", "")
            answer.content_encoding = response.headers.get("content-encoding")
            answer.body = response.content
        answer.seconds = time.perf_counter() - started
        with lock:
            answers[(row.path, codec)] = answer

    started = time.perf_counter()
    with ThreadPoolExecutor(CONCURRENCY) as pool:
        list(pool.map(send, jobs))
    seconds = time.perf_counter() - started
    slowest = sorted(((a.seconds, f"{p} {c or ''}".strip()) for (p, c), a in answers.items()), reverse=True)[:10]
    return Run(answers, seconds, slowest)


# ---------------------------------------------------------------------------------------------------------------
# Checks


def _artifact(answer: Answer, row: Row, codec: str | None = None) -> dict[str, Any]:
    label = f"{row.path}" + (f" with encoding={codec}" if codec else "")
    assert answer.status == 200, f"{label}: expected 200 ({row.expect}: {row.note}), got {answer.show()}"
    assert answer.content_type == "application/json"
    validate_artifact(answer.body, format=row.format, original_size=row.bytes)
    artifact: dict[str, Any] = orjson.loads(answer.body)
    assert artifact["format"] == row.format
    return artifact


def _error(answer: Answer, row: Row, *codes: str) -> str:
    assert answer.status == 422, f"{row.path}: expected 422 {codes} ({row.expect}), got {answer.show()}"
    assert answer.content_type == "application/json"
    assert answer.code in codes, f"{row.path}: expected {codes}, got {answer.show()}"
    assert answer.message.strip()
    return answer.message


def _texts(artifact: dict[str, Any]) -> list[str]:
    return [block["text"] for block in artifact["blocks"]]


def _check_noted(row: Row, answer: Answer) -> None:
    """A row whose note accepts a second outcome (see NOTED)."""
    if row.path == "parquet/parquet-testing-large_string_map.brotli.parquet":
        if answer.status == 422:
            _error(answer, row, "resource_limit")
        else:
            _artifact(answer, row)
    elif row.path == "docx/poi-external-entity-in-text.docx":
        if answer.status == 422:
            _error(answer, row, "corrupt")
        else:
            text = "\n".join(_texts(_artifact(answer, row)))
            assert "Here should not be the POI web site" in text
            assert len(text) < 100, text  # the entity is empty or literal: nothing was fetched and inserted
    elif row.path == "html/readability-qq-charset-mismatch.html":
        if answer.status == 422:
            _error(answer, row, "encoding")
        else:
            artifact = _artifact(answer, row)
            assert artifact["warnings"], "read as UTF-8 against its declared charset: a warning must say so"
            # Never mojibake: every CJK character extracted is one the bytes hold as UTF-8.
            source = set((CORPUS / row.path).read_bytes().decode("utf-8"))
            extracted = {ch for t in _texts(artifact) for ch in t if ord(ch) >= 0x2E80}
            assert len(extracted) > 50
            assert extracted <= source, sorted(extracted - source)[:20]
    elif row.path == "pdf/pdfjs-pdfbox-4352-bad-xref-entries.pdf":
        if answer.status == 422:
            _error(answer, row, "corrupt")
        else:
            assert not any(t.strip() for t in _texts(_artifact(answer, row)))
    elif answer.status == 422:  # damaged files that may also be read leniently
        _error(answer, row, "corrupt")
    else:
        _artifact(answer, row)


def _check_decoded(row: Row, artifact: dict[str, Any], codec: str) -> None:
    """Read with the right codec: no replacement characters, and (plain text) every block is the decoded text's."""
    decoded = (CORPUS / row.path).read_bytes().decode(codec)
    assert "\ufffd" not in decoded
    for text in _texts(artifact):
        assert "\ufffd" not in text, f"{row.path} with encoding={codec}: {text[:80]!r}"
    if row.format == "text":
        normalized = re.sub(r"\r\n?", "\n", decoded.removeprefix("\ufeff"))
        for text in _texts(artifact):
            assert text in normalized, f"{row.path}: {text[:80]!r} is not in the text decoded as {codec}"


@pytest.mark.parametrize("row", ROWS, ids=[r.path for r in ROWS])
def test_corpus_input(corpus_run: Run, row: Row) -> None:
    answer = corpus_run.answers[(row.path, None)]
    assert not answer.error, f"{row.path}: {answer.show()}"
    assert answer.status < 500, f"{row.path}: {answer.show()}"
    assert answer.content_encoding in (None, "identity")
    if row.path in NOTED:
        _check_noted(row, answer)
    elif row.expect == "ok":
        artifact = _artifact(answer, row)
        if row.path == "pptx/python-pptx-no-slides.pptx":  # "expect empty output, not an error"
            assert artifact["blocks"] == []
    elif row.expect == "corrupt":
        _error(answer, row, "corrupt")
    elif row.expect == "encrypted":
        message = _error(answer, row, "corrupt").lower()
        assert "encrypt" in message or "password" in message, message
    elif row.expect == "encoding":
        _error(answer, row, "encoding")
    else:
        pytest.fail(f"{row.path}: unknown expectation {row.expect!r}")

    if row.codec:
        with_codec = corpus_run.answers[(row.path, row.codec)]
        assert not with_codec.error, f"{row.path} with encoding={row.codec}: {with_codec.show()}"
        assert with_codec.content_encoding in (None, "identity")
        artifact = _artifact(with_codec, row, row.codec)
        assert artifact["options"] == {"encoding": row.codec}
        _check_decoded(row, artifact, row.codec)
        if codecs.lookup(row.codec).name == "iso2022_jp":  # "with encoding=iso-2022-jp it reads as Japanese"
            assert any(re.search(r"[\u3040-\u30ff]", t) for t in _texts(artifact))


def test_no_answer_is_a_server_error(corpus_run: Run) -> None:
    bad = {f"{p} {c or ''}": a.show() for (p, c), a in corpus_run.answers.items() if a.error or a.status >= 500}
    assert not bad, bad


def test_the_service_is_whole_after_the_corpus(service: hi.LiveService, corpus_run: Run) -> None:
    assert service.alive(), service.log_tail()
    assert service.capabilities().status_code == 200
    data = b"# After the corpus\n\nstill serving\n"
    response = service.extract("markdown", data, name="after.md")
    assert response.status_code == 200, response.text
    validate_artifact(response.content, format="markdown", original_size=len(data))
    print(f"\ncorpus: {len(corpus_run.answers)} requests in {corpus_run.seconds:.1f} s; slowest: {corpus_run.slowest}")


def test_the_manifest_describes_the_corpus() -> None:
    """The corpus is what the manifest says (sizes and digests), every format is in it, and every note that
    accepts a second outcome is one NOTED handles."""
    assert len(ROWS) > 500
    assert {r.format for r in ROWS} == set(FORMATS)
    assert {r.expect for r in ROWS} == {"ok", "corrupt", "encrypted", "encoding"}
    for row in ROWS:
        data = (CORPUS / row.path).read_bytes()
        assert len(data) == row.bytes, row.path
        assert hashlib.sha256(data).hexdigest() == row.sha256, row.path
        if row.codec:
            assert row.format in TEXT_FORMATS, row.path
            codecs.lookup(row.codec)
    accepting = {r.path for r in ROWS if re.search(r"acceptable", r.note, re.IGNORECASE)}
    assert accepting == set(NOTED)
