"""submit_fn and poll_fn blueprints: bindings metadata, and the handlers called as Functions calls them."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import azure.functions as func
import orjson
import pytest
from azure.functions._abc import RetryContext, TraceContext
from azure.functions.timer import TimerRequest

import poll_fn.function as poll_fn
import submit_fn.function as submit_fn
from shared.orchestration.deps import Deps
from shared.orchestration.jobs import JobState
from shared.orchestration.submit import RetryableBatchError, parked_events
from tests.orchestration.conftest import Orch, Reply


def _unbuilt() -> Deps:
    raise AssertionError("registering a blueprint builds nothing")


def _functions(bp: func.Blueprint) -> dict[str, Any]:
    app = func.FunctionApp(http_auth_level=func.AuthLevel.FUNCTION)
    app.register_functions(bp)
    return {f.get_function_name(): f for f in app.get_functions()}


def _trigger(f: Any) -> dict[str, Any]:
    return f.get_trigger().get_dict_repr()


def test_submit_fn_bindings() -> None:
    functions = _functions(submit_fn.blueprint(_unbuilt))
    assert list(functions) == ["submit_accepted_files"]
    f = functions["submit_accepted_files"]
    assert [b.get_dict_repr()["type"] for b in f.get_bindings()] == ["eventHubTrigger"]
    assert _trigger(f) == {
        "direction": func.decorators.core.BindingDirection.IN,
        "type": "eventHubTrigger",
        "name": "events",
        "connection": "EventHubConnection",
        "eventHubName": "%ACCEPTED_FILES_HUB%",
        "cardinality": func.Cardinality.MANY,
        "consumerGroup": "%ACCEPTED_FILES_CONSUMER_GROUP%",
    }
    retry = f.get_settings_dict("retry_policy")
    assert retry is not None
    assert retry["strategy"] == "exponential_backoff"
    assert retry["max_retry_count"] == "5"


def test_poll_fn_bindings() -> None:
    functions = _functions(poll_fn.blueprint(_unbuilt))
    assert sorted(functions) == ["cancel_job_http", "cancel_job_queue", "poll_job", "sweep_jobs"]
    poll = _trigger(functions["poll_job"])
    assert (poll["type"], poll["name"], poll["queueName"], poll["connection"]) == (
        "queueTrigger",
        "msg",
        "%POLL_QUEUE%",
        "DataStorage",
    )
    timer = _trigger(functions["sweep_jobs"])
    assert (timer["type"], timer["name"], timer["schedule"]) == ("timerTrigger", "timer", "%SWEEPER_SCHEDULE%")
    http = functions["cancel_job_http"]
    trigger = _trigger(http)
    assert (trigger["type"], trigger["route"], trigger["authLevel"]) == (
        "httpTrigger",
        "jobs/{jobId}/cancel",
        func.AuthLevel.FUNCTION,
    )
    assert [str(m) for m in trigger["methods"]] == ["POST"] or trigger["methods"] == [func.HttpMethod.POST]
    assert [b.get_dict_repr()["type"] for b in http.get_bindings()] == ["httpTrigger", "http"]
    cancel = _trigger(functions["cancel_job_queue"])
    assert (cancel["type"], cancel["queueName"], cancel["connection"]) == (
        "queueTrigger",
        "%CANCEL_QUEUE%",
        "DataStorage",
    )


# ---------------------------------------------------------------------------------------------------------------
# Handlers, called with the objects the Functions host passes


class _Retry(RetryContext):
    def __init__(self, count: int, maximum: int) -> None:
        self._count, self._max = count, maximum

    @property
    def retry_count(self) -> int:
        return self._count

    @property
    def max_retry_count(self) -> int:
        return self._max

    @property
    def exception(self) -> Any:
        return None


class _Trace(TraceContext):
    trace_state = ""
    trace_parent = ""
    attributes: dict[str, str] = {}  # noqa: RUF012


class _Context(func.Context):
    def __init__(self, retry: RetryContext | None) -> None:
        self._retry = retry

    invocation_id = "test-invocation"
    thread_local_storage = threading.local  # type: ignore[assignment]
    function_name = "submit_accepted_files"
    function_directory = "."
    trace_context = _Trace()  # type: ignore[assignment]

    @property
    def retry_context(self) -> RetryContext:
        return self._retry  # type: ignore[return-value]


@pytest.fixture
def wired(orch: Orch) -> Orch:
    return orch


def _user_function(orch: Orch, make: Callable[[Callable[[], Deps]], func.Blueprint], name: str) -> Any:
    """The function ``name`` of a blueprint built around the test's Deps (as function_app.py hands it LazyDeps)."""
    return _functions(make(lambda: orch.deps))[name].get_user_function()


