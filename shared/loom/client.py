"""The LOOM client: the server side of extractor contract v1.

``LoomClient.extract`` routes a file to its service, checks the service's capabilities (cached for a minute), sends
the original, and classifies the answer exactly as the contract says, into a ``LoomResult``:

- ``Verdict.OK``: a 200 whose artifact passed validation; ``artifact_json`` is the cleaned artifact to store.
- ``Verdict.UNAVAILABLE``: the service cannot be used now (try the source again later).
- ``Verdict.REFUSED``: the source is refused; ``code`` says why (``outbound_refused``: the outbound policy refused
  the service's URL, see shared/outbound.py).

Every call goes through ``shared.outbound``: a URL the operator's LOOM settings route to is allowed by its own host
and port; any other (a registration's) must be on the allowlist the client is given (``EXTRACTOR_ALLOWED_HOSTS``).

See docs/loom-client.md for the table and the decisions.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

import orjson
from opentelemetry.trace import SpanKind
from pydantic import SecretStr, ValidationError

from shared.artifact import InvalidArtifact, validate_artifact
from shared.contract import (
    CAPABILITIES_TTL_S,
    CONTRACT_VERSION,
    FORMATS,
    MAX_ERROR_BODY_BYTES,
    OPTION_ENCODING,
    OPTION_SQL_DIALECT,
    UNAVAILABLE_STATUSES,
    Capabilities,
    ErrorCode,
    Verdict,
    classify_answer,
)
from shared.loom.settings import (
    ENV_MAX_ARTIFACT,
    ENV_ROUTES,
    ENV_URL,
    LoomRoutingError,
    LoomSettings,
    Route,
    normalize_url,
)
from shared.outbound import Allowlist, Answer, Bearer, Outbound, OutboundFailed, OutboundRefused, host_entry
from shared.tracing import Attributes, Tracing, fail, set_attributes, url_origin

log = logging.getLogger(__name__)

MAX_CAPABILITIES_BYTES: Final = 1024 * 1024  # a capabilities document is small; a longer answer is not one
_MAX_MESSAGE_CHARS: Final = 2000
_USER_AGENT: Final = "loom-server (extractor-contract-v1)"
OUTBOUND_REFUSED: Final = "outbound_refused"  # not a contract code: our own policy refused the service's URL


@dataclass(frozen=True, slots=True)
class LoomResult:
    """What one extract attempt came to. ``message`` is for a person and never holds a token."""

    verdict: Verdict
    code: str | None
    message: str
    artifact_json: bytes | None = None  # set only for Verdict.OK: the validated artifact, unknown fields dropped
    service_url: str | None = None  # the normalised base URL the file was routed to (None: routing failed)

    @property
    def ok(self) -> bool:
        return self.verdict is Verdict.OK

    @property
    def unavailable(self) -> bool:
        return self.verdict is Verdict.UNAVAILABLE

    @property
    def refused(self) -> bool:
        return self.verdict is Verdict.REFUSED

    def __repr__(self) -> str:
        size = "None" if self.artifact_json is None else f"<{len(self.artifact_json)} bytes>"
        return (
            f"LoomResult(verdict={self.verdict.value!r}, code={self.code!r}, message={self.message!r}, "
            f"artifact_json={size}, service_url={self.service_url!r})"
        )


@dataclass(frozen=True, slots=True)
class LoomPlan:
    """An original that may be sent: where, with which token, and the query (see ``LoomClient.plan``)."""

    base_url: str
    token: SecretStr | None
    capabilities: Capabilities
    format: str
    size: int
    params: tuple[tuple[str, str], ...]
    secrets: tuple[str, ...] = field(repr=False, default=())

    def takes(self, option: str) -> bool:
        """Whether the service takes ``option`` for the planned format."""
        return option in self.capabilities.options_for(self.format)


class LoomUnavailable(Exception):
    """A service cannot be used now. ``code`` is ``format_unavailable`` when that is why, else ``None``."""

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class LoomRefused(Exception):
    """The outbound policy refuses a call to the service (its URL or its addresses): permanent."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def _scrub(text: str, secrets: Iterable[str]) -> str:
    for secret in secrets:
        if secret and secret in text:
            text = text.replace(secret, "[token]")
    return text[:_MAX_MESSAGE_CHARS]


def _compressed(headers: Mapping[str, str]) -> str | None:
    value = headers.get("Content-Encoding")
    if value and value.strip().lower() not in ("", "identity"):
        return value.strip()[:100]
    return None


