"""A connect guard for the outbound tests: every non-loopback connect and lookup is recorded and refused in this
process, so no packet leaves the machine; a test can make a host name resolve to chosen (internal) addresses."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass, field
from typing import Any

import pytest


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host.split("%", 1)[0]).is_loopback
    except ValueError:
        return host == "localhost"


@dataclass
class Guard:
    fake_dns: dict[str, list[str]] = field(default_factory=dict)  # host name -> the addresses it "resolves" to
    lookups: list[str] = field(default_factory=list)  # every name or address looked up
    refused: list[Any] = field(default_factory=list)  # every non-loopback connect or lookup attempted

    def resolves_to(self, host: str, *addresses: str) -> None:
        self.fake_dns[host] = list(addresses)


@pytest.fixture(name="guard")
def guard_fixture(monkeypatch: pytest.MonkeyPatch) -> Guard:
    """Import ``guard_fixture`` into a test module to use the ``guard`` fixture there."""
    g = Guard()
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect
    real_create = socket.create_connection

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        g.lookups.append(name)
        if name in g.fake_dns:
            out = []
            for address in g.fake_dns[name]:
                family = socket.AF_INET6 if ":" in address else socket.AF_INET
                sockaddr = (address, int(port or 0), 0, 0) if family == socket.AF_INET6 else (address, int(port or 0))
                out.append((family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", sockaddr))
            return out
        try:
            ipaddress.ip_address(name.split("%", 1)[0])
        except ValueError:
            if name != "localhost":
                g.refused.append(("lookup", name))
                raise socket.gaierror(socket.EAI_NONAME, "lookups leave the machine: refused in tests") from None
        return real_getaddrinfo(host, port, *args, **kwargs)

    def connect(self: socket.socket, address: Any) -> Any:
        if isinstance(address, tuple) and not _is_loopback(str(address[0])):
            g.refused.append(("connect", address[0]))
            raise ConnectionRefusedError("non-loopback connect refused in tests")
        return real_connect(self, address)

    def create_connection(address: Any, *args: Any, **kwargs: Any) -> Any:
        if not _is_loopback(str(address[0])):
            g.refused.append(("connect", address[0]))
            raise ConnectionRefusedError("non-loopback connect refused in tests")
        return real_create(address, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket, "create_connection", create_connection)
    return g
