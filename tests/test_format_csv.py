"""CSV extraction: dialects, decoding, the header, ragged rows, typed values, row blocks, budget, the corpus."""

from __future__ import annotations

import csv
import json
import random
from pathlib import Path
from typing import Any

import pytest

from extract_fn.formats import csv_format
from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.csv_format import detect_delimiter
from shared.artifact import validate_artifact
from shared.artifact.built import dump_checked
from shared.artifact.row_runs import compact_rows
from shared.artifact_builder import serialize
from shared.contract import ErrorCode, ExtractionError

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


def run(data: bytes, *, encoding: str | None = None, name: str = "t.csv", max_bytes: int | None = None) -> dict:
    req = ExtractRequest("csv", name=name, encoding=encoding)
    if max_bytes is not None:
        req = ExtractRequest("csv", name=name, encoding=encoding, max_output_bytes=max_bytes)
    art = csv_format.extract(data, req)
    raw = serialize(art)
    assert len(raw) <= req.max_output_bytes
    validate_artifact(raw, format="csv", original_size=len(data))
    return art


def table(art: dict) -> dict:
    assert len(art["tables"]) == 1
    return art["tables"][0]  # type: ignore[no-any-return]


def cols(t: dict) -> list[tuple[str, str]]:
    return [(c["name"], c["type"]) for c in t["columns"]]


def error_of(data: bytes, **kw: Any) -> ExtractionError:
    with pytest.raises(ExtractionError) as exc:
        run(data, **kw)
    return exc.value


# -- dialects ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "delim"),
    [
        ("a,b,c\n1,2,3\n", ","),
        ("a;b;c\n1,5;2,5;3\n", ";"),  # decimal commas do not fool it
        ("a\tb\n1, 2\t3\n", "\t"),
        ('a|b\n"x|y"|2\n3|4\n', "|"),
        ("single\nvalue, with comma\nother\n", ","),  # no candidate splits consistently: one column
        ("a;b;c", ";"),
        ('"a,b";c;d\n1;2;3\n', ";"),
        ("x|y,z\n1|2,3\n4|5,6\n", ","),  # ties go in the order , ; tab |
    ],
)
def test_detect_delimiter(text: str, delim: str) -> None:
    assert detect_delimiter(text) == delim


def test_detect_delimiter_on_a_long_sample_ignores_the_cut_record() -> None:
    text = "a;b\n" + "1;2\n" * 40_000
    assert detect_delimiter(text) == ";"


@pytest.mark.parametrize("newline", ["\n", "\r\n", "\r"])
def test_line_endings_and_quoted_newlines(newline: str) -> None:
    data = newline.join(["a,b", '1,"x', 'y"', "2,z", ""]).encode()
    t = table(run(data))
    assert t["rows"] == [[1, f"x{newline}y"], [2, "z"]]


@pytest.mark.parametrize(
    "text",
    [
        "a,b\r\n1,2\r\n3,4\r\n" * 5,  # a piece boundary inside a run of \r\n endings
        "a,b\r1,2\r3,4\r" * 5 + "x\ny\n",  # \r endings: pieces only cut after a \n
        "a,b\n1,\x0b2\n3,\u20284\x85\n\x0c\n" * 4 + "5,6",  # breaks splitlines knows and a CSV line does not
        "a\n\n\nb\r\n\r\n" * 3,  # blank lines
        "",
    ],
)
def test_split_lines_is_the_line_pattern_in_any_piece_size(text: str, monkeypatch: pytest.MonkeyPatch) -> None:
    want = [m.group() for m in csv_format._LINE.finditer(text)]
    for piece in (1, 2, 3, 7, 1 << 20):
        monkeypatch.setattr(csv_format, "PIECE_CHARS", piece)
        assert list(csv_format.split_lines(text)) == want


def test_records_keep_their_lines_across_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(csv_format, "PIECE_CHARS", 4)
    art = run(b'h,k\r\n1,"x\r\ny"\r\n\r\n2,\x0bz\n3,w')
    locs = [b["locator"] for b in art["blocks"]]
    assert [(loc["line_start"], loc["line_end"]) for loc in locs] == [(2, 3), (5, 5), (6, 6)]
    assert table(art)["rows"] == [[1, "x\r\ny"], [2, "\x0bz"], [3, "w"]]


