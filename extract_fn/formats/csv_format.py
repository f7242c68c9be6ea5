"""CSV: one typed table (the file's name) and one row block per data row.

Decisions (documented for the artifact's readers):

* **Decoding**: a byte-order mark wins, else the ``encoding`` option, else strict UTF-8 (``text_decoding``); what
  does not decode is the ``encoding`` error with the byte offset; UTF-16/32 without a BOM read as UTF-8 is the
  ``encoding`` error too (the one wide-text policy, ``text_decoding.refuse_wide_text``). A NUL character is text
  like any other (a NUL in a field is kept as U+0000, with a warning), unless NULs are a fifth or more of the
  characters, in whatever codec: then the file is not text in that codec and that is the ``encoding`` error, with
  the first NUL's offset.
* **Dialect**: the delimiter is the one of ``,`` ``;`` tab ``|`` that splits a sample of the first records into the
  most consistent number of fields (more than one); ties go in that order, and a file no candidate splits is one
  column. Quotes are ``"`` doubled inside a quoted field; line endings ``\\n``, ``\\r\\n`` and ``\\r`` are all read,
  also inside quoted fields.
* **Excel's delimiter hint**: a first line that is exactly ``sep=X`` (one character; the line may be quoted whole)
  names the delimiter, as Excel reads it, and is no record (the artifact's ``attrs.sep_line`` says so): the header
  is the record after it, still row 1, and every line number stays the file's (the header's is 2).
* **Header**: the first record is always the header (``header_rows`` 1), even when it looks like data: a CSV has no
  way to say otherwise and csv-spectrum's ground truth reads it so. An empty name becomes ``column_<N>`` (1-based).
* **Rows**: records, not lines: the header is row 1, the first data record row 2; blank lines are no records and are
  not counted. Row blocks also carry the record's ``line_start``/``line_end``. A record shorter than the header is
  padded with nulls; a longer one adds columns ``column_<N>`` (null in the other rows); both are listed in a warning
  and counted in the table's ``attrs`` (``short_rows``, ``long_rows``). Nothing is dropped, so neither is a failure.
* **Types**: per column from its text (``table_values.infer_text_column``): empty cells are null; integers and
  decimals ``number`` (ints within int64, else exact digit strings; ``"007"`` stays text); ``true``/``false`` ``bool``;
  ISO dates ``date``; ISO date-times ``datetime``; ``HH:MM[:SS]`` ``time``; otherwise ``string`` (a CSV column of
  several kinds of text is ``string``, never ``mixed``: every one of its values is text).
* **Row block text** is ``name: value | name: value`` over the non-empty cells, with the values as the file spells
  them.
* **Budget**: rows past ``request.max_output_bytes`` are cut; coverage (unit ``rows``, data rows) says how many were
  extracted of how many, and a warning says why.
"""

from __future__ import annotations

import csv
import io
import itertools
import re
import sys
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final, cast, overload

from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.frame import FormatContext, format_module, release_heap
from extract_fn.formats.output_budget import BudgetKind, output_budget
from extract_fn.formats.table_values import Columns, add_table, infer_text_column, report_cut, respelled_rows
from extract_fn.text_decoding import decode_text, refuse_wide_text
from shared.artifact_builder import ArtifactBuilder, make_locator
from shared.contract import ErrorCode, ExtractionError