class LoomClient:
    """Calls extractor services as the contract's server. Safe to share between threads.

    ``outbound`` is the transport (its address policy; the default refuses http and loopback), ``registration_hosts``
    where a URL that the settings do not route to may point (default: nowhere); ``clock`` is the monotonic clock the
    capabilities cache is timed by (tests inject a fake one; the whole-call deadline always runs on real time).
    ``tracing``: each extract call is a ``loom.extract`` client span whose context goes with the request
    (``traceparent``), so the extractor service continues the job's trace.
    """

    def __init__(
        self,
        settings: LoomSettings,
        *,
        clock: Callable[[], float] = time.monotonic,
        outbound: Outbound | None = None,
        registration_hosts: Allowlist | None = None,
        tracing: Tracing | None = None,
    ) -> None:
        self.settings = settings
        self.tracing = tracing or Tracing.off()
        self._outbound = outbound if outbound is not None else Outbound()
        extra = registration_hosts or Allowlist((), f"{ENV_URL} or {ENV_ROUTES}", "extractor")
        self._allowed = extra.plus(host_entry(url) for url in sorted(settings.service_urls()))
        self._clock = clock
        self._lock = threading.Lock()
        self._capabilities: dict[str, tuple[float, Capabilities]] = {}

    def __repr__(self) -> str:
        return f"LoomClient(settings={self.settings!r})"

    # -- routing and capabilities ------------------------------------------------------------------------------

    def route(self, format: str, media_type: str | None = None, override_url: str | None = None) -> Route:
        """See ``LoomSettings.route``: (normalised base URL, token or None)."""
        return self.settings.route(format, media_type, override_url)

    def capabilities(self, base_url: str, token: str | SecretStr | None = None) -> Capabilities:
        """The service's capabilities, read again once ``CAPABILITIES_TTL_S`` has passed since the last read.

        ``token`` defaults to the one the settings give the URL. Raises ``LoomUnavailable`` when the service cannot
        say (an answer other than a plain 200, not JSON, not the contract's shape, another contract version).
        A failed read is not cached: the next call reads again.
        """
        url = normalize_url(base_url)
        secret = self._token(url, token)
        now = self._clock()
        with self._lock:
            cached = self._capabilities.get(url)
        if cached is not None and now - cached[0] < CAPABILITIES_TTL_S:
            return cached[1]
        caps = self._read_capabilities(url, secret)
        with self._lock:
            self._capabilities[url] = (now, caps)
        return caps

    def _token(self, url: str, token: str | SecretStr | None) -> SecretStr | None:
        if isinstance(token, SecretStr):
            return token if token.get_secret_value() else None
        if token:
            return SecretStr(token)
        return self.settings.token_for(url)

    def _read_capabilities(self, url: str, token: SecretStr | None) -> Capabilities:
        where = f"{url}/v1/capabilities"
        try:
            answer = self._outbound.fetch(
                "GET",
                where,
                allowed=self._allowed,
                headers={"Accept": "application/json", "User-Agent": _USER_AGENT},
                bearer=Bearer.for_url(token.get_secret_value() if token else None, url),
                timeout_s=self.settings.timeout_s,
                body_limit=lambda status, _h: MAX_CAPABILITIES_BYTES if status == 200 else 0,
            )
        except OutboundRefused as exc:
            raise LoomRefused(exc.reason) from None
        except OutboundFailed as exc:
            raise LoomUnavailable(f"{where}: {exc.reason}") from None
        encoding = _compressed(answer.headers)
        if encoding:
            raise LoomUnavailable(f"{where}: the service compressed its answer ({encoding})")
        if answer.status != 200:
            hint = " (no token is configured for this service)" if answer.status == 401 and token is None else ""
            raise LoomUnavailable(f"{where}: the service answered HTTP {answer.status}{hint}")
        if answer.overflow:
            raise LoomUnavailable(f"{where}: the answer is over {MAX_CAPABILITIES_BYTES} bytes")
        try:
            doc = orjson.loads(answer.body)
        except orjson.JSONDecodeError:
            raise LoomUnavailable(f"{where}: the answer is not JSON") from None
        if not isinstance(doc, dict):
            raise LoomUnavailable(f"{where}: the answer is not a JSON object")
        version = doc.get("contract_version")
        if type(version) is not int or version != CONTRACT_VERSION:
            raise LoomUnavailable(
                f"{where}: the service speaks contract version {str(version)[:20]}, "
                f"this server speaks {CONTRACT_VERSION}"
            )
        try:
            return Capabilities.model_validate(doc)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(p) for p in first["loc"]) or "(document)"
            raise LoomUnavailable(
                f"{where}: the capabilities do not match the contract ({exc.error_count()} problem(s); "
                f"{loc}: {first['msg']})"
            ) from None

    # -- the extract call --------------------------------------------------------------------------------------

    def plan(
        self,
        size: int,
        *,
        format: str,
        name: str = "",
        media_type: str | None = None,
        encoding: str | None = None,
        sql_dialect: str | None = None,
        base_url: str | None = None,
        token: str | SecretStr | None = None,
    ) -> LoomPlan | LoomResult:
        """Everything ``extract`` decides before it sends an original of ``size`` bytes.

        A ``LoomResult`` when the original is not to be sent (unroutable, service unavailable or not listing the
        format, over its max_bytes, an option it does not take); else the ``LoomPlan`` to ``send``. Lets a caller
        check an original's size before reading it in. Arguments as for ``extract``.
        """
        secrets = self._secrets(token)

        def stop(verdict: Verdict, code: str | None, message: str, url: str | None) -> LoomResult:
            res = LoomResult(verdict, code, _scrub(message, secrets), None, url)
            log.warning("loom extract %s (%d bytes) not sent to %s: %s %s", format, size, url, verdict.value, code)
            return res

        if format not in FORMATS:
            return stop(
                Verdict.REFUSED, ErrorCode.UNSUPPORTED_FORMAT.value, f"{format!r} is no format LOOM extracts", None
            )
        try:
            route = self.settings.route(format, media_type, base_url)
        except LoomRoutingError as exc:
            return stop(Verdict.UNAVAILABLE, None, str(exc), None)
        url = route.base_url
        secret = self._token(url, token) if token else route.token
        try:
            caps = self.capabilities(url, secret)
        except LoomUnavailable as exc:
            return stop(Verdict.UNAVAILABLE, exc.code, exc.message, url)
        except LoomRefused as exc:
            return stop(Verdict.REFUSED, OUTBOUND_REFUSED, exc.message, url)
        if not caps.supports(format):
            return stop(
                Verdict.UNAVAILABLE,
                ErrorCode.FORMAT_UNAVAILABLE.value,
                f"the service at {url} does not list {format} in its capabilities",
                url,
            )
        if size > caps.max_bytes:
            return stop(
                Verdict.REFUSED,
                ErrorCode.TOO_LARGE.value,
                f"the original is {size} bytes, over the {caps.max_bytes} bytes the service at {url} takes",
                url,
            )
        params: list[tuple[str, str]] = [("format", format), ("name", name or "")]
        takes = caps.options_for(format)
        for option, value in ((OPTION_ENCODING, encoding), (OPTION_SQL_DIALECT, sql_dialect)):
            if not value:
                continue
            if option not in takes:
                return stop(
                    Verdict.REFUSED,
                    ErrorCode.INVALID_OPTION.value,
                    f"the service at {url} takes no {option} option for {format}",
                    url,
                )
            params.append((option, value))
        return LoomPlan(url, secret, caps, format, size, tuple(params), tuple(secrets))

    def extract(
        self,
        data: bytes,
        *,
        format: str,
        name: str = "",
        media_type: str | None = None,
        encoding: str | None = None,
        sql_dialect: str | None = None,
        base_url: str | None = None,
        token: str | SecretStr | None = None,
    ) -> LoomResult:
        """Extract one original. Never raises for anything a service or the settings can do: see ``LoomResult``.

        ``base_url`` (and its ``token``) is a registration's own service; else the settings route the file by its
        format and media type. ``encoding`` and ``sql_dialect`` are sent only when given (not empty), and only to a
        service that lists them for the format (else the source is refused as invalid_option, unsent).
        """
        plan = self.plan(
            len(data),
            format=format,
            name=name,
            media_type=media_type,
            encoding=encoding,
            sql_dialect=sql_dialect,
            base_url=base_url,
            token=token,
        )
        if isinstance(plan, LoomResult):
            return plan
        return self.send(plan, data)

    def send(self, plan: LoomPlan, data: bytes) -> LoomResult:
        """POST the original as ``plan`` says and classify the answer (``data`` must be the planned size)."""
        if len(data) != plan.size:
            raise ValueError(f"the plan is for {plan.size} bytes, the original is {len(data)}")
        url = plan.base_url
        max_artifact = self.settings.max_artifact_bytes

        def body_limit(status: int, headers: Mapping[str, str]) -> int:
            if _compressed(headers):
                return 0
            if status == 200:
                return max_artifact
            if 400 <= status < 500 and status not in UNAVAILABLE_STATUSES:
                return MAX_ERROR_BODY_BYTES
            return 0

        attributes: Attributes = {
            "loom.file.format": plan.format,
            "loom.file.size_bytes": plan.size,
            "server.address": url_origin(url),
        }
        with self.tracing.span("loom.extract", kind=SpanKind.CLIENT, attributes=attributes) as span:
            res, status = self._post(plan, data, body_limit)
            set_attributes(
                span,
                {
                    "loom.outcome": res.verdict.value,
                    "loom.error.code": res.code,
                    "http.response.status_code": status,
                    "loom.artifact.size_bytes": len(res.artifact_json) if res.artifact_json is not None else None,
                },
            )
            if not res.ok:
                fail(span, res.code or res.verdict.value)
        level = logging.INFO if res.ok else logging.WARNING
        log.log(
            level, "loom extract %s (%d bytes) at %s: %s %s", plan.format, plan.size, url, res.verdict.value, res.code
        )
        return res

    def _post(
        self, plan: LoomPlan, data: bytes, body_limit: Callable[[int, Mapping[str, str]], int]
    ) -> tuple[LoomResult, int | None]:
        """The extract request (with the current trace context) and its classified answer, with its HTTP status."""
        url = plan.base_url
        try:
            answer = self._outbound.fetch(
                "POST",
                f"{url}/v1/extract",
                allowed=self._allowed,
                params=plan.params,
                data=data,
                headers={
                    "Content-Type": "application/octet-stream",
                    "Accept": "application/json",
                    "User-Agent": _USER_AGENT,
                    **self.tracing.headers(),
                },
                bearer=Bearer.for_url(plan.token.get_secret_value() if plan.token else None, url),
                timeout_s=self.settings.timeout_s,
                body_limit=body_limit,
            )
        except OutboundRefused as exc:
            return LoomResult(Verdict.REFUSED, OUTBOUND_REFUSED, _scrub(exc.reason, plan.secrets), None, url), None
        except OutboundFailed as exc:
            message = _scrub(f"{url}/v1/extract: {exc.reason}", plan.secrets)
            return LoomResult(Verdict.UNAVAILABLE, None, message, None, url), None
        return self._classify(answer, plan), answer.status

    def _secrets(self, token: str | SecretStr | None) -> list[str]:
        secrets = list(self.settings.secrets())
        value = token.get_secret_value() if isinstance(token, SecretStr) else token
        if value:
            secrets.append(value)
        return secrets

    def _classify(self, answer: Answer, plan: LoomPlan) -> LoomResult:
        url = plan.base_url

        def done(verdict: Verdict, code: str | None, message: str, artifact: bytes | None = None) -> LoomResult:
            return LoomResult(verdict, code, _scrub(message, plan.secrets), artifact, url)

        body = answer.body
        if answer.overflow and answer.status != 200:
            body = bytes(MAX_ERROR_BODY_BYTES + 1)  # an error body over 64 KiB: only its length matters now
        verdict = classify_answer(answer.status, answer.headers.get("Content-Encoding"), body)
        if verdict.verdict is not Verdict.OK:
            message = verdict.message or f"the service refused the source ({verdict.code}, HTTP {answer.status})"
            if answer.status == 401 and plan.token is None:
                message += " (no token is configured for this service)"
            return done(verdict.verdict, verdict.code, message)
        if answer.status != 200:  # classify_answer says OK only for a 200; never store anything else
            return done(Verdict.UNAVAILABLE, None, f"the service answered HTTP {answer.status}")
        if answer.overflow:
            return done(
                Verdict.REFUSED,
                ErrorCode.RESOURCE_LIMIT.value,
                f"the artifact is over {self.settings.max_artifact_bytes} bytes ({ENV_MAX_ARTIFACT})",
            )
        try:
            artifact = validate_artifact(answer.body, format=plan.format, original_size=plan.size)
        except InvalidArtifact as exc:
            return done(Verdict.REFUSED, ErrorCode.INVALID_ARTIFACT.value, f"the artifact breaks the contract: {exc}")
        made_by = f"{plan.capabilities.extractor.name} {plan.capabilities.extractor.version}"
        return done(Verdict.OK, None, f"extracted by {made_by}", artifact.to_json())
