"""DOCSAI and DBRICKS: submission and polling exactly as the extractor-service spec shows (``DocsaiClient``,
``DbricksClient``: two ``ExtractorClient`` implementations, built by the composition root).

Submission: ``POST extractionUrl`` with ``Authorization: Bearer <token>`` and the type's body; any 2xx is
transport success; non-2xx answers and transport errors are retried, ``SUBMIT_MAX_ATTEMPTS`` (5) attempts in all,
``SUBMIT_RETRY_DELAY_MS`` (2000) apart. The run id is ``ExtractedEntityId`` (DOCSAI) or ``id`` (DBRICKS) of the 2xx
answer; a 2xx answer without it fails the job (it is not retried: the extractor took the request).

Polling: ``GET {pollingUrl}/{urlencoded runId}`` with the bearer token, mapped to a ``PollOutcome``:

- DOCSAI reads ``Status``: ``complete`` -> Succeeded with ``Payload`` as the result; ``failed`` -> Failed;
  ``processing``, missing, or any other value -> Processing.
- DBRICKS reads ``overall_status``: ``COMPLETED`` -> Succeeded (``tasks[].result_url`` as result URLs); ``FAILED`` or
  ``CANCELLED`` -> Failed; ``ENQUEUED``, ``PROCESSING``, missing or unrecognized -> Processing.
- A polling request error (transport error, non-2xx, a body that is not a JSON object) -> Processing.
- A missing ``pollingUrl`` or run id -> Failed.

Status strings are compared case-insensitively.

Every call goes through ``shared.outbound`` (allowlist ``EXTRACTOR_ALLOWED_HOSTS``, address checks, one deadline of
``EXTRACTOR_HTTP_TIMEOUT_SECONDS`` per call, no redirects); a call the policy refuses is not retried: the submission
fails, or the poll attempt fails the job. The DOCSAI ``fileUrl`` SAS is minted only for the event's own accepted file
(``storage.accepted_file_ref``).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any, ClassVar, Final
from urllib.parse import quote, urlsplit

import orjson

from shared.orchestration.auth import TokenError, TokenRefused
from shared.orchestration.extractor_client import StoredResult, SubmissionError, Submitted
from shared.orchestration.extractor_type import ExtractorType
from shared.orchestration.jobs import Job
from shared.orchestration.outcomes import PollOutcome
from shared.orchestration.registration import ExtractorConfig, extractor_allowlist
from shared.orchestration.results import (
    ResultError,
    ingest_dbricks_results,
    resolve_docsai_payload,
    store_result_document,
)
from shared.orchestration.settings import AZURE_CLIENT_ID, OrchestrationSettings
from shared.orchestration.storage import accepted_file_ref, parse_blob_url, signed_read_url
from shared.outbound import Bearer, Outbound, OutboundFailed, OutboundRefused

log = logging.getLogger(__name__)

MAX_ANSWER_BYTES: Final = 4 * 1024 * 1024


def source_path(job: Job) -> str:
    """DBRICKS ``file_path``: the event's ``filePath``, else ``/<container>/<blob>`` of its ``fileLocationUrl``."""
    if job.file_path:
        return job.file_path
    try:
        ref = parse_blob_url(job.file_location_url)
    except ValueError:
        return urlsplit(job.file_location_url).path
    return f"/{ref.container}/{ref.blob}"


def docsai_body(job: Job, file_url: str) -> dict[str, Any]:
    return {
        "jobId": job.job_id,
        "fileUrl": file_url,
        "DocumentHash": job.document_hash,
        "FileLocationUrl": job.file_location_url,
    }


def dbricks_body(job: Job, config: ExtractorConfig, azure_client_id: str | None) -> dict[str, Any]:
    agent = (config.agent or "").strip()
    if not agent:
        raise SubmissionError("DBRICKS submission needs an agent: the registered extractor's agent is missing or blank")
    if not azure_client_id:
        raise SubmissionError(f"DBRICKS submission needs the app's Entra client id: {AZURE_CLIENT_ID} is not set")
    return {
        "name": f"extract-{job.file_id}-{job.job_id}",
        "client_id": azure_client_id,
        "created_by": azure_client_id,
        "metadata": {"output_path": f"/results/{job.client_application_id}/{job.file_id}/{job.job_id}"},
        "files": [{"file_path": source_path(job), "agent": agent}],
    }


