"""Storage transactions per job: every Table request the orchestration makes, counted against Azurite.

The job store's ``TableClient`` gets a ``raw_request_hook`` that records each HTTP request it sends (real requests
to Azurite; nothing is stubbed). The budgets are the ones documented in docs/orchestration.md ("Storage transactions
per job"); a change that spends more fails here. The guarantees the budget must not cost are tested alongside:
events recorded with their change and published in order, the active index, duplicates.
"""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import orjson
from azure.core.pipeline import PipelineRequest
from azure.data.tables import TableClient

from shared.orchestration.cancel import cancel_job
from shared.orchestration.jobs import JobState, JobStore
from shared.orchestration.outcomes import PollOutcome
from shared.orchestration.poll import Action, claim_attempt, handle_poll_message
from shared.orchestration.scheduling import PollMessage
from shared.orchestration.submit import Outcome, handle_accepted_events
from shared.orchestration.sweeper import sweep
from tests.orchestration.conftest import Orch, Reply

# docs/orchestration.md, "Storage transactions per job"
LOOM_JOB_BUDGET = 8  # 1 read + 7 writes
DOCSAI_SUBMISSION_BUDGET = 5  # index, create, Submitting, Polling + Started, outbox delete
DOCSAI_PROCESSING_ATTEMPT_BUDGET = 4  # read, lease, next attempt + Processing, outbox delete
DOCSAI_LAST_ATTEMPT_BUDGET = 5  # read, lease, Succeeded + result events, outbox delete, index delete


