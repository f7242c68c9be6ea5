"""Typed orchestration settings, read from the environment once and validated with errors that name the setting.

App settings in Azure, ``local.settings.json`` under ``func start``, a plain dict in tests. Every setting, its
default and its meaning are listed in ``SETTINGS`` below and in docs/orchestration.md.

Secrets are never copied into the settings object's repr: a token that lives in an app setting (in Azure a Key Vault
reference such as ``@Microsoft.KeyVault(SecretUri=...)``, which the platform resolves into the value) is read through
``secret(name)`` when it is needed.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from shared.outbound import ALLOW_HTTP_SETTING, ALLOW_LOOPBACK_SETTING, Outbound

# ---------------------------------------------------------------------------------------------------------------
# Setting names: the one place they are spelled.

# The application's data (jobs table, poll and cancel queues, accepted files, results, parked events) lives in its own
# storage account, apart from the Functions host's AzureWebJobsStorage, so the app's roles can be scoped to single
# containers, queues and tables. "DataStorage" is also the connection name the queue triggers bind to.
STORAGE: Final = "DataStorage"  # connection string (Azurite, or an account key) ...
STORAGE_ACCOUNT_NAME: Final = "DataStorage__accountName"  # ... or identity-based: the account name ...
STORAGE_BLOB_URI: Final = "DataStorage__blobServiceUri"  # ... or the three service URIs
STORAGE_QUEUE_URI: Final = "DataStorage__queueServiceUri"
STORAGE_TABLE_URI: Final = "DataStorage__tableServiceUri"

JOBS_TABLE: Final = "JOBS_TABLE"
POLL_QUEUE: Final = "POLL_QUEUE"
CANCEL_QUEUE: Final = "CANCEL_QUEUE"
RESULTS_CONTAINER: Final = "RESULTS_CONTAINER"
ACCEPTED_CONTAINER: Final = "ACCEPTED_FILES_CONTAINER"  # the only container a DOCSAI fileUrl SAS is minted for
POISON_CONTAINER: Final = "ACCEPTED_FILES_POISON_CONTAINER"
STATUS_LOCAL_QUEUE: Final = "JOB_STATUS_LOCAL_QUEUE"

JOB_STATUS_HUB: Final = "JOB_STATUS_HUB"
JOB_STATUS_CONNECTION: Final = "JOB_STATUS_CONNECTION"  # the *name* of the connection setting (Functions style)

REGISTRATION_API_URL: Final = "REGISTRATION_API_URL"
REGISTRATION_API_SCOPE: Final = "REGISTRATION_API_SCOPE"
REGISTRATION_CACHE_TTL_SECONDS: Final = "REGISTRATION_CACHE_TTL_SECONDS"
ALLOW_EVENT_REGISTRATION: Final = "ALLOW_EVENT_REGISTRATION"  # honour an event's inline registration (default no)

# The outbound policy (shared/outbound.py): where extractor URLs may point, which settings may be bearer tokens.
EXTRACTOR_ALLOWED_HOSTS: Final = "EXTRACTOR_ALLOWED_HOSTS"
EXTRACTOR_TOKEN_SETTINGS: Final = "EXTRACTOR_TOKEN_SETTINGS"  # noqa: S105 - a setting's name, not a secret
OUTBOUND_ALLOW_HTTP: Final = ALLOW_HTTP_SETTING
OUTBOUND_ALLOW_LOOPBACK: Final = ALLOW_LOOPBACK_SETTING
DEFAULT_EXTRACTOR_TOKEN_SETTINGS: Final = ("DOCSAI_TOKEN", "DBRICKS_TOKEN")
# Never a registration's bearer token, whatever EXTRACTOR_TOKEN_SETTINGS says: connections, keys, other tokens.
RESERVED_SETTING_PREFIXES: Final = (
    "AzureWebJobs",
    "DataStorage",
    "EventHubConnection",
    "APPLICATIONINSIGHTS",
    "WEBSITE",
    "IDENTITY",
    "MSI_",
    "AZURE_",
    "FUNCTIONS_",
    "EXTRACTOR_TOKENS",
    "LOOM_",
    "PALANTIR_",
)

AZURE_CLIENT_ID: Final = "AZURE_CLIENT_ID"
HTTP_TIMEOUT_SECONDS: Final = "EXTRACTOR_HTTP_TIMEOUT_SECONDS"
SUBMIT_MAX_ATTEMPTS: Final = "SUBMIT_MAX_ATTEMPTS"
SUBMIT_RETRY_DELAY_MS: Final = "SUBMIT_RETRY_DELAY_MS"
SUBMIT_CONCURRENCY: Final = "SUBMIT_CONCURRENCY"
SUBMIT_LEASE_SECONDS: Final = "SUBMIT_LEASE_SECONDS"
FILE_SAS_TTL_MINUTES: Final = "FILE_SAS_TTL_MINUTES"

MAX_POLLING_ATTEMPTS: Final = "FLUXX_EXTRACTOR_MAX_POLLING_ATTEMPTS"
POLL_INTERVAL_MS: Final = "FLUXX_EXTRACTOR_POLL_INTERVAL_MS"
MAX_DELAY_MS: Final = "FLUXX_EXTRACTOR_MAX_DELAY_MS"
MAX_POLL_DURATION_MS: Final = "FLUXX_EXTRACTOR_MAX_POLL_DURATION_MS"
POLL_JITTER: Final = "POLL_JITTER"
POLL_LEASE_SECONDS: Final = "POLL_LEASE_SECONDS"
SWEEPER_SLACK_SECONDS: Final = "SWEEPER_SLACK_SECONDS"

RESULT_DOWNLOAD_ALLOWED_HOSTS: Final = "RESULT_DOWNLOAD_ALLOWED_HOSTS"
RESULT_DOWNLOAD_MAX_BYTES: Final = "RESULT_DOWNLOAD_MAX_BYTES"
RESULT_DOWNLOAD_TIMEOUT_SECONDS: Final = "RESULT_DOWNLOAD_TIMEOUT_SECONDS"
RESULT_MAX_ATTEMPTS: Final = "RESULT_MAX_ATTEMPTS"

PALANTIR_INGEST_URL: Final = "PALANTIR_INGEST_URL"
PALANTIR_DATASET_RID: Final = "PALANTIR_DATASET_RID"
PALANTIR_TOKEN: Final = "PALANTIR_TOKEN"  # noqa: S105 - the name of the setting, not a secret
PALANTIR_TOKEN_SCOPE: Final = "PALANTIR_TOKEN_SCOPE"  # noqa: S105
PALANTIR_BRANCH_ID: Final = "PALANTIR_BRANCH_ID"

# Binding-only settings: the Functions host resolves them (%NAME%) in the trigger definitions; listed for the docs.
ACCEPTED_FILES_HUB: Final = "ACCEPTED_FILES_HUB"
ACCEPTED_FILES_CONSUMER_GROUP: Final = "ACCEPTED_FILES_CONSUMER_GROUP"
SWEEPER_SCHEDULE: Final = "SWEEPER_SCHEDULE"

MAX_VISIBILITY_SECONDS: Final = 7 * 24 * 3600 - 1  # Storage queues: a message is invisible for at most 7 days


class SettingsError(ValueError):
    """One or more settings are missing or malformed; the message names every one of them."""


Jitter = Literal["none", "full"]


@dataclass(frozen=True)
class OrchestrationSettings:
    """Everything the orchestration reads from its environment. Build with ``from_env``; defaults are documented."""

    # Storage (jobs table, poll queue, results, poison container, local status queue).
    storage_connection_string: str | None = field(default=None, repr=False)
    blob_service_url: str | None = None
    queue_service_url: str | None = None
    table_service_url: str | None = None
    jobs_table: str = "jobs"
    poll_queue: str = "poll-jobs"
    cancel_queue: str = "cancel-jobs"
    results_container: str = "results"
    accepted_container: str = "accepted-files"
    poison_container: str = "accepted-files-poison"
    status_local_queue: str = "job-status-local"
    # Status events.
    job_status_hub: str = "job-status"
    job_status_connection_string: str | None = field(default=None, repr=False)
    job_status_namespace: str | None = None
    # Registration.
    registration_api_url: str | None = None
    registration_api_scope: str | None = None
    registration_cache_ttl_s: float = 60.0
    allow_event_registration: bool = False
    # Outbound policy.
    extractor_allowed_hosts: tuple[str, ...] = ()
    extractor_token_settings: tuple[str, ...] = DEFAULT_EXTRACTOR_TOKEN_SETTINGS
    outbound_allow_http: bool = False
    outbound_allow_loopback: bool = False
    # Submission.
    azure_client_id: str | None = None
    http_timeout_s: float = 30.0
    submit_max_attempts: int = 5
    submit_retry_delay_ms: int = 2000
    submit_concurrency: int = 16
    submit_lease_s: float = 600.0
    file_sas_ttl_minutes: int = 60
    # Polling.
    max_polling_attempts: int = 60
    poll_interval_ms: int = 10_000
    max_delay_ms: int = 120_000
    max_poll_duration_ms: int = 7_200_000
    poll_jitter: Jitter = "none"
    poll_lease_s: float = 300.0
    sweeper_slack_s: float = 120.0
    # Results.
    result_download_allowed_hosts: tuple[str, ...] = ()
    result_download_max_bytes: int = 64 * 1024 * 1024
    result_download_timeout_s: float = 60.0
    result_max_attempts: int = 3
    # Palantir ingestion (DBRICKS results).
    palantir_ingest_url: str | None = None
    palantir_dataset_rid: str | None = None
    palantir_token: str | None = field(default=None, repr=False)
    palantir_token_scope: str | None = None
    palantir_branch_id: str | None = None
    # The environment the settings were read from: secret settings named by a registration are read from here.
    env: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    # Per-settings storage clients and credential, created lazily; see ``cached``.
    _cache: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False, compare=False)

    # -----------------------------------------------------------------------------------------------------------
    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> OrchestrationSettings:
        """Read and validate every setting; raise ``SettingsError`` naming each bad one. ``overrides`` win."""
        source = dict(os.environ if env is None else env)
        r = _Reader(source)
        values: dict[str, Any] = {
            "storage_connection_string": r.text(STORAGE),
            "jobs_table": r.name(JOBS_TABLE, "jobs", table=True),
            "poll_queue": r.name(POLL_QUEUE, "poll-jobs"),
            "cancel_queue": r.name(CANCEL_QUEUE, "cancel-jobs"),
            "results_container": r.name(RESULTS_CONTAINER, "results"),
            "accepted_container": r.name(ACCEPTED_CONTAINER, "accepted-files"),
            "poison_container": r.name(POISON_CONTAINER, "accepted-files-poison"),
            "status_local_queue": r.name(STATUS_LOCAL_QUEUE, "job-status-local"),
            "job_status_hub": r.text(JOB_STATUS_HUB) or "job-status",
            "registration_api_url": r.url(REGISTRATION_API_URL),
            "registration_api_scope": r.text(REGISTRATION_API_SCOPE),
            "registration_cache_ttl_s": r.number(REGISTRATION_CACHE_TTL_SECONDS, 60.0, minimum=0),
            "allow_event_registration": r.flag(ALLOW_EVENT_REGISTRATION, False),
            "extractor_allowed_hosts": r.host_list(EXTRACTOR_ALLOWED_HOSTS),
            "extractor_token_settings": r.token_settings(EXTRACTOR_TOKEN_SETTINGS),
            "outbound_allow_http": r.flag(OUTBOUND_ALLOW_HTTP, False),
            "outbound_allow_loopback": r.flag(OUTBOUND_ALLOW_LOOPBACK, False),
            "azure_client_id": r.text(AZURE_CLIENT_ID),
            "http_timeout_s": r.number(HTTP_TIMEOUT_SECONDS, 30.0, minimum=0.01),
            "submit_max_attempts": r.integer(SUBMIT_MAX_ATTEMPTS, 5, minimum=1),
            "submit_retry_delay_ms": r.integer(SUBMIT_RETRY_DELAY_MS, 2000, minimum=0),
            "submit_concurrency": r.integer(SUBMIT_CONCURRENCY, 16, minimum=1),
            "submit_lease_s": r.number(SUBMIT_LEASE_SECONDS, 600.0, minimum=0),
            "file_sas_ttl_minutes": r.integer(FILE_SAS_TTL_MINUTES, 60, minimum=1),
            "max_polling_attempts": r.integer(MAX_POLLING_ATTEMPTS, 60, minimum=1),
            "poll_interval_ms": r.integer(POLL_INTERVAL_MS, 10_000, minimum=0),
            "max_delay_ms": r.integer(MAX_DELAY_MS, 120_000, minimum=0),
            "max_poll_duration_ms": r.integer(MAX_POLL_DURATION_MS, 7_200_000, minimum=1),
            "poll_jitter": r.choice(POLL_JITTER, "none", ("none", "full")),
            "poll_lease_s": r.number(POLL_LEASE_SECONDS, 300.0, minimum=0),
            "sweeper_slack_s": r.number(SWEEPER_SLACK_SECONDS, 120.0, minimum=0),
            "result_download_allowed_hosts": r.host_list(RESULT_DOWNLOAD_ALLOWED_HOSTS),
            "result_download_max_bytes": r.integer(RESULT_DOWNLOAD_MAX_BYTES, 64 * 1024 * 1024, minimum=1),
            "result_download_timeout_s": r.number(RESULT_DOWNLOAD_TIMEOUT_SECONDS, 60.0, minimum=0.01),
            "result_max_attempts": r.integer(RESULT_MAX_ATTEMPTS, 3, minimum=1),
            "palantir_ingest_url": r.url(PALANTIR_INGEST_URL),
            "palantir_dataset_rid": r.text(PALANTIR_DATASET_RID),
            "palantir_token": r.text(PALANTIR_TOKEN),
            "palantir_token_scope": r.text(PALANTIR_TOKEN_SCOPE),
            "palantir_branch_id": r.text(PALANTIR_BRANCH_ID),
        }
        # Storage: a connection string, or identity-based service URIs (Functions' DataStorage__* convention).
        account = r.text(STORAGE_ACCOUNT_NAME)
        blob_uri = r.url(STORAGE_BLOB_URI) or (f"https://{account}.blob.core.windows.net" if account else None)
        queue_uri = r.url(STORAGE_QUEUE_URI) or (f"https://{account}.queue.core.windows.net" if account else None)
        table_uri = r.url(STORAGE_TABLE_URI) or (f"https://{account}.table.core.windows.net" if account else None)
        values.update(blob_service_url=blob_uri, queue_service_url=queue_uri, table_service_url=table_uri)
        if not values["storage_connection_string"] and not (blob_uri and queue_uri and table_uri):
            r.errors.append(
                f"{STORAGE}: not set: give a storage connection string, or {STORAGE_ACCOUNT_NAME} "
                f"(or all of {STORAGE}__blobServiceUri/__queueServiceUri/__tableServiceUri) for identity-based access"
            )
        # Status events: the connection setting is named by JOB_STATUS_CONNECTION (default EventHubConnection).
        conn_name = r.text(JOB_STATUS_CONNECTION) or "EventHubConnection"
        conn = (source.get(conn_name) or "").strip()
        namespace = (source.get(f"{conn_name}__fullyQualifiedNamespace") or "").strip()
        if conn and "Endpoint=" not in conn:
            r.errors.append(f"{conn_name}: not an Event Hubs connection string (no Endpoint=)")
        values["job_status_connection_string"] = conn or None
        values["job_status_namespace"] = namespace or None
        if values["palantir_ingest_url"] and not values["palantir_dataset_rid"]:
            r.errors.append(f"{PALANTIR_DATASET_RID}: required when {PALANTIR_INGEST_URL} is set")
        if values["palantir_token"] and values["palantir_token_scope"]:
            r.errors.append(f"{PALANTIR_TOKEN_SCOPE}: give either {PALANTIR_TOKEN} or {PALANTIR_TOKEN_SCOPE}, not both")
        if r.errors:
            raise SettingsError("invalid orchestration settings: " + "; ".join(r.errors))
        values.update(overrides)
        return cls(env=source, **values)

    # -----------------------------------------------------------------------------------------------------------
    def secret(self, name: str) -> str | None:
        """The value of the app setting ``name`` (a token, or a Key Vault reference the platform resolved)."""
        value = self.env.get(name)
        return value.strip() if value and value.strip() else None

    def cached(self, key: str, factory: Callable[[], Any]) -> Any:
        """A storage client or credential created once per settings object (``shared.orchestration.storage``)."""
        with self._lock:
            if key not in self._cache:
                self._cache[key] = factory()
            return self._cache[key]

    def outbound(self) -> Outbound:
        """The one outbound transport under these settings' address policy (see shared/outbound.py)."""
        return Outbound(allow_http=self.outbound_allow_http, allow_loopback=self.outbound_allow_loopback)

    @property
    def uses_event_hub(self) -> bool:
        return bool(self.job_status_connection_string or self.job_status_namespace)


