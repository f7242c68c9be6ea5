"""Registration lookup precedence, validation, caching, retries; bearer tokens from settings and from Entra."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from typing import Any

import pytest

from shared.orchestration.auth import TokenError, bearer_token
from shared.orchestration.registration import (
    ExtractorConfig,
    NoUsableExtractor,
    RegistrationResolver,
    RegistrationUnavailable,
    extractors_from_payload,
)
from shared.orchestration.settings import OrchestrationSettings
from tests.orchestration.conftest import LocalServer, RegistrationServer, Reply

DOCSAI = {
    "extractorType": "DOCSAI",
    "extractionUrl": "https://docsai.example/extract",
    "pollingUrl": "https://docsai.example/poll",
    "auth": {"setting": "DOCSAI_TOKEN"},
}
DBRICKS = {
    "extractorType": "DBRICKS",
    "extractionUrl": "https://dbricks.example/runs",
    "pollingUrl": "https://dbricks.example/runs",
    "agent": "a1",
    "auth": {"scope": "api://dbricks/.default"},
    "jobTrackingConfig": {"maxPollingAttempts": 4, "pollIntervalMs": 1000, "maxDelayMs": 8000},
}


@pytest.fixture
def registration() -> Iterator[RegistrationServer]:
    server = RegistrationServer()
    yield server
    server.close()


def _resolver(server: RegistrationServer, ttl: str = "60", clock: list[float] | None = None) -> RegistrationResolver:
    settings = OrchestrationSettings.from_env(
        {
            "DataStorage": "UseDevelopmentStorage=true",
            "REGISTRATION_API_URL": server.url,
            "REGISTRATION_CACHE_TTL_SECONDS": ttl,
            "SUBMIT_RETRY_DELAY_MS": "1",
            # The registration API is a loopback http server; these registrations name these hosts.
            "OUTBOUND_ALLOW_HTTP": "true",
            "OUTBOUND_ALLOW_LOOPBACK": "true",
            "EXTRACTOR_ALLOWED_HOSTS": "docsai.example,dbricks.example,loom:8080",
            "ALLOW_EVENT_REGISTRATION": "true",
        }
    )
    now = clock if clock is not None else [0.0]
    return RegistrationResolver(settings, monotonic=lambda: now[0], sleep=lambda s: None)


def test_precedence_features_then_extractors_then_api(registration: RegistrationServer) -> None:
    both = {
        "features": [
            {"featureName": "other", "featureConfig": {"extractors": [DOCSAI]}},
            {"featureName": "extractor", "featureConfig": {"extractors": [DBRICKS, DOCSAI]}},
        ],
        "extractors": [DOCSAI],
    }
    assert extractors_from_payload(both) == ("features", [DBRICKS, DOCSAI])
    assert extractors_from_payload({"extractors": [DOCSAI]}) == ("extractors", [DOCSAI])
    empty_feature = {
        "features": [{"featureName": "extractor", "featureConfig": {"extractors": []}}],
        "extractors": [DBRICKS],
    }
    assert extractors_from_payload(empty_feature) == ("extractors", [DBRICKS])
    assert extractors_from_payload({"features": "nope"}) is None

    registration.apps["a-features"] = both
    registration.apps["a-extractors"] = {"extractors": [DOCSAI, DBRICKS]}
    registration.apps["a-fallback"] = {"clientApplicationId": "a-fallback"}
    registration.extractors["a-fallback"] = [DBRICKS]
    registration.extractors["a-wrapped"] = {"extractors": [DOCSAI]}
    r = _resolver(registration)
    assert r.resolve("a-features").extractor_type == "DBRICKS"  # features first; only the first extractor
    assert r.resolve("a-extractors").extractor_type == "DOCSAI"
    assert r.resolve("a-fallback").extractor_type == "DBRICKS"  # GET .../extractors
    assert r.resolve("a-wrapped").extractor_type == "DOCSAI"  # 404 for the app itself, then the fallback
    # The inline payload replaces GET /v1/clientApplication/{id} (the fallback still applies).
    before = len(registration.requests(prefix="/v1/clientApplication/a-inline"))
    assert r.resolve("a-inline", {"extractors": [DBRICKS]}).extractor_type == "DBRICKS"
    assert len(registration.requests(prefix="/v1/clientApplication/a-inline")) == before


def test_validation_of_the_first_extractor(registration: RegistrationServer) -> None:
    r = _resolver(registration)
    with pytest.raises(NoUsableExtractor, match="has no registered extractor"):
        r.resolve("nobody")
    cases: list[tuple[dict[str, Any], str]] = [
        ({**DOCSAI, "extractorType": "OCR"}, "extractorType: Input should be 'DOCSAI', 'DBRICKS' or 'LOOM'"),
        ({**DOCSAI, "extractionUrl": "file:///etc/passwd"}, "extractionUrl: String should match pattern"),
        ({k: v for k, v in DOCSAI.items() if k != "auth"}, "DOCSAI needs auth"),
        ({**DOCSAI, "auth": {"setting": "A", "scope": "b"}}, "auth: Value error, give exactly one"),
        ({**DOCSAI, "jobTrackingConfig": {"maxPollingAttempts": 0}}, "jobTrackingConfig.maxPollingAttempts"),
    ]
    for i, (config, message) in enumerate(cases):
        with pytest.raises(NoUsableExtractor) as info:
            r.resolve(f"x{i}", {"extractors": [config, DOCSAI]})
        assert message in info.value.reason
    with pytest.raises(NoUsableExtractor, match="is a JSON str, not an object"):
        r.resolve("x", {"extractors": ["DOCSAI"]})
    loom = r.resolve("l", {"extractors": [{"extractorType": "loom", "extractionUrl": "http://loom:8080", "x": 1}]})
    assert loom.extractor_type == "LOOM"
    assert loom.model_extra == {"x": 1}
    assert ExtractorConfig.from_json(loom.to_json()) == loom


def test_answers_are_cached_for_the_ttl(registration: RegistrationServer) -> None:
    registration.apps["a"] = {"extractors": [DOCSAI]}
    clock = [100.0]
    r = _resolver(registration, ttl="30", clock=clock)
    r.resolve("a")
    r.resolve("a")
    assert len(registration.requests()) == 1
    clock[0] += 31
    r.resolve("a")
    assert len(registration.requests()) == 2


def test_registration_api_errors(registration: RegistrationServer) -> None:
    registration.apps["a"] = {"extractors": [DOCSAI]}
    registration.failures = [Reply(503), Reply(500), Reply(429), Reply(200, b"not json")]
    assert _resolver(registration).resolve("a").extractor_type == "DOCSAI"  # retried through
    registration.failures = [Reply(500)] * 5
    with pytest.raises(RegistrationUnavailable, match="failed 5 times"):
        _resolver(registration).resolve("a")
    registration.failures = [Reply(403)]
    with pytest.raises(RegistrationUnavailable, match="answered HTTP 403"):
        _resolver(registration).resolve("a")
    unset = RegistrationResolver(OrchestrationSettings.from_env({"DataStorage": "UseDevelopmentStorage=true"}))
    with pytest.raises(RegistrationUnavailable, match="REGISTRATION_API_URL is not set"):
        unset.resolve("a")


# ---------------------------------------------------------------------------------------------------------------
# Tokens


def test_token_from_a_setting() -> None:
    s = OrchestrationSettings.from_env(
        {"DataStorage": "UseDevelopmentStorage=true", "TOK": " abc ", "EXTRACTOR_TOKEN_SETTINGS": "TOK,MISSING"}
    )
    assert bearer_token(s, setting="TOK") == "abc"
    with pytest.raises(TokenError, match="the token setting MISSING is not set or blank"):
        bearer_token(s, setting="MISSING")


def test_token_from_entra_through_default_azure_credential(monkeypatch: pytest.MonkeyPatch) -> None:
    """A local App Service managed-identity endpoint stands in for Entra; DefaultAzureCredential really calls it."""
    seen: list[Any] = []

    def route(request: Any) -> Reply:
        seen.append(request)
        if request.headers.get("X-IDENTITY-HEADER") != "local-secret":
            return Reply(401, {"error": "bad header"})
        resource = request.query["resource"][0]
        expires = str(int(time.time()) + 3600)
        return Reply(
            200,
            {
                "access_token": f"token-for-{resource}",
                "expires_on": expires,
                "resource": resource,
                "token_type": "Bearer",
            },
        )

    msi = LocalServer(route)
    try:
        for name in ("AZURE_CLIENT_SECRET", "AZURE_TENANT_ID", "AZURE_FEDERATED_TOKEN_FILE", "MSI_ENDPOINT"):
            monkeypatch.delenv(name, raising=False)
        monkeypatch.setenv("IDENTITY_ENDPOINT", f"{msi.url}/msi/token")
        monkeypatch.setenv("IDENTITY_HEADER", "local-secret")
        s = OrchestrationSettings.from_env({"DataStorage": "UseDevelopmentStorage=true"})
        assert bearer_token(s, scope="api://dbricks/.default") == "token-for-api://dbricks"
        assert bearer_token(s, scope="api://dbricks/.default") == "token-for-api://dbricks"
        assert len(seen) == 1  # the credential caches its token
        monkeypatch.setenv("IDENTITY_HEADER", "wrong")
        fresh = OrchestrationSettings.from_env({"DataStorage": "UseDevelopmentStorage=true"})
        with pytest.raises(TokenError, match=re.escape("no Microsoft Entra token for scope api://other/.default")):
            bearer_token(fresh, scope="api://other/.default")
    finally:
        msi.close()
