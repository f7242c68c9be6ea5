"""The one outbound HTTP transport: every HTTP call the orchestration and the LOOM client make goes through ``fetch``.

Rules, applied to every call (and to every redirect hop):

- **Scheme**: https only; plain http only when the operator allows it (``OUTBOUND_ALLOW_HTTP``, local use).
- **No credentials** in a URL (``https://user:pw@host/``).
- **Host allowlist**: the call names the hosts its destination may be (``Allowlist``: ``host``, ``host:port``,
  ``[v6]:port`` or ``*.domain``); anything else is refused before any lookup.
- **Addresses**: the host is resolved once and *every* address it resolves to is judged by ``address_refusal``:
  loopback (unless ``OUTBOUND_ALLOW_LOOPBACK``, local use), private, shared/CGNAT, link-local, multicast, reserved,
  unspecified, documentation, benchmarking, 192.0.0.0/24, site-local, unique-local and every other non-global
  address is refused, and an IPv4 address embedded in an IPv6 one (mapped, compatible, NAT64, 6to4, Teredo) is
  unwrapped and judged too. The connection goes to an address that was checked: there is no second lookup (DNS
  rebinding cannot swap it).
- **Redirects** are not followed unless the caller allows some, and then only to the same origin (scheme, host and
  port); a redirect anywhere else is refused.
- **One wall-clock deadline** for the whole call, redirects, TLS and the body included: a watchdog shuts the socket
  down when it passes, so a server that drips one byte a second cannot stretch the call (``OutboundFailed`` with
  ``deadline=True``).
- **Size cap**: at most ``body_limit`` bytes of an answer are read (``Answer.overflow`` says there was more).
- **Nothing is decompressed**: ``Accept-Encoding: identity`` is sent and the body is read raw, so a gzip bomb stays
  the size it was sent at (``Answer.compressed`` names an encoding the server used anyway).
- **Bearer tokens** go only to their own origin (``Bearer.origin``): a request to any other origin carries none.
- Proxies from the environment are never used (they would bypass the address checks).

Errors: ``OutboundRefused`` (the policy says no: permanent) and ``OutboundFailed`` (no complete answer: transient).
Their messages name the rule and the setting, never a token, a resolved address or a local detail.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final
from urllib.parse import urlencode, urljoin, urlsplit

import certifi
import urllib3
import urllib3.connection
import urllib3.exceptions

# The operator's switches for local development and tests (never set in Azure).
ALLOW_HTTP_SETTING: Final = "OUTBOUND_ALLOW_HTTP"
ALLOW_LOOPBACK_SETTING: Final = "OUTBOUND_ALLOW_LOOPBACK"

CHUNK: Final = 64 * 1024
REDIRECTS: Final = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS: Final = {"http": 80, "https": 443}

Resolver = Callable[..., Any]
BodyLimit = int | Callable[[int, Mapping[str, str]], int]  # bytes to read, or decided from (status, headers)
Origin = tuple[str, str, int]  # (scheme, host, port), lowercased, default port filled in


class OutboundRefused(Exception):
    """The outbound policy refuses the call (permanent: trying again changes nothing)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class OutboundFailed(Exception):
    """No complete answer: the host did not resolve, the connection failed or broke, or the deadline passed."""

    def __init__(self, reason: str, *, deadline: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.deadline = deadline


# ---------------------------------------------------------------------------------------------------------------
# Addresses

_V4_REFUSED: Final = tuple(
    (ipaddress.ip_network(net), what)
    for net, what in (
        ("0.0.0.0/8", "unspecified"),
        ("10.0.0.0/8", "private"),
        ("100.64.0.0/10", "shared (CGNAT)"),
        ("127.0.0.0/8", "loopback"),
        ("169.254.0.0/16", "link-local"),
        ("172.16.0.0/12", "private"),
        ("192.0.0.0/24", "IETF protocol assignment"),
        ("192.0.2.0/24", "documentation"),
        ("192.88.99.0/24", "6to4 relay anycast"),
        ("192.168.0.0/16", "private"),
        ("198.18.0.0/15", "benchmarking"),
        ("198.51.100.0/24", "documentation"),
        ("203.0.113.0/24", "documentation"),
        ("224.0.0.0/4", "multicast"),
        ("240.0.0.0/4", "reserved"),
    )
)
_V6_REFUSED: Final = tuple(
    (ipaddress.ip_network(net), what)
    for net, what in (
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("64:ff9b:1::/48", "local-use NAT64"),
        ("100::/64", "discard-only"),
        ("2001:2::/48", "benchmarking"),
        ("2001:db8::/32", "documentation"),
        ("fc00::/7", "unique-local"),
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("ff00::/8", "multicast"),
    )
)
_V4_COMPATIBLE: Final = ipaddress.ip_network("::/96")
_V4_TRANSLATED: Final = ipaddress.ip_network("::ffff:0:0:0/96")
_NAT64: Final = ipaddress.ip_network("64:ff9b::/96")


def _low32(ip: ipaddress.IPv6Address) -> ipaddress.IPv4Address:
    return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)


