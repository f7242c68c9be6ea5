"""The Azure Functions entry point (Python v2 programming model): one deployment, two roles.

- extractor: the reference extractor's ASGI app (extract_fn) behind ``func.AsgiFunctionApp`` (function
  ``http_app_func``; host.json's routePrefix "" keeps the paths exactly /v1/capabilities and /v1/extract);
- orchestration: the blueprints of submit_fn (Event Hub trigger) and poll_fn (poll queue, sweeper timer,
  cancellation).

``APP_ROLES`` (comma-separated, default "extractor,orchestration") chooses the roles this app runs, so the same
package can be deployed as two apps (infra's deploymentMode "split"). Every function stays a thin adapter over
``shared`` / ``extract_fn``.

The orchestration's parts are built by one composition root (``shared.orchestration.composition``): ``build_app``
makes one ``LazyDeps`` (everything from the environment, at the first invocation) and hands it to both blueprints.
It also builds the one ``Tracing`` (``shared.tracing``: the Azure Monitor distro, configured once, when
``APPLICATIONINSIGHTS_CONNECTION_STRING`` is set; off otherwise) that both roles' spans go through.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import azure.functions as func

import poll_fn.function
import submit_fn.function
from shared.interpreter import unsupported
from shared.orchestration.composition import LazyDeps
from shared.tracing import Tracing

ROLES_SETTING = "APP_ROLES"
ROLES = ("extractor", "orchestration")


def roles_from(env: Mapping[str, str]) -> tuple[str, ...]:
    raw = env.get(ROLES_SETTING, "").strip()
    if not raw:
        return ROLES
    roles = tuple(dict.fromkeys(r.strip().lower() for r in raw.split(",") if r.strip()))
    unknown = [r for r in roles if r not in ROLES]
    if unknown or not roles:
        raise ValueError(f"{ROLES_SETTING}: unknown role(s) {unknown or raw!r}; use one or both of {', '.join(ROLES)}")
    return roles


def build_app(env: Mapping[str, str], *, tracing: Tracing | None = None) -> func.FunctionApp | func.AsgiFunctionApp:
    if (why := unsupported()) is not None:  # the host logs it and indexes no function
        raise RuntimeError(f"refusing to start: {why}")
    roles = roles_from(env)
    tracing = tracing if tracing is not None else Tracing.from_env(env)
    app: func.FunctionApp | func.AsgiFunctionApp
    if "extractor" in roles:
        from extract_fn.app import create_app
        from extract_fn.settings import Settings

        asgi = create_app(Settings.from_env(env), tracing=tracing)
        # The bearer token (EXTRACTOR_TOKENS) is the extractor's authentication, as the contract says.
        app = func.AsgiFunctionApp(app=asgi, http_auth_level=func.AuthLevel.ANONYMOUS)
    else:
        app = func.FunctionApp(http_auth_level=func.AuthLevel.FUNCTION)
    if "orchestration" in roles:
        deps = LazyDeps.from_env(env, tracing=tracing)
        app.register_functions(submit_fn.function.blueprint(deps))
        app.register_functions(poll_fn.function.blueprint(deps))
    return app


app = build_app(os.environ)
