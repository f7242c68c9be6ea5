"""The parts of the Azure Storage clients the domain uses, as protocols.

The domain (``JobStore``, the poll scheduling, the local status publisher) depends on these; the Azure SDK's
``azure.data.tables.TableClient`` and ``azure.storage.queue.QueueClient`` implement them as they are (the composition
root hands the real clients in; the tests run them against Azurite). Errors are the SDK's own
(``azure.core.exceptions``, ``azure.data.tables.TableTransactionError``): the domain reads their status codes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol


class MessageQueue(Protocol):
    """A Storage queue the domain sends to (``QueueClient.send_message``)."""

    def send_message(
        self, content: Any, *, visibility_timeout: int | None = None, time_to_live: int | None = None
    ) -> Any: ...


class EntityTable(Protocol):
    """A Storage table the job store reads and writes (the ``TableClient`` calls it makes)."""

    def create_table(self) -> Any: ...

    def get_entity(self, partition_key: str, row_key: str) -> Any: ...

    def query_entities(self, query_filter: str, *, parameters: dict[str, Any] | None = None) -> Iterable[Any]: ...

    def upsert_entity(self, entity: Mapping[str, Any], mode: Any = ...) -> Any: ...

    def update_entity(self, entity: Mapping[str, Any], mode: Any = ...) -> Any: ...

    def delete_entity(self, partition_key: str, row_key: str) -> None: ...

    def submit_transaction(self, operations: Iterable[Any]) -> list[Mapping[str, Any]]: ...
