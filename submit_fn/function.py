"""submit_fn: the accepted-files Event Hub trigger, a thin adapter over ``shared.orchestration.submit``.

``blueprint(deps)`` builds the blueprint around the composition root's ``deps`` (called for each invocation; a
``LazyDeps`` builds everything at the first): ``app.register_functions(submit_fn.function.blueprint(deps))`` in
function_app.py. Needs no settings at import or at registration.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

import azure.functions as func

if TYPE_CHECKING:
    from shared.orchestration.deps import Deps

# The host retries a failed batch (every step is idempotent: deterministic job ids, create-if-absent, ETag guards);
# on the last try, events that still hit an infrastructure error are parked in the poison container.
RETRY_MAX = 5


def blueprint(deps: Callable[[], Deps]) -> func.Blueprint:
    bp = func.Blueprint()

    @bp.function_name("submit_accepted_files")
    @bp.retry(
        strategy="exponential_backoff",
        max_retry_count=str(RETRY_MAX),
        minimum_interval="00:00:05",
        maximum_interval="00:05:00",
    )
    @bp.event_hub_message_trigger(
        arg_name="events",
        event_hub_name="%ACCEPTED_FILES_HUB%",
        connection="EventHubConnection",
        consumer_group="%ACCEPTED_FILES_CONSUMER_GROUP%",
        cardinality=func.Cardinality.MANY,
    )
    def submit_accepted_files(events: list[func.EventHubEvent], context: func.Context) -> None:
        from shared.orchestration.submit import run_accepted_batch

        retry = getattr(context, "retry_context", None)
        retry_count = retry.retry_count if retry is not None else RETRY_MAX
        max_retry = retry.max_retry_count if retry is not None else RETRY_MAX
        result = run_accepted_batch(
            [e.get_body() for e in events], deps(), retry_count=retry_count, max_retry_count=max_retry
        )
        counts: dict[str, int] = {}
        for outcome in result.outcomes:
            counts[outcome.outcome] = counts.get(outcome.outcome, 0) + 1
        logging.info("accepted-file batch of %d: %s", len(events), counts)

    return bp
