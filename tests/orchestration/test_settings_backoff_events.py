"""Settings validation, the backoff formula and its precedence, the accepted-file event schema."""

from __future__ import annotations

import base64
import subprocess
import sys
import uuid

import orjson
import pytest

from shared.orchestration.backoff import JobTrackingConfig, Tracking, delay_ms, resolve_tracking, stop_reason
from shared.orchestration.events import JOB_ID_NAMESPACE, EventError, parse_accepted_event, poison_blob_name
from shared.orchestration.settings import OrchestrationSettings, SettingsError
from tests.conftest import ROOT
from tests.orchestration.conftest import Orch

STORAGE = {"DataStorage": "UseDevelopmentStorage=true"}


# ---------------------------------------------------------------------------------------------------------------
# Settings


def test_defaults() -> None:
    s = OrchestrationSettings.from_env(STORAGE)
    assert (s.jobs_table, s.poll_queue, s.cancel_queue) == ("jobs", "poll-jobs", "cancel-jobs")
    assert (s.results_container, s.poison_container, s.status_local_queue) == (
        "results",
        "accepted-files-poison",
        "job-status-local",
    )
    assert (s.submit_max_attempts, s.submit_retry_delay_ms) == (5, 2000)
    assert (s.max_polling_attempts, s.poll_interval_ms, s.max_delay_ms, s.max_poll_duration_ms) == (
        60,
        10_000,
        120_000,
        7_200_000,
    )
    assert s.poll_jitter == "none"
    assert s.result_download_allowed_hosts == ()
    assert (s.outbound_allow_http, s.outbound_allow_loopback, s.allow_event_registration) == (False, False, False)
    assert s.extractor_allowed_hosts == ()
    assert s.extractor_token_settings == ("DOCSAI_TOKEN", "DBRICKS_TOKEN")
    assert s.accepted_container == "accepted-files"
    assert s.uses_event_hub is False
    assert "UseDevelopmentStorage" not in repr(s)


def test_errors_name_every_bad_setting() -> None:
    env = {
        "FLUXX_EXTRACTOR_POLL_INTERVAL_MS": "ten",
        "SUBMIT_MAX_ATTEMPTS": "0",
        "OUTBOUND_ALLOW_LOOPBACK": "maybe",
        "EXTRACTOR_TOKEN_SETTINGS": "DOCSAI_TOKEN, AzureWebJobsStorage, EXTRACTOR_TOKENS, bad name",
        "POLL_JITTER": "half",
        "REGISTRATION_API_URL": "ftp://reg",
        "POLL_QUEUE": "Poll_Jobs",
        "RESULT_DOWNLOAD_ALLOWED_HOSTS": "good.example, http://bad/",
        "PALANTIR_INGEST_URL": "https://palantir.example",
        "EventHubConnection": "not-a-connection-string",
    }
    with pytest.raises(SettingsError) as info:
        OrchestrationSettings.from_env(env)
    message = str(info.value)
    for name in [
        "DataStorage: not set",
        "FLUXX_EXTRACTOR_POLL_INTERVAL_MS: must be an integer >= 0, got 'ten'",
        "SUBMIT_MAX_ATTEMPTS: must be an integer >= 1, got 0",
        "OUTBOUND_ALLOW_LOOPBACK: must be true or false, got 'maybe'",
        "EXTRACTOR_TOKEN_SETTINGS: AzureWebJobsStorage holds a connection, key or another service's token",
        "EXTRACTOR_TOKEN_SETTINGS: EXTRACTOR_TOKENS holds a connection, key or another service's token",
        "EXTRACTOR_TOKEN_SETTINGS: 'bad name' is not an app setting name",
        "POLL_JITTER: must be one of none, full, got 'half'",
        "REGISTRATION_API_URL: must be an http(s) URL",
        "POLL_QUEUE: must be a queue/container name",
        "RESULT_DOWNLOAD_ALLOWED_HOSTS: 'http://bad/' is not a host name",
        "PALANTIR_DATASET_RID: required when PALANTIR_INGEST_URL is set",
        "EventHubConnection: not an Event Hubs connection string",
    ]:
        assert name in message


def test_identity_based_storage_and_event_hub() -> None:
    s = OrchestrationSettings.from_env(
        {
            "DataStorage__accountName": "stdocx",
            "EventHubConnection__fullyQualifiedNamespace": "ehns.servicebus.windows.net",
        }
    )
    assert s.storage_connection_string is None
    assert s.blob_service_url == "https://stdocx.blob.core.windows.net"
    assert s.table_service_url == "https://stdocx.table.core.windows.net"
    assert s.job_status_namespace == "ehns.servicebus.windows.net"
    assert s.uses_event_hub
    other = OrchestrationSettings.from_env(
        {
            **STORAGE,
            "JOB_STATUS_CONNECTION": "StatusHub",
            "StatusHub": "Endpoint=sb://x/;SharedAccessKeyName=k;SharedAccessKey=v",
        }
    )
    assert other.job_status_connection_string is not None
    assert "SharedAccessKey" not in repr(other)


