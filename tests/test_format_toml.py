"""The TOML format module: the contract's example, toml-test's expected values, positions, errors, limits."""

from __future__ import annotations

import codecs
import contextlib
import datetime as dt
import json
import math
import re
import tomllib
from pathlib import Path
from typing import Any

import orjson
import pytest

from extract_fn.formats import toml_format
from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.output_budget import OutputBudget
from extract_fn.limits import LIMITS
from shared.artifact import validate_artifact
from shared.artifact_builder import ArtifactBuilder, make_locator
from shared.contract import ErrorCode, ExtractionError


def run(source: str | bytes, *, encoding: str | None = None, max_output_bytes: int | None = None) -> dict[str, Any]:
    """Extract and check the artifact with the shared validator."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    if max_output_bytes is None:
        req = ExtractRequest(format="toml", encoding=encoding)
    else:
        req = ExtractRequest(format="toml", encoding=encoding, max_output_bytes=max_output_bytes)
    artifact = toml_format.extract(data, req)
    validate_artifact(orjson.dumps(artifact), format="toml", original_size=len(data))
    return artifact


def fails(source: str | bytes, code: ErrorCode, encoding: str | None = None) -> str:
    data = source.encode("utf-8") if isinstance(source, str) else source
    with pytest.raises(ExtractionError) as e:
        toml_format.extract(data, ExtractRequest(format="toml", encoding=encoding))
    assert e.value.code == code, e.value.message
    return e.value.message


def keys_of(artifact: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in artifact["blocks"] if b["type"] == "toml_key"]


# ---------------------------------------------------------------------------------------------------------------
# The contract's example


def test_the_contracts_example_exactly() -> None:
    a = run("[server]\nport = 7777\n")
    assert a["blocks"] == [
        {
            "id": "b0",
            "type": "toml_table",
            "text": "[server]",
            "section_path": ["server"],
            "locator": {"line_start": 1, "line_end": 1, "key_path": "server"},
            "keys": ["server"],
        },
        {
            "id": "b1",
            "type": "toml_key",
            "text": "server.port = 7777",
            "parent": "b0",
            "section_path": ["server"],
            "locator": {"line_start": 2, "line_end": 2, "key_path": "server.port"},
            "keys": ["server.port"],
            "attrs": {"value": 7777, "value_type": "integer"},
        },
    ]
    assert a["coverage"] == {"unit": "keys", "total": 1, "extracted": 1, "failed": [], "lost": [], "complete": True}
    assert (a["schema_version"], a["format"], a["parser"]) == (1, "toml", "loom-toml")
    assert a["parser_version"].startswith("1+tomllib-py3.")
    assert (a["options"], a["attrs"], a["warnings"]) == ({}, {}, [])


# ---------------------------------------------------------------------------------------------------------------
# Positions, paths, values


def test_multiline_values_comments_and_brackets_inside_strings() -> None:
    src = """# top comment [not.a.table]
