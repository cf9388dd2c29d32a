"""SIGKILL a recording executor at random instants: what returned is kept, nothing is torn."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import apsw
import pytest

import forkline_es as fe
from forkline_es.log.schema import SCHEMA_VERSION
from forkline_es.recording import checkpoint
from forkline_es.recording.state import RunState

from .helpers import ARTIFACT, check_integrity, columns, full_fold, snapshot, unfinished_entries
from .worker_paths import WORKER

ITERATIONS = 24
KIND = {
    "start": "run-started",
    "begin": "step-begun",
    "invoke": "action-invoked",
    "result": "action-result",
    "end": "step-ended",
}


def _kill_at_random(
    db: Path, rng: random.Random, early: bool, durability: str = "normal"
) -> list[tuple[str, int]]:
    """Start the executor, SIGKILL it at a random instant, return what it acknowledged.

    ``early``: kill at a random instant from spawn (perhaps while it opens or migrates the
    store); otherwise once it has acknowledged its first call, a random while later.
    """
    proc = subprocess.Popen(
        [sys.executable, str(WORKER), "crash", str(db), "run", durability],
        bufsize=0,  # unbuffered: readline must not take bytes that communicate() then misses
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    first = b""
    if early:
        time.sleep(rng.uniform(0.0, 0.4))
    else:
        first = proc.stdout.readline()
        time.sleep(rng.uniform(0.0, 0.15))
    proc.send_signal(signal.SIGKILL)
    out, err = proc.communicate()
    assert proc.returncode == -signal.SIGKILL, err.decode()
    out = first + out
    lines = out.decode().splitlines()
    if lines and not out.endswith(b"\n"):
        lines.pop()  # a line torn by the kill was never a complete acknowledgement
    acks = [line.split() for line in lines]
    assert all(len(a) == 2 for a in acks), out
    return [(kind, int(n)) for kind, n in acks]


def _has_schema(db: Path) -> bool:
    """Did the store's set-up finish? A kill between two migration steps leaves the log
    table at an older schema version, which a read-only open (``check_integrity``) refuses;
    one after the last step but before the projections' first fold (its own transaction,
    which fills ``projector``) leaves no projection table yet, which the next open creates.
    Opened read-write (never created): a WAL the kill left behind needs a writer's recovery
    before a read, which a read-only connection cannot run."""
    conn = apsw.Connection(str(db), flags=apsw.SQLITE_OPEN_READWRITE)
    try:
        if int(conn.execute("PRAGMA user_version").fetchall()[0][0]) != SCHEMA_VERSION:
            return False
        return bool(conn.execute("SELECT count(*) FROM projector").fetchall()[0][0])
    finally:
        conn.close()


def _resumes_from_its_checkpoint(db: Path, seq: int, where: str) -> None:
    """The worker writes a run checkpoint every 16 rows: whatever instant the kill hit, the
    one stored stands for the log, and the handle resumed from it is a full fold's."""
    with fe.Store.open(db) as store:
        if seq > 16:
            with store.log.snapshot() as cur:
                assert checkpoint.load(cur, "run", RunState(run_id="run")), where
        assert columns(store.resume_run("run")._state) == columns(full_fold(store, "run")), where


@pytest.mark.parametrize(("durability", "iterations"), [("normal", ITERATIONS), ("full", ITERATIONS // 3)])
def test_sigkill_at_random_instants_loses_nothing_acknowledged(
    db_path: Path, durability: str, iterations: int
) -> None:
    seed = int.from_bytes(os.urandom(4), "big")
    rng = random.Random(seed)
    acknowledged_total = 0
    late_kills = 0
    for iteration in range(iterations):
        early = rng.random() < 0.2
        late_kills += not early
        acks = _kill_at_random(db_path, rng, early, durability)
        acknowledged_total += len(acks)
        if not db_path.exists() or not _has_schema(db_path):  # killed before the schema committed
            assert not acks
            continue
        runs = check_integrity(str(db_path))
        rows = runs.get("run", [])
        by_entry = {r[3]: r for r in rows if r[3] is not None}
        generations = [r[4] for r in rows if r[5] == "recovered"]
        assert generations == list(range(1, len(generations) + 1)), f"seed {seed}"
        for kind, n in acks:
            if kind == "recover":
                assert n in generations, f"seed {seed} iteration {iteration}: generation {n} lost"
            else:
                assert by_entry[n][5] == KIND[kind], f"seed {seed} iteration {iteration}: {kind} {n}"
        if rows:
            _resumes_from_its_checkpoint(db_path, len(rows), f"seed {seed} iteration {iteration}")
    assert acknowledged_total >= late_kills  # each late kill came after an acknowledgement

    # resume_run + recover continue the run from whatever the last kill left
    with fe.Store.open(db_path) as store:
        rows = check_integrity(str(db_path))["run"]
        last_generation = max(r[4] for r in rows)
        unfinished = unfinished_entries(store, "run")
        run = store.resume_run("run")
        assert run.generation == last_generation
        assert run.recover(unfinished) == last_generation + 1
        path = "final"
        run.begin_step(path)
        run.invoke(path, 1, "op", ARTIFACT, "not-dispatched")
        run.result(path, 1, "succeeded", result=1)
        run.end_step(path, "succeeded")
        run.conclude("succeeded", outputs={"done": True})
        record = store.get_run_record("run")
        assert record["run"]["status"] == "succeeded"
        assert record["run"]["generation"] == last_generation + 1
        assert all(step["status"] == "ended" for step in record["steps"].values())
        assert store.resume_run("run").status == "succeeded"
        live = snapshot(store)
        store.rebuild_projections()  # what crashes left in the projections is exactly the log's fold
        assert snapshot(store) == live
    final = check_integrity(str(db_path))["run"]
    assert final[: len(rows)] == rows  # recovery appended; it rewrote nothing
    assert [r[5] for r in final[len(rows) :]] == [
        "recovered",
        "step-begun",
        "action-invoked",
        "action-result",
        "step-ended",
        "run-concluded",
    ]
    assert all(r[4] == last_generation + 1 for r in final[len(rows) :])
