"""Extraction orchestration: accepted-file events -> jobs -> submission -> polling -> results -> status events.

The domain behind ``submit_fn`` and ``poll_fn``; nothing here imports ``azure.functions``. See docs/orchestration.md.

Entry points (each safe to run twice on the same input):

- ``submit.handle_accepted_events(bodies, deps)``: a batch of accepted-file events (Event Hub bodies).
- ``poll.handle_poll_message(body, deps)``: one message of the ``poll-jobs`` queue.
- ``sweeper.sweep(deps)``: the timer: lost poll messages, deadlines, unpublished status events.
- ``cancel.cancel_job(job_id, deps)``: an operator cancels a job.
- ``runtime.build_deps(settings)`` / ``runtime.get_deps()``: the storage, HTTP and publishing parts they run on.
"""
