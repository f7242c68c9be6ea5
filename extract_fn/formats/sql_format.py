"""SQL: one ``sql_statement`` block per statement, split by our own scanner, each parsed with sqlglot.

Decisions (documented for the artifact's readers):

* **Decoding**: ``text_decoding.decode_text`` (a byte-order mark wins, else the ``encoding`` option, else strict
  UTF-8; what does not decode is the ``encoding`` error, and so is UTF-16/32 without a byte-order mark read as UTF-8,
  ``text_decoding.refuse_wide_text``). Character offsets count code points of the decoded text
  (after any BOM), ``char_end`` exclusive, so ``text[char_start:char_end] == block.text`` always holds.
* **Splitting** is ours, never the parser's. The scanner knows, per dialect (read from sqlglot's tokenizer for the
  ``sql_dialect`` option; generic when there is none): single-quoted strings with ``''`` and, where the dialect has
  them, backslash escapes (also Postgres ``E'...'``), Oracle ``q'[...]'`` quoting, BigQuery triple quotes,
  double-quoted, backtick and (T-SQL, SQLite) bracket identifiers, ``--`` / ``#`` / ``//`` line comments as the
  dialect has them, ``/* */`` comments (nested where the dialect nests them), dollar quoting (``$$`` and ``$tag$``),
  procedural bodies (``CREATE FUNCTION/PROCEDURE/TRIGGER/PACKAGE ... BEGIN ... END``, Oracle ``IS``/``AS``
  declaration sections, ``DECLARE ... BEGIN ... END`` blocks, ``IF ... END IF``, loops, ``CASE ... END``: a
  semicolon inside them does not end the statement), MySQL ``DELIMITER xx`` lines, T-SQL ``GO`` batch separators on
  their own line (a ``CREATE/ALTER PROCEDURE/FUNCTION/TRIGGER`` then runs to the ``GO``, as T-SQL reads it), SQL*Plus
  ``/`` on its own line (it ends a PL/SQL block; under the ``oracle`` dialect any statement), and Postgres
  ``COPY ... FROM stdin;`` data up to its ``\\.`` line. Generic (no dialect) scanning has no backslash escapes and no
  ``#`` comments; it knows ``GO``, ``/``, ``DELIMITER``, dollar quotes, ``q'..'`` and ``E'..'``.
* **Block text** is the statement's source: from its first character (leading comments belong to the statement
  they precede) to its last non-blank character, without the terminator (``;``, the custom delimiter, ``GO``,
  ``/``). Comment-only stretches between statements make no block. ``DELIMITER``/``GO``/``/`` lines and psql
  ``\\`` meta-command lines make no block. COPY data rows make a ``code`` block (child of its COPY statement,
  ``attrs.kind`` ``"copy_data"``), which is not a statement.
* **attrs.kind**: the statement's kind in snake case: ``create_table``, ``create_view``,
  ``create_materialized_view``, ``create_index``, ``create_function``, ``create_procedure``, ``create_trigger``,
  ``alter_table``, ``drop_table``, ``insert``, ``update``, ``delete``, ``merge``, ``select`` (also set operations
  and ``WITH ... SELECT``), ``copy``, ``set``, ``begin``/``commit``/``rollback`` (transactions), ``block``
  (anonymous ``BEGIN``/``DECLARE`` blocks), ... From sqlglot's tree when the statement parses into a known
  expression, else from the leading keywords (modifiers such as ``OR REPLACE``, ``TEMPORARY``, ``UNIQUE``,
  ``DEFINER=...`` skipped), so a statement gets the same kind whether it parses or not; ``unknown`` when it does
  not start with a word (a template, say).
* **attrs.defines**: the objects the statement creates or redefines (the target of ``CREATE``/``ALTER``).
  **attrs.references**: every other object it names: tables read or written (an ``INSERT``'s target first), dropped
  objects, foreign-key targets, the table of an index or trigger. CTE names are not objects. Names are unquoted and
  qualified as written (``public.users``, ``dbo.TEST``), case kept. For a statement that does not parse both come
  from the leading keywords only (the created/altered/dropped/written object, an index's or trigger's table).
  **keys**: each defined then referenced name, qualified as written and its last part alone (``public.users``,
  ``users``), de-duplicated. A quoted part is one part even when it holds a dot: ``"my.table"`` is keyed
  ``my.table`` alone (not also ``table``), ``s."a.b"`` as ``s.a.b`` and ``a.b``; a backticked one is a path in
  BigQuery and in the generic dialect (```proj.ds.t```: ``proj.ds.t``, ``t``), one part elsewhere. T-SQL's
  ``CREATE [OR ALTER] PROCEDURE`` defines the procedure, as every dialect's does. **attrs.columns**: a parsed
  ``CREATE TABLE``'s column names.
* **Parsing** (sqlglot, per statement, errors kept per statement): ``attrs.parsed`` is true when sqlglot read the
  statement into a tree with no opaque ``Command`` fallback. Every statement not parsed is in ``coverage.failed``
  (``statement N (line L)``, sqlglot's message, short). Statements over ``limits.sql_max_parse_chars`` characters or
  nested
  deeper than ``limits.sql_max_paren_depth`` parentheses are not given to the parser (failed, with that reason).
  Parsing
  stops at ``limits.sql_parse_budget_chars`` characters given to the parser in one file (work, not seconds, so a file
  gets the same artifact on any machine, loaded or not; the worker's timeout still bounds the wall time): the first
  statement that would take the total past it and every one after it are split and keyed by their keywords, listed
  in one failed entry, and ``coverage.lost`` gets ``sql_structure``; so does an artifact where no statement parsed
  at all.
* **Coverage**: unit ``statements``; ``total`` every statement found; ``extracted`` the statements parsed. Statements
  left out at the output budget (``request.max_output_bytes``) are one failed entry and count as not extracted.
"""

from __future__ import annotations

import bisect
import itertools
import logging
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Final

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ErrorLevel, ParseError, TokenError

from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.frame import FormatContext, GcPolicy, format_module
from extract_fn.formats.output_budget import BudgetKind, output_budget
from extract_fn.text_decoding import decode_text, refuse_wide_text
from shared.artifact_builder import ArtifactBuilder, make_locator
from shared.contract import LOST_SQL_STRUCTURE, ErrorCode, ExtractionError

PARSER: Final = "loom-sql"
PARSER_VERSION: Final = f"1+sqlglot-{sqlglot.__version__}"  # type: ignore[attr-defined]  # not in its __all__
MAX_REASON_CHARS: Final = 240
HEAD_WINDOW: Final = 4000  # characters of a statement read for its leading keywords
HEAD_TOKENS: Final = 60  # tokens read for a statement's kind and names when the parser gives none
MODE_TOKENS: Final = 16  # tokens read to tell a statement's mode (procedural or not)

_WORD_START = r"A-Za-z_\u0080-\uffff"
_WORD_CHAR = r"\w$#@\u0080-\uffff"
_WS_RE: Final = re.compile(r"\s*")
_DOLLAR_TAG_RE: Final = re.compile(rf"\$(?:[{_WORD_START}][\w\u0080-\uffff]*)?\$")
_DOLLAR_OCCURRENCE_RE: Final = re.compile(rf"(?=(\$(?:[{_WORD_START}][\w\u0080-\uffff]*)?\$))")
_NESTED_COMMENT_RE: Final = re.compile(r"/\*|\*/")
_COPY_STDIN_RE: Final = re.compile(r"\bFROM\s+STDIN\b", re.IGNORECASE)
_COPY_END_RE: Final = re.compile(r"^\\\.[ \t]*\r?$", re.MULTILINE)
_GO_RE: Final = re.compile(r"^[ \t]*(GO)(?:[ \t]+\d+)?[ \t]*;?[ \t]*(?:--[^\n]*)?\r?$", re.MULTILINE | re.IGNORECASE)
_SLASH_RE: Final = re.compile(r"^[ \t]*(/)[ \t]*\r?$", re.MULTILINE)
_DELIMITER_RE: Final = re.compile(r"^[ \t]*(DELIMITER)[ \t]+(\S+)[^\n]*$", re.MULTILINE | re.IGNORECASE)

