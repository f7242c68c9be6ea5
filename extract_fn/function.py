"""The reference extractor inside Azure Functions.

``function_app.py`` serves it with::

    import azure.functions as func
    from extract_fn.function import create_asgi_app

    app = func.AsgiFunctionApp(app=create_asgi_app(), http_auth_level=func.AuthLevel.ANONYMOUS)

with ``host.json``'s ``extensions.http.routePrefix`` set to "" so the paths are exactly /v1/... . The bearer token
(``EXTRACTOR_TOKENS``) is the service's authentication, so the Functions key is not needed (ANONYMOUS). Settings
are read from the app settings once, here: a missing ``EXTRACTOR_TOKENS`` or a bad value fails the function app's
start with a ``SettingsError`` naming the setting. The worker pool starts with the ASGI lifespan (which
``AsgiFunctionApp`` runs before the first request) and its worker processes die with the host's Python worker.
"""

from __future__ import annotations

from starlette.types import ASGIApp

from extract_fn.app import create_app
from extract_fn.settings import Settings


def create_asgi_app() -> ASGIApp:
    """The ASGI app for ``func.AsgiFunctionApp``, configured from the environment."""
    return create_app(Settings.from_env())
