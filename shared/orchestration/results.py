"""Result handling: DOCSAI payloads to ``result.json``; DBRICKS result blobs to Palantir ingestion.

DOCSAI ``Payload`` on completion:

- an object (or array): serialized as JSON;
- a ``data:`` URL: decoded (base64 or percent-encoded);
- an ``http(s)://`` URL: downloaded through ``shared.outbound`` (its rules: https only, checked public addresses,
  no second lookup, nothing decompressed), only from a host in ``RESULT_DOWNLOAD_ALLOWED_HOSTS`` (``host``,
  ``host:port`` or ``*.domain``), at most ``RESULT_DOWNLOAD_MAX_BYTES`` within one deadline of
  ``RESULT_DOWNLOAD_TIMEOUT_SECONDS`` for the whole download; redirects are followed (at most 3) only to the same
  origin (scheme, host and port). The extractor's bearer token goes with it only to the origin of the extractor's
  ``pollingUrl``; a compressed answer (sent although identity was asked) is refused.

The bytes are stored in container ``results`` at ``<clientApplicationId>/<fileId>/<jobId>/result.json``.

DBRICKS: each ``tasks[].result_url`` names a blob in container ``results`` (an https blob URL, ``abfss://`` /
``wasbs://`` URL, or a path ``/results/...``) that must lie under the job's output path
``<clientApplicationId>/<fileId>/<jobId>/``; each blob is sent to Palantir (Foundry's dataset file upload API,
``POST {PALANTIR_INGEST_URL}/api/v1/datasets/{PALANTIR_DATASET_RID}/files:upload?filePath=<path>``, body = the
bytes) and the result URLs are returned for the extracted-result event.

A ``ResultError`` is ``permanent`` (forbidden host, too large, malformed: the job fails now) or transient (a 5xx,
a timeout, storage unavailable: the poll loop retries up to ``RESULT_MAX_ATTEMPTS`` times, then fails the job).
"""

from __future__ import annotations

import base64
import binascii
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Final
from urllib.parse import quote, unquote, unquote_to_bytes, urlsplit

import orjson
from azure.core.exceptions import AzureError, ResourceNotFoundError
from azure.storage.blob import ContentSettings

from shared.orchestration.auth import TokenError, bearer_token
from shared.orchestration.extractor_client import StoredResult
from shared.orchestration.settings import PALANTIR_INGEST_URL, RESULT_DOWNLOAD_ALLOWED_HOSTS, OrchestrationSettings
from shared.orchestration.storage import blob_service, blob_url, parse_blob_url
from shared.outbound import Allowlist, Bearer, Outbound, OutboundFailed, OutboundRefused, Resolver, host_entry

if TYPE_CHECKING:
    from shared.orchestration.jobs import Job
    from shared.orchestration.outcomes import PollOutcome

log = logging.getLogger(__name__)

RESULT_FILE: Final = "result.json"
MAX_REDIRECTS: Final = 3
MAX_PALANTIR_ANSWER_BYTES: Final = 64 * 1024


