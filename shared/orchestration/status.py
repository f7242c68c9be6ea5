"""Job status events: the schema, the Event Hubs and local-queue publishers.

One JSON object per event (UTF-8, ``content_type`` application/json)::

    {
      "schemaVersion": 1,
      "eventType": "JobStatusChanged",        # or "ExtractedResult" (after a result was stored/ingested)
      "jobId": "1f3c...", "fileId": "file-9", "clientApplicationId": "app-123",
      "status": "Processing",                 # Queued | Started | Processing | Succeeded | Failed | Canceled
      "extractorType": "DOCSAI",              # null before the extractor is known
      "runId": "123",                         # the extractor's run id once submitted, else null
      "attempt": 2,                           # the poll attempt (Processing/Succeeded/Failed after polling), else null
      "reason": null,                         # why (Failed, Canceled, a Processing poll error); never a secret
      "resultLocation": null,                 # ExtractedResult: the result blob URL (DOCSAI, LOOM)
      "resultUrls": [],                       # ExtractedResult: DBRICKS tasks[].result_url values
      "time": "2025-01-31T12:00:00.000Z",     # when the state change happened (UTC)
      "sequence": 3                           # per job, 1, 2, 3, ...: order and de-duplicate by (jobId, sequence)
    }

Events are at-least-once (the outbox re-publishes after a failure): consumers drop a (jobId, sequence) they have
seen. All events of a job go to one Event Hubs partition (partition key = job id), in sequence order.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Final, Protocol

import orjson
from azure.eventhub import EventData, EventDataBatch

from shared.orchestration.settings import OrchestrationSettings
from shared.orchestration.storage_protocols import MessageQueue

log = logging.getLogger(__name__)

SCHEMA_VERSION: Final = 1


class JobStatus(enum.StrEnum):
    QUEUED = "Queued"
    STARTED = "Started"
    PROCESSING = "Processing"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    CANCELED = "Canceled"


class EventType(enum.StrEnum):
    STATUS = "JobStatusChanged"
    RESULT = "ExtractedResult"


@dataclass(frozen=True, slots=True)
class StatusEvent:
    job_id: str
    file_id: str
    client_application_id: str
    status: JobStatus
    sequence: int
    time: str
    event_type: EventType = EventType.STATUS
    extractor_type: str | None = None
    run_id: str | None = None
    attempt: int | None = None
    reason: str | None = None
    result_location: str | None = None
    result_urls: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        return {
            "schemaVersion": SCHEMA_VERSION,
            "eventType": str(self.event_type),
            "jobId": d["job_id"],
            "fileId": d["file_id"],
            "clientApplicationId": d["client_application_id"],
            "status": str(self.status),
            "extractorType": d["extractor_type"],
            "runId": d["run_id"],
            "attempt": d["attempt"],
            "reason": d["reason"],
            "resultLocation": d["result_location"],
            "resultUrls": list(self.result_urls),
            "time": d["time"],
            "sequence": d["sequence"],
        }

    def to_json(self) -> bytes:
        return orjson.dumps(self.to_dict())

    @classmethod
    def from_json(cls, data: bytes | str) -> StatusEvent:
        d = orjson.loads(data)
        return cls(
            job_id=d["jobId"],
            file_id=d["fileId"],
            client_application_id=d["clientApplicationId"],
            status=JobStatus(d["status"]),
            sequence=int(d["sequence"]),
            time=d["time"],
            event_type=EventType(d["eventType"]),
            extractor_type=d.get("extractorType"),
            run_id=d.get("runId"),
            attempt=d.get("attempt"),
            reason=d.get("reason"),
            result_location=d.get("resultLocation"),
            result_urls=tuple(d.get("resultUrls") or ()),
        )


def to_event_data(event: StatusEvent) -> EventData:
    """The Event Hubs message of one status event: JSON body, routing properties, message id jobId:sequence."""
    data = EventData(event.to_json())
    data.content_type = "application/json"
    data.message_id = f"{event.job_id}:{event.sequence}"
    data.properties = {
        "eventType": str(event.event_type),
        "status": str(event.status),
        "jobId": event.job_id,
        "sequence": event.sequence,
    }
    return data


class StatusPublisher(Protocol):
    def publish(self, job_id: str, events: Sequence[StatusEvent]) -> None:
        """Publish one job's events in order, or raise."""


class ProducerLike(Protocol):
    """The part of ``azure.eventhub.EventHubProducerClient`` the publisher uses."""

    def create_batch(self, *, partition_key: str | None = None) -> EventDataBatch: ...

    def send_batch(self, event_data_batch: EventDataBatch) -> None: ...


class EventHubStatusPublisher:
    """Publishes through ``EventHubProducerClient``: batches by ``create_batch(partition_key=job id)``."""

    def __init__(self, producer: ProducerLike) -> None:
        self.producer = producer

    def batches(self, job_id: str, events: Sequence[StatusEvent]) -> list[EventDataBatch]:
        out: list[EventDataBatch] = []
        batch = self.producer.create_batch(partition_key=job_id)
        for event in events:
            if event.job_id != job_id:
                raise ValueError(f"event of job {event.job_id} in a batch for job {job_id}")
            data = to_event_data(event)
            try:
                batch.add(data)
            except ValueError:  # the batch is full: start a new one
                if len(batch) == 0:
                    raise
                out.append(batch)
                batch = self.producer.create_batch(partition_key=job_id)
                batch.add(data)
        if len(batch):
            out.append(batch)
        return out

    def publish(self, job_id: str, events: Sequence[StatusEvent]) -> None:
        for batch in self.batches(job_id, events):
            self.producer.send_batch(batch)

    @classmethod
    def from_settings(cls, settings: OrchestrationSettings) -> EventHubStatusPublisher:
        from azure.eventhub import EventHubProducerClient

        if settings.job_status_connection_string:
            producer = EventHubProducerClient.from_connection_string(
                settings.job_status_connection_string, eventhub_name=settings.job_status_hub
            )
        else:
            from shared.orchestration.storage import credential

            assert settings.job_status_namespace
            producer = EventHubProducerClient(
                fully_qualified_namespace=settings.job_status_namespace,
                eventhub_name=settings.job_status_hub,
                credential=credential(settings),
            )
        return cls(producer)


class QueueStatusPublisher:
    """Local stand-in for the job-status Event Hub: the same JSON, one Storage queue message per event, in order."""

    def __init__(self, queue_client: MessageQueue) -> None:
        self.queue = queue_client

    def publish(self, job_id: str, events: Sequence[StatusEvent]) -> None:
        for event in events:
            self.queue.send_message(event.to_json().decode(), time_to_live=-1)


def build_publisher(settings: OrchestrationSettings) -> StatusPublisher:
    """Event Hubs when a job-status connection is configured, else the local queue ``job-status-local``."""
    if settings.uses_event_hub:
        return EventHubStatusPublisher.from_settings(settings)
    from shared.orchestration.storage import queue_service

    return QueueStatusPublisher(queue_service(settings).get_queue_client(settings.status_local_queue))
