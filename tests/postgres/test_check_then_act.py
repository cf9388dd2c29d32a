"""The rare check-then-act transactions with several processes at once (issue 21).

A PostgreSQL transaction does not lock the database as SQLite's ``BEGIN IMMEDIATE`` does:
two hosts can both read "no such consumer" or "checkpoint at 5" and then both write. The
tests force that interleaving with real processes: the test holds a row lock (or an
uncommitted row), starts the processes, waits until PostgreSQL shows each blocked on it,
then lets go, so the processes act on what they read before the others committed.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Final

import psycopg
import pytest

import forkline_es as fe

_REGISTER: Final = """
import json, sys, forkline_es as fe
with fe.Store.open(sys.argv[1]) as store:
    c = store.register_consumer(sys.argv[2], since="now")
print(json.dumps([c.name, c.position, c.registered_at]), flush=True)
"""

_ACKNOWLEDGE: Final = """
import json, sys, forkline_es as fe
with fe.Store.open(sys.argv[1]) as store:
    c = store.acknowledge(sys.argv[2], int(sys.argv[3]))
print(json.dumps([c.name, c.position]), flush=True)
"""

_EVICT: Final = """
import json, os, sys, time, forkline_es as fe
dsn, go, runs = sys.argv[1], sys.argv[2], sys.argv[3:]
outcomes = {}
with fe.Store.open(dsn) as store:
    while not os.path.exists(go):
        time.sleep(0.001)
    for run_id in runs:
        try:
            store.evict_run(run_id, reason="two retention hosts")
            outcomes[run_id] = "evicted"
        except fe.RunNotRetained:
            outcomes[run_id] = "already evicted"
print(json.dumps(outcomes), flush=True)
"""


def spawn(script: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True)


def result(proc: subprocess.Popen[str]) -> Any:
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, f"a process failed (exit {proc.returncode})"
    return json.loads(out.strip().splitlines()[-1])


def wait_blocked(admin: psycopg.Connection[Any], count: int) -> None:
    """Until ``count`` forkline_es sessions wait for a lock (the one the test holds)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ((blocked,),) = admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'forkline_es' "
            "AND wait_event_type = 'Lock' AND datname = current_database()"
        ).fetchall()
        if blocked >= count:
            return
        time.sleep(0.01)
    raise AssertionError(f"{count} processes never blocked on the test's lock")


def test_two_hosts_registering_one_consumer_at_once_both_get_the_one_consumer(pg_dsn: str) -> None:
    with fe.Store.open(pg_dsn) as store:
        store.start_run("wf", run_id="r").conclude("succeeded")
    with psycopg.connect(pg_dsn, autocommit=True) as admin, psycopg.connect(pg_dsn) as holder:
        # An uncommitted registration: both processes read "no such consumer", then wait on it.
        holder.execute("INSERT INTO consumer (name, position, registered_at) VALUES ('c', 0, 'x')")
        procs = [spawn(_REGISTER, pg_dsn, "c") for _ in range(2)]
        wait_blocked(admin, 2)
        holder.rollback()  # one process's insert goes in; the other meets it
        results = [result(p) for p in procs]
    assert results[0] == results[1]  # the same consumer: name, checkpoint and time
    with fe.Store.open(pg_dsn) as store:
        (consumer,) = store.consumers()
        assert [consumer.name, consumer.position, consumer.registered_at] == results[0]


def test_acknowledgements_of_two_hosts_at_once_never_move_a_checkpoint_backwards(pg_dsn: str) -> None:
    with fe.Store.open(pg_dsn) as store:
        store.register_consumer("c")
        for i in range(3):
            store.start_run("wf", run_id=f"r{i}").conclude("succeeded")
        early, middle, late = (c.position for c in store.completions("c"))
        store.acknowledge("c", early)
    with psycopg.connect(pg_dsn, autocommit=True) as admin, psycopg.connect(pg_dsn) as holder:
        holder.execute("SELECT position FROM consumer WHERE name = 'c' FOR UPDATE")
        ahead = spawn(_ACKNOWLEDGE, pg_dsn, "c", str(late))  # both read the checkpoint at early
        wait_blocked(admin, 1)
        behind = spawn(_ACKNOWLEDGE, pg_dsn, "c", str(middle))
        wait_blocked(admin, 2)
        holder.rollback()  # the later acknowledgement commits first, then the earlier one
        assert result(ahead) == ["c", late]
        assert result(behind) == ["c", late]  # it says where the checkpoint is: still late
    with fe.Store.open(pg_dsn) as store:
        assert [c.position for c in store.consumers()] == [late]
        assert store.completions("c") == []


def test_two_retention_hosts_evicting_the_same_runs_evict_each_once(pg_dsn: str, tmp_path: Path) -> None:
    runs = [f"r{i}" for i in range(12)]
    with fe.Store.open(pg_dsn) as store:
        for run_id in runs:
            run = store.start_run("wf", run_id=run_id, inputs={"n": run_id})
            run.begin_step("s", arguments={"x": 1})
            run.end_step("s", "succeeded")
            run.conclude("succeeded")
        kept = store.start_run("wf", run_id="kept")
        kept.conclude("succeeded")
    go = tmp_path / "go"
    procs = [spawn(_EVICT, pg_dsn, str(go), *order) for order in (runs, runs[::-1])]
    time.sleep(1.0)  # both connected and waiting
    go.touch()
    outcomes = [result(p) for p in procs]
    for run_id in runs:
        assert sorted(o[run_id] for o in outcomes) == ["already evicted", "evicted"], run_id
    with fe.Store.open(pg_dsn) as store:
        assert sorted(e["run_id"] for e in store.evictions()) == sorted(runs)  # one record each
        rows = store.backend.cursor().execute("SELECT DISTINCT run_id FROM log").fetchall()
        assert rows == [("kept",)]
        assert [s["id"] for s in store.list_runs()] == ["kept"]
        assert store.check_projections() == []


def test_an_eviction_committed_between_the_check_and_the_record_is_run_not_retained(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interleaving forced: this eviction has read the run retained when another
    connection's eviction of it commits; under READ COMMITTED its rows are then gone."""
    from forkline_es.retention import apply

    with fe.Store.open(pg_dsn) as first, fe.Store.open(pg_dsn) as other:
        run = first.start_run("wf", run_id="r")
        run.conclude("succeeded")
        checked = apply._check_evictable

        def check_then_lose_the_race(store: Any, cur: Any, run_id: str, force: bool) -> str:
            workflow = checked(store, cur, run_id, force)
            monkeypatch.setattr(
                apply, "_check_evictable", checked
            )  # the other host's eviction checks normally
            other.evict_run(run_id, "the other host")
            return workflow

        monkeypatch.setattr(apply, "_check_evictable", check_then_lose_the_race)
        with pytest.raises(fe.RunNotRetained, match="evicted run 'r' meanwhile"):
            first.evict_run("r", "this host")
        assert [(e["run_id"], e["reason"]) for e in first.evictions()] == [("r", "the other host")]
