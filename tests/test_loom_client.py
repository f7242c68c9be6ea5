"""The LOOM client (server side of extractor contract v1) against real local HTTP services that misbehave on demand."""

from __future__ import annotations

import copy
import socket
from collections.abc import Iterator
from typing import Any

import orjson
import pytest

from shared.contract import CAPABILITIES_TTL_S, FORMATS, MAX_ERROR_BODY_BYTES, ErrorCode, Verdict
from shared.loom import (
    DEFAULT_MAX_ARTIFACT_BYTES,
    DEFAULT_TIMEOUT_S,
    LoomClient,
    LoomResult,
    LoomRoutingError,
    LoomSettings,
    LoomSettingsError,
    LoomUnavailable,
    load_loom_settings,
    normalize_url,
)
from shared.outbound import Allowlist, Outbound
from tests.loom_fake_server import FakeExtractor, Reply, capabilities_doc, error_reply, minimal_artifact
from tests.timeouts import HANG_TIMEOUT_S

TOKEN = "default-token-Zq8xT"
TOKEN_A = "token-of-service-a-Jk2"
TOKEN_B = "token-of-service-b-Pw9"
DATA = b"hello\n"  # 6 bytes, 1 line: minimal_artifact's locators fit it

URL = "LOOM_DOCUMENT_EXTRACTOR_URL"
ROUTES = "LOOM_DOCUMENT_EXTRACTORS_JSON"
TOK = "LOOM_DOCUMENT_EXTRACTOR_TOKEN"
TOKS = "LOOM_DOCUMENT_EXTRACTOR_TOKENS_JSON"
TIMEOUT = "LOOM_DOCUMENT_EXTRACTOR_TIMEOUT_S"
MAXART = "LOOM_DOCUMENT_EXTRACTOR_MAX_ARTIFACT_BYTES"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def fake() -> Iterator[FakeExtractor]:
    with FakeExtractor() as server:
        yield server


# The fake services are plain http on loopback: the outbound policy allows both only when told to, and a
# registration's own URL only on the allowlist it is given.
LOCAL = {
    "outbound": Outbound(allow_http=True, allow_loopback=True),
    "registration_hosts": Allowlist(("127.0.0.1",), "EXTRACTOR_ALLOWED_HOSTS", "extractor"),
}


def settings_for(url: str, **env: str) -> LoomSettings:
    base = {URL: url, TOK: TOKEN, TIMEOUT: "5"}
    base.update(env)
    return load_loom_settings(base)


def client_for(url: str, clock: FakeClock | None = None, **env: str) -> LoomClient:
    return LoomClient(settings_for(url, **env), clock=clock or FakeClock(), **LOCAL)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def assert_no_token(*texts: str) -> None:
    for text in texts:
        for token in (TOKEN, TOKEN_A, TOKEN_B):
            assert token not in text


# ---------------------------------------------------------------------------------------------------------------
# Settings


def test_settings_defaults_when_nothing_is_set() -> None:
    s = load_loom_settings({})
    assert s.default_url is None
    assert dict(s.routes) == {}
    assert s.token is None
    assert s.timeout_s == DEFAULT_TIMEOUT_S == 60.0
    assert s.max_artifact_bytes == DEFAULT_MAX_ARTIFACT_BYTES == 256 * 1024 * 1024


def test_settings_blank_values_mean_unset() -> None:
    s = load_loom_settings({URL: "  ", ROUTES: "", TOK: "", TIMEOUT: " ", MAXART: ""})
    assert s.default_url is None
    assert s.timeout_s == 60.0


def test_settings_read_and_normalised() -> None:
    s = load_loom_settings(
        {
            URL: "HTTP://Extractor:80/",
            ROUTES: '{"pdf": "http://pdf-extractor:8080/", "Text/CSV": "https://csv.example:443/loom/"}',
            TOK: TOKEN,
            TOKS: '{"http://pdf-extractor:8080": "' + TOKEN_A + '"}',
            TIMEOUT: "2.5",
            MAXART: "1048576",
        }
    )
    assert s.default_url == "http://extractor"
    assert dict(s.routes) == {"pdf": "http://pdf-extractor:8080", "text/csv": "https://csv.example/loom"}
    assert s.timeout_s == 2.5
    assert s.max_artifact_bytes == 1048576
    assert s.tokens["http://pdf-extractor:8080"].get_secret_value() == TOKEN_A
    assert s.token is not None
    assert s.token.get_secret_value() == TOKEN


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("http://x:8790/", "http://x:8790"),
        ("http://x:8790", "http://x:8790"),
        ("HTTPS://Host.Example:443/a/b//", "https://host.example/a/b"),
        ("http://[::1]:8080/", "http://[::1]:8080"),
    ],
)
def test_normalize_url(raw: str, expected: str) -> None:
    assert normalize_url(raw) == expected


def problems_of(env: dict[str, str]) -> LoomSettingsError:
    with pytest.raises(LoomSettingsError) as info:
        load_loom_settings(env)
    return info.value


