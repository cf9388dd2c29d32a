"""Folding before the write transaction (``Projections.prepare``), and falling back inside it.

An append of a run whose state this store has cached folds and renders before SQLite's
``BEGIN IMMEDIATE`` (no projection row needs the position the insert gives), so the write
lock is held for the inserts and the prepared writes only. A fold that must read the
tables (a run not cached, a step path a reloaded run has not cached, a recovery's
supersession) folds inside the transaction, as before. Either way the tables equal a rebuild's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import forkline_es as fe

A = "sha256:" + "c0" * 32


def _folded_inside(store: fe.Store, record: Any) -> list[bool]:
    """For each event ``record()`` folds: whether a write transaction was open meanwhile."""
    seen: list[bool] = []
    projections = store.projections
    fold = projections._fold

    def spy(cur: Any, row: Any, event: Any, behind: Any) -> None:
        seen.append(store.conn.in_transaction)
        fold(cur, row, event, behind)

    projections._fold = spy  # type: ignore[method-assign]
    try:
        record()
    finally:
        del projections._fold
    return seen


def _step(run: fe.Run, path: str) -> None:
    run.begin_step(path, arguments={"p": path})
    run.invoke(path, 1, "op", A, "not-dispatched", arguments={"p": path})
    run.result(path, 1, "succeeded", result={"p": path})
    run.end_step(path, "succeeded")


@pytest.mark.sqlite_only("SQLite's write lock: whether a transaction is open while the fold runs")
def test_a_cached_runs_events_fold_before_the_write_lock_and_a_supersession_inside(
    sqlite_store: fe.Store,
) -> None:
    store = sqlite_store
    run = store.start_run("wf", run_id="r")
    assert _folded_inside(store, lambda: _step(run, "a")) == [False] * 4

    def batched() -> None:
        with run.batch():
            _step(run, "b")

    assert _folded_inside(store, batched) == [False] * 4

    run.begin_step("c")
    pending = run.invoke("c", 1, "op", A, "ambiguous")
    # The supersession reads the entries it takes out: that fold happens under the lock.
    assert _folded_inside(store, lambda: run.recover(supersedes=[pending])) == [False, True]
    # The run was reloaded from the tables: a path it has not cached is read once, under
    # the lock (the prepared attempt, then the fold inside); the rest is prepared again.
    assert _folded_inside(store, lambda: _step(run, "d")) == [False, True, False, False, False]
    assert _folded_inside(store, lambda: _step(run, "d/0")) == [False, True, False, False, False]
    run.conclude("succeeded")
    assert store.check_projections() == []
    assert store.get_run_record("r")["steps"]["c"]["status"] == "active"


@pytest.mark.sqlite_only("two stores on one file: another process's append to the same run")
def test_a_fold_prepared_for_an_append_another_store_beat_is_dropped(db_path: Path) -> None:
    """The fold is prepared from this store's cache before the insert finds the seq taken:
    the append is a conflict, writes nothing, and the cache it moved on is dropped, so the
    next append of the run folds from the tables, where the other store's event is."""
    with fe.Store.open(db_path) as store, fe.Store.open(db_path) as other:
        run = store.start_run("wf", run_id="r")
        run.begin_step("s")
        run.invoke("s", 1, "op", A, "not-dispatched")
        other.resume_run("r").result("s", 1, "succeeded", result="theirs")
        with pytest.raises(fe.Conflict):
            run.result("s", 1, "failed", result="ours", code="lost")
        store.resume_run("r").end_step("s", "succeeded")
        step = store.get_step_record("r", "s")
        assert step["payloads"]["result"]["value"] == {"kind": "string", "value": "theirs"}
        assert (step["status"], "code" in step) == ("ended", False)
        assert store.check_projections() == []


def test_a_batched_step_writes_its_entries_at_once_and_its_view_once(store: fe.Store) -> None:
    """A prepared batch writes behind as a rebuild does: the step's four entries in one
    ``executemany`` and its view once, with its last state (the same rows as four folds)."""
    run = store.start_run("wf", run_id="r")
    _step(run, "a")
    kept: list[Any] = []
    projections = store.projections
    replay = projections.replay

    def spy(cur: Any, prepared: Any) -> None:
        kept.append(list(prepared))
        replay(cur, prepared)

    projections.replay = spy  # type: ignore[method-assign]
    try:
        with run.batch():
            _step(run, "b")
    finally:
        del projections.replay
    (prepared,) = kept
    step_views = [params for sql, params, _ in prepared if "step_view" in sql]
    entries = [(params, many) for sql, params, many in prepared if "INTO entry" in sql]
    assert [len(rows) for rows in step_views] == [1]
    assert [(len(rows), many) for rows, many in entries] == [(4, True)]
    assert store.get_step_record("r", "b")["status"] == "ended"
    assert store.check_projections() == []
