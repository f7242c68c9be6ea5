"""The one outbound policy (shared/outbound.py), call by call: addresses, lookups, redirects, the whole-call
deadline, bearer tokens, compression. Every non-loopback connect or lookup is intercepted (``guard``)."""

from __future__ import annotations

import gzip
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import Any

import pytest

from shared.orchestration.results import ResultError, download_result
from shared.orchestration.settings import OrchestrationSettings
from shared.outbound import Allowlist, Bearer, Outbound, OutboundFailed, OutboundRefused, address_refusal
from tests.orchestration.conftest import LocalServer, Reply
from tests.quiet_http import QuietHTTPServer
from tests.security.outbound_guard import Guard, guard_fixture  # noqa: F401 - the guard fixture

LOCAL = Outbound(allow_http=True, allow_loopback=True)
ANYWHERE = Allowlist(("*.example", "127.0.0.1", "internal.example"), "TEST_HOSTS", "test")

INTERNAL = [
    "169.254.169.254",  # cloud metadata
    "10.0.0.5",
    "192.168.1.1",
    "172.16.0.1",
    "100.64.0.1",  # CGNAT
    "192.0.0.8",  # IETF protocol assignments
    "198.18.0.1",  # benchmarking
    "0.0.0.0",
    "224.0.0.1",
    "240.0.0.1",
    "::ffff:10.0.0.5",  # IPv4-mapped
    "::10.0.0.5",  # IPv4-compatible
    "::ffff:0:a00:5",  # IPv4-translated
    "64:ff9b::a00:5",  # NAT64
    "64:ff9b:1::a00:5",  # local-use NAT64
    "2002:a00:5::",  # 6to4 of 10.0.0.5
    "2001:0:4136:e378:8000:63bf:f5ff:fffa",  # Teredo (client 10.0.0.5)
    "fec0::1",  # site-local
    "fc00::1",  # unique-local
    "fd12:3456::1",
    "fe80::1",
    "ff02::1",
    "::",
    "2001:db8::1",
]


@pytest.mark.parametrize("address", INTERNAL)
def test_every_internal_address_form_is_refused(address: str) -> None:
    assert address_refusal(address) is not None


@pytest.mark.parametrize("address", ["8.8.8.8", "2606:4700:4700::1111", "64:ff9b::808:808", "2002:808:808::1"])
def test_public_addresses_pass(address: str) -> None:
    assert address_refusal(address) is None


def test_loopback_is_refused_unless_the_operator_allows_it(guard: Guard) -> None:
    server = LocalServer(lambda seen: Reply(200, b"{}"))
    try:
        with pytest.raises(OutboundRefused, match="resolves to a loopback address; refused"):
            Outbound(allow_http=True).fetch("GET", f"{server.url}/x", allowed=ANYWHERE, timeout_s=5, body_limit=100)
        with pytest.raises(OutboundRefused, match="plain http; refused"):
            Outbound(allow_loopback=True).fetch("GET", f"{server.url}/x", allowed=ANYWHERE, timeout_s=5, body_limit=9)
        assert server.requests() == []
        assert LOCAL.fetch("GET", f"{server.url}/x", allowed=ANYWHERE, timeout_s=5, body_limit=100).body == b"{}"
    finally:
        server.close()


@pytest.mark.parametrize("addresses", [["10.0.0.5"], ["93.184.215.14", "169.254.169.254"], ["::ffff:127.0.0.1"]])
def test_a_name_resolving_to_any_internal_address_is_refused_before_connecting(
    guard: Guard, addresses: list[str]
) -> None:
    guard.resolves_to("internal.example", *addresses)
    with pytest.raises(OutboundRefused, match=r"internal\.example resolves to a [\w -]+ address; refused"):
        Outbound(allow_http=True).fetch(
            "GET", "http://internal.example/latest/meta-data/", allowed=ANYWHERE, timeout_s=5, body_limit=100
        )
    assert guard.lookups.count("internal.example") == 1  # resolved once: the checked address is the one used
    assert [r for r in guard.refused if r[0] == "connect"] == []


def test_the_checked_address_is_connected_to_with_no_second_lookup(guard: Guard) -> None:
    server = LocalServer(lambda seen: Reply(200, b"ok"))
    try:
        guard.resolves_to("rebind.example", "127.0.0.1")
        url = f"http://rebind.example:{server.port}/r"
        answer = LOCAL.fetch("GET", url, allowed=ANYWHERE, timeout_s=5, body_limit=100)
        assert answer.body == b"ok"
        assert guard.lookups.count("rebind.example") == 1
        assert server.requests()[0].headers["Host"] == f"rebind.example:{server.port}"
    finally:
        server.close()


def test_a_redirect_to_another_port_on_the_same_host_is_refused(guard: Guard) -> None:
    target = LocalServer(lambda seen: Reply(200, b'{"stolen": true}'))
    hop = LocalServer(lambda seen: Reply(302, b"", {"Location": f"http://127.0.0.1:{target.port}/r.json"}))
    try:
        settings = _settings(RESULT_DOWNLOAD_ALLOWED_HOSTS="127.0.0.1")
        with pytest.raises(ResultError) as info:
            download_result(f"{hop.url}/hop", settings)
        assert info.value.permanent
        assert f"redirected to another origin (http://127.0.0.1:{target.port}); refused" in info.value.reason
        assert target.requests() == []
    finally:
        target.close()
        hop.close()