def run_id_from_answer(key: str, content: bytes) -> str:
    """The run id under ``key`` of a 2xx submission answer; ``SubmissionError`` when there is none."""
    try:
        answer = orjson.loads(content)
    except orjson.JSONDecodeError:
        answer = None
    value = answer.get(key) if isinstance(answer, dict) else None
    if isinstance(value, bool) or value is None or (isinstance(value, str) and not value.strip()):
        raise SubmissionError(
            f"the extractor accepted the submission but its answer has no {key} (run id); not resubmitted"
        )
    if not isinstance(value, int | str):
        raise SubmissionError(f"the extractor's {key} is a JSON {type(value).__name__}, not a run id")
    return str(value).strip()


def _message(answer: dict[str, Any], *keys: str) -> str:
    for key in keys:
        value = answer.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()[:500]
    return ""


class HttpExtractorClient:
    """What DOCSAI and DBRICKS share: ``POST extractionUrl`` with the spec's retries, ``GET {pollingUrl}/{runId}``.

    A kind supplies its submission body, the key of its run id, how it reads a poll answer and what its result is."""

    kind: ClassVar[ExtractorType]
    run_id_key: ClassVar[str]
    submits: Final = True

    def __init__(
        self, settings: OrchestrationSettings, outbound: Outbound, *, sleep: Callable[[float], None] = time.sleep
    ) -> None:
        self.settings = settings
        self.outbound = outbound
        self.sleep = sleep

    def body(self, job: Job, config: ExtractorConfig) -> dict[str, Any]:
        raise NotImplementedError

    def read_answer(self, answer: dict[str, Any], config: ExtractorConfig) -> PollOutcome:
        raise NotImplementedError

    def result(self, job: Job, outcome: PollOutcome) -> StoredResult:
        raise NotImplementedError

    # -- submission ----------------------------------------------------------------------------------------------
    def submit(self, job: Job, config: ExtractorConfig) -> Submitted:
        """POST the submission with the spec's retries; raise ``SubmissionError`` when it fails."""
        settings = self.settings
        body = self.body(job, config)  # refuses (blank agent, no signed URL) before anything is sent
        try:
            token = config.token(settings)
        except TokenError as exc:
            raise SubmissionError(f"no bearer token for the extractor: {exc}") from None
        allowed = extractor_allowlist(settings)
        payload = orjson.dumps(body)
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        bearer = Bearer.for_url(token, config.extraction_url)
        last = ""
        for attempt in range(1, settings.submit_max_attempts + 1):
            try:
                resp = self.outbound.fetch(
                    "POST",
                    config.extraction_url,
                    allowed=allowed,
                    data=payload,
                    headers=headers,
                    bearer=bearer,
                    timeout_s=settings.http_timeout_s,
                    body_limit=MAX_ANSWER_BYTES,
                )
            except OutboundRefused as exc:
                raise SubmissionError(f"submission refused: {exc.reason}") from None
            except OutboundFailed as exc:
                last = f"transport error: {exc.reason}"
            else:
                if 200 <= resp.status < 300:
                    return Submitted(run_id_from_answer(self.run_id_key, resp.body), resp.status, attempt)
                last = f"HTTP {resp.status}"
            log.warning("job %s: submission attempt %d failed: %s", job.job_id, attempt, last)
            if attempt < settings.submit_max_attempts:
                self.sleep(settings.submit_retry_delay_ms / 1000)
        raise SubmissionError(f"submission failed after {settings.submit_max_attempts} attempts (last: {last})")

    # -- polling -------------------------------------------------------------------------------------------------
    def poll(self, job: Job, config: ExtractorConfig) -> PollOutcome:
        answer = self._poll_json(job, config)
        if isinstance(answer, PollOutcome):
            return answer
        return self.read_answer(answer, config)

    def _poll_json(self, job: Job, config: ExtractorConfig) -> dict[str, Any] | PollOutcome:
        settings = self.settings
        if not config.polling_url:
            return PollOutcome.failed("the extractor has no pollingUrl: polling cannot proceed")
        if not job.run_id:
            return PollOutcome.failed("the job has no runId: polling cannot proceed")
        url = f"{config.polling_url.rstrip('/')}/{quote(job.run_id, safe='')}"
        try:
            token = config.token(settings)
        except TokenRefused as exc:
            return PollOutcome.failed(str(exc))
        except TokenError as exc:
            return PollOutcome.processing(f"polling request error: {exc}")
        try:
            resp = self.outbound.fetch(
                "GET",
                url,
                allowed=extractor_allowlist(settings),
                headers={"Accept": "application/json"},
                bearer=Bearer.for_url(token, config.polling_url),
                timeout_s=settings.http_timeout_s,
                body_limit=MAX_ANSWER_BYTES,
            )
        except OutboundRefused as exc:
            return PollOutcome.failed(f"polling refused: {exc.reason}")
        except OutboundFailed as exc:
            return PollOutcome.processing(f"polling request error: {exc.reason}")
        if not 200 <= resp.status < 300:
            return PollOutcome.processing(f"polling request error: HTTP {resp.status}")
        if resp.overflow:
            return PollOutcome.processing("polling request error: answer over 4 MiB")
        try:
            answer = orjson.loads(resp.body)
        except orjson.JSONDecodeError:
            return PollOutcome.processing("polling request error: the answer is not JSON")
        if not isinstance(answer, dict):
            return PollOutcome.processing("polling request error: the answer is not a JSON object")
        return answer

    def _token_or_none(self, config: ExtractorConfig) -> str | None:
        try:
            return config.token(self.settings)
        except TokenError:
            return None


