"""The reference extractor's command line.

    python -m extract_fn serve [--host HOST] [--port PORT] [--log-level LEVEL]
    python -m extract_fn extract FILE --format FORMAT [--name NAME] [--encoding CODEC] [--sql-dialect DIALECT]

``serve`` runs the HTTP service under uvicorn with the connection guards of ``extract_fn.server`` (header timeout,
request deadline, connection cap), configured from the environment (see ``extract_fn.settings``); it refuses to
start, exit status 1, with a message naming the setting when one is missing (``EXTRACTOR_TOKENS``) or invalid.
``extract`` runs one file through the same path as the service (options, sniffing, a worker with the time, memory
and output limits, the artifact validator) without HTTP and without a token, and prints the artifact's JSON to
stdout. Exit status: 0 with an artifact; 2 with an extraction error (its error body JSON on stdout); 1 for a usage
or settings error (a message on stderr); 3 when the service cannot run at all (a worker cannot start; the error
body, code ``service_unavailable``, on stdout).
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from typing import Any, NoReturn

from extract_fn.settings import SettingsError

EXIT_OK = 0
EXIT_USAGE = 1
EXIT_EXTRACTION_ERROR = 2


def _columns() -> int:
    """``shutil.get_terminal_size().columns`` without importing shutil: argparse's formatter asks for it on every
    ``add_argument``, and shutil (with bz2, lzma and zlib) was ~5 ms of a text file's cold start."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class _Formatter(argparse.HelpFormatter):
    def __init__(self, prog: str) -> None:
        super().__init__(prog, width=_columns() - 2)  # argparse's own default width


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:  # argparse's default is status 2, which here means an extraction error
        self.print_usage(sys.stderr)
        self.exit(EXIT_USAGE, f"{self.prog}: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m extract_fn", description="Loom's reference extractor (extractor contract v1)")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    serve = sub.add_parser("serve", help="serve the HTTP API with uvicorn")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8790)
    serve.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    ext = sub.add_parser("extract", help="extract one file and print its artifact JSON")
    ext.add_argument("file")
    ext.add_argument("--format", required=True)
    ext.add_argument("--name", default=None, help="the file's name (default: the FILE's base name)")
    ext.add_argument("--encoding", default=None)
    ext.add_argument("--sql-dialect", default=None)
    return parser


def _fail(message: str) -> int:
    print(f"extract_fn: {message}", file=sys.stderr)
    return EXIT_USAGE


def serve(host: str, port: int, log_level: str) -> int:
    from extract_fn.settings import Settings

    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        return _fail(f"refusing to start: {exc}")
    from extract_fn.app import create_app
    from extract_fn.server import build_server
    from shared.tracing import Tracing

    try:
        app = create_app(settings, tracing=Tracing.from_env(os.environ))  # traced when App Insights is configured
        server = build_server(app, settings, host=host, port=port, log_level=log_level)
    except SettingsError as exc:
        return _fail(f"refusing to start: {exc}")
    server.run()
    return EXIT_OK


def extract(path: str, fmt: str, name: str | None, encoding: str | None, sql_dialect: str | None) -> int:
    from extract_fn.service import ExtractorService, error_body
    from extract_fn.settings import Settings
    from extract_fn.workers import WorkerPool, run_forked
    from shared.contract import ExtractionError

    try:
        settings = Settings.from_env(require_tokens=False)
    except SettingsError as exc:
        return _fail(str(exc))
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        return _fail(f"cannot read {path}: {exc.strerror or exc}")
    # The service's checks (options, size, format by bytes); the extraction itself runs in a forked child under
    # the same limits a pool worker has (the pool is never started: one file needs no second interpreter).
    pool = WorkerPool(
        1,
        timeout_s=settings.timeout_s,
        memory_limit_bytes=settings.memory_limit_bytes,
        max_output_bytes=settings.max_output_bytes,
    )
    service = ExtractorService(settings, pool=pool)
    # A name from the file system or the command line may hold bytes that are not UTF-8 (kept by Python as lone
    # surrogates); the name is only a label, so those become U+FFFD rather than refusing the file.
    label = os.fsencode(os.path.basename(path) if name is None else name).decode("utf-8", "replace")
    items = [("format", fmt), ("name", label)]
    items += [(k, v) for k, v in (("encoding", encoding), ("sql_dialect", sql_dialect)) if v is not None]
    out = sys.stdout.buffer
    try:
        query = service.parse_query(items)
        service.check_size(size)
        with open(path, "rb") as fh:
            data = fh.read(settings.max_bytes + 1)
        request = service.prepare(query, data)
        raw = run_forked(
            service.extractors[query.format],
            data,
            request,
            timeout_s=settings.timeout_s,
            memory_limit_bytes=settings.memory_limit_bytes,
            max_output_bytes=settings.max_output_bytes,
        )
    except ExtractionError as exc:
        out.write(error_body(exc.code.value, exc.message) + b"\n")
        return EXIT_EXTRACTION_ERROR
    except OSError as exc:
        return _fail(f"cannot read {path}: {exc.strerror or exc}")
    if isinstance(raw, bytes):
        out.write(raw + b"\n")
    else:  # a big artifact, in the child's reply file: sent as it is
        try:
            raw.write_to(out)
        finally:
            raw.close()
        out.write(b"\n")
    out.flush()
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    from shared.interpreter import unsupported

    if (why := unsupported()) is not None:
        return _fail(f"refusing to start: {why}")
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    if args.command == "serve":
        logging.getLogger("extract_fn").setLevel(args.log_level.upper())
        return serve(args.host, args.port, args.log_level)
    return extract(args.file, args.format, args.name, args.encoding, args.sql_dialect)


if __name__ == "__main__":
    sys.exit(main())