def test_function_modules_import_without_any_settings() -> None:
    code = (
        "import os, sys; sys.path.insert(0, sys.argv[1]);"
        "[os.environ.pop(k) for k in list(os.environ) if k not in ('PATH', 'HOME', 'SYSTEMROOT')];"
        "import submit_fn.function, poll_fn.function;"
        "from shared.orchestration.composition import LazyDeps;"
        "deps = LazyDeps.from_env(os.environ);"
        "submit_fn.function.blueprint(deps), poll_fn.function.blueprint(deps);"
        "assert not deps.built; print('ok')"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, timeout=60, check=False
    )
    assert out.stdout.strip() == "ok", out.stderr


# ---------------------------------------------------------------------------------------------------------------
# Backoff


def test_backoff_formula() -> None:
    t = Tracking(max_polling_attempts=10, base_interval_ms=1000, max_delay_ms=5000, max_duration_ms=60_000)
    assert [delay_ms(n, t) for n in range(1, 7)] == [1000, 2000, 4000, 5000, 5000, 5000]
    flat = Tracking(max_polling_attempts=10, base_interval_ms=1500, max_delay_ms=0, max_duration_ms=60_000)
    assert flat.effective_max_delay_ms == 1500
    assert [delay_ms(n, flat) for n in range(1, 5)] == [1500] * 4
    assert delay_ms(10_000, t) == 5000  # no overflow for huge attempt numbers


def test_full_jitter_stays_within_bounds() -> None:
    t = Tracking(max_polling_attempts=10, base_interval_ms=1000, max_delay_ms=8000, max_duration_ms=1, jitter=True)
    assert delay_ms(3, t, rand=lambda: 0.0) == 0
    assert delay_ms(3, t, rand=lambda: 0.999999) == 4000
    assert delay_ms(3, t, rand=lambda: 0.5) == 2000


def test_stop_conditions() -> None:
    t = Tracking(max_polling_attempts=3, base_interval_ms=1, max_delay_ms=0, max_duration_ms=1000)
    assert stop_reason(2, 999, t) is None
    assert stop_reason(3, 0, t) == "polling stopped: 3 attempts reached maxPollingAttempts 3"
    assert stop_reason(1, 1000, t) is None
    assert stop_reason(1, 1001, t) == "polling stopped: job age 1001 ms exceeds maxDurationMs 1000"


def test_tracking_precedence_per_field() -> None:
    settings = OrchestrationSettings.from_env(
        {**STORAGE, "FLUXX_EXTRACTOR_MAX_POLLING_ATTEMPTS": "7", "FLUXX_EXTRACTOR_POLL_INTERVAL_MS": "250"}
    )
    registered = JobTrackingConfig.model_validate({"pollIntervalMs": 900, "maxDelayMs": 0})
    t = resolve_tracking(registered, settings)
    assert t.base_interval_ms == 900  # extractor.jobTrackingConfig wins
    assert t.max_delay_ms == 0  # an explicit 0 counts
    assert t.max_polling_attempts == 7  # then the FLUXX_ setting
    assert t.max_duration_ms == 7_200_000  # then the default
    assert resolve_tracking(None, settings).base_interval_ms == 250
    assert JobTrackingConfig.model_validate({"baseIntervalMs": 5, "maxDurationMs": 9}).max_duration_ms == 9


def test_invalid_tracking_config_is_rejected() -> None:
    from pydantic import ValidationError

    for bad in ({"maxPollingAttempts": 0}, {"pollIntervalMs": -1}, {"maxDelayMs": "5"}):
        with pytest.raises(ValidationError):
            JobTrackingConfig.model_validate(bad)


# ---------------------------------------------------------------------------------------------------------------
# Events

EVENT = {
    "id": "evt-1",
    "clientApplicationId": "app-1",
    "fileId": "file-1",
    "documentHash": "sha256:ab",
    "fileLocationUrl": "https://acct.blob.core.windows.net/accepted/a.pdf",
}


def test_plain_event_and_job_ids() -> None:
    e = parse_accepted_event(orjson.dumps(EVENT))
    assert (e.event_id, e.client_application_id, e.file_id, e.document_hash) == (
        "evt-1",
        "app-1",
        "file-1",
        "sha256:ab",
    )
    assert e.job_id() == str(uuid.uuid5(JOB_ID_NAMESPACE, "event:evt-1"))
    no_id = {k: v for k, v in EVENT.items() if k != "id"}
    assert parse_accepted_event(orjson.dumps(no_id)).job_id() == str(
        uuid.uuid5(JOB_ID_NAMESPACE, "app-1|file-1|sha256:ab")
    )
    spec_casing = {**no_id, "DocumentHash": "sha256:cd", "FileLocationUrl": no_id["fileLocationUrl"]}
    del spec_casing["documentHash"], spec_casing["fileLocationUrl"]
    assert parse_accepted_event(orjson.dumps(spec_casing)).document_hash == "sha256:cd"