@pytest.mark.parametrize(
    ("env", "setting", "words"),
    [
        ({ROUTES: '{"pdfx": "http://a"}'}, ROUTES, "'pdfx' names no format"),
        ({ROUTES: '{"PDF": "http://a"}'}, ROUTES, "format names are lowercase"),
        ({ROUTES: '{"text/unknown": "http://a"}'}, ROUTES, "names no format"),
        ({ROUTES: '{"text/csv": "http://a", "Text/CSV": "http://b"}'}, ROUTES, "two spellings of the media type"),
        ({ROUTES: '{"text/csv": "http://a", "text/csv; charset=utf-8": "http://b"}'}, ROUTES, "two spellings"),
        ({ROUTES: '{"pdf": "http://a", "pdf": "http://b"}'}, ROUTES, "given twice"),
        ({ROUTES: '{"pdf": 5}'}, ROUTES, "must be a base URL string"),
        ({ROUTES: '{"pdf": "ftp://a"}'}, ROUTES, "not an http:// or https:// URL"),
        ({ROUTES: "{not json"}, ROUTES, "is not valid JSON"),
        ({ROUTES: '["pdf"]'}, ROUTES, "must be a JSON object"),
        ({URL: "extractor:8790"}, URL, "not an http:// or https:// URL"),
        ({URL: "http://"}, URL, "names no host"),
        ({URL: "http://x/?a=1"}, URL, "no query or fragment"),
        ({URL: "http://x:notaport"}, URL, "invalid port"),
        ({URL: "http://a b"}, URL, "whitespace"),
        ({TOK: "two words"}, TOK, "no spaces"),
        ({URL: "http://a", TOKS: '{"http://b": "tok"}'}, TOKS, "not a base URL that"),
        ({URL: "http://a", TOKS: '{"http://a": "tok", "http://a/": "tok2"}'}, TOKS, "given twice"),
        ({URL: "http://a", TOKS: '{"http://a": ""}'}, TOKS, "printable ASCII"),
        ({URL: "http://a", TOKS: "{bad"}, TOKS, "is not valid JSON"),
        ({TIMEOUT: "abc"}, TIMEOUT, "not a number of seconds"),
        ({TIMEOUT: "0"}, TIMEOUT, "positive, finite"),
        ({TIMEOUT: "-1"}, TIMEOUT, "positive, finite"),
        ({TIMEOUT: "nan"}, TIMEOUT, "positive, finite"),
        ({TIMEOUT: "inf"}, TIMEOUT, "positive, finite"),
        ({MAXART: "1.5"}, MAXART, "whole number of bytes"),
        ({MAXART: "-3"}, MAXART, "whole number of bytes"),
        ({MAXART: "0"}, MAXART, "at least 1 byte"),
        ({MAXART: "lots"}, MAXART, "whole number of bytes"),
    ],
)
def test_settings_refused_at_load(env: dict[str, str], setting: str, words: str) -> None:
    err = problems_of(env)
    assert err.settings == (setting,)
    assert words in str(err)
    assert str(err).startswith(f"{setting}: ")


def test_settings_report_every_problem_at_once() -> None:
    err = problems_of({URL: "nope", ROUTES: '{"bogus": "http://a"}', TIMEOUT: "x", MAXART: "y"})
    assert set(err.settings) == {URL, ROUTES, TIMEOUT, MAXART}


def test_token_url_may_be_any_routed_url_in_any_spelling() -> None:
    s = load_loom_settings(
        {ROUTES: '{"application/pdf": "http://pdf:8080"}', TOKS: '{"HTTP://PDF:8080/": "' + TOKEN_A + '"}'}
    )
    assert s.token_for("http://pdf:8080/").get_secret_value() == TOKEN_A  # type: ignore[union-attr]


def test_tokens_never_shown_by_settings_or_their_errors() -> None:
    s = load_loom_settings({URL: "http://a", TOK: TOKEN, TOKS: '{"http://a": "' + TOKEN_A + '"}'})
    assert_no_token(repr(s), str(s), repr(s.route("pdf")), repr(LoomClient(s)))
    # A token URL that routing does not name, a bad token, bad JSON holding a token, credentials in a URL.
    for env in (
        {URL: "http://a", TOKS: '{"http://elsewhere": "' + TOKEN_A + '"}'},
        {URL: "http://a", TOKS: '{"http://a": "' + TOKEN_A + ' x"}'},
        {URL: "http://a", TOKS: '{"http://a": "' + TOKEN_A + '",}'},
        {URL: "http://a", TOK: TOKEN + "\n" + TOKEN},
        {URL: f"http://user:{TOKEN}@a"},
        {ROUTES: '{"pdf": "http://u:' + TOKEN_B + '@b"}'},
    ):
        err = problems_of(env)
        assert_no_token(str(err), repr(err), repr(err.problems))


# ---------------------------------------------------------------------------------------------------------------
# Routing


def test_routing_precedence() -> None:
    s = load_loom_settings(
        {
            URL: "http://default",
            ROUTES: orjson.dumps(
                {"csv": "http://csv-format", "text/csv": "http://csv-type", "text/x-sql": "http://sql-type"}
            ).decode(),
        }
    )
    # A format's key wins over its media type's.
    assert s.route("csv", "text/csv").base_url == "http://csv-format"
    # The media type's key applies to files of that media type routed as its format...
    assert s.route("sql", "text/x-sql").base_url == "http://sql-type"
    assert s.route("sql", "Text/X-SQL; charset=utf-8").base_url == "http://sql-type"
    # ...not to another media type of the same format, nor to a file of that media type routed as another format.
    assert s.route("sql", "application/sql").base_url == "http://default"
    assert s.route("sql").base_url == "http://default"
    assert s.route("text", "text/x-sql").base_url == "http://default"
    # Either over the default URL.
    assert s.route("pdf", "application/pdf").base_url == "http://default"
    # A registration's own URL wins over all of them.
    assert s.route("csv", "text/csv", override_url="http://own/").base_url == "http://own"


def test_routing_without_default_url() -> None:
    s = load_loom_settings({ROUTES: '{"pdf": "http://pdf"}'})
    assert s.route("pdf").base_url == "http://pdf"
    with pytest.raises(LoomRoutingError, match=URL):
        s.route("markdown")
    with pytest.raises(LoomRoutingError, match="registration"):
        s.route("markdown", override_url="ftp://x")
    with pytest.raises(ValueError, match="not a format"):
        s.route("docm")


def test_route_tokens() -> None:
    s = load_loom_settings(
        {
            URL: "http://default",
            ROUTES: '{"pdf": "http://a", "csv": "http://b"}',
            TOK: TOKEN,
            TOKS: '{"http://a": "' + TOKEN_A + '"}',
        }
    )
    a = s.route("pdf").token
    assert a is not None
    assert a.get_secret_value() == TOKEN_A  # its own
    b = s.route("csv").token
    assert b is not None
    assert b.get_secret_value() == TOKEN  # none of its own: the default token
    d = s.route("text").token
    assert d is not None
    assert d.get_secret_value() == TOKEN
    # A URL only a registration names never receives the shared default token.
    assert s.route("text", override_url="http://registration-only").token is None
    # A registration naming a routed URL gets that URL's token.
    own = s.route("text", override_url="http://a/").token
    assert own is not None
    assert own.get_secret_value() == TOKEN_A


