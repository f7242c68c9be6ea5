"""`devhost run` and `tools/azurite.py --serve` as processes: start-up refuses listeners that are not ours, any stop
signal shuts down cleanly (a second one too), and what a crashed run left behind is cleaned up.

Every port is a free loopback port of the test's own; every storage name is the test's own."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import orjson
import pytest

from tests.quiet_http import QuietHTTPServer
from tests.waiting import wait_until
from tools.azurite import PID_FILE, clean_up_after_crash, free_port, process_start_time

ROOT = Path(__file__).resolve().parent.parent
WAIT_S = 120.0  # deadlines for things that must happen; never the thing under test


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DEVHOST_", "AZURITE_"))}
    env.update(extra)
    return env


def _wait_for_line(proc: subprocess.Popen[str], text: str, seen: list[str]) -> None:
    deadline = time.monotonic() + WAIT_S
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError(f"exited ({proc.wait()}) before {text!r}: {seen}")
        seen.append(line)
        if text in line:
            return
    raise AssertionError(f"no {text!r} in time: {seen}")


@pytest.fixture
def not_azurite() -> Iterator[int]:
    """A port of the test's own where something that is not Azurite listens (it closes each connection at once)."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(srv.getsockname()[1])
    stop.set()
    srv.close()


class _Fake(BaseHTTPRequestHandler):
    status = 200
    body = b"{}"

    def do_GET(self) -> None:
        self.send_response(self.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args: object) -> None:
        pass


def _fake_extractor(status: int, body: bytes) -> QuietHTTPServer:
    handler = type("Handler", (_Fake,), {"status": status, "body": body})
    server = QuietHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# ---------------------------------------------------------------------------------------------------------------
# Listeners that are not ours


def test_serve_refuses_ports_taken_by_something_else(not_azurite: int, tmp_path: Path) -> None:
    ports = (str(not_azurite), str(free_port()), str(free_port()))
    done = subprocess.run(
        [sys.executable, "tools/azurite.py", "--serve", *ports],
        cwd=ROOT,
        env=_env(AZURITE_FOLDER=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
    )
    assert done.returncode == 1
    assert "Azurite listening" not in done.stdout
    assert f"127.0.0.1:{not_azurite} (not Azurite)" in done.stderr
    assert not (tmp_path / PID_FILE).exists()


def test_run_refuses_an_azurite_port_taken_by_something_else(not_azurite: int, tmp_path: Path) -> None:
    ports = f"{free_port()},{not_azurite},{free_port()}"
    done = subprocess.run(
        [sys.executable, "-m", "devhost", "run", "--no-extractor"],
        cwd=ROOT,
        env=_env(DEVHOST_AZURITE_PORTS=ports, DEVHOST_STATE_DIR=str(tmp_path)),
        capture_output=True,
        text=True,
        timeout=WAIT_S,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert f"cannot start Azurite: Azurite's ports are already in use: 127.0.0.1:{not_azurite} (not Azurite)" in (
        done.stderr
    )
    assert "local host running" not in done.stdout


@pytest.mark.parametrize(
    ("status", "body", "says"),
    [
        (401, b'{"error": {"code": "unauthorized", "message": "x"}}', "it refuses the devhost's token (HTTP 401)"),
        (200, b'{"contract_version": 1, "extractor": {"name": "someone-else"}}', "not this project's extractor"),
        (200, b"<html>a web server</html>", "not this project's extractor"),
        (404, b"{}", "answered HTTP 404"),
    ],
    ids=["other-token", "other-extractor", "not-json", "not-found"],
)
def test_run_refuses_an_extractor_port_taken_by_something_else(
    azurite_connection_string: str, status: int, body: bytes, says: str
) -> None:
    server = _fake_extractor(status, body)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "devhost", "run"],
            cwd=ROOT,
            env=_env(
                AZURITE_CONNECTION_STRING=azurite_connection_string,
                DEVHOST_EXTRACTOR_PORT=str(server.server_address[1]),
            ),
            capture_output=True,
            text=True,
            timeout=WAIT_S,
            check=False,
        )
    finally:
        server.shutdown()
        server.server_close()
    assert done.returncode == 2, done.stderr
    assert f"cannot use the extractor at http://127.0.0.1:{server.server_address[1]}: " in done.stderr
    assert says in done.stderr
    assert "local host running" not in done.stdout
    assert "local-dev-token\n" not in done.stderr  # the token is named by its setting, not shown


# ---------------------------------------------------------------------------------------------------------------
# Signals


