"""The local development host's fixed wiring: Azurite's usual ports, the local extractor, the queue that stands in
for the accepted-files Event Hub, and the settings the handlers read (the same names as in Azure)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Final
from urllib.parse import urlsplit

from shared.orchestration.settings import BINDING_SETTINGS
from tools.azurite import connection_string

ROOT: Final = Path(__file__).resolve().parent.parent
AZURITE_PORTS: Final = (10000, 10001, 10002)
EXTRACTOR_HOST: Final = "127.0.0.1"
EXTRACTOR_PORT: Final = 8790
# A development-only token for the loopback extractor; set DEVHOST_EXTRACTOR_TOKEN to use another.
DEV_TOKEN: Final = os.environ.get("DEVHOST_EXTRACTOR_TOKEN", "local-dev-token")
# The devhost's own storage names (defaults; DEVHOST_ACCEPTED_QUEUE, ACCEPTED_FILES_CONTAINER (the orchestration's
# own setting, which the devhost uploads into) and DEVHOST_EVENTS_TABLE override them, as JOBS_TABLE and POLL_QUEUE
# do the orchestration's: each test has its own).
ACCEPTED_QUEUE: Final = "accepted-files-local"  # stands in for the accepted-files Event Hub
ACCEPTED_CONTAINER: Final = "accepted-files"
EVENTS_TABLE: Final = "devhostevents"  # the status events the host saw, per job, for `devhost status`
REGISTRATION_FILE: Final = Path(__file__).resolve().parent / "registration.local.json"
STATE_DIR: Final = ROOT / ".azurite"


def accepted_queue() -> str:
    return os.environ.get("DEVHOST_ACCEPTED_QUEUE") or ACCEPTED_QUEUE


def accepted_container() -> str:
    return os.environ.get("ACCEPTED_FILES_CONTAINER") or ACCEPTED_CONTAINER


def events_table() -> str:
    return os.environ.get("DEVHOST_EVENTS_TABLE") or EVENTS_TABLE


def azurite_ports() -> tuple[int, int, int]:
    """Azurite's blob, queue and table ports: AZURITE_PORTS, or DEVHOST_AZURITE_PORTS ("B,Q,T", for tests)."""
    raw = os.environ.get("DEVHOST_AZURITE_PORTS")
    if not raw:
        return AZURITE_PORTS
    blob, queue, table = (int(p) for p in raw.split(","))
    return blob, queue, table


def extractor_port() -> int:
    return int(os.environ.get("DEVHOST_EXTRACTOR_PORT") or EXTRACTOR_PORT)


def state_dir() -> Path:
    """Where `devhost run` keeps Azurite's data and pid file: .azurite/, or DEVHOST_STATE_DIR (for tests)."""
    return Path(os.environ.get("DEVHOST_STATE_DIR") or STATE_DIR)


def storage_connection_string() -> str:
    return os.environ.get("AZURITE_CONNECTION_STRING") or connection_string(*azurite_ports())


def extractor_url() -> str:
    return os.environ.get("DEVHOST_EXTRACTOR_URL", f"http://{EXTRACTOR_HOST}:{extractor_port()}")


def local_environment() -> dict[str, str]:
    """The app settings the handlers read, as local.settings.json would give them under `func start`.

    Local use only: the outbound policy is opened for plain http to loopback, the local extractor's host:port is the
    one allowed extractor host, and accepted-file events may carry their registration (SECURITY.md). The settings
    the trigger bindings resolve (%POLL_QUEUE%, ...) are there with their declared defaults, as in Azure."""
    extractor = urlsplit(extractor_url())
    return {
        **{decl.name: decl.default for decl in BINDING_SETTINGS},
        "DataStorage": storage_connection_string(),
        "ACCEPTED_FILES_CONTAINER": accepted_container(),
        "ALLOW_EVENT_REGISTRATION": "true",
        "EXTRACTOR_ALLOWED_HOSTS": f"{extractor.hostname}:{extractor.port or 80}",
        "OUTBOUND_ALLOW_HTTP": "true",
        "OUTBOUND_ALLOW_LOOPBACK": "true",
        "LOOM_DOCUMENT_EXTRACTOR_URL": extractor_url(),
        "LOOM_DOCUMENT_EXTRACTOR_TOKEN": DEV_TOKEN,
        "LOOM_DOCUMENT_EXTRACTOR_TIMEOUT_S": "120",
        "FLUXX_EXTRACTOR_POLL_INTERVAL_MS": "1000",
        "FLUXX_EXTRACTOR_MAX_DELAY_MS": "8000",
        "SWEEPER_SLACK_SECONDS": "30",
        "SUBMIT_RETRY_DELAY_MS": "500",
    }
