"""The pool's scheduler (extract_fn/fair_share.py), driven by a fake clock: shares counted in worker-seconds."""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable

import pytest

from extract_fn.fair_share import FairShare


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _simulate(
    costs: dict[Hashable, float],
    *,
    workers: int,
    until: float,
    one_at_a_time: frozenset[Hashable] = frozenset(),
    service: dict[Hashable, float] | None = None,
) -> Counter[Hashable]:
    """``workers`` workers serving callers that always have a request waiting (or, for ``one_at_a_time``, send the
    next one as soon as the last is answered); each request of a caller holds a worker for its cost, and costs the
    service ``service[caller]`` besides (charged when it ends). Starts per caller until the clock reaches
    ``until``."""
    service = service or {}
    clock = Clock()
    fair: FairShare[str] = FairShare(caller_workers=workers, clock=clock)
    for who in costs:
        fair.push(who, "job")
        if who not in one_at_a_time:
            fair.push(who, "job")
    starts: Counter[Hashable] = Counter()
    running: list[tuple[float, Hashable, float]] = []  # (ends at, caller, started at)
    while clock.now < until:
        while len(running) < workers and (picked := fair.pop()) is not None:
            who, _ = picked
            started = fair.start(who)
            starts[who] += 1
            running.append((clock.now + costs[who], who, started))
            if who not in one_at_a_time:
                fair.push(who, "job")  # always one more waiting
        running.sort(key=lambda r: r[0])
        ends, who, started = running.pop(0)
        clock.now = ends
        fair.finished(who, started, service.get(who, 0.0))
        if who in one_at_a_time:
            fair.push(who, "job")
    return starts


def test_a_caller_with_cheap_requests_gets_twenty_times_the_starts_of_one_with_costly_ones() -> None:
    starts = _simulate({"a": 0.2, "b": 0.01}, workers=1, until=100.0)
    assert starts["b"] / starts["a"] == pytest.approx(20, rel=0.05)
    # Both got the same worker time.
    assert starts["a"] * 0.2 == pytest.approx(starts["b"] * 0.01, rel=0.05)


def test_the_share_holds_on_several_workers() -> None:
    starts = _simulate({"a": 0.2, "b": 0.01}, workers=2, until=100.0)
    assert starts["b"] / starts["a"] == pytest.approx(20, rel=0.05)


def test_a_caller_sending_one_request_at_a_time_keeps_its_charge_between_requests() -> None:
    # a is never waiting when its request ends (it sends the next one after the answer): it must not start again from
    # zero each time, or it would take the worker after every request of b.
    starts = _simulate({"a": 0.2, "b": 0.01}, workers=1, until=100.0, one_at_a_time=frozenset({"a"}))
    assert starts["b"] / starts["a"] == pytest.approx(20, rel=0.1)


def test_three_callers_share_by_worker_time() -> None:
    starts = _simulate({"normal": 0.005, "h1": 0.2, "h2": 0.1}, workers=2, until=60.0)
    used = {who: starts[who] * cost for who, cost in {"normal": 0.005, "h1": 0.2, "h2": 0.1}.items()}
    assert used["normal"] == pytest.approx(used["h1"], rel=0.05)
    assert used["normal"] == pytest.approx(used["h2"], rel=0.05)


def test_equal_costs_alternate_like_round_robin() -> None:
    clock = Clock()
    fair: FairShare[str] = FairShare(caller_workers=1, clock=clock)
    for i in range(3):
        fair.push("a", f"a{i}")
    for i in range(3):
        fair.push("b", f"b{i}")
    order = []
    while (picked := fair.pop()) is not None:
        who, item = picked
        started = fair.start(who)
        clock.now += 1.0
        fair.finished(who, started)
        order.append(item)
    assert order == ["a0", "b0", "a1", "b1", "a2", "b2"]


def test_a_lone_caller_gets_every_worker() -> None:
    clock = Clock()
    fair: FairShare[str] = FairShare(caller_workers=4, clock=clock)
    fair.push("b", "b0")
    started = fair.start("b") if fair.pop() else None
    assert started is not None
    clock.now = 1000.0  # b has used far more than anyone: it is still alone, so it is served
    for i in range(3):
        fair.push("b", f"b{i + 1}")
    got = [fair.pop() for _ in range(3)]
    assert [g[1] for g in got if g is not None] == ["b1", "b2", "b3"]
    for _ in got:
        fair.start("b")
    assert fair.running("b") == 4


def test_at_most_caller_workers_run_for_one_caller() -> None:
    clock = Clock()
    fair: FairShare[str] = FairShare(caller_workers=1, clock=clock)
    fair.push("a", "a0")
    fair.push("a", "a1")
    picked = fair.pop()
    assert picked == ("a", "a0")
    fair.start("a")
    assert fair.pop() is None  # a's second waits for a's first, even with a free worker
    fair.push("b", "b0")
    assert fair.pop() == ("b", "b0")


def test_a_running_request_charges_its_caller_while_it_runs() -> None:
    # a's request has held a worker for 10 s and is not done; a and b both wait for the other worker: b goes first.
    clock = Clock()
    fair: FairShare[str] = FairShare(caller_workers=2, clock=clock)
    fair.push("a", "a-long")
    assert fair.pop() == ("a", "a-long")
    fair.start("a")
    fair.push("a", "a1")
    fair.push("b", "b0")
    clock.now = 10.0
    assert fair.charge("a") == pytest.approx(10.0)
    assert fair.pop() == ("b", "b0")


