"""Start Azurite (from node_modules, pinned in package.json) on free ports in a temporary folder.

``python tools/azurite.py -- CMD ARGS...`` runs CMD with ``AZURITE_CONNECTION_STRING`` set, then stops Azurite and
exits with CMD's status. ``python tools/azurite.py --serve`` runs Azurite in the foreground on the fixed local ports
(10000-10002), for ``make run``. Tests import ``start_azurite``.
"""

from __future__ import annotations

import contextlib
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

ROOT = Path(__file__).resolve().parent.parent
AZURITE_BIN = ROOT / "node_modules" / ".bin" / "azurite"
ACCOUNT = "devstoreaccount1"
# Azurite's well-known development key (public, documented by Microsoft; not a secret).
KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


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


def _wait_listening(port: int, proc: subprocess.Popen[bytes], deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"Azurite exited with {proc.returncode} before listening on {port}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return
        time.sleep(0.05)
    raise RuntimeError(f"Azurite did not listen on port {port} in time")


def start_azurite(ports: tuple[int, int, int] | None = None, *, folder: str | None = None) -> Azurite:
    if not AZURITE_BIN.exists():
        raise RuntimeError(f"{AZURITE_BIN} is missing: run 'make setup' (npm ci) first")
    blob, queue, table = ports or (free_port(), free_port(), free_port())
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
    deadline = time.monotonic() + 30
    for port in (blob, queue, table):
        _wait_listening(port, proc, deadline)
    return Azurite(proc, connection_string(blob, queue, table), folder)


@contextlib.contextmanager
def running_azurite() -> Iterator[Azurite]:
    az = start_azurite()
    try:
        yield az
    finally:
        az.stop()


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"]:
        folder = str(ROOT / ".azurite")
        os.makedirs(folder, exist_ok=True)
        az = start_azurite((10000, 10001, 10002), folder=folder)
        print(f"Azurite listening on 127.0.0.1:10000-10002 (data in {folder})", flush=True)
        try:
            az.process.wait()
        except KeyboardInterrupt:
            az.process.terminate()
        return 0
    if argv[:1] != ["--"] or len(argv) < 2:
        print("usage: azurite.py -- CMD [ARGS...] | azurite.py --serve", file=sys.stderr)
        return 2
    with running_azurite() as az:
        env = dict(os.environ, AZURITE_CONNECTION_STRING=az.connection_string)
        return subprocess.call(argv[1:], env=env)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