class DocsaiClient(HttpExtractorClient):
    """DOCSAI: the body carries a read-only SAS of the event's own accepted file; ``Status`` answers; ``Payload``."""

    kind = ExtractorType.DOCSAI
    run_id_key = "ExtractedEntityId"

    def body(self, job: Job, config: ExtractorConfig) -> dict[str, Any]:
        try:
            ref = accepted_file_ref(self.settings, job.file_location_url, job.client_application_id)
            file_url = signed_read_url(self.settings, ref)
        except ValueError as exc:
            raise SubmissionError(f"no signed URL for the file: {exc}") from None
        return docsai_body(job, file_url)

    def read_answer(self, answer: dict[str, Any], config: ExtractorConfig) -> PollOutcome:
        raw = answer.get("Status")
        status = raw.strip().lower() if isinstance(raw, str) else None
        if status == "complete":
            # Raises ResultError when the payload cannot be had: the poll loop retries or fails the job.
            # The extractor's token goes with a result URL only on the pollingUrl's own origin (its own API).
            bearer = Bearer.for_url(self._token_or_none(config), config.polling_url)
            resolved = resolve_docsai_payload(
                answer.get("Payload"), self.settings, bearer=bearer, outbound=self.outbound
            )
            return PollOutcome.succeeded(
                resolved.data, extractor_status=raw, details={"content_type": resolved.content_type}
            )
        if status == "failed":
            detail = _message(answer, "message", "Message", "error")
            return PollOutcome.failed(
                "DOCSAI reported failed" + (f": {detail}" if detail else ""), extractor_status=raw
            )
        return PollOutcome.processing(extractor_status=raw if isinstance(raw, str) else None)

    def result(self, job: Job, outcome: PollOutcome) -> StoredResult:
        return store_result_document(self.settings, job, outcome)


class DbricksClient(HttpExtractorClient):
    """DBRICKS: the body names the file's path and the agent; ``overall_status`` answers; result blobs to Palantir."""

    kind = ExtractorType.DBRICKS
    run_id_key = "id"

    def body(self, job: Job, config: ExtractorConfig) -> dict[str, Any]:
        return dbricks_body(job, config, self.settings.azure_client_id)

    def read_answer(self, answer: dict[str, Any], config: ExtractorConfig) -> PollOutcome:
        raw = answer.get("overall_status")
        status = raw.strip().upper() if isinstance(raw, str) else None
        if status == "COMPLETED":
            tasks = answer.get("tasks")
            urls = tuple(
                t["result_url"].strip()
                for t in (tasks if isinstance(tasks, list) else [])
                if isinstance(t, dict) and isinstance(t.get("result_url"), str) and t["result_url"].strip()
            )
            return PollOutcome.succeeded(None, result_urls=urls, extractor_status=raw)
        if status in ("FAILED", "CANCELLED"):
            detail = _message(answer, "error", "message", "status_message")
            return PollOutcome.failed(
                f"DBRICKS reported {status}" + (f": {detail}" if detail else ""), extractor_status=raw
            )
        return PollOutcome.processing(extractor_status=raw if isinstance(raw, str) else None)

    def result(self, job: Job, outcome: PollOutcome) -> StoredResult:
        if not outcome.result_urls:
            return StoredResult()
        urls = ingest_dbricks_results(
            self.settings,
            job.client_application_id,
            job.file_id,
            job.job_id,
            outcome.result_urls,
            sleep=self.sleep,
            outbound=self.outbound,
        )
        return StoredResult(urls=urls)


__all__ = [
    "DbricksClient",
    "DocsaiClient",
    "HttpExtractorClient",
    "ResultError",
    "SubmissionError",
    "Submitted",
    "dbricks_body",
    "docsai_body",
    "source_path",
]