# Words after which a word starts a statement inside a procedural body (IF, WHILE, LOOP... open blocks there).
_STMT_POSITION: Final = frozenset({None, ";", "BEGIN", "THEN", "ELSE", "DO", "LOOP", ":", "ROW", "AS"})
# Words that start a statement: a declaration section ends before one (lookahead after ';').
STATEMENT_KEYWORDS: Final = frozenset(
    [
        "SELECT",
        "INSERT",
        "UPDATE",
        "DELETE",
        "MERGE",
        "UPSERT",
        "REPLACE",
        "WITH",
        "CREATE",
        "ALTER",
        "DROP",
        "TRUNCATE",
        "RENAME",
        "GRANT",
        "REVOKE",
        "SET",
        "RESET",
        "DECLARE",
        "CALL",
        "EXEC",
        "EXECUTE",
        "USE",
        "SHOW",
        "DESCRIBE",
        "DESC",
        "EXPLAIN",
        "COPY",
        "COMMIT",
        "ROLLBACK",
        "SAVEPOINT",
        "RELEASE",
        "START",
        "VALUES",
        "COMMENT",
        "ANALYZE",
        "VACUUM",
        "PRAGMA",
        "IF",
        "WHILE",
        "FOR",
        "LOOP",
        "REPEAT",
        "RETURN",
        "PRINT",
        "RAISE",
        "RAISERROR",
        "THROW",
        "GO",
        "DELIMITER",
        "LOCK",
        "UNLOCK",
        "LOAD",
        "UNLOAD",
        "OPTIMIZE",
        "REFRESH",
        "CLUSTER",
        "REINDEX",
        "ATTACH",
        "DETACH",
        "FETCH",
        "CLOSE",
        "OPEN",
        "MOVE",
        "LISTEN",
        "NOTIFY",
        "PREPARE",
        "DEALLOCATE",
        "DO",
        "INSTALL",
        "EXPORT",
        "IMPORT",
        "PUT",
        "GET",
        "LIST",
        "REMOVE",
        "UNDROP",
        "BACKUP",
        "RESTORE",
        "DBCC",
        "CHECKPOINT",
        "WAITFOR",
    ]
)
_NO_BODY_AFTER_AS: Final = frozenset({"LANGUAGE", "EXTERNAL", "RETURN", "OBJECT", "TABLE", "VARRAY", "ENUM", "RANGE"})
_TRANSACTION_WORDS: Final = frozenset(
    {"TRANSACTION", "TRAN", "WORK", "DISTRIBUTED", "DEFERRED", "IMMEDIATE", "EXCLUSIVE", "ISOLATION", "READ", "NOT"}
)
_END_FAMILIES: Final = {"IF": "IF", "LOOP": "LOOP", "WHILE": "LOOP", "FOR": "LOOP", "REPEAT": "REPEAT", "CASE": "CASE"}
_BEGIN_NOT_BLOCK: Final = frozenset({"TRANSACTION", "TRAN", "WORK", "DISTRIBUTED", "DIALOG", "CONVERSATION"})
_PROC_KINDS: Final = frozenset({"FUNCTION", "PROCEDURE", "PROC", "TRIGGER", "PACKAGE", "EVENT"})
_GO_BOUND_KINDS: Final = frozenset({"FUNCTION", "PROCEDURE", "PROC", "TRIGGER"})
_COMPOUND_STARTS: Final = frozenset({"IF", "WHILE", "LOOP", "REPEAT", "FOR", "CASE"})
_OBJECT_KINDS: Final = frozenset(
    [
        "TABLE",
        "VIEW",
        "INDEX",
        "SEQUENCE",
        "SCHEMA",
        "DATABASE",
        "TYPE",
        "DOMAIN",
        "ROLE",
        "USER",
        "EXTENSION",
        "MATERIALIZED",
        "STAGE",
        "STREAM",
        "TASK",
        "SYNONYM",
        "CAST",
        "AGGREGATE",
        "RULE",
        "POLICY",
        "COLLATION",
        "CONVERSION",
        "OPERATOR",
        "SERVER",
        "PUBLICATION",
        "SUBSCRIPTION",
        "STATISTICS",
        "TABLESPACE",
        "WAREHOUSE",
        "SHARE",
        "PIPE",
        "TAG",
        "MODEL",
        "SNAPSHOT",
        "DICTIONARY",
        "LOGIN",
        "CATALOG",
        "CONNECTION",
        "VOLUME",
        "ALIAS",
        "FUNCTION",
        "PROCEDURE",
        "PROC",
        "TRIGGER",
        "PACKAGE",
        "EVENT",
        "FOREIGN",
        "FILE",
        "ACCESS",
        "GROUP",
        "CONSTRAINT",
    ]
)
_CREATE_MODIFIERS: Final = frozenset(
    [
        "OR",
        "REPLACE",
        "ALTER",
        "TEMP",
        "TEMPORARY",
        "GLOBAL",
        "LOCAL",
        "UNIQUE",
        "CLUSTERED",
        "NONCLUSTERED",
        "UNLOGGED",
        "EXTERNAL",
        "TRANSIENT",
        "VOLATILE",
        "SECURE",
        "RECURSIVE",
        "FORCE",
        "NOFORCE",
        "EDITIONABLE",
        "NONEDITIONABLE",
        "EDITIONING",
        "FULLTEXT",
        "SPATIAL",
        "BITMAP",
        "MULTISET",
        "VIRTUAL",
        "ONLINE",
        "OFFLINE",
        "IGNORE",
        "HYBRID",
        "DYNAMIC",
        "ICEBERG",
        "COLUMNSTORE",
        "LIVE",
        "STREAMING",
        "PRIVATE",
        "PUBLIC",
        "DEFINITION",
        "CONCURRENTLY",
    ]
)
_TWO_WORD_KINDS: Final = {
    ("MATERIALIZED", "VIEW"): "materialized_view",
    ("PACKAGE", "BODY"): "package_body",
    ("TYPE", "BODY"): "type_body",
    ("FOREIGN", "TABLE"): "foreign_table",
    ("FILE", "FORMAT"): "file_format",
}
_WORD_KIND_ALIASES: Final = {"PROC": "procedure", "DESC": "describe", "EXEC": "execute"}

# sqlglot expression classes -> statement kinds (Create/Alter/Drop are handled by their ``kind``).
_EXPR_KINDS: Final[dict[type[exp.Expr], str]] = {
    exp.Insert: "insert",
    exp.Update: "update",
    exp.Delete: "delete",
    exp.Merge: "merge",
    exp.Select: "select",
    exp.Union: "select",
    exp.Intersect: "select",
    exp.Except: "select",
    exp.Copy: "copy",
    exp.Set: "set",
    exp.Use: "use",
    exp.TruncateTable: "truncate",
    exp.Transaction: "begin",
    exp.Commit: "commit",
    exp.Rollback: "rollback",
    exp.Grant: "grant",
    exp.Revoke: "revoke",
    exp.Comment: "comment",
    exp.Describe: "describe",
    exp.Show: "show",
    exp.Pragma: "pragma",
    exp.Analyze: "analyze",
    exp.Declare: "declare",
    exp.Values: "values",
    exp.Cache: "cache",
    exp.Uncache: "uncache",
    exp.LoadData: "load",
}


# ---------------------------------------------------------------------------------------------------------------
# Dialect configuration of the scanner


@dataclass(frozen=True, slots=True)
class ScanConfig:
    """What the scanner treats as quotes, comments and separators; derived from a sqlglot dialect."""

    name: str  # "" for generic
    string_quotes: frozenset[str]  # single-char quotes that delimit strings
    ident_quotes: dict[str, str]  # identifier quote start -> end
    backslash_strings: bool  # backslash escapes in strings
    backslash_idents: bool
    triple_quotes: bool  # ''' and """ (BigQuery)
    e_strings: bool  # Postgres E'...' with backslash escapes
    q_quotes: bool  # Oracle q'[...]'
    line_comments: tuple[str, ...]
    nested_comments: bool
    dollar: bool  # $$ and $tag$ quoting
    dollar_tags: bool  # $tag$ (else only $$)
    go: bool  # T-SQL GO batch separators
    delimiter: bool  # MySQL DELIMITER lines
    slash_ends_plain: bool  # "/" on its own line ends any statement (Oracle), not only PL/SQL blocks
    psql_meta: bool  # psql backslash meta-command lines


def dialect_name(dialect: Dialect, asked: str | None = None) -> str:
    """The registered name of a dialect ("" for generic SQL), whatever settings it was asked with.

    ``asked`` is what ``Dialect.get_or_raise`` was given ("name" or "name, setting = value"): when its name's class is
    the dialect's, that name is the answer (the registry maps each class from one name only). Else the name is found
    in the whole registry, which is what reading ``Dialect.classes`` costs: it imports all of sqlglot's dialects
    (about 0.2 s and 37 MB of a worker that serves one), so it is only the fallback."""
    cls = type(dialect)
    if cls is Dialect:
        return ""
    if asked:
        name = asked.split(",", 1)[0].strip()
        if name and Dialect.get(name) is cls:
            return name
    return next((k for k, v in Dialect.classes.items() if v is cls), "")