class ResultError(Exception):
    def __init__(self, reason: str, *, permanent: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.permanent = permanent


def result_blob_name(client_application_id: str, file_id: str, job_id: str) -> str:
    return f"{client_application_id}/{file_id}/{job_id}/{RESULT_FILE}"


def output_prefix(client_application_id: str, file_id: str, job_id: str) -> str:
    return f"{client_application_id}/{file_id}/{job_id}/"


# ---------------------------------------------------------------------------------------------------------------
# DOCSAI payloads


@dataclass(frozen=True, slots=True)
class ResolvedResult:
    data: bytes
    content_type: str = "application/json"


def resolve_docsai_payload(
    payload: Any,
    settings: OrchestrationSettings,
    *,
    resolver: Resolver | None = None,
    bearer: Bearer | None = None,
    outbound: Outbound | None = None,
) -> ResolvedResult:
    if isinstance(payload, dict | list):
        return ResolvedResult(orjson.dumps(payload))
    if isinstance(payload, str):
        text = payload.strip()
        low = text[:8].lower()
        if low.startswith("data:"):
            return decode_data_url(text, settings.result_download_max_bytes)
        if low.startswith(("http://", "https://")):
            return ResolvedResult(download_result(text, settings, resolver=resolver, bearer=bearer, outbound=outbound))
        raise ResultError("the Payload string is neither a data URL nor an http(s) URL", permanent=True)
    if payload is None:
        raise ResultError("the extractor reported complete without a Payload", permanent=True)
    raise ResultError(f"the Payload is a JSON {type(payload).__name__}, not an object or URL", permanent=True)


def decode_data_url(url: str, max_bytes: int) -> ResolvedResult:
    head, sep, data = url[5:].partition(",")
    if not sep:
        raise ResultError("malformed data URL (no comma)", permanent=True)
    params = [p.strip() for p in head.split(";")]
    media = params[0].lower() if params and params[0] else "text/plain"
    is_b64 = any(p.lower() == "base64" for p in params[1:])
    # Refuse early on the encoded size (base64: 4 chars per 3 bytes; percent-encoding: at most 3 chars per byte).
    encoded_limit = (max_bytes // 3 + 2) * 4 if is_b64 else max_bytes * 3
    if len(data) > encoded_limit:
        raise ResultError(f"the data URL result is over {max_bytes} bytes", permanent=True)
    try:
        raw = base64.b64decode(unquote(data), validate=True) if is_b64 else unquote_to_bytes(data)
    except (binascii.Error, ValueError) as exc:
        raise ResultError(f"the data URL's base64 does not decode: {exc}", permanent=True) from None
    if len(raw) > max_bytes:
        raise ResultError(f"the data URL result is over {max_bytes} bytes", permanent=True)
    return ResolvedResult(raw, media or "application/octet-stream")


def download_result(
    url: str,
    settings: OrchestrationSettings,
    *,
    resolver: Resolver | None = None,
    bearer: Bearer | None = None,
    outbound: Outbound | None = None,
) -> bytes:
    """Fetch a result URL under the outbound policy and the download limits above (``outbound``: the transport the
    composition root built; by default one from ``settings``)."""
    outbound = outbound or settings.outbound()
    if resolver is not None:
        outbound = replace(outbound, resolver=resolver)
    max_bytes = settings.result_download_max_bytes
    allowed = Allowlist(settings.result_download_allowed_hosts, RESULT_DOWNLOAD_ALLOWED_HOSTS, "result")
    try:
        answer = outbound.fetch(
            "GET",
            url,
            allowed=allowed,
            headers={"Accept": "*/*"},
            bearer=bearer,
            timeout_s=settings.result_download_timeout_s,
            body_limit=lambda status, _h: max_bytes if status == 200 else 0,
            max_redirects=MAX_REDIRECTS,
        )
    except OutboundRefused as exc:
        raise ResultError(exc.reason, permanent=True) from None
    except OutboundFailed as exc:
        raise ResultError(f"result download failed: {exc.reason}", permanent=False) from None
    if answer.status != 200:
        permanent = 400 <= answer.status < 500 and answer.status not in (408, 429)
        raise ResultError(f"result URL answered HTTP {answer.status}", permanent=permanent)
    if answer.compressed:
        raise ResultError(
            f"result URL answered compressed ({answer.compressed}) although identity was asked; refused", permanent=True
        )
    if answer.overflow:
        raise ResultError(f"result is over the {max_bytes} byte limit", permanent=True)
    return answer.body


def store_result(settings: OrchestrationSettings, blob_name: str, result: ResolvedResult) -> str:
    """Upload (overwrite: a retried attempt writes the same bytes to the same place); return the blob URL."""
    try:
        container = blob_service(settings).get_container_client(settings.results_container)
        container.upload_blob(
            blob_name, result.data, overwrite=True, content_settings=ContentSettings(content_type=result.content_type)
        )
    except AzureError as exc:
        raise ResultError(f"the result could not be stored: {type(exc).__name__}", permanent=False) from None
    return blob_url(settings, settings.results_container, blob_name)


# ---------------------------------------------------------------------------------------------------------------
# DBRICKS results -> Palantir


def store_result_document(settings: OrchestrationSettings, job: Job, outcome: PollOutcome) -> StoredResult:
    """A Succeeded outcome's result bytes (DOCSAI, LOOM) as the job's ``result.json``; nothing when it holds none."""
    if outcome.result is None:
        return StoredResult()
    content_type = str(outcome.details.get("content_type") or "application/json")
    name = result_blob_name(job.client_application_id, job.file_id, job.job_id)
    return StoredResult(location=store_result(settings, name, ResolvedResult(outcome.result, content_type)))


def result_url_to_blob(url: str, settings: OrchestrationSettings, prefix: str) -> str:
    """The blob name (in the results container) a DBRICKS ``result_url`` names; it must lie under ``prefix``."""
    text = url.strip()
    container: str
    name: str
    low = text.lower()
    if low.startswith(("abfss://", "abfs://", "wasbs://", "wasb://")):
        parts = urlsplit(text)
        container = unquote(parts.username or "")
        name = unquote(parts.path.lstrip("/"))
    elif low.startswith(("http://", "https://")):
        try:
            ref = parse_blob_url(text)
        except ValueError as exc:
            raise ResultError(f"result_url {url!r}: {exc}", permanent=True) from None
        account = blob_service(settings).account_name
        if account and ref.account.lower() != account.lower():
            raise ResultError(f"result_url {url!r} is not in the configured storage account", permanent=True)
        container, name = ref.container, ref.blob
    else:
        path = text.removeprefix("dbfs:").lstrip("/")
        container, _, name = path.partition("/")
        if container == "results":  # the spec's output_path spelling "/results/..." names the results container
            container = settings.results_container
    segments = name.split("/")
    if container != settings.results_container or not name or any(s in ("", ".", "..") for s in segments):
        raise ResultError(
            f"result_url {url!r} does not name a blob in container {settings.results_container}", permanent=True
        )
    if not name.startswith(prefix):
        raise ResultError(f"result_url {url!r} lies outside the job's output path {prefix}", permanent=True)
    return name


def read_result_blob(settings: OrchestrationSettings, name: str) -> bytes:
    blob = blob_service(settings).get_blob_client(settings.results_container, name)
    try:
        size = blob.get_blob_properties().size
        if size > settings.result_download_max_bytes:
            raise ResultError(
                f"result blob {name} is {size} bytes, over the {settings.result_download_max_bytes} byte limit",
                permanent=True,
            )
        return blob.download_blob().readall()
    except ResourceNotFoundError:
        raise ResultError(f"result blob {name} does not exist (yet)", permanent=False) from None
    except AzureError as exc:
        raise ResultError(f"result blob {name} could not be read: {type(exc).__name__}", permanent=False) from None


def palantir_upload(
    settings: OrchestrationSettings,
    file_path: str,
    data: bytes,
    *,
    sleep: Callable[[float], None] = time.sleep,
    outbound: Outbound | None = None,
) -> None:
    s = settings
    if not s.palantir_ingest_url or not s.palantir_dataset_rid:
        raise ResultError(f"Palantir ingestion is not configured ({PALANTIR_INGEST_URL} is not set)", permanent=True)
    try:
        token = s.palantir_token or bearer_token(s, scope=s.palantir_token_scope)
    except TokenError as exc:
        raise ResultError(f"no token for Palantir: {exc}", permanent=False) from None
    url = f"{s.palantir_ingest_url}/api/v1/datasets/{quote(s.palantir_dataset_rid, safe='')}/files:upload"
    params = {"filePath": file_path}
    if s.palantir_branch_id:
        params["branchId"] = s.palantir_branch_id
    outbound = outbound or s.outbound()
    allowed = Allowlist((host_entry(s.palantir_ingest_url),), PALANTIR_INGEST_URL, "Palantir")
    bearer = Bearer.for_url(token, s.palantir_ingest_url)
    last = ""
    for attempt in range(1, s.submit_max_attempts + 1):
        try:
            resp = outbound.fetch(
                "POST",
                url,
                allowed=allowed,
                params=params,
                data=data,
                headers={"Content-Type": "application/octet-stream"},
                bearer=bearer,
                timeout_s=s.http_timeout_s,
                body_limit=MAX_PALANTIR_ANSWER_BYTES,
            )
        except OutboundRefused as exc:
            raise ResultError(f"Palantir ingestion of {file_path} refused: {exc.reason}", permanent=True) from None
        except OutboundFailed as exc:
            last = exc.reason
        else:
            if 200 <= resp.status < 300:
                return
            last = f"HTTP {resp.status}"
            if 400 <= resp.status < 500 and resp.status not in (408, 429):
                raise ResultError(f"Palantir ingestion of {file_path} refused: {last}", permanent=True)
        if attempt < s.submit_max_attempts:
            sleep(s.submit_retry_delay_ms / 1000)
    raise ResultError(
        f"Palantir ingestion of {file_path} failed {s.submit_max_attempts} times ({last})", permanent=False
    )


def ingest_dbricks_results(
    settings: OrchestrationSettings,
    client_application_id: str,
    file_id: str,
    job_id: str,
    result_urls: tuple[str, ...],
    *,
    sleep: Callable[[float], None] = time.sleep,
    outbound: Outbound | None = None,
) -> tuple[str, ...]:
    """Read each result blob and send it to Palantir as ``<app>/<file>/<job>/<name>``; return the URLs."""
    prefix = output_prefix(client_application_id, file_id, job_id)
    names = [result_url_to_blob(u, settings, prefix) for u in result_urls]  # check every URL before any upload
    for name in names:
        palantir_upload(settings, name, read_result_blob(settings, name), sleep=sleep, outbound=outbound)
    return result_urls
