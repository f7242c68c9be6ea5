"""A local stand-in for the Functions host: it drives the same handlers the function adapters call.

- the accepted-files Event Hub is a Storage queue (``accepted-files-local``): batches of its messages go to
  ``handle_accepted_events`` as the Event Hub trigger's batches would;
- ``poll-jobs`` is consumed as the queue trigger consumes it (devhost/queue_trigger.py, from host.json): a batch of
  ``batchSize`` messages is handled concurrently and the next is fetched when ``newBatchThreshold`` remain, so one
  extractor that hangs holds only its own message; a message becomes visible after its backoff delay; one that fails
  ``maxDequeueCount`` times moves to ``poll-jobs-poison``; each message goes to ``handle_poll_message``;
- ``cancel-jobs`` likewise, to ``cancel_job``;
- the sweeper runs on a timer;
- status events, which go to the ``job-status-local`` queue when no Event Hub is configured, are copied into a
  table per job so that ``devhost status`` can show them in order.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import orjson
from azure.core.exceptions import ResourceExistsError
from azure.data.tables import TableClient, UpdateMode
from azure.storage.queue import QueueClient, QueueMessage

from devhost import config
from devhost.queue_trigger import QueueTrigger
from shared.orchestration.cancel import CancelMessageError, cancel_job, parse_cancel_message
from shared.orchestration.deps import Deps
from shared.orchestration.poll import handle_poll_message
from shared.orchestration.submit import run_accepted_batch
from shared.orchestration.sweeper import sweep

log = logging.getLogger("devhost")

# How long a message being handled stays invisible. A host that dies mid-handling leaves it invisible that long; the
# job's own poll lease (POLL_LEASE_SECONDS, 300 s) runs out at the same time, so the redelivered message polls again.
LEASE_SECONDS = 300


def events_table(deps: Deps) -> TableClient:
    from shared.orchestration.storage import table_service

    service = table_service(deps.settings)
    with contextlib.suppress(ResourceExistsError):
        service.create_table(config.events_table())
    return service.get_table_client(config.events_table())


def queue(deps: Deps, name: str) -> QueueClient:
    from shared.orchestration.storage import queue_service

    client = queue_service(deps.settings).get_queue_client(name)
    with contextlib.suppress(ResourceExistsError):
        client.create_queue()
    return client


def record_status_event(table: TableClient, body: str | bytes) -> str:
    """Keep one status event (from the local status queue) under its job; returns the job id."""
    event = orjson.loads(body)
    table.upsert_entity(
        {
            "PartitionKey": event["jobId"],
            "RowKey": f"{int(event['sequence']):010d}",
            "Body": body if isinstance(body, str) else body.decode(),
        },
        mode=UpdateMode.REPLACE,
    )
    return str(event["jobId"])


def job_events(table: TableClient, job_id: str) -> list[dict[str, Any]]:
    rows = table.query_entities("PartitionKey eq @pk", parameters={"pk": job_id})
    return [orjson.loads(r["Body"]) for r in sorted(rows, key=lambda r: r["RowKey"])]


@dataclass
class LocalHost:
    deps: Deps
    sweep_every_s: float = 30.0
    idle_sleep_s: float = 0.25
    stop: threading.Event = field(default_factory=threading.Event)
    trigger: QueueTrigger = field(default_factory=QueueTrigger.from_host_json)

    def __post_init__(self) -> None:
        s = self.deps.settings
        self.accepted = queue(self.deps, config.accepted_queue())
        self.poll = queue(self.deps, s.poll_queue)
        self.poll_poison = queue(self.deps, f"{s.poll_queue}-poison")
        self.cancel = queue(self.deps, s.cancel_queue)
        self.status = queue(self.deps, s.status_local_queue)
        self.events = events_table(self.deps)
        self.pool = ThreadPoolExecutor(max_workers=self.trigger.batch_size, thread_name_prefix="poll")  # poll_once
        self._in_flight = 0  # poll messages handed to the pool and not finished
        self._in_flight_lock = threading.Lock()

    # -- one pass of each trigger (tests call these directly) ----------------------------------------------------

    def accepted_once(self) -> int:
        msgs = list(
            self.accepted.receive_messages(messages_per_page=32, max_messages=32, visibility_timeout=LEASE_SECONDS)
        )
        if not msgs:
            return 0
        retry = max(m.dequeue_count or 1 for m in msgs) - 1
        max_retry = self.trigger.max_dequeue_count - 1
        run_accepted_batch(
            [_body(m) for m in msgs], self.deps, retry_count=min(retry, max_retry), max_retry_count=max_retry
        )
        for m in msgs:
            self.accepted.delete_message(m)
        return len(msgs)

    def poll_once(self) -> int:
        """One batch, handled concurrently, returning when all of it is done (tests and benchmarks step with it)."""
        msgs = self._receive_polls()
        list(self.pool.map(self._poll_message, msgs))
        return len(msgs)

    def poll_dispatch(self) -> int:
        """As the queue trigger: fetch a batch only when at most ``newBatchThreshold`` messages are still being
        handled, hand each to the pool and return at once (``run_forever``'s poll loop). Returns how many it fetched."""
        with self._in_flight_lock:
            if self._in_flight > self.trigger.new_batch_threshold:
                return 0
        msgs = self._receive_polls()
        for m in msgs:
            with self._in_flight_lock:
                self._in_flight += 1
            # A daemon thread each (at most batchSize + newBatchThreshold at once): a poll hanging on its extractor
            # does not hold up the process's exit, as an executor's threads would.
            threading.Thread(target=self._poll_tracked, args=(m,), daemon=True, name=f"poll-{m.id[:8]}").start()
        return len(msgs)

    @property
    def polls_in_flight(self) -> int:
        with self._in_flight_lock:
            return self._in_flight

    def _receive_polls(self) -> list[QueueMessage]:
        n = self.trigger.batch_size
        return list(self.poll.receive_messages(messages_per_page=n, max_messages=n, visibility_timeout=LEASE_SECONDS))

    def _poll_tracked(self, msg: QueueMessage) -> None:
        try:
            self._poll_message(msg)
        except Exception:  # _handle logs the handler's failures; this is a storage call failing (delete, poison)
            log.exception("poll message %s failed; it is redelivered after its lease", msg.id)
        finally:
            with self._in_flight_lock:
                self._in_flight -= 1

    def _poll_message(self, msg: QueueMessage) -> None:
        self._handle(self.poll, self.poll_poison, msg, lambda body: handle_poll_message(body, self.deps))

    def cancel_once(self) -> int:
        msgs = list(
            self.cancel.receive_messages(messages_per_page=16, max_messages=16, visibility_timeout=LEASE_SECONDS)
        )
        for m in msgs:
            try:
                job_id, reason = parse_cancel_message(_body(m))
            except CancelMessageError as exc:
                log.warning("dropping a malformed cancel message: %s", exc)
            else:
                cancel_job(job_id, self.deps, reason)
            self.cancel.delete_message(m)
        return len(msgs)

    def status_once(self) -> int:
        msgs = list(self.status.receive_messages(messages_per_page=32, max_messages=32, visibility_timeout=60))
        for m in msgs:
            try:
                record_status_event(self.events, _body(m))
                log.info("event %s", _describe(_body(m)))
            except (orjson.JSONDecodeError, KeyError, ValueError) as exc:
                log.warning("not a status event (%s): %r", exc, _body(m)[:200])
            self.status.delete_message(m)
        return len(msgs)

    def sweep_once(self) -> None:
        report = sweep(self.deps)
        if report.rescheduled or report.failed or report.published:
            log.info("sweep: %s", report)

    def _handle(
        self, source: QueueClient, poison: QueueClient, msg: QueueMessage, handler: Callable[[bytes], object]
    ) -> None:
        try:
            handler(_body(msg))
        except Exception:  # the Functions host would retry the message, then move it to the poison queue
            log.exception("handler failed on message %s (dequeue %s)", msg.id, msg.dequeue_count)
            if (msg.dequeue_count or 0) >= self.trigger.max_dequeue_count:
                poison.send_message(msg.content)
                source.delete_message(msg)
            return
        source.delete_message(msg)

    # -- the loops -----------------------------------------------------------------------------------------------

    def run_forever(self, until: Callable[[], bool] | None = None) -> None:
        """Run every trigger in its own thread until ``stop`` is set or ``until()`` is true (checked by this thread:
        a signal handler only notes the signal, see devhost/signals.py)."""
        loops = [self.accepted_once, self.poll_dispatch, self.cancel_once, self.status_once]
        threads = [threading.Thread(target=self._loop, args=(fn,), daemon=True, name=fn.__name__) for fn in loops]
        threads.append(threading.Thread(target=self._sweeper, daemon=True, name="sweeper"))
        for t in threads:
            t.start()
        while not self.stop.is_set():
            if until is not None and until():
                self.stop.set()
                break
            self.stop.wait(0.2)

    def drain(self, grace_s: float, hurry: Callable[[], bool] = lambda: False) -> int:
        """After a stop, wait up to ``grace_s`` (less if ``hurry()``) for the polls in flight; returns how many are
        left. A message left in flight stays invisible for its lease (``LEASE_SECONDS``) and is then redelivered."""
        deadline = time.monotonic() + grace_s
        while self.polls_in_flight and time.monotonic() < deadline and not hurry():
            time.sleep(0.05)
        return self.polls_in_flight

    def _loop(self, once: Callable[[], int]) -> None:
        while not self.stop.is_set():
            try:
                busy = once()
            except Exception:
                log.exception("%s failed; retrying", once.__name__)
                busy = 0
            if not busy:
                self.stop.wait(self.idle_sleep_s)

    def _sweeper(self) -> None:
        while not self.stop.wait(self.sweep_every_s):
            try:
                self.sweep_once()
            except Exception:
                log.exception("sweep failed")


def _body(msg: QueueMessage) -> bytes:
    content = msg.content
    return content.encode() if isinstance(content, str) else bytes(content)


def _describe(body: bytes) -> str:
    e = orjson.loads(body)
    extra = e.get("reason") or e.get("resultLocation") or ""
    return f"{e['jobId']} #{e['sequence']} {e['eventType']} {e['status']} {extra}".rstrip()


def wait_until(predicate: Callable[[], bool], timeout_s: float, interval_s: float = 0.25) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval_s)
    return predicate()