def scan_config(dialect: str | None) -> ScanConfig:
    d = Dialect.get_or_raise(dialect)
    name = dialect_name(d, dialect)
    tok = d.tokenizer_class
    quotes = [q for q in tok.QUOTES if isinstance(q, str)]
    singles = frozenset(q for q in quotes if len(q) == 1)
    idents: dict[str, str] = {}
    for ident in tok.IDENTIFIERS:
        if isinstance(ident, tuple):
            idents[ident[0]] = ident[1]
        elif len(ident) == 1 and ident not in singles:
            idents[ident] = ident
    if not name:
        idents.setdefault("`", "`")  # generic reads MySQL-style identifiers too: a backtick is never anything else
    heredocs = set(tok.HEREDOC_STRINGS) | {r for r in tok.RAW_STRINGS if isinstance(r, str)}
    comments = tuple(c for c in tok.COMMENTS if isinstance(c, str) and c not in ("#!",))
    raw_prefixes = [r[0] if isinstance(r, tuple) else r for r in tok.RAW_STRINGS]
    byte_strings = [b[0] if isinstance(b, tuple) else b for b in tok.BYTE_STRINGS]
    return ScanConfig(
        name=name,
        string_quotes=singles,
        ident_quotes=idents,
        backslash_strings="\\" in tok.STRING_ESCAPES,
        backslash_idents="\\" in tok.IDENTIFIER_ESCAPES,
        triple_quotes="'''" in quotes or '"""' in quotes,
        e_strings=not name or ("E'" in byte_strings and "\\" in getattr(tok, "BYTE_STRING_ESCAPES", ())),
        q_quotes=not name or "q'[" in raw_prefixes,
        line_comments=comments,
        nested_comments=bool(tok.NESTED_COMMENTS),
        dollar=not name or "$" in heredocs or "$$" in heredocs,
        dollar_tags=not name or "$" in heredocs,
        go=name in ("", "tsql", "fabric"),
        delimiter=name in ("", "mysql", "doris", "starrocks", "singlestore"),
        slash_ends_plain=name == "oracle",
        psql_meta=name in ("", "postgres", "redshift", "materialize", "risingwave"),
    )


# ---------------------------------------------------------------------------------------------------------------
# The scanner


@dataclass(slots=True)
class _Tok:
    kind: str  # W word, Q quoted identifier, S string, P punctuation, N number
    value: str  # W: upper-cased; Q: the inner text; P: the character
    raw: str
    start: int


@dataclass(slots=True)
class Statement:
    start: int  # first character: a leading comment's or the first token's
    end: int  # exclusive: after its last non-blank character, before the terminator
    body: int  # the first token (after leading comments)
    procedural: bool
    max_depth: int  # deepest parenthesis nesting seen
    head: list[_Tok] = field(default_factory=list)  # the first tokens (enough to tell the statement's mode)
    copy_data: tuple[int, int] | None = None  # COPY ... FROM stdin rows, [start, end)


@dataclass(slots=True)
class _Frame:
    kind: str  # BEGIN, CASE, IF, LOOP, REPEAT, DECL
    begun: bool = False  # DECL: its BEGIN was seen
    from_declare: bool = False  # DECL opened by a DECLARE (not by a subprogram's IS/AS)


@dataclass(slots=True)
class _BodyState:
    """Where a procedural body's scan stands."""

    stack: list[_Frame] = field(default_factory=list)  # open blocks
    prev: str | None = None  # the previous token (upper-cased word or character; "STR" for a quoted run)
    depth: int = 0  # parenthesis depth
    pending_if: tuple[int, int] | None = None  # (stack size, depth) of an IF waiting for its THEN
    pending_loop: tuple[int, int] | None = None  # of a WHILE/FOR waiting for its DO/LOOP
    pending_sub: bool = False  # FUNCTION/PROCEDURE/PACKAGE seen, its IS/AS not yet


@dataclass(slots=True)
class _Marker:
    kind: str  # GO, SLASH, DELIMITER
    line_end: int  # index of the line's end (its "\n" or len(text))
    arg: str = ""


