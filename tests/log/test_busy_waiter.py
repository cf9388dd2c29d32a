"""The busy handler: short sleeps while another writer's transaction is short, longer after.

With sleeps growing to 2 ms from the first retry, the write lock sat free while every
waiting writer slept; sleeps stop at 250 µs for the first 50 ms of a wait.
"""

from __future__ import annotations

import pytest

from forkline_es.log import connection


def _sleeps(monkeypatch: pytest.MonkeyPatch, clock: list[float], calls: int) -> list[float]:
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        clock[0] += seconds

    monkeypatch.setattr(connection.time, "sleep", sleep)
    monkeypatch.setattr(connection.time, "monotonic", lambda: clock[0])
    waiting = connection._busy_waiter(30_000)
    for k in range(calls):
        assert waiting(k)
    return slept


def test_sleeps_stay_short_for_the_first_50_ms_then_grow(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [100.0]
    slept = _sleeps(monkeypatch, clock, 400)
    start = 100.0
    elapsed = 0.0
    for s in slept:
        limit = 0.000_25 if elapsed < 0.05 else 0.002  # the documented schedule
        assert s <= limit + 1e-12
        elapsed += s
    assert slept[0] < 0.000_25  # the first retry comes soon
    assert max(slept) == 0.002  # a long wait backs off
    assert clock[0] - start > 0.05


def test_the_waiter_gives_up_at_its_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = [0.0]
    monkeypatch.setattr(connection.time, "sleep", lambda s: clock.__setitem__(0, clock[0] + s))
    monkeypatch.setattr(connection.time, "monotonic", lambda: clock[0])
    waiting = connection._busy_waiter(100)
    k = 0
    while waiting(k):
        k += 1
        assert clock[0] <= 0.1 + 1e-9
    assert clock[0] >= 0.1 - 1e-9