title = \"\"\"
[not.a.table]
key = "not a key"
\"\"\"   # trailing
literal = '''
= also [not] a key
'''
arr = [
  "x = 1",  # [comment] in an array
  'y]',
  { z = "}" },
]
[tbl]  # a comment
"q = 1" = 'v'  # quoted key with = in it
"""
    a = run(src)
    blocks = a["blocks"]
    got = [(b["type"], b["locator"], b.get("parent")) for b in blocks]
    assert got == [
        ("toml_key", {"line_start": 2, "line_end": 5, "key_path": "title"}, None),
        ("toml_key", {"line_start": 6, "line_end": 8, "key_path": "literal"}, None),
        ("toml_key", {"line_start": 9, "line_end": 13, "key_path": "arr"}, None),
        ("toml_table", {"line_start": 14, "line_end": 14, "key_path": "tbl"}, None),
        ("toml_key", {"line_start": 15, "line_end": 15, "key_path": 'tbl."q = 1"'}, "b3"),
    ]
    assert blocks[0]["text"] == 'title = """\n[not.a.table]\nkey = "not a key"\n"""   # trailing'
    assert blocks[0]["attrs"] == {"value": '[not.a.table]\nkey = "not a key"\n', "value_type": "string"}
    assert blocks[1]["attrs"]["value"] == "= also [not] a key\n"
    assert blocks[2]["attrs"] == {"value": ["x = 1", "y]", {"z": "}"}], "value_type": "array"}
    assert blocks[3]["text"] == "[tbl]  # a comment"
    assert blocks[4]["text"] == "tbl.\"q = 1\" = 'v'  # quoted key with = in it"
    assert blocks[4]["keys"] == ['tbl."q = 1"']
    assert a["coverage"]["total"] == 4


def test_key_path_escaping_dotted_and_quoted_keys() -> None:
    src = 'a.b.c = 1\n"a.b".c = 2\n\'x y\' = 3\n"" = 4\n"tab\\there" = 5\n"ʎǝʞ" = 6\n[ j . "ʞ" . \'l\' ]\nk = 7\n'
    a = run(src)
    paths = [b["locator"]["key_path"] for b in a["blocks"]]
    assert paths == ["a.b.c", '"a.b".c', '"x y"', '""', '"tab\\there"', '"ʎǝʞ"', 'j."ʞ".l', 'j."ʞ".l.k']
    assert a["blocks"][6]["section_path"] == ["j", '"ʞ"', "l"]
    for b in a["blocks"]:
        assert b["keys"][0] == b["locator"]["key_path"]
    # the segments read back as JSON strings
    assert [json.loads(s) for s in ['"a.b"', '"tab\\there"']] == ["a.b", "tab\there"]


def test_arrays_of_tables_are_indexed() -> None:
    src = """[[fruits]]
name = "apple"
[fruits.physical]
color = "red"
[[fruits.varieties]]
name = "red delicious"
[[fruits.varieties]]
name = "granny smith"
[[fruits]]
name = "banana"
[[fruits.varieties]]
name = "plantain"
"""
    a = run(src)
    got = [(b["type"], b["locator"]["key_path"], b.get("parent"), b["section_path"]) for b in a["blocks"]]
    assert got == [
        ("toml_table", "fruits[0]", None, ["fruits[0]"]),
        ("toml_key", "fruits[0].name", "b0", ["fruits[0]"]),
        ("toml_table", "fruits[0].physical", "b0", ["fruits[0]", "physical"]),
        ("toml_key", "fruits[0].physical.color", "b2", ["fruits[0]", "physical"]),
        ("toml_table", "fruits[0].varieties[0]", "b0", ["fruits[0]", "varieties[0]"]),
        ("toml_key", "fruits[0].varieties[0].name", "b4", ["fruits[0]", "varieties[0]"]),
        ("toml_table", "fruits[0].varieties[1]", "b0", ["fruits[0]", "varieties[1]"]),
        ("toml_key", "fruits[0].varieties[1].name", "b6", ["fruits[0]", "varieties[1]"]),
        ("toml_table", "fruits[1]", None, ["fruits[1]"]),
        ("toml_key", "fruits[1].name", "b8", ["fruits[1]"]),
        ("toml_table", "fruits[1].varieties[0]", "b8", ["fruits[1]", "varieties[0]"]),
        ("toml_key", "fruits[1].varieties[0].name", "b10", ["fruits[1]", "varieties[0]"]),
    ]
    by_path = {b["locator"]["key_path"]: b for b in a["blocks"]}
    assert by_path["fruits[1].varieties[0].name"]["attrs"]["value"] == "plantain"
    assert by_path["fruits[1].varieties[0].name"]["keys"] == ["fruits[1].varieties[0].name", "fruits.varieties.name"]
    assert by_path["fruits[1]"]["keys"] == ["fruits[1]", "fruits"]
    assert by_path["fruits[1]"]["attrs"] == {"array_of_tables": True, "index": 1}
    assert by_path["fruits[1]"]["text"] == "[[fruits]]"


def test_inline_tables_are_one_key_with_member_keys() -> None:
    a = run('owner = { name = "Tom", dob = 1979-05-27, address = { city = "X" } }\n')
    (block,) = a["blocks"]
    assert block["attrs"] == {
        "value": {"name": "Tom", "dob": "1979-05-27", "address": {"city": "X"}},
        "value_type": "table",
    }
    assert block["keys"] == ["owner", "owner.name", "owner.dob", "owner.address", "owner.address.city"]
    assert a["coverage"]["total"] == 1


def test_value_types_and_json_forms() -> None:
    src = """s = "x"