class Scanner:
    """Splits SQL text into statements exactly, with the quoting and block rules of one dialect."""

    def __init__(self, text: str, cfg: ScanConfig) -> None:
        self.text = text
        self.n = len(text)
        self.cfg = cfg
        self.markers = self._find_markers()
        self.go_mode = any(m.kind == "GO" for m in self.markers.values())
        self._regex_cache: dict[tuple[bool, str], re.Pattern[str]] = {}
        self._string_res: dict[tuple[str, bool], re.Pattern[str]] = {}
        # Searches that failed once fail again from any later position: remembered so that hostile text cannot
        # make the scan quadratic.
        self._nesting = cfg.nested_comments  # off after a nested comment ran unbalanced to the end
        self._tag_index: dict[str, list[int]] | None = None  # dollar tag -> where it occurs (built on first use)
        self._no_copy_end_after: int | None = None  # no "\." line after this position
        self._bodies = True  # off after a procedural body ran unbalanced to the end

    # -- markers (whole lines that are no SQL) ---------------------------------------------------------------------

    def _find_markers(self) -> dict[int, _Marker]:
        """Marker lines keyed by the position of their first non-blank character."""
        text, cfg = self.text, self.cfg
        found: dict[int, _Marker] = {}
        if cfg.go and ("GO" in text or "go" in text or "Go" in text or "gO" in text):
            for m in _GO_RE.finditer(text):
                found[m.start(1)] = _Marker("GO", m.end())
        if "/" in text:
            for m in _SLASH_RE.finditer(text):
                found[m.start(1)] = _Marker("SLASH", m.end())
        if cfg.delimiter:
            for m in _DELIMITER_RE.finditer(text):
                found[m.start(1)] = _Marker("DELIMITER", m.end(), m.group(2))
        return found

    def _marker_at_line(self, nl: int) -> tuple[int, _Marker] | None:
        """The marker on the line after the newline at ``nl``, with its position."""
        p = nl + 1
        n, text = self.n, self.text
        while p < n and text[p] in " \t":
            p += 1
        mk = self.markers.get(p)
        return (p, mk) if mk is not None else None

    # -- regexes --------------------------------------------------------------------------------------------------

    def _special_re(self, words: bool, delim: str) -> re.Pattern[str]:
        key = (words, delim)
        pat = self._regex_cache.get(key)
        if pat is None:
            cfg = self.cfg
            chars = set("'\"`-/();")
            chars |= set(cfg.string_quotes) | {q[0] for q in cfg.ident_quotes}
            for c in cfg.line_comments:
                chars.add(c[0])
            if cfg.dollar and "$" not in delim:
                chars.add("$")
            if self.markers:
                chars.add("\n")
            if delim != ";":
                chars.add(delim[0])
            cls = "[" + "".join(re.escape(c) for c in sorted(chars)) + "]"
            if words:
                lead = "@#" if "#" not in cfg.line_comments else "@"
                pat = re.compile(rf"[{lead}]*[{_WORD_START}][{_WORD_CHAR}]*|{cls}|[^\s\w]")
            else:
                pat = re.compile(cls)
            self._regex_cache[key] = pat
        return pat

    def _string_re(self, q: str, backslash: bool) -> re.Pattern[str]:
        key = (q, backslash)
        pat = self._string_res.get(key)
        if pat is None:
            e = re.escape(q)
            if len(q) == 3:  # triple quote: any character, escapes where the dialect has them
                inner = rf"(?:[^{e[-1]}\\]|\\[\s\S]|{e[-1]}(?!{e[-1]}{e[-1]}))*" if backslash else r"[\s\S]*?"
                pat = re.compile(rf"{e}{inner}{e}")
            elif backslash:
                pat = re.compile(rf"{e}[^{e}\\]*(?:(?:{e}{e}|\\[\s\S])[^{e}\\]*)*{e}")
            else:
                pat = re.compile(rf"{e}[^{e}]*(?:{e}{e}[^{e}]*)*{e}")
            self._string_res[key] = pat
        return pat

    # -- skipping quoted runs and comments ------------------------------------------------------------------------

    def _word_before(self, i: int) -> bool:
        """Whether the character before ``i`` continues a word (so a prefix letter there is no prefix)."""
        if i <= 0:
            return False
        c = self.text[i - 1]
        return c.isalnum() or c in "_$#@"

    def skip_quoted(self, i: int) -> int | None:
        """End (exclusive) of the string or quoted identifier starting at ``i``, or None when ``i`` starts none."""
        text, cfg = self.text, self.cfg
        c = text[i]
        if c == "'" and 0 < i < self.n - 1 and cfg.q_quotes and text[i - 1] in "qQ" and not self._word_before(i - 1):
            opener = text[i + 1]
            closer = {"[": "]", "{": "}", "(": ")", "<": ">"}.get(opener, opener) + "'"
            j = text.find(closer, i + 2)
            return self.n if j < 0 else j + 2
        if c in cfg.string_quotes or (c == "'" and c not in cfg.ident_quotes):
            if cfg.triple_quotes and text.startswith(c * 3, i):
                m = self._string_re(c * 3, cfg.backslash_strings).match(text, i)
                return m.end() if m else self.n
            backslash = cfg.backslash_strings or (
                c == "'" and cfg.e_strings and i > 0 and text[i - 1] in "eE" and not self._word_before(i - 1)
            )
            m = self._string_re(c, backslash).match(text, i)
            return m.end() if m else self.n
        end = cfg.ident_quotes.get(c)
        if end is not None and end != c:  # [ident]: ']]' escapes ']'
            j = i + 1
            while True:
                k = text.find(end, j)
                if k < 0:
                    return self.n
                if not text.startswith(end * 2, k):
                    return k + 1
                j = k + 2
        if end is not None or c == '"':  # a double quote that is neither string nor identifier: still skipped
            m = self._string_re(c, end is not None and cfg.backslash_idents).match(text, i)
            return m.end() if m else self.n
        return None

    def skip_comment(self, i: int) -> int | None:
        """End of the comment starting at ``i`` (a line comment ends before its newline), or None."""
        text = self.text
        if text.startswith("/*", i):
            if not self._nesting:
                j = text.find("*/", i + 2)
                return self.n if j < 0 else j + 2
            depth = 0
            for m in _NESTED_COMMENT_RE.finditer(text, i):
                if m.group() == "/*":
                    depth += 1
                else:
                    depth -= 1
                    if depth == 0:
                        return m.end()
            # unbalanced nesting: read it (and every later comment) flat rather than eat the file
            self._nesting = False
            j = text.find("*/", i + 2)
            return self.n if j < 0 else j + 2
        for lc in self.cfg.line_comments:
            if text.startswith(lc, i):
                j = text.find("\n", i)
                return self.n if j < 0 else j
        return None

    def skip_dollar(self, i: int) -> int | None:
        text = self.text
        if not self.cfg.dollar or self._word_before(i):
            return None
        m = _DOLLAR_TAG_RE.match(text, i)
        if m is None:
            return None
        tag = m.group()
        if tag != "$$" and not self.cfg.dollar_tags:
            return None
        if self._tag_index is None:  # every occurrence of every tag, so that no search rescans the text
            self._tag_index = {}
            for occ in _DOLLAR_OCCURRENCE_RE.finditer(text):
                self._tag_index.setdefault(occ.group(1), []).append(occ.start())
        places = self._tag_index.get(tag, [])
        k = bisect.bisect_left(places, m.end())
        return None if k >= len(places) else places[k] + len(tag)

    def skip_ws_comments(self, i: int) -> int:
        text, n = self.text, self.n
        while True:
            i = _WS_RE.match(text, i).end()  # type: ignore[union-attr]
            if i >= n:
                return n
            e = self.skip_comment(i)
            if e is None:
                return i
            i = e

    # -- tokens after a position (lookahead) ----------------------------------------------------------------------

    def peek(self, i: int) -> tuple[str, str, int]:
        """The next token after ``i``: (kind, value, start); kind W (word, upper-cased), S (string or dollar
        quote), P (other character) or E (the end)."""
        j = self.skip_ws_comments(i)
        if j >= self.n:
            return "E", "", j
        text = self.text
        c = text[j]
        if c in "'\"`" or (c == "$" and self.skip_dollar(j) is not None):
            return "S", c, j
        m = _PEEK_WORD_RE.match(text, j)
        if m:
            w = m.group()
            if m.end() < self.n and text[m.end()] in "'\"" and len(w) <= 2:  # r'..', b"..", N'..', E'..'
                return "S", w, j
            return "W", w.upper(), j
        return "P", c, j

    # -- splitting ------------------------------------------------------------------------------------------------

    def split(self) -> tuple[list[Statement], int]:
        """The statements in order, and the number of marker lines seen."""
        text, n = self.text, self.n
        out: list[Statement] = []
        pos = 0
        delim = ";"
        while True:
            pos = _WS_RE.match(text, pos).end()  # type: ignore[union-attr]
            if pos >= n:
                break
            mk = self.markers.get(pos)
            if mk is not None:
                if mk.kind == "DELIMITER":
                    delim = mk.arg
                pos = mk.line_end
                continue
            if self.cfg.psql_meta and text[pos] == "\\":
                j = text.find("\n", pos)
                pos = n if j < 0 else j + 1
                continue
            stmt, pos, delim = self._statement(pos, delim)
            if stmt is not None:
                out.append(stmt)
        return out, len(self.markers)

    def _statement(self, start: int, delim: str) -> tuple[Statement | None, int, str]:
        """Scan one statement from ``start``: (the statement or None for a comment-only stretch, where to go on,
        the delimiter in force)."""
        text, n = self.text, self.n
        # leading comments
        body = start
        while True:
            body = _WS_RE.match(text, body).end()  # type: ignore[union-attr]
            if body >= n:
                return None, n, delim
            mk = self.markers.get(body)
            if mk is not None:
                return None, body, delim  # the boundary loop handles the marker line
            if text.startswith(delim, body):
                return None, body + len(delim), delim
            e = self.skip_comment(body)
            if e is None:
                break
            body = e
        lazy = LazyTokens(self, body, MODE_TOKENS)
        procedural, go_bound = self._mode(lazy)
        procedural = procedural and (self._bodies or go_bound)
        return self._scan_body(start, body, delim, procedural=procedural, go_bound=go_bound, head=lazy.read)

    def _mode(self, head: LazyTokens) -> tuple[bool, bool]:
        """(procedural, bound to the next GO) from the leading tokens."""
        t0 = head.get(0)
        if t0 is None or t0.kind != "W":
            return False, False
        w0 = t0.value
        if w0 in ("CREATE", "ALTER"):
            for k in range(1, MODE_TOKENS):
                t = head.get(k)
                if t is None or (t.kind == "P" and t.value in "(;"):
                    break
                if t.kind != "W":
                    continue
                v = t.value
                nxt = head.get(k + 1) if v == "TYPE" else None
                if v in _PROC_KINDS or (nxt is not None and nxt.value == "BODY"):
                    if w0 == "ALTER" and v not in _GO_BOUND_KINDS and v != "PACKAGE":
                        return False, False
                    return True, self.go_mode and v in _GO_BOUND_KINDS
                if v in _OBJECT_KINDS:
                    break
            return False, False
        nxt = head.get(1)
        if w0 == "DECLARE":
            return not (nxt is not None and nxt.raw.startswith("@")), False
        if w0 == "BEGIN":
            if nxt is None or (nxt.kind == "P" and nxt.value == ";") or nxt.value in _TRANSACTION_WORDS:
                return False, False
            return True, False
        return w0 in _COMPOUND_STARTS, False

    def _scan_body(
        self, start: int, body: int, delim: str, *, procedural: bool, go_bound: bool, head: list[_Tok]
    ) -> tuple[Statement | None, int, str]:
        text, n, cfg = self.text, self.n, self.cfg
        custom = delim != ";"
        words = procedural and not custom and not go_bound  # only a procedural body needs its words
        special = self._special_re(words, delim)
        markers = self.markers
        st = _BodyState()
        max_depth = 0
        first_semi: int | None = None
        i = body

        def finish(end: int, resume: int) -> tuple[Statement | None, int, str]:
            while end > start and text[end - 1].isspace():
                end -= 1
            if end <= body:
                return None, resume, delim
            return Statement(start, end, body, procedural, max_depth, head), resume, delim

        while True:
            m = special.search(text, i)
            if m is None:
                break
            j = m.start()
            tok = m.group()
            c = tok[0]
            i = m.end()
            if custom and text.startswith(delim, j):
                return finish(j, j + len(delim))
            if words and (c.isalpha() or c == "_" or (c in "@#" and len(tok) > 1)):
                w = tok.upper()
                i, end_at = self._word(w, i, st, custom)
                if end_at is not None:  # END followed by a new statement: end here
                    return finish(end_at, end_at)
                st.prev = w
                continue
            if c == ";":
                if custom or go_bound:
                    st.prev = ";"
                    continue
                st.depth = 0
                st.pending_if = st.pending_loop = None
                st.pending_sub = False
                if first_semi is None:
                    first_semi = j
                if not st.stack:
                    return self._after_terminator(finish(j, j + 1), head)
                if len(st.stack) == 1 and st.stack[0].kind == "DECL" and not st.stack[0].begun:
                    kind, val, _ = self.peek(i)
                    if kind == "E" or (kind == "W" and val in STATEMENT_KEYWORDS):
                        return self._after_terminator(finish(j, j + 1), head)
                st.prev = ";"
                continue
            if c == "\n":
                if markers:
                    hit = self._marker_at_line(j)
                    if hit is not None:
                        p, mk = hit
                        if mk.kind in ("GO", "DELIMITER"):
                            return finish(j, p)
                        if mk.kind == "SLASH" and (procedural or cfg.slash_ends_plain):
                            return finish(j, mk.line_end)
                continue
            if c == "(":
                st.depth += 1
                max_depth = max(max_depth, st.depth)
                st.prev = "("
                continue
            if c == ")":
                st.depth = max(0, st.depth - 1)
                st.prev = ")"
                continue
            if c in "-/#":
                e = self.skip_comment(j)
                if e is not None:
                    i = e
                    continue
                st.prev = c
                continue
            if c == "$":
                e = self.skip_dollar(j)
                if e is not None:
                    i = e
                    st.prev = "STR"
                continue
            e = self.skip_quoted(j)
            if e is not None:
                i = e
                st.prev = "STR"
                continue
            st.prev = c
        # end of text
        if words and st.stack and first_semi is not None:
            # an unbalanced body: rather than swallow the rest of the file, end at its first semicolon; later
            # statements are split at semicolons only (else each would rescan to the end: quadratic)
            self._bodies = False
            return self._after_terminator(finish(first_semi, first_semi + 1), head)
        return finish(n, n)

    def _word(self, w: str, i: int, st: _BodyState, custom: bool) -> tuple[int, int | None]:
        """One word of a procedural statement (ending at ``i``): updates the block stack. Returns where scanning
        goes on and, when not None, where the statement ends (an END that closes the outermost block and is
        followed by a new statement, as T-SQL writes them without a semicolon)."""
        if w == "BEGIN":
            self._begin(i, st)
        elif w == "CASE":
            st.stack.append(_Frame("CASE"))
        elif w == "END":
            return self._end(i, st, custom)
        elif w in _CONTROL_WORDS:
            _control_word(w, st)
        elif w in _SUBPROGRAM_WORDS:
            self._subprogram_word(w, i, st)
        elif not st.stack and w in STATEMENT_KEYWORDS:
            st.pending_sub = False  # the body started without IS/AS (MySQL, T-SQL)
        return i, None

    def _begin(self, i: int, st: _BodyState) -> None:
        """BEGIN: a block (or the body of a declaration section), unless it begins a transaction."""
        kind, val, _ = self.peek(i)
        if (kind == "P" and val == ";") or (kind == "W" and val in _BEGIN_NOT_BLOCK):
            return  # a transaction
        stack = st.stack
        if stack and stack[-1].kind == "DECL" and not stack[-1].begun:
            stack[-1].begun = True
        else:
            stack.append(_Frame("BEGIN"))
        st.pending_if = st.pending_loop = None
        st.pending_sub = False

    def _end(self, i: int, st: _BodyState, custom: bool) -> tuple[int, int | None]:
        """END (``END IF``, ``END LOOP``...): closes a block; the statement ends after the outermost one when a new
        statement follows."""
        stack = st.stack
        kind, val, at = self.peek(i)
        family = _END_FAMILIES.get(val) if kind == "W" else None
        if family is not None:
            i = at + len(val)
            if stack and stack[-1].kind == family:
                stack.pop()
        elif stack:
            stack.pop()
        if not stack and not custom:
            kind2, val2, _ = self.peek(i)
            if kind2 == "W" and val2 in STATEMENT_KEYWORDS:
                return i, i
        return i, None

    def _subprogram_word(self, w: str, i: int, st: _BodyState) -> None:
        """DECLARE, FUNCTION/PROCEDURE/PROC/PACKAGE, TYPE BODY, IS/AS: declaration sections and subprogram heads."""
        stack = st.stack
        if w == "DECLARE":
            if not stack:
                _, _, at = self.peek(i)
                if not self.text.startswith("@", at):
                    stack.append(_Frame("DECL", from_declare=True))
        elif w == "TYPE":
            kind, val, _ = self.peek(i)
            if kind == "W" and val == "BODY" and st.depth == 0 and not stack:
                st.pending_sub = True
        elif w in ("IS", "AS"):
            if st.pending_sub and st.depth == 0 and st.prev not in ("EXECUTE", "EXEC"):
                st.pending_sub = False
                kind, val, _ = self.peek(i)
                no_section = kind in ("S", "E") or (kind == "P" and val == "(")
                no_section = no_section or (kind == "W" and (val in _NO_BODY_AFTER_AS or val in STATEMENT_KEYWORDS))
                if not no_section:
                    stack.append(_Frame("DECL"))  # Oracle's declaration section: its semicolons end nothing
        elif st.depth == 0 and (not stack or (stack[-1].kind == "DECL" and not stack[-1].begun)):
            st.pending_sub = True  # FUNCTION, PROCEDURE, PROC, PACKAGE

    def _after_terminator(
        self, result: tuple[Statement | None, int, str], head: list[_Tok]
    ) -> tuple[Statement | None, int, str]:
        """Attach ``COPY ... FROM stdin`` data (up to its ``\\.`` line) to the statement just ended by ';'."""
        stmt, resume, delim = result
        if stmt is None or not head or head[0].value != "COPY":
            return result
        text = self.text
        if not _COPY_STDIN_RE.search(text, stmt.body, stmt.end):
            return result
        nl = text.find("\n", resume)
        if nl < 0 or text[resume:nl].strip():
            return result
        if self._no_copy_end_after is not None and nl >= self._no_copy_end_after:
            return result
        m = _COPY_END_RE.search(text, nl + 1)
        if m is None:
            self._no_copy_end_after = nl
            return result
        data_end = m.start()
        stmt.copy_data = (nl + 1, data_end)
        return stmt, m.end(), delim


