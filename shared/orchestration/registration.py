"""Registration lookup: which extractor a client application uses, validated.

The registration payload is ``GET {REGISTRATION_API_URL}/v1/clientApplication/{clientApplicationId}``, or the
event's inline ``registration`` object when the operator allows it (``ALLOW_EVENT_REGISTRATION``; off by default:
an event's registration is then ignored and the API asked). The extractor list is taken, in order, from:

1. ``features[]`` entry with ``featureName == "extractor"``: its ``featureConfig.extractors``;
2. ``extractors`` in the registration payload;
3. ``GET {REGISTRATION_API_URL}/v1/clientApplication/{clientApplicationId}/extractors`` (a JSON list, or an object
   with ``extractors``).

A source counts only when it holds a non-empty list. Only the first extractor of the list is used; it must validate
(see ``ExtractorConfig``) or the job fails with the validation errors as its reason. Registration API responses
(including 404s) are cached for ``REGISTRATION_CACHE_TTL_SECONDS``; 5xx answers and transport errors are retried
like submissions (``SUBMIT_MAX_ATTEMPTS`` x ``SUBMIT_RETRY_DELAY_MS``), then the lookup fails.

Registrations are untrusted, wherever they come from: the chosen extractor's URLs must pass the outbound policy's
static checks against ``EXTRACTOR_ALLOWED_HOSTS`` (``shared.outbound``), and an ``auth.setting`` must name a declared
extractor token setting (``EXTRACTOR_TOKEN_SETTINGS``), or the job fails with the reason (nothing is sent).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Final
from urllib.parse import quote

import orjson
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    StrictStr,
    ValidationError,
    field_validator,
    model_validator,
)

from shared.orchestration.auth import TokenError, bearer_token, token_setting_refusal
from shared.orchestration.backoff import JobTrackingConfig
from shared.orchestration.extractor_type import ExtractorType
from shared.orchestration.settings import (
    ALLOW_EVENT_REGISTRATION,
    EXTRACTOR_ALLOWED_HOSTS,
    REGISTRATION_API_URL,
    OrchestrationSettings,
)
from shared.outbound import Allowlist, Bearer, Outbound, OutboundFailed, OutboundRefused, host_entry

log = logging.getLogger(__name__)

MAX_CONFIG_BYTES: Final = 32 * 1024  # the validated config is kept on the job entity (64 KiB property limit)
MAX_REGISTRATION_BYTES: Final = 4 * 1024 * 1024


class NoUsableExtractor(Exception):
    """The client application has no extractor this service can use; ``reason`` goes on the Failed job."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class RegistrationUnavailable(Exception):
    """The registration API could not be read (after retries)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class TokenSource(BaseModel):
    """Where the bearer token comes from: an app setting's name, or an Entra scope. Exactly one."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    setting: StrictStr | None = Field(default=None, min_length=1, max_length=256, pattern=r"^[A-Za-z0-9_.:-]+$")
    scope: StrictStr | None = Field(default=None, min_length=1, max_length=512)

    @model_validator(mode="after")
    def _exactly_one(self) -> TokenSource:
        if (self.setting is None) == (self.scope is None):
            raise ValueError("give exactly one of setting (an app setting name) or scope (an Entra scope)")
        return self