i = -42
f = 6.5e-1
b = true
odt = 1979-05-27T07:32:00Z
odt2 = 1979-05-27 00:32:00.999999-07:00
ldt = 1979-05-27T07:32:00
ld = 1979-05-27
lt = 07:32:00.5
nan = nan
ninf = -inf
pinf = +inf
empty = []
"""
    got = {b["locator"]["key_path"]: (b["attrs"]["value"], b["attrs"]["value_type"]) for b in run(src)["blocks"]}
    assert got == {
        "s": ("x", "string"),
        "i": (-42, "integer"),
        "f": (0.65, "float"),
        "b": (True, "bool"),
        "odt": ("1979-05-27T07:32:00Z", "datetime"),
        "odt2": ("1979-05-27T00:32:00.999999-07:00", "datetime"),
        "ldt": ("1979-05-27T07:32:00", "datetime-local"),
        "ld": ("1979-05-27", "date-local"),
        "lt": ("07:32:00.500000", "time-local"),
        "nan": ("nan", "float"),
        "ninf": ("-inf", "float"),
        "pinf": ("inf", "float"),
        "empty": ([], "array"),
    }


def test_values_nested_past_the_contracts_attrs_depth_are_left_out() -> None:
    src = "ok = " + "[" * 15 + "1" + "]" * 15 + "\ndeep = " + "[" * 16 + "1" + "]" * 16 + "\n"
    a = run(src)
    ok, deep = a["blocks"]
    assert ok["attrs"]["value_type"] == "array"
    assert ok["attrs"]["value"] is not None
    assert deep["attrs"]["value"] is None
    assert "nested deeper" in deep["attrs"]["value_omitted"]
    cov = a["coverage"]
    assert (cov["total"], cov["extracted"], cov["complete"]) == (2, 1, False)
    assert cov["failed"][0]["unit"] == "key deep (line 2)"


def test_very_deep_nesting_is_a_resource_limit_not_a_crash() -> None:
    assert "nested deeper" in fails("a = " + "[" * 100_000 + "]" * 100_000 + "\n", ErrorCode.RESOURCE_LIMIT)
    fails("a = " + "{b=" * 100_000 + "1" + "}" * 100_000 + "\n", ErrorCode.RESOURCE_LIMIT)
    fails("a = " + "[{b=" * 50_000 + "1" + "}]" * 50_000 + "\n", ErrorCode.RESOURCE_LIMIT)
    # unbalanced, the parser gives up at the same depth
    fails("a = " + "[" * 100_000 + "\n", ErrorCode.RESOURCE_LIMIT)
    # as a table header it is simply invalid
    assert "line 1" in fails("[" * 100_000 + "]" * 100_000 + "\n", ErrorCode.CORRUPT)


def test_integers_outside_64_bits_are_corrupt() -> None:
    assert "64" in fails("a = 9223372036854775808\n", ErrorCode.CORRUPT)
    fails("a = [1, -9223372036854775809]\n", ErrorCode.CORRUPT)
    assert run("a = 9223372036854775807\n")["blocks"][0]["attrs"]["value"] == 2**63 - 1


@pytest.mark.parametrize("value", ["9" * 5000, "[1, " + "1_" * 4400 + "1]", "-" + "12" * 3000])
def test_an_integer_past_pythons_digit_limit_is_corrupt_with_its_line(value: str) -> None:
    """Python's int() refuses over 4300 digits (a ValueError, not tomllib's error): the same answer as any
    integer outside 64 bits, with its line, from toml_rs's walk and from tomllib's (which reads the file when
    toml_rs refuses it: here for the broken line after the integer, which tomllib never reaches)."""
    for tail in ("", "broken = = 1\n"):
        msg = fails(f"[t]\nok = 1\nbig = {value}\n{tail}", ErrorCode.CORRUPT)
        assert "outside signed 64 bits (at line 3)" in msg, msg


def test_invalid_toml_names_the_line() -> None:
    msg = fails("[a]\nx = 1\nx = 2\n", ErrorCode.CORRUPT)
    assert "line 3" in msg


# ---------------------------------------------------------------------------------------------------------------
# Encoding


def test_bom_and_encodings() -> None:
    a = run(codecs.BOM_UTF8 + b"a = 1\n")
    assert a["blocks"][0]["locator"]["line_start"] == 1
    assert a["warnings"] == ["a UTF-8 byte-order mark at the start of the file was dropped"]
    fails(codecs.BOM_UTF8 + codecs.BOM_UTF8 + b"a = 1\n", ErrorCode.ENCODING)
    fails(b"a = \xef\xbb\xbf1\n", ErrorCode.ENCODING)
    fails("a = 1\n".encode("utf-16"), ErrorCode.ENCODING)
    fails("a = 1\n".encode("utf-16-be"), ErrorCode.ENCODING)
    fails(b"a = '\xff'\n", ErrorCode.ENCODING)
    # a UTF-8 encoding option is fine; any other codec is refused
    assert run(b"a = 1\n", encoding="utf8")["options"] == {"encoding": "utf8"}
    fails(b"a = 1\n", ErrorCode.INVALID_OPTION, encoding="latin-1")
    # a BOM inside a string is just a character
    assert run("a = '\ufeffx'\n")["blocks"][0]["attrs"]["value"] == "\ufeffx"


def test_output_budget_cuts_keys_and_says_so() -> None:
    src = "".join(f'[s{i}]\nname = "{"x" * 100}"\nn = {i}\n' for i in range(2000))
    a = run(src, max_output_bytes=150_000)
    cov = a["coverage"]
    kept = len(keys_of(a))
    assert 0 < kept < 4000
    assert (cov["total"], cov["extracted"]) == (4000, kept)
    assert cov["failed"][-1]["unit"].startswith("keys from line ")
    assert cov["complete"] is False
    assert len(orjson.dumps(a)) < 150_000


def test_keys_spend_the_budget_as_take_bytes_would() -> None:
    """The walk's budget (``_Keys.take``) admits exactly what ``OutputBudget.take_bytes`` admits, and ``settle``
    leaves the budget as take_bytes would have: what was spent charged, exhausted after a refusal."""
    for costs in ([10, 20, 30], [10, 91, 1], [100], [101], [0, 100, 0]):
        ref = OutputBudget(1_000, 900)
        keys = toml_format._Keys(
            "", {}, ArtifactBuilder("toml", parser="p", parser_version="v", unit="keys"), OutputBudget(1_000, 900)
        )
        taken = []
        for line, cost in enumerate(costs, 1):
            if keys.cut_line is not None:
                break
            taken.append(keys.take(cost, line))
        want = []
        for cost in costs[: len(taken)]:
            want.append(ref.take_bytes(cost))
        assert taken == want
        keys.settle()
        assert (keys.budget.used, keys.budget.exhausted) == (ref.used, ref.exhausted)
        assert keys.cut_line == (None if all(taken) else len(taken))


# ---------------------------------------------------------------------------------------------------------------
# The corpus: toml-test's expected values, invalid cases, real files


_SEG_RE = re.compile(r'(?:([A-Za-z0-9_-]+)|("(?:[^"\\]|\\.)*"))((?:\[\d+\])*)(?:\.|$)')


def parse_key_path(path: str) -> list[str | int]:
    """Our key_path spelling back into segments (strings) and array indices (ints)."""
    out: list[str | int] = []
    pos = 0
    while pos < len(path):
        m = _SEG_RE.match(path, pos)
        assert m is not None, path
        out.append(m.group(1) if m.group(1) is not None else json.loads(m.group(2)))
        out.extend(int(x) for x in re.findall(r"\[(\d+)\]", m.group(3)))
        pos = m.end()
    return out


def _is_tagged(x: Any) -> bool:
    return isinstance(x, dict) and set(x) == {"type", "value"} and isinstance(x["value"], str)


def _float_form(v: str) -> float | str:
    if v.lstrip("+-") == "nan":
        return "nan"
    if v.lstrip("+") == "inf":
        return "inf"
    if v == "-inf":
        return "-inf"
    return float(v)


def assert_same(expected: Any, mine: Any, where: str) -> None:
    """toml-test's tagged JSON against our plain JSON value."""
    if _is_tagged(expected):
        t, v = expected["type"], expected["value"]
        if t == "integer":
            assert type(mine) is int, where
            assert mine == int(v), where
        elif t == "float":
            want = _float_form(v)
            if isinstance(want, str):
                assert mine == want, where
            else:
                assert type(mine) is float, where
                assert mine == want, where  # both read the digits correctly rounded
        elif t == "bool":
            assert mine is (v == "true"), where
        elif t == "string":
            assert mine == v, where
        elif t == "datetime":
            assert dt.datetime.fromisoformat(mine) == dt.datetime.fromisoformat(v), where
            assert dt.datetime.fromisoformat(mine).tzinfo is not None, where
        elif t == "datetime-local":
            assert dt.datetime.fromisoformat(mine) == dt.datetime.fromisoformat(v), where
        elif t == "date-local":
            assert dt.date.fromisoformat(mine) == dt.date.fromisoformat(v), where
        elif t == "time-local":
            assert dt.time.fromisoformat(mine) == dt.time.fromisoformat(v), where
        else:
            raise AssertionError(f"{where}: unknown type {t}")
    elif isinstance(expected, dict):
        assert isinstance(mine, dict), where
        assert set(mine) == set(expected), where
        for k, v in expected.items():
            assert_same(v, mine[k], f"{where}.{k}")
    else:
        assert isinstance(expected, list), where
        assert isinstance(mine, list), where
        assert len(mine) == len(expected), where
        for i, (e, m) in enumerate(zip(expected, mine, strict=True)):
            assert_same(e, m, f"{where}[{i}]")


