"""The HTML module reads what a browser shows: aria-hidden content, form controls' text, SVG text, srcdoc frames,
object fallback, visibility overridden below a hidden element; and leaves out a bare dialog."""

from __future__ import annotations

from typing import Any

import orjson

from extract_fn.formats import html_format
from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.html_format import visible_text
from extract_fn.limits import LIMITS
from shared.artifact import validate_artifact


def run(src: str) -> dict[str, Any]:
    data = src.encode()
    artifact = html_format.extract(data, ExtractRequest("html"))
    validate_artifact(orjson.dumps(artifact), format="html", original_size=len(data))
    return artifact


def texts(a: dict[str, Any]) -> list[str]:
    return [b["text"] for b in a["blocks"]]


def span(src: str, block: dict[str, Any]) -> str:
    loc = block["locator"]
    return src[loc["char_start"] : loc["char_end"]]


def test_aria_hidden_is_shown() -> None:
    a = run('<p>one</p><p aria-hidden="true">ARIA</p><div aria-hidden=true><span>TWO</span></div>')
    assert texts(a) == ["one", "ARIA", "TWO"]
    assert a["coverage"]["complete"] is True
    assert visible_text('<div aria-hidden="true">ARIA IN MD</div>', LIMITS)[0] == "ARIA IN MD"


def test_bare_dialog_is_left_out() -> None:
    a = run("<p>x</p><dialog>BARE</dialog><dialog class=m>WITHATTR</dialog><dialog open>OPEN</dialog>")
    assert texts(a) == ["x", "OPEN"]


def test_select_shows_its_selected_option() -> None:
    src = (
        "<p>Pick <select><option>no</option><option selected>YES</option><option>no</option></select> now</p>"
        "<p><select><option disabled>off</option><option>FIRST</option><option>no</option></select></p>"
        "<p><select><option selected>no</option><option selected>LAST</option></select></p>"
        "<select multiple><option>M1</option><option>M2</option></select>"
        "<select size=2><optgroup label=g><option>S1</option></optgroup><option>S2</option></select>"
    )
    a = run(src)
    assert texts(a) == ["Pick YES now", "FIRST", "LAST", "M1", "M2", "S1", "S2"]
    assert span(src, a["blocks"][0]).startswith("Pick")
    assert span(src, a["blocks"][0]).endswith("now")
    assert span(src, a["blocks"][1]) == "FIRST"
    assert a["coverage"]["complete"] is True


def test_input_value_and_labels() -> None:
    src = (
        '<p>Name: <input value="  Ann &amp; Bo "></p>\n'
        "<p>x <input type=submit value=Send> <input type=hidden value=SECRET></p>\n"
        "<p><input type=submit> <input type=reset> <input type=button></p>\n"
        '<p><input placeholder="Search..."> <input value=v placeholder=NOTSHOWN></p>\n'
        "<p><input type=password value=pw placeholder=Password> <input type=checkbox value=CB></p>\n"
    )
    a = run(src)
    assert texts(a) == ["Name: Ann & Bo", "x Send", "Submit Reset", "Search... v", "Password"]
    first, submit, labels, fields, password = a["blocks"]
    assert span(src, first) == 'Name: <input value="  Ann &amp; Bo'  # to just past the value's last character
    assert span(src, submit) == "x <input type=submit value=Send"
    assert span(src, fields) == 'Search..."> <input value=v'
    assert span(src, password) == "Password"
    assert labels["locator"]["char_start"] == -1  # a default label has no source characters
    assert a["coverage"]["complete"] is True


def test_controls_in_a_table_cell() -> None:
    src = (
        "<table><tr><th>a</th><th>b</th></tr>"
        "<tr><td><input value=CELL></td><td><select><option>no</option><option selected>SEL</option></select></td></tr>"
        "</table>"
    )
    a = run(src)
    assert a["blocks"][0]["attrs"]["table"] == {"columns": ["a", "b"], "rows": [["CELL", "SEL"]]}


