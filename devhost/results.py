"""Where a job's stored result is, and its bytes, for ``devhost status`` and ``devhost result``.

A job's ``result_location`` is the blob URL the orchestration stored its result at (DOCSAI and LOOM:
``<results container>/<clientApplicationId>/<fileId>/<jobId>/result.json``). Only a blob of the configured account's
results container is ever read: the location comes from the jobs table, and this is a tool a person points at
storage, so it reads nothing the orchestration did not write there.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import IO

from shared.orchestration.jobs import Job, JobState
from shared.orchestration.settings import OrchestrationSettings
from shared.orchestration.storage import blob_service, parse_blob_url


class NoResult(Exception):
    """The job has no stored result to open (the message says why)."""


@dataclass(frozen=True, slots=True)
class ResultPlace:
    account: str
    container: str
    blob: str
    url: str

    def as_json(self) -> dict[str, str]:
        return {"account": self.account, "container": self.container, "blob": self.blob, "url": self.url}


def result_place(job: Job) -> ResultPlace | None:
    """The blob the job's result is stored in, or None when it has none (not Succeeded, or a DBRICKS job, whose
    results are the blobs its extractor wrote, listed in ``result_urls``)."""
    if not job.result_location:
        return None
    ref = parse_blob_url(job.result_location)
    return ResultPlace(ref.account, ref.container, ref.blob, job.result_location)


def _checked_place(job: Job, settings: OrchestrationSettings) -> ResultPlace:
    place = result_place(job)
    if place is None:
        if job.state != JobState.SUCCEEDED:
            raise NoResult(f"job {job.job_id} is {job.state}: it has no stored result")
        if job.result_urls:
            listed = "\n  ".join(job.result_urls)
            raise NoResult(f"job {job.job_id} stored no result.json; its extractor's result blobs are:\n  {listed}")
        raise NoResult(f"job {job.job_id} succeeded without a stored result")
    account = blob_service(settings).account_name
    if place.container != settings.results_container or (account and place.account.lower() != account.lower()):
        raise NoResult(
            f"job {job.job_id}'s result location is not in this account's results container "
            f"({settings.results_container!r}): {place.url}"
        )
    return place


def write_result(job: Job, settings: OrchestrationSettings, out: IO[bytes]) -> int:
    """Stream the job's stored result into ``out``; returns its size. ``NoResult`` when there is none to read."""
    from azure.core.exceptions import ResourceNotFoundError

    place = _checked_place(job, settings)
    blob = blob_service(settings).get_blob_client(place.container, place.blob)
    try:
        return int(blob.download_blob().readinto(out))
    except ResourceNotFoundError:
        raise NoResult(f"job {job.job_id}'s result blob is gone: {place.url}") from None
