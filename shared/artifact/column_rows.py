"""A table's rows kept as its columns, for sources that read them as columns (parquet's record batches, csv's and
xlsx's typed columns).

Made as rows, a million-row table is a million lists, transposed back into columns twice more: by the builder to
check its cells (``artifact_builder._rows_clean``) and by the worker's pass to check them again
(``fast.rows_hold``). ``ArtifactBuilder.add_table_columns`` takes the columns themselves, checks them as they are,
and in the worker (``row_runs.compact_rows``) keeps them as one ``ColumnRows`` in the table's ``rows``, which
``shared.artifact.built.dump_checked`` tests by column and writes a chunk at a time, each chunk's rows made as it is
written (``rows_of``: tuples, which orjson writes as arrays, so the bytes are those of the lists). Everywhere else
the table's ``rows`` are lists, made from the columns by the same function.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from shared.artifact.row_runs import json_list_len


class ColumnRows:
    """A table's rows by column: row ``i`` is ``(columns[0][i], columns[1][i], ...)``.

    The columns are tuples of one length (``len(self)``), made by the builder and never changed; the values in them
    are the cells as the builder checked them (the pass tests them again as it writes them)."""

    __slots__ = ("columns", "n")

    def __init__(self, columns: Sequence[tuple[Any, ...]], n: int) -> None:
        if any(c.__class__ is not tuple or len(c) != n for c in columns):
            raise ValueError("a table's columns must be tuples of its row count")
        self.columns = tuple(columns)
        self.n = n

    def __len__(self) -> int:
        return self.n

    def slices(self, lo: int, hi: int) -> list[tuple[Any, ...]]:
        """Each column's cells of rows ``lo..hi-1``."""
        return [c[lo:hi] for c in self.columns]


def rows_of(columns: Sequence[Sequence[Any]], n: int) -> list[tuple[Any, ...]]:
    """The ``n`` rows of ``columns`` (each as long), as tuples (``n`` empty ones for a table of no columns)."""
    return list(zip(*columns, strict=True)) if columns else [()] * n


def rows_json_len(columns: Sequence[Sequence[Any]], n: int) -> int:
    """``len(orjson.dumps(rows_of(columns, n)))`` without making the rows: each column's list serialized once (its
    cells' lengths, their commas and brackets), plus each row's brackets and commas. Raises as ``orjson.dumps``
    does for a value it refuses."""
    if n == 0:
        return 2  # []
    cells = sum(json_list_len(c) - 2 - (n - 1) for c in columns)
    width = len(columns)
    per_row = 2 + max(width - 1, 0)  # [ ] and the commas between its cells
    return 2 + (n - 1) + n * per_row + cells
