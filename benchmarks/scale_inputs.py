"""The standard inputs made k times larger, for the scale table of ``benchmarks.compare``.

    .venv/bin/python -m benchmarks.scale_inputs SRC_DIR OUT_DIR 4 [16 ...]

Each scaled file holds the standard input's content k times over, in a form its format accepts: text-like files
repeated (CSV keeps one header; HTML repeats its body; TOML renames each copy's tables, so no key repeats), Parquet
the table concatenated k times (row groups of 100,000 rows, as ``gen.py`` writes them), PDF the pages appended k
times (pypdf), DOCX the document body's paragraphs and tables repeated. PPTX and XLSX are not scaled (a copy needs
new slide parts or renumbered cells); the table says so.
"""

from __future__ import annotations

import io
import re
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path


def _repeat(data: bytes, k: int) -> bytes:
    return data * k


def _csv(data: bytes, k: int) -> bytes:
    head, _, body = data.partition(b"\n")
    if not body.endswith(b"\n"):
        body += b"\n"
    return head + b"\n" + body * k


def _html(data: bytes, k: int) -> bytes:
    start = data.index(b"<body>") + len(b"<body>")
    end = data.rindex(b"</body>")
    return data[:start] + data[start:end] * k + data[end:]


def _toml(data: bytes, k: int) -> bytes:
    return b"".join(re.sub(rb"(?m)^\[", b"[copy%d_" % j, data) if j else data for j in range(k))


def _parquet(data: bytes, k: int) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    table = pq.read_table(pa.BufferReader(data))
    out = pa.BufferOutputStream()
    pq.write_table(pa.concat_tables([table] * k), out, row_group_size=100_000)
    return bytes(out.getvalue())


def _pdf(data: bytes, k: int) -> bytes:
    from pypdf import PdfWriter

    writer = PdfWriter()
    for _ in range(k):
        writer.append(io.BytesIO(data))
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _docx(data: bytes, k: int) -> bytes:
    from lxml import etree

    src = zipfile.ZipFile(io.BytesIO(data))
    root = etree.fromstring(src.read("word/document.xml"))
    body = root[0]
    content = [el for el in body if not el.tag.endswith("}sectPr")]
    sect = [el for el in body if el.tag.endswith("}sectPr")]
    for el in list(body):
        body.remove(el)
    for _ in range(k):
        for el in content:
            body.append(etree.fromstring(etree.tostring(el)))
    for el in sect:
        body.append(el)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            part = src.read(info.filename)
            if info.filename == "word/document.xml":
                part = etree.tostring(root, xml_declaration=True, encoding="UTF-8", standalone=True)
            dst.writestr(info, part)
    return out.getvalue()


SCALERS: dict[str, Callable[[bytes, int], bytes]] = {
    "doc200.pdf": _pdf,
    "big.docx": _docx,
    "big.csv": _csv,
    "big.parquet": _parquet,
    "big.html": _html,
    "big.md": _repeat,
    "big.txt": _repeat,
    "big.sql": _repeat,
    "big.toml": _toml,
}


def scaled(src: Path, out_dir: Path, k: int) -> Path | None:
    """The input ``src`` made ``k`` times larger in ``out_dir`` (made once, then reused); None if not scalable."""
    if k == 1:
        return src
    scaler = SCALERS.get(src.name)
    if scaler is None:
        return None
    out = out_dir / f"x{k}" / src.name
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_suffix(out.suffix + ".part")
        tmp.write_bytes(scaler(src.read_bytes(), k))
        tmp.rename(out)
    return out


def main(argv: list[str]) -> int:
    src_dir, out_dir, *factors = argv
    for name in SCALERS:
        for k in map(int, factors):
            path = scaled(Path(src_dir) / name, Path(out_dir), k)
            print(path, path.stat().st_size if path else "-")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
