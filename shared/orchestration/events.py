"""The accepted-file event: its schema, the CloudEvents 1.0 envelope, and the job id it determines.

An event body is either the JSON object itself or a CloudEvents 1.0 structured-mode envelope whose ``data`` holds
it (``data`` as an object, a JSON string, or ``data_base64``). Example (plain)::

    {
      "id": "4b7c1f0e-...",                       # optional event id (eventId also accepted)
      "clientApplicationId": "app-123",
      "fileId": "file-9",
      "documentHash": "sha256:9f86d0...",          # DocumentHash also accepted
      "fileLocationUrl": "https://acct.blob.core.windows.net/accepted/app-123/file-9/report.pdf",
      "filePath": "accepted/app-123/file-9/report.pdf",   # optional; default: container/blob of fileLocationUrl
      "fileName": "report.pdf", "contentType": "application/pdf", "sizeBytes": 48213,   # optional
      "registration": { ... }                      # optional inline registration payload
    }

The job id is ``uuid5(JOB_ID_NAMESPACE, "event:" + id)`` when the event has an id (the CloudEvents ``id`` of an
envelope), else ``uuid5(JOB_ID_NAMESPACE, clientApplicationId + "|" + fileId + "|" + documentHash)``: a redelivered
or duplicated event always maps to the same job.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import uuid
from typing import Any, Final

import orjson
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, StrictInt, StrictStr, ValidationError

JOB_ID_NAMESPACE: Final = uuid.UUID("5f0b7f3c-6f0e-4a57-9d43-2f6a0c1e8b11")
MAX_EVENT_BYTES: Final = 1024 * 1024  # Event Hubs' own limit for one event (premium/dedicated); standard is 256 KiB
CLOUDEVENTS_SPEC_VERSION: Final = "1.0"
_SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,199}")


class EventError(ValueError):
    """The body is not an accepted-file event; ``reason`` says why (it is parked with the body)."""

    def __init__(self, reason: str, event_id: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.event_id = event_id


class AcceptedFileEvent(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True, str_strip_whitespace=True)

    event_id: StrictStr | None = Field(default=None, validation_alias=AliasChoices("id", "eventId"), max_length=512)
    client_application_id: StrictStr = Field(
        min_length=1, max_length=256, validation_alias=AliasChoices("clientApplicationId", "ClientApplicationId")
    )
    file_id: StrictStr = Field(min_length=1, max_length=256, validation_alias=AliasChoices("fileId", "FileId"))
    document_hash: StrictStr | None = Field(
        default=None, max_length=512, validation_alias=AliasChoices("documentHash", "DocumentHash")
    )
    file_location_url: StrictStr = Field(
        min_length=1,
        max_length=4096,
        validation_alias=AliasChoices("fileLocationUrl", "FileLocationUrl"),
        pattern=r"^https?://",
    )
    file_path: StrictStr | None = Field(
        default=None, max_length=4096, validation_alias=AliasChoices("filePath", "FilePath")
    )
    file_name: StrictStr | None = Field(
        default=None, max_length=1024, validation_alias=AliasChoices("fileName", "FileName")
    )
    content_type: StrictStr | None = Field(
        default=None, max_length=256, validation_alias=AliasChoices("contentType", "ContentType")
    )
    size_bytes: StrictInt | None = Field(default=None, ge=0, validation_alias=AliasChoices("sizeBytes", "SizeBytes"))
    registration: dict[str, Any] | None = None

    def job_id(self) -> str:
        if self.event_id:
            return str(uuid.uuid5(JOB_ID_NAMESPACE, "event:" + self.event_id))
        key = f"{self.client_application_id}|{self.file_id}|{self.document_hash or ''}"
        return str(uuid.uuid5(JOB_ID_NAMESPACE, key))


def parse_accepted_event(body: bytes | str) -> AcceptedFileEvent:
    """Parse a plain or CloudEvents-enveloped accepted-file event; raise ``EventError`` with the reason."""
    raw = body.encode() if isinstance(body, str) else body
    if len(raw) > MAX_EVENT_BYTES:
        raise EventError(f"event body is {len(raw)} bytes, over the {MAX_EVENT_BYTES} byte limit")
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise EventError(f"event body is not JSON: {exc}") from None
    if not isinstance(doc, dict):
        raise EventError(f"event body is a JSON {type(doc).__name__}, not an object")
    envelope_id: str | None = None
    if "specversion" in doc:
        envelope_id = _str_or_none(doc.get("id"))
        doc = _cloudevent_data(doc)
        if envelope_id is not None:
            doc = {**doc, "id": envelope_id}
    try:
        return AcceptedFileEvent.model_validate(doc)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'event'}: {err['msg']}" for err in exc.errors()[:10]
        )
        raise EventError(f"invalid accepted-file event: {problems}", _str_or_none(doc.get("id"))) from None


def _cloudevent_data(envelope: dict[str, Any]) -> dict[str, Any]:
    event_id = _str_or_none(envelope.get("id"))
    if envelope.get("specversion") != CLOUDEVENTS_SPEC_VERSION:
        raise EventError(
            f"unsupported CloudEvents specversion {envelope.get('specversion')!r} (1.0 expected)", event_id
        )
    missing = [k for k in ("id", "source", "type") if not _str_or_none(envelope.get(k))]
    if missing:
        raise EventError(f"CloudEvents envelope lacks required attribute(s): {', '.join(missing)}", event_id)
    content_type = envelope.get("datacontenttype")
    if isinstance(content_type, str) and content_type.strip():
        media = content_type.split(";", 1)[0].strip().lower()
        if media != "application/json" and not media.endswith("+json"):
            raise EventError(f"CloudEvents datacontenttype {content_type!r} is not JSON", event_id)
    if "data_base64" in envelope:
        try:
            decoded = base64.b64decode(str(envelope["data_base64"]), validate=True)
            data: Any = orjson.loads(decoded)
        except (binascii.Error, orjson.JSONDecodeError) as exc:
            raise EventError(f"CloudEvents data_base64 is not base64-encoded JSON: {exc}", event_id) from None
    elif "data" in envelope:
        data = envelope["data"]
        if isinstance(data, str):
            try:
                data = orjson.loads(data)
            except orjson.JSONDecodeError as exc:
                raise EventError(f"CloudEvents data is a string that is not JSON: {exc}", event_id) from None
    else:
        raise EventError("CloudEvents envelope has no data", event_id)
    if not isinstance(data, dict):
        raise EventError("CloudEvents data is not a JSON object", event_id)
    return data


def _str_or_none(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def best_effort_event_id(body: bytes) -> str | None:
    """The id of a body that may not parse as an event (for naming its poison blob)."""
    try:
        doc = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(doc, dict):
        return None
    return _str_or_none(doc.get("id")) or _str_or_none(doc.get("eventId"))


def poison_blob_name(body: bytes, event_id: str | None = None) -> str:
    """``<event id>-<sha256 prefix>`` when the id is a safe blob name, else the body's full sha256."""
    digest = hashlib.sha256(body).hexdigest()
    eid = event_id or best_effort_event_id(body)
    if eid and _SAFE_NAME.fullmatch(eid):
        return f"{eid}-{digest[:16]}"
    return digest
