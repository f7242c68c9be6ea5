"""Hostile accepted-file events and registrations against the whole orchestration (Azurite, local servers): they
reach no internal address, get no token that is not theirs and no SAS for a blob that is not theirs. Every
non-loopback connect and lookup is intercepted in this process (``guard``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import orjson
import pytest

from shared.orchestration.jobs import JobState
from shared.orchestration.submit import handle_accepted_events
from tests.orchestration import conftest as orchestration
from tests.orchestration.conftest import DOCSAI_TOKEN, Orch, Reply, Seen
from tests.security.outbound_guard import Guard, guard_fixture  # noqa: F401 - the guard fixture

# The orchestration suite's fixtures (Azurite-backed orchestration, local servers), used here as they are.
make_orch = orchestration.make_orch
servers = orchestration.servers

INTERNAL_HOSTS = [
    "169.254.169.254",
    "10.0.0.5",
    "[::ffff:10.0.0.5]",
    "[64:ff9b::a00:5]",
    "[2002:a00:5::]",
    "[::10.0.0.5]",
    "[fec0::1]",
    "192.0.0.8",
]
STORAGE_SECRET = "AccountKey=c2VjcmV0LXN0b3JhZ2Uta2V5LXZhbHVl"
EXTRACTOR_SERVICE_SECRET = "extractor-service-inbound-token"


def _hostile(host: str) -> dict[str, Any]:
    return {
        "extractorType": "DOCSAI",
        "extractionUrl": f"http://{host}/latest/meta-data/",
        "pollingUrl": f"http://{host}/poll",
        "auth": {"setting": "DOCSAI_TOKEN"},
    }


def _accept(orch: Orch, event: dict[str, Any]) -> Any:
    [outcome] = handle_accepted_events([orjson.dumps(event)], orch.deps).outcomes
    return outcome


def _terminal_statuses(orch: Orch, job_id: str) -> list[str]:
    return [e["status"] for e in orch.events_of(job_id) if e["status"] in ("Succeeded", "Failed", "Canceled")]


def _inline(host: str) -> dict[str, Any]:
    return {"extractors": [_hostile(host)]}


@pytest.mark.parametrize("host", INTERNAL_HOSTS)
def test_inline_registration_naming_an_internal_address_reaches_nothing(
    make_orch: Callable[..., Orch], guard: Guard, host: str
) -> None:
    # The operator allows inline registrations and even lists the host: the address policy still refuses it.
    orch = make_orch(ALLOW_EVENT_REGISTRATION="true", EXTRACTOR_ALLOWED_HOSTS=f"127.0.0.1,{host}")
    outcome = _accept(orch, orch.event("app-1", registration=_inline(host)))
    assert outcome.state == JobState.FAILED
    assert "resolves to a" in outcome.reason
    assert "address; refused" in outcome.reason
    assert guard.refused == []  # no connect to it was even attempted
    assert _terminal_statuses(orch, outcome.job_id) == ["Failed"]


def test_inline_registration_is_ignored_by_default(make_orch: Callable[..., Orch], guard: Guard) -> None:
    orch = make_orch(EXTRACTOR_ALLOWED_HOSTS="127.0.0.1,169.254.169.254")
    orch.register("app-1", orch.docsai_config())
    outcome = _accept(orch, orch.event("app-1", registration=_inline("169.254.169.254")))
    assert outcome.state != JobState.FAILED  # the registration API's extractor is used instead
    assert len(orch.docsai.posts()) == 1
    assert guard.refused == []
    assert "169.254.169.254" not in guard.lookups


def test_inline_registration_off_list_is_refused_before_any_lookup(
    make_orch: Callable[..., Orch], guard: Guard
) -> None:
    orch = make_orch(ALLOW_EVENT_REGISTRATION="true")
    outcome = _accept(orch, orch.event("app-1", registration=_inline("attacker.example")))
    assert outcome.state == JobState.FAILED
    assert outcome.reason == (
        "the first registered extractor's extractionUrl is refused: extractor host attacker.example:80 is not in "
        "EXTRACTOR_ALLOWED_HOSTS; refused"
    )
    assert guard.lookups.count("attacker.example") == 0
    assert _terminal_statuses(orch, outcome.job_id) == ["Failed"]


def test_a_registered_host_name_resolving_to_an_internal_address_is_refused(
    make_orch: Callable[..., Orch], guard: Guard
) -> None:
    # From the registration API this time: its answers are untrusted too.
    guard.resolves_to("extractor.partner.example", "10.0.0.5", "fd00::5")
    orch = make_orch(EXTRACTOR_ALLOWED_HOSTS="127.0.0.1,extractor.partner.example")
    orch.register("app-1", _hostile("extractor.partner.example"))
    outcome = _accept(orch, orch.event("app-1"))
    assert outcome.state == JobState.FAILED
    assert outcome.reason == (
        "submission refused: extractor host extractor.partner.example resolves to a private address; refused"
    )
    assert "10.0.0.5" not in outcome.reason  # what it resolved to is not told
    assert [r for r in guard.refused if r[0] == "connect"] == []
    assert _terminal_statuses(orch, outcome.job_id) == ["Failed"]


@pytest.mark.parametrize("setting", ["AzureWebJobsStorage", "EXTRACTOR_TOKENS", "DataStorage"])
def test_auth_setting_naming_a_non_token_setting_fails_and_sends_nothing(
    make_orch: Callable[..., Orch], guard: Guard, setting: str
) -> None:
    orch = make_orch(
        AzureWebJobsStorage=f"DefaultEndpointsProtocol=https;AccountName=host;{STORAGE_SECRET}",
        EXTRACTOR_TOKENS=EXTRACTOR_SERVICE_SECRET,
    )
    orch.register("app-1", orch.docsai_config(auth={"setting": setting}))
    outcome = _accept(orch, orch.event("app-1"))
    assert outcome.state == JobState.FAILED
    assert outcome.reason == (
        f"the first registered extractor is refused: auth.setting {setting!r} is not one of the settings the "
        "operator declared as extractor tokens (EXTRACTOR_TOKEN_SETTINGS); refused, nothing was sent"
    )
    assert orch.docsai.requests() == []
    secrets = (STORAGE_SECRET, EXTRACTOR_SERVICE_SECRET, orch.connection_string)
    everything: list[Seen] = [*orch.docsai.requests(), *orch.registration.requests(), *orch.files.requests()]
    assert not [s for s in everything for secret in secrets if secret in repr(s.headers) + s.body.decode("latin1")]
    assert not [e for e in orch.events_of(outcome.job_id) for secret in secrets if secret in orjson.dumps(e).decode()]
    assert _terminal_statuses(orch, outcome.job_id) == ["Failed"]


def _blob(orch: Orch, container: str, name: str) -> str:
    client = orch.blobs.get_blob_client(container, name)
    client.upload_blob(b'{"secret": "of victim-app"}', overwrite=True)
    return client.url


@pytest.mark.parametrize("where", ["result", "other-app", "encoded-traversal", "backslash"])
def test_docsai_gets_no_sas_for_a_blob_that_is_not_the_events_own(
    make_orch: Callable[..., Orch], guard: Guard, where: str
) -> None:
    orch = make_orch()
    orch.register("attacker-app", orch.docsai_config())
    accepted = orch.source_container
    if where == "result":
        url = _blob(orch, orch.settings.results_container, "victim-app/file-1/job-1/result.json")
        words = f"names container {orch.settings.results_container!r}, not the accepted-files container"
    elif where == "other-app":
        url = _blob(orch, accepted, "victim-app/file-1/secret.pdf")
        words = "outside the event's own client application's prefix (attacker-app/...)"
    elif where == "encoded-traversal":
        _blob(orch, accepted, "victim-app/file-1/secret.pdf")
        base = orch.blobs.get_blob_client(accepted, "x").url.rsplit("/", 1)[0]
        url = f"{base}/attacker-app{quote('/../victim-app/file-1/secret.pdf', safe='')}"
        words = "holds an encoded separator"
    else:
        _blob(orch, accepted, "victim-app/file-1/secret.pdf")
        base = orch.blobs.get_blob_client(accepted, "x").url.rsplit("/", 1)[0]
        url = f"{base}/attacker-app/..\\victim-app/file-1/secret.pdf"
        words = "backslash"
    outcome = _accept(orch, orch.event("attacker-app", fileLocationUrl=url))
    assert outcome.state == JobState.FAILED
    assert outcome.reason.startswith("no signed URL for the file: the fileLocationUrl")
    assert words in outcome.reason
    assert orch.docsai.posts() == []  # no SAS was minted, nothing was posted
    assert _terminal_statuses(orch, outcome.job_id) == ["Failed"]


def test_the_extractor_token_goes_to_a_result_url_only_on_the_polling_origin(
    make_orch: Callable[..., Orch], guard: Guard
) -> None:
    orch = make_orch(RESULT_DOWNLOAD_ALLOWED_HOSTS="127.0.0.1")
    own = orch.docsai
    scripted = own.route

    def route(seen: Seen) -> Reply:
        if seen.path == "/results/r.json":
            return Reply(200, b'{"from": "docsai"}')
        return scripted(seen)

    own.route = route
    orch.files.files["/r.json"] = b'{"from": "elsewhere"}'
    orch.register("app-1", orch.docsai_config())
    for payload in (f"{own.url}/results/r.json", f"{orch.files.url}/r.json"):
        outcome = _accept(orch, orch.event("app-1"))
        job = orch.deps.store.get(outcome.job_id)
        assert job is not None
        own.poll_script[job.run_id] = [Reply(200, {"Status": "complete", "Payload": payload})]
        results = orch.drive()
        assert results[-1].action == "succeeded"
    [same_origin] = own.requests("GET", "/results/")
    assert same_origin.headers["Authorization"] == f"Bearer {DOCSAI_TOKEN}"
    [foreign] = orch.files.requests("GET", "/r.json")
    assert "Authorization" not in foreign.headers
    assert guard.refused == []