def embedded_ipv4(ip: ipaddress.IPv6Address) -> list[ipaddress.IPv4Address]:
    """Every IPv4 address an IPv6 address carries: mapped, compatible, translated, NAT64, 6to4, Teredo."""
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip in _V4_COMPATIBLE or ip in _V4_TRANSLATED or ip in _NAT64:
        return [_low32(ip)]
    if ip.sixtofour is not None:
        return [ip.sixtofour]
    if ip.teredo is not None:
        return list(ip.teredo)
    return []


def address_refusal(address: str | ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """What kind of non-public address this is (``"private"``, ``"loopback"``, ...), or None for a public one."""
    ip = ipaddress.ip_address(address.split("%", 1)[0] if isinstance(address, str) else address)
    table = _V4_REFUSED if isinstance(ip, ipaddress.IPv4Address) else _V6_REFUSED
    for net, what in table:
        if ip in net:
            return what
    if isinstance(ip, ipaddress.IPv6Address):
        for inner in embedded_ipv4(ip):
            inner_what = address_refusal(inner)
            if inner_what is not None:
                return inner_what
    if not ip.is_global or ip.is_multicast:
        return "non-public"
    return None


# ---------------------------------------------------------------------------------------------------------------
# URLs, origins and allowlists


def origin_of(url: str) -> Origin:
    """``(scheme, host, port)`` of an http(s) URL (``ValueError`` for anything else)."""
    parts = urlsplit(url.strip())
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS or not parts.hostname:
        raise ValueError("not an http(s) URL with a host")
    return scheme, parts.hostname.lower().rstrip("."), parts.port or _DEFAULT_PORTS[scheme]


def host_entry(url: str) -> str:
    """The allowlist entry that admits exactly the host and port of ``url`` (an operator-configured endpoint)."""
    _, host, port = origin_of(url)
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def host_allowed(host: str, port: int, allowed: Iterable[str]) -> bool:
    """Whether ``host:port`` matches an entry: ``host`` (any port), ``host:port``, ``[v6]``/``[v6]:port``,
    ``*.domain`` (any subdomain, not the domain itself)."""
    host = host.lower().rstrip(".").strip("[]")
    for raw in allowed:
        entry = raw.strip().lower()
        if entry.startswith("*."):
            if host.endswith(entry[1:]) and host != entry[2:]:
                return True
            continue
        want_port: str | None = None
        if entry.startswith("["):
            name, _, rest = entry[1:].partition("]")
            if rest.startswith(":"):
                want_port = rest[1:]
        elif entry.count(":") == 1:
            name, _, want_port = entry.partition(":")
        else:
            name = entry
        if name.rstrip(".") == host and (want_port is None or want_port == str(port)):
            return True
    return False


@dataclass(frozen=True, slots=True)
class Allowlist:
    """Where one kind of call may go: ``hosts`` (allowlist entries), named by ``setting`` in refusals;
    ``label`` names the kind of URL in messages (``"result"``, ``"extractor"``, ...)."""

    hosts: tuple[str, ...]
    setting: str
    label: str

    def plus(self, entries: Iterable[str]) -> Allowlist:
        return Allowlist((*self.hosts, *entries), self.setting, self.label)


@dataclass(frozen=True, slots=True)
class Bearer:
    """A bearer token and the only origin it may be sent to."""

    token: str = field(repr=False)
    origin: Origin

    @classmethod
    def for_url(cls, token: str | None, url: str | None) -> Bearer | None:
        if not token or not url:
            return None
        try:
            return cls(token, origin_of(url))
        except ValueError:
            return None


@dataclass(frozen=True, slots=True)
class Target:
    """A URL that passed the static checks: where to connect and what to ask for."""

    url: str
    scheme: str
    host: str
    port: int
    path: str  # path and query, as sent

    @property
    def origin(self) -> Origin:
        return self.scheme, self.host, self.port

    @property
    def host_header(self) -> str:
        name = f"[{self.host}]" if ":" in self.host else self.host
        return name if self.port == _DEFAULT_PORTS[self.scheme] else f"{name}:{self.port}"


# ---------------------------------------------------------------------------------------------------------------
# The transport


@dataclass(frozen=True, slots=True)
class Answer:
    status: int
    headers: Mapping[str, str]
    body: bytes  # at most the body limit
    overflow: bool  # the answer is longer than the limit (by its Content-Length or by what was read)
    url: str  # the URL that answered (after same-origin redirects)

    @property
    def compressed(self) -> str | None:
        """The Content-Encoding the server used although identity was asked for (None: identity)."""
        value = (self.headers.get("Content-Encoding") or "").strip()
        return value[:100] if value and value.lower() != "identity" else None


class _Watchdog:
    """Shuts a call's socket down when the deadline passes, so any read blocked on it returns at once."""

    def __init__(self, deadline: float) -> None:
        self.deadline = deadline
        self.fired = False
        self._lock = threading.Lock()
        self._socks: list[socket.socket] = []
        self._timer: threading.Timer | None = None

    def arm(self, sock: socket.socket) -> None:
        with self._lock:
            self._socks.append(sock)
            if self._timer is None:
                self._timer = threading.Timer(max(0.0, self.deadline - time.monotonic()), self._fire)
                self._timer.daemon = True
                self._timer.start()
            fired = self.fired
        if fired:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            socks = list(self._socks)
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def disarm(self) -> bool:
        """Stop the timer; True when it had already fired (the answer may be cut short: it does not count)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            return self.fired or time.monotonic() >= self.deadline


class _Plain(urllib3.connection.HTTPConnection):
    watchdog: _Watchdog

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        self.watchdog.arm(sock)
        return sock


class _Tls(urllib3.connection.HTTPSConnection):
    watchdog: _Watchdog

    def _new_conn(self) -> socket.socket:
        sock = super()._new_conn()
        self.watchdog.arm(sock)  # before the TLS handshake: a handshake dripped slowly is bounded too
        return sock


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError) or "refused" in str(exc).lower():
        return "the connection was refused"
    if isinstance(exc, urllib3.exceptions.NewConnectionError):  # (a subclass of ConnectTimeoutError in urllib3 2)
        return "the connection failed"
    if isinstance(exc, urllib3.exceptions.ConnectTimeoutError):
        return "the connection timed out"
    if isinstance(exc, TimeoutError | urllib3.exceptions.TimeoutError):
        return "the call timed out"
    if isinstance(exc, ConnectionError):
        return f"the connection failed ({type(exc).__name__})"
    if isinstance(exc, urllib3.exceptions.SSLError):
        return "the TLS handshake failed (the certificate does not verify for this host?)"
    return f"the answer broke off ({type(exc).__name__})"


@dataclass(frozen=True)
class Outbound:
    """The address policy (operator switches for local use) and the resolver; ``fetch`` makes one call under it."""

    allow_http: bool = False
    allow_loopback: bool = False
    resolver: Resolver | None = field(default=None, repr=False, compare=False)  # None: socket.getaddrinfo

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Outbound:
        """The policy from the operator's settings (``OUTBOUND_ALLOW_HTTP``/``_LOOPBACK``: true/false, default false);
        a value that is neither raises ``ValueError`` naming the setting."""
        flags: dict[str, bool] = {}
        for key, name in (("allow_http", ALLOW_HTTP_SETTING), ("allow_loopback", ALLOW_LOOPBACK_SETTING)):
            raw = (env.get(name) or "").strip().lower()
            if raw in ("", "0", "false", "no", "off"):
                flags[key] = False
            elif raw in ("1", "true", "yes", "on"):
                flags[key] = True
            else:
                raise ValueError(f"{name}: must be true or false")
        return cls(allow_http=flags["allow_http"], allow_loopback=flags["allow_loopback"])

    # -- the static checks -------------------------------------------------------------------------------------

    def check_url(self, url: str, allowed: Allowlist) -> Target:
        """Scheme, credentials and allowlist (no lookup); ``OutboundRefused`` says which rule a URL breaks."""
        label = allowed.label
        text = url.strip()
        if any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in text):
            raise OutboundRefused(f"{label} URL holds whitespace or control characters; refused")
        parts = urlsplit(text)
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS:
            raise OutboundRefused(f"{label} URL scheme {scheme!r} is not http(s)")
        if scheme == "http" and not self.allow_http:
            raise OutboundRefused(f"{label} URL is plain http; refused ({ALLOW_HTTP_SETTING} is off)")
        if "@" in parts.netloc:
            raise OutboundRefused(f"{label} URL carries credentials; refused")
        host = (parts.hostname or "").lower().rstrip(".")
        if not host:
            raise OutboundRefused(f"{label} URL has no host")
        try:
            port = parts.port or _DEFAULT_PORTS[scheme]
        except ValueError:
            raise OutboundRefused(f"{label} URL has an invalid port") from None
        if not host_allowed(host, port, allowed.hosts):
            shown = f"[{host}]" if ":" in host else host
            raise OutboundRefused(f"{label} host {shown}:{port} is not in {allowed.setting}; refused")
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        return Target(text, scheme, host, port, path)

    def addresses(self, target: Target, label: str) -> list[str]:
        """Resolve the target's host once and judge every address; the checked addresses, to connect to."""
        resolver = self.resolver or socket.getaddrinfo
        try:
            infos = resolver(target.host, target.port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as exc:
            raise OutboundFailed(f"{label} host {target.host} does not resolve ({type(exc).__name__})") from None
        checked: list[str] = []
        for info in infos:
            raw = str(info[4][0]).split("%", 1)[0]
            what = address_refusal(raw)
            if what == "loopback" and self.allow_loopback:
                what = None
            if what is not None:
                hint = f" ({ALLOW_LOOPBACK_SETTING} is off)" if what == "loopback" else ""
                raise OutboundRefused(f"{label} host {target.host} resolves to a {what} address; refused{hint}")
            if raw not in checked:
                checked.append(raw)
        if not checked:
            raise OutboundFailed(f"{label} host {target.host} has no address")
        return checked

    # -- one call ----------------------------------------------------------------------------------------------

    def fetch(
        self,
        method: str,
        url: str,
        *,
        allowed: Allowlist,
        timeout_s: float,
        body_limit: BodyLimit,
        headers: Mapping[str, str] | None = None,
        params: Iterable[tuple[str, str]] | Mapping[str, str] = (),
        data: bytes | None = None,
        bearer: Bearer | None = None,
        max_redirects: int = 0,
    ) -> Answer:
        """Make one call under every rule above. ``max_redirects`` > 0: follow that many same-origin redirects
        (a GET only); else a 3xx is returned as the answer. Raises ``OutboundRefused`` or ``OutboundFailed``."""
        deadline = time.monotonic() + timeout_s
        query = urlencode(list(params.items()) if isinstance(params, Mapping) else list(params))
        current = url if not query else f"{url}{'&' if '?' in url else '?'}{query}"
        first: Origin | None = None
        for _hop in range(max_redirects + 1):
            if first is not None:
                try:
                    hop = origin_of(current)
                except ValueError:
                    hop = ("", "", 0)
                if hop != first:
                    raise OutboundRefused(
                        f"{allowed.label} URL redirected to another origin ({hop[0]}://{hop[1]}:{hop[2]}); refused "
                        "(a redirect must keep the scheme, host and port)"
                    )
            target = self.check_url(current, allowed)
            first = target.origin
            sent = {str(k): str(v) for k, v in (headers or {}).items() if k.lower() != "authorization"}
            sent["Host"] = target.host_header
            sent["Accept-Encoding"] = "identity"
            if bearer is not None and bearer.origin == target.origin:
                sent["Authorization"] = f"Bearer {bearer.token}"
            answer = self._once(_Call(method, target, sent, data, deadline, timeout_s, body_limit, allowed.label))
            if max_redirects and answer.status in REDIRECTS and method.upper() == "GET":
                location = answer.headers.get("Location")
                if not location:
                    raise OutboundRefused(f"{allowed.label} URL answered HTTP {answer.status} without Location")
                current = urljoin(target.url, location)
                continue
            return answer
        raise OutboundRefused(f"{allowed.label} URL redirected more than {max_redirects} times")

    def _once(self, call: _Call) -> Answer:
        target, deadline = call.target, call.deadline
        addresses = self.addresses(target, call.label)
        watchdog = _Watchdog(deadline)
        last: BaseException | None = None
        try:
            for address in addresses:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                conn: urllib3.connection.HTTPConnection
                if target.scheme == "https":
                    conn = _Tls(
                        address,
                        target.port,
                        timeout=remaining,
                        server_hostname=target.host,
                        cert_reqs="CERT_REQUIRED",
                        ca_certs=certifi.where(),
                    )
                else:
                    conn = _Plain(address, target.port, timeout=remaining)
                conn.watchdog = watchdog
                try:
                    try:
                        conn.connect()
                    except (OSError, urllib3.exceptions.HTTPError) as exc:
                        last = exc  # try the next checked address
                        continue
                    return _exchange(conn, call, watchdog)
                finally:
                    conn.close()
        finally:
            fired = watchdog.disarm()
        if fired or (deadline - time.monotonic()) <= 0:
            raise _deadline(call.timeout_s)
        raise OutboundFailed(_describe(last) if last is not None else "the connection failed")


@dataclass(frozen=True, slots=True)
class _Call:
    method: str
    target: Target
    headers: dict[str, str]
    data: bytes | None
    deadline: float
    timeout_s: float
    body_limit: BodyLimit
    label: str


def _exchange(conn: urllib3.connection.HTTPConnection, call: _Call, watchdog: _Watchdog) -> Answer:
    """Send the request on a connected ``conn`` and read the answer up to its limit, raw."""
    target, body_limit = call.target, call.body_limit
    try:
        conn.request(
            call.method, target.path, body=call.data, headers=call.headers, preload_content=False, decode_content=False
        )
        resp = conn.getresponse()
        status, resp_headers = resp.status, resp.headers
        limit = max(0, body_limit(status, resp_headers) if callable(body_limit) else body_limit)
        declared = (resp_headers.get("Content-Length") or "").strip()
        if limit == 0 or (declared.isdigit() and int(declared) > limit):
            body, overflow = b"", limit > 0
        else:
            buf = bytearray()
            while len(buf) <= limit:
                chunk = resp.read(min(CHUNK, limit + 1 - len(buf)), decode_content=False)
                if not chunk:
                    break
                buf += chunk
            overflow = len(buf) > limit
            body = bytes(buf[:limit])
    except (OSError, urllib3.exceptions.HTTPError, ValueError) as exc:
        if watchdog.disarm():
            raise _deadline(call.timeout_s) from None
        raise OutboundFailed(_describe(exc)) from None
    if watchdog.disarm():  # the socket was shut under a read: what was read may be cut short
        raise _deadline(call.timeout_s)
    return Answer(status, resp_headers, body, overflow, target.url)


def _deadline(timeout_s: float) -> OutboundFailed:
    return OutboundFailed(f"no complete answer within the whole-call timeout of {timeout_s:g} s", deadline=True)


def loopback_listening(port: int, host: str = "127.0.0.1", timeout_s: float = 0.3) -> bool:
    """Whether something listens on a loopback port (the dev host's probe); refuses any non-loopback host."""
    if address_refusal(host) != "loopback":
        raise ValueError("only a loopback address may be probed")
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=timeout_s):
        return True
    return False


__all__ = [
    "ALLOW_HTTP_SETTING",
    "ALLOW_LOOPBACK_SETTING",
    "Allowlist",
    "Answer",
    "Bearer",
    "Outbound",
    "OutboundFailed",
    "OutboundRefused",
    "Target",
    "address_refusal",
    "embedded_ipv4",
    "host_allowed",
    "host_entry",
    "loopback_listening",
    "origin_of",
]
