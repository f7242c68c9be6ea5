"""Which waiting request gets the next free worker: callers share the workers by worker time, not by turns.

Round-robin by turns gives a caller whose requests each hold a worker for 0.2 s twenty times the worker time of a
caller whose requests take 0.01 s. Here (start-time fair queueing, with a request's cost known only as it runs):

- Each caller has a *charge*: the worker-seconds its requests used, counting the ones on a worker now by the time
  they have run so far (a request that holds a worker keeps raising its caller's charge while it runs).
- A free worker goes to the waiting caller with the lowest charge (ties: the one served least recently), within
  ``caller_workers`` running requests per caller. So while two callers both wait, each gets the same worker time:
  the one with 0.01 s requests gets about twenty starts for each 0.2 s request of the other.
- Work-conserving: the choice is only among callers that have a request waiting, so a lone caller gets every
  worker, and idleness is never refused a worker.
- Weighted by what a request costs the whole service, not only its worker: ``finished`` takes the service-side
  cost of the request next to its worker time (the pool charges the bytes it carried: the upload read from the
  socket and sent to the worker, the artifact read back and streamed to the client, at a measured CPU cost per
  byte), and ``bill`` charges a cost that used no worker at all (an answer from the crash memory, whose upload was
  read and hashed all the same). A caller looping valid files with megabyte artifacts is thus served by what they
  cost the machine: it waits its turn by that while others wait, and is never made to wait while nobody else does.
- No credit for being idle: a caller that starts waiting again (nothing of it queued or running) is lifted to the
  *virtual time*, the lowest charge among the callers with work in the pool (never going back), so a newcomer or a
  caller back from a pause shares from now on instead of taking the workers until it catches up. A caller that sends
  one request at a time keeps its charge between them (it is only lifted, never lowered), so its next request waits
  its turn by worker time like the others'.

The clock is injected (the pool's), so tests drive it. Not thread-safe: the pool calls it under its lock.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

T = TypeVar("T")


class _Caller(Generic[T]):
    __slots__ = ("charge", "running", "served", "started_sum", "waiting")

    def __init__(self, charge: float, served: int) -> None:
        self.charge = charge  # worker-seconds of its finished requests (plus the lift to the virtual time)
        self.running = 0
        self.started_sum = 0.0  # the sum of its running requests' start times: their elapsed time is derived
        self.served = served  # when it was last served (or started waiting): the tie-break
        self.waiting: deque[T] = deque()

    def active(self) -> bool:
        return bool(self.waiting) or self.running > 0

    def current(self, now: float) -> float:
        return self.charge + self.running * now - self.started_sum


class FairShare(Generic[T]):
    """Waiting items per caller; ``pop`` picks the next by worker time used, ``finished`` charges it."""

    def __init__(self, caller_workers: int, clock: Callable[[], float]) -> None:
        if caller_workers < 1:
            raise ValueError("a caller needs at least one worker")
        self.caller_workers = caller_workers
        self._clock = clock
        self._callers: dict[Hashable, _Caller[T]] = {}
        self._virtual = 0.0
        self._serial = itertools.count()

    # -- queries ----------------------------------------------------------------------------------------------------

    def running(self, caller: Hashable) -> int:
        c = self._callers.get(caller)
        return c.running if c is not None else 0

    def waiting(self, caller: Hashable) -> int:
        c = self._callers.get(caller)
        return len(c.waiting) if c is not None else 0

    def charge(self, caller: Hashable) -> float:
        """``caller``'s worker-seconds as the scheduler counts them now (for tests and diagnostics)."""
        c = self._callers.get(caller)
        return c.current(self._clock()) if c is not None else self._virtual_time(self._clock())

    def __iter__(self) -> Iterator[T]:
        """Every waiting item."""
        for c in self._callers.values():
            yield from c.waiting

    # -- changes ----------------------------------------------------------------------------------------------------

    def push(self, caller: Hashable, item: T) -> None:
        now = self._clock()
        c = self._callers.get(caller)
        if c is None or not c.active():
            virtual = self._virtual_time(now)
            if c is None:
                c = self._callers[caller] = _Caller(virtual, next(self._serial))
            else:
                c.charge = max(c.charge, virtual)
                c.served = next(self._serial)
        c.waiting.append(item)

    def remove(self, caller: Hashable, item: T) -> bool:
        """Take a waiting ``item`` out (its request gave up); whether it was waiting."""
        c = self._callers.get(caller)
        if c is None or item not in c.waiting:
            return False
        c.waiting.remove(item)
        self._forget_if_idle(caller, c)
        return True

    def pop(self) -> tuple[Hashable, T] | None:
        """The next waiting item to start (``start`` it, or drop it), by the lowest charge; None if none may."""
        now = self._clock()
        best: tuple[float, int, Hashable] | None = None
        for who, c in self._callers.items():
            if c.waiting and c.running < self.caller_workers:
                key = (c.current(now), c.served, who)
                if best is None or key[:2] < best[:2]:
                    best = key
        if best is None:
            return None
        who = best[2]
        c = self._callers[who]
        item = c.waiting.popleft()
        return who, item

    def start(self, caller: Hashable) -> float:
        """``caller``'s popped item goes on a worker now; the start time to give ``finished``."""
        now = self._clock()
        c = self._callers.get(caller)
        if c is None:  # its last item was popped and dropped meanwhile: start from the virtual time
            c = self._callers[caller] = _Caller(self._virtual_time(now), 0)
        c.running += 1
        c.started_sum += now
        c.served = next(self._serial)
        return now

    def dropped(self, caller: Hashable) -> None:
        """A popped item was not started (its request had given up)."""
        c = self._callers.get(caller)
        if c is not None:
            self._forget_if_idle(caller, c)

    def finished(self, caller: Hashable, started_at: float, service_s: float = 0.0) -> float:
        """``caller``'s item that started at ``started_at`` left its worker: charge its worker time plus
        ``service_s``, what it costs the service besides its worker (the charge added, returned)."""
        now = self._clock()
        c = self._callers[caller]
        used = max(0.0, now - started_at) + max(0.0, service_s)
        c.running -= 1
        c.started_sum -= started_at
        c.charge += used
        if not c.running:
            c.started_sum = 0.0  # no float drift across many requests
        self._forget_if_idle(caller, c)
        return used

    def bill(self, caller: Hashable, service_s: float) -> None:
        """Charge ``caller`` ``service_s`` for work that took no worker (an answer without a queue entry). A caller
        with nothing in the pool is first lifted to the virtual time, as ``push`` does, so the bill is a debt
        (kept while its charge is above the virtual time), never a credit."""
        if service_s <= 0:
            return
        c = self._callers.get(caller)
        if c is None or not c.active():
            virtual = self._virtual_time(self._clock())
            if c is None:
                c = self._callers[caller] = _Caller(virtual, next(self._serial))
            else:
                c.charge = max(c.charge, virtual)
        c.charge += service_s
        self._forget_if_idle(caller, c)

    def clear(self) -> list[T]:
        """Every waiting item, taken out (the pool is closing)."""
        items = list(self)
        for c in self._callers.values():
            c.waiting.clear()
        self._callers = {who: c for who, c in self._callers.items() if c.running}
        return items

    # -- the virtual time ------------------------------------------------------------------------------------------

    def _virtual_time(self, now: float) -> float:
        """The lowest charge among the callers with work in the pool, never lower than it was."""
        charges = [c.current(now) for c in self._callers.values() if c.active()]
        if charges:
            self._virtual = max(self._virtual, min(charges))
        return self._virtual

    def _forget_if_idle(self, caller: Hashable, c: _Caller[T]) -> None:
        """An idle caller is kept only while its charge is above the virtual time (it would be lifted to it anyway):
        the state is bounded by the callers with work in the pool or a recent debt."""
        if c.active():
            return
        virtual = self._virtual_time(self._clock())
        if c.charge <= virtual:
            del self._callers[caller]
        for who in [w for w, o in self._callers.items() if not o.active() and o.charge <= virtual]:
            del self._callers[who]
