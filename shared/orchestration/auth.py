"""Bearer tokens for extractor, registration and Palantir calls, and the shared HTTP session.

A token comes from one of two sources, named in configuration (never the token itself):

- ``{"setting": "DOCSAI_TOKEN"}``: the value of that app setting (in Azure, a Key Vault reference that the platform
  resolves, e.g. ``@Microsoft.KeyVault(SecretUri=https://kv.vault.azure.net/secrets/docsai-token/)``);
- ``{"scope": "api://docsai/.default"}``: a Microsoft Entra token from ``DefaultAzureCredential.get_token(scope)``
  (the function app's managed identity in Azure; ``AZURE_CLIENT_ID`` picks a user-assigned one).

Errors name the setting or the scope, never a token value.
"""

from __future__ import annotations

import requests
from requests.adapters import HTTPAdapter

from shared.orchestration.settings import OrchestrationSettings
from shared.orchestration.storage import credential


class TokenError(RuntimeError):
    """No token could be had; the message names the source."""


def bearer_token(settings: OrchestrationSettings, *, setting: str | None = None, scope: str | None = None) -> str:
    if setting:
        value = settings.secret(setting)
        if not value:
            raise TokenError(f"the token setting {setting} is not set or blank")
        return value
    if scope:
        try:
            return str(credential(settings).get_token(scope).token)
        except Exception as exc:  # azure-identity raises several types; all mean "no token"
            raise TokenError(f"no Microsoft Entra token for scope {scope}: {type(exc).__name__}") from None
    raise TokenError("no token source configured (a setting name or an Entra scope)")


def http_session(settings: OrchestrationSettings) -> requests.Session:
    """One pooled ``requests.Session`` per settings object (thread-safe for independent requests)."""

    def make() -> requests.Session:
        session = requests.Session()
        adapter = HTTPAdapter(pool_connections=16, pool_maxsize=max(16, settings.submit_concurrency), max_retries=0)
        session.mount("http://", adapter)
        session.mount("https://", adapter)
        session.trust_env = False  # proxies from the environment would bypass the result download host checks
        return session

    return settings.cached("http_session", make)
