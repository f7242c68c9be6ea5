"""Status events and their publishers; result download rules; blob URLs and signed URLs."""

from __future__ import annotations

import re
import socket
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

import orjson
import pytest
from azure.eventhub import EventData, EventDataBatch, EventHubProducerClient
from azure.storage.blob import UserDelegationKey

from shared.orchestration.results import (
    ResultError,
    decode_data_url,
    download_result,
    result_url_to_blob,
)
from shared.orchestration.settings import OrchestrationSettings
from shared.orchestration.status import (
    EventHubStatusPublisher,
    EventType,
    JobStatus,
    QueueStatusPublisher,
    StatusEvent,
    build_publisher,
    to_event_data,
)
from shared.orchestration.storage import BlobRef, parse_blob_url, user_delegation_sas
from shared.outbound import host_allowed

STORAGE = {"DataStorage": "UseDevelopmentStorage=true"}


def _event(seq: int, job: str = "job-1", **kw: Any) -> StatusEvent:
    return StatusEvent(
        job_id=job,
        file_id="file-1",
        client_application_id="app-1",
        status=kw.pop("status", JobStatus.PROCESSING),
        sequence=seq,
        time="2025-01-31T12:00:00.000Z",
        extractor_type="DOCSAI",
        run_id="1001",
        **kw,
    )


# ---------------------------------------------------------------------------------------------------------------
# Status events


def test_status_event_schema() -> None:
    e = _event(6, status=JobStatus.SUCCEEDED, event_type=EventType.RESULT, attempt=3, result_location="https://r/x")
    assert e.to_dict() == {
        "schemaVersion": 1,
        "eventType": "ExtractedResult",
        "jobId": "job-1",
        "fileId": "file-1",
        "clientApplicationId": "app-1",
        "status": "Succeeded",
        "extractorType": "DOCSAI",
        "runId": "1001",
        "attempt": 3,
        "reason": None,
        "resultLocation": "https://r/x",
        "resultUrls": [],
        "time": "2025-01-31T12:00:00.000Z",
        "sequence": 6,
    }
    assert StatusEvent.from_json(e.to_json()) == e
    assert {s.value for s in JobStatus} == {"Queued", "Started", "Processing", "Succeeded", "Failed", "Canceled"}


def test_event_data_has_json_body_and_routing_properties() -> None:
    data = to_event_data(_event(2, status=JobStatus.STARTED))
    assert orjson.loads(data.body_as_str()) == _event(2, status=JobStatus.STARTED).to_dict()
    assert data.content_type == "application/json"
    assert data.message_id == "job-1:2"
    assert data.properties == {"eventType": "JobStatusChanged", "status": "Started", "jobId": "job-1", "sequence": 2}


class RecordingProducer:
    """The one seam faked: create_batch builds a real EventDataBatch offline; send_batch records instead of AMQP."""

    def __init__(self, max_size: int | None = None, fail: bool = False) -> None:
        self.max_size = max_size
        self.fail = fail
        self.sent: list[EventDataBatch] = []

    def create_batch(self, *, partition_key: str | None = None) -> EventDataBatch:
        return EventDataBatch(max_size_in_bytes=self.max_size, partition_key=partition_key)

    def send_batch(self, event_data_batch: EventDataBatch) -> None:
        if self.fail:
            raise ConnectionError("event hub unreachable")
        self.sent.append(event_data_batch)


def _batch_events(batch: EventDataBatch) -> list[EventData]:
    return list(batch._internal_events)


def test_event_hub_publisher_batches_by_job_partition_key() -> None:
    producer = RecordingProducer()
    EventHubStatusPublisher(producer).publish("job-1", [_event(1, status=JobStatus.QUEUED), _event(2)])
    [batch] = producer.sent
    assert batch._partition_key == "job-1"
    events = _batch_events(batch)
    assert [orjson.loads(e.body_as_str())["sequence"] for e in events] == [1, 2]
    assert [e.partition_key for e in events] == ["job-1", "job-1"]
    with pytest.raises(ValueError, match="event of job job-2 in a batch for job job-1"):
        EventHubStatusPublisher(producer).publish("job-1", [_event(3, job="job-2")])