_CONTROL_WORDS: Final = frozenset({"IF", "THEN", "WHILE", "FOR", "DO", "LOOP", "REPEAT"})
_SUBPROGRAM_WORDS: Final = frozenset({"DECLARE", "FUNCTION", "PROCEDURE", "PROC", "PACKAGE", "TYPE", "IS", "AS"})


def _control_word(w: str, st: _BodyState) -> None:
    """IF ... THEN, WHILE/FOR ... DO/LOOP, LOOP, REPEAT: control blocks, opened where a statement may start."""
    stack = st.stack
    here = (len(stack), st.depth)
    if w == "IF":
        if st.prev in _STMT_POSITION:
            st.pending_if = here
    elif w == "THEN":
        if st.pending_if == here:
            stack.append(_Frame("IF"))
            st.pending_if = None
    elif w in ("WHILE", "FOR"):
        if st.prev in _STMT_POSITION:
            st.pending_loop = here
    elif w in ("DO", "LOOP"):
        if st.pending_loop == here:
            stack.append(_Frame("LOOP"))
            st.pending_loop = None
        elif w == "LOOP" and st.prev in _STMT_POSITION:
            stack.append(_Frame("LOOP"))
    elif st.prev in _STMT_POSITION:  # REPEAT
        stack.append(_Frame("REPEAT"))


_NAME_OK: Final = re.compile(r"[^\W_]|_")  # a name holds at least one word character
_PEEK_WORD_RE: Final = re.compile(rf"[@#]*[{_WORD_START}][{_WORD_CHAR}]*")
_BRACKET_IDENT_RE: Final = re.compile(r"\[([^\]\[\n'\"]*)\]")
_HEAD_RE: Final = re.compile(
    rf"(?P<w>[@#]*[{_WORD_START}][{_WORD_CHAR}]*)|(?P<n>\d[\w.]*)|(?P<ws>\s+)|(?P<p>[^\s\w])",
)


def iter_tokens(scanner: Scanner, body: int) -> Iterator[_Tok]:
    """The tokens of a statement from ``body`` on, within ``HEAD_WINDOW`` characters: comments skipped, quoted runs
    one token (strings S, identifiers Q: ``"x"``, backticks and ``[x]`` brackets, even where the dialect does not
    quote with them, as a name reader wants), words W upper-cased, numbers N, other characters P; stops after ``;``."""
    text = scanner.text
    end = min(scanner.n, body + HEAD_WINDOW)
    i = body
    while i < end:
        c = text[i]
        if c in "-/#":
            e = scanner.skip_comment(i)
            if e is not None:
                i = e
                continue
        if c == "[":
            m = _BRACKET_IDENT_RE.match(text, i)
            if m is not None:
                yield _Tok("Q", m.group(1), m.group(), i)
                i = m.end()
                continue
        elif c in "'\"`$":
            e = scanner.skip_dollar(i) if c == "$" else scanner.skip_quoted(i)
            if e is not None:
                raw = text[i:e]
                if c in "'$" or (c == '"' and c in scanner.cfg.string_quotes):
                    yield _Tok("S", raw, raw, i)
                else:
                    yield _Tok("Q", raw[1:-1] if len(raw) >= 2 else raw[1:], raw, i)
                i = e
                continue
        m = _HEAD_RE.match(text, i)
        if m is None:  # pragma: no cover - the pattern matches any character
            return
        i = m.end()
        kind = m.lastgroup
        if kind == "ws":
            continue
        raw = m.group()
        if kind == "w":
            yield _Tok("W", raw.upper(), raw, m.start())
        elif kind == "n":
            yield _Tok("N", raw, raw, m.start())
        else:
            yield _Tok("P", raw, raw, m.start())
            if raw == ";":
                return


