"""Extraction orchestration: accepted-file events -> jobs -> submission -> polling -> results -> status events.

The domain behind ``submit_fn`` and ``poll_fn``; nothing here imports ``azure.functions``. See docs/orchestration.md.

Entry points (each safe to run twice on the same input):

- ``submit.handle_accepted_events(bodies, deps)``: a batch of accepted-file events (Event Hub bodies).
- ``poll.handle_poll_message(body, deps)``: one message of the ``poll-jobs`` queue.
- ``sweeper.sweep(deps)``: the timer: lost poll messages, deadlines, unpublished status events.
- ``cancel.cancel_job(job_id, deps)``: an operator cancels a job.
- ``composition.build_deps(settings)`` / ``composition.LazyDeps``: the one composition root that builds the parts
  they run on (``deps.Deps``: storage, the outbound transport, publishing, one ``ExtractorClient`` per kind).
"""
