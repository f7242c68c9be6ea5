"""SQL names: what a statement defines (T-SQL procedures) and how a quoted part holding a dot is keyed."""

from __future__ import annotations

import pytest

from tests.test_format_sql import run, statements


def _names(sql: str, dialect: str | None = None) -> list[tuple[str, bool, list[str], list[str], list[str]]]:
    return [
        (b["attrs"]["kind"], b["attrs"]["parsed"], b["attrs"]["defines"], b["attrs"]["references"], b["keys"])
        for b in statements(run(sql, dialect))
    ]


@pytest.mark.parametrize("dialect", ["tsql", None])
def test_a_tsql_procedure_defines_itself(dialect: str | None) -> None:
    # sqlglot reads a T-SQL procedure as Create(StoredProcedure(Table)): the table under it is the definition
    sql = (
        "CREATE PROCEDURE dbo.p AS\nBEGIN\n  SELECT 1;\nEND\nGO\n"
        "CREATE PROCEDURE dbo.q AS SELECT * FROM dbo.zzz\nGO\n"
        "CREATE OR ALTER PROCEDURE dbo.r AS SELECT 1\nGO\n"
        "CREATE PROC dbo.s @a int AS SELECT @a\nGO\n"
    )
    got = [(kind, defines, refs, keys) for kind, _parsed, defines, refs, keys in _names(sql, dialect)]
    assert got == [
        ("create_procedure", ["dbo.p"], [], ["dbo.p", "p"]),
        ("create_procedure", ["dbo.q"], ["dbo.zzz"], ["dbo.q", "q", "dbo.zzz", "zzz"]),
        ("create_procedure", ["dbo.r"], [], ["dbo.r", "r"]),
        ("create_procedure", ["dbo.s"], [], ["dbo.s", "s"]),
    ]


def test_a_postgres_procedure_defines_itself() -> None:
    sql = "CREATE PROCEDURE public.pp(a int) LANGUAGE plpgsql AS $$ BEGIN INSERT INTO logt VALUES (a); END $$;"
    assert _names(sql, "postgres")[0][2] == ["public.pp"]


def test_a_quoted_name_holding_a_dot_is_one_part() -> None:
    # Names are unquoted, as every quoted identifier is ("Other"."Old" is Other.Old); a quoted part is still one
    # part, so "my.table" has no last part "table" to be keyed by.
    sql = (
        'CREATE TABLE "my.table" (a int);\n'
        'SELECT * FROM "my"."table";\n'
        'CREATE TABLE s."a.b" (x int);\n'
        'SELECT * FROM "a.b".c;\n'
        'INSERT INTO "x.y" VALUES (1);\n'
        'CREATE TABLE "p.q" (;\n'  # not parsed: the keyword reader keys it the same way
    )
    got = [(parsed, defines, refs, keys) for _kind, parsed, defines, refs, keys in _names(sql)]
    assert got == [
        (True, ["my.table"], [], ["my.table"]),
        (True, [], ["my.table"], ["my.table", "table"]),
        (True, ["s.a.b"], [], ["s.a.b", "a.b"]),
        (True, [], ["a.b.c"], ["a.b.c", "c"]),
        (True, [], ["x.y"], ["x.y"]),
        (False, ["p.q"], [], ["p.q"]),
    ]


def test_bracket_and_backtick_parts_holding_a_dot() -> None:
    assert _names("SELECT * FROM [dbo].[a.b];", "tsql")[0][4] == ["dbo.a.b", "a.b"]
    assert _names("SELECT * FROM `a.b`;", "mysql")[0][4] == ["a.b"]  # one identifier in MySQL


def test_names_in_the_artifact_are_plain_strings() -> None:
    for b in statements(run('CREATE TABLE "my.table" (a int);\nSELECT * FROM "p.q";')):
        for name in b["attrs"]["defines"] + b["attrs"]["references"] + b["keys"]:
            assert type(name) is str


@pytest.mark.parametrize("dialect", [None, "bigquery"])
def test_a_backticked_dotted_name_is_a_bigquery_path(dialect: str | None) -> None:
    # BigQuery reads `proj.ds.t` as the path proj.ds.t; so does the generic dialect (where backticks are BigQuery's)
    got = _names("CREATE OR REPLACE PROCEDURE `ds.proc` (x INT64)\nBEGIN\n  SELECT 1;\nEND;", dialect)
    assert got[0][2:] == (["ds.proc"], [], ["ds.proc", "proc"])
    assert _names("SELECT * FROM `proj.ds.t`;", dialect)[0][3:] == (["proj.ds.t"], ["proj.ds.t", "t"])
