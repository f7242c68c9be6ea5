"""Parquet: one typed table (the file's name) of the schema's columns, and one row block per row.

Decisions (documented for the artifact's readers):

* **Table**: the columns are the Arrow schema's top-level fields; ``header_rows`` is 0 (the names come from the
  schema, not a row) and rows count from 1. Coverage (unit ``rows``) is rows extracted of the file's rows.
* **Types and values** (``table_values`` has the shared rules):
  ints -> ``number`` (a UINT64 past int64: its exact digits as a string); FLOAT/DOUBLE/FLOAT16 -> ``number`` as JSON
  floats (FLOAT and FLOAT16 by their own shortest text, so 1.1f is 1.1), NaN and infinities -> null with a warning
  naming the column; DECIMAL (any physical type) -> ``number`` as its exact digits (``"12.34"``; scale 0 within int64:
  an int); strings -> ``string``; BYTE_ARRAY without a string annotation (and FIXED_LEN_BYTE_ARRAY) -> ``string``:
  the bytes as text when they are UTF-8 without control characters, else ``base64:`` and their Base64 (the table's
  ``attrs.binary_columns`` names such columns); UUID -> its canonical text; bool -> ``bool``; DATE -> ``date``;
  TIMESTAMP of any unit, INT96 included -> ``datetime`` ISO text (fraction as needed, up to nanoseconds; a column with
  a time zone gives the local time and its offset, ``+01:00``, UTC as ``Z``); TIME -> ``time``; DURATION ->
  ``duration`` ``H:MM:SS[.f]``; nested LIST/MAP/STRUCT (and VARIANT, GEOMETRY's storage...) -> ``string`` holding
  compact JSON (a MAP is an array of ``[key, value]`` pairs, bytes inside are ``base64:`` text, decimals their
  digits); dictionary-encoded columns as their values; the null type -> ``string`` column of nulls. A value outside
  ISO's years 1-9999 is null with a warning.
* **Row block text** is ``name: value | name: value`` over the row's non-null values.
* **Streaming and bounds**: the file is read batch by batch (``iter_batches``), never whole, in one pass: each
  record batch becomes its table rows and row blocks, measured against the output budget
  (``request.max_output_bytes``, ``table_values.TableStream``), before the next is read, and reading stops once the
  budget is spent: coverage and a warning say how many rows were extracted (the per-column warnings count the rows
  read). Before anything is decoded, the footer's sizes are checked: a column chunk that inflates more than
  1000:1 to over 64 MiB, or whose average value alone is larger than the output budget, is a decompression bomb and
  ends in ``resource_limit`` (the corpus's 4 KB file whose one string chunk decodes to 2 GB is refused in
  milliseconds). Below 64 MiB a high ratio is allowed: a plain-encoded repetitive column legitimately compresses
  past 1000:1, and that much decodes within any worker's memory. The worker's memory limit stays the last line of
  defence.
* **Damage**: page checksums are verified (``page_checksum_verification``), so a CRC mismatch is ``corrupt``; so is a
  footer or page pyarrow cannot read. An encrypted file (``PARE`` magic, or encrypted columns under a plaintext
  footer) is ``corrupt`` with a message saying it is encrypted. A non-compliant MAP whose keys are not marked
  required (as Presto/Trino/Athena write it), which pyarrow refuses, is read by relabelling that group as a LIST in
  a copy of the footer, so its entries come out as ``{"key": ..., "value": ...}`` objects.
"""

from __future__ import annotations

import base64
import itertools
import math
import os
import re
import uuid
from collections.abc import Callable
from typing import Any, Final

import orjson

from extract_fn.formats.base import ExtractRequest
from extract_fn.formats.frame import FormatContext, format_module
from extract_fn.formats.output_budget import BudgetKind, output_budget
from extract_fn.formats.table_values import (
    TableStream,
    format_duration_ns,
    report_cut,
    value_text,
)
from extract_fn.limits import Limits
from shared.artifact_builder import ArtifactBuilder, clean_str, make_locator
from shared.contract import INT64_MAX, ErrorCode, ExtractionError