def test_no_route_is_unavailable_and_calls_nothing(fake: FakeExtractor) -> None:
    client = LoomClient(load_loom_settings({TIMEOUT: "5"}), clock=FakeClock(), **LOCAL)
    res = client.extract(DATA, format="markdown")
    assert res.verdict is Verdict.UNAVAILABLE
    assert URL in res.message
    assert res.service_url is None
    assert fake.received == []


def test_unknown_format_is_refused(fake: FakeExtractor) -> None:
    res = client_for(fake.url).extract(DATA, format="docm")
    assert (res.verdict, res.code) == (Verdict.REFUSED, ErrorCode.UNSUPPORTED_FORMAT.value)
    assert fake.received == []


def test_each_service_gets_its_own_token_and_route() -> None:
    with FakeExtractor() as default, FakeExtractor() as a, FakeExtractor() as b:
        client = LoomClient(
            load_loom_settings(
                {
                    URL: default.url,
                    ROUTES: orjson.dumps({"markdown": a.url + "/", "text/csv": b.url}).decode(),
                    TOK: TOKEN,
                    TOKS: orjson.dumps({a.url: TOKEN_A, b.url + "/": TOKEN_B}).decode(),
                    TIMEOUT: "5",
                }
            ),
            clock=FakeClock(),
            **LOCAL,
        )
        assert client.extract(DATA, format="markdown").ok
        assert client.extract(DATA, format="csv", media_type="text/csv").ok
        assert client.extract(DATA, format="text").ok
        assert client.extract(DATA, format="csv", media_type="application/octet-stream").ok
        for server, token, formats in ((a, TOKEN_A, ["markdown"]), (b, TOKEN_B, ["csv"])):
            assert [r.query["format"][0] for r in server.calls()] == formats
            assert {r.headers["authorization"] for r in server.received} == {f"Bearer {token}"}
        assert [r.query["format"][0] for r in default.calls()] == ["text", "csv"]
        assert {r.headers["authorization"] for r in default.received} == {f"Bearer {TOKEN}"}


def test_registration_url_and_token(fake: FakeExtractor) -> None:
    with FakeExtractor() as own:
        client = client_for(fake.url)
        res = client.extract(DATA, format="markdown", base_url=own.url + "/", token=TOKEN_B)
        assert res.ok
        assert res.service_url == own.url
        assert {r.headers["authorization"] for r in own.received} == {f"Bearer {TOKEN_B}"}
        # Without a token of its own, a registration-only URL gets no Authorization at all.
        client.extract(DATA, format="markdown", base_url=own.url)
        assert "authorization" not in own.calls()[-1].headers
        assert fake.received == []


# ---------------------------------------------------------------------------------------------------------------
# The calls as sent


def test_headers_and_query_sent(fake: FakeExtractor) -> None:
    client = client_for(fake.url)
    res = client.extract(
        DATA, format="sql", name="dump ü/1.sql", media_type="application/sql", encoding="latin-1", sql_dialect="tsql"
    )
    assert res.ok, res
    (caps,) = fake.calls("/v1/capabilities")
    (ext,) = fake.calls()
    for rec in (caps, ext):
        assert rec.headers["authorization"] == f"Bearer {TOKEN}"
        assert rec.headers["accept-encoding"] == "identity"
    assert caps.method == "GET"
    assert ext.method == "POST"
    assert ext.headers["content-type"] == "application/octet-stream"
    assert ext.body == DATA
    assert ext.query == {
        "format": ["sql"],
        "name": ["dump ü/1.sql"],
        "encoding": ["latin-1"],
        "sql_dialect": ["tsql"],
    }


def test_empty_name_is_sent_and_unset_options_are_not(fake: FakeExtractor) -> None:
    assert client_for(fake.url).extract(DATA, format="markdown", encoding="").ok
    (ext,) = fake.calls()
    assert ext.query == {"format": ["markdown"], "name": [""]}


def test_option_the_service_does_not_take_is_refused_unsent(fake: FakeExtractor) -> None:
    fake.capabilities = capabilities_doc(options={"markdown": [], "sql": ["encoding"]})
    client = client_for(fake.url)
    res = client.extract(DATA, format="markdown", encoding="utf-8")
    assert (res.verdict, res.code) == (Verdict.REFUSED, "invalid_option")
    res = client.extract(DATA, format="sql", sql_dialect="tsql")
    assert (res.verdict, res.code) == (Verdict.REFUSED, "invalid_option")
    res = client.extract(DATA, format="pdf", encoding="utf-8")  # the contract gives PDF no options
    assert (res.verdict, res.code) == (Verdict.REFUSED, "invalid_option")
    assert fake.calls() == []
    assert client.extract(DATA, format="sql", encoding="utf-8").ok


# ---------------------------------------------------------------------------------------------------------------
# Capabilities


def test_capabilities_cached_and_read_again_after_a_minute(fake: FakeExtractor) -> None:
    clock = FakeClock()
    client = client_for(fake.url, clock=clock)
    assert client.extract(DATA, format="markdown").ok
    assert client.extract(DATA, format="markdown").ok
    assert len(fake.calls("/v1/capabilities")) == 1
    fake.capabilities = capabilities_doc(formats=("pdf",))
    clock.now += CAPABILITIES_TTL_S - 0.5
    assert client.extract(DATA, format="markdown").ok  # the change is not seen yet
    assert len(fake.calls("/v1/capabilities")) == 1
    clock.now += 0.5
    res = client.extract(DATA, format="markdown")  # a minute on: read again, markdown is gone
    assert (res.verdict, res.code) == (Verdict.UNAVAILABLE, "format_unavailable")
    assert len(fake.calls("/v1/capabilities")) == 2
    assert len(fake.calls()) == 3
    assert client.capabilities(fake.url + "/").formats[0].format == "pdf"