def _type_of(expected: Any) -> str:
    if _is_tagged(expected):
        return str(expected["type"])
    return "table" if isinstance(expected, dict) else "array"


def _leaves(node: Any, path: list[str | int], out: list[list[str | int]]) -> None:
    if _is_tagged(node):
        out.append(path)
    elif isinstance(node, dict):
        for k, v in node.items():
            _leaves(v, [*path, k], out)
    else:
        for i, v in enumerate(node):
            _leaves(v, [*path, i], out)


def _manifest(corpus: Path) -> list[list[str]]:
    rows = [line.split("\t") for line in (corpus / "MANIFEST.tsv").read_text().splitlines()[1:]]
    return [r for r in rows if r[1] == "toml"]


def test_toml_test_valid_cases_match_their_expected_values(corpus: Path) -> None:
    checked = 0
    for path, _fmt, _size, _sha, expect, _note, _codec in _manifest(corpus):
        expected_file = (corpus / path).with_suffix(".json")
        if expect != "ok" or "/valid/" not in path:
            continue
        data = (corpus / path).read_bytes()
        expected = json.loads(expected_file.read_text())
        a = run(data)
        paths: list[list[str | int]] = []
        for b in a["blocks"]:
            segs = parse_key_path(b["locator"]["key_path"])
            node: Any = expected
            for s in segs:
                node = node[s]
            if b["type"] == "toml_table":
                assert isinstance(node, dict), (path, b)
                continue
            where = f"{path}: {b['locator']['key_path']}"
            assert b["attrs"]["value_type"] == _type_of(node), where
            assert_same(node, b["attrs"]["value"], where)
            paths.append(segs)
        leaves: list[list[str | int]] = []
        _leaves(expected, [], leaves)
        for leaf in leaves:  # every value the file holds is in some key block
            assert any(leaf[: len(p)] == p for p in paths), (path, leaf)
        assert a["coverage"]["total"] == a["coverage"]["extracted"] == len(paths)
        checked += 1
    assert checked == 86  # the 94 ok files less the 8 real-world ones