def head_tokens(scanner: Scanner, body: int, limit: int = HEAD_TOKENS) -> list[_Tok]:
    """The first ``limit`` tokens of a statement (see ``iter_tokens``)."""
    return list(itertools.islice(iter_tokens(scanner, body), limit))


class LazyTokens:
    """A statement's leading tokens, read only as far as they are asked for."""

    def __init__(self, scanner: Scanner, body: int, limit: int) -> None:
        self._it = itertools.islice(iter_tokens(scanner, body), limit)
        self.read: list[_Tok] = []

    def get(self, k: int) -> _Tok | None:
        while len(self.read) <= k:
            t = next(self._it, None)
            if t is None:
                return None
            self.read.append(t)
        return self.read[k]


# ---------------------------------------------------------------------------------------------------------------
# Kinds and names from the leading keywords


def _read_name(toks: list[_Tok], k: int) -> tuple[str | None, int]:
    """A dotted name (words and quoted identifiers) at ``toks[k]``: (its unquoted qualified text, next index)."""
    parts: list[str] = []
    while k < len(toks):
        t = toks[k]
        if t.kind in ("W", "Q"):
            parts.append(t.raw if t.kind == "W" else t.value)
            k += 1
            if k < len(toks) and toks[k].kind == "P" and toks[k].value == ".":
                k += 1
                while k < len(toks) and toks[k].kind == "P" and toks[k].value == ".":  # db..table
                    k += 1
                continue
            break
        break
    parts = [p for p in parts if p]
    return (_qualified(parts) if parts else None), k


def _skip_words(toks: list[_Tok], k: int, *words: str) -> int:
    """Skip the exact word sequence at ``k`` when it is there."""
    for off, w in enumerate(words):
        if k + off >= len(toks) or toks[k + off].kind != "W" or toks[k + off].value != w:
            return k
    return k + len(words)


def _find_word(toks: list[_Tok], k: int, word: str, limit: int = 40) -> int | None:
    for idx in range(k, min(len(toks), k + limit)):
        if toks[idx].kind == "W" and toks[idx].value == word:
            return idx
        if toks[idx].kind == "P" and toks[idx].value == ";":
            return None
    return None


@dataclass(slots=True)
class KeywordInfo:
    kind: str
    defines: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)


def keyword_info(toks: list[_Tok], procedural: bool) -> KeywordInfo:
    """Statement kind and the names its leading keywords give."""
    k = 0
    while k < len(toks) and toks[k].kind == "P" and toks[k].value == "(":
        k += 1  # (SELECT ...) UNION ...
    if k >= len(toks) or toks[k].kind != "W":
        return KeywordInfo("unknown")
    w0 = toks[k].value
    k += 1
    if w0 in ("CREATE", "ALTER", "DROP"):
        return _ddl_info(toks, k, w0)
    if w0 == "WITH":
        depth = 0
        for t in toks[k:]:
            if t.kind == "P" and t.value == "(":
                depth += 1
            elif t.kind == "P" and t.value == ")":
                depth -= 1
            elif depth == 0 and t.kind == "W" and t.value in ("SELECT", "INSERT", "UPDATE", "DELETE", "MERGE"):
                return keyword_info([t, *toks[toks.index(t) + 1 :]], procedural)
        return KeywordInfo("select")
    info = KeywordInfo(_WORD_KIND_ALIASES.get(w0, w0.lower()))
    target: str | None = None
    if w0 in ("INSERT", "REPLACE", "UPSERT"):
        while (
            k < len(toks)
            and toks[k].kind == "W"
            and toks[k].value
            in (
                "INTO",
                "OVERWRITE",
                "TABLE",
                "IGNORE",
                "LOW_PRIORITY",
                "HIGH_PRIORITY",
                "DELAYED",
                "OR",
                "ROLLBACK",
                "ABORT",
                "FAIL",
                "REPLACE",
                "ALL",
                "FIRST",
            )
        ):
            k += 1
        target, _ = _read_name(toks, k)
        info.kind = "insert" if w0 == "INSERT" else info.kind
    elif w0 == "UPDATE":
        while k < len(toks) and toks[k].kind == "W" and toks[k].value in ("LOW_PRIORITY", "IGNORE", "ONLY", "TOP"):
            k += 1
        target, _ = _read_name(toks, k)
    elif w0 == "DELETE":
        k = _skip_words(toks, k, "FROM")
        k = _skip_words(toks, k, "ONLY")
        target, _ = _read_name(toks, k)
    elif w0 == "MERGE":
        k = _skip_words(toks, k, "INTO")
        target, _ = _read_name(toks, k)
    elif w0 == "TRUNCATE":
        k = _skip_words(toks, k, "TABLE")
        k = _skip_words(toks, k, "ONLY")
        target, _ = _read_name(toks, k)
    elif w0 == "COPY":
        target, _ = _read_name(toks, k)
    elif w0 in ("CALL", "EXEC", "EXECUTE"):
        target, _ = _read_name(toks, k)
        if target is not None and target.upper() in ("IMMEDIATE", "AS", "SP_EXECUTESQL"):
            target = None
    elif w0 == "COMMENT":
        k = _skip_words(toks, k, "ON")
        if k < len(toks) and toks[k].kind == "W":
            k += 1
            target, _ = _read_name(toks, k)
    elif w0 == "BEGIN":
        info.kind = "block" if procedural else "begin"
    elif w0 == "DECLARE":
        info.kind = "block" if procedural else "declare"
    elif w0 == "END":
        info.kind = "commit"
    if target is not None and target.upper() not in ("SELECT", "VALUES", "SET"):
        info.references.append(target)
    return info


def _ddl_info(toks: list[_Tok], k: int, verb: str) -> KeywordInfo:
    # modifiers (OR REPLACE, TEMPORARY, DEFINER = user, ALGORITHM = x, SQL SECURITY x, ...)
    while k < len(toks):
        t = toks[k]
        if t.kind == "W" and t.value in _CREATE_MODIFIERS and not (t.value == "ALTER" and verb != "CREATE"):
            k += 1
            continue
        if t.kind == "W" and t.value in ("DEFINER", "ALGORITHM"):
            k += 1
            if k < len(toks) and toks[k].value == "=":
                k += 1
            while k < len(toks) and not (
                toks[k].kind == "W" and (toks[k].value in _OBJECT_KINDS or toks[k].value in _CREATE_MODIFIERS)
            ):
                if toks[k].kind == "W" and toks[k].value == "SQL":
                    break
                k += 1
            continue
        if t.kind == "W" and t.value == "SQL" and k + 1 < len(toks) and toks[k + 1].value == "SECURITY":
            k += 3
            continue
        break
    if k >= len(toks) or toks[k].kind != "W":
        return KeywordInfo(verb.lower())
    word = toks[k].value
    nxt = toks[k + 1].value if k + 1 < len(toks) and toks[k + 1].kind == "W" else ""
    two = _TWO_WORD_KINDS.get((word, nxt))
    if two is not None:
        kind_word = two
        k += 2
    else:
        kind_word = _WORD_KIND_ALIASES.get(word, word.lower())
        k += 1
        if word == "DATA" and nxt == "WRAPPER":  # FOREIGN DATA WRAPPER
            k += 1
    info = KeywordInfo(f"{verb.lower()}_{kind_word}")
    k = _skip_words(toks, k, "IF", "NOT", "EXISTS")
    k = _skip_words(toks, k, "IF", "EXISTS")
    if kind_word == "index":
        k = _skip_words(toks, k, "CONCURRENTLY")
        k = _skip_words(toks, k, "IF", "NOT", "EXISTS")
    name: str | None = None
    if not (k < len(toks) and toks[k].kind == "W" and toks[k].value == "ON"):
        name, k = _read_name(toks, k)
    if verb == "DROP":
        names = [name] if name else []
        while k < len(toks) and toks[k].kind == "P" and toks[k].value == ",":
            more, k = _read_name(toks, k + 1)
            if more:
                names.append(more)
        info.references.extend(names)
    elif name:
        info.defines.append(name)
    if kind_word in ("index", "trigger") and verb != "DROP":
        on = _find_word(toks, k, "ON")
        if on is not None:
            k2 = on + 1
            k2 = _skip_words(toks, k2, "ONLY")
            table, _ = _read_name(toks, k2)
            if table:
                info.references.append(table)
    return info


