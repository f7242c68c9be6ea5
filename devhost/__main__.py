"""The local pipeline: ``python -m devhost run | accept | status | wait``.

- ``run``: starts Azurite (127.0.0.1:10000-10002, data in .azurite/) and the extractor service (127.0.0.1:8790) unless
  they already listen, then drives the orchestration's handlers as the Functions host would (see devhost/host.py).
- ``accept FILE --app APP_ID``: uploads FILE to the accepted-files container and emits its accepted-file event;
  prints the job id. An application listed in devhost/registration.local.json gets that registration inline
  (the demo application ``demo-app`` uses the local extractor service).
- ``status JOB_ID [--json]``: the job, its status events in order, and where its result is.
- ``wait JOB_ID [--timeout S]``: returns when the job is terminal: exit 0 Succeeded, 1 Failed or Canceled,
  3 not terminal in time.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import logging
import mimetypes
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import orjson

from devhost import config

EXIT_FAILED = 1
EXIT_TIMEOUT = 3


def _listening(host: str, port: int) -> bool:
    from shared.outbound import loopback_listening

    return loopback_listening(port, host)


def _deps() -> Any:
    os.environ.update({k: v for k, v in config.local_environment().items() if k not in os.environ})
    from shared.orchestration.runtime import build_deps
    from shared.orchestration.settings import OrchestrationSettings

    return build_deps(OrchestrationSettings.from_env())


def _require_azurite() -> None:
    if not os.environ.get("AZURITE_CONNECTION_STRING") and not _listening("127.0.0.1", config.AZURITE_PORTS[0]):
        sys.exit("Azurite is not running on 127.0.0.1:10000: start the local system with 'make run' first")


# -- run ------------------------------------------------------------------------------------------------------------


def cmd_run(args: argparse.Namespace) -> int:
    from tools.azurite import start_azurite

    children: list[subprocess.Popen[bytes]] = []
    if not os.environ.get("AZURITE_CONNECTION_STRING") and not _listening("127.0.0.1", config.AZURITE_PORTS[0]):
        config.STATE_DIR.mkdir(exist_ok=True)
        az = start_azurite(config.AZURITE_PORTS, folder=str(config.STATE_DIR))
        children.append(az.process)
        print(f"Azurite on 127.0.0.1:10000-10002 (data in {config.STATE_DIR})", flush=True)
    if not args.no_extractor and not _listening(config.EXTRACTOR_HOST, config.EXTRACTOR_PORT):
        env = dict(os.environ, EXTRACTOR_TOKENS=config.DEV_TOKEN)
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "extract_fn",
                "serve",
                "--host",
                config.EXTRACTOR_HOST,
                "--port",
                str(config.EXTRACTOR_PORT),
            ],
            env=env,
            cwd=config.ROOT,
        )
        children.append(proc)
        deadline = time.monotonic() + 60
        while not _listening(config.EXTRACTOR_HOST, config.EXTRACTOR_PORT):
            if proc.poll() is not None or time.monotonic() > deadline:
                print("the extractor service did not start", file=sys.stderr)
                _stop(children)
                return 1
            time.sleep(0.2)
        print(
            f"extractor service on {config.extractor_url()} (token: DEVHOST_EXTRACTOR_TOKEN or the dev default)",
            flush=True,
        )
    from devhost.host import LocalHost

    host = LocalHost(_deps(), sweep_every_s=args.sweep_every)
    print(
        "local host running: accepted files from queue 'accepted-files-local', polls from 'poll-jobs', "
        f"sweeper every {args.sweep_every:g} s.\n  try: .venv/bin/python -m devhost accept FILE --app demo-app",
        flush=True,
    )
    signal.signal(signal.SIGTERM, lambda *_: host.stop.set())
    try:
        host.run_forever()
    except KeyboardInterrupt:
        host.stop.set()
    finally:
        _stop(children)
    return 0


def _stop(children: list[subprocess.Popen[bytes]]) -> None:
    for proc in reversed(children):
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()


# -- accept ---------------------------------------------------------------------------------------------------------


def registration_for(app_id: str) -> dict[str, Any] | None:
    if not config.REGISTRATION_FILE.exists():
        return None
    registrations = orjson.loads(config.REGISTRATION_FILE.read_bytes())
    return registrations.get(app_id)


def content_type_for(path: Path) -> str:
    from shared.contract import EXTENSIONS, MEDIA_TYPES

    fmt = EXTENSIONS.get(path.suffix.lower())
    if fmt:
        return MEDIA_TYPES[fmt][0]
    return mimetypes.guess_type(path.name)[0] or "application/octet-stream"


def accept_file(
    path: Path, app_id: str, deps: Any, *, event_id: str | None = None, registration: dict[str, Any] | None = None
) -> str:
    """Upload the file and emit its accepted-file event; returns the job id the event makes.

    The registration travels inline with the event: ``registration``, else the app's entry in the local
    registration file, else none (the orchestration then asks the registration API)."""
    from azure.core.exceptions import ResourceExistsError
    from azure.storage.blob import ContentSettings

    from shared.orchestration.events import parse_accepted_event
    from shared.orchestration.storage import blob_service, blob_url

    data = path.read_bytes()
    file_id = uuid.uuid4().hex
    blob_name = f"{app_id}/{file_id}/{path.name}"
    container = blob_service(deps.settings).get_container_client(config.ACCEPTED_CONTAINER)
    with contextlib.suppress(ResourceExistsError):
        container.create_container()
    content_type = content_type_for(path)
    container.upload_blob(blob_name, data, overwrite=True, content_settings=ContentSettings(content_type=content_type))
    event: dict[str, Any] = {
        "id": event_id or str(uuid.uuid4()),
        "clientApplicationId": app_id,
        "fileId": file_id,
        "fileName": path.name,
        "contentType": content_type,
        "sizeBytes": len(data),
        "documentHash": hashlib.sha256(data).hexdigest(),
        "fileLocationUrl": blob_url(deps.settings, config.ACCEPTED_CONTAINER, blob_name),
        "filePath": f"{config.ACCEPTED_CONTAINER}/{blob_name}",
    }
    registration = registration if registration is not None else registration_for(app_id)
    if registration is not None:
        event["registration"] = registration
    body = orjson.dumps(event)
    job_id = parse_accepted_event(body).job_id()
    from devhost.host import queue

    queue(deps, config.ACCEPTED_QUEUE).send_message(body.decode())
    return job_id


def cmd_accept(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        print(f"no such file: {path}", file=sys.stderr)
        return 2
    _require_azurite()
    print(accept_file(path, args.app, _deps()))
    return 0


# -- status and wait ------------------------------------------------------------------------------------------------


def job_report(job_id: str, deps: Any) -> dict[str, Any] | None:
    from devhost.host import events_table, job_events

    job = deps.store.get(job_id)
    if job is None:
        return None
    return {
        "jobId": job.job_id,
        "status": str(job.state),
        "reason": job.reason,
        "extractorType": job.extractor_type,
        "attempt": job.attempt,
        "resultLocation": job.result_location,
        "events": job_events(events_table(deps), job_id),
    }


def cmd_status(args: argparse.Namespace) -> int:
    _require_azurite()
    report = job_report(args.job_id, _deps())
    if report is None:
        print(f"no job {args.job_id}", file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(report, option=orjson.OPT_INDENT_2) + b"\n")
        return 0
    print(f"job {report['jobId']}: {report['status']}" + (f" ({report['reason']})" if report["reason"] else ""))
    print(f"  extractor: {report['extractorType']}, attempt {report['attempt']}")
    print(f"  result: {report['resultLocation'] or '-'}")
    print("  events:")
    for e in report["events"]:
        detail = e.get("reason") or e.get("resultLocation") or ""
        print(f"    #{e['sequence']:<3} {e['time']}  {e['eventType']:<16} {e['status']:<10} {detail}")
    return 0


def cmd_wait(args: argparse.Namespace) -> int:
    from shared.orchestration.jobs import JobState

    _require_azurite()
    deps = _deps()
    deadline = time.monotonic() + args.timeout
    while True:
        job = deps.store.get(args.job_id)
        if job is not None and job.terminal:
            print(f"job {job.job_id}: {job.state}" + (f" ({job.reason})" if job.reason else ""))
            return 0 if job.state == JobState.SUCCEEDED else EXIT_FAILED
        if time.monotonic() > deadline:
            state = job.state if job is not None else "not found"
            print(f"job {args.job_id}: still {state} after {args.timeout:g} s", file=sys.stderr)
            return EXIT_TIMEOUT
        time.sleep(0.25)


def main(argv: list[str] | None = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    for noisy in ("azure", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    ap = argparse.ArgumentParser(
        prog="python -m devhost", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="run Azurite, the extractor service and the local host")
    run.add_argument("--no-extractor", action="store_true", help="do not start the extractor service")
    run.add_argument("--sweep-every", type=float, default=30.0, help="seconds between sweeper runs")
    acc = sub.add_parser("accept", help="upload a file and emit its accepted-file event")
    acc.add_argument("file")
    acc.add_argument("--app", required=True, help="the client application id")
    st = sub.add_parser("status", help="show a job, its events and its result")
    st.add_argument("job_id")
    st.add_argument("--json", action="store_true")
    wt = sub.add_parser("wait", help="wait until a job is terminal")
    wt.add_argument("job_id")
    wt.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args(argv)
    handlers = {"run": cmd_run, "accept": cmd_accept, "status": cmd_status, "wait": cmd_wait}
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