# Each column's spellings that read as their typed values, and those that do not: an exponent written out, a bool
# in capitals, a normalized date-time. The text column keeps every spelling ("+5" and "007" are text there).
_AS_TYPED = (
    ("1", "-12", "1.50", ""),
    ("true", "false", ""),
    ("2020-01-02T10:00:00", ""),
    ("x", "+5", "007", "", "é {0}"),
)
_RESPELLED = (("1e-05", "2E3"), ("TRUE",), ("2020-01-02 10:00",), ("y",))


@pytest.mark.parametrize("seed", range(12))
def test_row_blocks_read_as_the_file_spells_its_cells(seed: int) -> None:
    """A row block's text is the record's own spelling, whether every row's is kept (many rows read otherwise once
    typed), only those rows' (a few), or none (every row's is made from its typed values when written); the
    worker's compact runs write the same bytes."""
    rng = random.Random(seed)
    mode = seed % 3  # 0: no row reads otherwise, 1: one row in 400, 2: most rows
    records = []
    for i in range(rng.randrange(1, 1500)):
        respelled = (mode == 2 and rng.random() < 0.7) or (mode == 1 and i % 400 == 7)
        records.append([rng.choice(a + r if respelled else a) for a, r in zip(_AS_TYPED, _RESPELLED, strict=True)])
    data = ("a,b,c,d\n" + "".join(",".join(r) + "\n" for r in records)).encode()
    art = run(data)
    assert [c["type"] for c in table(art)["columns"]] == ["number", "bool", "datetime", "string"]
    expected = [" | ".join(f"{n}: {v}" for n, v in zip("abcd", r, strict=True) if v) for r in records]
    assert [b["text"] for b in art["blocks"]] == [t for t in expected if t]
    with compact_rows():
        compact = csv_format.extract(data, ExtractRequest("csv", name="t.csv"))
    parts: list[bytes] = []
    assert dump_checked(compact, format="csv", original_size=len(data), write=lambda p: parts.append(bytes(p)))
    assert b"".join(parts) == serialize(art)


@pytest.mark.parametrize("max_bytes", [20_000, 61_234, 150_000, 400_000])
def test_a_compact_run_cut_at_the_output_limit_writes_what_the_dicts_write(max_bytes: int) -> None:
    """The worker's runs measure their blocks by column (``OfferedBlocks.json_len``) and make the dicts only for the
    chunk the output limit cuts: the same rows are taken, and the bytes are the dicts' artifact's."""
    data = ("n,t,x\n" + "".join(f'{i},"é{i}\\""" {i * 7}",{i / 3}\n' for i in range(3000))).encode()
    art = run(data, max_bytes=max_bytes)
    assert art["coverage"]["complete"] is False  # the limit cut the rows
    req = ExtractRequest("csv", name="t.csv", max_output_bytes=max_bytes)
    with compact_rows():
        compact = csv_format.extract(data, req)
    parts: list[bytes] = []
    assert dump_checked(compact, format="csv", original_size=len(data), write=lambda p: parts.append(bytes(p)))
    assert b"".join(parts) == serialize(art)


def test_row_texts_of_full_and_partial_records() -> None:
    names = ["a", "b{0}"]
    full = [["1", "x"], ["2", "{y}"]]
    assert csv_format._row_texts(names, full) == ["a: 1 | b{0}: x", "a: 2 | b{0}: {y}"]
    assert csv_format._row_texts(names, [*full, ["", "z"], ["3"], ["4", "w", "extra"]]) == [
        "a: 1 | b{0}: x",
        "a: 2 | b{0}: {y}",
        "b{0}: z",
        "a: 3",
        "a: 4 | b{0}: w",
    ]


def test_quotes_and_doubled_quotes() -> None:
    t = table(run(b'a,b\n"say ""hi""",2\n'))
    assert t["rows"] == [['say "hi"', 2]]


# -- decoding ------------------------------------------------------------------------------------------------------


def test_bom_is_not_part_of_the_header() -> None:
    t = table(run("\ufeffid,name\n1,x\n".encode()))
    assert cols(t)[0] == ("id", "number")