def test_corpus_expectations(corpus: Path) -> None:
    rows = _manifest(corpus)
    assert len(rows) == 191
    seen: dict[str, int] = {}
    for path, _fmt, size, _sha, expect, _note, _codec in rows:
        data = (corpus / path).read_bytes()
        assert len(data) == int(size)
        seen[expect] = seen.get(expect, 0) + 1
        if expect == "ok":
            a = run(data)
            assert a["coverage"]["complete"] is True, path
        else:
            with pytest.raises(ExtractionError) as e:
                toml_format.extract(data, ExtractRequest(format="toml"))
            assert e.value.code == expect, (path, e.value.message)
    assert seen == {"ok": 94, "corrupt": 82, "encoding": 15}


def test_real_config_files(corpus: Path) -> None:
    a = run((corpus / "toml" / "real-sqlglot-pyproject.toml").read_bytes())
    by_path = {b["locator"]["key_path"]: b for b in a["blocks"]}
    assert by_path["project"]["type"] == "toml_table"
    assert by_path["project.name"]["attrs"] == {"value": "sqlglot", "value_type": "string"}
    for b in a["blocks"]:  # each block's first line is where its key or header is written
        line = (
            (corpus / "toml" / "real-sqlglot-pyproject.toml").read_text().splitlines()[b["locator"]["line_start"] - 1]
        )
        if b["type"] == "toml_table":
            assert line.strip().startswith("[")
        else:
            assert "=" in line


