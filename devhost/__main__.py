"""The local pipeline: ``python -m devhost run | accept | status | result | wait``.

- ``run``: starts Azurite (127.0.0.1:10000-10002, data and pid file in .azurite/) and the extractor service
  (127.0.0.1:8790) unless they already listen, checks that what listens is an Azurite and this project's extractor
  taking the devhost's token (else says what is wrong and exits 2), then drives the orchestration's handlers as the
  Functions host would (see devhost/host.py) until SIGINT, SIGTERM or SIGHUP. An Azurite left by a crashed run is
  stopped first (its pid file names it).
- ``accept FILE --app APP_ID``: uploads FILE to the accepted-files container and emits its accepted-file event;
  prints the job id. An application listed in devhost/registration.local.json gets that registration inline
  (the demo application ``demo-app`` uses the local extractor service).
- ``status JOB_ID [--json]``: the job, its status events in order, and where its result is (container, blob, URL).
- ``result JOB_ID [--out FILE]``: the stored result's bytes (the artifact JSON) on stdout, or written to FILE;
  exit 1 when the job has none (not Succeeded, or a DBRICKS job: its result blobs are listed), 2 for no such job.
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
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from devhost import config
from devhost.signals import StopSignals

EXIT_FAILED = 1
EXIT_TIMEOUT = 3


def _listening(host: str, port: int) -> bool:
    from shared.outbound import loopback_listening

    return loopback_listening(port, host)


def _deps() -> Any:
    os.environ.update({k: v for k, v in config.local_environment().items() if k not in os.environ})
    from shared.orchestration.composition import build_deps
    from shared.orchestration.settings import OrchestrationSettings

    return build_deps(OrchestrationSettings.from_env())


def _require_azurite() -> None:
    port = config.azurite_ports()[0]
    if not os.environ.get("AZURITE_CONNECTION_STRING") and not _listening("127.0.0.1", port):
        sys.exit(f"Azurite is not running on 127.0.0.1:{port}: start the local system with 'make run' first")


# -- run ------------------------------------------------------------------------------------------------------------

AZURITE_SERVICES = ("Blob", "Queue", "Table")
START_TIMEOUT_S = 120.0  # generous: a busy machine starts the extractor slowly
DRAIN_GRACE_S = 10.0  # how long a stop waits for the polls in flight (a second signal cuts it short)


def cmd_run(args: argparse.Namespace) -> int:
    """Start Azurite and the extractor unless usable ones run, check what is listening is ours, run the host until a
    signal. Exits non-zero, saying what is wrong, when a port is taken by something else."""
    signals = StopSignals().install()  # first: a signal during start-up stops cleanly too
    children: list[subprocess.Popen[bytes]] = []
    pid_file: Path | None = None
    try:
        started = _run_azurite(children)
        if isinstance(started, int):
            return started
        pid_file = started
        failed = _run_extractor(args, children, signals)
        if failed is not None:
            return failed
        if signals.requested:
            return 0
        from devhost.host import LocalHost

        host = LocalHost(_deps(), sweep_every_s=args.sweep_every)
        print(
            f"local host running: accepted files from queue '{config.accepted_queue()}', polls from "
            f"'{host.deps.settings.poll_queue}' ({host.trigger.batch_size} at once, as host.json says), sweeper every "
            f"{args.sweep_every:g} s.\n  try: .venv/bin/python -m devhost accept FILE --app demo-app",
            flush=True,
        )
        host.run_forever(until=lambda: signals.requested)
        print(f"stopping ({signals.name})", flush=True)
        left = host.drain(DRAIN_GRACE_S, hurry=lambda: signals.count > 1)
        if left:
            print(
                f"{left} poll(s) still in flight: their messages are redelivered after the {LEASE_NOTE}",
                flush=True,
            )
        return 0
    finally:
        _stop(children, hurry=lambda: signals.count > 1)
        if pid_file is not None:
            pid_file.unlink(missing_ok=True)


LEASE_NOTE = "300 s message lease, when the job's poll lease (POLL_LEASE_SECONDS) has also run out"


def _run_azurite(children: list[subprocess.Popen[bytes]]) -> Path | int | None:
    """Azurite on the local ports: ours (its pid file, returned), or one that already runs there (None), or a
    reason not to go on (an exit status, after saying why)."""
    from tools.azurite import PortsInUse, azurite_service, clean_up_after_crash, start_azurite, write_pid_file

    if os.environ.get("AZURITE_CONNECTION_STRING"):
        return None  # the caller's storage
    ports = config.azurite_ports()
    state = config.state_dir()
    state.mkdir(parents=True, exist_ok=True)
    cleaned = clean_up_after_crash(state)
    if cleaned:
        print(cleaned, flush=True)
    where = f"127.0.0.1:{ports[0]}-{ports[2]}"
    if [azurite_service(p) for p in ports] == list(AZURITE_SERVICES):
        print(f"using the Azurite already running on {where} (not started by this run)", flush=True)
        return None
    try:
        az = start_azurite(ports, folder=str(state))
    except PortsInUse as exc:
        print(
            f"cannot start Azurite: {exc}. Stop that program, or set AZURITE_CONNECTION_STRING to the storage to use.",
            file=sys.stderr,
        )
        return 2
    except RuntimeError as exc:
        print(f"cannot start Azurite: {exc}", file=sys.stderr)
        return 1
    children.append(az.process)
    print(f"Azurite on {where} (data in {state})", flush=True)
    return write_pid_file(state, az.process)


def _run_extractor(
    args: argparse.Namespace, children: list[subprocess.Popen[bytes]], signals: StopSignals
) -> int | None:
    """The extractor the local registration points at: started here unless something listens on its port, and in
    either case checked to be this project's extractor accepting the devhost's token. None, or an exit status."""
    if args.no_extractor:
        return None
    url = config.extractor_url()
    port = config.extractor_port()
    if not os.environ.get("DEVHOST_EXTRACTOR_URL") and not _listening(config.EXTRACTOR_HOST, port):
        env = dict(os.environ, EXTRACTOR_TOKENS=config.DEV_TOKEN)
        cmd = [sys.executable, "-m", "extract_fn", "serve", "--host", config.EXTRACTOR_HOST, "--port", str(port)]
        proc = subprocess.Popen(cmd, env=env, cwd=config.ROOT)
        children.append(proc)
        deadline = time.monotonic() + START_TIMEOUT_S
        while not _listening(config.EXTRACTOR_HOST, port):
            if signals.requested:
                return 0
            if proc.poll() is not None or time.monotonic() > deadline:
                print("the extractor service did not start (its output is above)", file=sys.stderr)
                return 1
            time.sleep(0.2)
        print(f"extractor service on {url} (token: DEVHOST_EXTRACTOR_TOKEN or the dev default)", flush=True)
    problem = extractor_problem(url, config.DEV_TOKEN)
    if problem:
        print(f"cannot use the extractor at {url}: {problem}", file=sys.stderr)
        return 2
    return None


def extractor_problem(url: str, token: str) -> str | None:
    """Why what answers at ``url`` is not this project's extractor taking ``token`` (in words), or None if it is:
    GET /v1/capabilities must answer 200 with the contract's version and our extractor's name."""
    import orjson

    from extract_fn.settings import EXTRACTOR_NAME
    from shared.contract import CONTRACT_VERSION
    from shared.outbound import Allowlist, Bearer, Outbound, OutboundFailed, OutboundRefused, host_entry

    local = Outbound(allow_http=True, allow_loopback=True)
    allowed = Allowlist((host_entry(url),), "the devhost's extractor URL", "extractor")
    try:
        resp = local.fetch(
            "GET",
            f"{url}/v1/capabilities",
            allowed=allowed,
            timeout_s=60,
            body_limit=1024 * 1024,
            bearer=Bearer.for_url(token, url),
        )
    except (OutboundFailed, OutboundRefused) as exc:
        return f"it does not answer HTTP ({exc})"
    if resp.status in (401, 403):
        return (
            f"it refuses the devhost's token (HTTP {resp.status}): start that extractor with EXTRACTOR_TOKENS set "
            "to the devhost's token (DEVHOST_EXTRACTOR_TOKEN, default local-dev-token), or stop it and let "
            "'make run' start one"
        )
    if resp.status != 200:
        return f"GET /v1/capabilities answered HTTP {resp.status}, not 200: it is not this project's extractor"
    try:
        doc = orjson.loads(resp.body)
    except orjson.JSONDecodeError:
        doc = None
    name = (
        doc.get("extractor", {}).get("name")
        if isinstance(doc, dict) and isinstance(doc.get("extractor"), dict)
        else None
    )
    if not isinstance(doc, dict) or doc.get("contract_version") != CONTRACT_VERSION or name != EXTRACTOR_NAME:
        return (
            f"its capabilities are not this project's extractor's (contract_version {CONTRACT_VERSION}, extractor "
            f"{EXTRACTOR_NAME!r}): stop the program on that port"
        )
    return None


def _stop(children: list[subprocess.Popen[bytes]], hurry: Callable[[], bool] = lambda: False) -> None:
    """Stop the children, newest first: SIGTERM, then SIGKILL after 10 s (at once if ``hurry()``: a second signal)."""
    for proc in reversed(children):
        if proc.poll() is None:
            proc.terminate()
            deadline = time.monotonic() + 10
            while proc.poll() is None and time.monotonic() < deadline and not hurry():
                time.sleep(0.05)
            if proc.poll() is None:
                proc.kill()
            proc.wait()


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
    container_name = config.accepted_container()
    container = blob_service(deps.settings).get_container_client(container_name)
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
        "fileLocationUrl": blob_url(deps.settings, container_name, blob_name),
        "filePath": f"{container_name}/{blob_name}",
    }
    registration = registration if registration is not None else registration_for(app_id)
    if registration is not None:
        event["registration"] = registration
    body = orjson.dumps(event)
    job_id = parse_accepted_event(body).job_id()
    from devhost.host import queue

    queue(deps, config.accepted_queue()).send_message(body.decode())
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
    from devhost.results import result_place

    job = deps.store.get(job_id)
    if job is None:
        return None
    place = result_place(job)
    return {
        "jobId": job.job_id,
        "status": str(job.state),
        "reason": job.reason,
        "extractorType": job.extractor_type,
        "attempt": job.attempt,
        "resultLocation": job.result_location,
        "result": place.as_json() if place is not None else None,
        "resultUrls": list(job.result_urls),
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
    place = report["result"]
    if place is not None:
        print(f"  result: container {place['container']!r}, blob {place['blob']!r} (account {place['account']})")
        print(f"          {place['url']}")
        print(f"          open it: python -m devhost result {report['jobId']} [--out FILE]")
    else:
        print("  result: -")
    for url in report["resultUrls"]:
        print(f"  result blob: {url}")
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


def cmd_result(args: argparse.Namespace) -> int:
    from devhost.results import NoResult, write_result

    _require_azurite()
    deps = _deps()
    job = deps.store.get(args.job_id)
    if job is None:
        print(f"no job {args.job_id}", file=sys.stderr)
        return 2
    try:
        if args.out is None:
            write_result(job, deps.settings, sys.stdout.buffer)
            sys.stdout.buffer.flush()
            return 0
        out = Path(args.out)
        partial = out.with_name(out.name + ".partial")  # FILE appears whole or not at all
        with partial.open("wb") as fh:
            size = write_result(job, deps.settings, fh)
        partial.replace(out)
    except NoResult as exc:
        if args.out is not None:
            Path(args.out + ".partial").unlink(missing_ok=True)
        print(exc, file=sys.stderr)
        return EXIT_FAILED
    print(f"wrote {size} bytes to {out}", file=sys.stderr)
    return 0


def main(argv: list[str] | None = None) -> int:
    from shared.interpreter import unsupported

    if (why := unsupported()) is not None:
        print(f"devhost: refusing to start: {why}", file=sys.stderr)
        return 1
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
    rs = sub.add_parser("result", help="print (or --out FILE: write) a job's stored result")
    rs.add_argument("job_id")
    rs.add_argument("--out", default=None, metavar="FILE", help="write the result to FILE instead of stdout")
    wt = sub.add_parser("wait", help="wait until a job is terminal")
    wt.add_argument("job_id")
    wt.add_argument("--timeout", type=float, default=120.0)
    args = ap.parse_args(argv)
    handlers = {"run": cmd_run, "accept": cmd_accept, "status": cmd_status, "result": cmd_result, "wait": cmd_wait}
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
