"""The LOOM job adapter: a LOOM job's poll attempt is one extract attempt, mapped to a ``PollOutcome``.

``LoomExtractorClient`` is the ``ExtractorClient`` for extractorType ``LOOM`` (built by the composition root,
``shared.orchestration.composition``): nothing is submitted; each poll is ``run_loom_attempt(job, config, settings)``,
which works out the file's format, routes it, checks the service's capabilities
against the original's size before reading it, reads the original from blob storage, calls the service and maps the
``LoomResult``:

==============================  ==============================================================================
LoomResult                      PollOutcome
==============================  ==============================================================================
OK                              Succeeded; ``result`` is the validated artifact JSON (unknown fields dropped)
REFUSED (code)                  Failed; ``reason`` is ``"<code>: <message>"``, ``extractor_status`` the code
UNAVAILABLE                     Processing: the poll loop tries again with backoff, within the job's attempt and
                                duration limits (past them the job fails as any job does)
==============================  ==============================================================================

It never raises for what a service, the settings or the storage can do, and never touches the job's state.
"""

from __future__ import annotations

import contextlib
import logging
import posixpath
import threading
from typing import Any, Final, Protocol
from urllib.parse import unquote, urlsplit

from shared.contract import (
    EXTENSIONS,
    FORMAT_OPTIONS,
    OPTION_ENCODING,
    ErrorCode,
    format_for_media_type,
)
from shared.loom.client import OUTBOUND_REFUSED, LoomClient, LoomPlan, LoomResult
from shared.loom.settings import LoomSettingsError, load_loom_settings
from shared.orchestration.auth import TokenError, TokenRefused
from shared.orchestration.extractor_client import StoredResult, SubmissionError, Submitted
from shared.orchestration.extractor_type import ExtractorType
from shared.orchestration.jobs import Job
from shared.orchestration.outcomes import PollOutcome
from shared.orchestration.registration import ExtractorConfig, extractor_allowlist
from shared.orchestration.results import store_result_document
from shared.orchestration.settings import OrchestrationSettings
from shared.outbound import Outbound
from shared.tracing import Tracing

log = logging.getLogger(__name__)

# A registration's extractionUrl may name the base URL or one of the contract's endpoints under it.
_ENDPOINT_SUFFIXES = ("/v1/extract", "/v1/capabilities")


class OriginalUnavailable(Exception):
    """The original cannot be read now (storage error): try again later."""


class OriginalGone(Exception):
    """The original cannot ever be read (no such blob, a location that is no blob of our account)."""


class Original(Protocol):
    """The file to extract: its size first (so an original too large is never read in), then its bytes."""

    def size(self) -> int: ...

    def read(self) -> bytes: ...


class BlobOriginal:
    """The job's original in the configured storage account (``fileLocationUrl``)."""

    def __init__(self, settings: OrchestrationSettings, location: str, client_application_id: str) -> None:
        from shared.orchestration.storage import accepted_file_ref, blob_service

        try:
            # Only the event's own accepted file is read (and sent): never a result or another application's file.
            ref = accepted_file_ref(settings, location, client_application_id)
        except ValueError as exc:
            raise OriginalGone(str(exc)) from None
        service = blob_service(settings)
        self._blob = service.get_blob_client(ref.container, ref.blob)
        self._where = f"{ref.container}/{ref.blob}"

    def _call(self, what: str, fn: Any) -> Any:
        from azure.core.exceptions import AzureError, ResourceNotFoundError

        try:
            return fn()
        except ResourceNotFoundError:
            raise OriginalGone(f"the original {self._where} does not exist") from None
        except AzureError as exc:
            raise OriginalUnavailable(f"{what} {self._where} failed ({type(exc).__name__})") from None

    def size(self) -> int:
        return int(self._call("reading the properties of", lambda: self._blob.get_blob_properties().size))

    def read(self) -> bytes:
        return bytes(self._call("downloading", lambda: self._blob.download_blob().readall()))


def build_loom_client(
    settings: OrchestrationSettings, outbound: Outbound | None = None, tracing: Tracing | None = None
) -> LoomClient:
    """A LOOM client for these settings (raises ``LoomSettingsError`` while a LOOM setting is wrong)."""
    return LoomClient(
        load_loom_settings(settings.env),
        outbound=outbound or settings.outbound(),
        registration_hosts=extractor_allowlist(settings),
        tracing=tracing,
    )


class LoomExtractorClient:
    """The ``ExtractorClient`` of LOOM jobs: not submitted; each poll attempt is one extract call.

    The ``LoomClient`` (routing, the capabilities cache) is made at the first attempt and kept; while a LOOM setting
    is wrong no client is kept and every attempt is Processing with the reason, so fixing the setting (and
    restarting) resumes the jobs instead of failing them at start-up."""

    kind: Final = ExtractorType.LOOM
    submits: Final = False

    def __init__(self, settings: OrchestrationSettings, outbound: Outbound, *, tracing: Tracing | None = None) -> None:
        self.settings = settings
        self.outbound = outbound
        self.tracing = tracing
        self._client: LoomClient | None = None
        self._lock = threading.Lock()

    def loom(self) -> LoomClient:
        """The LOOM client, made once (raises ``LoomSettingsError`` while a setting is wrong)."""
        with self._lock:
            if self._client is None:
                self._client = build_loom_client(self.settings, self.outbound, self.tracing)
            return self._client

    def submit(self, job: Job, config: ExtractorConfig) -> Submitted:
        raise SubmissionError("LOOM jobs are not submitted: their first poll attempt performs the extract call")

    def poll(self, job: Job, config: ExtractorConfig) -> PollOutcome:
        try:
            client = self.loom()
        except LoomSettingsError as exc:
            return _settings_outcome(exc)
        return run_loom_attempt(job, config, self.settings, client=client)

    def result(self, job: Job, outcome: PollOutcome) -> StoredResult:
        return store_result_document(self.settings, job, outcome)