# ---------------------------------------------------------------------------------------------------------------
# The fast paths: toml-rs for the values, one regular expression for the common lines, blocks built directly.
# Each must give exactly what the general path gives.


def _ok_files(corpus: Path) -> list[bytes]:
    return [(corpus / r[0]).read_bytes() for r in _manifest(corpus) if r[4] == "ok"]


def _artifacts(sources: list[bytes], **request: Any) -> list[bytes]:
    out = []
    for data in sources:
        a = toml_format.extract(data, ExtractRequest(format="toml", **request))
        a["parser_version"] = ""
        out.append(orjson.dumps(a))
    return out


_SHAPES = """# a comment [not.a.table] = 1
a = "x # not a comment"   # trailing\t
b = 'lit]'
c = ["a]", 'b#', 1, 2.5, true, 1979-05-27T07:32:00Z, 07:32:00, 1979-05-27]
d = 1979-05-27 07:32:00.5-07:00 # a date-time with a space
d2 = 1979-05-27T07:32:00+05:30
e = -inf
f = 0xff
g=1979-05-27
h =\t07:32:00.999999999
i = [ ]
big = 9223372036854775807
[t.u]  # a header's comment
x = 1
"quoted" = 2
dotted.key = 3
ml = \"\"\"
multi [x] = 1\"\"\"
arr = [
  1, # [
  2,
]
inl = { a = 1, b = { c = [1, {d = 2}] } }
[[aot]]
k = "v"
[aot.sub]
k2 = 2
[[aot]]
k = "w"
[aot.sub]
k2 = 3
[ spaced . 'header' ]
z = nan
"""
_FAST_LINES = (
    'a = "x # not a comment"   # trailing\t',
    "b = 'lit]'",
    "c = [\"a]\", 'b#', 1, 2.5, true, 1979-05-27T07:32:00Z, 07:32:00, 1979-05-27]",
    "d = 1979-05-27 07:32:00.5-07:00 # a date-time with a space",
    "g=1979-05-27",
    "i = [ ]",
    "[t.u]  # a header's comment",
    "[aot.sub]",
)
_GENERAL_LINES = ('"quoted" = 2', "dotted.key = 3", "arr = [", "inl = { a = 1, b = { c = [1, {d = 2}] } }", "[[aot]]")


def test_the_line_regex_takes_the_common_lines() -> None:
    for line in _FAST_LINES:
        assert toml_format._LINE_RE.fullmatch(line) is not None, line
    for line in _GENERAL_LINES:
        assert toml_format._LINE_RE.match(line) is None, line


class _CountingRegex:
    def __init__(self, pattern: re.Pattern[str]) -> None:
        self.pattern = pattern
        self.hits = 0

    def match(self, text: str, pos: int) -> re.Match[str] | None:
        m = self.pattern.match(text, pos)
        self.hits += m is not None
        return m


