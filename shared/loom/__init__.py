"""The LOOM extractor client: the server side of extractor contract v1 (docs/loom-client.md)."""

from shared.loom.client import LoomClient, LoomPlan, LoomResult, LoomUnavailable
from shared.loom.settings import (
    DEFAULT_MAX_ARTIFACT_BYTES,
    DEFAULT_TIMEOUT_S,
    LoomRoutingError,
    LoomSettings,
    LoomSettingsError,
    Route,
    load_loom_settings,
    normalize_url,
)

__all__ = [
    "DEFAULT_MAX_ARTIFACT_BYTES",
    "DEFAULT_TIMEOUT_S",
    "LoomClient",
    "LoomPlan",
    "LoomResult",
    "LoomRoutingError",
    "LoomSettings",
    "LoomSettingsError",
    "LoomUnavailable",
    "Route",
    "load_loom_settings",
    "normalize_url",
]
