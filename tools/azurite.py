"""Start Azurite (from node_modules, pinned in package.json) on free ports in a temporary folder.

``python tools/azurite.py -- CMD ARGS...`` runs CMD with ``AZURITE_CONNECTION_STRING`` set, then stops Azurite and
exits with CMD's status. ``python tools/azurite.py --serve`` runs Azurite in the foreground on the fixed local ports
(10000-10002), until a signal (SIGINT, SIGTERM, SIGHUP). Tests import ``start_azurite``.

Start-up refuses ports something already listens on (``PortsInUse`` says whether an Azurite answers there or
another program), instead of taking that listener for the Azurite it started. An Azurite on the fixed ports records
itself in ``<folder>/azurite.pid`` (its pid and start time, and those of the process that started it), so the next
start can stop one a crashed run left behind (``clean_up_after_crash``) without ever killing a process that merely
reuses the pid.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
AZURITE_BIN = ROOT / "node_modules" / ".bin" / "azurite"
ACCOUNT = "devstoreaccount1"
# Azurite's well-known development key (public, documented by Microsoft; not a secret).
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
LOCAL_PORTS = (10000, 10001, 10002)
PID_FILE = "azurite.pid"


class PortsInUse(RuntimeError):
    """Something already listens on a port Azurite was to take."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def connection_string(blob: int, queue: int, table: int) -> str:
    return (
        f"DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};"
        f"BlobEndpoint=http://127.0.0.1:{blob}/{ACCOUNT};QueueEndpoint=http://127.0.0.1:{queue}/{ACCOUNT};"
        f"TableEndpoint=http://127.0.0.1:{table}/{ACCOUNT};"
    )


@dataclass
class Azurite:
    process: subprocess.Popen[bytes]
    connection_string: str
    folder: str

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


def listening(port: int, host: str = "127.0.0.1") -> bool:
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
        return True
    return False


def azurite_service(port: int) -> str | None:
    """The Azurite service answering on the port ("Blob", "Queue", "Table"), from its Server header; None if what
    answers is not Azurite (or nothing does)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", "/")
        server = conn.getresponse().getheader("Server") or ""
    except (OSError, http.client.HTTPException):
        return None
    finally:
        conn.close()
    name, _, _ = server.partition("/")
    return name.removeprefix("Azurite-") if name.startswith("Azurite-") else None


def describe_listeners(ports: tuple[int, ...]) -> str | None:
    """What listens on any of the ports, in words; None when they are all free."""
    taken = [p for p in ports if listening(p)]
    if not taken:
        return None
    found = [
        f"127.0.0.1:{p} ({'an Azurite ' + svc + ' service' if (svc := azurite_service(p)) else 'not Azurite'})"
        for p in taken
    ]
    return "already in use: " + ", ".join(found)


# -- the pid file of an Azurite on the fixed ports ------------------------------------------------------------------


def process_start_time(pid: int) -> int | None:
    """The process's start time (clock ticks after boot, /proc/PID/stat field 22): with the pid it names one process,
    where a pid alone may have been reused. None if there is no such process (a zombie counts as none)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = stat.rsplit(")", 1)[1].split()
    return None if fields[0] == "Z" else int(fields[19])


def _same_process(pid: object, start_time: object) -> bool:
    return isinstance(pid, int) and pid > 0 and process_start_time(pid) == start_time


def write_pid_file(folder: Path, proc: subprocess.Popen[bytes]) -> Path:
    path = folder / PID_FILE
    record = {
        "pid": proc.pid,
        "start_time": process_start_time(proc.pid),
        "owner_pid": os.getpid(),
        "owner_start_time": process_start_time(os.getpid()),
    }
    path.write_bytes(orjson.dumps(record))
    return path


def clean_up_after_crash(folder: Path) -> str | None:
    """Stop the Azurite a crashed run left (its pid file names a live Azurite whose starter is gone) and remove a
    stale pid file. Returns what it did, in words, or None. An Azurite whose starter still runs is left alone."""
    path = folder / PID_FILE
    try:
        record = orjson.loads(path.read_bytes())
    except FileNotFoundError:
        return None
    except (OSError, orjson.JSONDecodeError):
        path.unlink(missing_ok=True)
        return f"removed an unreadable {path.name}"
    if not isinstance(record, dict):
        path.unlink(missing_ok=True)
        return f"removed an unreadable {path.name}"
    pid, started = record.get("pid"), record.get("start_time")
    if not _same_process(pid, started):
        path.unlink(missing_ok=True)
        return f"removed a stale {path.name} (its Azurite, pid {pid}, is gone)"
    if _same_process(record.get("owner_pid"), record.get("owner_start_time")):
        return None  # the run that started it is alive: it is in use
    assert isinstance(pid, int)
    _terminate(pid)
    path.unlink(missing_ok=True)
    return f"stopped the Azurite (pid {pid}) an earlier run left behind"


