"""A handle taken before another process evicted its run, purged the tombstone, or started
the id again: every call it makes is refused and writes nothing.

While the eviction is recorded the refusal is ``run-not-retained``, the same for a new call,
a repeat the handle could answer from its own state, and a call its state forbids. Once
the tombstone is purged, the handle's rows are gone: ``conflict``, and the log refuses a
row whose seq does not follow the row it names as its previous one (the run's seq 1 to 3
no longer there, or another run's), so no run is left without its first rows.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

import forkline_es as fe


def _rows(store: fe.Store, run_id: str) -> list[tuple[Any, ...]]:
    sql = "SELECT seq, kind FROM log WHERE run_id = ? ORDER BY seq"
    return [tuple(r) for r in store.backend.cursor().execute(sql, (run_id,)).fetchall()]


def _held(store: fe.Store) -> fe.Run:
    """Run "y" recorded to seq 3 and concluded by another handle; this one stays at seq 3."""
    run = store.start_run("wf", run_id="y")
    run.begin_step("a", arguments={"n": 1})
    run.end_step("a", "succeeded")
    other = store.resume_run("y")
    other.conclude("succeeded")
    return run


CALLS: list[Callable[[fe.Run], Any]] = [
    lambda r: r.begin_step("a", arguments={"n": 1}),  # a repeat its state answers
    lambda r: r.begin_step("b"),  # a new call
    lambda r: r.end_step("a", "failed"),  # one its state refuses (the step is ended)
    lambda r: r.conclude("failed"),
]


@pytest.mark.parametrize("call", CALLS)
def test_while_the_eviction_is_recorded_every_call_is_run_not_retained(
    store: fe.Store, call: Callable[[fe.Run], Any]
) -> None:
    run = _held(store)
    with fe.Store.open(store.path) as other:
        other.evict_run("y", reason="expired")
    with pytest.raises(fe.RunNotRetained):
        call(run)
    assert _rows(store, "y") == []


@pytest.mark.parametrize("call", CALLS)
def test_after_the_tombstone_is_purged_every_call_is_a_conflict_and_writes_nothing(
    store: fe.Store, call: Callable[[fe.Run], Any]
) -> None:
    run = _held(store)
    with fe.Store.open(store.path) as other:
        other.evict_run("y", reason="expired")
        assert other.purge_tombstones(timedelta(0), now=datetime.now(UTC) + timedelta(seconds=5)) == 1
    with pytest.raises(fe.Conflict):
        call(run)
    assert _rows(store, "y") == []
    assert store.start_run("wf2", run_id="y").generation == 0  # the id is free again


@pytest.mark.parametrize("call", CALLS)
def test_after_the_id_started_again_the_old_handle_writes_nothing_into_the_new_run(
    store: fe.Store, call: Callable[[fe.Run], Any]
) -> None:
    run = _held(store)
    with fe.Store.open(store.path) as other:
        other.evict_run("y", reason="expired")
        other.purge_tombstones(timedelta(0), now=datetime.now(UTC) + timedelta(seconds=5))
        other.start_run("wf2", run_id="y")
    with pytest.raises(fe.Conflict):
        call(run)
    assert _rows(store, "y") == [(1, "run-started")]
    assert store.verify_run("y").ok
    assert [e["kind"] for e in store.get_run_record("y")["entries"]] == ["start"]


def test_the_log_refuses_a_row_that_does_not_follow_its_runs_previous_row(store: fe.Store) -> None:
    """The rule holds for any client, below the recording handle: a row at seq 4 whose run
    has no seq 3, or whose prev names another digest, is refused, nothing written."""
    from forkline_es.log.rows import NewRow, row_digest

    store.start_run("wf", run_id="r")
    (first,) = store.conn.execute("SELECT digest FROM log WHERE run_id = 'r' AND seq = 1").fetchall()[0:1]

    def row(seq: int, prev: str) -> NewRow:
        body = b'{"path":"x","slots":{},"type":"step-begun"}'
        at, key = "2026-01-01T00:00:00Z", f"k{seq}"
        digest = row_digest("r", seq, None, 0, "step-begun", at, key, prev, body)
        return NewRow("r", seq, None, 0, "step-begun", at, key, body, digest, prev, ())

    for bad in (row(4, first[0]), row(2, "sha256:" + "0" * 64)):
        with pytest.raises(fe.Conflict):
            store.log.append([bad])
    assert _rows(store, "r") == [(1, "run-started")]
    store.log.append([row(2, first[0])])  # the row that follows is taken
    assert _rows(store, "r") == [(1, "run-started"), (2, "step-begun")]


def test_an_eviction_purge_and_restart_by_another_process_leave_the_handle_nothing_to_write(
    store: fe.Store,
) -> None:
    """The same, with the other side a real process of its own (retention on another host)."""
    import subprocess
    import sys

    run = _held(store)
    script = (
        "import sys\n"
        "from datetime import UTC, datetime, timedelta\n"
        "import forkline_es as fe\n"
        "with fe.Store.open(sys.argv[1]) as s:\n"
        "    s.evict_run('y', reason='expired')\n"
        "    s.purge_tombstones(timedelta(0), now=datetime.now(UTC) + timedelta(seconds=5))\n"
        "    s.start_run('wf2', run_id='y')\n"
    )
    subprocess.run([sys.executable, "-c", script, store.path], check=True, timeout=120)
    for call in CALLS:
        with pytest.raises(fe.Conflict):
            call(run)
    assert _rows(store, "y") == [(1, "run-started")]
    assert store.verify_run("y").ok