def test_failed_capabilities_read_is_not_cached(fake: FakeExtractor) -> None:
    client = client_for(fake.url)
    fake.reply("/v1/capabilities", Reply(status=503))
    assert client.extract(DATA, format="markdown").unavailable
    del fake.replies["/v1/capabilities"]
    assert client.extract(DATA, format="markdown").ok
    assert len(fake.calls("/v1/capabilities")) == 2


def _caps_wrong_field() -> dict[str, Any]:
    doc = capabilities_doc()
    del doc["extractor"]
    return doc


def _caps_bad_max_bytes() -> dict[str, Any]:
    doc = capabilities_doc()
    doc["max_bytes"] = "many"
    return doc


@pytest.mark.parametrize(
    ("reply", "words"),
    [
        (Reply(status=500), "HTTP 500"),
        (Reply(status=401), "HTTP 401"),
        (Reply(status=404), "HTTP 404"),
        (Reply(status=302, headers={"Location": "/elsewhere"}), "HTTP 302"),
        (Reply(body=capabilities_doc(), gzip=True), "compressed"),
        (Reply(body=b"{not json"), "not JSON"),
        (Reply(body=[1, 2]), "not a JSON object"),
        (Reply(body=_caps_wrong_field()), "do not match the contract"),
        (Reply(body=_caps_bad_max_bytes()), "max_bytes"),
        (Reply(body=capabilities_doc(contract_version=2)), "contract version 2"),
        (Reply(body={**capabilities_doc(), "contract_version": "1"}), "contract version 1,"),
        (Reply(body=b"{" + b" " * (1024 * 1024 + 10) + b"}"), "over"),
    ],
    ids=[
        "500",
        "401",
        "404",
        "redirect",
        "gzip",
        "malformed",
        "array",
        "model",
        "max_bytes",
        "contract_v2",
        "version_string",
        "too_big",
    ],
)
def test_bad_capabilities_make_the_service_unavailable(fake: FakeExtractor, reply: Reply, words: str) -> None:
    fake.reply("/v1/capabilities", reply)
    client = client_for(fake.url)
    res = client.extract(DATA, format="markdown")
    assert res.verdict is Verdict.UNAVAILABLE
    assert words in res.message
    assert res.service_url == fake.url
    assert fake.calls() == []
    with pytest.raises(LoomUnavailable):
        client.capabilities(fake.url)


def test_capabilities_timeout_is_unavailable(fake: FakeExtractor) -> None:
    fake.reply("/v1/capabilities", Reply(body=capabilities_doc(), hang=True))
    res = client_for(fake.url, **{TIMEOUT: "0.3"}).extract(DATA, format="markdown")  # nothing else has to answer
    assert res.verdict is Verdict.UNAVAILABLE
    assert fake.calls() == []


def test_format_not_listed_is_not_sent(fake: FakeExtractor) -> None:
    fake.capabilities = capabilities_doc(formats=("pdf", "sql"))
    res = client_for(fake.url).extract(DATA, format="markdown")
    assert (res.verdict, res.code) == (Verdict.UNAVAILABLE, "format_unavailable")
    assert "does not list markdown" in res.message
    assert fake.calls() == []


def test_file_over_max_bytes_is_not_sent(fake: FakeExtractor) -> None:
    fake.capabilities = capabilities_doc(max_bytes=len(DATA))
    client = client_for(fake.url)
    res = client.extract(DATA + b"!", format="markdown")
    assert (res.verdict, res.code) == (Verdict.REFUSED, "too_large")
    assert fake.calls() == []
    assert client.extract(DATA, format="markdown").ok  # exactly max_bytes is sent
    assert len(fake.calls()) == 1


# ---------------------------------------------------------------------------------------------------------------
# Unavailable answers


@pytest.mark.parametrize(
    "reply",
    [
        Reply(status=401, body={"error": {"code": "corrupt", "message": "m"}}),
        Reply(status=403),
        Reply(status=407),
        Reply(status=408),
        Reply(status=429, headers={"Retry-After": "5"}),
        Reply(status=500, body={"error": {"code": "corrupt", "message": "m"}}),
        Reply(status=502),
        Reply(status=503),
        Reply(status=302, headers={"Location": "/v1/extract-elsewhere"}),
        Reply(status=301, headers={"Location": "http://127.0.0.1:1/"}),
        Reply(status=204),
        Reply(status=201, body=minimal_artifact()),
        error_reply("format_unavailable"),
        error_reply("format_unavailable", status=400),
        Reply(body=minimal_artifact(), gzip=True),
        Reply(status=422, body={"error": {"code": "corrupt", "message": "m"}}, gzip=True),
        Reply(body=minimal_artifact(), headers={"Content-Encoding": "br"}),
        Reply(body=minimal_artifact(), headers={"Content-Encoding": "identity, gzip"}),
    ],
    ids=[
        "401",
        "403",
        "407",
        "408",
        "429",
        "500",
        "502",
        "503",
        "302",
        "301",
        "204",
        "201",
        "format_unavailable",
        "format_unavailable_400",
        "gzip_200",
        "gzip_422",
        "br_label",
        "gzip_after_identity",
    ],
)
def test_unavailable_answers(fake: FakeExtractor, reply: Reply) -> None:
    fake.reply("/v1/extract", reply)
    res = client_for(fake.url).extract(DATA, format="markdown")
    assert res.verdict is Verdict.UNAVAILABLE, res
    assert res.artifact_json is None
    assert res.code in (None, "format_unavailable")
    assert res.service_url == fake.url
    assert len(fake.calls()) == 1  # a redirect is not followed


def test_401_without_a_token_says_so(fake: FakeExtractor) -> None:
    fake.reply("/v1/extract", Reply(status=401))
    client = LoomClient(load_loom_settings({URL: fake.url, TIMEOUT: "5"}), clock=FakeClock(), **LOCAL)
    res = client.extract(DATA, format="markdown")
    assert res.verdict is Verdict.UNAVAILABLE
    assert "no token is configured" in res.message