def _settings_outcome(exc: LoomSettingsError) -> PollOutcome:
    return PollOutcome.processing(f"the LOOM settings are invalid: {exc}", extractor_status="unavailable")


def _names(job: Job) -> list[str]:
    names = [job.file_name or "", job.file_path or ""]
    with contextlib.suppress(ValueError):
        names.append(unquote(urlsplit(job.file_location_url).path))
    return [n for n in names if n]


def detect_format(content_type: str | None, names: list[str]) -> str | None:
    """The format a file is routed as: its media type's, unless that says only ``text`` (text/plain, the catch-all
    for text files) or nothing, when the first name with a known extension decides."""
    by_type = format_for_media_type(content_type) if content_type else None
    if by_type is not None and by_type != "text":
        return by_type
    for name in names:
        ext = posixpath.splitext(name.replace("\\", "/").lower())[1]
        if ext in EXTENSIONS:
            return EXTENSIONS[ext]
    return by_type


def _charset(content_type: str | None) -> str | None:
    if not content_type or ";" not in content_type:
        return None
    for param in content_type.split(";")[1:]:
        key, _, value = param.partition("=")
        if key.strip().lower() == "charset" and value.strip().strip('"'):
            return value.strip().strip('"')[:64]
    return None


def _base_url(config: ExtractorConfig) -> str | None:
    url = getattr(config, "extraction_url", None)
    if not isinstance(url, str) or not url.strip():
        return None
    url = url.strip().rstrip("/")
    for suffix in _ENDPOINT_SUFFIXES:
        if url.endswith(suffix):
            return url[: -len(suffix)]
    return url


def _option(config: ExtractorConfig, *keys: str) -> str | None:
    extra = config.model_extra or {}
    for key in keys:
        value = extra.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def outcome_for(result: LoomResult) -> PollOutcome:
    """How the poll loop takes one extract attempt's result."""
    details: dict[str, Any] = {"loom_verdict": result.verdict.value, "loom_service": result.service_url}
    if result.code:
        details["loom_code"] = result.code
    if result.ok:
        details["content_type"] = "application/json"
        return PollOutcome.succeeded(result.artifact_json, extractor_status="ok", details=details)
    if result.refused:
        return PollOutcome.failed(f"{result.code}: {result.message}", extractor_status=result.code, details=details)
    return PollOutcome.processing(
        f"extractor unavailable: {result.message}", extractor_status="unavailable", details=details
    )


def run_loom_attempt(
    job: Job,
    config: ExtractorConfig,
    settings: OrchestrationSettings,
    *,
    client: LoomClient | None = None,
    original: Original | None = None,
) -> PollOutcome:
    """One extract attempt of a LOOM job (``client``: the LOOM client to use; by default one made for this call)."""
    try:
        loom = client if client is not None else build_loom_client(settings)
    except LoomSettingsError as exc:
        return _settings_outcome(exc)

    fmt = detect_format(job.content_type, _names(job))
    if fmt is None:
        return PollOutcome.failed(
            f"{ErrorCode.UNSUPPORTED_FORMAT.value}: neither the content type {job.content_type!r} nor the file's name "
            "names a format LOOM extracts",
            extractor_status=ErrorCode.UNSUPPORTED_FORMAT.value,
        )
    token: str | None = None
    if config.auth is not None:
        try:
            token = config.token(settings)
        except TokenRefused as exc:
            return PollOutcome.failed(str(exc), extractor_status=OUTBOUND_REFUSED)
        except TokenError as exc:
            return PollOutcome.processing(f"no token for the LOOM extractor: {exc}", extractor_status="unavailable")

    names = _names(job)
    name = posixpath.basename(names[0].replace("\\", "/")) if names else ""
    encoding = _option(config, "encoding")
    sql_dialect = _option(config, "sqlDialect", "sql_dialect") if fmt == "sql" else None
    charset = _charset(job.content_type) if OPTION_ENCODING in FORMAT_OPTIONS[fmt] else None

    try:
        source: Original = (
            original
            if original is not None
            else BlobOriginal(settings, job.file_location_url, job.client_application_id)
        )
        size = source.size()

        def plan_for(n: int) -> LoomPlan | LoomResult:
            kwargs: dict[str, Any] = {
                "format": fmt,
                "name": name,
                "media_type": job.content_type,
                "encoding": encoding,
                "sql_dialect": sql_dialect,
                "base_url": _base_url(config),
                "token": token,
            }
            plan = loom.plan(n, **kwargs)
            if isinstance(plan, LoomPlan) and encoding is None and charset and plan.takes(OPTION_ENCODING):
                plan = loom.plan(n, **{**kwargs, "encoding": charset})  # the content type's charset, as a hint
            return plan

        plan = plan_for(size)
        if isinstance(plan, LoomResult):
            return outcome_for(plan)
        data = source.read()
    except OriginalGone as exc:
        return PollOutcome.failed(f"the original cannot be read: {exc}", extractor_status="original_missing")
    except OriginalUnavailable as exc:
        return PollOutcome.processing(f"the original cannot be read now: {exc}", extractor_status="unavailable")
    if len(data) != plan.size:  # the blob changed between its size and its read
        plan = plan_for(len(data))
        if isinstance(plan, LoomResult):
            return outcome_for(plan)
    return outcome_for(loom.send(plan, data))