def test_event_hub_handler_end_to_end(wired: Orch) -> None:
    orch = wired
    orch.register("app-1", orch.docsai_config())
    orch.docsai.default_poll = [Reply(200, {"Status": "complete", "Payload": {"ok": 1}})]
    events = [
        func.EventHubEvent(body=orjson.dumps(orch.event("app-1")), partition_key=None, sequence_number=1),
        func.EventHubEvent(body=b"not an event", sequence_number=2),
    ]
    _user_function(orch, submit_fn.blueprint, "submit_accepted_files")(events, _Context(_Retry(0, 5)))
    assert len(orch.docsai.posts()) == 1
    assert len(parked_events(orch)) == 1

    # The poll-jobs queue trigger with the message the submission enqueued.
    [message] = orch.poll_messages()
    poll = _user_function(orch, poll_fn.blueprint, "poll_job")
    poll(func.QueueMessage(id=message.id, body=message.content.encode(), pop_receipt=message.pop_receipt))
    job_id = orjson.loads(message.content)["jobId"]
    job = orch.deps.store.get(job_id)
    assert job is not None
    assert job.state == JobState.SUCCEEDED

    # The sweeper timer: nothing left to do.
    _user_function(orch, poll_fn.blueprint, "sweep_jobs")(TimerRequest(past_due=False))
    assert orch.deps.store.active_index() == []


def test_event_hub_handler_retries_then_parks_on_infrastructure_errors(wired: Orch) -> None:
    orch = wired
    orch.register("app-1", orch.docsai_config())
    orch.deps.store.table.delete_table()
    handler = _user_function(orch, submit_fn.blueprint, "submit_accepted_files")
    events = [func.EventHubEvent(body=orjson.dumps(orch.event("app-1")))]
    with pytest.raises(RetryableBatchError):
        handler(events, _Context(_Retry(1, 5)))
    assert parked_events(orch) == []
    handler(events, _Context(_Retry(5, 5)))  # the last try parks instead of raising
    assert len(parked_events(orch)) == 1


def test_cancel_http_and_queue_handlers(wired: Orch) -> None:
    orch = wired
    orch.register("app-1", orch.docsai_config())
    _user_function(orch, submit_fn.blueprint, "submit_accepted_files")(
        [func.EventHubEvent(body=orjson.dumps(orch.event("app-1")))], _Context(None)
    )
    [message] = orch.poll_messages()
    job_id = orjson.loads(message.content)["jobId"]
    http = _user_function(orch, poll_fn.blueprint, "cancel_job_http")

    def post(job: str, body: bytes = b"") -> func.HttpResponse:
        req = func.HttpRequest(
            method="POST", url=f"http://localhost/jobs/{job}/cancel", body=body, route_params={"jobId": job}
        )
        return http(req)

    resp = post(job_id, orjson.dumps({"reason": "operator says so"}))
    assert resp.status_code == 200
    assert orjson.loads(resp.get_body()) == {"jobId": job_id, "status": "Canceled", "changed": True}
    assert orch.events_of(job_id)[-1]["reason"] == "operator says so"
    assert post(job_id).status_code == 200  # canceling again is harmless
    assert post("missing-job").status_code == 404
    assert post(job_id, b"{bad").status_code == 400

    # A finished job cannot be canceled (409); the queue handler cancels by message.
    orch.register("app-2", orch.docsai_config())
    _user_function(orch, submit_fn.blueprint, "submit_accepted_files")(
        [func.EventHubEvent(body=orjson.dumps(orch.event("app-2")))], _Context(None)
    )
    [second] = orch.poll_messages()
    second_id = orjson.loads(second.content)["jobId"]
    queue_handler = _user_function(orch, poll_fn.blueprint, "cancel_job_queue")
    queue_handler(func.QueueMessage(body=orjson.dumps({"jobId": second_id, "reason": "dup"})))
    job = orch.deps.store.get(second_id)
    assert job is not None
    assert job.state == JobState.CANCELED
    queue_handler(func.QueueMessage(body=b"{not json"))  # dropped, logged
    from shared.orchestration.submit import fail_job

    orch.register("app-3", orch.docsai_config())
    _user_function(orch, submit_fn.blueprint, "submit_accepted_files")(
        [func.EventHubEvent(body=orjson.dumps(orch.event("app-3")))], _Context(None)
    )
    [third] = orch.poll_messages()
    third_id = orjson.loads(third.content)["jobId"]
    fail_job(third_id, "it failed", orch.deps)
    conflict = post(third_id)
    assert conflict.status_code == 409
    assert orjson.loads(conflict.get_body())["status"] == "Failed"
