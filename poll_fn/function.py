"""poll_fn: the poll-jobs queue trigger, the sweeper timer and cancellation; thin adapters over shared.orchestration.

``blueprint(deps)`` builds the blueprint around the composition root's ``deps`` (called for each invocation; a
``LazyDeps`` builds everything at the first): ``app.register_functions(poll_fn.function.blueprint(deps))`` in
function_app.py. Needs no settings at import or at registration. The queue names and the schedule are binding
expressions (``%POLL_QUEUE%``, ``%CANCEL_QUEUE%``, ``%SWEEPER_SCHEDULE%``) the host resolves from app settings, so the
triggers listen where the handlers enqueue. A binding expression has no default: each must be an app setting (Bicep,
local.settings.json, the devhost set them; "0 */5 * * * *" is the documented schedule).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import azure.functions as func
import orjson

if TYPE_CHECKING:
    from shared.orchestration.deps import Deps


def blueprint(deps: Callable[[], Deps]) -> func.Blueprint:
    bp = func.Blueprint()

    @bp.function_name("poll_job")
    @bp.queue_trigger(arg_name="msg", queue_name="%POLL_QUEUE%", connection="DataStorage")
    def poll_job(msg: func.QueueMessage) -> None:
        from shared.orchestration.poll import handle_poll_message

        result = handle_poll_message(msg.get_body(), deps())
        logging.info("poll %s attempt %s: %s (%s)", result.job_id, result.attempt, result.action, result.state)

    @bp.function_name("sweep_jobs")
    @bp.timer_trigger(arg_name="timer", schedule="%SWEEPER_SCHEDULE%", run_on_startup=False, use_monitor=True)
    def sweep_jobs(timer: func.TimerRequest) -> None:
        from shared.orchestration.sweeper import sweep

        report = sweep(deps())
        logging.info(
            "sweep: %d examined, %d published, rescheduled %s, failed %s, resumed %s, errors %s",
            report.examined,
            report.published,
            report.rescheduled,
            report.failed,
            report.resumed,
            report.errors,
        )

    @bp.function_name("cancel_job_http")
    @bp.route(route="jobs/{jobId}/cancel", methods=[func.HttpMethod.POST], auth_level=func.AuthLevel.FUNCTION)
    def cancel_job_http(req: func.HttpRequest) -> func.HttpResponse:
        from shared.orchestration.cancel import cancel_job

        job_id = (req.route_params.get("jobId") or "").strip()
        reason: str | None = None
        if req.get_body():
            try:
                doc = orjson.loads(req.get_body())
            except orjson.JSONDecodeError:
                return _json({"error": 'the body must be JSON: {"reason": "..."}'}, 400)
            if isinstance(doc, dict) and isinstance(doc.get("reason"), str):
                reason = doc["reason"]
        if not job_id or len(job_id) > 200:
            return _json({"error": "no job id"}, 400)
        result = cancel_job(job_id, deps(), reason)
        if not result.found:
            return _json({"jobId": job_id, "error": "no such job"}, 404)
        body = {"jobId": job_id, "status": result.state, "changed": result.changed}
        if not result.changed and result.state != "Canceled":
            return _json({**body, "error": f"the job already finished as {result.state}"}, 409)
        return _json(body, 200)

    @bp.function_name("cancel_job_queue")
    @bp.queue_trigger(arg_name="msg", queue_name="%CANCEL_QUEUE%", connection="DataStorage")
    def cancel_job_queue(msg: func.QueueMessage) -> None:
        from shared.orchestration.cancel import CancelMessageError, cancel_job, parse_cancel_message

        try:
            job_id, reason = parse_cancel_message(msg.get_body())
        except CancelMessageError as exc:
            logging.warning("dropping a malformed cancel message: %s", exc)
            return
        result = cancel_job(job_id, deps(), reason)
        logging.info("cancel %s: found=%s changed=%s state=%s", job_id, result.found, result.changed, result.state)

    return bp


def _json(body: dict[str, object], status: int) -> func.HttpResponse:
    return func.HttpResponse(orjson.dumps(body), status_code=status, mimetype="application/json")