def test_utf16_with_bom() -> None:
    art = run("a,b\n1,é\n".encode("utf-16"))
    assert table(art)["rows"] == [[1, "é"]]
    assert art["attrs"]["encoding"].startswith("utf-16")


def test_undecodable_bytes_are_the_encoding_error_and_the_option_fixes_it() -> None:
    data = "a,b\n1,café\n".encode("latin-1")
    err = error_of(data)
    assert err.code == ErrorCode.ENCODING
    assert "byte offset 9" in err.message
    art = run(data, encoding="latin-1")
    assert table(art)["rows"] == [[1, "café"]]
    assert art["options"] == {"encoding": "latin-1"}


def test_a_nul_in_a_field_is_kept_with_a_warning() -> None:
    art = run(b"a,b\n\x00,2\n")
    assert table(art)["rows"] == [["\x00", 2]]
    assert any("NUL" in w for w in art["warnings"])


def test_lone_surrogates_a_codec_makes_are_cleaned() -> None:
    """UTF-7 spells lone surrogates ("+2AA-" is U+D800): cells and row blocks carry U+FFFD, within a budget too."""
    art = run(b"a,b\n+2AA-x,1\n", encoding="utf-7")
    assert table(art)["rows"] == [["\ufffdx", 1]]
    assert art["blocks"][0]["text"] == "a: \ufffdx | b: 1"
    data = b"a,b\n" + b"".join(b"+2AA-%d,%d\n" % (i, i) for i in range(5_000))
    art = run(data, encoding="utf-7", max_bytes=100_000)  # the chunk crossing the budget is measured row by row
    assert 0 < art["coverage"]["extracted"] < 5_000
    assert art["blocks"][-1]["text"].startswith("a: \ufffd")


def test_utf16_without_bom_is_the_encoding_error() -> None:
    err = error_of("a,b\n1,2\n3,4\n".encode("utf-16-le"))
    assert err.code == ErrorCode.ENCODING
    assert "NUL" in err.message


# -- header, ragged rows, types, locators --------------------------------------------------------------------------


def test_first_row_is_the_header_even_when_numeric() -> None:
    t = table(run(b"1,2\n3,4\n"))
    assert cols(t) == [("1", "number"), ("2", "number")]
    assert t["header_rows"] == 1
    assert t["rows"] == [[3, 4]]


def test_empty_header_names_become_column_n() -> None:
    t = table(run(b"a,,c\n1,2,3\n"))
    assert [c[0] for c in cols(t)] == ["a", "column_2", "c"]


def test_ragged_rows_are_padded_and_extended() -> None:
    art = run(b"a,b,c\n1,2\n1,2,3,4,5\n1,2,3\n")
    t = table(art)
    assert cols(t) == [
        ("a", "number"),
        ("b", "number"),
        ("c", "number"),
        ("column_4", "number"),
        ("column_5", "number"),
    ]
    assert t["rows"] == [[1, 2, None, None, None], [1, 2, 3, 4, 5], [1, 2, 3, None, None]]
    assert t["attrs"] == {"short_rows": 1, "long_rows": 1}
    assert any("fewer fields" in w and "rows 2" in w for w in art["warnings"])
    assert any("more fields" in w and "rows 3" in w for w in art["warnings"])
    assert art["coverage"]["complete"] is True  # nothing dropped


def test_typed_columns() -> None:
    data = (
        b"i,big,dec,flag,day,when,clock,text\n"
        b"1,9223372036854775808,12.345,true,2021-01-01,2021-01-01 10:30:00,10:30,x\n"
        b"-2,1,0.5,FALSE,2021-12-31,2021-01-02,23:59:59,007\n"
        b",,,,,,,\n"
    )
    t = table(run(data))
    assert cols(t) == [
        ("i", "number"),
        ("big", "number"),
        ("dec", "number"),
        ("flag", "bool"),
        ("day", "date"),
        ("when", "datetime"),
        ("clock", "time"),
        ("text", "string"),
    ]
    assert t["rows"] == [
        [1, "9223372036854775808", "12.345", True, "2021-01-01", "2021-01-01T10:30:00", "10:30:00", "x"],
        [-2, 1, "0.5", False, "2021-12-31", "2021-01-02", "23:59:59", "007"],
        [None] * 8,
    ]