class _Reader:
    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env
        self.errors: list[str] = []

    def text(self, name: str) -> str | None:
        value = self.env.get(name)
        return value.strip() if value and value.strip() else None

    def integer(self, name: str, default: int, *, minimum: int) -> int:
        raw = self.text(name)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            self.errors.append(f"{name}: must be an integer >= {minimum}, got {raw!r}")
            return default
        if value < minimum:
            self.errors.append(f"{name}: must be an integer >= {minimum}, got {value}")
        return value

    def number(self, name: str, default: float, *, minimum: float) -> float:
        raw = self.text(name)
        if raw is None:
            return default
        try:
            value = float(raw)
        except ValueError:
            self.errors.append(f"{name}: must be a number >= {minimum}, got {raw!r}")
            return default
        if not value >= minimum:
            self.errors.append(f"{name}: must be a number >= {minimum}, got {raw}")
        return value

    def flag(self, name: str, default: bool) -> bool:
        raw = self.text(name)
        if raw is None:
            return default
        if raw.lower() in ("1", "true", "yes", "on"):
            return True
        if raw.lower() in ("0", "false", "no", "off"):
            return False
        self.errors.append(f"{name}: must be true or false, got {raw!r}")
        return default

    def choice(self, name: str, default: str, options: tuple[str, ...]) -> Any:
        raw = self.text(name)
        if raw is None:
            return default
        if raw.lower() not in options:
            self.errors.append(f"{name}: must be one of {', '.join(options)}, got {raw!r}")
            return default
        return raw.lower()

    def url(self, name: str) -> str | None:
        raw = self.text(name)
        if raw is None:
            return None
        if not raw.lower().startswith(("http://", "https://")):
            self.errors.append(f"{name}: must be an http(s) URL, got {raw!r}")
            return None
        return raw.rstrip("/")

    def name(self, name: str, default: str, *, table: bool = False) -> str:
        raw = self.text(name) or default
        import re

        pattern = r"[A-Za-z][A-Za-z0-9]{2,62}" if table else r"[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}"
        if not re.fullmatch(pattern, raw):
            kind = "a table name (letters and digits)" if table else "a queue/container name (lowercase, digits, -)"
            self.errors.append(f"{name}: must be {kind}, got {raw!r}")
        return raw

    def token_settings(self, name: str) -> tuple[str, ...]:
        raw = self.text(name)
        if raw is None:
            return DEFAULT_EXTRACTOR_TOKEN_SETTINGS
        names = tuple(n.strip() for n in raw.split(",") if n.strip())
        import re

        for n in names:
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", n):
                self.errors.append(f"{name}: {n[:60]!r} is not an app setting name")
            elif n.startswith(RESERVED_SETTING_PREFIXES):
                self.errors.append(f"{name}: {n} holds a connection, key or another service's token; not a token")
        return names

    def host_list(self, name: str) -> tuple[str, ...]:
        raw = self.text(name)
        if raw is None:
            return ()
        hosts = tuple(h.strip().lower() for h in raw.split(",") if h.strip())
        for h in hosts:
            bare = h[2:] if h.startswith("*.") else h
            if not bare or "/" in bare or "*" in bare:
                self.errors.append(f"{name}: {h!r} is not a host name, host:port or *.domain")
        return hosts