def test_event_hub_publisher_splits_full_batches_in_order() -> None:
    producer = RecordingProducer(max_size=1200)
    EventHubStatusPublisher(producer).publish("job-1", [_event(i) for i in range(1, 8)])
    assert len(producer.sent) > 1
    sequences = [orjson.loads(e.body_as_str())["sequence"] for b in producer.sent for e in _batch_events(b)]
    assert sequences == list(range(1, 8))
    assert {b._partition_key for b in producer.sent} == {"job-1"}


def test_publisher_from_settings() -> None:
    conn = "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=send;SharedAccessKey=c2VjcmV0"
    with_conn = OrchestrationSettings.from_env({**STORAGE, "EventHubConnection": conn, "JOB_STATUS_HUB": "status"})
    pub = build_publisher(with_conn)
    assert isinstance(pub, EventHubStatusPublisher)
    assert isinstance(pub.producer, EventHubProducerClient)
    assert pub.producer.eventhub_name == "status"
    identity = OrchestrationSettings.from_env(
        {**STORAGE, "EventHubConnection__fullyQualifiedNamespace": "ns.servicebus.windows.net"}
    )
    pub2 = build_publisher(identity)
    assert isinstance(pub2, EventHubStatusPublisher)
    assert pub2.producer._address.hostname == "ns.servicebus.windows.net"
    assert pub2.producer.eventhub_name == "job-status"
    assert isinstance(build_publisher(OrchestrationSettings.from_env(STORAGE)), QueueStatusPublisher)


def test_local_queue_publisher_round_trip(azurite_connection_string: str, unique_name: str) -> None:
    from azure.storage.queue import QueueClient

    q = QueueClient.from_connection_string(azurite_connection_string, unique_name)
    q.create_queue()
    QueueStatusPublisher(q).publish("job-1", [_event(1, status=JobStatus.QUEUED), _event(2)])
    got = [orjson.loads(m.content) for m in q.receive_messages(max_messages=10)]
    assert [g["sequence"] for g in got] == [1, 2]
    assert got[0] == _event(1, status=JobStatus.QUEUED).to_dict()


# ---------------------------------------------------------------------------------------------------------------
# Result download rules


def _settings(**env: str) -> OrchestrationSettings:
    return OrchestrationSettings.from_env({**STORAGE, **env})


def test_host_allow_list() -> None:
    allowed = ("results.example.com", "*.cdn.example.net", "files.example.org:8443")
    assert host_allowed("results.example.com", 443, allowed)
    assert host_allowed("RESULTS.example.com.", 443, allowed)
    assert host_allowed("a.b.cdn.example.net", 443, allowed)
    assert not host_allowed("cdn.example.net", 443, allowed)
    assert not host_allowed("evil-cdn.example.net", 443, allowed)
    assert host_allowed("files.example.org", 8443, allowed)
    assert not host_allowed("files.example.org", 443, allowed)
    assert not host_allowed("results.example.com.evil.io", 443, allowed)
    assert not host_allowed("anything", 443, ())


@pytest.mark.parametrize(
    "address",
    ["10.1.2.3", "192.168.0.10", "169.254.169.254", "127.0.0.1", "::1", "::ffff:10.0.0.1", "fd00::1", "224.0.0.1"],
)
def test_non_public_addresses_are_refused(address: str) -> None:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET

    def resolver(host: str, port: int, **kw: Any) -> list[Any]:
        return [(family, socket.SOCK_STREAM, 6, "", (address, port))]

    s = _settings(RESULT_DOWNLOAD_ALLOWED_HOSTS="results.example.com")
    with pytest.raises(ResultError) as info:
        download_result("https://results.example.com/r.json", s, resolver=resolver)
    assert info.value.permanent
    pattern = r"result host results\.example\.com resolves to a [\w -]+ address; refused.*"
    assert re.fullmatch(pattern, info.value.reason)
    assert address not in info.value.reason  # the address it resolved to is not told


def test_download_refusals() -> None:
    s = _settings(RESULT_DOWNLOAD_ALLOWED_HOSTS="results.example.com")
    for url, reason in [
        ("ftp://results.example.com/x", "scheme 'ftp' is not http(s)"),
        ("http://results.example.com/x", "plain http; refused"),
        ("https://user:pw@results.example.com/x", "carries credentials"),
        ("https://other.example.com/x", "other.example.com:443 is not in RESULT_DOWNLOAD_ALLOWED_HOSTS"),
    ]:
        with pytest.raises(ResultError, match=re.escape(reason)):
            download_result(url, s)


