"""The command line: ``python -m extract_fn extract`` and ``python -m extract_fn serve`` (extract_fn/__main__.py)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest

from extract_fn.__main__ import main
from shared.artifact import validate_artifact
from shared.contract import Capabilities

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
TEXT = CORPUS / "text" / "chardet-utf16le-bom.txt"
LATIN1 = CORPUS / "text" / "chardet-latin1.txt"
PDF = CORPUS / "pdf" / "sample-files-001-trivial.pdf"
SETTINGS = [k for k in os.environ if k.startswith("EXTRACTOR_")]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("EXTRACTOR_")}
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "extract_fn", *args],
        check=False,
        capture_output=True,
        env=_env(**env),
        cwd=ROOT,
        timeout=120,
    )


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in SETTINGS:
        monkeypatch.delenv(key)


# ---------------------------------------------------------------------------------------------------------------
# extract, as a real process


def test_extract_prints_the_artifact() -> None:
    done = _cli("extract", str(TEXT), "--format", "text")
    assert done.returncode == 0, done.stderr
    artifact = validate_artifact(done.stdout.strip(), format="text", original_size=TEXT.stat().st_size)
    assert artifact.blocks


def test_extract_error_is_exit_2_with_the_error_body() -> None:
    done = _cli("extract", str(PDF), "--format", "markdown")
    assert done.returncode == 2
    assert orjson.loads(done.stdout) == {
        "error": {"code": "format_mismatch", "message": "the file is pdf, not markdown"}
    }


def test_usage_errors_are_exit_1() -> None:
    done = _cli("extract", str(TEXT))  # no --format
    assert done.returncode == 1
    assert b"--format" in done.stderr
    assert done.stdout == b""
    assert _cli("frobnicate").returncode == 1
    assert _cli().returncode == 1


def test_serve_refuses_to_start_without_tokens() -> None:
    done = _cli("serve", "--port", "1")
    assert done.returncode == 1
    assert b"EXTRACTOR_TOKENS" in done.stderr
    assert b"refusing to start" in done.stderr


def test_serve_refuses_a_bad_setting_naming_it() -> None:
    done = _cli("serve", "--port", "1", EXTRACTOR_TOKENS="t0k", EXTRACTOR_TIMEOUT_S="forever")
    assert done.returncode == 1
    assert b"EXTRACTOR_TIMEOUT_S" in done.stderr


# ---------------------------------------------------------------------------------------------------------------
# extract, in process (same code, quicker)


def _main(capsysbinary: pytest.CaptureFixture[bytes], *args: str) -> tuple[int, bytes, bytes]:
    """The CLI in this process. Its extraction is a fork of this test process, whose heap (however many tests ran
    in it before) a memory limit would count, so the limit is lifted unless the test sets one: the limits' own
    tests run the CLI as a process of its own."""
    with pytest.MonkeyPatch.context() as mp:
        if "EXTRACTOR_MEMORY_LIMIT_MB" not in os.environ:
            mp.setenv("EXTRACTOR_MEMORY_LIMIT_MB", "0")
        code = main(list(args))
    out, err = capsysbinary.readouterr()
    return code, out, err


def _error_code(out: bytes) -> str:
    code: str = orjson.loads(out)["error"]["code"]
    return code


def test_extract_options(capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    code, out, _ = _main(capsysbinary, "extract", str(LATIN1), "--format", "text")
    assert (code, _error_code(out)) == (2, "encoding")
    code, out, _ = _main(capsysbinary, "extract", str(LATIN1), "--format", "text", "--encoding", "latin-1")
    assert code == 0
    doc = orjson.loads(out)
    assert doc["options"] == {"encoding": "latin-1"}
    code, out, _ = _main(capsysbinary, "extract", str(LATIN1), "--format", "text", "--encoding", "klingon")
    assert (code, _error_code(out)) == (2, "invalid_option")
    code, out, _ = _main(capsysbinary, "extract", str(LATIN1), "--format", "text", "--sql-dialect", "mysql")
    assert (code, _error_code(out)) == (2, "invalid_option")
    code, out, _ = _main(capsysbinary, "extract", str(LATIN1), "--format", "docm")
    assert (code, _error_code(out)) == (2, "unsupported_format")


def test_extract_limits_come_from_the_environment(
    capsysbinary: pytest.CaptureFixture[bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("EXTRACTOR_MAX_BYTES", "100")
    code, out, _ = _main(capsysbinary, "extract", str(TEXT), "--format", "text")
    assert (code, _error_code(out)) == (2, "too_large")
    assert f"{TEXT.stat().st_size} bytes" in orjson.loads(out)["error"]["message"]
    monkeypatch.setenv("EXTRACTOR_MAX_BYTES", "lots")
    code, out, err = _main(capsysbinary, "extract", str(TEXT), "--format", "text")
    assert code == 1
    assert out == b""
    assert b"EXTRACTOR_MAX_BYTES" in err


def test_extract_a_missing_file_is_usage(capsysbinary: pytest.CaptureFixture[bytes], tmp_path: Path) -> None:
    code, out, err = _main(capsysbinary, "extract", str(tmp_path / "nope.txt"), "--format", "text")
    assert code == 1
    assert out == b""
    assert b"nope.txt" in err


def test_extract_names_the_file_by_default(capsysbinary: pytest.CaptureFixture[bytes], tmp_path: Path) -> None:
    path = tmp_path / "notes.md"
    path.write_bytes(b"# Title\n\nSome text.\n")
    code, out, _ = _main(capsysbinary, "extract", str(path), "--format", "text", "--name", "")
    assert code == 0
    validate_artifact(out.strip(), format="text", original_size=path.stat().st_size)


# ---------------------------------------------------------------------------------------------------------------
# serve: a real uvicorn process


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _children(pid: int) -> list[int]:
    out = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (FileNotFoundError, ProcessLookupError, IndexError):
            continue
        if int(fields[1]) == pid and fields[0] != "Z":
            out.append(int(stat.parent.name))
    return out


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    port = _free_port()
    env = _env(EXTRACTOR_TOKENS="cli-token-1,cli-token-2", EXTRACTOR_MAX_BYTES="4096", EXTRACTOR_WORKERS="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "extract_fn", "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120  # it must start; how soon does not matter
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if httpx.get(f"{base}/v1/capabilities", headers={"Authorization": "Bearer cli-token-1"}).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.1)
    try:
        yield proc, base
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def test_serve_answers_the_contract(served: tuple[subprocess.Popen[bytes], str]) -> None:
    proc, base = served
    assert proc.poll() is None
    with httpx.Client(base_url=base, timeout=30, headers={"Accept-Encoding": "gzip"}) as http:
        caps = http.get("/v1/capabilities", headers={"Authorization": "Bearer cli-token-2"})
        assert caps.status_code == 200
        capabilities = Capabilities.model_validate_json(caps.content)
        assert capabilities.max_bytes == 4096
        assert capabilities.supports("text")
        assert http.get("/v1/capabilities").status_code == 401
        body = TEXT.read_bytes()[:4000]
        response = http.post(
            "/v1/extract",
            params={"format": "text", "name": TEXT.name},
            content=body,
            headers={"Authorization": "Bearer cli-token-1", "Content-Type": "application/octet-stream"},
        )
        assert response.status_code == 200, response.text
        assert "content-encoding" not in response.headers
        validate_artifact(response.content, format="text", original_size=len(body))
        big = http.post(
            "/v1/extract",
            params={"format": "text"},
            content=b"x" * 5000,
            headers={"Authorization": "Bearer cli-token-1"},
        )
        assert big.status_code == 422
        assert big.json()["error"]["code"] == "too_large"


def test_serve_stops_cleanly_and_takes_its_workers_along(served: tuple[subprocess.Popen[bytes], str]) -> None:
    proc, _ = served
    workers = _children(proc.pid)
    assert len(workers) == 1  # EXTRACTOR_WORKERS=1
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=30) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal after a graceful stop
    deadline = time.monotonic() + 120  # they must go; how soon does not matter
    while any(_state(p) not in ("gone", "Z") for p in workers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [p for p in workers if _state(p) not in ("gone", "Z")] == []
    _, stderr = proc.communicate(timeout=10)
    assert b"Application shutdown complete" in stderr  # the lifespan ran: the pool was closed, not orphaned
    assert b"cli-token" not in stderr  # tokens are never logged


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return "gone"


def test_a_file_name_that_is_not_utf8(capsysbinary: pytest.CaptureFixture[bytes], tmp_path: Path) -> None:
    # A Latin-1 file name on disk (Python holds its byte as a lone surrogate): the name is only a label, so its
    # undecodable byte becomes U+FFFD and the file is extracted; it used to crash with a traceback.
    path = tmp_path / os.fsdecode(b"caf\xe9.csv")
    path.write_bytes(b"a,b\n1,2\n")
    code, out, err = _main(capsysbinary, "extract", str(path), "--format", "csv")
    assert code == 0, err
    assert orjson.loads(out)["tables"][0]["name"] == "caf\ufffd.csv"
    code, out, err = _main(capsysbinary, "extract", str(path), "--format", "csv", "--name", os.fsdecode(b"x\xffy"))
    assert code == 0, err
    assert orjson.loads(out)["tables"][0]["name"] == "x\ufffdy"
    # An option is no label: a codec or format name that is not UTF-8 is refused, as over HTTP.
    code, out, _ = _main(capsysbinary, "extract", str(path), "--format", os.fsdecode(b"csv\xff"))
    assert (code, _error_code(out)) == (2, "invalid_option")
    assert "not UTF-8" in orjson.loads(out)["error"]["message"]
    code, out, _ = _main(capsysbinary, "extract", str(path), "--format", "csv", "--encoding", os.fsdecode(b"\xff"))
    assert (code, _error_code(out)) == (2, "invalid_option")


def test_cli_stdout_is_only_the_answer_even_when_a_library_prints(tmp_path: Path) -> None:
    """The extraction runs in a forked child whose stdout is redirected: the CLI's stdout is one JSON document."""
    script = (
        "import sys, runpy; import builtins;"
        "import extract_fn.formats.text_format as t;"
        "orig = t.extract;"
        "t.extract = lambda d, r: (print('noise from a library'), orig(d, r))[1];"
        "sys.argv = ['extract_fn', 'extract', sys.argv[1], '--format', 'text'];"
        "runpy.run_module('extract_fn', run_name='__main__')"
    )
    f = tmp_path / "a.txt"
    f.write_text("hello\n")
    out = subprocess.run([sys.executable, "-c", script, str(f)], capture_output=True, cwd=ROOT, timeout=60, check=False)
    assert out.returncode == 0, out.stderr
    assert orjson.loads(out.stdout)["blocks"][0]["text"] == "hello"
    assert b"noise from a library" in out.stderr