_REF_WORDS: Final = frozenset({"FROM", "JOIN", "INTO", "REFERENCES", "UPDATE", "TABLE"})
_NOT_NAMES: Final = frozenset(
    [
        "WHERE",
        "GROUP",
        "ORDER",
        "HAVING",
        "LIMIT",
        "OFFSET",
        "ON",
        "USING",
        "AS",
        "VALUES",
        "UNION",
        "INTERSECT",
        "EXCEPT",
        "JOIN",
        "LEFT",
        "RIGHT",
        "INNER",
        "OUTER",
        "FULL",
        "CROSS",
        "NATURAL",
        "FROM",
        "WINDOW",
        "QUALIFY",
        "INTO",
        "DEFAULT",
        "NULL",
        "TABLE",
        "LATERAL",
        "ONLY",
        "UNNEST",
        "IF",
        "EXISTS",
        "NOT",
        "AND",
        "OR",
        "WHEN",
        "THEN",
        "ELSE",
        "END",
        "CASE",
        "TEMP",
        "TEMPORARY",
    ]
)


def scanned_references(scanner: Scanner, st: Statement) -> list[str]:
    """Names after FROM/JOIN/INTO/UPDATE/TABLE at the statement's top level and after REFERENCES anywhere: the
    references of a statement the parser could not read (nested FROMs, as in ``EXTRACT(YEAR FROM d)``, are left
    out on purpose)."""
    text = scanner.text
    out: list[str] = []
    depth = 0
    i = st.body
    want = False
    while i < st.end:
        c = text[i]
        if c.isspace():
            i += 1
            continue
        if c in "-/#":
            e = scanner.skip_comment(i)
            if e is not None:
                i = e
                continue
        if c == "$":
            e = scanner.skip_dollar(i)
            if e is not None:
                i = e
                want = False
                continue
        if c in "'\"`[":
            if want and c != "'" and (c != '"' or c not in scanner.cfg.string_quotes):
                toks = head_tokens(scanner, i, 12)
                name, _ = _read_name(toks, 0)
                if name and _NAME_OK.search(name) and name not in out:
                    out.append(name)
                want = False
            e = scanner.skip_quoted(i)
            if e is not None:
                i = e
                continue
        if c == "(":
            depth += 1
            want = False
        elif c == ")":
            depth = max(0, depth - 1)
            want = False
        m = _PEEK_WORD_RE.match(text, i)
        if m is None:
            i += 1
            want = False
            continue
        w = m.group()
        up = w.upper()
        if want and up not in STATEMENT_KEYWORDS and up not in _NOT_NAMES:
            toks = head_tokens(scanner, i, 12)
            name, _ = _read_name(toks, 0)
            if name and _NAME_OK.search(name) and name not in out:
                out.append(name)
            want = False
        else:
            want = up == "REFERENCES" or (depth == 0 and up in _REF_WORDS)
        i = m.end()
    return out


class _DottedPartName(str):
    """A qualified name whose last part holds a dot (``"my.table"``, ``s."a.b"``): ``last`` is that part, which
    cutting the text at its last dot would split. Only such names are made one (a plain ``str`` otherwise), and only
    inside the module: the artifact gets plain strings (``_plain_names``)."""

    last: str


def _qualified(parts: list[str]) -> str:
    """The unquoted qualified name of ``parts`` (non-empty), its parts joined by dots."""
    name = ".".join(parts)
    if "." in parts[-1]:
        dotted = _DottedPartName(name)
        dotted.last = parts[-1]
        return dotted
    return name


def _plain_names(names: list[str]) -> list[str]:
    return [str(n) if type(n) is not str else n for n in names]


# ---------------------------------------------------------------------------------------------------------------
# Names from sqlglot's tree


def _parts_name(node: exp.Expr | None) -> str | None:
    """The unquoted qualified name of a table, identifier or dotted name (None when it names nothing)."""
    if node is None:
        return None
    if isinstance(node, exp.Table):
        parts = [p.name for p in node.parts if p.name]
    elif isinstance(node, exp.Dot):
        parts = [p.name for p in node.flatten() if isinstance(p, exp.Expr) and p.name]
    else:
        parts = [getattr(node, "name", "") or ""]
    parts = [p for p in parts if p]
    if not parts:
        return None
    name = _qualified(parts)
    return name if _NAME_OK.search(name) else None


@dataclass(slots=True)
class TreeInfo:
    kind: str | None
    defines: list[str]
    references: list[str]
    columns: list[str] | None


def tree_info(exprs: list[exp.Expr]) -> TreeInfo:
    """The kind, defined and referenced names and columns of a parsed statement.

    It is the last look at the trees: the walk also cuts each node's ``parent``, so the tree (whose nodes and their
    parents point at each other) is freed by reference counting when the statement is done, not left to the cycle
    collector. On big.sql the collector's passes over the dropped trees were about a fifth of the extraction."""
    first = exprs[0]
    kind: str | None = _EXPR_KINDS.get(type(first))
    defines: list[str] = []
    skip: set[int] = set()
    columns: list[str] | None = None
    if isinstance(first, exp.Create | exp.Alter | exp.Drop):
        raw_kind = first.args.get("kind")
        if isinstance(raw_kind, str) and raw_kind:
            verb = {exp.Create: "create", exp.Alter: "alter", exp.Drop: "drop"}[type(first)]
            k = raw_kind.lower().replace(" ", "_")
            if k == "proc":
                k = "procedure"
            if k == "view" and isinstance(first, exp.Create):
                props = first.args.get("properties")
                if props is not None and any(isinstance(p, exp.MaterializedProperty) for p in props.expressions):
                    k = "materialized_view"
            kind = f"{verb}_{k}"
        if not isinstance(first, exp.Drop):
            target = first.this
            if isinstance(target, exp.Schema):
                if isinstance(first, exp.Create) and isinstance(target.this, exp.Table):
                    columns = [c.name for c in target.expressions if isinstance(c, exp.ColumnDef) and c.name]
                target = target.this
            if isinstance(target, exp.Index):
                target = target.this
            if isinstance(target, exp.UserDefinedFunction | exp.StoredProcedure):  # (T-SQL reads a procedure so)
                target = target.this
            if isinstance(target, exp.Expr):
                name = _parts_name(target)
                if name:
                    defines.append(name)
                skip.add(id(target))
    ctes: set[str] = set()
    tables: list[exp.Table] = []
    for e in exprs:
        for node in e.walk():
            if isinstance(node, exp.Table):
                tables.append(node)
            elif isinstance(node, exp.CTE) and node.alias:
                ctes.add(node.alias)
            node.parent = None  # (nothing below asks for a parent: names come from args)
    refs: list[str] = []
    for t in tables:
        if id(t) in skip or (ctes and not t.args.get("db") and t.name in ctes):
            continue
        name = _parts_name(t)
        if name and name not in refs and name not in defines:
            refs.append(name)
    return TreeInfo(kind, defines, refs, columns)


def name_keys(names: list[str], sql: str = "", backtick_paths: bool = False) -> list[str]:
    """Each name qualified as written and its last part. A quoted part holding a dot is one part (``"my.table"`` is
    keyed ``my.table`` alone, not also ``table``), but with ``backtick_paths`` (BigQuery, and the generic dialect,
    which reads it so) a backticked one is a path, as BigQuery reads ```proj.ds.t```: ``t`` is its last part. ``sql``
    is the statement's text, where the quotes are seen."""
    out: list[str] = []
    for name in names:
        out.append(str(name))
        if isinstance(name, _DottedPartName) and not (backtick_paths and f"`{name.last}`" in sql):
            last = name.last
        else:
            last = name.rsplit(".", 1)[-1]
        if last != name:
            out.append(last)
    return out


# ---------------------------------------------------------------------------------------------------------------
# Parsing one statement


