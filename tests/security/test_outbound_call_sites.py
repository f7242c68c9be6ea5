"""Every outbound HTTP call goes through shared/outbound.py: no other module of the service builds an HTTP client,
opens a socket or resolves a name itself (read from the source, so a new call site fails here)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
SOURCES = ["shared", "extract_fn", "submit_fn", "poll_fn", "devhost", "function_app.py"]
THE_TRANSPORT = ROOT / "shared" / "outbound.py"

# Modules that make HTTP calls or open connections (the Azure SDKs talk only to the operator's storage, Event Hubs
# and Entra endpoints, through their own pipelines; they are not this list's concern).
CLIENT_MODULES = ("requests", "urllib3", "httpx", "aiohttp", "http.client", "urllib.request", "pycurl", "socket")
SOCKET_CALLS = {"create_connection", "getaddrinfo", "socket", "gethostbyname", "connect"}


def _sources() -> list[Path]:
    files: list[Path] = []
    for name in SOURCES:
        path = ROOT / name
        files.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return [f for f in files if f != THE_TRANSPORT]


def _call_sites(path: Path) -> list[str]:
    return _sites_in(path.read_text(), path.relative_to(ROOT).as_posix())


def _sites_in(source: str, where: str) -> list[str]:
    tree = ast.parse(source, filename=where)
    found: list[str] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            if any(name == m or name.startswith(m + ".") for m in CLIENT_MODULES):
                found.append(f"{where}:{node.lineno}: imports {name}")
                break
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id == "socket"
            and node.attr in SOCKET_CALLS
        ):
            found.append(f"{where}:{node.lineno}: socket.{node.attr}")
    return found


def test_no_http_call_site_outside_the_outbound_module() -> None:
    sources = _sources()
    assert len(sources) > 50  # the scan sees the code
    sites = [site for path in sources for site in _call_sites(path)]
    assert sites == [], "HTTP clients or sockets outside shared/outbound.py:\n" + "\n".join(sites)


def test_the_scan_finds_what_it_looks_for() -> None:
    sample = "import requests\nfrom urllib3 import PoolManager\nimport http.client\nimport socket\nsocket.connect\n"
    assert len(_sites_in(sample, "sample.py")) == 5
    assert _call_sites(THE_TRANSPORT)  # the transport itself is what the scan would find