def test_timeout_on_extract_is_unavailable(fake: FakeExtractor) -> None:
    fake.reply("/v1/extract", Reply(body=minimal_artifact(), hang=True))
    res = client_for(fake.url, **{TIMEOUT: str(HANG_TIMEOUT_S)}).extract(DATA, format="markdown")
    assert res.verdict is Verdict.UNAVAILABLE
    assert "timeout" in res.message or "timed out" in res.message


def _endless_drip() -> Reply:
    """A valid artifact sent one byte every 0.05 s: over an hour, so any whole-call deadline ends it first."""
    return Reply(body=minimal_artifact(text="x" * 100_000), drip=(1, 0.05))


def test_slow_drip_past_the_whole_call_deadline_is_unavailable(fake: FakeExtractor) -> None:
    # Each byte comes well within the per-read timeout; only a deadline for the whole call catches it.
    fake.reply("/v1/extract", _endless_drip())
    res = client_for(fake.url, **{TIMEOUT: str(HANG_TIMEOUT_S)}).extract(DATA, format="markdown")
    assert res.verdict is Verdict.UNAVAILABLE
    assert f"whole-call timeout of {HANG_TIMEOUT_S:g} s" in res.message


def test_connection_refused_is_unavailable() -> None:
    res = client_for(f"http://127.0.0.1:{free_port()}").extract(DATA, format="markdown")
    assert res.verdict is Verdict.UNAVAILABLE
    assert res.code is None


def test_answer_cut_short_is_unavailable(fake: FakeExtractor) -> None:
    fake.reply("/v1/extract", Reply(body=orjson.dumps(minimal_artifact()), content_length=10_000))
    res = client_for(fake.url).extract(DATA, format="markdown")
    assert res.verdict is Verdict.UNAVAILABLE


def test_client_recovers_after_timeouts(fake: FakeExtractor) -> None:
    client = client_for(fake.url, **{TIMEOUT: str(HANG_TIMEOUT_S)})
    fake.reply("/v1/extract", _endless_drip())
    assert client.extract(DATA, format="markdown").unavailable
    del fake.replies["/v1/extract"]
    assert client.extract(DATA, format="markdown").ok


# ---------------------------------------------------------------------------------------------------------------
# Refusals


CONTRACT_CODES = [c.value for c in ErrorCode if c not in (ErrorCode.FORMAT_UNAVAILABLE, ErrorCode.INVALID_ARTIFACT)]


@pytest.mark.parametrize("code", CONTRACT_CODES)
def test_each_contract_error_code_is_kept(fake: FakeExtractor, code: str) -> None:
    fake.reply("/v1/extract", error_reply(code, "the file is pdf, not markdown"))
    res = client_for(fake.url).extract(DATA, format="markdown")
    assert (res.verdict, res.code) == (Verdict.REFUSED, code)
    assert res.message == "the file is pdf, not markdown"
    assert res.artifact_json is None


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (error_reply("a" * 40), "a" * 40),
        (error_reply("some_new_code", status=400), "some_new_code"),
        (error_reply("corrupt", status=404), "corrupt"),
        (error_reply("corrupt", status=413), "corrupt"),
        (error_reply("a" * 41), "refused"),
        (error_reply("Corrupt"), "refused"),
        (error_reply("corrupt2"), "refused"),
        (error_reply("cor-rupt"), "refused"),
        (error_reply(""), "refused"),
        (Reply(status=422, body={"error": {"code": 5, "message": "m"}}), "refused"),
        (Reply(status=422, body={"error": {"code": "corrupt"}}), "corrupt"),
        (Reply(status=400, body=b"<html>bad request</html>", headers={"Content-Type": "text/html"}), "refused"),
        (Reply(status=422, body=b""), "refused"),
        (Reply(status=422, body=["error"]), "refused"),
        (Reply(status=400, body=b"\xff\xfe not utf-8"), "refused"),
    ],
    ids=[
        "40_letters",
        "new_code_400",
        "404",
        "413",
        "41_letters",
        "uppercase",
        "digits",
        "hyphen",
        "empty",
        "not_a_string",
        "no_message",
        "not_json",
        "empty_body",
        "not_an_object",
        "not_utf8",
    ],
)
def test_refusals(fake: FakeExtractor, reply: Reply, code: str) -> None:
    fake.reply("/v1/extract", reply)
    res = client_for(fake.url).extract(DATA, format="markdown")
    assert (res.verdict, res.code) == (Verdict.REFUSED, code), res
    assert res.message


def _error_body_of(size: int, code: str = "corrupt") -> bytes:
    head = orjson.dumps({"error": {"code": code, "message": ""}})
    body = head.replace(b'"message":""', b'"message":"' + b"x" * (size - len(head)) + b'"')
    assert len(body) == size
    return body


@pytest.mark.parametrize("chunked", [False, True], ids=["content_length", "chunked"])
def test_error_body_over_64_kib_is_refused_generic(fake: FakeExtractor, chunked: bool) -> None:
    client = client_for(fake.url)
    fake.reply("/v1/extract", Reply(status=422, body=_error_body_of(MAX_ERROR_BODY_BYTES), chunked=chunked))
    res = client.extract(DATA, format="markdown")
    assert (res.verdict, res.code) == (Verdict.REFUSED, "corrupt")  # exactly 64 KiB: still read
    fake.reply("/v1/extract", Reply(status=422, body=_error_body_of(65 * 1024), chunked=chunked))
    res = client.extract(DATA, format="markdown")
    assert (res.verdict, res.code) == (Verdict.REFUSED, "refused")
    assert "64 KiB" in res.message


def test_service_messages_are_scrubbed_of_tokens(fake: FakeExtractor) -> None:
    fake.reply("/v1/extract", error_reply("corrupt", f"your header was Bearer {TOKEN}"))
    res = client_for(fake.url).extract(DATA, format="markdown")
    assert res.code == "corrupt"
    assert_no_token(res.message, repr(res))
    assert "[token]" in res.message


