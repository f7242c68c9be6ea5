"""The checker: walks plain JSON data by the rules of ``rules`` and reports every violation at its path.

It runs when the fast path (``schema`` and ``fast``) does not pass an artifact, and on every dict: it is the one
place that says what is wrong. Fields are checked in the order ``rules`` lists them, so the violations come in
document order; a field's rules across fields (``Field.unique``, ``Field.earlier``, a locator's ``Pair``, coverage
arithmetic, rows against their columns) are checked where the field is, once its own type holds.
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Callable
from typing import Any, Final

from shared.artifact import cells
from shared.artifact.paths import field, join
from shared.artifact.rules import (
    BAD_UNICODE,
    KIND_EXPECT,
    NOT_FINITE,
    NOT_INT,
    OUT_OF_RANGE,
    Field,
    Kind,
    Pair,
    Shape,
    one_of_text,
)
from shared.artifact.violations import Violation
from shared.contract import INT64_MAX, INT64_MIN, MAX_NESTING

MISSING: Final = object()
_BAD_KEY: Final = object()  # pre-pass markers, in document order
_BAD_UNICODE_KEY: Final = object()
ROW_CHUNK: Final = 2048  # rows whose column is tested as a whole (cells.column_ok) before a cell-by-cell look


def _bad_str(s: str) -> bool:
    """True for a str that is not valid Unicode (holds a surrogate code point)."""
    if s.isascii():
        return False
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def int_problem(x: object) -> str | None:
    """Why ``x`` is not a signed 64-bit JSON integer, or None."""
    if isinstance(x, bool) or not isinstance(x, int):
        return NOT_INT
    return None if INT64_MIN <= x <= INT64_MAX else OUT_OF_RANGE


class Checker:
    """One pass over an artifact as plain data; ``violations`` holds what it found.

    ``trusted``: the data came from ``orjson.loads``, so every string is valid Unicode, every key a string, every
    value a JSON type and every float finite; otherwise ``scan_json`` reports those first, each at its own path."""

    def __init__(self, fmt: str, original_size: int, trusted: bool) -> None:
        self.fmt = fmt
        self.trusted = trusted
        self.size = original_size
        self.bounds = {"lines": min(original_size + 1, INT64_MAX), "chars": min(original_size, INT64_MAX)}
        self.violations: list[Violation] = []
        self.seen_paths: set[str] = set()  # paths the pre-pass reported: the main pass does not repeat them
        self.suspect_big_int = False  # a float that may be an integer literal past 64 bits (see __init__'s doc)
        self.known: dict[str, set[str]] = {}  # cell texts seen to fit, by column type
        self.ids: dict[str, set[Any]] = {}  # the unique values seen so far, by what they are unique among
        self.after: dict[tuple[str, str], Callable[[dict[str, Any], str, dict[str, bool]], bool]] = {
            ("Artifact", "format"): self._format,
            ("Coverage", "extracted"): self._extracted,
            ("Coverage", "complete"): self._complete,
        }
        self.by_kind: dict[Kind, Callable[[Any, Field, str, dict[str, Any]], bool]] = {
            Kind.STR: self._string,
            Kind.INT: self._integer,
            Kind.BOOL: self._bool,
            Kind.STRS: self._strings,
            Kind.FREE: self._free_root,
            Kind.OBJECT: self._object,
            Kind.OBJECTS: self._objects,
            Kind.ROWS: self._rows_field,
        }

    def add(self, path: str, rule: str) -> None:
        if path not in self.seen_paths:
            self.violations.append(Violation(path, rule))

    def is_list(self, x: object) -> bool:
        return type(x) is list or (not self.trusted and isinstance(x, list | tuple))

    def is_dict(self, x: object) -> bool:
        return type(x) is dict or (not self.trusted and isinstance(x, dict))

    # -- the document and its objects ------------------------------------------------------------------------

    def artifact(self, doc: Any, shape: Shape) -> None:
        if not self.is_dict(doc):
            self.add("$", "the artifact must be a JSON object")
            return
        self.object(doc, shape, "")

    def object(self, obj: dict[str, Any], shape: Shape, base: str) -> bool:
        """Check an object's fields in order; True when every one holds."""
        ok: dict[str, bool] = {}
        if shape.pairs:
            for pair in shape.pairs:
                ok[pair.start] = ok[pair.end] = self._pair(obj, pair, base)
        unique: list[tuple[str, Any]] = []
        for f in shape.fields:
            if f.name in ok:
                continue
            path = field(base, f.name)
            v = obj.get(f.name, MISSING)
            if v is MISSING:
                if not f.optional:
                    self.add(path, "required")
                ok[f.name] = f.optional
                continue
            good = self.value(v, f, path, obj)
            if good and f.unique is not None:
                seen = self.ids.setdefault(f.unique, set())
                if v in seen:
                    self.add(path, f"must be unique, {v!r} is already an earlier {f.unique}'s")
                    good = False
                unique.append((f.unique, v))
            if good and f.earlier is not None and v not in self.ids.get(f.earlier, ()):
                self.add(path, f"must be the id of an earlier {f.earlier}, got {v!r}")
                good = False
            hook = self.after.get((shape.model, f.name))
            ok[f.name] = hook(obj, path, ok) if good and hook is not None else good
        for among, v in unique:  # after the fields: a parent may not name its own block
            self.ids[among].add(v)
        return all(ok.values())

    def value(self, v: Any, f: Field, path: str, obj: dict[str, Any]) -> bool:
        """Check a field's value by its kind; ``obj``: the object that holds it (a table's rows read its columns)."""
        return self.by_kind[f.kind](v, f, path, obj)

    def _wrong(self, f: Field, path: str) -> bool:
        self.add(path, f.expect or KIND_EXPECT[f.kind])
        return False

    def _object(self, v: Any, f: Field, path: str, obj: dict[str, Any]) -> bool:
        assert f.shape is not None
        return self.object(v, f.shape, path) if self.is_dict(v) else self._wrong(f, path)

    def _objects(self, v: Any, f: Field, path: str, obj: dict[str, Any]) -> bool:
        if not self.is_list(v):
            return self._wrong(f, path)
        assert f.shape is not None
        ok = True
        if f.max_items is not None and len(v) > f.max_items:
            self.add(path, f"at most {f.max_items} entries, got {len(v)}")
            ok = False
        for i, item in enumerate(v):
            if not self.is_dict(item):
                self.add(f"{path}[{i}]", f.item_expect or "must be an object")
                ok = False
            elif not self.object(item, f.shape, f"{path}[{i}]"):
                ok = False
        return ok

    def _free_root(self, v: Any, f: Field, path: str, obj: dict[str, Any]) -> bool:
        return self._free(v, 1, path, ()) if self.is_dict(v) else self._wrong(f, path)

    def _rows_field(self, v: Any, f: Field, path: str, obj: dict[str, Any]) -> bool:
        return self._rows(v, obj.get("columns", MISSING), path) if self.is_list(v) else self._wrong(f, path)

    # -- scalars ---------------------------------------------------------------------------------------------------

    def _bool(self, v: Any, f: Field, path: str, obj: dict[str, Any]) -> bool:
        return isinstance(v, bool) or self._wrong(f, path)

    def _string(self, v: Any, f: Field, path: str, obj: dict[str, Any]) -> bool:
        if not isinstance(v, str):
            return self._wrong(f, path)
        if f.non_empty and not v:
            self.add(path, "must not be empty")
        elif f.max_chars is not None and len(v) > f.max_chars:
            self.add(path, f"at most {f.max_chars} characters, got {len(v)}")
        elif f.one_of is not None and v not in f.one_of:
            self.add(path, f"{one_of_text(f)}, got {v!r}")
        else:
            return True
        return False

    def _integer(self, v: Any, f: Field, path: str, obj: dict[str, Any]) -> bool:
        problem = int_problem(v)
        if f.equals is not None and (problem is not None or v != f.equals):
            problem = f"must be the integer {f.equals}, got {v!r}"
        elif problem is None and f.minimum is not None and v < f.minimum:
            problem = f"must be {f.minimum} or more, got {v}"
        if problem is None:
            return True
        self.add(path, problem)
        return False

    def _strings(self, v: Any, f: Field, path: str, obj: dict[str, Any]) -> bool:
        """A list of strings, bounded in count and length as ``f`` says; reports each bad entry."""
        if not self.is_list(v):
            return self._wrong(f, path)
        ok = True
        if f.max_items is not None and len(v) > f.max_items:
            self.add(path, f"at most {f.max_items} entries, got {len(v)}")
            ok = False
        limit = f.max_chars if f.max_chars is not None else -1
        for j, s in enumerate(v):
            if not isinstance(s, str):
                self.add(f"{path}[{j}]", "must be a string")
                ok = False
            elif 0 <= limit < len(s):
                self.add(f"{path}[{j}]", f"at most {limit} characters, got {len(s)}")
                ok = False
        return ok

    def _free(self, node: Any, depth: int, root: str, parts: tuple[builtins.object, ...]) -> bool:
        """A free object's container at ``depth``: False once the depth bound is broken (reported at the root) or
        an integer is past 64 bits (reported at its own path)."""
        if depth > MAX_NESTING:
            self.add(root, f"nested deeper than {MAX_NESTING} (objects and arrays each count as a level)")
            return False
        ok = True
        for k, x in node.items() if isinstance(node, dict) else enumerate(node):
            if isinstance(x, dict | list | tuple):
                if not self._free(x, depth + 1, root, (*parts, k)):
                    return False
            elif isinstance(x, int) and not isinstance(x, bool) and not INT64_MIN <= x <= INT64_MAX:
                self.add(join(root, (*parts, k)), OUT_OF_RANGE)
                ok = False
            elif type(x) is float:
                self.big_float(x)
            # anything else in dict input was reported by the pre-pass
        return ok

    def big_float(self, x: float) -> None:
        """orjson reads an integer literal past the unsigned 64-bit range as a float: such a float means a re-read."""
        if self.trusted and not -cells.BIG_FLOAT < x < cells.BIG_FLOAT and math.isfinite(x) and x.is_integer():
            self.suspect_big_int = True

    # -- rules across fields ---------------------------------------------------------------------------------------

    def _format(self, obj: dict[str, Any], path: str, ok: dict[str, bool]) -> bool:
        if obj["format"] == self.fmt:
            return True
        self.add(path, f"must be {self.fmt!r}, the format asked for, got {obj['format']!r}")
        return False

    def _extracted(self, obj: dict[str, Any], path: str, ok: dict[str, bool]) -> bool:
        if not ok.get("total") or obj["extracted"] <= obj["total"]:
            return True
        self.add(path, f"must be at most total ({obj['extracted']} > {obj['total']})")
        return False

    def _complete(self, obj: dict[str, Any], path: str, ok: dict[str, bool]) -> bool:
        """Checked only when the fields it sums up are valid, so one mistake yields one violation."""
        if not all(ok.get(name) for name in ("total", "extracted", "failed", "lost")):
            return True
        expected = obj["extracted"] == obj["total"] and not obj["failed"] and not obj["lost"]
        if obj["complete"] == expected:
            return True
        why = (
            "extracted == total with no failures and no losses"
            if expected
            else "extracted < total, or units failed, or capabilities were lost"
        )
        self.add(path, f"must be {str(expected).lower()}: {why}")
        return False

    def _pair(self, loc: dict[str, Any], pair: Pair, base: str) -> bool:
        """A locator pair: both halves or neither, integers, ``unused`` both or ``unused < start <= end <= bound``;
        a violation is reported at the half that breaks it."""
        s, e = loc.get(pair.start, MISSING), loc.get(pair.end, MISSING)
        if s is MISSING and e is MISSING:
            return True
        s_path, e_path = f"{base}.{pair.start}", f"{base}.{pair.end}"
        ok = True
        for v, path, other in ((s, s_path, pair.end), (e, e_path, pair.start)):
            if v is MISSING:
                self.add(path, f"required with {other}: a pair comes complete")
                ok = False
            elif (problem := int_problem(v)) is not None:
                self.add(path, problem)
                ok = False
        if not ok:
            return False
        unused = pair.unused
        if s == unused and e != unused:
            self.add(e_path, f"must be {unused} when {pair.start} is {unused} (both {unused}: unused)")
        elif s < unused + 1 and s != unused:
            self.add(s_path, f"must be {unused} (unused) or {unused + 1} or more, got {s}")
        elif e < s:
            self.add(e_path, f"must be {pair.start} ({s}) or more, got {e}")
        elif pair.bound == "chars" and e > self.size:
            self.add(e_path, f"past the original's size ({e} > {self.size} bytes)")
        elif pair.bound == "lines" and e > self.size + 1:
            self.add(e_path, f"past the original's size plus one ({e} > {self.size + 1})")
        else:
            return True
        return False

    def _rows(self, rows: Any, columns: Any, base: str) -> bool:
        """Each row as wide as the columns, each cell a cell that fits its column's type: reported row by row, then
        column by column (each column from the top)."""
        types: list[str | None] | None = None
        if self.is_list(columns):
            types = [
                c.get("type") if self.is_dict(c) and c.get("type") in cells.COLUMN_RULES else None for c in columns
            ]
        n_before = len(self.violations)
        whole: list[int] = []  # the rows that are lists of the right width
        for r, row in enumerate(rows):
            if not self.is_list(row):
                self.add(f"{base}[{r}]", "must be a list of values")
            elif types is not None and len(row) != len(types):
                self.add(f"{base}[{r}]", f"must hold {len(types)} values, one per column, got {len(row)}")
            else:
                whole.append(r)
        if types is None:  # no column types to fit: each cell need only be a cell, row by row
            for r in whole:
                for j, v in enumerate(rows[r]):
                    self._cell(v, None, f"{base}[{r}][{j}]")
        for j, ctype in enumerate(types or ()):
            for lo in range(0, len(whole), ROW_CHUNK):
                chunk = whole[lo : lo + ROW_CHUNK]
                col = [rows[r][j] for r in chunk]
                if ctype is not None and cells.column_ok(col, ctype, self.known):
                    continue
                for r, v in zip(chunk, col, strict=True):
                    self._cell(v, ctype, f"{base}[{r}][{j}]")
        return len(self.violations) == n_before

    def _cell(self, v: Any, ctype: str | None, path: str) -> None:
        problem = cells.cell_problem(v, ctype, self.known)
        if problem is not None:
            self.add(path, problem)
        elif type(v) is float:
            self.big_float(v)

    # -- the pre-pass for data not from a JSON parser ----------------------------------------------------------

    def scan_json(self, doc: builtins.object) -> None:
        """Report what JSON cannot hold: invalid strings and keys, non-JSON types, NaN/Infinity (dict input)."""
        found: list[Violation] = []
        stack: list[tuple[object, tuple[object, ...]]] = [(doc, ())]
        limit = MAX_NESTING + 8  # deeper than any rule looks; the main pass reports free objects too deep
        while stack:
            node, parts = stack.pop()
            if isinstance(node, dict):
                if len(parts) > limit:
                    continue
                for k, v in reversed(node.items()):
                    if not isinstance(k, str):
                        stack.append((_BAD_KEY, (*parts, k)))
                    elif _bad_str(k):
                        stack.append((_BAD_UNICODE_KEY, (*parts, k)))
                    else:
                        stack.append((v, (*parts, k)))
            elif isinstance(node, list | tuple):
                if len(parts) <= limit:
                    stack.extend((node[i], (*parts, i)) for i in range(len(node) - 1, -1, -1))
            elif problem := _json_problem(node):
                found.append(Violation(join("", parts), problem))
        self.violations.extend(found)
        self.seen_paths.update(v.path for v in found)


def _json_problem(node: object) -> str | None:
    if node is _BAD_KEY:
        return "an object key must be a string"
    if node is _BAD_UNICODE_KEY:
        return f"the key is {BAD_UNICODE}"
    if isinstance(node, str):
        return BAD_UNICODE if _bad_str(node) else None
    if isinstance(node, float):
        return None if math.isfinite(node) else NOT_FINITE
    if node is None or isinstance(node, int):
        return None
    return f"not a JSON value ({type(node).__name__})"
