"""Generations, recovery and fencing: one history, however many handles and processes."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

import forkline_es as fe

from .helpers import ARTIFACT, check_integrity, count, snapshot
from .worker_paths import WORKER


def _generations(store: fe.Store, run_id: str) -> list[tuple[int, str, int]]:
    return [
        (seq, kind, gen)
        for seq, kind, gen in store.backend.cursor().execute(
            "SELECT seq, kind, generation FROM log WHERE run_id = ? ORDER BY seq", (run_id,)
        )
    ]


def test_recover_returns_the_next_generation_and_later_entries_carry_it(store: fe.Store) -> None:
    run = store.start_run(workflow="w")
    assert run.generation == 0
    run.begin_step("a")
    run.invoke("a", 1, "op", ARTIFACT, "ambiguous")
    for expected in (1, 2, 3):
        before = count(store)
        assert run.recover([]) == expected == run.generation
        assert count(store) == before + 1
        run.begin_step(f"s{expected}")
    rows = _generations(store, run.id)
    recovered_at = {seq: gen for seq, kind, gen in rows if kind == "recovered"}
    assert sorted(recovered_at.values()) == [1, 2, 3]
    current = 0
    for seq, _, gen in rows:
        current = recovered_at.get(seq, current)
        assert gen == current
    record = store.get_run_record(run.id)
    assert [e["supersedes"] for e in record["entries"] if e["kind"] == "recovery"] == [[], [], []]
    assert record["run"]["generation"] == 3


def test_supersession_reopens_steps_but_attempts_keep_counting(store: fe.Store) -> None:
    run = store.start_run(workflow="w")
    begun = run.begin_step("a")
    invoked = run.invoke("a", 1, "op", ARTIFACT, "not-dispatched")
    run.begin_step("b")
    ended = run.end_step("b", "failed")
    assert run.recover([invoked, begun, ended]) == 1
    with pytest.raises(fe.Conflict):
        run.result("a", 1, "succeeded")  # its invoke belongs to generation 0
    with pytest.raises(fe.Conflict):
        run.invoke("a", 1, "op", ARTIFACT, "not-dispatched")  # superseded attempts still count
    with pytest.raises(fe.Conflict):
        run.end_step("a", "succeeded")  # its begin is superseded: the step never began here
    assert run.invoke("a", 2, "op", ARTIFACT, "not-dispatched") == 7
    assert run.result("a", 2, "succeeded", result=1) == 8
    assert run.end_step("b", "succeeded", key="end-b-again") == 9  # b ran again after its end was superseded
    step = store.get_step_record(run.id, "b")
    assert step["generation"] == 1 and step["status"] == "ended"
    with pytest.raises(fe.Conflict):
        run.recover([invoked])  # already superseded
    with pytest.raises(fe.Conflict):
        run.recover([5])  # the recovery entry itself


def test_resume_run_from_a_second_store_sees_the_current_generation(db_path: Path) -> None:
    with fe.Store.open(db_path) as one, fe.Store.open(db_path) as two:
        run = one.start_run(workflow="w", run_id="r")
        run.recover([])
        run.begin_step("a")
        other = two.resume_run("r")
        assert other.generation == 1
        assert other.recover([]) == 2
        assert one.resume_run("r").generation == 2


@pytest.mark.parametrize("where", ["second store", "second process"])
def test_a_handle_from_before_a_recovery_elsewhere_is_fenced_for_good(db_path: Path, where: str) -> None:
    with fe.Store.open(db_path) as store:
        stale = store.start_run(workflow="w", run_id="r")
        stale.begin_step("a")
        if where == "second store":
            with fe.Store.open(db_path) as other:
                assert other.resume_run("r").recover([]) == 1
        else:
            out = subprocess.run(
                [sys.executable, str(WORKER), "recover", str(db_path), "r"],
                capture_output=True,
                check=True,
            )
            assert out.stdout.split() == [b"resumed", b"0", b"recovered", b"1"]
        before = snapshot(store)
        with pytest.raises(fe.Conflict) as info:
            stale.invoke("a", 1, "op", ARTIFACT, "not-dispatched")
        assert "resume_run" in str(info.value)
        for call in (
            lambda: stale.begin_step("b"),
            lambda: stale.recover([]),
            lambda: stale.conclude("failed"),
            lambda: stale.suspend(),
        ):
            with pytest.raises(fe.Conflict):
                call()
        assert snapshot(store) == before
        fresh = store.resume_run("r")
        assert fresh.generation == 1
        fresh.invoke("a", 1, "op", ARTIFACT, "not-dispatched")
    check_integrity(str(db_path))


def test_two_handles_at_one_generation_cannot_both_extend_it(db_path: Path) -> None:
    with fe.Store.open(db_path) as one, fe.Store.open(db_path) as two:
        one.start_run(workflow="w", run_id="r")
        a, b = one.resume_run("r"), two.resume_run("r")
        assert a.recover([]) == 1
        with pytest.raises(fe.Conflict):
            b.recover([])
        with pytest.raises(fe.Conflict):
            b.begin_step("x")
    assert [r[5] for r in check_integrity(str(db_path))["r"]] == ["run-started", "recovered"]


def test_processes_recovering_at_once_each_get_a_distinct_generation(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        store.start_run(workflow="w", run_id="r")
    start_at = str(time.time() + 2.0)
    procs = [
        subprocess.Popen(
            [sys.executable, str(WORKER), "recover", str(db_path), "r", start_at],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(4)
    ]
    won: list[int] = []
    resumed_at: list[int] = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        lines = [line.split() for line in out.decode().splitlines()]
        resumed_at.append(int(lines[0][1]))
        if p.returncode == 0:
            won.append(int(lines[1][1]))
            assert won[-1] == resumed_at[-1] + 1
        else:
            assert b"forkline_es.errors.Conflict: conflict" in err, err.decode()
            assert b"BusyError" not in err and b"database is locked" not in err
    rows = check_integrity(str(db_path))["r"]
    recovered = [r[4] for r in rows if r[5] == "recovered"]
    assert recovered == list(range(1, len(recovered) + 1))
    assert sorted(won) == recovered
    # of the processes that resumed at one generation, exactly one recovery extended it
    assert sorted(set(resumed_at)) == sorted(g - 1 for g in won)


def test_a_busy_timeout_refuses_with_conflict_but_does_not_fence(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        run = store.start_run(workflow="w", run_id="r")
        blocker = apsw.Connection(str(db_path))
        blocker.execute("BEGIN IMMEDIATE")  # another writer holds the write lock
        store.conn.set_busy_timeout(50)
        before = snapshot(store)
        with pytest.raises(fe.Conflict) as info:
            run.begin_step("a")
        assert "locked" in str(info.value)
        blocker.execute("ROLLBACK")
        blocker.close()
        assert snapshot(store) == before
        assert run.begin_step("a") == 2  # the handle is still current
