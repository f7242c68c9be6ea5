"""The LOOM client's settings: where each format goes, with which token, and the limits of one call.

Read from the environment once (``load_loom_settings``), validated as a whole: every problem is reported at once, each
naming its setting. Tokens are ``SecretStr`` and never appear in a repr, a str, a log line or an exception.
"""

from __future__ import annotations

import json
import math
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from pydantic import SecretStr

from shared.contract import FORMATS, MEDIA_TYPE_FORMAT, format_for_media_type, normalize_media_type
from shared.settings_spec import Setting, SettingsError, optional_text, raw_value, read_all

ENV_URL: Final = "LOOM_DOCUMENT_EXTRACTOR_URL"
ENV_ROUTES: Final = "LOOM_DOCUMENT_EXTRACTORS_JSON"
ENV_TOKEN: Final = "LOOM_DOCUMENT_EXTRACTOR_TOKEN"  # noqa: S105 - a setting's name, not a token
ENV_TOKENS: Final = "LOOM_DOCUMENT_EXTRACTOR_TOKENS_JSON"
ENV_TIMEOUT: Final = "LOOM_DOCUMENT_EXTRACTOR_TIMEOUT_S"
ENV_MAX_ARTIFACT: Final = "LOOM_DOCUMENT_EXTRACTOR_MAX_ARTIFACT_BYTES"


def _seconds(raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{raw[:50]!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise ValueError(f"{raw[:50]!r} must be a positive, finite number of seconds")
    return value


def _bytes(raw: str) -> int:
    if not raw.isdigit() or not raw.isascii():
        raise ValueError(f"{raw[:50]!r} is not a whole number of bytes")
    if int(raw) < 1:
        raise ValueError("must be at least 1 byte")
    return int(raw)


# The routing settings depend on one another (a token's URL must be one a route names), so load_loom_settings parses
# them together; their declarations give their names, defaults, secrecy and meaning. The limits are read as declared.
URL: Final = Setting(ENV_URL, None, optional_text, "the default extractor service's base URL", default_doc="none")
ROUTES: Final = Setting(
    ENV_ROUTES, None, optional_text, "JSON object: format or media type -> base URL", default_doc="{}"
)
TOKEN: Final = Setting(
    ENV_TOKEN, None, optional_text, "the bearer token of the routed services", secret=True, default_doc="none"
)
TOKENS: Final = Setting(
    ENV_TOKENS, None, optional_text, "JSON object: base URL -> its own token", secret=True, default_doc="{}"
)
TIMEOUT: Final = Setting(ENV_TIMEOUT, 60.0, _seconds, "seconds one extract call may take")
MAX_ARTIFACT: Final = Setting(ENV_MAX_ARTIFACT, 256 * 1024 * 1024, _bytes, "the largest artifact accepted")
DECLARATIONS: Final = (URL, ROUTES, TOKEN, TOKENS, TIMEOUT, MAX_ARTIFACT)
SETTING_NAMES: Final = tuple(d.name for d in DECLARATIONS)

DEFAULT_TIMEOUT_S: Final = TIMEOUT.default
DEFAULT_MAX_ARTIFACT_BYTES: Final = MAX_ARTIFACT.default

# A bearer token goes into a header: printable ASCII, no spaces (RFC 6750's b64token is a subset of this).
_TOKEN_RE: Final = re.compile(r"[\x21-\x7e]+")
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}


LoomSettingsError = SettingsError
"""The LOOM settings' error is the project's one ``SettingsError``: ``problems`` holds (setting, what) pairs."""


class LoomRoutingError(LookupError):
    """No service can take the file: no route names its format and no default URL is set, or a bad override URL."""


class Route(NamedTuple):
    """Where one file goes: a normalised base URL and the bearer token for it (``None``: none configured)."""

    base_url: str
    token: SecretStr | None


def display_url(value: str) -> str:
    """A URL as it may appear in a message: any user-info replaced, cut to a sane length."""
    return re.sub(r"(?<=//)[^/@]*@", "***@", value.strip())[:300]


def normalize_url(value: str) -> str:
    """``HTTP://Extractor:80/loom/`` -> ``http://extractor/loom``: the one spelling a base URL is compared by.

    Raises ``ValueError`` with a message that never echoes user-info (a password in a URL is refused, not shown).
    """
    raw = value.strip()
    if not raw:
        raise ValueError("is empty")
    if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in raw):
        raise ValueError(f"{display_url(raw)!r} holds whitespace or control characters")
    parts = urllib.parse.urlsplit(raw)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ValueError(f"{display_url(raw)!r} is not an http:// or https:// URL")
    if "@" in parts.netloc:
        raise ValueError(
            f"{display_url(raw)!r} carries credentials in the URL: put the token in {ENV_TOKEN} or {ENV_TOKENS}"
        )
    host = parts.hostname
    if not host:
        raise ValueError(f"{display_url(raw)!r} names no host")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{display_url(raw)!r} has an invalid port") from None
    if parts.query or parts.fragment:
        raise ValueError(f"{display_url(raw)!r} is a base URL and must have no query or fragment")
    netloc = f"[{host}]" if ":" in host else host
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        netloc += f":{port}"
    return f"{scheme}://{netloc}{parts.path.rstrip('/')}"


