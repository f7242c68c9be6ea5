"""Bearer tokens for extractor, registration and Palantir calls.

A token comes from one of two sources, named in configuration (never the token itself):

- ``{"setting": "DOCSAI_TOKEN"}``: the value of that app setting (in Azure, a Key Vault reference that the platform
  resolves, e.g. ``@Microsoft.KeyVault(SecretUri=https://kv.vault.azure.net/secrets/docsai-token/)``). Only a
  setting the operator declared as an extractor token (``EXTRACTOR_TOKEN_SETTINGS``) may be named: a registration
  naming any other setting (``AzureWebJobsStorage``, ``EXTRACTOR_TOKENS``, ...) is refused, its value never read;
- ``{"scope": "api://docsai/.default"}``: a Microsoft Entra token from ``DefaultAzureCredential.get_token(scope)``
  (the function app's managed identity in Azure; ``AZURE_CLIENT_ID`` picks a user-assigned one).

Errors name the setting or the scope, never a token value. HTTP calls go through ``shared.outbound``.
"""

from __future__ import annotations

from shared.orchestration.settings import EXTRACTOR_TOKEN_SETTINGS, OrchestrationSettings
from shared.orchestration.storage import credential


class TokenError(RuntimeError):
    """No token could be had; the message names the source."""


class TokenRefused(TokenError):
    """The configuration names a setting that is not a declared extractor token (permanent)."""


def token_setting_refusal(settings: OrchestrationSettings, setting: str) -> str | None:
    """Why ``setting`` may not be read as an extractor's bearer token (None: it may)."""
    if setting in settings.extractor_token_settings:
        return None
    return (
        f"auth.setting {setting[:100]!r} is not one of the settings the operator declared as extractor tokens "
        f"({EXTRACTOR_TOKEN_SETTINGS}); refused, nothing was sent"
    )


def bearer_token(settings: OrchestrationSettings, *, setting: str | None = None, scope: str | None = None) -> str:
    if setting:
        refusal = token_setting_refusal(settings, setting)
        if refusal is not None:
            raise TokenRefused(refusal)
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
