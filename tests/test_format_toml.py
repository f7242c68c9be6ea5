"""The TOML format module: the contract's example, toml-test's expected values, positions, errors, limits."""

from __future__ import annotations

import codecs
import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from extract_fn.formats import toml_format
from extract_fn.formats.base import ExtractRequest
from shared.artifact import validate_artifact
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
