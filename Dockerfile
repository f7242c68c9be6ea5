# The reference extractor alone, as a container: extractor contract v1 over HTTP on port 8790 (the contract's
# example port), served by `python -m extract_fn serve` (uvicorn with the connection guards of extract_fn/server.py).
#
#   docker build -t docextract-extractor .
#   docker run --rm -p 8790:8790 -e EXTRACTOR_TOKENS="$(openssl rand -hex 32)" docextract-extractor
#
# Everything is read from the environment at start (extract_fn/settings.py; docs/extractor.md "Settings"):
# EXTRACTOR_TOKENS (required: the service refuses to start without it; never baked into the image), and the
# workers' limits EXTRACTOR_WORKERS, EXTRACTOR_MEMORY_LIMIT_MB, EXTRACTOR_TIMEOUT_S, EXTRACTOR_MAX_BYTES,
# EXTRACTOR_MAX_OUTPUT_BYTES (defaults as documented there). Keep workers x memory limit under the container's
# memory. tests/test_container.py lints this file with hadolint and runs its CMD and HEALTHCHECK.

# Pinned by version (the Functions runtime's Python minor); pin a digest as well for byte-for-byte rebuilds.
FROM python:3.11.14-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Only the runtime requirements (requirements.txt, the same pins Azure Functions deploys), in their own layer.
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt

# Only what the extractor imports, and pyproject.toml (its version, shared/version.py).
COPY pyproject.toml ./
COPY shared/ shared/
COPY extract_fn/ extract_fn/

# Their bytecode, compiled once here (checked-hash: valid whatever the files' times). The code is read-only at run
# time and PYTHONDONTWRITEBYTECODE is set, so without it the service and every worker it starts would compile these
# sources again at each start: 50-170 ms of CPU a process (benchmarks/README.md, "Bytecode"). Then a user of its
# own, without a home or a shell; the code is root's and read-only to it.
RUN python -m compileall -q --invalidation-mode checked-hash shared extract_fn \
    && useradd --system --uid 10001 --no-create-home --shell /usr/sbin/nologin extractor
USER 10001:10001

EXPOSE 8790

# Liveness: GET /healthz answers 200 "ok" without a token and says nothing else.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8790/healthz', timeout=4)"]

CMD ["python", "-m", "extract_fn", "serve", "--host", "0.0.0.0", "--port", "8790"]