def test_svg_text_is_read() -> None:
    src = (
        "<p>a</p><svg><title>TIP</title><desc>DESC</desc><text>T1<tspan>TS</tspan></text><text>T2</text>"
        "<foreignObject><p>FO</p></foreignObject>loose</svg>"
    )
    a = run(src)
    assert texts(a) == ["a", "T1TS T2", "FO"]
    assert span(src, a["blocks"][1]) == "T1<tspan>TS</tspan></text><text>T2"
    assert visible_text("<svg><text>SVG IN MD</text></svg>", LIMITS)[0] == "SVG IN MD"


def test_iframe_srcdoc_is_read_unplaced() -> None:
    src = '<h1>Top</h1><iframe srcdoc="<h2>Inner</h2><p>in &amp;amp; frame</p>">fallback</iframe><p>after</p>'
    a = run(src)
    assert texts(a) == ["Top", "Inner", "in & frame", "after"]
    inner, para, after = a["blocks"][1:]
    assert inner["locator"]["char_start"] == para["locator"]["char_start"] == -1
    assert para["section_path"] == ["Top", "Inner"]
    assert after["section_path"] == ["Top"]  # the frame's headings open no section of the page
    assert span(src, after) == "after"
    assert a["coverage"]["complete"] is True


def test_iframe_fallback_and_deep_srcdoc() -> None:
    assert texts(run('<iframe src="x.html">FALLBACK</iframe><p>b</p>')) == ["b"]
    inner = "<p>deep</p>"
    for _ in range(12):
        inner = "<iframe srcdoc='" + inner.replace("&", "&amp;").replace("'", "&#39;") + "'></iframe>"
    a = run(inner)
    assert a["coverage"]["complete"] is False
    assert a["coverage"]["failed"]


def test_object_fallback_is_read() -> None:
    src = '<object data="x.swf"><param name=a value=b><p>OBJFALLBACK</p></object>'
    a = run(src)
    assert texts(a) == ["OBJFALLBACK"]
    assert span(src, a["blocks"][0]) == "OBJFALLBACK"


def test_visibility_is_inherited_and_overridden() -> None:
    src = (
        '<div style="visibility:hidden">H1 <p style="visibility: visible">V1</p> H2 <p>H3</p></div>'
        '<p style="visibility:hidden; visibility:visible">BOTH</p>'
        '<p style="visibility:collapse">COLLAPSE</p>'
        '<div style="display:none"><p style="visibility:visible">NONE</p></div>'
        '<div style="content-visibility:hidden"><p style="visibility:visible">CV</p></div>'
        '<table style="visibility:hidden"><tr><td>x</td><td style="visibility:visible">CELL</td></tr></table>'
    )
    a = run(src)
    assert texts(a) == ["V1", "BOTH", "\tCELL"]
    assert span(src, a["blocks"][0]) == "V1"
    assert a["coverage"]["complete"] is True


def test_closed_details_body_is_read() -> None:
    # a closed details shows its summary and opens with a click: its body is read, as the docs say nothing else
    assert texts(run("<details><summary>S</summary><p>BODY</p></details>")) == ["S", "BODY"]


def test_input_placed_past_hidden_inputs() -> None:
    src = '<form><input type=hidden value=A><div hidden><input value=A></div><p><input value="A"></p></form>'
    a = run(src)
    assert texts(a) == ["A"]
    loc = a["blocks"][0]["locator"]
    assert loc["char_start"] == src.rindex("A")
    assert loc["char_end"] == loc["char_start"] + 1


def test_input_placed_past_undisplayed_inputs() -> None:
    src = (
        "<table><tr><td>a</td><td>b <input style=display:none value=B> <input type=checkbox value=B>"
        " <input value=B></td></tr></table><p><input hidden value=C><input value=C></p>"
    )
    a = run(src)
    assert texts(a) == ["a\tb B", "C"]
    assert span(src, a["blocks"][0]).endswith("<input value=B")
    assert a["blocks"][1]["locator"]["char_start"] == src.rindex("C")