# Arrow allocates with the C allocator, not mimalloc: mimalloc reserves a 1 GiB arena when Arrow first allocates, and
# the worker's memory limit (RLIMIT_DATA) counts it. Measured on the 1,000,000-row benchmark file: VmData 1.95 GB
# with mimalloc against 0.96 GB with the system allocator (RSS alike); serializing the artifact then crossed a 2 GiB
# limit. Arrow reads the variable when the library loads, so it is set here, before this module imports pyarrow
# (lazily, in the functions below); a deployment that chose a pool keeps it. Best set in the worker's environment.
os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

PARSER: Final = "loom-parquet"
MAGIC: Final = b"PAR1"
ENCRYPTED_MAGIC: Final = b"PARE"
BATCH_BYTES: Final = 8 * 1024 * 1024  # aim for batches of about this many decoded bytes
MAX_BATCH_ROWS: Final = 65_536
MIN_BATCH_ROWS: Final = 64
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def _parser_version() -> str:
    import pyarrow

    return f"1+pyarrow-{pyarrow.__version__}"


def _corrupt(message: str) -> ExtractionError:
    return ExtractionError(ErrorCode.CORRUPT, message)


def _encrypted() -> ExtractionError:
    return _corrupt("the Parquet file is encrypted (Parquet modular encryption); send it decrypted")


def _use_system_allocator() -> None:
    """The Python side's default pool as the C++ side's (see ``ARROW_DEFAULT_MEMORY_POOL`` at the module's top)."""
    import pyarrow as pa

    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL") == "system":
        pa.set_memory_pool(pa.system_memory_pool())