def test_cloudevents_forms() -> None:
    envelope = {"specversion": "1.0", "id": "ce-9", "source": "/s", "type": "t", "data": EVENT}
    assert parse_accepted_event(orjson.dumps(envelope)).event_id == "ce-9"  # the envelope id wins
    as_string = {**envelope, "data": orjson.dumps(EVENT).decode()}
    assert parse_accepted_event(orjson.dumps(as_string)).file_id == "file-1"
    as_b64 = {k: v for k, v in envelope.items() if k != "data"}
    as_b64["data_base64"] = base64.b64encode(orjson.dumps(EVENT)).decode()
    assert parse_accepted_event(orjson.dumps(as_b64)).file_id == "file-1"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"\xff\xfe", "event body is not JSON"),
        (b'"text"', "event body is a JSON str, not an object"),
        (orjson.dumps({**EVENT, "fileLocationUrl": "ftp://x"}), "fileLocationUrl: String should match pattern"),
        (orjson.dumps({**EVENT, "fileId": ""}), "fileId: String should have at least 1 character"),
        (orjson.dumps({"specversion": "0.3", "id": "x", "data": EVENT}), "unsupported CloudEvents specversion '0.3'"),
        (orjson.dumps({"specversion": "1.0", "id": "x", "data": EVENT}), "lacks required attribute(s): source, type"),
        (
            orjson.dumps({"specversion": "1.0", "id": "x", "source": "s", "type": "t", "datacontenttype": "text/xml"}),
            "datacontenttype 'text/xml' is not JSON",
        ),
        (orjson.dumps({"specversion": "1.0", "id": "x", "source": "s", "type": "t"}), "envelope has no data"),
        (b"{" + b" " * (1024 * 1024) + b"}", "over the 1048576 byte limit"),
    ],
)
def test_malformed_events(body: bytes, reason: str) -> None:
    with pytest.raises(EventError) as info:
        parse_accepted_event(body)
    assert reason in info.value.reason


def test_poison_blob_names() -> None:
    body = orjson.dumps({"id": "evt-7", "junk": True})
    assert poison_blob_name(body).startswith("evt-7-")
    assert len(poison_blob_name(b"garbage")) == 64
    assert len(poison_blob_name(orjson.dumps({"id": "../../etc"}))) == 64  # unsafe ids are not used as names


# ---------------------------------------------------------------------------------------------------------------
# The composition root: one client per extractor kind, handed in; nothing registered by import


def test_the_composition_root_wires_one_client_per_extractor_kind() -> None:
    from shared.loom.job import LoomExtractorClient
    from shared.orchestration.clients import DbricksClient, DocsaiClient
    from shared.orchestration.composition import build_extractors
    from shared.orchestration.extractor_type import ExtractorType

    settings = OrchestrationSettings.from_env(STORAGE)
    outbound = settings.outbound()
    clients = build_extractors(settings, outbound)
    assert list(clients) == [ExtractorType.DOCSAI, ExtractorType.DBRICKS, ExtractorType.LOOM]
    assert [type(c) for c in clients.values()] == [DocsaiClient, DbricksClient, LoomExtractorClient]
    assert all(c.kind is kind for kind, c in clients.items())
    assert [c.submits for c in clients.values()] == [True, True, False]  # LOOM's first poll does the work
    assert all(getattr(c, "outbound", None) is outbound for c in clients.values())  # one transport for all
    assert [str(k) for k in ExtractorType] == ["DOCSAI", "DBRICKS", "LOOM"]  # the wire strings
    assert ExtractorType.parse(" loom ") is ExtractorType.LOOM
    assert ExtractorType.parse("OCR") is None


def test_a_kind_reaches_the_handlers_only_through_deps(orch: Orch) -> None:
    """Importing the LOOM client registers nothing: a Deps without a LOOM client cannot poll a LOOM job."""
    import shared.loom.job  # noqa: F401 - imported, and still not wired
    from shared.orchestration.extractor_type import ExtractorType
    from shared.orchestration.submit import handle_accepted_events

    orch.register("app-loom", {"extractorType": "LOOM", "extractionUrl": "http://127.0.0.1:9/v1"})
    orch.deps.extractors = {k: c for k, c in orch.deps.extractors.items() if k is not ExtractorType.LOOM}
    [outcome] = handle_accepted_events([orjson.dumps(orch.event("app-loom"))], orch.deps).outcomes
    # Not known to start polling, so it is submitted, and with no client the submission fails: nothing is polled.
    assert (outcome.state, outcome.reason) == ("Failed", "no extractor client for extractor type 'LOOM'")
    assert orch.drive() == []