class DripServer:
    """Answers 200 with a Content-Length of ``total`` bytes and sends one byte every ``interval_s``; ``sent`` counts
    the bytes the client took before it hung up, ``finished`` is set when the answer ends either way."""

    def __init__(self, total: int, interval_s: float) -> None:
        self.stop = threading.Event()
        self.finished = threading.Event()
        self.total = total
        self.sent = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self.send_response(200)
                self.send_header("Content-Length", str(total))
                self.end_headers()
                try:
                    for _ in range(total):
                        if outer.stop.wait(interval_s):
                            return
                        self.wfile.write(b"x")
                        self.wfile.flush()
                        outer.sent += 1
                except OSError:
                    return
                finally:
                    outer.finished.set()

        self.httpd = QuietHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def drip() -> Iterator[DripServer]:
    # 1,000 bytes, one each 0.1 s: every read is well within a 1 s timeout, the whole body (100 s) never is, however
    # slow the machine (a drip cannot be faster than its pauses).
    server = DripServer(total=1000, interval_s=0.1)
    yield server
    server.close()


def test_a_slow_body_ends_at_the_whole_call_deadline(guard: Guard, drip: DripServer) -> None:
    with pytest.raises(OutboundFailed) as info:
        LOCAL.fetch("GET", f"{drip.url}/r", allowed=ANYWHERE, timeout_s=1, body_limit=1000)
    assert info.value.deadline
    assert info.value.reason == "no complete answer within the whole-call timeout of 1 s"
    assert drip.finished.wait(120)  # the hang-up reaches the server: it must, how soon does not matter
    assert drip.sent < drip.total  # the client hung up mid-body: it did not wait for each byte in turn


def test_a_slow_result_download_fails_by_its_deadline(guard: Guard, drip: DripServer) -> None:
    settings = _settings(RESULT_DOWNLOAD_ALLOWED_HOSTS="127.0.0.1", RESULT_DOWNLOAD_TIMEOUT_SECONDS="1")
    with pytest.raises(ResultError) as info:
        download_result(f"{drip.url}/r.json", settings)
    assert not info.value.permanent  # a timeout is retried on the next attempts
    assert info.value.reason == "result download failed: no complete answer within the whole-call timeout of 1 s"
    assert drip.finished.wait(120)  # the hang-up reaches the server: it must, how soon does not matter
    assert drip.sent < drip.total


def test_a_bearer_token_goes_only_to_its_own_origin(guard: Guard) -> None:
    a = LocalServer(lambda seen: Reply(200, b"a"))
    b = LocalServer(lambda seen: Reply(200, b"b"))
    try:
        bearer = Bearer.for_url("the-extractor-token", f"{a.url}/poll")
        LOCAL.fetch("GET", f"{a.url}/r", allowed=ANYWHERE, bearer=bearer, timeout_s=5, body_limit=10)
        LOCAL.fetch("GET", f"{b.url}/r", allowed=ANYWHERE, bearer=bearer, timeout_s=5, body_limit=10)
        forged = {"Authorization": "Bearer the-extractor-token"}  # a header cannot smuggle it past the rule
        LOCAL.fetch("GET", f"{b.url}/r", allowed=ANYWHERE, headers=forged, timeout_s=5, body_limit=10)
        assert a.requests()[0].headers["Authorization"] == "Bearer the-extractor-token"
        assert all("Authorization" not in s.headers for s in b.requests())
        assert "the-extractor-token" not in repr(bearer)
    finally:
        a.close()
        b.close()


def test_nothing_is_decompressed(guard: Guard) -> None:
    bomb = gzip.compress(b"\0" * 10_000_000)  # 10 MB of zeros in about 10 KB
    server = LocalServer(lambda seen: Reply(200, bomb, {"Content-Encoding": "gzip"}))
    try:
        answer = LOCAL.fetch("GET", f"{server.url}/r", allowed=ANYWHERE, timeout_s=5, body_limit=1_000_000)
        assert answer.body == bomb
        assert answer.compressed == "gzip"
        assert server.requests()[0].headers["Accept-Encoding"] == "identity"
        with pytest.raises(ResultError, match=r"compressed \(gzip\) although identity was asked"):
            download_result(f"{server.url}/r", _settings(RESULT_DOWNLOAD_ALLOWED_HOSTS="127.0.0.1"))
    finally:
        server.close()


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("ftp://x.example/r", "scheme 'ftp' is not http(s)"),
        ("https://user:pw@x.example/r", "carries credentials"),
        ("https://x.example.evil.io/r", "x.example.evil.io:443 is not in TEST_HOSTS"),
        ("https://x.example/\r\nHost: evil", "whitespace or control characters"),
    ],
)
def test_static_refusals_happen_before_any_lookup(guard: Guard, url: str, words: str) -> None:
    with pytest.raises(OutboundRefused, match=words.replace("(", r"\(").replace(")", r"\)")):
        LOCAL.fetch("GET", url, allowed=ANYWHERE, timeout_s=5, body_limit=10)
    assert guard.lookups == []


def test_the_guard_refuses_non_loopback_connects(guard: Guard) -> None:
    # The guard itself: a public address is refused in this process, before any packet.
    with pytest.raises(OSError), socket.create_connection(("192.0.2.1", 443), timeout=1):
        pass
    assert guard.refused == [("connect", "192.0.2.1")]


def _settings(**env: str) -> OrchestrationSettings:
    return OrchestrationSettings.from_env(
        {"DataStorage": "UseDevelopmentStorage=true", "OUTBOUND_ALLOW_HTTP": "true", "OUTBOUND_ALLOW_LOOPBACK": "true"}
        | env
    )