def test_data_urls() -> None:
    assert decode_data_url("data:text/plain;charset=utf-8,a%20b", 100).data == b"a b"
    assert decode_data_url("data:application/json;base64,e30=", 100).content_type == "application/json"
    with pytest.raises(ResultError, match="no comma"):
        decode_data_url("data:abc", 100)
    with pytest.raises(ResultError, match="over 10 bytes"):
        decode_data_url("data:," + "x" * 11, 10)


def test_result_url_to_blob() -> None:
    s = _settings()
    prefix = "app/file/job/"
    assert result_url_to_blob("/results/app/file/job/out.json", s, prefix) == "app/file/job/out.json"
    assert result_url_to_blob("dbfs:/results/app/file/job/a/b.json", s, prefix) == "app/file/job/a/b.json"
    assert result_url_to_blob("abfss://results@acct.dfs.core.windows.net/app/file/job/x", s, prefix) == "app/file/job/x"
    url = "http://127.0.0.1:10000/devstoreaccount1/results/app/file/job/out%20put.json"
    assert result_url_to_blob(url, s, prefix) == "app/file/job/out put.json"
    for bad in (
        "/results/app/file/job/../other/x",
        "/uploads/app/file/job/x",
        "/results/app/file/other-job/x",
        "http://127.0.0.1:10000/otheraccount/results/app/file/job/x",
    ):
        with pytest.raises(ResultError):
            result_url_to_blob(bad, s, prefix)


# ---------------------------------------------------------------------------------------------------------------
# Blob URLs and signed URLs


def test_parse_blob_url() -> None:
    assert parse_blob_url("https://acct.blob.core.windows.net/c/a/b%20c.pdf") == BlobRef("acct", "c", "a/b c.pdf")
    assert parse_blob_url("http://127.0.0.1:10000/devstoreaccount1/c/x.pdf") == BlobRef(
        "devstoreaccount1", "c", "x.pdf"
    )
    for bad in ("ftp://x/y/z", "https://acct.blob.core.windows.net/only-container", "https://h/acct/c/../x"):
        with pytest.raises(ValueError):
            parse_blob_url(bad)


def test_user_delegation_sas_is_read_only_and_time_limited() -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    key = UserDelegationKey()
    key.signed_oid = "11111111-2222-3333-4444-555555555555"
    key.signed_tid = "66666666-7777-8888-9999-000000000000"
    key.signed_start = "2025-01-01T00:00:00Z"
    key.signed_expiry = "2025-01-02T00:00:00Z"
    key.signed_service = "b"
    key.signed_version = "2021-08-06"
    key.value = "c2VjcmV0LWtleS12YWx1ZQ=="
    token = user_delegation_sas("acct", BlobRef("acct", "c", "a.pdf"), key, now, now + timedelta(hours=1))
    q = {k: v[0] for k, v in parse_qs(token).items()}
    assert q["sp"] == "r"
    assert q["spr"] == "https"
    assert q["skoid"] == key.signed_oid
    assert q["sr"] == "b"
    assert q["se"] == "2025-01-01T01:00:00Z"
    assert "sig" in q
    assert urlsplit("https://x/?" + token).query == token


def test_read_blob_url_for_handlers_that_send_bytes(orch: Any) -> None:
    from shared.orchestration.storage import BlobTooLarge, read_blob_url

    url = orch.upload_source("loom-input.csv", b"a,b\n1,2\n")
    assert read_blob_url(orch.settings, url, max_bytes=100) == b"a,b\n1,2\n"
    with pytest.raises(BlobTooLarge):
        read_blob_url(orch.settings, url, max_bytes=3)
    with pytest.raises(ValueError, match="not the configured"):
        read_blob_url(orch.settings, "https://elsewhere.blob.core.windows.net/c/x", max_bytes=100)


def test_identity_based_clients_share_one_credential() -> None:
    from shared.orchestration.storage import blob_service, credential, queue_service, table_service

    s = OrchestrationSettings.from_env({"DataStorage__accountName": "acct"})
    assert blob_service(s).url == "https://acct.blob.core.windows.net/"
    assert queue_service(s).url == "https://acct.queue.core.windows.net/"
    assert table_service(s).url == "https://acct.table.core.windows.net"
    assert blob_service(s).credential is credential(s)