@dataclass(frozen=True, slots=True)
class LoomSettings:
    """Validated LOOM settings. Build with ``load_loom_settings``; the fields are already normalised.

    ``routes`` maps a format name or a canonical media type (``normalize_media_type``) to a normalised base URL;
    ``tokens`` maps a normalised base URL to its own token.
    """

    default_url: str | None = None
    routes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    token: SecretStr | None = None
    tokens: Mapping[str, SecretStr] = field(default_factory=lambda: MappingProxyType({}))
    timeout_s: float = DEFAULT_TIMEOUT_S
    max_artifact_bytes: int = DEFAULT_MAX_ARTIFACT_BYTES

    def service_urls(self) -> frozenset[str]:
        """The base URLs the routing settings name (the default URL and every route)."""
        urls = set(self.routes.values())
        if self.default_url:
            urls.add(self.default_url)
        return frozenset(urls)

    def token_for(self, base_url: str) -> SecretStr | None:
        """The token for a base URL: its own, else the default token if routing names the URL, else none.

        The default token goes only to services the operator's routing settings name: a URL only a registration
        names never receives it (it would hand the shared token to whoever may edit a registration).
        """
        url = normalize_url(base_url)
        own = self.tokens.get(url)
        if own is not None:
            return own
        if url in self.service_urls():
            return self.token
        return None

    def route(self, format: str, media_type: str | None = None, override_url: str | None = None) -> Route:
        """Where a file of ``format`` (with its media type, if known) goes, and with which token.

        Precedence: a registration's ``override_url``; the format's key; the file's media-type key when that media
        type is one of ``format``'s; the default URL. Raises ``LoomRoutingError`` when none applies or the override
        URL is not a valid base URL, ``ValueError`` for a name that is no format.
        """
        if format not in FORMATS:
            raise ValueError(f"{format!r} is not a format ({', '.join(FORMATS)})")
        if override_url is not None and override_url.strip():
            try:
                url = normalize_url(override_url)
            except ValueError as exc:
                raise LoomRoutingError(f"the registration's extractor URL {exc}") from None
            return Route(url, self.token_for(url))
        routed: str | None = self.routes.get(format)
        if routed is None and media_type:
            mt = normalize_media_type(media_type)
            if MEDIA_TYPE_FORMAT.get(mt) == format:
                routed = self.routes.get(mt)
        if routed is None:
            routed = self.default_url
        if routed is None:
            raise LoomRoutingError(
                f"no extractor service is configured for {format}: set {ENV_URL} or a route in {ENV_ROUTES}"
            )
        return Route(routed, self.token_for(routed))

    def secrets(self) -> tuple[str, ...]:
        """Every configured token's value, so messages can be scrubbed of them."""
        values = [s.get_secret_value() for s in self.tokens.values()]
        if self.token is not None:
            values.append(self.token.get_secret_value())
        return tuple(v for v in values if v)


# ---------------------------------------------------------------------------------------------------------------
# Loading


class _Pairs(list[tuple[str, Any]]):
    """A JSON object as its (key, value) pairs, so a key given twice is seen rather than silently overwritten."""


