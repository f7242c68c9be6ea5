"""A seeded mutation fuzz of every format module, small enough for the suite: corpus files of each format
mutated (``tools/fuzz_mutations.py``) and extracted in a worker pool, as the service does.

Each mutant must get a valid artifact or one of the contract's error codes with a message that shows nothing of
the host, and never the worker's catch-all answer ("the <format> parser failed on this file (ValueError)"), which
means a format module let an exception out: every one found this way was a bug with a better answer. The longer
run over HTTP is ``tools/fuzz_extractor.py``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from extract_fn.formats import MODULES
from extract_fn.formats.base import ExtractRequest
from extract_fn.workers import SpooledReply, WorkerPool
from shared.artifact import validate_artifact
from shared.contract import ErrorCode, ExtractionError
from tools.fuzz_mutations import mutate

SEED = 20261207
FILES_PER_FORMAT = 40
MUTANTS_PER_FILE = 3
MAX_SOURCE_BYTES = 1 << 20  # the suite's share: small sources (the HTTP tool takes every file)
MIB = 1 << 20
GENEROUS_TIMEOUT_S = 60.0  # a timeout is a contract answer too; this only keeps a slow machine from giving it
_CATCH_ALL = re.compile(r"parser failed on this file \(")
_HOST_DETAIL = re.compile(r"Traceback|site-packages|/work/|/tmp/|/root/|/home/|File \"")


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    with WorkerPool(2, timeout_s=GENEROUS_TIMEOUT_S, memory_limit_bytes=2048 * MIB, max_output_bytes=64 * MIB) as p:
        yield p


def _mutants(corpus: Path) -> list[tuple[str, str, int, bytes]]:
    """(format, file name, mutant number, bytes), the same list on every machine."""
    rng = random.Random(SEED)
    rows = [line.split("\t") for line in (corpus / "MANIFEST.tsv").read_text(encoding="utf-8").splitlines()[1:]]
    out = []
    for fmt in sorted(MODULES):
        sources = sorted(path for path, kind, size, *_ in rows if kind == fmt and int(size) <= MAX_SOURCE_BYTES)
        for path in rng.sample(sources, min(FILES_PER_FORMAT, len(sources))):
            data = (corpus / path).read_bytes()
            out += [(fmt, path, k, mutate(data, fmt, rng)) for k in range(MUTANTS_PER_FILE)]
    return out


def _answer(pool: WorkerPool, fmt: str, data: bytes) -> str | None:
    """What is wrong with the answer to ``data``, or None."""
    request = ExtractRequest(format=fmt, max_output_bytes=64 * MIB)
    try:
        reply = pool.run_sync(MODULES[fmt] + ":extract", data, request)
    except ExtractionError as err:
        if _CATCH_ALL.search(err.message):
            return f"the catch-all answered: {err.code.value}: {err.message}"
        if _HOST_DETAIL.search(err.message):
            return f"the message shows the host: {err.message}"
        if err.code is ErrorCode.INVALID_ARTIFACT:
            return f"the module built an invalid artifact: {err.message}"
        return None
    raw = reply.read_all() if isinstance(reply, SpooledReply) else reply
    try:
        validate_artifact(raw, format=fmt, original_size=len(data))
    except ExtractionError as err:
        return f"invalid artifact: {err.message}"
    return None


def test_mutants_of_every_format_get_an_artifact_or_a_contract_error(pool: WorkerPool, corpus: Path) -> None:
    mutants = _mutants(corpus)
    assert {fmt for fmt, *_ in mutants} == set(MODULES)
    with ThreadPoolExecutor(pool.size) as threads:
        answers = list(threads.map(lambda m: _answer(pool, m[0], m[3]), mutants))
    findings = [
        f"{fmt} {name} mutant {k}: {problem}"
        for (fmt, name, k, _), problem in zip(mutants, answers, strict=True)
        if problem
    ]
    assert findings == []