def _open(data: bytes, limits: Limits) -> Any:
    """The ParquetFile, with top-level string and binary columns read as dictionaries: their values then become one
    Python string per distinct value, shared by every row that holds it (a low-cardinality column of a million rows
    costs a million pointers, not a million strings)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import pyarrow.types as pt

    _use_system_allocator()

    def attempt(buf: bytes) -> Any:
        pf = pq.ParquetFile(pa.BufferReader(buf), page_checksum_verification=True, coerce_int96_timestamp_unit="us")
        names = [
            f.name
            for f in pf.schema_arrow
            if pt.is_string(f.type) or pt.is_large_string(f.type) or pt.is_binary(f.type) or pt.is_large_binary(f.type)
        ]
        if not names or not _plain_or_dictionary(pf, set(names)):
            return pf
        return pq.ParquetFile(
            pa.BufferReader(buf),
            page_checksum_verification=True,
            coerce_int96_timestamp_unit="us",
            read_dictionary=names,
        )

    try:
        return attempt(data)
    except (OSError, pa.ArrowException, ValueError) as exc:
        msg = str(exc)
        if "ecrypt" in msg or "ncrypt" in msg:
            raise _encrypted() from None
        if "Map keys must be annotated as required" in msg:
            patched = relabel_maps_as_lists(data, limits)
            if patched is not None:
                try:
                    return attempt(patched)
                except (OSError, pa.ArrowException, ValueError):
                    pass
        raise _corrupt(f"the Parquet file cannot be read: {_short(msg)}") from None


_DICT_SAFE_ENCODINGS: Final = frozenset({"PLAIN", "PLAIN_DICTIONARY", "RLE_DICTIONARY", "RLE", "BIT_PACKED"})


def _plain_or_dictionary(pf: Any, names: set[str]) -> bool:
    """Whether those columns are written in encodings pyarrow can read into a dictionary (not the DELTA ones)."""
    md = pf.metadata
    if len(set(pf.schema_arrow.names)) != len(pf.schema_arrow.names):
        return False
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for c in range(rg.num_columns):
            col = rg.column(c)
            if col.path_in_schema in names and not set(col.encodings) <= _DICT_SAFE_ENCODINGS:
                return False
    return True


def _created_by(md: Any, builder: ArtifactBuilder) -> str:
    """The footer's ``created_by`` (the writer's name), or "" with a warning where it is not UTF-8: a label only,
    so a damaged one does not stop the rows being read."""
    try:
        return clean_str(md.created_by or "")
    except UnicodeDecodeError:
        builder.warn("the footer's created_by (the writer's name) is not UTF-8 text; it was left out")
        return ""


def _short(msg: str) -> str:
    msg = " ".join(msg.split())
    return msg[:300]


def _check_bomb(pf: Any, data_len: int, max_output: int, limits: Limits) -> int:
    """Refuse a file whose footer says it inflates like a bomb; return the decoded bytes per row estimate."""
    md = pf.metadata
    total_uncompressed = 0
    for g in range(md.num_row_groups):
        rg = md.row_group(g)
        for c in range(rg.num_columns):
            col = rg.column(c)
            unc = max(col.total_uncompressed_size or 0, 0)
            comp = max(col.total_compressed_size or 0, 1)
            values = max(col.num_values or 0, 1)
            total_uncompressed += unc
            if unc > limits.parquet_bomb_floor and unc / comp > limits.parquet_bomb_ratio:
                raise ExtractionError(
                    ErrorCode.RESOURCE_LIMIT,
                    f"column {col.path_in_schema} of row group {g} inflates from {comp} to {unc} bytes "
                    f"({unc / comp:.0f}:1): a decompression bomb; refused before decoding",
                )
            if unc / values > max_output:
                raise ExtractionError(
                    ErrorCode.RESOURCE_LIMIT,
                    f"column {col.path_in_schema} of row group {g} holds values of {unc // values} bytes on "
                    f"average, over the artifact budget of {max_output} bytes",
                )
    rows = max(md.num_rows, 1)
    return max(total_uncompressed // rows, 16 * max(md.num_columns, 1))


# ---------------------------------------------------------------------------------------------------------------
# The footer's Thrift (compact protocol), read just enough to see what pyarrow cannot be asked safely.

_T_STOP, _T_TRUE, _T_FALSE, _T_BYTE, _T_I16, _T_I32, _T_I64, _T_DOUBLE, _T_BINARY = 0, 1, 2, 3, 4, 5, 6, 7, 8
_T_LIST, _T_SET, _T_MAP, _T_STRUCT = 9, 10, 11, 12
_CONVERTED_MAP: Final = 1
_CONVERTED_LIST: Final = 3
_LOGICAL_MAP: Final = 2
_LOGICAL_LIST: Final = 3


class _ThriftError(Exception):
    pass


class _Compact:
    """A cursor over Thrift compact-protocol bytes (Parquet's footer encoding)."""

    def __init__(self, buf: bytes, max_depth: int) -> None:
        self.b = buf
        self.i = 0
        self.max_depth = max_depth  # the request's ``limits.parquet_max_depth``

    def byte(self) -> int:
        if self.i >= len(self.b):
            raise _ThriftError("truncated")
        v = self.b[self.i]
        self.i += 1
        return v

    def varint(self) -> int:
        shift = out = 0
        while True:
            v = self.byte()
            out |= (v & 0x7F) << shift
            if not v & 0x80:
                return out
            shift += 7
            if shift > 70:
                raise _ThriftError("varint too long")

    def zigzag(self) -> int:
        v = self.varint()
        return (v >> 1) ^ -(v & 1)

    def fields(self) -> Any:
        """Yield (field id, type, header offset) of a struct's fields; the caller reads or skips each value."""
        last = 0
        while True:
            at = self.i
            h = self.byte()
            t = h & 0x0F
            if t == _T_STOP:
                return
            delta = h >> 4
            fid = last + delta if delta else self.zigzag()
            last = fid
            yield fid, t, at

    def skip(self, t: int, depth: int = 0) -> None:
        if depth > self.max_depth:
            raise _ThriftError("nested too deep")
        if t in (_T_TRUE, _T_FALSE):
            return
        if t == _T_BYTE:
            self.i += 1
        elif t in (_T_I16, _T_I32, _T_I64):
            self.varint()
        elif t == _T_DOUBLE:
            self.i += 8
        elif t == _T_BINARY:
            n = self.varint()  # (not `self.i += self.varint()`: that adds to the position before the varint)
            self.i += n
        elif t in (_T_LIST, _T_SET):
            n, et = self.list_header()
            for _ in range(n):
                self.skip(et if et not in (_T_TRUE, _T_FALSE) else _T_BYTE, depth + 1)
        elif t == _T_MAP:
            n = self.varint()
            if n:
                kv = self.byte()
                for _ in range(n):
                    self.skip(kv >> 4, depth + 1)
                    self.skip(kv & 0x0F, depth + 1)
        elif t == _T_STRUCT:
            for _, ft, _ in self.fields():
                self.skip(ft, depth + 1)
        else:
            raise _ThriftError(f"unknown type {t}")
        if self.i > len(self.b):
            raise _ThriftError("truncated")

    def list_header(self) -> tuple[int, int]:
        h = self.byte()
        n = h >> 4
        if n == 15:
            n = self.varint()
        return n, h & 0x0F


def _footer(data: bytes) -> tuple[int, bytes] | None:
    n = int.from_bytes(data[-8:-4], "little")
    start = len(data) - 8 - n
    if n <= 0 or start < 4:
        return None
    return start, data[start : len(data) - 8]


def footer_is_encrypted(data: bytes, limits: Limits) -> bool:
    """True for a plaintext footer of an encrypted file (FileMetaData.encryption_algorithm, field 8, is set).

    pyarrow opens such a file and then aborts the whole process (an uncaught C++ exception) when a column's
    metadata is read, so this is checked first.
    """
    found = _footer(data)
    if found is None:
        return False
    r = _Compact(found[1], limits.parquet_max_depth)
    try:
        for fid, t, _ in r.fields():
            if fid == 8 and t == _T_STRUCT:
                return True
            r.skip(t)
    except _ThriftError:
        return False  # pyarrow reports the damage in its own words
    return False


def relabel_maps_as_lists(data: bytes, limits: Limits) -> bytes | None:
    """A copy of the file whose footer annotates every MAP group as a LIST instead (same length, bytes swapped).

    For MAPs written with optional keys (Presto/Trino/Athena), which pyarrow refuses as a MAP: as a LIST their
    entries read as structs of key and value. None when the footer holds nothing to relabel.
    """
    found = _footer(data)
    if found is None:
        return None
    start, footer = found
    patch = bytearray(footer)
    r = _Compact(footer, limits.parquet_max_depth)
    changed = False
    try:
        for fid, t, _ in r.fields():
            if fid != 2 or t != _T_LIST:  # FileMetaData.schema: list<SchemaElement>
                r.skip(t)
                continue
            n, _et = r.list_header()
            for _ in range(n):
                for efid, et, _ in r.fields():
                    if efid == 6 and et == _T_I32:  # converted_type
                        at = r.i
                        if r.zigzag() == _CONVERTED_MAP and r.i == at + 1:
                            patch[at] = _CONVERTED_LIST << 1  # zigzag(3), one byte like zigzag(1)
                            changed = True
                    elif efid == 10 and et == _T_STRUCT:  # logicalType: a union, one field
                        for lfid, lt, lat in r.fields():
                            if lfid == _LOGICAL_MAP and footer[lat] >> 4 == _LOGICAL_MAP:
                                patch[lat] = (_LOGICAL_LIST << 4) | lt
                                changed = True
                            r.skip(lt)
                    else:
                        r.skip(et)
    except _ThriftError:
        return None
    if not changed:
        return None
    return data[:start] + bytes(patch) + data[len(data) - 8 :]


# ---------------------------------------------------------------------------------------------------------------
# Arrow arrays -> JSON-ready values


class Notes:
    """Per-column counts of values that could not be sent as they are (NaN, out-of-range dates...)."""

    def __init__(self) -> None:
        self.counts: dict[tuple[str, str], int] = {}
        self.binary_columns: set[str] = set()

    def add(self, column: str, what: str, n: int) -> None:
        if n:
            self.counts[(column, what)] = self.counts.get((column, what), 0) + n


def _doubles(arr: Any, column: str, notes: Notes) -> list[Any]:
    """A DOUBLE column's values; the per-value NaN scan only when Arrow says the batch holds a NaN or infinity."""
    import pyarrow.compute as pc

    values = arr.to_pylist()
    if pc.any(pc.invert(pc.is_finite(arr))).as_py():
        return _nan_to_none(values, column, notes)
    return values


def _nan_to_none(values: list[Any], column: str, notes: Notes) -> list[Any]:
    bad = 0
    out = values
    for i, v in enumerate(values):
        if v is not None and not math.isfinite(v):
            if out is values:
                out = list(values)
            out[i] = None
            bad += 1
    notes.add(column, "NaN or infinite float(s) sent as null", bad)
    return out


def _bytes_text(b: bytes, column: str, notes: Notes) -> str:
    try:
        s = b.decode("utf-8")
    except UnicodeDecodeError:
        s = None
    if s is not None and not _CONTROL.search(s):
        return s
    notes.binary_columns.add(column)
    return "base64:" + base64.b64encode(b).decode("ascii")


def _decimal_values(arr: Any, column: str, notes: Notes) -> list[Any]:
    """A DECIMAL column's values: exact digits (scale 0 within int64: ints)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    scale = arr.type.scale
    if scale < 0:
        return [None if d is None else format(d, "f") for d in arr.to_pylist()]
    strings = pc.cast(arr, pa.string())
    texts = strings.to_pylist()
    if scale == 0:
        return [None if s is None else (int(s) if len(s) < 19 else s) for s in texts]
    if pc.any(pc.match_substring(strings, "E")).as_py():
        return _plain_decimals(texts)
    return texts


def _plain_decimals(texts: list[str | None]) -> list[str | None]:
    """Arrow's text of a DECIMAL of scale > 0 is scientific once its value is below 1e-6 (``1.00E-7``, ``0E-9``): each
    such value as its plain digits, to the column's scale (``0.000000100``, ``0.000000000``), the others as they
    are."""
    from decimal import Decimal

    return [s if s is None or "E" not in s else format(Decimal(s), "f") for s in texts]


def _json_default(obj: Any) -> Any:
    import datetime as dt
    from decimal import Decimal

    if isinstance(obj, bytes | bytearray | memoryview):
        b = bytes(obj)
        try:
            s = b.decode("utf-8")
            if not _CONTROL.search(s):
                return s
        except UnicodeDecodeError:
            pass
        return "base64:" + base64.b64encode(b).decode("ascii")
    if isinstance(obj, Decimal):
        return format(obj, "f")
    if isinstance(obj, dt.timedelta):
        from extract_fn.formats.table_values import format_timedelta

        return format_timedelta(obj)
    if isinstance(obj, uuid.UUID):
        return str(obj)
    return str(obj)


def _iso_texts(arr: Any, column: str, notes: Notes, *, kind: str) -> list[Any]:
    """Dates, times and timestamps through Arrow's own formatting (exact to the nanosecond), made ISO."""
    import pyarrow as pa
    import pyarrow.compute as pc

    s = pc.cast(arr, pa.string())
    if kind == "datetime":
        s = pc.replace_substring(s, " ", "T", max_replacements=1)
    if kind in ("datetime", "time"):
        s = pc.replace_substring_regex(s, r"(\.[0-9]*?)0+(Z|[+-][0-9]{4}|$)", r"\1\2")
        s = pc.replace_substring_regex(s, r"\.(Z|[+-][0-9]{4}|$)", r"\1")
    if kind == "datetime":
        s = pc.replace_substring_regex(s, r"([+-][0-9]{2})([0-9]{2})$", r"\1:\2")
    # One Python string per distinct value (dates repeat a lot), mapped back through the indices.
    enc = pc.dictionary_encode(s)
    distinct = enc.dictionary.to_pylist()
    if kind in ("date", "datetime"):
        ok = pc.match_substring_regex(enc.dictionary, r"^[0-9]{4}-").to_pylist()
        for i, good in enumerate(ok):
            if not good:
                distinct[i] = None
        if not all(ok):
            bad = sum(1 for i in enc.indices.to_pylist() if i is not None and distinct[i] is None)
            notes.add(column, "value(s) outside the years 1-9999 sent as null", bad)
    return _take(distinct, enc.indices)


def _take(distinct: list[Any], indices: Any) -> list[Any]:
    """``distinct[i]`` for each index of an Arrow array (None for a null index); without nulls in C (``map``)."""
    if indices.null_count == 0:
        return list(map(distinct.__getitem__, indices.to_pylist()))
    return [None if i is None else distinct[i] for i in indices.to_pylist()]


_DURATION_NS: Final = {"s": 1_000_000_000, "ms": 1_000_000, "us": 1_000, "ns": 1}


def _temporal_leaves_to_string(t: Any) -> Any:
    """The same nested type with its temporal leaves as strings (so ns timestamps survive to_pylist)."""
    import pyarrow as pa
    import pyarrow.types as pt

    if pt.is_timestamp(t) or pt.is_time(t) or pt.is_date(t) or pt.is_duration(t):
        return pa.string()
    if pt.is_large_list(t):
        return pa.large_list(_temporal_leaves_to_string(t.value_type))
    if pt.is_list(t):
        return pa.list_(_temporal_leaves_to_string(t.value_type))
    if pt.is_fixed_size_list(t):
        return pa.list_(_temporal_leaves_to_string(t.value_type), t.list_size)
    if pt.is_struct(t):
        return pa.struct([f.with_type(_temporal_leaves_to_string(f.type)) for f in t])
    if pt.is_map(t):
        return pa.map_(_temporal_leaves_to_string(t.key_type), _temporal_leaves_to_string(t.item_type))
    return t


def _nested_texts(arr: Any, column: str, notes: Notes) -> list[Any]:
    import pyarrow as pa

    try:
        values = arr.to_pylist()
    except (ValueError, TypeError, OverflowError, pa.ArrowException):
        try:
            values = arr.cast(_temporal_leaves_to_string(arr.type)).to_pylist()
        except (ValueError, TypeError, OverflowError, pa.ArrowException):
            notes.add(column, "nested value(s) that could not be converted sent as null", len(arr) - arr.null_count)
            return [None] * len(arr)
    out: list[Any] = []
    for v in values:
        if v is None:
            out.append(None)
        else:
            out.append(clean_str(orjson.dumps(v, default=_json_default, option=orjson.OPT_NON_STR_KEYS).decode()))
    return out


def converter_for(t: Any) -> tuple[str, Callable[[Any, str, Notes], list[Any]]]:
    """(column type, converter) for an Arrow type."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.types as pt

    if isinstance(t, pa.ExtensionType):
        name = getattr(t, "extension_name", "")
        storage_type, storage_conv = converter_for(t.storage_type)

        def ext_conv(arr: Any, column: str, notes: Notes) -> list[Any]:
            storage = arr.storage if isinstance(arr, pa.ExtensionArray) else arr
            if name == "arrow.uuid":
                return [None if b is None else str(uuid.UUID(bytes=b)) for b in storage.to_pylist()]
            return storage_conv(storage, column, notes)

        return storage_type, ext_conv
    if pt.is_dictionary(t):
        value_type, value_conv = converter_for(t.value_type)

        def dictionary(arr: Any, column: str, notes: Notes) -> list[Any]:
            if len(arr.dictionary) > len(arr):  # a dictionary bigger than the batch: decode just the batch
                return value_conv(arr.dictionary_decode(), column, notes)
            return _take(value_conv(arr.dictionary, column, notes), arr.indices)

        return value_type, dictionary
    if pt.is_boolean(t):
        return "bool", lambda arr, column, notes: arr.to_pylist()
    if pt.is_integer(t):
        if t == pa.uint64():
            return "number", lambda arr, column, notes: [
                v if v is None or v <= INT64_MAX else str(v) for v in arr.to_pylist()
            ]
        return "number", lambda arr, column, notes: arr.to_pylist()
    if pt.is_float64(t):
        return "number", _doubles
    if pt.is_floating(t):  # float32 / float16: their own shortest text, not the widened double's digits

        def small_float(arr: Any, column: str, notes: Notes) -> list[Any]:
            if pt.is_float16(arr.type):
                arr = arr.cast(pa.float32())
            texts = pc.cast(arr, pa.string()).to_pylist()
            return _nan_to_none([None if s is None else float(s) for s in texts], column, notes)

        return "number", small_float
    if pt.is_decimal(t):
        return "number", _decimal_values
    if pt.is_string(t) or pt.is_large_string(t) or pt.is_string_view(t):

        def strings(arr: Any, column: str, notes: Notes) -> list[Any]:
            try:
                values = arr.to_pylist()
            except UnicodeDecodeError:
                values = [
                    None if b is None else b.decode("utf-8", "replace") for b in arr.cast(pa.binary()).to_pylist()
                ]
                notes.add(column, "string value(s) with invalid UTF-8 (replaced with U+FFFD)", 1)
            return [v if v is None or v.isascii() else clean_str(v) for v in values]

        return "string", strings
    if pt.is_binary(t) or pt.is_large_binary(t) or pt.is_fixed_size_binary(t) or pt.is_binary_view(t):
        return "string", lambda arr, column, notes: [
            None if b is None else _bytes_text(b, column, notes) for b in arr.to_pylist()
        ]
    if pt.is_date(t):
        return "date", lambda arr, column, notes: _iso_texts(arr, column, notes, kind="date")
    if pt.is_timestamp(t):

        def timestamps(arr: Any, column: str, notes: Notes) -> list[Any]:
            try:
                return _iso_texts(arr, column, notes, kind="datetime")
            except pa.ArrowException:  # a time zone Arrow cannot resolve here: send UTC
                utc = arr.cast(pa.timestamp(arr.type.unit))
                return [None if s is None else s + "Z" for s in _iso_texts(utc, column, notes, kind="datetime")]

        return "datetime", timestamps
    if pt.is_time(t):
        return "time", lambda arr, column, notes: _iso_texts(arr, column, notes, kind="time")
    if pt.is_duration(t):
        factor = _DURATION_NS[t.unit]
        return "duration", lambda arr, column, notes: [
            None if v is None else format_duration_ns(v * factor) for v in arr.cast(pa.int64()).to_pylist()
        ]
    if pt.is_null(t):
        return "string", lambda arr, column, notes: [None] * len(arr)
    # nested, unions, intervals and anything newer: compact JSON text
    return "string", _nested_texts


def _batch_texts(batch: Any, columns: list[list[Any]], prefixes: list[str]) -> list[str | None]:
    """The row-block texts of a batch, ``name: value | ...`` over non-null values, joined by Arrow (vectorized): a
    batch without nulls in one join of the values and their prefixes (``id: `` , `` | name: ``...), any other one
    column by column, its nulls skipped."""
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.types as pt

    texts = []
    for i, values in enumerate(columns):
        t = batch.schema.field(i).type
        if pt.is_decimal(t) and t.scale > 0:  # the values' plain digits (Arrow's own text may be 1.00E-7)
            text = pa.array(values, pa.string())
        elif pt.is_integer(t) or pt.is_boolean(t) or pt.is_decimal(t):
            text = pc.cast(batch.column(i), pa.string())  # exact digits, true/false
        elif pt.is_floating(t):
            text = pc.cast(pa.array(values, pa.float64()), pa.string())  # NaN already null
        else:
            try:
                text = pa.array(values, pa.string())
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                text = pa.array([None if v is None else value_text(v) for v in values], pa.string())
        texts.append(text)
    if not any(text.null_count for text in texts):  # every value present: one join, the prefixes between them
        seps = [pa.scalar((" | " if i else "") + p) for i, p in enumerate(prefixes)]
        items = itertools.chain.from_iterable(zip(seps, texts, strict=True))
        out = pc.binary_join_element_wise(*items, "").to_pylist()
        if len(out) != len(batch):
            raise ValueError(f"row texts for {len(batch)} rows came out as {len(out)}")
        return out
    parts = [pc.binary_join_element_wise(pa.scalar(p), text, "") for p, text in zip(prefixes, texts, strict=True)]
    # A leading empty column: pyarrow 26's null_handling="skip" drops (not empties) a row whose values are all null,
    # which would shift every later text; with one value always present the rows stay aligned, and the leading
    # separator is cut off.
    lead = pa.array([""] * len(batch), pa.string())
    joined = pc.binary_join_element_wise(lead, *parts, " | ", null_handling="skip")
    out = pc.utf8_slice_codeunits(joined, 3).to_pylist()
    if len(out) != len(batch):  # never silently misalign row texts
        raise ValueError(f"row texts for {len(batch)} rows came out as {len(out)}")
    return out


# ---------------------------------------------------------------------------------------------------------------


def _table_locator(total: int) -> dict[str, Any]:
    return make_locator(row_start=1, row_end=total) if total else {}


def _body(ctx: FormatContext) -> dict[str, Any]:
    return _extract(ctx.data, ctx.request)


extract = format_module(_body)


def _extract(data: bytes, request: ExtractRequest) -> dict[str, Any]:
    import pyarrow as pa

    if data[:4] == ENCRYPTED_MAGIC or data[-4:] == ENCRYPTED_MAGIC:
        raise _encrypted()
    if len(data) < 12 or data[:4] != MAGIC or data[-4:] != MAGIC:
        raise _corrupt("the file is not a whole Parquet file (the PAR1 magic is missing at its start or end)")
    if footer_is_encrypted(data, request.limits):
        raise _encrypted()
    pf = _open(data, request.limits)
    builder = ArtifactBuilder(
        "parquet", parser=PARSER, parser_version=_parser_version(), unit="rows", options=request.options()
    )
    try:
        row_bytes = _check_bomb(pf, len(data), request.max_output_bytes, request.limits)
        schema = pf.schema_arrow
        md = pf.metadata
        names = [clean_str(f.name) or f"column_{i + 1}" for i, f in enumerate(schema)]
        footer_rows, row_groups = md.num_rows, md.num_row_groups
    except (OSError, pa.ArrowException, ValueError) as exc:  # UnicodeDecodeError (a name not UTF-8) is a ValueError
        raise _corrupt(f"the Parquet file's metadata cannot be read: {_short(str(exc))}") from None
    convs = [converter_for(f.type) for f in schema]
    types = [c[0] for c in convs]
    notes = Notes()
    budget = output_budget(request, BudgetKind.TABLE)
    builder.attrs.update({"row_groups": row_groups, "created_by": _created_by(md, builder), "num_rows": footer_rows})
    if footer_rows < 0:  # damaged: the rows are read as they come, and the count read is the table's
        builder.warn(f"the footer's row count ({footer_rows}) is negative; the rows were counted as they were read")

    # One pass, a record batch at a time: each batch's values become its table rows and row blocks (measured
    # against the budget) before the next batch is read, and reading stops once the budget is spent.
    stream = TableStream(
        builder,
        budget,
        name=request.name or "table",
        columns=list(zip(names, types, strict=True)),
        first_row=1,
        header_rows=0,
        table_locator=_table_locator(max(footer_rows, 0)),
    )
    prefixes = [f"{n}: " for n in names]
    batch_rows = max(MIN_BATCH_ROWS, min(MAX_BATCH_ROWS, BATCH_BYTES // max(row_bytes, 1)))
    seen = 0
    budget_bytes = 2 * request.max_output_bytes  # stop decoding once the rows read surely overflow the budget
    approx = 0
    stopped = False
    try:
        for batch in pf.iter_batches(batch_size=batch_rows, use_threads=False):
            n = batch.num_rows
            seen += n
            columns = [conv(batch.column(i), names[i], notes) for i, (_, conv) in enumerate(convs)]
            more = stream.push(columns, n, _batch_texts(batch, columns, prefixes) if columns else [""] * n)
            del columns
            approx += batch.nbytes + n * (120 + 8 * len(names))
            if not more or approx > budget_bytes:
                stopped = True
                break
    except MemoryError:
        raise ExtractionError(ErrorCode.RESOURCE_LIMIT, "the Parquet file needs more memory than allowed") from None
    except (OSError, pa.ArrowException, ValueError, TypeError, IndexError, OverflowError) as exc:
        if isinstance(exc, pa.ArrowCapacityError):
            raise ExtractionError(
                ErrorCode.RESOURCE_LIMIT, f"a Parquet column is too large: {_short(str(exc))}"
            ) from None
        msg = str(exc)
        if "ecrypt" in msg:
            raise _encrypted() from None
        raise _corrupt(f"the Parquet file's data cannot be read: {_short(msg)}") from None

    total = max(footer_rows, seen)
    if not stopped and seen != footer_rows and footer_rows >= 0:
        builder.warn(f"the footer says {footer_rows} rows but {seen} were read")
    attrs: dict[str, Any] = {}
    if notes.binary_columns:
        attrs["binary_columns"] = sorted(notes.binary_columns)
    name = request.name or "table"
    _, kept = stream.finish(table_locator=_table_locator(total), attrs=attrs)
    for (column, what), n in sorted(notes.counts.items()):
        builder.warn(f"column {column!r}: {n} {what}")
    report_cut(builder, f"table {name!r}", kept, total, request.max_output_bytes, first_row=1)
    builder.coverage(total=total, extracted=kept)
    return builder.build()
