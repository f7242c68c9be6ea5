"""The Storage queue trigger's settings, read from host.json (the one source of truth the Functions host reads too).

``batchSize`` messages are fetched at once and handled concurrently; when the number still being handled drops to
``newBatchThreshold``, the next batch is fetched, so at most ``batchSize + newBatchThreshold`` run at once. A message
handled ``maxDequeueCount`` times without success moves to the poison queue. The defaults are the Functions host's
(``newBatchThreshold``: half the batch size, as on the Consumption plan).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

HOST_JSON = Path(__file__).resolve().parent.parent / "host.json"


@dataclass(frozen=True)
class QueueTrigger:
    batch_size: int = 16
    new_batch_threshold: int = 8
    max_dequeue_count: int = 5

    @property
    def max_concurrent(self) -> int:
        return self.batch_size + self.new_batch_threshold

    @classmethod
    def from_host_json(cls, path: Path = HOST_JSON) -> QueueTrigger:
        queues: dict[str, Any] = orjson.loads(path.read_bytes()).get("extensions", {}).get("queues", {})
        batch = int(queues.get("batchSize", cls.batch_size))
        if not 1 <= batch <= 32:  # the Storage queue API's limit per receive, and the Functions host's
            raise ValueError(f"{path.name}: extensions.queues.batchSize must be 1..32, got {batch}")
        threshold = int(queues.get("newBatchThreshold", batch // 2))
        if threshold < 0:
            raise ValueError(f"{path.name}: extensions.queues.newBatchThreshold must be 0 or more, got {threshold}")
        dequeue = int(queues.get("maxDequeueCount", cls.max_dequeue_count))
        return cls(batch_size=batch, new_batch_threshold=threshold, max_dequeue_count=dequeue)