def _terminate(pid: int, grace_s: float = 10) -> None:
    started = process_start_time(pid)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while process_start_time(pid) == started and started is not None and time.monotonic() < deadline:
        time.sleep(0.1)
    if started is not None and process_start_time(pid) == started:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


def _wait_listening(port: int, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Azurite exited with {proc.returncode} before listening on {port}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"Azurite did not listen on port {port} in time")


def start_azurite(ports: tuple[int, int, int] | None = None, *, folder: str | None = None) -> Azurite:
    """Start Azurite on the ports (free ones if None); ``PortsInUse`` if something already listens on one."""
    if not AZURITE_BIN.exists():
        raise RuntimeError(f"{AZURITE_BIN} is missing: run 'make setup' (npm ci) first")
    blob, queue, table = ports or (free_port(), free_port(), free_port())
    taken = describe_listeners((blob, queue, table))
    if taken:
        raise PortsInUse(f"Azurite's ports are {taken}")
    folder = folder or tempfile.mkdtemp(prefix="azurite-")
    cmd = [
        str(AZURITE_BIN),
        "--silent",
        "--disableTelemetry",
        "--skipApiVersionCheck",
        "--loose",
        "--location",
        folder,
        "--blobHost",
        "127.0.0.1",
        "--queueHost",
        "127.0.0.1",
        "--tableHost",
        "127.0.0.1",
        "--blobPort",
        str(blob),
        "--queuePort",
        str(queue),
        "--tablePort",
        str(table),
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 120  # generous: a busy machine starts node slowly
    try:
        for port in (blob, queue, table):
            _wait_listening(port, proc, deadline)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()
        raise
    return Azurite(proc, connection_string(blob, queue, table), folder)


@contextlib.contextmanager
def running_azurite() -> Iterator[Azurite]:
    az = start_azurite()
    try:
        yield az
    finally:
        az.stop()


def serve(folder: Path, ports: tuple[int, int, int] = LOCAL_PORTS) -> int:
    """Azurite in the foreground on the fixed ports until a signal; non-zero if it cannot start or dies."""
    folder.mkdir(parents=True, exist_ok=True)
    cleaned = clean_up_after_crash(folder)
    if cleaned:
        print(cleaned, flush=True)
    try:
        az = start_azurite(ports, folder=str(folder))
    except (PortsInUse, RuntimeError) as exc:
        print(f"Azurite not started: {exc}", file=sys.stderr)
        return 1
    pid_file = write_pid_file(folder, az.process)
    signalled: list[int] = []
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: signalled.append(signum))  # only a note: see devhost/signals.py
    print(f"Azurite listening on 127.0.0.1:{ports[0]}-{ports[2]} (data in {folder})", flush=True)
    try:
        while not signalled and az.process.poll() is None:
            time.sleep(0.2)
        died = az.process.poll()
        if died is not None:
            print(f"Azurite exited with status {died}", file=sys.stderr)
            return 1
        az.process.send_signal(signal.SIGTERM)
        try:
            az.process.wait(10)
        except subprocess.TimeoutExpired:
            az.process.kill()
            az.process.wait()
        return 0
    finally:
        pid_file.unlink(missing_ok=True)


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"]:
        ports = tuple(int(p) for p in argv[1:4]) if len(argv) == 4 else LOCAL_PORTS
        return serve(Path(os.environ.get("AZURITE_FOLDER") or ROOT / ".azurite"), ports)  # type: ignore[arg-type]
    if argv[:1] != ["--"] or len(argv) < 2:
        print("usage: azurite.py -- CMD [ARGS...] | azurite.py --serve [BLOB QUEUE TABLE]", file=sys.stderr)
        return 2
    with running_azurite() as az:
        env = dict(os.environ, AZURITE_CONNECTION_STRING=az.connection_string)
        return subprocess.call(argv[1:], env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