class ExtractorConfig(BaseModel):
    """One registered extractor. Unknown fields are kept (``model_extra``) for extractor-specific handlers."""

    model_config = ConfigDict(extra="allow", frozen=True, populate_by_name=True, str_strip_whitespace=True)

    extractor_type: ExtractorType = Field(validation_alias=AliasChoices("extractorType"))
    extraction_url: StrictStr = Field(
        max_length=2048, pattern=r"^https?://[^\s]+$", validation_alias=AliasChoices("extractionUrl")
    )
    polling_url: StrictStr | None = Field(
        default=None, max_length=2048, pattern=r"^https?://[^\s]+$", validation_alias=AliasChoices("pollingUrl")
    )
    agent: StrictStr | None = Field(default=None, max_length=512)
    auth: TokenSource | None = None
    job_tracking_config: JobTrackingConfig | None = Field(
        default=None, validation_alias=AliasChoices("jobTrackingConfig")
    )

    @field_validator("extractor_type", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.strip().upper() if isinstance(value, str) else value

    @model_validator(mode="after")
    def _auth_required(self) -> ExtractorConfig:
        if self.extractor_type in (ExtractorType.DOCSAI, ExtractorType.DBRICKS) and self.auth is None:
            raise ValueError(
                f"{self.extractor_type} needs auth: a token source ({{'setting': NAME}} or {{'scope': SCOPE}})"
            )
        return self

    def token(self, settings: OrchestrationSettings) -> str:
        if self.auth is None:
            raise TokenError("the extractor has no auth configured")
        return bearer_token(settings, setting=self.auth.setting, scope=self.auth.scope)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=False)

    @classmethod
    def from_json(cls, text: str) -> ExtractorConfig:
        return cls.model_validate_json(text)


def validate_extractor(raw: Any) -> ExtractorConfig:
    if not isinstance(raw, dict):
        raise NoUsableExtractor(f"the first registered extractor is a JSON {type(raw).__name__}, not an object")
    try:
        config = ExtractorConfig.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'extractor'}: {err['msg']}" for err in exc.errors()[:10]
        )
        raise NoUsableExtractor(f"the first registered extractor is invalid: {problems}") from None
    if len(config.to_json()) > MAX_CONFIG_BYTES:
        raise NoUsableExtractor(f"the first registered extractor's configuration is over {MAX_CONFIG_BYTES} bytes")
    return config


def extractor_allowlist(settings: OrchestrationSettings) -> Allowlist:
    """Where a registration's extractor URLs may point: the operator's ``EXTRACTOR_ALLOWED_HOSTS``."""
    return Allowlist(settings.extractor_allowed_hosts, EXTRACTOR_ALLOWED_HOSTS, "extractor")


def check_extractor_policy(config: ExtractorConfig, settings: OrchestrationSettings) -> None:
    """Refuse (``NoUsableExtractor``) an extractor whose URLs or token source the outbound policy does not allow."""
    allowed = extractor_allowlist(settings)
    outbound = settings.outbound()
    for field_name, url in (("extractionUrl", config.extraction_url), ("pollingUrl", config.polling_url)):
        if url is None:
            continue
        try:
            outbound.check_url(url, allowed)
        except OutboundRefused as exc:
            raise NoUsableExtractor(f"the first registered extractor's {field_name} is refused: {exc.reason}") from None
    if config.auth is not None and config.auth.setting is not None:
        refusal = token_setting_refusal(settings, config.auth.setting)
        if refusal is not None:
            raise NoUsableExtractor(f"the first registered extractor is refused: {refusal}")


def extractors_from_payload(payload: Any) -> tuple[str, list[Any]] | None:
    """The extractor list of a registration payload and where it came from, by precedence; None if it has none."""
    if not isinstance(payload, dict):
        return None
    features = payload.get("features")
    if isinstance(features, list):
        for feature in features:
            if isinstance(feature, dict) and feature.get("featureName") == "extractor":
                feature_config = feature.get("featureConfig")
                if isinstance(feature_config, dict):
                    listed = feature_config.get("extractors")
                    if isinstance(listed, list) and listed:
                        return "features", listed
    listed = payload.get("extractors")
    if isinstance(listed, list) and listed:
        return "extractors", listed
    return None


