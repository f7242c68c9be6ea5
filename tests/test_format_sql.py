"""The SQL format module: exact splitting, locators, kinds and keys, coverage, dialects, budgets, the corpus."""

from __future__ import annotations

import codecs
import dataclasses
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from extract_fn.formats import sql_format
from extract_fn.formats.base import ExtractRequest
from extract_fn.limits import LIMITS, Limits
from shared.artifact import validate_artifact
from shared.contract import LOST_SQL_STRUCTURE, ErrorCode, ExtractionError


def run(
    source: str | bytes,
    dialect: str | None = None,
    *,
    encoding: str | None = None,
    max_output_bytes: int | None = None,
    limits: Limits = LIMITS,
) -> dict[str, Any]:
    """Extract, check the artifact with the shared validator and the block invariants, return it."""
    data = source.encode("utf-8") if isinstance(source, str) else source
    req = ExtractRequest(format="sql", sql_dialect=dialect, encoding=encoding, limits=limits)
    if max_output_bytes is not None:
        req = ExtractRequest(
            format="sql", sql_dialect=dialect, encoding=encoding, max_output_bytes=max_output_bytes, limits=limits
        )
    artifact = sql_format.extract(data, req)
    validate_artifact(orjson.dumps(artifact), format="sql", original_size=len(data))
    text = data.decode(encoding or "utf-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    check_locators(artifact, text)
    return artifact


def check_locators(artifact: dict[str, Any], text: str) -> None:
    for b in artifact["blocks"]:
        loc = b["locator"]
        assert text[loc["char_start"] : loc["char_end"]] == b["text"], b["id"]
        assert loc["line_start"] == text.count("\n", 0, loc["char_start"]) + 1
        assert loc["line_end"] == text.count("\n", 0, loc["char_end"] - 1) + 1
        assert b["text"] == b["text"].strip()


def statements(artifact: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in artifact["blocks"] if b["type"] == "sql_statement"]


def texts(source: str, dialect: str | None = None) -> list[str]:
    return [b["text"] for b in statements(run(source, dialect))]


# ---------------------------------------------------------------------------------------------------------------
# Splitting


def test_semicolons_inside_strings_identifiers_and_comments_do_not_split() -> None:
    sql = (
        "SELECT 'a;b', 'it''s;' AS x; -- a comment; with a semicolon\n"
        'SELECT /* ; */ "col;name" FROM t;\n'
        "SELECT `odd;ident` FROM u\n"
    )
    assert texts(sql) == [
        "SELECT 'a;b', 'it''s;' AS x",
        '-- a comment; with a semicolon\nSELECT /* ; */ "col;name" FROM t',
        "SELECT `odd;ident` FROM u",
    ]


def test_backslash_escapes_only_where_the_dialect_has_them() -> None:
    sql = "SELECT 'a\\';b'; SELECT 2;"
    assert texts(sql, "mysql") == ["SELECT 'a\\';b'", "SELECT 2"]
    # generic SQL (and Postgres) read the backslash as a character: the string ends before ';'
    assert texts(sql)[0] == "SELECT 'a\\'"
    # a Postgres E'' string has backslash escapes
    assert texts("SELECT E'x\\';y'; SELECT 3;", "postgres") == ["SELECT E'x\\';y'", "SELECT 3"]


def test_dollar_quoting() -> None:
    sql = (
        "CREATE FUNCTION f() RETURNS int AS $body$ BEGIN RETURN 1; $$x;$$ END; $body$ LANGUAGE plpgsql;\n"
        "SELECT $$a;b$$, $q$c;d$q$;\n"
        "SELECT price$ FROM t;"
    )
    got = texts(sql, "postgres")
    assert got == [
        "CREATE FUNCTION f() RETURNS int AS $body$ BEGIN RETURN 1; $$x;$$ END; $body$ LANGUAGE plpgsql",
        "SELECT $$a;b$$, $q$c;d$q$",
        "SELECT price$ FROM t",
    ]
    assert texts(sql) == got  # generic SQL knows dollar quotes too


def test_nested_block_comments_in_postgres() -> None:
    sql = "/* a /* b; */ c; */ SELECT 1; SELECT 2;"
    assert texts(sql, "postgres") == ["/* a /* b; */ c; */ SELECT 1", "SELECT 2"]


def test_oracle_q_quotes_and_bigquery_triple_quotes() -> None:
    assert texts("SELECT q'[it's; fine]' FROM dual; SELECT 2 FROM dual;", "oracle") == [
        "SELECT q'[it's; fine]' FROM dual",
        "SELECT 2 FROM dual",
    ]
    assert texts("SELECT '''a ' ; b''' AS s; SELECT 1;", "bigquery") == ["SELECT '''a ' ; b''' AS s", "SELECT 1"]


def test_begin_end_bodies_keep_their_semicolons() -> None:
    sql = """CREATE TRIGGER trg AFTER INSERT ON orders
FOR EACH ROW
BEGIN
  UPDATE stock SET n = n - 1 WHERE id = NEW.item;
  INSERT INTO log VALUES (NEW.id, 'x;y');
END;
CREATE TRIGGER simple BEFORE INSERT ON account FOR EACH ROW SET @sum = @sum + NEW.amount;
SELECT CASE WHEN a THEN 1 END FROM t;
"""
    got = texts(sql)
    assert len(got) == 3
    assert got[0].startswith("CREATE TRIGGER trg")
    assert got[0].endswith("END")
    assert got[1].endswith("NEW.amount")
    assert got[2] == "SELECT CASE WHEN a THEN 1 END FROM t"


def test_plsql_declaration_sections_and_nested_blocks() -> None:
    sql = """CREATE OR REPLACE PROCEDURE p(x NUMBER) IS
  v NUMBER := 0;
  CURSOR c IS SELECT id FROM t;
BEGIN
  FOR r IN c LOOP
    IF r.id > 0 THEN
      v := v + 1;
    ELSIF r.id < 0 THEN
      v := v - 1;
    END IF;
  END LOOP;
  CASE v WHEN 0 THEN NULL; ELSE v := 1; END CASE;
  UPDATE t SET n = v WHERE id = x;
END p;
CREATE PACKAGE BODY pkg AS
  PROCEDURE a IS BEGIN NULL; END a;
  FUNCTION b RETURN NUMBER IS BEGIN RETURN 1; END b;
END pkg;
DECLARE
  n NUMBER;
BEGIN
  SELECT COUNT(*) INTO n FROM t;
END;
SELECT 1 FROM dual;"""
    got = texts(sql, "oracle")
    assert len(got) == 4
    assert got[0].startswith("CREATE OR REPLACE PROCEDURE p")
    assert got[0].endswith("END p")
    assert got[1].startswith("CREATE PACKAGE BODY pkg")
    assert got[1].endswith("END pkg")
    assert got[2].startswith("DECLARE")
    assert got[2].endswith("END")
    assert got[3] == "SELECT 1 FROM dual"
    assert texts(sql) == got  # the same without a dialect


def test_declare_statements_that_are_no_blocks() -> None:
    # BigQuery scripting and T-SQL variables: a DECLARE is one statement
    assert texts("DECLARE x INT64;\nSET x = 5;\nSELECT x;", "bigquery") == ["DECLARE x INT64", "SET x = 5", "SELECT x"]
    assert texts("DECLARE @n INT; SET @n = 1; SELECT @n;", "tsql") == ["DECLARE @n INT", "SET @n = 1", "SELECT @n"]


def test_mysql_delimiter_lines() -> None:
    sql = """DELIMITER //
CREATE PROCEDURE p()
BEGIN
  SELECT 1; SELECT 2;
END //
DELIMITER ;
SELECT 3;
DELIMITER $$
CREATE FUNCTION f() RETURNS INT RETURN 1$$
DELIMITER ;
"""
    a = run(sql, "mysql")
    got = [b["text"] for b in statements(a)]
    assert got == [
        "CREATE PROCEDURE p()\nBEGIN\n  SELECT 1; SELECT 2;\nEND",
        "SELECT 3",
        "CREATE FUNCTION f() RETURNS INT RETURN 1",
    ]
    assert [b["attrs"]["kind"] for b in statements(a)] == ["create_procedure", "select", "create_function"]
    assert all("DELIMITER" not in t for t in got)


def test_tsql_go_batches() -> None:
    sql = """CREATE PROCEDURE dbo.p AS
SET NOCOUNT ON;
SELECT 1;
GO
IF OBJECT_ID('x') IS NOT NULL
BEGIN
  DROP TABLE x;
END
GO 2
SELECT 'GO'
go
CREATE TABLE t (a INT);
INSERT INTO t VALUES (1);
"""
    got = texts(sql)
    assert got == [
        "CREATE PROCEDURE dbo.p AS\nSET NOCOUNT ON;\nSELECT 1;",  # a procedure runs to its GO
        "IF OBJECT_ID('x') IS NOT NULL\nBEGIN\n  DROP TABLE x;\nEND",
        "SELECT 'GO'",
        "CREATE TABLE t (a INT)",
        "INSERT INTO t VALUES (1)",
    ]
    assert texts(sql, "tsql") == got


def test_tsql_blocks_without_semicolons_end_at_the_next_statement() -> None:
    sql = "IF 1 = 1\nBEGIN\n  PRINT 'a';\nEND\nSELECT 2;"
    assert texts(sql, "tsql") == ["IF 1 = 1\nBEGIN\n  PRINT 'a';\nEND", "SELECT 2"]


def test_sqlplus_slash_lines() -> None:
    sql = """CREATE OR REPLACE TRIGGER t BEFORE INSERT ON x FOR EACH ROW
BEGIN
  :NEW.a := 1;
END;
/
CREATE SEQUENCE s;
/
SELECT a
/
b FROM t;
"""
    # in generic SQL a lone "/" ends a PL/SQL block, but inside a plain statement it is a division (TPC-DS does it)
    assert texts(sql) == [
        "CREATE OR REPLACE TRIGGER t BEFORE INSERT ON x FOR EACH ROW\nBEGIN\n  :NEW.a := 1;\nEND",
        "CREATE SEQUENCE s",
        "SELECT a\n/\nb FROM t",
    ]
    # SQL*Plus (the oracle dialect) ends any statement at a lone "/"
    assert texts(sql, "oracle")[2:] == ["SELECT a", "b FROM t"]


def test_copy_from_stdin_data_is_a_code_block_of_its_statement() -> None:
    sql = "COPY public.lang (id, name) FROM stdin;\n1\tEnglish; really\n2\tFrench\n\\.\n\nSELECT 1;\n"
    a = run(sql, "postgres")
    blocks = a["blocks"]
    assert [b["type"] for b in blocks] == ["sql_statement", "code", "sql_statement"]
    assert blocks[0]["text"] == "COPY public.lang (id, name) FROM stdin"
    assert blocks[0]["keys"] == ["public.lang", "lang"]
    assert blocks[1]["text"] == "1\tEnglish; really\n2\tFrench"
    assert blocks[1]["parent"] == blocks[0]["id"]
    assert blocks[1]["attrs"] == {"kind": "copy_data", "rows": 2}
    assert blocks[1]["locator"]["line_start"] == 2
    assert blocks[2]["text"] == "SELECT 1"
    assert a["coverage"]["total"] == 2
    # COPY ... FROM STDIN with no data after it (a test file) takes nothing
    assert texts("COPY t FROM STDIN;\nCOPY u FROM STDIN WITH csv;\n") == [
        "COPY t FROM STDIN",
        "COPY u FROM STDIN WITH csv",
    ]


def test_comment_only_stretches_and_empty_statements_make_no_blocks() -> None:
    a = run("-- nothing here;\n;;\n/* still nothing */\n")
    assert a["blocks"] == []
    assert a["coverage"]["total"] == 0
    assert a["coverage"]["complete"] is True
    assert run("")["blocks"] == []


# ---------------------------------------------------------------------------------------------------------------
# Locators


def test_locators_count_code_points_after_a_bom() -> None:
    sql = "-- café ☕ 𝄞\nSELECT 'ünï' AS x;\n\nINSERT INTO t VALUES ('😀');"
    data = codecs.BOM_UTF8 + sql.encode()
    a = run(data)
    first, second = statements(a)
    assert first["locator"] == {"line_start": 1, "line_end": 2, "char_start": 0, "char_end": sql.index(";")}
    start = sql.index("INSERT")
    assert second["locator"] == {"line_start": 4, "line_end": 4, "char_start": start, "char_end": len(sql) - 1}
    assert a["attrs"]["encoding"] == "utf-8"


def test_locators_on_crlf_text() -> None:
    sql = "SELECT 1;\r\nSELECT\r\n  2;\r\n"
    a = run(sql)
    assert [b["text"] for b in statements(a)] == ["SELECT 1", "SELECT\r\n  2"]
    assert [(b["locator"]["line_start"], b["locator"]["line_end"]) for b in statements(a)] == [(1, 1), (2, 3)]


# ---------------------------------------------------------------------------------------------------------------
# Kinds, keys, parsing


def test_kinds_defines_references_and_keys() -> None:
    sql = """CREATE TABLE public.users (id INT PRIMARY KEY, org INT REFERENCES public.orgs (id), email TEXT);
CREATE INDEX ix_email ON public.users (email);
CREATE MATERIALIZED VIEW mv AS SELECT * FROM public.users;
WITH recent AS (SELECT * FROM events) INSERT INTO archive SELECT * FROM recent;
UPDATE accounts SET n = 1;
DELETE FROM sessions WHERE old;
DROP TABLE IF EXISTS a.b, c;
ALTER TABLE users ADD COLUMN age INT;
BEGIN;
COMMIT;
"""
    blocks = statements(run(sql, "postgres"))
    got = [(b["attrs"]["kind"], b["attrs"]["defines"], b["attrs"]["references"]) for b in blocks]
    assert got == [
        ("create_table", ["public.users"], ["public.orgs"]),
        ("create_index", ["ix_email"], ["public.users"]),
        ("create_materialized_view", ["mv"], ["public.users"]),
        ("insert", [], ["archive", "events"]),
        ("update", [], ["accounts"]),
        ("delete", [], ["sessions"]),
        ("drop_table", [], ["a.b", "c"]),
        ("alter_table", ["users"], []),
        ("begin", [], []),
        ("commit", [], []),
    ]
    assert blocks[0]["keys"] == ["public.users", "users", "public.orgs", "orgs"]
    assert blocks[0]["attrs"]["columns"] == ["id", "org", "email"]
    assert all(b["attrs"]["parsed"] for b in blocks)


def test_unparsed_statements_are_keyed_by_their_keywords() -> None:
    sql = (
        "CREATE OR REPLACE TEMPORARY TABLE [dbo].[My Table] (a INT,, b);\n"
        "CREATE DEFINER=`root`@`localhost` TRIGGER `trg` BEFORE INSERT ON `t1` FOR EACH ROW SET NEW.a = 1;\n"
        "INSERT INTO s.t VALUES ((1;\n"
        "SELECT FROM WHERE x;\n"
        "{% if x %} SELECT 1 FROM y {% endif %}\n;"
    )
    blocks = statements(run(sql))
    got = [(b["attrs"]["kind"], b["attrs"]["parsed"], b["attrs"]["defines"], b["attrs"]["references"]) for b in blocks]
    assert got == [
        ("create_table", False, ["dbo.My Table"], []),
        ("create_trigger", False, ["trg"], ["t1"]),
        ("insert", False, [], ["s.t"]),
        ("select", False, [], []),
        ("unknown", False, [], ["y"]),  # FROM y at the top level
    ]
    assert blocks[0]["keys"] == ["dbo.My Table", "My Table"]


def test_a_broken_statement_is_a_failed_unit_and_stays_a_block() -> None:
    a = run("SELECT 1;\nSELECT FROM WHERE (;\nSELECT 2;")
    cov = a["coverage"]
    assert (cov["total"], cov["extracted"], cov["complete"]) == (3, 2, False)
    assert len(cov["failed"]) == 1
    assert cov["failed"][0]["unit"] == "statement 2 (line 2)"
    assert "WHERE" in cov["failed"][0]["reason"]
    assert "<Token" not in cov["failed"][0]["reason"]
    assert cov["lost"] == []
    broken = statements(a)[1]
    assert broken["text"] == "SELECT FROM WHERE ("
    assert broken["attrs"]["parsed"] is False
    assert broken["attrs"]["kind"] == "select"


def test_an_opaque_command_is_not_counted_as_parsed() -> None:
    a = run("EXPLAIN SELECT 1;")
    assert a["coverage"]["extracted"] == 0
    assert "opaque command" in a["coverage"]["failed"][0]["reason"]
    assert a["coverage"]["lost"] == [LOST_SQL_STRUCTURE]  # nothing parsed at all


def test_the_dialect_option_changes_parsing() -> None:
    sql = "SELECT TOP 5 name FROM dbo.people;"
    generic = run(sql)
    tsql = run(sql, "tsql")
    assert generic["coverage"]["extracted"] == 0
    assert tsql["coverage"]["extracted"] == 1
    assert tsql["options"] == {"sql_dialect": "tsql"}
    assert tsql["attrs"]["dialect"] == "tsql"
    assert statements(tsql)[0]["attrs"]["references"] == ["dbo.people"]


def test_an_unknown_dialect_is_an_invalid_option() -> None:
    with pytest.raises(ExtractionError) as e:
        sql_format.extract(b"SELECT 1", ExtractRequest(format="sql", sql_dialect="no-such-sql"))
    assert e.value.code == ErrorCode.INVALID_OPTION


def test_statements_too_deep_for_the_parser_are_failed_not_crashes() -> None:
    sql = "SELECT " + "(" * 3000 + "1" + ")" * 3000 + ";\nSELECT 2;"
    a = run(sql)
    cov = a["coverage"]
    assert (cov["total"], cov["extracted"]) == (2, 1)
    assert "nested 3000 deep" in cov["failed"][0]["reason"]


def _budget_reason(chars: int) -> str:
    return (
        f"not parsed: the parse budget ({chars:,} characters given to the parser per file) ran out; split and keyed "
        "by their keywords only"
    )


def test_the_parse_budget_leaves_the_rest_keyed_by_keywords() -> None:
    none_left = dataclasses.replace(LIMITS, sql_parse_budget_chars=0)
    a = run("CREATE TABLE a (x INT);\nINSERT INTO b VALUES (1);\nSELECT 1;", limits=none_left)
    cov = a["coverage"]
    assert (cov["total"], cov["extracted"]) == (3, 0)
    assert cov["lost"] == [LOST_SQL_STRUCTURE]
    assert cov["failed"] == [{"unit": "statements 1-3 (from line 1)", "reason": _budget_reason(0)}]
    assert [b["keys"] for b in statements(a)] == [["a"], ["b"], []]


def test_the_parse_budget_counts_the_characters_given_to_the_parser() -> None:
    # 22 + 24 characters: the first two statements fit in 46, the third (8 more) does not, nor in 45 the second
    sql = "CREATE TABLE a (x INT);\nINSERT INTO b VALUES (1);\nSELECT 1;"
    two = run(sql, limits=dataclasses.replace(LIMITS, sql_parse_budget_chars=46))
    assert [b["attrs"]["parsed"] for b in statements(two)] == [True, True, False]
    assert two["coverage"]["failed"] == [{"unit": "statements 3-3 (from line 3)", "reason": _budget_reason(46)}]
    assert two["coverage"]["lost"] == [LOST_SQL_STRUCTURE]
    one = run(sql, limits=dataclasses.replace(LIMITS, sql_parse_budget_chars=45))
    assert [b["attrs"]["parsed"] for b in statements(one)] == [True, False, False]
    assert one["coverage"]["failed"] == [{"unit": "statements 2-3 (from line 2)", "reason": _budget_reason(45)}]
    # statements the parser is not given (too long) cost nothing
    long_first = "SELECT '" + "x" * 100 + "';\n" + sql
    skipped = run(long_first, limits=dataclasses.replace(LIMITS, sql_parse_budget_chars=46, sql_max_parse_chars=60))
    assert [b["attrs"]["parsed"] for b in statements(skipped)] == [False, True, True, False]


def test_the_parse_budget_does_not_depend_on_the_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine so slow (or loaded) that every clock reading is 1,000 s after the last gives the same artifact: a
    wall-clock budget would stop parsing after the first statement."""
    sql = "".join(f"INSERT INTO t{i} SELECT a, b FROM s{i} WHERE a > {i};\n" for i in range(40))
    quiet = run(sql)
    assert quiet["coverage"]["extracted"] == 40
    ticks = iter(range(0, 10**12, 1000))
    monkeypatch.setattr(time, "perf_counter", lambda: float(next(ticks)))
    monkeypatch.setattr(time, "monotonic", lambda: float(next(ticks)))
    monkeypatch.setattr(time, "process_time", lambda: float(next(ticks)))
    assert run(sql) == quiet


def test_a_file_past_the_parse_budget_gives_the_same_answer_every_time() -> None:
    sql = "".join(f"INSERT INTO t{i} VALUES ({i}, 'row {i}');\n" for i in range(300))
    per = len("INSERT INTO t100 VALUES (100, 'row 100')")
    small = dataclasses.replace(LIMITS, sql_parse_budget_chars=150 * per)
    first, second = run(sql, limits=small), run(sql, limits=small)
    assert first == second
    cov = first["coverage"]
    parsed = cov["extracted"]
    assert 150 < parsed < 300  # the short early statements leave room for more than 150
    assert cov["failed"] == [
        {"unit": f"statements {parsed + 1}-300 (from line {parsed + 1})", "reason": _budget_reason(150 * per)}
    ]
    given = sum(len(b["text"]) for b in statements(first) if b["attrs"]["parsed"])
    assert given <= 150 * per < given + len(statements(first)[parsed]["text"])
    assert all(b["keys"] for b in statements(first)[parsed:])  # keyed by their keywords


def test_the_output_budget_cuts_statements_and_says_so() -> None:
    sql = "".join(f"INSERT INTO t{i} VALUES ({i}, '{'x' * 200}');\n" for i in range(2000))
    a = run(sql, max_output_bytes=200_000)
    cov = a["coverage"]
    kept = len(statements(a))
    assert 0 < kept < 2000
    assert cov["total"] == 2000
    assert cov["extracted"] == kept
    assert cov["failed"][-1]["unit"] == f"statements {kept + 1}-2000 (from line {kept + 1})"
    assert "output limit" in cov["failed"][-1]["reason"]
    assert cov["complete"] is False
    assert len(orjson.dumps(a)) < 200_000


# ---------------------------------------------------------------------------------------------------------------
# Encoding and the corpus


def test_encoding_option(corpus: Path) -> None:
    data = (corpus / "sql" / "csvkit-test-latin1.sql").read_bytes()
    with pytest.raises(ExtractionError) as e:
        sql_format.extract(data, ExtractRequest(format="sql"))
    assert e.value.code == ErrorCode.ENCODING
    a = run(data, encoding="latin-1")
    assert "©" in a["blocks"][0]["text"]
    assert a["options"] == {"encoding": "latin-1"}


def _manifest(corpus: Path, fmt: str) -> list[list[str]]:
    rows = [line.split("\t") for line in (corpus / "MANIFEST.tsv").read_text().splitlines()[1:]]
    return [r for r in rows if r[1] == fmt]


def test_corpus(corpus: Path) -> None:
    rows = _manifest(corpus, "sql")
    assert len(rows) == 35
    for path, _fmt, size, _sha, expect, _note, codec in rows:
        data = (corpus / path).read_bytes()
        assert len(data) == int(size)
        if expect != "ok":
            with pytest.raises(ExtractionError) as e:
                sql_format.extract(data, ExtractRequest(format="sql"))
            assert e.value.code == expect, path
            if codec:
                run(data, encoding=codec)
            continue
        a = run(data)
        stmts = statements(a)
        assert a["coverage"]["total"] == len(stmts) > 0, path
        assert a["coverage"]["extracted"] == sum(b["attrs"]["parsed"] for b in stmts), path


def test_corpus_splits(corpus: Path) -> None:
    """Statement counts of real scripts, checked by hand against the files."""
    expected = {
        "sakila-mysql-schema.sql": 41,  # DELIMITER ;; and // blocks
        "sakila-oracle-schema.sql": 95,  # triggers ended by "/"
        "sakila-sqlserver-schema.sql": 69,  # GO batches
        "sakila-postgres-schema.sql": 225,  # functions with dollar-quoted bodies
        "sakila-postgres-insert-data-copy.sql": 79,  # COPY ... FROM stdin data
        "sqlfluff-oracle-cursor.sql": 16,  # DECLARE ... BEGIN ... END; / blocks
        "sqlfluff-tsql-create-procedure.sql": 18,
        "sqlfluff-mysql-create-trigger.sql": 15,
        "sqlfluff-sqlite-create-trigger.sql": 7,
        "sqlfluff-bigquery-create-procedure.sql": 12,  # nested BEGIN, FOR ... DO ... END FOR, BEGIN; transactions
        "sqlglot-tpc-ds.sql": 198,  # "/" alone on a line is a division there
    }
    for name, count in expected.items():
        a = run((corpus / "sql" / name).read_bytes())
        assert len(statements(a)) == count, name
    copies = list(run((corpus / "sql" / "sakila-postgres-insert-data-copy.sql").read_bytes())["blocks"])
    assert sum(b["type"] == "code" for b in copies) == 15
    mysql = statements(run((corpus / "sql" / "sakila-mysql-schema.sql").read_bytes(), "mysql"))
    proc = next(b for b in mysql if b["attrs"]["defines"] == ["rewards_report"])
    assert proc["attrs"]["kind"] == "create_procedure"
    assert proc["text"].startswith("CREATE PROCEDURE rewards_report")
    assert proc["text"].endswith("END")


def test_iter_statement_texts_matches_the_blocks() -> None:
    sql = "SELECT 1; -- x\nSELECT 2"
    assert list(sql_format.iter_statement_texts(sql)) == texts(sql)


def test_unbalanced_bodies_fall_back_to_semicolons() -> None:
    # a block that never ends does not swallow the file: it ends at its first semicolon
    assert texts("CREATE PROCEDURE p() BEGIN SELECT 1; SELECT 2;\nSELECT 3;") == [
        "CREATE PROCEDURE p() BEGIN SELECT 1",
        "SELECT 2",
        "SELECT 3",
    ]
    # many of them (hostile text) still split in one pass, each at its semicolon
    sql = "".join(f"BEGIN x; $t{i}$ /* /* */ y;\n" for i in range(3000))
    got = texts(sql, "postgres")
    assert len(got) == 6000
    assert got[:2] == ["BEGIN x", "$t0$ /* /* */ y"]


# ---------------------------------------------------------------------------------------------------------------
# Dialect names without sqlglot's whole registry


def _registry_name(dialect: Any) -> str:
    from sqlglot.dialects.dialect import Dialect

    return next((k for k, v in Dialect.classes.items() if v is type(dialect)), "")


@pytest.mark.parametrize("asked", [None, "", "postgres", "tsql", "mysql, normalization_strategy = case_sensitive"])
def test_dialect_name_is_the_registrys_name(asked: str | None) -> None:
    from sqlglot.dialects.dialect import Dialect

    d = Dialect.get_or_raise(asked)
    assert sql_format.dialect_name(d, asked) == _registry_name(d)


def test_every_registered_dialect_is_named_as_the_registry_names_it() -> None:
    import sqlglot
    from sqlglot.dialects.dialect import Dialect

    for name in (d.value for d in sqlglot.Dialects):
        d = Dialect.get_or_raise(name)
        assert sql_format.dialect_name(d, name) == _registry_name(d) == name
        assert sql_format.dialect_name(d, name.upper()) == name  # not the asked spelling: the registry's fallback


def test_a_sql_request_imports_only_the_dialect_it_names() -> None:
    """Reading sqlglot's registry imports all its dialects (37 MB of a worker): a generic file and a postgres file
    leave only the generic dialect and postgres loaded (fails when the module reads ``Dialect.classes``)."""
    import subprocess
    import sys

    code = (
        "from extract_fn.formats import sql_format\n"
        "from extract_fn.formats.base import ExtractRequest\n"
        "from sqlglot.dialects.dialect import Dialect\n"
        "sql_format.extract(b'select 1;', ExtractRequest('sql', name='a.sql'))\n"
        "sql_format.extract(b'select $$x$$;', ExtractRequest('sql', name='b.sql', sql_dialect='postgres'))\n"
        "print(sorted(Dialect._classes))\n"
    )
    root = Path(__file__).resolve().parent.parent
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.split("\n")[0] == "['', 'postgres']"
