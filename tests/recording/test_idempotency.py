"""Idempotent recording: repeats return the original seq, ambiguous commits never fork."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import forkline_es as fe
import forkline_es.store as store_module
from forkline_es.log.events import EventBody
from forkline_es.log.rows import NewRow

from .helpers import ARTIFACT, check_integrity, count, snapshot

CALLS: list[tuple[str, Callable[[fe.Run], Any]]] = [
    ("begin_step", lambda r: r.begin_step("b", arguments={"x": [1, 2]})),
    ("invoke", lambda r: r.invoke("a", 2, "op", ARTIFACT, "ambiguous", arguments="q")),
    ("result", lambda r: r.result("a", 1, "failed", code="E1", details={"why": "x"})),
    ("end_step", lambda r: r.end_step("a", "skipped", branch={"arm": 2}, binding=fe.NOT_RECORDED)),
    ("child", lambda r: r.child("a", "kid")),
    ("conclude", lambda r: r.conclude("succeeded", outputs={"n": 1})),
]


def _run(store: fe.Store) -> fe.Run:
    run = store.start_run(workflow="w", inputs={"i": 1}, run_id="r")
    run.begin_step("a")
    run.invoke("a", 1, "op", ARTIFACT, "not-dispatched")
    return run


@pytest.mark.parametrize(("name", "call"), CALLS, ids=[n for n, _ in CALLS])
def test_an_identical_repeat_returns_the_original_seq_and_writes_nothing(
    db_path: Path, name: str, call: Callable[[fe.Run], Any]
) -> None:
    with fe.Store.open(db_path) as store:
        run = _run(store)
        first = call(run)
        after_first = snapshot(store)
        assert call(run) == first
        assert call(store.resume_run("r")) == first  # from a fresh handle too
        assert snapshot(store) == after_first
        with fe.Store.open(db_path) as other:
            assert call(other.resume_run("r")) == first
        assert snapshot(store) == after_first


def test_a_different_call_under_the_same_key_is_a_conflict(store: fe.Store) -> None:
    run = _run(store)
    run.begin_step("b", arguments=1)
    before = snapshot(store)
    for call in (
        lambda: run.begin_step("b", arguments=2),  # default key begin:0:b
        lambda: run.invoke("a", 1, "op", ARTIFACT, "ambiguous"),  # default key invoke:0:a:1
        lambda: run.invoke("c", 1, "op", ARTIFACT, "ambiguous", key="begin:0:b"),  # override
    ):
        with pytest.raises(fe.Conflict) as info:
            call()
        assert "idempotency key" in str(info.value)
    assert snapshot(store) == before


def test_override_keys_make_distinct_calls_and_repeat_by_key(store: fe.Store) -> None:
    run = _run(store)
    assert run.suspend(key="pause-1") is None
    n = count(store)
    assert run.suspend(key="pause-1") is None  # repeat by key: nothing new
    assert count(store) == n
    run.resume(key="go-1")
    run.suspend(key="pause-2")  # a second suspension is a different call
    assert count(store) == n + 2
    first = run.begin_step("x", key="mine")
    assert run.begin_step("x", key="mine") == first
    keys = store.backend.cursor().execute("SELECT key FROM log WHERE entry = ?", (first,)).fetchall()
    assert keys == [("mine",)]


def test_start_run_repeats_by_run_id_regardless_of_the_environment(
    store: fe.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    store.start_run(workflow="w", inputs={"i": 1}, run_id="r")
    n = count(store)
    real = store_module.environment
    monkeypatch.setattr(store_module, "environment", lambda: {**real(), "cwd": "/elsewhere"})
    again = store.start_run(workflow="w", inputs={"i": 1}, run_id="r")
    assert again.id == "r" and count(store) == n
    with pytest.raises(fe.Conflict):
        store.start_run(workflow="w", inputs={"i": 2}, run_id="r")
    assert count(store) == n


def test_a_repeat_with_its_maps_in_another_order_is_the_same_call(store: fe.Store) -> None:
    """Bodies are canonical JSON (keys sorted), so map order never makes two calls of one."""
    a, b = "sha256:" + "a" * 64, "sha256:" + "b" * 64
    store.start_run(workflow="w", run_id="r", pins={"tool": b, "definition": a})
    again = store.start_run(workflow="w", run_id="r", pins={"definition": a, "tool": b})
    run = store.resume_run("r")
    run.end_step("s", "skipped", branch={"case": "x"}, details={"z": 1, "a": [{"y": 2, "b": 3}]})
    assert run.end_step("s", "skipped", branch={"case": "x"}, details={"a": [{"b": 3, "y": 2}], "z": 1}) == 2
    assert again.id == "r" and count(store) == 2
    for (body,) in store.backend.cursor().execute("SELECT body FROM log"):
        assert body == fe.canonical_json(json.loads(body)).decode()


def _lose_acknowledgements(monkeypatch: pytest.MonkeyPatch, store: fe.Store, times: int) -> list[int]:
    """Make the next ``times`` commits succeed and then raise, as a dropped reply would."""
    real = store._commit
    lost: list[int] = []

    def commit_then_fail(row: NewRow, event: EventBody) -> int:
        position = real(row, event)
        if len(lost) < times:
            lost.append(row.seq)
            raise fe.StoreError("connection reset after COMMIT (simulated)")
        return position

    monkeypatch.setattr(store, "_commit", commit_then_fail)
    return lost


def test_a_retry_after_a_lost_acknowledgement_adopts_the_commit(
    store: fe.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run(store)
    lost = _lose_acknowledgements(monkeypatch, store, 1)
    with pytest.raises(fe.StoreError):
        run.result("a", 1, "succeeded", result={"v": 1})
    n = count(store)
    assert lost == [n]  # it did commit
    assert run.result("a", 1, "succeeded", result={"v": 1}) == 4
    assert count(store) == n
    assert run.end_step("a", "succeeded") == 5  # the handle is current, not fenced
    check_integrity(store.path)


def test_a_different_next_call_after_a_lost_acknowledgement_follows_it(
    store: fe.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run(store)
    _lose_acknowledgements(monkeypatch, store, 1)
    with pytest.raises(fe.StoreError):
        run.result("a", 1, "succeeded")
    assert run.end_step("a", "succeeded") == 5  # recorded after the adopted result, not over it
    assert run.result("a", 1, "succeeded") == 4
    sql = "SELECT kind FROM log WHERE run_id = 'r' ORDER BY seq"
    kinds = [k for (k,) in store.backend.cursor().execute(sql)]
    assert kinds == ["run-started", "step-begun", "action-invoked", "action-result", "step-ended"]
    check_integrity(store.path)


def test_a_lost_recovery_acknowledgement_is_adopted_once(
    store: fe.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run(store)
    _lose_acknowledgements(monkeypatch, store, 1)
    with pytest.raises(fe.StoreError):
        run.recover([3])
    assert run.recover([3]) == 1
    assert run.generation == 1
    sql = "SELECT kind FROM log WHERE kind = 'recovered'"
    assert [k for (k,) in store.backend.cursor().execute(sql)] == ["recovered"]


def test_a_commit_that_really_failed_leaves_the_handle_current(
    store: fe.Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _run(store)
    real = store._commit

    def fail(row: NewRow, event: EventBody) -> int:
        raise fe.StoreError("disk I/O error (simulated)")

    monkeypatch.setattr(store, "_commit", fail)
    with pytest.raises(fe.StoreError):
        run.begin_step("b")
    monkeypatch.setattr(store, "_commit", real)
    assert run.begin_step("c") == 4
    check_integrity(store.path)


def test_the_same_call_through_a_second_handle_is_adopted_without_forking(db_path: Path) -> None:
    with fe.Store.open(db_path) as one, fe.Store.open(db_path) as two:
        _run(one)
        a, b = one.resume_run("r"), two.resume_run("r")
        assert a.result("a", 1, "succeeded", result=5) == 4
        assert b.result("a", 1, "succeeded", result=5) == 4  # b's seq clashed with a's identical call
        assert b.end_step("a", "succeeded") == 5  # b adopted it and is current
        with pytest.raises(fe.Conflict):
            a.begin_step("z")  # a did not see b's end: fenced
    rows = check_integrity(str(db_path))["r"]
    assert [r[5] for r in rows].count("action-result") == 1


def test_a_repeated_recovery_answers_its_own_generation(store: fe.Store) -> None:
    run = _run(store)
    assert run.recover([], key="first") == 1
    assert run.recover([]) == 2
    n = count(store)
    assert run.recover([], key="first") == 1  # not the current generation, 2
    assert count(store) == n and run.generation == 2


def test_repeats_log_nothing(store: fe.Store, caplog: pytest.LogCaptureFixture) -> None:
    run = _run(store)
    run.recover([], key="k")
    run.conclude("failed")
    caplog.set_level(logging.INFO, logger="forkline_es")
    run.recover([], key="k")
    run.conclude("failed")
    assert [r for r in caplog.records if r.name.startswith("forkline_es")] == []