def test_no_message_or_repr_holds_a_token(fake: FakeExtractor) -> None:
    client = client_for(fake.url, **{TIMEOUT: str(HANG_TIMEOUT_S)})
    results: list[LoomResult] = []
    for reply in (
        Reply(status=401, body=TOKEN),
        Reply(status=302, headers={"Location": f"/x?t={TOKEN}"}),
        error_reply("a" * 41, TOKEN),
        Reply(body=minimal_artifact(), hang=True),
        Reply(body={"not": TOKEN}),
    ):
        fake.reply("/v1/extract", reply)
        results.append(client.extract(DATA, format="markdown", token=TOKEN_B))
    fake.reply("/v1/capabilities", Reply(status=200, body={"contract_version": 1, "oops": TOKEN}))
    client = client_for(fake.url, **{TIMEOUT: str(HANG_TIMEOUT_S)})
    results.append(client.extract(DATA, format="markdown"))
    for res in results:
        assert not res.ok
        assert_no_token(res.message, repr(res), str(res))


# ---------------------------------------------------------------------------------------------------------------
# 200: size limit and artifact validation


@pytest.mark.parametrize("chunked", [False, True], ids=["content_length", "chunked"])
def test_artifact_over_the_limit_is_resource_limit(fake: FakeExtractor, chunked: bool) -> None:
    body = orjson.dumps(minimal_artifact())
    fake.reply("/v1/extract", Reply(body=body, chunked=chunked))
    res = client_for(fake.url, **{MAXART: str(len(body) - 1)}).extract(DATA, format="markdown")
    assert (res.verdict, res.code) == (Verdict.REFUSED, "resource_limit")
    assert MAXART in res.message
    assert client_for(fake.url, **{MAXART: str(len(body))}).extract(DATA, format="markdown").ok


def _raw(doc: dict[str, Any]) -> bytes:
    return orjson.dumps(doc)


def _mut(**changes: Any) -> bytes:
    doc = minimal_artifact()
    for path, value in changes.items():
        target: Any = doc
        keys = path.split("__")
        for k in keys[:-1]:
            target = target[int(k)] if isinstance(target, list) else target[k]
        target[keys[-1]] = value
    return _raw(doc)


def _two_blocks(first: dict[str, Any], second: dict[str, Any]) -> bytes:
    doc = minimal_artifact()
    base = doc["blocks"][0]
    doc["blocks"] = [{**base, **first}, {**base, **second}]
    return _raw(doc)


def _csv_table(rows: list[list[Any]]) -> bytes:
    doc = minimal_artifact("csv")
    doc["tables"] = [
        {
            "id": "t0",
            "name": "data.csv",
            "columns": [{"name": "a", "type": "string"}, {"name": "b", "type": "number"}],
            "rows": rows,
            "header_rows": 1,
            "locator": {"row_start": 1, "row_end": 2},
            "attrs": {},
        }
    ]
    return _raw(doc)


def _loc(**locator: int) -> bytes:
    doc = minimal_artifact()
    doc["blocks"][0]["locator"] = locator
    return _raw(doc)


INVALID_ARTIFACTS: dict[str, tuple[bytes, str]] = {
    "schema_version": (_mut(schema_version=2), "markdown"),
    "wrong_format": (_raw(minimal_artifact("html")), "markdown"),
    "line_end_past_size_plus_one": (_loc(line_start=1, line_end=len(DATA) + 2), "markdown"),
    "char_end_past_size": (_loc(char_start=0, char_end=len(DATA) + 1), "markdown"),
    "duplicate_ids": (_two_blocks({"id": "b0"}, {"id": "b0"}), "markdown"),
    "parent_not_earlier": (_two_blocks({"id": "b0", "parent": "b1"}, {"id": "b1"}), "markdown"),
    "parent_unknown": (_two_blocks({"id": "b0"}, {"id": "b1", "parent": "zz"}), "markdown"),
    "bad_block_type": (_mut(blocks__0__type="table"), "markdown"),
    "bad_row_length": (_csv_table([["x", 1], ["y"]]), "csv"),
    "nan_literal": (_raw(minimal_artifact()).replace(b'"attrs":{}', b'"attrs":{"x":NaN}', 1), "markdown"),
    "infinity_literal": (_raw(minimal_artifact()).replace(b'"attrs":{}', b'"attrs":{"x":1e999}', 1), "markdown"),
    "lone_surrogate": (_raw(minimal_artifact()).replace(b'"text":"hello"', b'"text":"\\ud800"'), "markdown"),
    "not_json": (b"{", "markdown"),
    "not_an_object": (b"[]", "markdown"),
    "empty_parser": (_mut(parser=""), "markdown"),
    "extracted_over_total": (_mut(coverage__extracted=2), "markdown"),
}


@pytest.mark.parametrize("case", list(INVALID_ARTIFACTS))
def test_invalid_artifacts_are_refused(fake: FakeExtractor, case: str) -> None:
    body, fmt = INVALID_ARTIFACTS[case]
    fake.reply("/v1/extract", Reply(body=body))
    res = client_for(fake.url).extract(DATA, format=fmt)
    assert (res.verdict, res.code) == (Verdict.REFUSED, "invalid_artifact"), res
    assert res.artifact_json is None
    assert res.message.startswith("the artifact breaks the contract")


@pytest.mark.parametrize(
    ("body", "fmt"),
    [
        (_loc(line_start=1, line_end=len(DATA) + 1, char_start=0, char_end=len(DATA)), "markdown"),
        (_loc(line_start=0, line_end=0, char_start=-1, char_end=-1), "markdown"),
        (_csv_table([["x", 1], ["y", "12.345"]]), "csv"),
    ],
    ids=["bounds_exactly", "unused_locators", "table"],
)
def test_valid_artifacts_at_the_bounds(fake: FakeExtractor, body: bytes, fmt: str) -> None:
    fake.reply("/v1/extract", Reply(body=body))
    res = client_for(fake.url).extract(DATA, format=fmt)
    assert res.ok, res