def test_idleness_earns_no_credit() -> None:
    # a worked alone for 100 s; b arriving now shares from now on instead of owning the worker for 100 s.
    clock = Clock()
    fair: FairShare[str] = FairShare(caller_workers=1, clock=clock)
    for i in range(100):
        fair.push("a", f"a{i}")
        who, _ = fair.pop() or ("", "")
        started = fair.start(who)
        clock.now += 1.0
        fair.finished(who, started)
    for i in range(4):
        fair.push("a", f"a{100 + i}")
        fair.push("b", f"b{i}")
    order = []
    for _ in range(8):
        who, _item = fair.pop() or ("", "")
        started = fair.start(who)
        clock.now += 1.0
        fair.finished(who, started)
        order.append(who)
    assert Counter(order) == {"a": 4, "b": 4}
    assert order[:2] in (["a", "b"], ["b", "a"])  # neither is served twice in a row while the other waits


def test_a_removed_or_dropped_request_costs_nothing_and_idle_callers_are_forgotten() -> None:
    clock = Clock()
    fair: FairShare[str] = FairShare(caller_workers=1, clock=clock)
    fair.push("a", "a0")
    assert fair.remove("a", "a0")
    assert not fair.remove("a", "a0")
    fair.push("b", "b0")
    assert fair.pop() == ("b", "b0")
    fair.dropped("b")
    assert fair.waiting("a") == fair.waiting("b") == 0
    assert fair.charge("a") == fair.charge("b") == 0.0
    assert fair._callers == {}


def test_clear_returns_every_waiting_item() -> None:
    fair: FairShare[str] = FairShare(caller_workers=1, clock=Clock())
    fair.push("a", "a0")
    fair.push("b", "b0")
    fair.push("b", "b1")
    assert sorted(fair.clear()) == ["a0", "b0", "b1"]
    assert fair.pop() is None


# ---------------------------------------------------------------------------------------------------------------
# Shares weighted by what a request costs the whole service (the bytes it carries), not only its worker


def test_what_a_request_costs_the_service_counts_in_its_callers_share() -> None:
    # Both hold a worker 0.1 s a request; a's requests also cost the service 0.3 s each (megabyte artifacts streamed):
    # a costs 0.4 s a request to b's 0.1 s, so while both wait b gets four starts for each of a's.
    starts = _simulate({"a": 0.1, "b": 0.1}, workers=1, until=100.0, service={"a": 0.3})
    assert starts["b"] / starts["a"] == pytest.approx(4, rel=0.05)
    # Worker time alone (the scheduler before) would have given them one each.
    even = _simulate({"a": 0.1, "b": 0.1}, workers=1, until=100.0)
    assert even["a"] == pytest.approx(even["b"], abs=1)


def test_a_lone_caller_with_costly_requests_still_gets_every_worker() -> None:
    # Work-conserving: a caller whose requests cost the service ten times their worker time, alone, is never made to
    # wait for a free worker.
    clock = Clock()
    fair: FairShare[str] = FairShare(caller_workers=2, clock=clock)
    for i in range(6):
        fair.push("a", f"a{i}")
    for _ in range(3):
        running = []
        while (picked := fair.pop()) is not None:
            running.append(fair.start(picked[0]))
        assert len(running) == 2  # both workers, every round
        clock.now += 1.0
        for started in running:
            fair.finished("a", started, 10.0)
    assert fair.waiting("a") == 0
    assert fair.charge("a") == pytest.approx(6 * 11.0)


def test_finished_returns_the_charge_it_added() -> None:
    clock = Clock()
    fair: FairShare[str] = FairShare(caller_workers=1, clock=clock)
    fair.push("a", "a0")
    assert fair.pop() == ("a", "a0")
    started = fair.start("a")
    clock.now = 0.5
    assert fair.finished("a", started, 0.25) == pytest.approx(0.75)
    assert fair.charge("a") == pytest.approx(0.75)


def test_a_bill_without_a_worker_is_a_debt_that_makes_its_caller_wait_its_turn() -> None:
    # b waits for the worker; a's answer came without a worker (remembered by the crash memory), but reading its
    # 6 MB upload cost the service 0.5 s: a's next request then waits behind b's, though it would have been first by
    # worker time (a tie, and a was served least recently).
    clock = Clock()
    fair: FairShare[str] = FairShare(caller_workers=1, clock=clock)
    fair.push("a", "a-first")
    fair.push("b", "b0")
    assert fair.pop() == ("a", "a-first")
    fair.dropped("a")  # answered without a worker
    fair.bill("a", 0.5)
    assert fair.charge("a") == pytest.approx(0.5)
    fair.push("a", "a0")
    assert fair.pop() == ("b", "b0")
    # A bill of nothing changes nothing, and an idle caller's debt is forgotten once the others have caught up.
    fair.bill("c", 0.0)
    assert "c" not in fair._callers
    started = fair.start("b")
    clock.now = 1.0
    fair.finished("b", started)
    assert fair.pop() == ("a", "a0")
    fair.dropped("a")
    assert "a" not in fair._callers


def test_a_bill_to_an_idle_caller_starts_from_the_virtual_time() -> None:
    # b has worked 10 s (and is still busy); a, idle and never seen, is billed 1 s: its charge is the virtual time
    # plus 1 s, never 1 s from zero (which would be a credit of 9 s over b).
    clock = Clock()
    fair: FairShare[str] = FairShare(caller_workers=1, clock=clock)
    fair.push("b", "b0")
    assert fair.pop() == ("b", "b0")
    started = fair.start("b")
    clock.now = 10.0
    fair.finished("b", started)
    fair.push("b", "b1")
    fair.bill("a", 1.0)
    assert fair.charge("a") == pytest.approx(fair.charge("b") + 1.0)
    fair.push("a", "a0")
    assert fair.pop() == ("b", "b1")