def test_row_blocks_locators_and_text() -> None:
    art = run(b'a,b\n1,"x\ny"\n\n2,\n', name="data.csv")
    t = table(art)
    assert t["name"] == "data.csv"
    assert t["locator"] == {"line_start": 1, "line_end": 5, "row_start": 1, "row_end": 3}
    b0, b1 = art["blocks"]
    assert b0["type"] == "paragraph"
    assert b0["text"] == "a: 1 | b: x\ny"
    assert b0["locator"] == {"line_start": 2, "line_end": 3, "row_start": 2, "row_end": 2}
    assert b0["attrs"] == {"table_id": t["id"]}
    assert b1["text"] == "a: 2"  # an empty cell is left out
    assert b1["locator"] == {"line_start": 5, "line_end": 5, "row_start": 3, "row_end": 3}  # the blank line is no row
    assert art["coverage"] == {
        "unit": "rows",
        "total": 2,
        "extracted": 2,
        "failed": [],
        "lost": [],
        "complete": True,
    }


def test_empty_file() -> None:
    art = run(b"\n")
    assert table(art)["columns"] == []
    assert art["blocks"] == []
    assert art["coverage"]["total"] == 0


def test_header_only() -> None:
    art = run(b"a,b\n")
    assert cols(table(art)) == [("a", "string"), ("b", "string")]
    assert table(art)["rows"] == []


def test_budget_cuts_rows_with_coverage_and_warning() -> None:
    data = b"id,name\n" + b"".join(b"%d,name number %d\n" % (i, i) for i in range(20_000))
    art = run(data, max_bytes=200_000)
    cov = art["coverage"]
    assert cov["total"] == 20_000
    assert 0 < cov["extracted"] < 20_000
    assert cov["complete"] is False
    assert len(table(art)["rows"]) == cov["extracted"] == len(art["blocks"])
    assert any(f"{cov['extracted']} of 20000 rows" in w for w in art["warnings"])
    # The rows left out are a failed unit by row number (the header is row 1, the first record row 2).
    [failed] = cov["failed"]
    assert failed["unit"] == f"table 't.csv' rows {cov['extracted'] + 2}-20001"
    assert "output limit" in failed["reason"]


def test_a_budget_below_the_header_is_resource_limit() -> None:
    err = error_of(b"a,b\n1,2\n", max_bytes=2_000)
    assert err.code == ErrorCode.RESOURCE_LIMIT


# -- the corpus ----------------------------------------------------------------------------------------------------


def _manifest(corpus: Path) -> list[dict[str, str]]:
    with (corpus / "MANIFEST.tsv").open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def _csv_entries() -> list[dict[str, str]]:
    return [r for r in _manifest(CORPUS) if r["format"] == "csv"]


@pytest.mark.parametrize("entry", _csv_entries(), ids=lambda e: e["path"])
def test_corpus_file(corpus: Path, entry: dict[str, str]) -> None:
    data = (corpus / entry["path"]).read_bytes()
    expect = entry["expect"]
    if expect == "encoding":
        err = error_of(data)
        assert err.code == ErrorCode.ENCODING
        art = run(data, encoding=entry["codec"])
    elif expect == "ok":
        art = run(data)
    else:
        err = error_of(data)
        assert err.code == ErrorCode.CORRUPT
        return
    t = table(art)
    if art["coverage"]["total"]:
        assert any(v is not None for row in t["rows"] for v in row)
        assert art["coverage"]["extracted"] == art["coverage"]["total"]


def _spectrum_cases() -> list[str]:
    return sorted(p.stem for p in (CORPUS / "csv" / "csv-spectrum").glob("*.csv"))


@pytest.mark.parametrize("case", _spectrum_cases())
def test_csv_spectrum_ground_truth(corpus: Path, case: str) -> None:
    """Every record exactly as csv-spectrum expects (values compared as the source text they came from)."""
    folder = corpus / "csv" / "csv-spectrum"
    expected = json.loads((folder / f"{case}.json").read_text(encoding="utf-8"))
    data = (folder / f"{case}.csv").read_bytes()
    if b"\r" not in data:
        # The corpus's *_crlf cases were stored with LF line endings (same bytes as their LF twins) while their
        # JSON still expects CRLF inside quoted fields: no parser can produce a CR the file does not hold.
        expected = [{k: v.replace("\r\n", "\n") for k, v in rec.items()} for rec in expected]
    t = table(run(data))
    names = [c["name"] for c in t["columns"]]
    got = [
        {
            n: "" if v is None else ("true" if v is True else "false" if v is False else str(v))
            for n, v in zip(names, r, strict=False)
        }
        for r in t["rows"]
    ]
    assert got == expected


