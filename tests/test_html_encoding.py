"""HTML charsets as browsers decode them: WHATWG's windows-1252, and a <meta charset> past the 1024-byte prescan."""

from __future__ import annotations

import pytest

from extract_fn.formats import html_format
from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.html_format import late_charset
from extract_fn.text_decoding import decode_text
from shared.contract import ErrorCode, ExtractionError
from tests.test_format_html import run, texts

UNDEFINED_IN_CP1252 = b"\x81\x8d\x8f\x90\x9d"


@pytest.mark.parametrize("label", ["windows-1252", "iso-8859-1", "ISO-8859-1", "latin1", "us-ascii", "cp1252"])
def test_windows_1252_decodes_every_byte_as_whatwg_does(label: str) -> None:
    data = b'<!doctype html><meta charset="' + label.encode() + b'"><p>a\x81b \x8d \x8f \x90 \x9d \x80</p>'
    a = run(data)
    assert texts(a) == ["a\x81b \x8d \x8f \x90 \x9d €"]  # the C1 control of the same value, as browsers read it
    assert a["attrs"]["encoding"] == "cp1252"
    assert a["warnings"] == []


def test_the_http_equiv_form_too() -> None:
    a = run(b'<meta http-equiv="Content-Type" content="text/html; charset=windows-1252"><p>x\x90y</p>')
    assert texts(a) == ["x\x90y"]


def test_mislabelled_utf8_is_still_read_as_utf8_not_as_mojibake() -> None:
    # U+00C1 is C3 81 in UTF-8: strict cp1252 fails on the 0x81, UTF-8 decodes it, as before
    a = run('<meta charset="windows-1252"><p>Ángel</p>'.encode())
    assert texts(a) == ["Ángel"]
    assert "windows-1252" in a["warnings"][0]


def test_only_html_and_only_windows_1252_read_whatwg_bytes() -> None:
    with pytest.raises(ExtractionError):  # Python's codec, for the encoding option and the other formats
        decode_text(b"a\x81", option="cp1252")
    with pytest.raises(ExtractionError):  # not a WHATWG declaration
        decode_text(b"a\x81", declared="cp1252")
    assert decode_text(b"a\x81", declared="cp1252", whatwg=True).text == "a\x81"
    with pytest.raises(ExtractionError) as e:  # windows-1253 leaves 0xAA undefined in Python and WHATWG alike
        html_format.extract(b'<meta charset="windows-1253"><p>\xaa\xff</p>', ExtractRequest("html"))
    assert e.value.code == ErrorCode.ENCODING


def _late(body: str, label: str = "windows-1251", pad: int = 1200) -> bytes:
    return (
        f"<!doctype html><html><head><title>t</title><style>{'a{}' * (pad // 3)}</style>"
        f'<meta charset="{label}"></head><body><p>{body}</p></body></html>'
    ).encode("cp1251")


def test_a_late_meta_decodes_what_utf8_does_not() -> None:
    data = _late("Привет")
    assert data.index(b"<meta") > 1024
    a = run(data)
    assert texts(a) == ["Привет"]
    assert a["attrs"]["encoding"] == "cp1251"
    assert len(a["warnings"]) == 1
    assert "'windows-1251'" in a["warnings"][0]
    assert f"at byte {data.index(b'<meta')}" in a["warnings"][0]


def test_a_late_meta_is_not_used_when_the_text_decodes() -> None:
    data = _late("ascii only", label="koi8-r")
    a = run(data)
    assert a["attrs"]["encoding"] == "utf-8"
    assert a["warnings"] == []


def test_a_late_meta_after_a_failed_option() -> None:
    a = run(_late("Привет"), encoding="ascii")  # the option does not decode it: the late meta does
    assert texts(a) == ["Привет"]
    assert "the encoding option 'ascii'" in a["warnings"][0]


def test_what_the_late_scan_skips_and_where_it_stops() -> None:
    pad = b"<!--" + b"x" * 1100 + b"-->"
    assert late_charset(pad + b'<meta charset="koi8-r">') == ("koi8-r", len(pad))
    assert late_charset(pad + b"<head><link rel=x><META CHARSET=koi8-r>") is not None
    assert late_charset(pad + b'<!-- <meta charset="koi8-r"> -->') is None
    assert late_charset(pad + b"<script>var s = '<meta charset=\"koi8-r\">';</script>") is None
    assert late_charset(pad + b"<title><meta charset=koi8-r></title>") is None
    assert late_charset(pad + b'</head><meta charset="koi8-r">') is None  # past the head
    assert late_charset(pad + b'<body><meta charset="koi8-r">') is None
    assert late_charset(pad + b'<p>text<meta charset="koi8-r">') is None  # a <p> ends the head
    assert late_charset(pad + b'<meta charset="no-such">') is None
    assert late_charset(pad + b"<script>x</script><meta charset=koi8-r>") == ("koi8-r", len(pad) + 18)


def test_without_a_late_meta_the_encoding_error_stays() -> None:
    data = ("<!doctype html><head><style>" + "a{}" * 400 + "</style></head><p>Привет</p>").encode("cp1251")
    with pytest.raises(ExtractionError) as e:
        html_format.extract(data, ExtractRequest("html"))
    assert e.value.code == ErrorCode.ENCODING
    assert "byte offset" in e.value.message


def test_a_late_meta_that_does_not_decode_either_keeps_the_first_error() -> None:
    data = _late("\xff\xfe".encode("latin-1").decode("cp1251"), label="utf-8")  # bytes FF FE: UTF-8 again fails
    with pytest.raises(ExtractionError) as e:
        html_format.extract(data, ExtractRequest("html"))
    assert e.value.code == ErrorCode.ENCODING