def test_success_stores_the_cleaned_artifact(fake: FakeExtractor) -> None:
    doc = minimal_artifact()
    doc["future_field"] = {"a": 1}
    doc["coverage"]["new_measure"] = 3
    doc["blocks"][0]["shiny"] = True
    fake.reply("/v1/extract", Reply(body=doc))
    res = client_for(fake.url).extract(DATA, format="markdown")
    assert res.ok, res
    assert (res.code, res.service_url) == (None, fake.url)
    assert "fake-extractor" in res.message
    assert res.artifact_json is not None
    stored = orjson.loads(res.artifact_json)
    assert "future_field" not in stored
    assert "new_measure" not in stored["coverage"]
    assert "shiny" not in stored["blocks"][0]
    assert stored["blocks"][0]["text"] == "hello"
    assert stored["format"] == "markdown"
    assert "bytes>" in repr(res)


def test_every_format_round_trips(fake: FakeExtractor) -> None:
    client = client_for(fake.url)
    for fmt in FORMATS:
        res = client.extract(DATA, format=fmt)
        assert res.ok, (fmt, res)
        assert orjson.loads(res.artifact_json or b"{}")["format"] == fmt
    assert len(fake.calls("/v1/capabilities")) == 1


def test_concurrent_extracts_share_one_client(fake: FakeExtractor) -> None:
    from concurrent.futures import ThreadPoolExecutor

    client = client_for(fake.url)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: client.extract(DATA, format="markdown"), range(12)))
    assert all(r.ok for r in results)
    assert len(fake.calls()) == 12


def test_capabilities_documents_are_isolated_per_service() -> None:
    with FakeExtractor(capabilities_doc(formats=("pdf",))) as a, FakeExtractor() as b:
        client = LoomClient(
            load_loom_settings({URL: b.url, ROUTES: orjson.dumps({"pdf": a.url}).decode(), TIMEOUT: "5"}),
            clock=FakeClock(),
            **LOCAL,
        )
        assert client.extract(DATA, format="markdown").ok  # b lists markdown
        assert client.extract(DATA, format="markdown", base_url=a.url).code == "format_unavailable"
        assert [c.max_bytes for c in (client.capabilities(a.url), client.capabilities(b.url))] == [1024 * 1024] * 2
        caps = copy.deepcopy(client.capabilities(a.url))
        assert caps.supports("pdf")
        assert not caps.supports("markdown")


# ---------------------------------------------------------------------------------------------------------------
# The job adapter: a LOOM job's poll attempt is one extract attempt


class MemOriginal:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.reads = 0

    def size(self) -> int:
        return len(self.data)

    def read(self) -> bytes:
        self.reads += 1
        return self.data


def _job(**fields: Any) -> Any:
    from datetime import UTC, datetime

    from shared.orchestration.jobs import Job

    now = datetime.now(UTC)
    values: dict[str, Any] = {
        "job_id": "job-1",
        "client_application_id": "app-1",
        "file_id": "file-1",
        "file_location_url": "http://127.0.0.1:10000/devstoreaccount1/accepted/app-1/report.md",
        "created_at": now,
        "updated_at": now,
        "content_type": "text/markdown",
        "file_name": "report.md",
    }
    values.update(fields)
    return Job(**values)


def _config(url: str, **extra: Any) -> Any:
    from shared.orchestration.registration import ExtractorConfig

    return ExtractorConfig.model_validate({"extractorType": "LOOM", "extractionUrl": url, **extra})


def _orch(**env: str) -> Any:
    from shared.orchestration.settings import OrchestrationSettings

    # Loopback http fake services, named by the registrations below; MY_LOOM_TOKEN is a declared extractor token.
    return OrchestrationSettings(
        env={TIMEOUT: "5", **env},
        outbound_allow_http=True,
        outbound_allow_loopback=True,
        extractor_allowed_hosts=("127.0.0.1",),
        extractor_token_settings=("MY_LOOM_TOKEN", "UNSET_TOKEN_SETTING"),
    )


def test_the_composition_root_hands_loom_jobs_to_the_loom_client() -> None:
    from shared.loom.job import LoomExtractorClient
    from shared.orchestration.composition import build_extractors
    from shared.orchestration.extractor_type import ExtractorType

    settings = _orch()
    client = build_extractors(settings, settings.outbound())[ExtractorType.LOOM]
    assert isinstance(client, LoomExtractorClient)
    assert not client.submits


def test_the_loom_extractor_client_keeps_its_loom_client_and_retries_bad_settings(fake: FakeExtractor) -> None:
    from shared.loom.job import LoomExtractorClient
    from shared.orchestration.outcomes import PollStatus

    settings = _orch()
    client = LoomExtractorClient(settings, settings.outbound())
    assert client.loom() is client.loom()  # one LoomClient (its capabilities cache) for every attempt
    assert client.loom()._outbound is client.outbound  # on the transport it was handed
    broken = _orch(**{TIMEOUT: "soon"})
    out = LoomExtractorClient(broken, broken.outbound()).poll(_job(), _config(fake.url))
    assert out.status is PollStatus.PROCESSING
    assert TIMEOUT in out.reason
    assert fake.received == []


def test_adapter_success_failure_and_retry(fake: FakeExtractor) -> None:
    from shared.loom.job import run_loom_attempt
    from shared.orchestration.outcomes import PollStatus

    settings = _orch(MY_LOOM_TOKEN=TOKEN_A)
    config = _config(fake.url + "/v1/extract", auth={"setting": "MY_LOOM_TOKEN"})
    out = run_loom_attempt(_job(), config, settings, original=MemOriginal(DATA))
    assert out.status is PollStatus.SUCCEEDED, out
    assert orjson.loads(out.result or b"")["format"] == "markdown"
    assert out.details["content_type"] == "application/json"
    (ext,) = fake.calls()
    assert ext.path == "/v1/extract"
    assert ext.headers["authorization"] == f"Bearer {TOKEN_A}"
    assert ext.query == {"format": ["markdown"], "name": ["report.md"]}
    assert ext.body == DATA

    fake.reply("/v1/extract", error_reply("format_mismatch", "the file is pdf, not markdown"))
    out = run_loom_attempt(_job(), config, settings, original=MemOriginal(DATA))
    assert out.status is PollStatus.FAILED
    assert out.reason == "format_mismatch: the file is pdf, not markdown"
    assert out.extractor_status == "format_mismatch"

    fake.reply("/v1/extract", Reply(status=503))
    out = run_loom_attempt(_job(), config, settings, original=MemOriginal(DATA))
    assert out.status is PollStatus.PROCESSING
    assert "HTTP 503" in out.reason