def test_corpus_ragged(corpus: Path) -> None:
    art = run((corpus / "csv" / "csvkit-bad-ragged.csv").read_bytes())
    t = table(art)
    assert cols(t) == [("column_a", "number"), ("column_b", "string"), ("column_c", "number"), ("column_4", "string")]
    assert t["rows"] == [
        [1, "27", None, "I'm too long!"],
        [None, "I'm too short!", None, None],
        [0, "mixed types.... uh oh", 17, None],
    ]
    assert len(art["warnings"]) == 2


def test_corpus_census_codes_keep_leading_zeros(corpus: Path) -> None:
    t = table(run((corpus / "csv" / "csvkit-census2000-determination.csv").read_bytes()))
    types = dict(cols(t))
    assert types["AIANHH"] == "string"
    assert types["POP"] == "number"
    first = dict(zip([c["name"] for c in t["columns"]], t["rows"][0], strict=False))
    assert first["AIANHH"] == "0000"
    assert first["POP"] == 281421905
    assert first["NAME1"] == "U.S."
    assert first["CODE"] is None


def test_corpus_delimiters(corpus: Path) -> None:
    for name, delim in (("pipe", "|"), ("semicolon", ";"), ("tab", "\t")):
        art = run((corpus / "csv" / f"docling-csv-{name}.csv").read_bytes())
        assert art["attrs"]["delimiter"] == delim
        t = table(art)
        assert len(t["columns"]) == 12
        assert t["rows"][0][:4] == [1, "DD37Cf93aecA6Dc", "Sheryl", "Baxter"]
        assert t["rows"][3][4] == f"Dominguez{delim}Mcmillan and Donovan"  # a quoted delimiter stays in its field
        assert dict(cols(t))["Subscription Date"] == "date"


def test_corpus_mac_newlines_and_null_byte(corpus: Path) -> None:
    t = table(run((corpus / "csv" / "csvkit-mac-newlines.csv").read_bytes()))
    assert t["rows"] == [["1", 2, 3], ["Once upon\ra time", 5, 6]]
    t = table(run((corpus / "csv" / "csvkit-null-byte.csv").read_bytes()))
    assert t["rows"] == [["\x00", 2, 3]]


def test_corpus_latin1_with_option(corpus: Path) -> None:
    t = table(run((corpus / "csv" / "csvkit-latin1.csv").read_bytes(), encoding="latin-1"))
    assert t["rows"] == [[1, 2, "3"], [4, 5, "©"]]  # "3" and "©": a text column


def test_columns_past_the_contract_bound_are_cut_and_reported() -> None:
    n = 16_390
    data = (",".join(f"c{i}" for i in range(n)) + "\n" + ",".join("1" for _ in range(n)) + "\n").encode()
    art = run(data)
    t = table(art)
    assert len(t["columns"]) == 16_384
    assert t["columns"][-1]["name"] == "c16383"
    assert len(t["rows"][0]) == 16_384
    assert art["coverage"]["failed"] == [
        {"unit": "table 't.csv' columns 16385-16390", "reason": "past the contract's 16384 columns"}
    ]
    assert art["coverage"]["complete"] is False


def test_csv_spectrum_newlines_crlf_as_published(corpus: Path) -> None:
    """newlines_crlf.csv as csv-spectrum publishes it (CRLF line endings; the corpus copy lost its CRs): the CRLF
    inside the quoted field stays CRLF, exactly as its JSON expects."""
    folder = corpus / "csv" / "csv-spectrum"
    data = (folder / "newlines_crlf.csv").read_bytes().replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    expected = json.loads((folder / "newlines_crlf.json").read_text(encoding="utf-8"))
    t = table(run(data))
    assert t["rows"][1][0] == expected[1]["a"] == "Once upon \r\na time"
    block = next(b for b in run(data)["blocks"] if "Once upon" in b["text"])
    assert "Once upon \r\na time" in block["text"]