def _json_pairs(raw: str) -> list[tuple[str, Any]] | str:
    """A JSON object's (key, value) pairs in order, duplicates kept; or what is wrong (never echoing the text)."""
    try:
        doc = json.loads(raw, object_pairs_hook=_Pairs)
    except json.JSONDecodeError as exc:
        return f"is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    except RecursionError:
        return "is not valid JSON (nested too deep)"
    if not isinstance(doc, _Pairs):
        return "must be a JSON object"
    return doc


def load_loom_settings(env: Mapping[str, str]) -> LoomSettings:
    """Read and validate the LOOM settings from ``env`` (``os.environ`` in production).

    Raises ``SettingsError`` (``LoomSettingsError``) listing every problem, each naming its setting. No setting is
    required: with no
    default URL and no routes every LOOM file is unavailable until one is set (or a registration names its own URL).
    """
    problems: list[tuple[str, str]] = []

    default_url: str | None = None
    raw = raw_value(env, ENV_URL)
    if raw is not None:
        try:
            default_url = normalize_url(raw)
        except ValueError as exc:
            problems.append((ENV_URL, str(exc)))

    routes: dict[str, str] = {}
    spelled: dict[str, str] = {}  # canonical key -> the key as written
    raw = raw_value(env, ENV_ROUTES)
    if raw is not None:
        pairs = _json_pairs(raw)
        if isinstance(pairs, str):
            problems.append((ENV_ROUTES, pairs))
            pairs = []
        for key, value in pairs:
            if key in FORMATS:
                canonical = key
            elif format_for_media_type(key) is not None:
                canonical = normalize_media_type(key)
            else:
                hint = " (format names are lowercase)" if key.strip().lower() in FORMATS else ""
                problems.append(
                    (
                        ENV_ROUTES,
                        f"the key {key!r} names no format{hint}: use a format name ({', '.join(FORMATS)}) "
                        "or a media type of one",
                    )
                )
                continue
            if canonical in spelled:
                first = spelled[canonical]
                what = (
                    f"the key {key!r} is given twice"
                    if first == key
                    else (f"the keys {first!r} and {key!r} are two spellings of the media type {canonical}")
                )
                problems.append((ENV_ROUTES, what))
                continue
            spelled[canonical] = key
            if not isinstance(value, str):
                problems.append((ENV_ROUTES, f"the value of {key!r} must be a base URL string"))
                continue
            try:
                routes[canonical] = normalize_url(value)
            except ValueError as exc:
                problems.append((ENV_ROUTES, f"the URL of {key!r} {exc}"))

    token: SecretStr | None = None
    raw = raw_value(env, ENV_TOKEN)
    if raw is not None:
        if _TOKEN_RE.fullmatch(raw):
            token = SecretStr(raw)
        else:
            problems.append((ENV_TOKEN, "must be printable ASCII with no spaces or control characters"))

    named = set(routes.values()) | ({default_url} if default_url else set())
    tokens: dict[str, SecretStr] = {}
    raw = raw_value(env, ENV_TOKENS)
    if raw is not None:
        pairs = _json_pairs(raw)
        if isinstance(pairs, str):
            problems.append((ENV_TOKENS, pairs))
            pairs = []
        for key, value in pairs:
            try:
                url = normalize_url(key)
            except ValueError as exc:
                problems.append((ENV_TOKENS, f"the key {exc}"))
                continue
            if url in tokens:
                problems.append((ENV_TOKENS, f"{url} is given twice (base URLs are compared without a trailing /)"))
                continue
            if not isinstance(value, str) or not _TOKEN_RE.fullmatch(value.strip()):
                problems.append(
                    (ENV_TOKENS, f"the token for {url} must be printable ASCII with no spaces or control characters")
                )
                continue
            if url not in named:
                problems.append((ENV_TOKENS, f"{url} is not a base URL that {ENV_URL} or {ENV_ROUTES} names"))
                continue
            tokens[url] = SecretStr(value.strip())

    limits, limit_problems = read_all((TIMEOUT, MAX_ARTIFACT), env)
    problems += limit_problems

    if problems:
        raise SettingsError(problems)
    return LoomSettings(
        default_url=default_url,
        routes=MappingProxyType(routes),
        token=token,
        tokens=MappingProxyType(tokens),
        timeout_s=limits[ENV_TIMEOUT],
        max_artifact_bytes=limits[ENV_MAX_ARTIFACT],
    )