class TableRequests:
    """Every HTTP request a ``TableClient`` sends, as (method, what): one request is one storage transaction."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.seen: list[tuple[str, str]] = []

    def __call__(self, request: PipelineRequest[Any]) -> None:
        http = request.http_request
        path = http.url.split("?", 1)[0]
        what = "batch" if path.endswith("$batch") else ("read" if http.method == "GET" else "write")
        with self.lock:
            self.seen.append((http.method, what))

    def count(self) -> int:
        with self.lock:
            return len(self.seen)

    def since(self, start: int) -> Counter[str]:
        with self.lock:
            return Counter(what for _, what in self.seen[start:])


def _count_table_requests(orch: Orch) -> TableRequests:
    """Give the orchestration a job store whose TableClient records every request it sends."""
    counter = TableRequests()
    table = TableClient.from_connection_string(
        orch.connection_string, orch.settings.jobs_table, raw_request_hook=counter
    )
    orch.deps.store = JobStore(table, orch.clock)
    return counter


def _loom(orch: Orch, outcomes: list[PollOutcome] | None = None, during: Any = None) -> None:
    script = list(outcomes or [PollOutcome.succeeded(b'{"artifact": true}')])

    def run_loom_attempt(job: Any, config: Any, settings: Any) -> PollOutcome:
        if during is not None:
            during(job)
        return script.pop(0) if len(script) > 1 else script[0]

    orch.use_loom(run_loom_attempt)
    orch.register("app-loom", {"extractorType": "LOOM", "extractionUrl": "http://127.0.0.1:9/v1"})


def _statuses(orch: Orch, job_id: str) -> list[tuple[str, str, int]]:
    return [(e["eventType"], e["status"], e["sequence"]) for e in orch.events_of(job_id)]


LOOM_EVENTS = [
    ("JobStatusChanged", "Queued", 1),
    ("JobStatusChanged", "Started", 2),
    ("JobStatusChanged", "Processing", 3),
    ("JobStatusChanged", "Succeeded", 4),
    ("ExtractedResult", "Succeeded", 5),
]


def test_a_loom_job_costs_at_most_its_documented_table_transactions(orch: Orch) -> None:
    _loom(orch)
    counter = _count_table_requests(orch)
    [outcome] = handle_accepted_events([orjson.dumps(orch.event("app-loom"))], orch.deps).outcomes
    assert outcome.outcome == Outcome.CREATED
    submitted = counter.since(0)
    assert [r.action for r in orch.drive()] == [Action.SUCCEEDED]
    spent = counter.since(0)
    total = counter.count()

    # Everything a job's life needs was done ...
    assert outcome.job_id is not None
    job = orch.deps.store.get(outcome.job_id)
    assert job is not None
    assert job.state == JobState.SUCCEEDED
    assert _statuses(orch, outcome.job_id) == LOOM_EVENTS
    assert orch.deps.store.pending_events(outcome.job_id) == []
    assert orch.deps.store.active_index() == []
    # ... within the budget: the submit run reads nothing; the poll run reads the job once.
    assert submitted["read"] == 0, submitted
    assert spent["read"] <= 1, spent
    assert total <= LOOM_JOB_BUDGET, spent


def test_a_docsai_job_costs_at_most_its_documented_table_transactions(orch: Orch) -> None:
    orch.register("app-1", orch.docsai_config())
    orch.docsai.poll_script["1001"] = [
        Reply(200, {"Status": "processing"}),
        Reply(200, {"Status": "complete", "Payload": {"x": 1}}),
    ]
    counter = _count_table_requests(orch)
    [outcome] = handle_accepted_events([orjson.dumps(orch.event("app-1"))], orch.deps).outcomes
    after_submission = counter.count()
    results = orch.drive()
    assert [r.action for r in results] == [Action.RESCHEDULED, Action.SUCCEEDED]
    total = counter.count()

    assert outcome.job_id is not None
    assert [s for _, s, _ in _statuses(orch, outcome.job_id)] == [
        "Queued",
        "Started",
        "Processing",
        "Succeeded",
        "Succeeded",
    ]
    assert orch.deps.store.active_index() == []
    assert after_submission <= DOCSAI_SUBMISSION_BUDGET
    assert total <= DOCSAI_SUBMISSION_BUDGET + DOCSAI_PROCESSING_ATTEMPT_BUDGET + DOCSAI_LAST_ATTEMPT_BUDGET


# ---------------------------------------------------------------------------------------------------------------
# The guarantees the budget must not cost


def test_a_redelivered_event_of_a_finished_job_changes_nothing_and_leaves_no_index_entry(orch: Orch) -> None:
    _loom(orch)
    event = orjson.dumps(orch.event("app-loom"))
    [first] = handle_accepted_events([event], orch.deps).outcomes
    assert [r.action for r in orch.drive()] == [Action.SUCCEEDED]
    assert first.job_id is not None
    assert _statuses(orch, first.job_id) == LOOM_EVENTS
    [again] = handle_accepted_events([event], orch.deps).outcomes
    assert (again.outcome, again.job_id, again.state) == (Outcome.DUPLICATE, first.job_id, JobState.SUCCEEDED)
    assert orch.poll_messages() == []  # no second poll chain
    assert orch.events_of(first.job_id) == orch.events_of(first.job_id)[: len(LOOM_EVENTS)]
    assert len(orch.events_of(first.job_id)) == len(LOOM_EVENTS)
    assert orch.deps.store.active_index() == []  # the sweeper never scans it


def test_duplicates_handled_concurrently_make_one_loom_job_and_one_poll_chain(orch: Orch) -> None:
    _loom(orch)
    event = orjson.dumps(orch.event("app-loom"))
    outcomes = handle_accepted_events([event] * 4, orch.deps).outcomes
    assert sorted(o.outcome for o in outcomes) == ["created", "duplicate", "duplicate", "duplicate"]
    job_id = outcomes[0].job_id
    assert job_id is not None
    assert [orjson.loads(m.content) for m in orch.poll_messages()] == [{"jobId": job_id, "attempt": 1}]
    assert [s for _, s, _ in _statuses(orch, job_id)] == ["Queued", "Started"]
    assert orch.deps.store.pending_events(job_id) == []
    assert [i.job_id for i in orch.deps.store.active_index()] == [job_id]


def test_publishing_down_at_creation_keeps_the_events_and_the_next_run_publishes_them_first(orch: Orch) -> None:
    _loom(orch)
    status_queue = orch.queue(orch.settings.status_local_queue)
    status_queue.delete_queue()  # every publish fails
    [outcome] = handle_accepted_events([orjson.dumps(orch.event("app-loom"))], orch.deps).outcomes
    job_id = outcome.job_id
    assert job_id is not None
    assert [(e.status, e.sequence) for e in orch.deps.store.pending_events(job_id)] == [("Queued", 1), ("Started", 2)]
    status_queue.create_queue()
    assert [r.action for r in orch.drive()] == [Action.SUCCEEDED]  # the poll run publishes 1 and 2 before its own
    assert _statuses(orch, job_id) == LOOM_EVENTS
    assert orch.deps.store.pending_events(job_id) == []
    assert orch.deps.store.active_index() == []


def test_cancel_during_a_loom_attempt_keeps_every_event_in_order(orch: Orch) -> None:
    """The worker holds the lease and has published Processing; the operator cancels meanwhile. The worker's
    write loses (412), it re-reads, publishes the Canceled event after its own and clears the outbox and index."""
    canceled: list[Any] = []
    _loom(orch, during=lambda job: canceled.append(cancel_job(job.job_id, orch.deps, "operator")))
    [outcome] = handle_accepted_events([orjson.dumps(orch.event("app-loom"))], orch.deps).outcomes
    job_id = outcome.job_id
    assert job_id is not None
    [result] = orch.drive()
    assert result.action == Action.DROPPED
    assert canceled[0].changed
    job = orch.deps.store.get(job_id)
    assert job is not None
    assert job.state == JobState.CANCELED
    assert [s for _, s, _ in _statuses(orch, job_id)] == ["Queued", "Started", "Processing", "Canceled"]
    assert [seq for _, _, seq in _statuses(orch, job_id)] == [1, 2, 3, 4]
    assert orch.deps.store.pending_events(job_id) == []
    assert orch.deps.store.active_index() == []


def test_a_worker_dying_mid_attempt_leaves_its_events_to_the_next_worker_and_the_job_in_the_index(orch: Orch) -> None:
    _loom(orch)
    [outcome] = handle_accepted_events([orjson.dumps(orch.event("app-loom"))], orch.deps).outcomes
    job_id = outcome.job_id
    assert job_id is not None
    orch.poll_messages()  # the message is taken by a worker ...
    claimed = claim_attempt(PollMessage(job_id, 1), orch.deps)  # ... that claims attempt 1, publishes, and dies
    assert not isinstance(claimed, type(None))
    report = sweep(orch.deps)  # the lease holder's events are its own while the lease runs
    assert (report.examined, report.published, report.rescheduled) == (1, 0, [])
    orch.clock.advance(seconds=orch.settings.poll_lease_s + 1)
    done = handle_poll_message(PollMessage(job_id, 1).to_text(), orch.deps)  # the queue redelivers
    assert done.action == Action.SUCCEEDED
    events = orch.events_of(job_id)
    # At least once, de-duplicated by (jobId, sequence): every sequence from 1 on, in order, none missing.
    unique = {e["sequence"]: (e["eventType"], e["status"]) for e in events}
    assert sorted(unique) == list(range(1, len(unique) + 1))
    assert [e["sequence"] for e in events] == sorted(e["sequence"] for e in events)
    assert [unique[s][1] for s in sorted(unique)][-2:] == ["Succeeded", "Succeeded"]
    assert orch.deps.store.pending_events(job_id) == []
    assert orch.deps.store.active_index() == []