def test_fast_lines_give_what_the_general_scanner_gives(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shapes = _SHAPES.encode()
    sources = [*_ok_files(corpus), shapes, shapes.replace(b"\n", b"\r\n"), shapes.replace(b"\n", b"  \n")]
    big = "".join(
        f'[s{i}]\nname = "{"x" * 50}"  # c\nn = {i}\nt = [1, "a"]\n[s{i}.in]\nk = {i}.5\n' for i in range(300)
    )
    counting = _CountingRegex(toml_format._LINE_RE)
    monkeypatch.setattr(toml_format, "_LINE_RE", counting)
    fast = _artifacts(sources)
    assert counting.hits > 500  # many items of the corpus took the fast path
    counting.hits = 0
    fast_cut = [_artifacts([big.encode()], max_output_bytes=limit) for limit in (70_000, 90_000, 120_000)]
    assert counting.hits > 3 * 600  # all of big's lines until each cut
    monkeypatch.setattr(toml_format, "_LINE_RE", re.compile(r"(?!)"))  # every item through TomlScanner.item
    assert fast == _artifacts(sources)
    assert fast_cut == [_artifacts([big.encode()], max_output_bytes=limit) for limit in (70_000, 90_000, 120_000)]
    a = run(shapes)
    by_path = {b["locator"]["key_path"]: b for b in a["blocks"]}
    assert by_path["d"]["text"] == "d = 1979-05-27 07:32:00.5-07:00 # a date-time with a space"
    assert by_path["d"]["attrs"] == {"value": "1979-05-27T07:32:00.500000-07:00", "value_type": "datetime"}
    assert by_path["d2"]["attrs"]["value"] == "1979-05-27T07:32:00+05:30"
    assert by_path["c"]["attrs"]["value"] == [
        "a]",
        "b#",
        1,
        2.5,
        True,
        "1979-05-27T07:32:00Z",
        "07:32:00",
        "1979-05-27",
    ]
    assert by_path["a"]["text"] == 'a = "x # not a comment"   # trailing'
    assert by_path["aot[1].sub.k2"]["keys"] == ["aot[1].sub.k2", "aot.sub.k2"]
    assert by_path["aot[1].sub"]["parent"] == by_path["aot[1]"]["id"]


def test_toml_rs_reads_what_tomllib_reads(corpus: Path) -> None:
    import toml_rs  # pinned in requirements.txt: its absence is a failure, not a skip

    checked = 0
    for path, *_ in _manifest(corpus):
        data = (corpus / path).read_bytes()
        try:
            text, _bom = toml_format.decode_toml(data, None, LIMITS.wide_text_sample)
        except ExtractionError:
            continue
        if not toml_format._rs_safe(text, LIMITS.toml_rs_max_depth):
            continue
        try:
            want: Any = tomllib.loads(text)
        except tomllib.TOMLDecodeError:
            want = None
        try:
            got: Any = toml_rs.loads(text, toml_version="1.0.0")
        except Exception:  # any refusal
            got = None
        assert (want is None) == (got is None), path
        if want is not None:
            assert _strictly_equal(want, got), path
        checked += 1
    assert checked >= 170


def _strictly_equal(a: Any, b: Any) -> bool:
    """Same types, same key order, the same float bits (any NaN alike), the same UTC offsets."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_strictly_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_strictly_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float):
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dt.datetime | dt.time):
        return a.replace(tzinfo=None) == b.replace(tzinfo=None) and a.utcoffset() == b.utcoffset()
    return bool(a == b)


def test_the_artifacts_are_the_same_with_or_without_toml_rs(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import toml_rs  # noqa: F401 - pinned in requirements.txt: its absence is a failure, not a skip

    sources = [*_ok_files(corpus), _SHAPES.encode()]
    errors = [(corpus / r[0]).read_bytes() for r in _manifest(corpus) if r[4] != "ok"]

    def outcomes(items: list[bytes]) -> list[tuple[str, str]]:
        out = []
        for data in items:
            with pytest.raises(ExtractionError) as e:
                toml_format.extract(data, ExtractRequest(format="toml"))
            out.append((e.value.code, e.value.message))
        return out

    with_rs, with_rs_errors = _artifacts(sources), outcomes(errors)
    monkeypatch.setattr(toml_format, "toml_rs", None)
    assert _artifacts(sources) == with_rs
    assert outcomes(errors) == with_rs_errors
    assert toml_format.extract(b"a = 1\n", ExtractRequest(format="toml"))["parser_version"].startswith("1+tomllib-py3.")


class _RecordingParser:
    def __init__(self) -> None:
        self.texts: list[str] = []

    def loads(self, text: str, *, toml_version: str) -> dict[str, Any]:
        assert toml_version == "1.0.0"
        self.texts.append(text)
        return tomllib.loads(text)


def test_deep_or_doubtful_text_never_reaches_toml_rs(monkeypatch: pytest.MonkeyPatch) -> None:
    # toml-rs recurses without a limit of its own and dies of a stack overflow a few thousand levels down
    rec = _RecordingParser()
    monkeypatch.setattr(toml_format, "toml_rs", rec)
    deep = [
        "a = " + "[" * 40 + "]" * 40 + "\n",
        "a = " + "{b=" * 40 + "1" + "}" * 40 + "\n",
        "a = [\n" + "# ]\n" * 50 + "[" * 40 + "]" * 40 + "]\n",  # brackets in comments close nothing
        "a = [" + '"]", ' * 50 + "[" * 40 + "]" * 40 + "]\n",  # nor in strings
        "a = [1, [2]\nb = " + "[" * 40,  # unbalanced: tomllib says what is wrong
        "a = '''x''''''" + "[" * 40,  # a stray quote: where the lexer goes on is not guessed
        "a = 1 # x\r" + "[" * 40,  # a comment a lone CR ends for toml-rs's lexer
        "\ufeff\ufeffa = 1\n",  # a second BOM (the first is dropped)
    ]
    for src in deep:
        with contextlib.suppress(ExtractionError):
            toml_format.extract(src.encode(), ExtractRequest(format="toml"))
    assert rec.texts == []
    shallow = "a = " + "[" * 20 + "]" * 20 + '\nb = ["]]]]", "[[[[", { c = "}}}" }]  # ]]]]\n'
    assert run(shallow)["blocks"][1]["attrs"]["value"] == ["]]]]", "[[[[", {"c": "}}}"}]
    assert rec.texts == [shallow]


def test_nesting_bound() -> None:
    bound = toml_format.nesting_bound
    assert bound("a = 1\n") == 1
    assert bound("[a]\nb = [1, 2]\nc = {d = [3]}\n[[e]]\n") == 2
    assert bound("c = {d = [3, [4]]}\n") == 3
    assert bound("a = " + "[" * 50 + "]" * 50) == 50
    assert bound("a = [[[\n]]]\nb = [1]") == 3
    assert bound('a = "[[[[[["\nb = \'{{{{\'\nc = """[[[\n[[[""" # [[[[\n') == 1
    assert bound('a = "\\"[[[["\n') == 1  # an escaped quote does not end the string
    assert bound("a = '''x''''") == 1  # a multi-line literal string may end with one or two quotes more
    assert bound("a = '''x''''''") is None  # but a sixth is a stray quote
    assert bound('a = "x\nb = 1') is None  # an unclosed string
    assert bound("a = [}") is None  # unmatched brackets
    assert bound("a = ]") is None


def test_blocks_are_what_the_artifact_builder_makes(corpus: Path) -> None:
    """Every block the module built itself, added again through ArtifactBuilder.add_block, comes out the same."""
    sources = [*_ok_files(corpus), _SHAPES.encode()]
    for data in sources:
        a = toml_format.extract(data, ExtractRequest(format="toml"))
        again = ArtifactBuilder("toml", parser="p", parser_version="v", unit="keys")
        for b in a["blocks"]:
            assert "section_truncated" not in b.get("attrs", {})
            assert "keys_truncated" not in b.get("attrs", {})
            again.add_block(
                b["type"],
                b["text"],
                locator=make_locator(**b["locator"]),
                section_path=b["section_path"],
                keys=b["keys"],
                parent=b.get("parent"),
                attrs=b.get("attrs"),
            )
        assert orjson.dumps(again.blocks) == orjson.dumps(a["blocks"])


def test_truncated_paths_in_the_module() -> None:
    long = "k" * 1100
    src = "[" + ".".join(f"s{i}" for i in range(70)) + "]\nx = 1\n" + f"[t]\n{long} = 2\n"
    a = run(src)
    table, key, _t, long_key = a["blocks"]
    assert len(table["section_path"]) == 64
    assert table["attrs"] == {"section_truncated": True}
    assert key["attrs"] == {"value": 1, "value_type": "integer", "section_truncated": True}
    assert long_key["keys"] == []
    assert long_key["attrs"]["keys_truncated"] is True
    assert a["coverage"]["lost"] == ["section_path", "exact_keys"]
    assert a["coverage"]["complete"] is False