def test_adapter_does_not_read_an_original_that_will_not_be_sent(fake: FakeExtractor) -> None:
    from shared.loom.job import run_loom_attempt
    from shared.orchestration.outcomes import PollStatus

    fake.capabilities = capabilities_doc(max_bytes=3)
    original = MemOriginal(DATA)
    out = run_loom_attempt(_job(), _config(fake.url), _orch(), original=original)
    assert out.status is PollStatus.FAILED
    assert out.reason.startswith("too_large: ")
    assert original.reads == 0
    assert fake.calls() == []


@pytest.mark.parametrize(
    ("content_type", "file_name", "fmt"),
    [
        ("text/markdown", "notes.txt", "markdown"),
        ("text/plain", "data.CSV", "csv"),
        ("text/plain", "readme", "text"),
        ("application/octet-stream", "dump.sql", "sql"),
        (None, "deck.pptx", "pptx"),
        ("Application/PDF; x=y", "scan", "pdf"),
    ],
)
def test_adapter_format_detection(fake: FakeExtractor, content_type: str | None, file_name: str, fmt: str) -> None:
    from shared.loom.job import run_loom_attempt

    job = _job(content_type=content_type, file_name=file_name, file_location_url="http://h/acct/c/blob")
    assert run_loom_attempt(job, _config(fake.url), _orch(), original=MemOriginal(DATA)).result
    assert fake.calls()[0].query["format"] == [fmt]


def test_adapter_unknown_format_fails_unsent(fake: FakeExtractor) -> None:
    from shared.loom.job import run_loom_attempt
    from shared.orchestration.outcomes import PollStatus

    job = _job(content_type="image/png", file_name="x.png", file_location_url="http://h/acct/c/x.png")
    out = run_loom_attempt(job, _config(fake.url), _orch(), original=MemOriginal(DATA))
    assert out.status is PollStatus.FAILED
    assert out.reason.startswith("unsupported_format: ")
    assert fake.received == []


def test_adapter_options_from_registration_and_charset(fake: FakeExtractor) -> None:
    from shared.loom.job import run_loom_attempt

    job = _job(content_type="application/sql; charset=windows-1252", file_name="q.sql")
    assert run_loom_attempt(job, _config(fake.url, sqlDialect="tsql"), _orch(), original=MemOriginal(DATA)).result
    assert fake.calls()[-1].query["encoding"] == ["windows-1252"]
    assert fake.calls()[-1].query["sql_dialect"] == ["tsql"]
    # The registration's encoding wins over the charset; a service that takes no encoding gets no charset hint.
    assert run_loom_attempt(job, _config(fake.url, encoding="utf-8"), _orch(), original=MemOriginal(DATA)).result
    assert fake.calls()[-1].query["encoding"] == ["utf-8"]
    fake.capabilities = capabilities_doc(options={"sql": []})
    client = LoomClient(load_loom_settings({TIMEOUT: "5"}), clock=FakeClock(), **LOCAL)
    assert run_loom_attempt(job, _config(fake.url), _orch(), client=client, original=MemOriginal(DATA)).result
    assert "encoding" not in fake.calls()[-1].query


def test_adapter_configuration_problems_are_retried(fake: FakeExtractor) -> None:
    from shared.loom.job import run_loom_attempt
    from shared.orchestration.outcomes import PollStatus

    out = run_loom_attempt(_job(), _config(fake.url), _orch(**{TIMEOUT: "soon"}), original=MemOriginal(DATA))
    assert out.status is PollStatus.PROCESSING
    assert TIMEOUT in out.reason
    config = _config(fake.url, auth={"setting": "UNSET_TOKEN_SETTING"})
    out = run_loom_attempt(_job(), config, _orch(), original=MemOriginal(DATA))
    assert out.status is PollStatus.PROCESSING
    assert "UNSET_TOKEN_SETTING" in out.reason
    assert fake.received == []


def test_adapter_reads_the_original_from_blob_storage(fake: FakeExtractor, azurite_connection_string: str) -> None:
    import uuid

    from azure.storage.blob import BlobServiceClient

    from shared.loom.job import run_loom_attempt
    from shared.orchestration.outcomes import PollStatus
    from shared.orchestration.settings import OrchestrationSettings

    service = BlobServiceClient.from_connection_string(azurite_connection_string)
    container = "loom" + uuid.uuid4().hex[:12]
    service.create_container(container)
    try:
        blob = service.get_blob_client(container, "app-1/notes.md")
        blob.upload_blob(DATA)
        settings = OrchestrationSettings.from_env(
            {
                "DataStorage": azurite_connection_string,
                TIMEOUT: "5",
                "ACCEPTED_FILES_CONTAINER": container,
                "OUTBOUND_ALLOW_HTTP": "true",
                "OUTBOUND_ALLOW_LOOPBACK": "true",
                "EXTRACTOR_ALLOWED_HOSTS": "127.0.0.1",
            }
        )
        out = run_loom_attempt(_job(file_location_url=blob.url, file_name=None), _config(fake.url), settings)
        assert out.status is PollStatus.SUCCEEDED, out
        (ext,) = fake.calls()
        assert ext.body == DATA
        assert ext.query["name"] == ["notes.md"]
        gone = service.get_blob_client(container, "app-1/missing.md").url
        out = run_loom_attempt(_job(file_location_url=gone), _config(fake.url), settings)
        assert out.status is PollStatus.FAILED
        assert "does not exist" in out.reason
        assert len(fake.calls()) == 1
    finally:
        service.delete_container(container)