class StatementParser:
    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect
        self.tokenizer = dialect.tokenizer()
        self.parser = dialect.parser(error_level=ErrorLevel.IMMEDIATE)

    def parse(self, sql: str) -> tuple[list[exp.Expr] | None, str | None]:
        """(expressions, None) or (None, why not)."""
        try:
            tokens = self.tokenizer.tokenize(sql)
            parsed = self.parser.parse(tokens, sql)
        except ParseError as e:
            errors = getattr(e, "errors", None) or []
            if errors:
                first = errors[0]
                desc = str(first.get("description") or e).strip()
                return None, _short(f"{desc} (statement line {first.get('line')}, column {first.get('col')})")
            return None, _short(str(e))
        except TokenError as e:
            return None, _short(f"cannot tokenize: {e}")
        except RecursionError:
            return None, "nested too deeply for the parser"
        except Exception as e:  # a parser bug must cost one statement, not the file
            return None, _short(f"{type(e).__name__}: {e}")
        exprs = [x for x in parsed if x is not None]
        if not exprs:
            return None, "the parser found no statement in it"
        if any(isinstance(x, exp.Command) for x in exprs):
            return None, "sqlglot has no grammar for this statement (it read it as an opaque command)"
        return exprs, None


_TOKEN_REPR_RE: Final = re.compile(r"<Token token_type: [\w.]+, text: (.*?), line: \d+, col: \d+[^>]*>")


def _short(s: str) -> str:
    s = re.sub(r"\x1b\[[0-9;]*m", "", s)
    s = _TOKEN_REPR_RE.sub(r"'\1'", s)
    s = " ".join(s.split())
    return s if len(s) <= MAX_REASON_CHARS else s[: MAX_REASON_CHARS - 3] + "..."


# ---------------------------------------------------------------------------------------------------------------
# Entry point


class _LineIndex:
    """Line numbers of character offsets, for offsets asked in increasing order (amortised linear)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0
        self.line = 1

    def line_of(self, offset: int) -> int:
        if offset < self.pos:
            self.pos, self.line = 0, 1
        self.line += self.text.count("\n", self.pos, offset)
        self.pos = offset
        return self.line


def _byte_estimate(s: str) -> int:
    return len(s) if s.isascii() else len(s.encode("utf-8", "surrogatepass"))


def _body(ctx: FormatContext) -> dict[str, Any]:
    data, request = ctx.data, ctx.request
    try:
        dialect = Dialect.get_or_raise(request.sql_dialect)
        cfg = scan_config(request.sql_dialect)
    except (ValueError, KeyError) as e:
        raise ExtractionError(
            ErrorCode.INVALID_OPTION, f"sql_dialect {request.sql_dialect!r} is unknown: {e}"
        ) from None
    decoded = decode_text(data, option=request.encoding)
    refuse_wide_text(data, decoded.source, request.limits.wide_text_sample)
    text = decoded.text
    builder = ArtifactBuilder(
        "sql", parser=PARSER, parser_version=PARSER_VERSION, unit="statements", options=request.options()
    )
    builder.attrs["encoding"] = decoded.encoding
    builder.attrs["dialect"] = cfg.name or "generic"

    sqlglot_log = logging.getLogger("sqlglot")
    log_was_disabled = sqlglot_log.disabled
    sqlglot_log.disabled = True
    try:
        return _extract(text, request, dialect, cfg, builder)
    finally:
        sqlglot_log.disabled = log_was_disabled


extract = format_module(_body, gc=GcPolicy.RARE)  # sqlglot's trees hold cycles (nodes point at their parents)


def _extract(
    text: str, request: ExtractRequest, dialect: Dialect, cfg: ScanConfig, builder: ArtifactBuilder
) -> dict[str, Any]:
    scanner = Scanner(text, cfg)
    statements, _ = scanner.split()
    lines = _LineIndex(text)
    parser = StatementParser(dialect)
    total = len(statements)
    extracted = 0
    limits = request.limits
    parse_left = limits.sql_parse_budget_chars  # characters the parser may still be given
    budget_hit_at: int | None = None  # index of the first statement not parsed for the parse budget
    budget = output_budget(request, BudgetKind.KEYED)
    cut_at: int | None = None
    backtick_paths = cfg.name in ("", "bigquery")  # `proj.ds.t` is a path there (see name_keys)
    for idx, st in enumerate(statements):
        number = idx + 1
        sql = text[st.start : st.end]
        line_start = lines.line_of(st.start)
        line_end = lines.line_of(st.end - 1) if st.end > st.start else line_start
        exprs: list[exp.Expr] | None = None
        reason: str | None
        if budget_hit_at is not None:
            reason = None  # reported once for the whole run
        elif len(sql) > limits.sql_max_parse_chars:
            reason = f"not parsed: {len(sql)} characters, over the {limits.sql_max_parse_chars} a statement may have"
        elif st.max_depth > limits.sql_max_paren_depth:
            reason = f"not parsed: parentheses nested {st.max_depth} deep, over {limits.sql_max_paren_depth}"
        elif len(sql) > parse_left:
            budget_hit_at = idx
            reason = None
        else:
            parse_left -= len(sql)
            exprs, reason = parser.parse(sql)
        attrs = _statement_attrs(scanner, st, exprs)
        keys = name_keys(
            attrs["defines"] + [r for r in attrs["references"] if r not in attrs["defines"]], sql, backtick_paths
        )
        attrs["defines"], attrs["references"] = _plain_names(attrs["defines"]), _plain_names(attrs["references"])
        cost = _byte_estimate(sql) + 160 + sum(len(k) + 4 for k in keys) * 2
        if st.copy_data is not None:
            cost += _byte_estimate(text[st.copy_data[0] : st.copy_data[1]]) + 120
        if not budget.take_bytes(cost):
            cut_at = idx
            break
        if exprs is not None:
            extracted += 1
        elif reason is not None:
            builder.fail(f"statement {number} (line {line_start})", reason)
        block_id = builder.add_block(
            "sql_statement",
            sql,
            locator=make_locator(line_start=line_start, line_end=line_end, char_start=st.start, char_end=st.end),
            keys=keys,
            attrs=attrs,
        )
        if st.copy_data is not None:
            _add_copy_data(builder, text, lines, st, parent=block_id, keys=keys)
    if budget_hit_at is not None:
        last = cut_at if cut_at is not None else total
        first_st = statements[budget_hit_at]
        builder.fail(
            f"statements {budget_hit_at + 1}-{last} (from line {lines.line_of(first_st.start)})",
            f"not parsed: the parse budget ({limits.sql_parse_budget_chars:,} characters given to the parser per "
            f"file) ran out; split and keyed by their keywords only",
        )
        builder.lose(LOST_SQL_STRUCTURE)
    if cut_at is not None:
        first_st = statements[cut_at]
        builder.fail(
            f"statements {cut_at + 1}-{total} (from line {lines.line_of(first_st.start)})",
            f"left out: the artifact reached its output limit ({request.max_output_bytes} bytes)",
        )
        builder.warn(f"statements {cut_at + 1}-{total} were left out at the output limit")
    if total and extracted == 0:
        builder.lose(LOST_SQL_STRUCTURE)
    builder.coverage(total=total, extracted=extracted)
    return builder.build()


def _statement_attrs(scanner: Scanner, st: Statement, exprs: list[exp.Expr] | None) -> dict[str, Any]:
    """kind, parsed, defines, references (and columns) of one statement."""
    if exprs is not None:
        info = tree_info(exprs)
        kw: KeywordInfo | None = None
        if info.kind is None or not (info.defines or info.references):
            kw = keyword_info(head_tokens(scanner, st.body), st.procedural)
        kind = info.kind or (kw.kind if kw else "unknown")
        defines = info.defines or (kw.defines if kw else [])
        references = info.references or ([r for r in kw.references if r not in defines] if kw else [])
        attrs: dict[str, Any] = {"kind": kind, "parsed": True, "defines": defines, "references": references}
        if info.columns:
            attrs["columns"] = info.columns
        return attrs
    kw = keyword_info(head_tokens(scanner, st.body), st.procedural)
    references = list(kw.references)
    if not st.procedural:
        for r in scanned_references(scanner, st):
            if r not in references and r not in kw.defines:
                references.append(r)
    return {"kind": kw.kind, "parsed": False, "defines": kw.defines, "references": references}


def _add_copy_data(
    builder: ArtifactBuilder, text: str, lines: _LineIndex, st: Statement, *, parent: str, keys: list[str]
) -> None:
    assert st.copy_data is not None
    start, end = st.copy_data
    while end > start and text[end - 1] in "\r\n":
        end -= 1
    if end <= start:
        return
    rows = text.count("\n", start, end) + 1
    builder.add_block(
        "code",
        text[start:end],
        parent=parent,
        locator=make_locator(
            line_start=lines.line_of(start), line_end=lines.line_of(end - 1), char_start=start, char_end=end
        ),
        keys=keys,
        attrs={"kind": "copy_data", "rows": rows},
    )


def iter_statement_texts(text: str, dialect: str | None = None) -> Iterator[str]:
    """The statements' texts as the extractor splits them (for tools and tests)."""
    scanner = Scanner(text, scan_config(dialect))
    for st in scanner.split()[0]:
        yield text[st.start : st.end]