def test_cli_with_no_memory_limit(tmp_path: Path) -> None:
    """EXTRACTOR_MEMORY_LIMIT_MB=0 means no limit (not a crash of the forked child)."""
    f = tmp_path / "a.txt"
    f.write_text("hello\n")
    env = dict(os.environ, EXTRACTOR_MEMORY_LIMIT_MB="0")
    out = subprocess.run(
        [sys.executable, "-m", "extract_fn", "extract", str(f), "--format", "text"],
        capture_output=True,
        cwd=ROOT,
        env=env,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert orjson.loads(out.stdout)["blocks"][0]["text"] == "hello"


def test_a_big_artifact_reaches_stdout_whole_from_the_childs_reply_file(tmp_path: Path) -> None:
    """Past ``_REPLY_IN_MEMORY`` the child writes the artifact into a reply file the CLI sends to its stdout as it is
    (``sendfile``; in chunks where stdout takes none, as an O_APPEND file): the same bytes, one line, on a pipe, a
    file and a file opened for appending."""
    from extract_fn import workers

    f = tmp_path / "big.txt"
    f.write_bytes(b"".join(b"paragraph %d of a file with many of them\n\n" % i for i in range(60_000)))
    cmd = [sys.executable, "-m", "extract_fn", "extract", str(f), "--format", "text"]
    spool = tmp_path / "tmp"  # where the reply file is made: nothing is left there
    spool.mkdir()
    env = _env(TMPDIR=str(spool))
    piped = subprocess.run(cmd, capture_output=True, cwd=ROOT, env=env, timeout=120, check=False)
    assert piped.returncode == 0, piped.stderr
    assert len(piped.stdout) > workers._REPLY_IN_MEMORY
    assert piped.stdout.endswith(b"}\n")
    assert piped.stdout.count(b"\n") == 1
    artifact = piped.stdout[:-1]
    validate_artifact(artifact, format="text", original_size=f.stat().st_size)
    for mode, before in (("wb", b""), ("ab", b"already here\n")):
        target = tmp_path / f"out-{mode}"
        target.write_bytes(before)
        with target.open(mode) as out:
            done = subprocess.run(cmd, stdout=out, stderr=subprocess.PIPE, cwd=ROOT, env=env, timeout=120, check=False)
        assert done.returncode == 0, done.stderr
        assert target.read_bytes() == before + piped.stdout
    assert os.listdir(spool) == []


def test_a_big_artifact_reaches_a_stdout_without_a_descriptor(
    capsysbinary: pytest.CaptureFixture[bytes], tmp_path: Path
) -> None:
    """In process, with stdout a Python object (no descriptor to ``sendfile`` to), the reply file is copied."""
    from extract_fn import workers

    f = tmp_path / "big.txt"
    f.write_bytes(b"".join(b"paragraph %d of a file with many of them\n\n" % i for i in range(60_000)))
    code, out, _ = _main(capsysbinary, "extract", str(f), "--format", "text")
    assert code == 0, out[:300]
    assert len(out) > workers._REPLY_IN_MEMORY
    assert out.endswith(b"}\n")
    validate_artifact(out[:-1], format="text", original_size=f.stat().st_size)