class RegistrationResolver:
    """Finds and validates a client application's extractor; API answers cached for a short TTL."""

    def __init__(
        self,
        settings: OrchestrationSettings,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        outbound: Outbound | None = None,
    ) -> None:
        self.settings = settings
        self.outbound = outbound or settings.outbound()  # the composition root hands in the one transport
        self.monotonic = monotonic
        self.sleep = sleep
        self._cache: dict[str, tuple[float, Any]] = {}
        self._lock = threading.Lock()

    def resolve(self, client_application_id: str, inline_payload: dict[str, Any] | None = None) -> ExtractorConfig:
        """Raise ``NoUsableExtractor`` (permanent) or ``RegistrationUnavailable`` (API unreachable)."""
        payload = inline_payload
        if payload is not None and not self.settings.allow_event_registration:
            log.warning(
                "client application %s: the event's inline registration is ignored (%s is off); asking the API",
                client_application_id,
                ALLOW_EVENT_REGISTRATION,
            )
            payload = None
        if payload is None:
            payload = self._get_json(f"/v1/clientApplication/{quote(client_application_id, safe='')}")
        found = extractors_from_payload(payload)
        if found is None:
            listed = self._get_json(f"/v1/clientApplication/{quote(client_application_id, safe='')}/extractors")
            if isinstance(listed, dict):
                listed = listed.get("extractors")
            if isinstance(listed, list) and listed:
                found = ("api", listed)
        if found is None:
            raise NoUsableExtractor(f"client application {client_application_id} has no registered extractor")
        config = validate_extractor(found[1][0])
        check_extractor_policy(config, self.settings)
        return config

    # -----------------------------------------------------------------------------------------------------------
    def _get_json(self, path: str) -> Any:
        """The JSON at ``path`` of the registration API; None for 404; cached. Retries 5xx and transport errors."""
        base = self.settings.registration_api_url
        if not base:
            raise RegistrationUnavailable(f"{REGISTRATION_API_URL} is not set, so the registration cannot be read")
        url = base + path
        now = self.monotonic()
        with self._lock:
            hit = self._cache.get(url)
            if hit is not None and hit[0] > now:
                return hit[1]
        value = self._fetch(url)
        with self._lock:
            self._cache[url] = (self.monotonic() + self.settings.registration_cache_ttl_s, value)
        return value

    def _fetch(self, url: str) -> Any:
        s = self.settings
        headers = {"Accept": "application/json"}
        bearer: Bearer | None = None
        if s.registration_api_scope:
            try:
                bearer = Bearer.for_url(bearer_token(s, scope=s.registration_api_scope), url)
            except TokenError as exc:
                raise RegistrationUnavailable(str(exc)) from None
        allowed = Allowlist((host_entry(s.registration_api_url or url),), REGISTRATION_API_URL, "registration API")
        outbound = self.outbound
        last = ""
        for attempt in range(1, s.submit_max_attempts + 1):
            try:
                resp = outbound.fetch(
                    "GET",
                    url,
                    allowed=allowed,
                    headers=headers,
                    bearer=bearer,
                    timeout_s=s.http_timeout_s,
                    body_limit=lambda status, _h: MAX_REGISTRATION_BYTES if 200 <= status < 300 else 0,
                )
            except OutboundRefused as exc:
                raise RegistrationUnavailable(exc.reason) from None
            except OutboundFailed as exc:
                last = exc.reason
            else:
                if resp.status == 404:
                    return None
                if 200 <= resp.status < 300:
                    if resp.overflow:
                        raise RegistrationUnavailable(f"registration answer from {url} is over 4 MiB")
                    try:
                        return orjson.loads(resp.body)
                    except orjson.JSONDecodeError:
                        last = "a body that is not JSON"
                elif 400 <= resp.status < 500 and resp.status not in (408, 429):
                    raise RegistrationUnavailable(f"registration API answered HTTP {resp.status} for {url}")
                else:
                    last = f"HTTP {resp.status}"
            if attempt < s.submit_max_attempts:
                self.sleep(s.submit_retry_delay_ms / 1000)
        raise RegistrationUnavailable(f"registration API {url} failed {s.submit_max_attempts} times (last: {last})")


__all__ = [
    "ExtractorConfig",
    "NoUsableExtractor",
    "RegistrationResolver",
    "RegistrationUnavailable",
    "TokenSource",
    "check_extractor_policy",
    "extractor_allowlist",
    "extractors_from_payload",
    "validate_extractor",
]
