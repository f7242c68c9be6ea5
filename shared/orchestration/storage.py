"""Storage clients from settings, blob URL parsing and signed (SAS) read URLs.

Two ways in: a connection string with an account key (Azurite, or a keyed account), or identity-based service URIs
with ``DefaultAzureCredential`` (the managed identity in Azure). A signed read URL is an account-key SAS in the first
case and a user delegation SAS (``get_user_delegation_key``, needs "Storage Blob Delegator" or data-reader rights on
the account) in the second. Both are read-only (``r``), for one blob, and expire after ``FILE_SAS_TTL_MINUTES``.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from azure.data.tables import TableServiceClient
from azure.storage.blob import (
    BlobSasPermissions,
    BlobServiceClient,
    UserDelegationKey,
    generate_blob_sas,
)
from azure.storage.queue import QueueServiceClient

from shared.orchestration.settings import OrchestrationSettings


def credential(settings: OrchestrationSettings) -> Any:
    """One ``DefaultAzureCredential`` per settings object (it caches tokens)."""

    def make() -> Any:
        from azure.identity import DefaultAzureCredential

        return DefaultAzureCredential()

    return settings.cached("credential", make)


def blob_service(settings: OrchestrationSettings) -> BlobServiceClient:
    def make() -> BlobServiceClient:
        if settings.storage_connection_string:
            return BlobServiceClient.from_connection_string(settings.storage_connection_string)
        assert settings.blob_service_url
        return BlobServiceClient(settings.blob_service_url, credential=credential(settings))

    client: BlobServiceClient = settings.cached("blob_service", make)
    return client


def queue_service(settings: OrchestrationSettings) -> QueueServiceClient:
    def make() -> QueueServiceClient:
        if settings.storage_connection_string:
            return QueueServiceClient.from_connection_string(settings.storage_connection_string)
        assert settings.queue_service_url
        return QueueServiceClient(settings.queue_service_url, credential=credential(settings))

    client: QueueServiceClient = settings.cached("queue_service", make)
    return client


def table_service(settings: OrchestrationSettings) -> TableServiceClient:
    def make() -> TableServiceClient:
        if settings.storage_connection_string:
            return TableServiceClient.from_connection_string(settings.storage_connection_string)
        assert settings.table_service_url
        return TableServiceClient(settings.table_service_url, credential=credential(settings))

    client: TableServiceClient = settings.cached("table_service", make)
    return client


@dataclass(frozen=True, slots=True)
class BlobRef:
    account: str
    container: str
    blob: str


def parse_blob_url(url: str) -> BlobRef:
    """``https://acct.blob.core.windows.net/c/a/b.pdf`` or Azurite's ``http://127.0.0.1:10000/acct/c/a/b.pdf``."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not a blob URL: {url!r}")
    segments = [unquote(s) for s in parts.path.split("/") if s]
    host = parts.hostname.lower()
    if ".blob." in host:
        account = host.split(".", 1)[0]
    else:  # path-style (Azurite, or a custom endpoint): the first segment is the account
        if not segments:
            raise ValueError(f"not a blob URL: {url!r}")
        account, segments = segments[0], segments[1:]
    if len(segments) < 2:
        raise ValueError(f"blob URL names no container and blob: {url!r}")
    if any(s in (".", "..") for s in segments):
        raise ValueError(f"blob URL has a dot segment: {url!r}")
    return BlobRef(account, segments[0], "/".join(segments[1:]))


_ENCODED_TRICKS = ("%2f", "%5c", "%00", "\\")  # a separator hidden from parse_blob_url (Azure reads \ as /)


def accepted_file_ref(settings: OrchestrationSettings, url: str, client_application_id: str) -> BlobRef:
    """The blob an event's ``fileLocationUrl`` names, if it is one that event may have read on its behalf.

    Only a blob of the configured account, in the accepted-files container (``ACCEPTED_FILES_CONTAINER``), under the
    event's own client application's prefix (``<clientApplicationId>/...``), named without dot segments or encoded
    separators. Raises ``ValueError`` with the reason (it goes on the Failed job): no SAS is minted and no byte read
    for anything else, so an event cannot have another application's file, or a result, handed to it.
    """
    path = urlsplit(url.strip()).path
    if any(trick in path.lower() for trick in _ENCODED_TRICKS) or "//" in path:
        raise ValueError(
            "the fileLocationUrl's path holds an encoded separator, a backslash or an empty segment; refused"
        )
    ref = parse_blob_url(url)
    client = blob_service(settings)
    if client.account_name and ref.account.lower() != client.account_name.lower():
        raise ValueError("the fileLocationUrl names a blob outside the configured storage account; refused")
    if ref.container != settings.accepted_container:
        raise ValueError(
            f"the fileLocationUrl names container {ref.container[:64]!r}, not the accepted-files container "
            f"{settings.accepted_container!r} (ACCEPTED_FILES_CONTAINER); refused"
        )
    app = client_application_id
    if not app or "/" in app or app in (".", "..") or not ref.blob.startswith(app + "/"):
        raise ValueError(
            "the fileLocationUrl names a blob outside the event's own client application's prefix "
            f"({app[:64]}/...); refused"
        )
    return ref


