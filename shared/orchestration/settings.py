"""Typed orchestration settings, read from the environment once and validated with errors that name the setting.

App settings in Azure, ``local.settings.json`` under ``func start``, a plain dict in tests. Every setting is one
``Setting`` declaration (shared/settings_spec.py: name, default, parser, secret or not, meaning): the fields of
``OrchestrationSettings`` declare theirs with ``setting_field``, the others are listed in ``DECLARATIONS``; the table in
docs/orchestration.md is checked against them. ``BINDING_SETTINGS`` are the ones the trigger bindings resolve
(``%POLL_QUEUE%``...), which must exist as app settings wherever the host runs.

Secrets are never copied into the settings object's repr: a token that lives in an app setting (in Azure a Key Vault
reference such as ``@Microsoft.KeyVault(SecretUri=...)``, which the platform resolves into the value) is read through
``secret(name)`` when it is needed.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from shared.outbound import ALLOW_HTTP_SETTING, ALLOW_LOOPBACK_SETTING, Outbound
from shared.settings_spec import (
    Problem,
    Setting,
    declared,
    optional_text,
    raw_value,
    read_all,
    setting_field,
    text,
)
from shared.settings_spec import SettingsError as SettingsError  # noqa: PLC0414 - the one error, re-exported

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


Jitter = Literal["none", "full"]


# ---------------------------------------------------------------------------------------------------------------
# Parsers: each gets a stripped, non-blank value and returns it typed, or raises ValueError saying what it must be.


def _integer(minimum: int) -> Callable[[str], int]:
    def parse(raw: str) -> int:
        try:
            value = int(raw)
        except ValueError:
            raise ValueError(f"must be an integer >= {minimum}, got {raw!r}") from None
        if value < minimum:
            raise ValueError(f"must be an integer >= {minimum}, got {value}")
        return value

    return parse


def _number(minimum: float) -> Callable[[str], float]:
    def parse(raw: str) -> float:
        try:
            value = float(raw)
        except ValueError:
            raise ValueError(f"must be a number >= {minimum}, got {raw!r}") from None
        if not value >= minimum:
            raise ValueError(f"must be a number >= {minimum}, got {raw}")
        return value

    return parse


def _flag(raw: str) -> bool:
    if raw.lower() in ("1", "true", "yes", "on"):
        return True
    if raw.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"must be true or false, got {raw!r}")


def _jitter(raw: str) -> Jitter:
    options: tuple[Jitter, ...] = ("none", "full")
    for option in options:
        if raw.lower() == option:
            return option
    raise ValueError(f"must be one of {', '.join(options)}, got {raw!r}")


def _url(raw: str) -> str | None:
    if not raw.lower().startswith(("http://", "https://")):
        raise ValueError(f"must be an http(s) URL, got {raw!r}")
    return raw.rstrip("/")


def _storage_name(*, table: bool = False) -> Callable[[str], str]:
    pattern = r"[A-Za-z][A-Za-z0-9]{2,62}" if table else r"[a-z0-9](?:[a-z0-9]|-(?=[a-z0-9])){2,62}"
    kind = "a table name (letters and digits)" if table else "a queue/container name (lowercase, digits, -)"

    def parse(raw: str) -> str:
        if not re.fullmatch(pattern, raw):
            raise ValueError(f"must be {kind}, got {raw!r}")
        return raw

    return parse


def _token_settings(raw: str) -> tuple[str, ...]:
    names = tuple(n.strip() for n in raw.split(",") if n.strip())
    wrong: list[str] = []
    for n in names:
        if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", n):
            wrong.append(f"{n[:60]!r} is not an app setting name")
        elif n.startswith(RESERVED_SETTING_PREFIXES):
            wrong.append(f"{n} holds a connection, key or another service's token; not a token")
    if wrong:
        raise ValueError(*wrong)
    return names


def _host_list(raw: str) -> tuple[str, ...]:
    hosts = tuple(h.strip().lower() for h in raw.split(",") if h.strip())
    wrong = []
    for h in hosts:
        bare = h[2:] if h.startswith("*.") else h
        if not bare or "/" in bare or "*" in bare:
            wrong.append(f"{h!r} is not a host name, host:port or *.domain")
    if wrong:
        raise ValueError(*wrong)
    return hosts


# ---------------------------------------------------------------------------------------------------------------
# The declarations: every setting read into OrchestrationSettings, its default written here once.

S = Setting
_NO_TEXT: Final[str | None] = None
# Storage. The connection string or the identity-based parts (checked together in from_env).
STORAGE_SETTING: Final = S(STORAGE, _NO_TEXT, optional_text, "storage connection string", secret=True)
STORAGE_ACCOUNT_SETTING: Final = S(STORAGE_ACCOUNT_NAME, _NO_TEXT, optional_text, "identity-based storage account")
STORAGE_BLOB_SETTING: Final = S(STORAGE_BLOB_URI, _NO_TEXT, _url, "identity-based blob service URI")
STORAGE_QUEUE_SETTING: Final = S(STORAGE_QUEUE_URI, _NO_TEXT, _url, "identity-based queue service URI")
STORAGE_TABLE_SETTING: Final = S(STORAGE_TABLE_URI, _NO_TEXT, _url, "identity-based table service URI")
JOB_STATUS_CONNECTION_SETTING: Final = S(
    JOB_STATUS_CONNECTION, "EventHubConnection", text, "the name of the status events' Event Hubs connection setting"
)
# The settings the trigger bindings resolve (%NAME%): the Functions host needs them as app settings.
ACCEPTED_FILES_HUB_SETTING: Final = S(
    ACCEPTED_FILES_HUB, "accepted-files", text, "the submit trigger's Event Hub", binding=True
)
ACCEPTED_FILES_CONSUMER_GROUP_SETTING: Final = S(
    ACCEPTED_FILES_CONSUMER_GROUP, "submit-fn", text, "the submit trigger's consumer group", binding=True
)
SWEEPER_SCHEDULE_SETTING: Final = S(SWEEPER_SCHEDULE, "0 */5 * * * *", text, "the sweeper's NCRONTAB", binding=True)


@dataclass(frozen=True)
class OrchestrationSettings:
    """Everything the orchestration reads from its environment. Build with ``from_env``; defaults are documented."""

    # Storage (jobs table, poll queue, results, poison container, local status queue).
    storage_connection_string: str | None = setting_field(STORAGE_SETTING)
    blob_service_url: str | None = None
    queue_service_url: str | None = None
    table_service_url: str | None = None
    jobs_table: str = setting_field(S(JOBS_TABLE, "jobs", _storage_name(table=True), "the jobs table"))
    poll_queue: str = setting_field(
        S(POLL_QUEUE, "poll-jobs", _storage_name(), "the poll queue (the poll trigger binds it)", binding=True)
    )
    cancel_queue: str = setting_field(
        S(CANCEL_QUEUE, "cancel-jobs", _storage_name(), "the cancel queue (its trigger binds it)", binding=True)
    )
    results_container: str = setting_field(S(RESULTS_CONTAINER, "results", _storage_name(), "results container"))
    accepted_container: str = setting_field(
        S(ACCEPTED_CONTAINER, "accepted-files", _storage_name(), "the accepted originals' container")
    )
    poison_container: str = setting_field(
        S(POISON_CONTAINER, "accepted-files-poison", _storage_name(), "events that could not be handled")
    )
    status_local_queue: str = setting_field(
        S(STATUS_LOCAL_QUEUE, "job-status-local", _storage_name(), "status events without an Event Hub")
    )
    # Status events.
    job_status_hub: str = setting_field(S(JOB_STATUS_HUB, "job-status", text, "the status events' Event Hub"))
    job_status_connection_string: str | None = field(default=None, repr=False)
    job_status_namespace: str | None = None
    # Registration.
    registration_api_url: str | None = setting_field(S(REGISTRATION_API_URL, _NO_TEXT, _url, "registration API"))
    registration_api_scope: str | None = setting_field(
        S(REGISTRATION_API_SCOPE, _NO_TEXT, optional_text, "Entra scope of the registration API's token")
    )
    registration_cache_ttl_s: float = setting_field(
        S(REGISTRATION_CACHE_TTL_SECONDS, 60.0, _number(0), "registration cache TTL")
    )
    allow_event_registration: bool = setting_field(
        S(ALLOW_EVENT_REGISTRATION, False, _flag, "honour an event's inline registration")
    )
    # Outbound policy.
    extractor_allowed_hosts: tuple[str, ...] = setting_field(
        S(EXTRACTOR_ALLOWED_HOSTS, (), _host_list, "hosts extractor URLs may name")
    )
    extractor_token_settings: tuple[str, ...] = setting_field(
        S(
            EXTRACTOR_TOKEN_SETTINGS,
            DEFAULT_EXTRACTOR_TOKEN_SETTINGS,
            _token_settings,
            "the settings a registration's auth.setting may name",
        )
    )
    outbound_allow_http: bool = setting_field(S(OUTBOUND_ALLOW_HTTP, False, _flag, "plain http (dev/tests)"))
    outbound_allow_loopback: bool = setting_field(
        S(OUTBOUND_ALLOW_LOOPBACK, False, _flag, "loopback addresses (dev/tests)")
    )
    # Submission.
    azure_client_id: str | None = setting_field(S(AZURE_CLIENT_ID, _NO_TEXT, optional_text, "the app's client id"))
    http_timeout_s: float = setting_field(S(HTTP_TIMEOUT_SECONDS, 30.0, _number(0.01), "one outbound call's deadline"))
    submit_max_attempts: int = setting_field(S(SUBMIT_MAX_ATTEMPTS, 5, _integer(1), "submission attempts"))
    submit_retry_delay_ms: int = setting_field(S(SUBMIT_RETRY_DELAY_MS, 2000, _integer(0), "submission retry delay"))
    submit_concurrency: int = setting_field(S(SUBMIT_CONCURRENCY, 16, _integer(1), "events handled at once"))
    submit_lease_s: float = setting_field(S(SUBMIT_LEASE_SECONDS, 600.0, _number(0), "a submitting worker's lease"))
    file_sas_ttl_minutes: int = setting_field(S(FILE_SAS_TTL_MINUTES, 60, _integer(1), "DOCSAI fileUrl lifetime"))
    # Polling.
    max_polling_attempts: int = setting_field(S(MAX_POLLING_ATTEMPTS, 60, _integer(1), "poll attempts"))
    poll_interval_ms: int = setting_field(S(POLL_INTERVAL_MS, 10_000, _integer(0), "first poll delay"))
    max_delay_ms: int = setting_field(S(MAX_DELAY_MS, 120_000, _integer(0), "largest poll delay"))
    max_poll_duration_ms: int = setting_field(S(MAX_POLL_DURATION_MS, 7_200_000, _integer(1), "polling deadline"))
    poll_jitter: Jitter = setting_field(S(POLL_JITTER, "none", _jitter, "full for full jitter"))  # noqa: RUF009 - a frozen declaration
    poll_lease_s: float = setting_field(S(POLL_LEASE_SECONDS, 300.0, _number(0), "a polling worker's lease"))
    sweeper_slack_s: float = setting_field(S(SWEEPER_SLACK_SECONDS, 120.0, _number(0), "grace before the sweeper acts"))
    # Results.
    result_download_allowed_hosts: tuple[str, ...] = setting_field(
        S(RESULT_DOWNLOAD_ALLOWED_HOSTS, (), _host_list, "hosts result URLs may name")
    )
    result_download_max_bytes: int = setting_field(
        S(RESULT_DOWNLOAD_MAX_BYTES, 64 * 1024 * 1024, _integer(1), "largest result")
    )
    result_download_timeout_s: float = setting_field(
        S(RESULT_DOWNLOAD_TIMEOUT_SECONDS, 60.0, _number(0.01), "result download deadline")
    )
    result_max_attempts: int = setting_field(S(RESULT_MAX_ATTEMPTS, 3, _integer(1), "transient result failures"))
    # Palantir ingestion (DBRICKS results).
    palantir_ingest_url: str | None = setting_field(S(PALANTIR_INGEST_URL, _NO_TEXT, _url, "Palantir ingestion"))
    palantir_dataset_rid: str | None = setting_field(
        S(PALANTIR_DATASET_RID, _NO_TEXT, optional_text, "the Palantir dataset")
    )
    palantir_token: str | None = setting_field(
        S(PALANTIR_TOKEN, _NO_TEXT, optional_text, "Palantir bearer token", secret=True)
    )
    palantir_token_scope: str | None = setting_field(
        S(PALANTIR_TOKEN_SCOPE, _NO_TEXT, optional_text, "Entra scope of the Palantir token")
    )
    palantir_branch_id: str | None = setting_field(
        S(PALANTIR_BRANCH_ID, _NO_TEXT, optional_text, "the Palantir branch")
    )
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
        fields = declared(cls)
        extra = (STORAGE_ACCOUNT_SETTING, STORAGE_BLOB_SETTING, STORAGE_QUEUE_SETTING, STORAGE_TABLE_SETTING)
        read, problems = read_all([d for _, d in fields] + [*extra, JOB_STATUS_CONNECTION_SETTING], source)
        values: dict[str, Any] = {name: read[decl.name] for name, decl in fields}
        # Storage: a connection string, or identity-based service URIs (Functions' DataStorage__* convention).
        account = read[STORAGE_ACCOUNT_NAME]
        blob_uri = read[STORAGE_BLOB_URI] or (f"https://{account}.blob.core.windows.net" if account else None)
        queue_uri = read[STORAGE_QUEUE_URI] or (f"https://{account}.queue.core.windows.net" if account else None)
        table_uri = read[STORAGE_TABLE_URI] or (f"https://{account}.table.core.windows.net" if account else None)
        values.update(blob_service_url=blob_uri, queue_service_url=queue_uri, table_service_url=table_uri)
        if not values["storage_connection_string"] and not (blob_uri and queue_uri and table_uri):
            problems.append(
                Problem(
                    STORAGE,
                    f"not set: give a storage connection string, or {STORAGE_ACCOUNT_NAME} (or all of "
                    f"{STORAGE}__blobServiceUri/__queueServiceUri/__tableServiceUri) for identity-based access",
                )
            )
        # Status events: the connection setting is named by JOB_STATUS_CONNECTION (default EventHubConnection).
        conn_name = read[JOB_STATUS_CONNECTION]
        conn = raw_value(source, conn_name) or ""
        namespace = raw_value(source, f"{conn_name}__fullyQualifiedNamespace") or ""
        if conn and "Endpoint=" not in conn:
            problems.append(Problem(conn_name, "not an Event Hubs connection string (no Endpoint=)"))
        values["job_status_connection_string"] = conn or None
        values["job_status_namespace"] = namespace or None
        if values["palantir_ingest_url"] and not values["palantir_dataset_rid"]:
            problems.append(Problem(PALANTIR_DATASET_RID, f"required when {PALANTIR_INGEST_URL} is set"))
        if values["palantir_token"] and values["palantir_token_scope"]:
            problems.append(
                Problem(PALANTIR_TOKEN_SCOPE, f"give either {PALANTIR_TOKEN} or {PALANTIR_TOKEN_SCOPE}, not both")
            )
        if problems:
            raise SettingsError(problems, heading="invalid orchestration settings: ")
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


DECLARATIONS: Final[tuple[Setting[Any], ...]] = (
    *(decl for _, decl in declared(OrchestrationSettings)),
    STORAGE_ACCOUNT_SETTING,
    STORAGE_BLOB_SETTING,
    STORAGE_QUEUE_SETTING,
    STORAGE_TABLE_SETTING,
    JOB_STATUS_CONNECTION_SETTING,
    ACCEPTED_FILES_HUB_SETTING,
    ACCEPTED_FILES_CONSUMER_GROUP_SETTING,
    SWEEPER_SCHEDULE_SETTING,
)
"""Every orchestration setting this module reads or the trigger bindings resolve, once each."""

BINDING_SETTINGS: Final = tuple(d for d in DECLARATIONS if d.binding)
"""The settings the Functions host resolves as %NAME% in the trigger definitions, with their defaults."""
