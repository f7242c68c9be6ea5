"""The ``sql_dialect`` values the service takes: sqlglot's dialect names, written out.

The service checks a request's ``sql_dialect`` and lists the names in ``GET /v1/capabilities``; reading them from
sqlglot (``sqlglot.Dialects``) imports all of sqlglot into the service process (about 30 MB of its 65 MB idle, and
0.3 CPU-s at start), which otherwise never parses SQL: its workers do. So the names are kept here, and
``tests/test_extract_http.py::test_the_sql_dialects_are_sqlglots`` checks them against the installed sqlglot's
enum (an upgrade that adds or drops a dialect fails there, and this tuple is updated with it).
"""

from __future__ import annotations

from typing import Final

# sorted(d.value for d in sqlglot.Dialects if d.value), sqlglot 30.30.0 (requirements.txt)
SQL_DIALECTS: Final = (
    "athena", "bigquery", "clickhouse", "databricks", "dax", "doris", "dremio", "drill", "druid", "duckdb", "dune",
    "exasol", "fabric", "hive", "materialize", "mysql", "oracle", "postgres", "presto", "prql", "redshift",
    "risingwave", "snowflake", "solr", "spark", "spark2", "sqlite", "starrocks", "tableau", "teradata", "trino", "tsql",
)  # fmt: skip