def _run_host(azurite_connection_string: str, unique_name: str) -> subprocess.Popen[str]:
    env = _env(
        AZURITE_CONNECTION_STRING=azurite_connection_string,
        DEVHOST_ACCEPTED_QUEUE=f"{unique_name}-accepted",
        DEVHOST_EVENTS_TABLE=f"{unique_name}events",
        POLL_QUEUE=f"{unique_name}-poll",
        CANCEL_QUEUE=f"{unique_name}-cancel",
        JOB_STATUS_LOCAL_QUEUE=f"{unique_name}-status",
        JOBS_TABLE=unique_name,
    )
    return subprocess.Popen(
        [sys.executable, "-m", "devhost", "run", "--no-extractor"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=lambda s: s.name)
def test_any_stop_signal_shuts_down_cleanly(azurite_connection_string: str, unique_name: str, sig: int) -> None:
    proc = _run_host(azurite_connection_string, unique_name)
    seen: list[str] = []
    try:
        _wait_for_line(proc, "local host running", seen)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=WAIT_S)
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert f"stopping ({signal.Signals(sig).name})" in out
    assert "Traceback" not in err


def test_a_burst_of_sigterms_does_not_deadlock(azurite_connection_string: str, unique_name: str) -> None:
    # The old handler called Event.set() and could re-enter it on a second SIGTERM; now every signal is only noted.
    proc = _run_host(azurite_connection_string, unique_name)
    seen: list[str] = []
    try:
        _wait_for_line(proc, "local host running", seen)
        for _ in range(50):
            proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=WAIT_S)  # a deadlock fails here, at the generous deadline
    finally:
        proc.kill()
    assert proc.returncode == 0, err
    assert "stopping (SIGTERM)" in out
    assert "Traceback" not in err


# ---------------------------------------------------------------------------------------------------------------
# What a crashed run leaves behind


def _pid_record(path: Path, pid: int, start_time: int | None, owner_pid: int, owner_start: int | None) -> None:
    record = {"pid": pid, "start_time": start_time, "owner_pid": owner_pid, "owner_start_time": owner_start}
    (path / PID_FILE).write_bytes(orjson.dumps(record))


def test_a_stale_pid_file_never_kills_a_process_that_reuses_the_pid(tmp_path: Path) -> None:
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    try:
        started = process_start_time(bystander.pid)
        assert started is not None
        # The pid file names the bystander's pid with another start time, and a starter that is gone.
        _pid_record(tmp_path, bystander.pid, started - 1, bystander.pid, started - 1)
        said = clean_up_after_crash(tmp_path)
        assert said is not None
        assert "stale" in said
        assert not (tmp_path / PID_FILE).exists()
        assert bystander.poll() is None  # alive
    finally:
        bystander.kill()
        bystander.wait()


def test_an_orphan_left_by_a_crashed_run_is_stopped_and_one_in_use_is_not(tmp_path: Path) -> None:
    orphan = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(3600)"])
    try:
        started = process_start_time(orphan.pid)
        _pid_record(tmp_path, orphan.pid, started, os.getpid(), process_start_time(os.getpid()))
        assert clean_up_after_crash(tmp_path) is None  # its starter (this process) runs: in use, left alone
        assert orphan.poll() is None
        gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, check=True)
        _pid_record(tmp_path, orphan.pid, started, int(gone.stdout), 1)  # the starter is gone
        said = clean_up_after_crash(tmp_path)
        assert said == f"stopped the Azurite (pid {orphan.pid}) an earlier run left behind"
        assert orphan.wait(timeout=WAIT_S) == -signal.SIGTERM
        assert not (tmp_path / PID_FILE).exists()
    finally:
        orphan.kill()
        orphan.wait()


def test_the_azurite_of_a_killed_run_is_stopped_by_the_next_run(tmp_path: Path) -> None:
    ports = f"{free_port()},{free_port()},{free_port()}"
    env = _env(DEVHOST_AZURITE_PORTS=ports, DEVHOST_STATE_DIR=str(tmp_path))
    cmd = [sys.executable, "-m", "devhost", "run", "--no-extractor"]
    first = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list[str] = []
    try:
        _wait_for_line(first, "local host running", seen)
        first.kill()  # a crash: no clean-up runs
        first.wait()
    finally:
        first.kill()
    record = orjson.loads((tmp_path / PID_FILE).read_bytes())
    left = int(record["pid"])
    assert process_start_time(left) == record["start_time"]  # Azurite survived the crash
    second = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen = []
    try:
        _wait_for_line(second, "local host running", seen)
        assert any(f"stopped the Azurite (pid {left}) an earlier run left behind" in line for line in seen), seen
        assert process_start_time(left) != record["start_time"]
        ours = orjson.loads((tmp_path / PID_FILE).read_bytes())
        second.send_signal(signal.SIGTERM)
        _, err = second.communicate(timeout=WAIT_S)
    finally:
        second.kill()
    assert second.returncode == 0, err
    assert not (tmp_path / PID_FILE).exists()
    wait_until(  # stopped with the run
        lambda: process_start_time(ours["pid"]) != ours["start_time"], WAIT_S, "the run's Azurite stops"
    )
