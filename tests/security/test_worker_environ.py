"""Worker processes hold none of the service's secrets (issue 12, item 2).

A parser tricked into reading ``/proc/self/environ`` (a DTD naming it, before item 1 was fixed) read the worker's
environment. The test sets the secrets a deployment has (tokens, storage connection strings with an AccountKey, the
LOOM token, managed-identity endpoints, any ``*_KEY``/``*SECRET*``/``*CONNECTION*``) in the parent before the pool
is built, reads each started worker's ``/proc/<pid>/environ`` from the test, and then has the same workers extract
a real file of every format.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator
from pathlib import Path
from typing import Final

import orjson
import pytest

from extract_fn.formats.base import ExtractRequest
from extract_fn.service import default_extractors
from extract_fn.workers import ALLOCATOR_SETTINGS, CHILD_ENV_NAMES, WorkerPool
from shared.artifact import validate_artifact
from tests.waiting import wait_until

CORPUS: Final = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
MiB: Final = 1024 * 1024
ACCOUNT_KEY: Final = "c2VjcmV0LWFjY291bnQta2V5LXZhbHVlLTQyLWZvci10aGUtdGVzdA=="
SECRETS: Final = {
    "EXTRACTOR_TOKENS": "tok-env-secret-1,tok-env-secret-2",
    "AzureWebJobsStorage": (
        f"DefaultEndpointsProtocol=https;AccountName=loomfuncs;AccountKey={ACCOUNT_KEY};EndpointSuffix=core.windows.net"
    ),
    "DataStorage": f"DefaultEndpointsProtocol=https;AccountName=loomdata;AccountKey={ACCOUNT_KEY}x;",
    "DataStorage__blobServiceUri": "https://loomdata.blob.core.windows.net/?sv=2024&sig=datastorage-sas-sig",
    "LOOM_DOCUMENT_EXTRACTOR_TOKEN": "loom-token-secret-value",
    "DOCSAI_TOKEN": "docsai-token-secret-value",
    "SOME_API_KEY": "some-api-key-secret-value",
    "AZURE_CLIENT_SECRET": "azure-client-secret-value",
    "APPLICATIONINSIGHTS_CONNECTION_STRING": "InstrumentationKey=appinsights-secret-ikey;IngestionEndpoint=https://x/",
    "IDENTITY_ENDPOINT": "http://localhost:42356/msi/token",
    "IDENTITY_HEADER": "identity-header-secret-value",
    "MSI_SECRET": "msi-secret-value",
    "DB_PASSWORD": "db-password-secret-value",
    "MY_SERVICE_CONNECTION": "Server=db;Password=connection-secret-value",
}
# Settings the workers must still see: where things are, the locale, the allocator.
KEPT: Final = {
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "TZ": "UTC",
    "OMP_NUM_THREADS": "1",
    "MIMALLOC_PURGE_DELAY": "25",  # an operator's allocator setting wins over the workers' default
}


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(entry.split("=", 1) for entry in raw.decode("utf-8", "replace").split("\0") if "=" in entry)


def wait_exec(pid: int, timeout_s: float = 120.0) -> None:
    """Wait until ``pid`` runs the worker program: a child read between fork and exec shows the parent's environment,
    and one read during exec an empty one."""
    wait_until(
        lambda: b"extract_fn.workers" in Path(f"/proc/{pid}/cmdline").read_bytes() and environ_of(pid),
        timeout_s,
        f"worker {pid} runs its program",
    )


def corpus_sample() -> dict[str, Path]:
    """The smallest readable ("ok", no codec needed) corpus file of each format."""
    best: dict[str, tuple[int, Path]] = {}
    with (CORPUS / "MANIFEST.tsv").open(newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t"):
            fmt, size = row["format"], int(row["bytes"])
            if row["expect"] != "ok" or row["codec"] or fmt not in default_extractors() or size == 0:
                continue
            if fmt not in best or size < best[fmt][0]:
                best[fmt] = (size, CORPUS / row["path"])
    return {fmt: path for fmt, (_size, path) in best.items()}


@pytest.fixture(scope="module")
def pool() -> Iterator[WorkerPool]:
    with pytest.MonkeyPatch.context() as mp:
        for name, value in {**SECRETS, **KEPT}.items():
            mp.setenv(name, value)
        p = WorkerPool(2, timeout_s=120, memory_limit_bytes=2048 * MiB, max_output_bytes=64 * MiB)
    with p:  # the environment is the parent's again: the workers' is fixed when the pool is built
        yield p


def test_a_worker_environment_holds_no_secret(pool: WorkerPool) -> None:
    pids = [pid for pid in pool.pids() if pid is not None]
    assert len(pids) == 2
    for pid in pids:
        wait_exec(pid)
        env = environ_of(pid)
        raw = Path(f"/proc/{pid}/environ").read_bytes().decode("utf-8", "replace")
        assert set(SECRETS) & set(env) == set(), f"worker {pid} inherited secret settings"
        for name, value in SECRETS.items():
            assert value not in raw, f"worker {pid} holds the value of {name}"
        assert ACCOUNT_KEY not in raw
        for name in env:  # an allowlist: nothing else gets through
            assert name in CHILD_ENV_NAMES or name.startswith("LC_") or name in ("PYTHONPATH", "PYTHONUNBUFFERED")
        for name, value in KEPT.items():
            assert env.get(name) == value, f"worker {pid} lost {name}"
        assert {name: env.get(name) for name in ALLOCATOR_SETTINGS} == {
            **ALLOCATOR_SETTINGS,
            **{name: value for name, value in KEPT.items() if name in ALLOCATOR_SETTINGS},
        }
        assert env.get("PATH")


def test_an_operators_allocator_settings_reach_the_workers() -> None:
    assert set(ALLOCATOR_SETTINGS) <= CHILD_ENV_NAMES


def test_the_workers_still_extract_every_format(pool: WorkerPool) -> None:
    sample = corpus_sample()
    assert set(sample) == set(default_extractors()), "a format has no readable corpus file"
    for fmt, path in sorted(sample.items()):
        data = path.read_bytes()
        raw = pool.run_sync(default_extractors()[fmt], data, ExtractRequest(fmt, name=path.name))
        validate_artifact(raw, format=fmt, original_size=len(data))
        assert orjson.loads(raw)["format"] == fmt
    for pid in pool.pids():  # the workers that did the work are the ones checked above, or their replacements
        assert pid is not None
        wait_exec(pid)
        raw = Path(f"/proc/{pid}/environ").read_bytes().decode("utf-8", "replace")
        assert all(value not in raw for value in SECRETS.values())