PARSER: Final = "loom-csv"
PARSER_VERSION: Final = f"1+python{sys.version_info.major}.{sys.version_info.minor}.{sys.version_info.micro}"
DELIMITERS: Final = (",", ";", "\t", "|")
SAMPLE_CHARS: Final = 64 * 1024
SAMPLE_RECORDS: Final = 200
NUL_SHARE_LIMIT: Final = 0.2
LISTED_ROWS: Final = 10
# Past this share of rows whose typed values read otherwise than the file spells them, every row's text is kept
# (a list); below it only theirs (a dict), and the others are made from the typed rows when written.
RESPELLED_SHARE: Final = 0.25
_SEP_LINE: Final = re.compile(r'(?:sep=([^"\r\n])|"sep=([^"\r\n])")(?:\r\n|\r|\n|\Z)')
_LINE: Final = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")  # row numbers named in a ragged-rows warning
PIECE_CHARS: Final = 1 << 20  # the text is split into lines a piece of about this many characters at a time
# What ``str.splitlines`` also breaks on, beyond \n, \r and \r\n: a piece holding none splits as ``_LINE`` splits it.
_OTHER_BREAKS: Final = ("\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def detect_delimiter(text: str) -> str:
    """The delimiter among , ; tab | that splits the first records most consistently into more than one field."""
    sample = text[:SAMPLE_CHARS]
    truncated = len(text) > SAMPLE_CHARS
    if truncated:  # drop the partial last line (a quoted field may be cut, but the records before it are whole)
        cut = max(sample.rfind("\n"), sample.rfind("\r"))
        if cut > 0:
            sample = sample[:cut]
    best: tuple[float, int] | None = None
    choice = ","
    for rank, delim in enumerate(DELIMITERS):
        if delim not in sample:
            continue
        counts: list[int] = []
        try:
            reader = csv.reader(io.StringIO(sample, newline=""), delimiter=delim, quotechar='"', strict=False)
            for record in reader:
                if record:
                    counts.append(len(record))
                if len(counts) >= SAMPLE_RECORDS:
                    break
        except csv.Error:
            continue
        if truncated and len(counts) > 1:
            counts.pop()  # the last record of a cut sample may be partial
        if not counts:
            continue
        mode, freq = Counter(counts).most_common(1)[0]
        if mode < 2:
            continue
        consistency = round(freq / len(counts), 2)
        score = (consistency, -rank)
        if best is None or score > best:
            best, choice = score, delim
    return choice


def sep_hint(text: str) -> str | None:
    """The delimiter Excel's hint names when the text's first line is exactly ``sep=X`` (``X`` one character, not a
    quote or a line break; the line may be quoted whole, ``"sep=;"``), else None. Excel takes the delimiter from it
    and reads the line as no row."""
    m = _SEP_LINE.match(text)
    return m.group(1) or m.group(2) if m is not None else None


def split_lines(text: str) -> Iterator[str]:
    """The text's lines, each with its ending, split on \\n, \\r\\n and \\r only (``str.splitlines`` would also split on
    \\v, \\f, U+2028... which may sit in a field); a piece of about ``PIECE_CHARS`` at a time (io.StringIO would hold
    a 4-byte-per-character copy of the whole text). A piece ends just after a \\n, so no line or \\r\\n spans two;
    one without those other breaks is split by ``str.splitlines`` (in C), any other by ``_LINE``."""
    return itertools.chain.from_iterable(map(_piece_lines, _pieces(text)))


def _pieces(text: str) -> Iterator[str]:
    start, n = 0, len(text)
    while start < n:
        cut = text.find("\n", start + PIECE_CHARS) + 1 or n
        yield text[start:cut] if start or cut < n else text
        start = cut


def _piece_lines(piece: str) -> Iterable[str]:
    if any(map(piece.__contains__, _OTHER_BREAKS)):
        return map(re.Match.group, _LINE.finditer(piece))
    return piece.splitlines(keepends=True)


def _check_nul(text: str) -> int:
    """The count of NUL characters; the encoding error when they are so many the text is not really this codec (an
    option's codec too: wide text read as UTF-8 by default is refused before, by ``refuse_wide_text``)."""
    nuls = text.count("\x00")
    if nuls and nuls >= NUL_SHARE_LIMIT * len(text):
        raise ExtractionError(
            ErrorCode.ENCODING,
            f"the text is {nuls} NUL characters out of {len(text)} (the first at character {text.index(chr(0))}): "
            "it looks like UTF-16 or UTF-32 without a byte-order mark, or not text; "
            "send the right codec in the encoding option",
        )
    return nuls


def _body(ctx: FormatContext) -> dict[str, Any]:
    return _extract(ctx.take_data(), ctx.request)


extract = format_module(_body)


def _extract(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    decoded = decode_text(data, option=request.encoding)
    refuse_wide_text(data, decoded.source, request.limits.wide_text_sample)
    size = len(data)
    del data  # decoded: in the worker the bytes go now (its caller keeps none), the text as soon as it is parsed
    text, encoding = decoded.text, decoded.encoding
    del decoded
    nuls = _check_nul(text)
    builder = ArtifactBuilder(
        "csv", parser=PARSER, parser_version=PARSER_VERSION, unit="rows", options=request.options()
    )
    hint = sep_hint(text)
    delimiter = hint or detect_delimiter(text)
    builder.attrs.update({"encoding": encoding, "delimiter": delimiter})
    if hint is not None:
        builder.attrs["sep_line"] = True  # line 1 is Excel's ``sep=`` hint: the delimiter, and no record
    if nuls:
        builder.warn(f"the file holds {nuls} NUL character(s), kept as U+0000 in the values")
    budget = output_budget(request, BudgetKind.TABLE)
    name = request.name or "table"

    csv.field_size_limit(max(len(text) + 1, 131_072))
    reader = csv.reader(split_lines(text), delimiter=delimiter, quotechar='"', strict=False)
    header: list[str] | None = None
    header_lines = (0, 0)
    records: list[list[str]] = []
    lines = _Lines()
    total = 0
    # Stop keeping records once they would surely overflow the budget; keep counting them for coverage.
    keep_chars = 2 * request.max_output_bytes
    kept_chars = 0
    prev_line = 0
    try:
        for record in reader:
            line_end = reader.line_num
            line_start = prev_line + 1
            prev_line = line_end
            if not record:
                continue
            if hint is not None:  # the sep= line: the delimiter's hint, no record (its line is still line 1)
                hint = None
                continue
            if header is None:
                header, header_lines = record, (line_start, line_end)
                continue
            total += 1
            if kept_chars <= keep_chars:
                records.append(record)
                lines.starts.append(line_start)
                lines.ends.append(line_end)
                if total % 256 == 0:  # estimate in steps: a record costs its text twice plus a block's envelope
                    kept_chars += 256 * (2 * sum(map(len, record)) + 24 * len(record) + 160)
    except csv.Error as exc:  # only a field over the size limit can get here (strict=False)
        raise ExtractionError(ErrorCode.CORRUPT, f"the CSV file cannot be parsed: {exc}") from None
    del text

    if header is None:
        builder.warn("the file holds no records (not even a header)")
        add_table(
            builder, budget, name=name, columns=[], rows=[], first_row=2, header_rows=1,
            table_locator={},
        )  # fmt: skip
        builder.coverage(total=0, extracted=0)
        return builder.build()

    lengths = set(map(len, records))  # one pass in C: the row lists below only when some record is ragged
    width = max(lengths | {len(header)})
    names = [h if h else f"column_{i + 1}" for i, h in enumerate(header)]
    names += [f"column_{i + 1}" for i in range(len(header), width)]
    ragged = bool(lengths - {len(header)})
    short_rows = [i + 2 for i, r in enumerate(records) if len(r) < len(header)] if ragged else []
    long_rows = [i + 2 for i, r in enumerate(records) if len(r) > len(header)] if ragged else []

    # Columns of raw text (None past a short record's end), typed one column at a time (each raw column dropped once
    # typed); the typed columns are the table's rows (``Columns``, below). Row-block texts are the source's spelling:
    # kept for the rows a typed value of which reads otherwise ("+5", "TRUE", 1e-05); the others are made from the
    # typed values.
    raw_columns: list[list[str | None] | None] = []
    for j in range(width):
        if not short_rows and not long_rows:
            raw_columns.append([r[j] for r in records])
        else:
            raw_columns.append([r[j] if j < len(r) else None for r in records])
    types: list[str] = []
    typed_columns: list[Sequence[Any]] = []
    respelled: set[int] = set()  # rows a typed value of which reads otherwise than the source spells it
    for j, col in enumerate(raw_columns):
        raw_columns[j] = None
        col_type, values = infer_text_column(cast("list[str | None]", col))
        if len(respelled) <= len(records) * RESPELLED_SHARE:
            respelled.update(respelled_rows(cast("list[str | None]", col), values))
        del col
        types.append(col_type)
        typed_columns.append(values)
    del raw_columns
    texts: list[str] | None = None
    kept_texts: dict[int, str] = {}
    if len(respelled) > len(records) * RESPELLED_SHARE:
        texts = _row_texts(names, records)
    elif respelled:
        order = sorted(respelled)
        kept_texts = dict(zip(order, _row_texts(names, [records[i] for i in order]), strict=True))
    # The table's rows stay its typed columns (``Columns``): the builder checks and keeps them by column, and no
    # list is made a row (the records go now).
    rows = Columns(typed_columns, len(records))
    del records, typed_columns
    release_heap(size)

    attrs: dict[str, Any] = {}
    if short_rows:
        attrs["short_rows"] = len(short_rows)
        builder.warn(
            f"{len(short_rows)} record(s) have fewer fields than the header's {len(header)} and were padded with "
            f"nulls: rows {_listed(short_rows)}"
        )
    if long_rows:
        attrs["long_rows"] = len(long_rows)
        builder.warn(
            f"{len(long_rows)} record(s) have more fields than the header's {len(header)}; the extra fields are "
            f"columns {', '.join(names[len(header) :][:LISTED_ROWS])}: rows {_listed(long_rows)}"
        )
    last_row = total + 1
    _, kept = add_table(
        builder,
        budget,
        name=name,
        columns=list(zip(names, types, strict=True)),
        rows=rows,
        first_row=2,
        header_rows=1,
        table_locator=make_locator(row_start=1, row_end=last_row, line_start=header_lines[0], line_end=prev_line),
        attrs=attrs,
        lines=lines,  # type: ignore[arg-type]  # _Lines indexes like the sequence, at 16 bytes a record
        texts=texts,
        respelled=kept_texts,
    )
    report_cut(builder, f"table {name!r}", kept, total, request.max_output_bytes, first_row=2)
    builder.coverage(total=total, extracted=kept)
    return builder.build()


def _row_texts(names: list[str], records: list[list[str]]) -> list[str]:
    """``name: value | ...`` over each record's non-empty fields: a full record (the usual one) by one
    ``str.format`` of ``name: {} | name: {}``, in C, instead of a concatenation per field and a join."""
    prefixes = [f"{n}: " for n in names]
    width = len(names)
    template = " | ".join(p.replace("{", "{{").replace("}", "}}") + "{}" for p in prefixes).format

    def each(r: list[str]) -> str:
        return " | ".join([p + v for p, v in zip(prefixes, r, strict=False) if v])

    if all(map(all, records)) and set(map(len, records)) <= {width}:  # every record full: all of it in C
        return list(itertools.starmap(template, records))
    return [template(*r) if len(r) == width and all(r) else each(r) for r in records]


class _Lines:
    """Each kept record's first and last line, in two machine-int arrays (a tuple a record would cost ~64 bytes)."""

    def __init__(self) -> None:
        self.starts = array("q")
        self.ends = array("q")

    def __len__(self) -> int:
        return len(self.starts)

    @overload
    def __getitem__(self, i: int) -> tuple[int, int]: ...
    @overload
    def __getitem__(self, i: slice) -> list[tuple[int, int]]: ...
    def __getitem__(self, i: int | slice) -> tuple[int, int] | list[tuple[int, int]]:
        if isinstance(i, slice):
            return [(s, s) if s == e else (s, e) for s, e in zip(self.starts[i], self.ends[i], strict=True)]
        start, end = self.starts[i], self.ends[i]
        return (start, start) if start == end else (start, end)  # one int object where it can


def _listed(rows: list[int]) -> str:
    out = ", ".join(str(r) for r in rows[:LISTED_ROWS])
    return out + (f" and {len(rows) - LISTED_ROWS} more" if len(rows) > LISTED_ROWS else "")