def blob_url(settings: OrchestrationSettings, container: str, blob: str) -> str:
    client = blob_service(settings)
    return f"{client.url.rstrip('/')}/{quote(container)}/{quote(blob)}"


class _DelegationKeyCache:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.key: UserDelegationKey | None = None
        self.expires: datetime | None = None


def signed_read_url(
    settings: OrchestrationSettings, ref: BlobRef, *, now: datetime | None = None, ttl: timedelta | None = None
) -> str:
    """A read-only, time-limited SAS URL for one blob of the configured account."""
    now = now or datetime.now(UTC)
    ttl = ttl or timedelta(minutes=settings.file_sas_ttl_minutes)
    client = blob_service(settings)
    if client.account_name and ref.account.lower() != client.account_name.lower():
        raise ValueError(f"the file is in storage account {ref.account!r}, not the configured {client.account_name!r}")
    start = now - timedelta(minutes=5)  # clock skew between us and the storage service
    expiry = now + ttl
    account_key = getattr(client.credential, "account_key", None)
    if account_key:
        token = generate_blob_sas(
            account_name=client.account_name or ref.account,
            container_name=ref.container,
            blob_name=ref.blob,
            account_key=account_key,
            permission=BlobSasPermissions(read=True),
            start=start,
            expiry=expiry,
            protocol=None if client.url.startswith("http://") else "https",
        )
    else:
        key = _user_delegation_key(settings, client, now, expiry)
        token = user_delegation_sas(client.account_name or ref.account, ref, key, start, expiry)
    return f"{client.url.rstrip('/')}/{quote(ref.container)}/{quote(ref.blob)}?{token}"


def user_delegation_sas(account: str, ref: BlobRef, key: UserDelegationKey, start: datetime, expiry: datetime) -> str:
    return generate_blob_sas(
        account_name=account,
        container_name=ref.container,
        blob_name=ref.blob,
        user_delegation_key=key,
        permission=BlobSasPermissions(read=True),
        start=start,
        expiry=expiry,
        protocol="https",
    )


def _user_delegation_key(
    settings: OrchestrationSettings, client: BlobServiceClient, now: datetime, needed_until: datetime
) -> UserDelegationKey:
    cache: _DelegationKeyCache = settings.cached("delegation_key", _DelegationKeyCache)
    with cache.lock:
        if cache.key is None or cache.expires is None or cache.expires < needed_until:
            key_expiry = max(needed_until, now + timedelta(hours=6))
            cache.key = client.get_user_delegation_key(now - timedelta(minutes=5), key_expiry)
            cache.expires = key_expiry
        return cache.key


class BlobTooLarge(ValueError):
    pass


def read_blob_url(settings: OrchestrationSettings, url: str, *, max_bytes: int) -> bytes:
    """Read a blob of the configured account named by its URL (e.g. a job's ``file_location_url``), size-capped.

    For extractor handlers that send the file's bytes themselves (LOOM). Raises ``ValueError`` for a URL that is
    not a blob of the configured account, ``BlobTooLarge`` over ``max_bytes``, Azure errors as they come.
    """
    ref = parse_blob_url(url)
    client = blob_service(settings)
    if client.account_name and ref.account.lower() != client.account_name.lower():
        raise ValueError(f"the blob is in storage account {ref.account!r}, not the configured {client.account_name!r}")
    blob = client.get_blob_client(ref.container, ref.blob)
    size = blob.get_blob_properties().size
    if size > max_bytes:
        raise BlobTooLarge(f"the blob is {size} bytes, over the {max_bytes} byte limit")
    return blob.download_blob().readall()
