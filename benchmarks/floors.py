"""The raw floor: the parser our format module uses, run over the whole file with nothing built (no blocks, no
artifact, no check). ``compare`` runs it as a cold process, like the others:

    .venv/bin/python -m benchmarks.floors FORMAT FILE

What each floor does (the least any extractor built on that parser must do):

- pdf: pypdfium2 opens the file and reads every page's text;
- docx, pptx: every XML part of the package parsed by lxml;
- xlsx: python-calamine reads every sheet's cells to Python values;
- csv: the file decoded as UTF-8 and every row read by the csv module into a list;
- parquet: every record batch's columns as Python lists (``to_pylist``), all kept;
- html: selectolax (lexbor) parses the document and reads the body's text;
- markdown: markdown-it-pyrs parses the document (the block parser we use);
- text: the file decoded as UTF-8 and split into lines;
- sql: sqlglot's tokenizer over the whole file;
- toml: toml_rs (tomllib where it is missing) loads the document.
"""

from __future__ import annotations

import csv
import io
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def pdf(data: bytes) -> Any:
    import pypdfium2 as pdfium

    doc = pdfium.PdfDocument(data)
    out = []
    for i in range(len(doc)):
        page = doc[i]
        out.append(page.get_textpage().get_text_range())
    return out


def _zip_xml(data: bytes) -> Any:
    from lxml import etree

    with zipfile.ZipFile(io.BytesIO(data)) as z:
        return [etree.fromstring(z.read(n)) for n in z.namelist() if n.endswith(".xml") or n.endswith(".rels")]


def xlsx(data: bytes) -> Any:
    import python_calamine as pc

    book = pc.CalamineWorkbook.from_filelike(io.BytesIO(data))
    return [book.get_sheet_by_index(i).to_python() for i in range(len(book.sheet_names))]


def csv_rows(data: bytes) -> Any:
    return list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))


def parquet(data: bytes) -> Any:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pf = pq.ParquetFile(pa.BufferReader(data))
    return [[c.to_pylist() for c in batch.columns] for batch in pf.iter_batches(batch_size=65_536, use_threads=False)]


def html(data: bytes) -> Any:
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(data.decode("utf-8"))
    return tree.body.text() if tree.body is not None else ""


def markdown(data: bytes) -> Any:
    import markdown_it_pyrs

    return markdown_it_pyrs.MarkdownIt("commonmark").enable("table").tree(data.decode("utf-8"))


def text(data: bytes) -> Any:
    return data.decode("utf-8").splitlines()


def sql(data: bytes) -> Any:
    from sqlglot.dialects.dialect import Dialect

    return Dialect.get_or_raise("").tokenizer().tokenize(data.decode("utf-8"))


def toml(data: bytes) -> Any:
    try:
        import toml_rs

        return toml_rs.loads(data.decode("utf-8"))
    except ImportError:
        import tomllib

        return tomllib.loads(data.decode("utf-8"))


FLOORS: dict[str, Callable[[bytes], Any]] = {
    "pdf": pdf,
    "docx": _zip_xml,
    "pptx": _zip_xml,
    "xlsx": xlsx,
    "csv": csv_rows,
    "parquet": parquet,
    "html": html,
    "markdown": markdown,
    "text": text,
    "sql": sql,
    "toml": toml,
}


def main(argv: list[str]) -> int:
    fmt, path = argv
    FLOORS[fmt](Path(path).read_bytes())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
