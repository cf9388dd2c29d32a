"""gc beside live processes: appends keep flowing, and the report says what is left and why.

Issue 20, item 4: gc's ``wal_checkpoint(TRUNCATE)`` held the write lock while it waited
30 s for a reader's snapshot, stalling every writer, then reported success with nothing
truncated. Here a reader process holds a snapshot and a writer process times each of its
appends while gc runs in this process: no append may wait 2 s, and the report must say
that the WAL was not truncated because of a reader (so the deletion guarantee is not met
yet); once the reader has ended, gc completes. Bad arguments are refused before anything
runs, and a driver error leaves gc as a StoreError.
"""

from __future__ import annotations

import json
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner

import forkline_es as fe
from forkline_es.cli import main
from forkline_es.log.sqlite import translate
from forkline_es.testing.processes import SnapshotReader

LATER = datetime.now(UTC) + timedelta(days=1)

_WRITER = """
import os, sys, time
import forkline_es as fe
db, stop = sys.argv[1], sys.argv[2]
with fe.Store.open(db) as store:
    run = store.start_run("gc/writer", run_id="writer")
    print("ready", flush=True)
    worst, n = 0.0, 0
    while not os.path.exists(stop):
        began = time.monotonic()
        try:
            run.begin_step(f"s/{n}", arguments={"i": n})
            n += 1
        except fe.Conflict:  # it waited its whole busy timeout
            run = store.resume_run("writer")
        worst = max(worst, time.monotonic() - began)
        time.sleep(0.001)
    print(n, worst, flush=True)
"""


def _filled(db: Path) -> None:
    """A store where eviction left a few thousand free pages for gc to give back."""
    with fe.Store.open(db) as store:
        for i in range(200):
            run = store.start_run("gc/old", inputs={"blob": f"{i}" * 20_000})
            run.conclude("succeeded", outputs={"blob": f"{i}" * 20_000})
        store.apply_retention(fe.RetentionPolicy(max_age="1h"), now=LATER)
        assert int(store.conn.execute("PRAGMA freelist_count").fetchall()[0][0]) > 1500


def test_gc_beside_a_reader_and_a_writer(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    _filled(db)
    stop = tmp_path / "stop"
    with SnapshotReader(db, "payload") as reader:
        writer = subprocess.Popen(
            [sys.executable, "-c", _WRITER, str(db), str(stop)], stdout=subprocess.PIPE, text=True
        )
        try:
            assert writer.stdout is not None
            assert writer.stdout.readline().strip() == "ready"
            with fe.Store.open(db) as store:
                report = store.gc()
                stop.touch()
                out, _ = writer.communicate(timeout=60)
                appended, worst = int(out.split()[0]), float(out.split()[1])
                assert writer.returncode == 0
                assert appended > 0
                assert worst < 2.0, f"an append waited {worst:.1f} s while gc ran"
                assert report.pages_after < report.pages_before  # the free pages went back meanwhile
                assert report.free_pages == 0
                assert not report.wal_truncated and not report.complete
                assert any(
                    "WAL not truncated" in why and "a reader holds a snapshot" in why
                    for why in report.not_done
                ), report.not_done
                assert report.to_dict()["complete"] is False
                reader.release()
                again = store.gc()
                assert again.complete and again.wal_truncated, again.not_done
                assert (tmp_path / "runs.db-wal").stat().st_size == 0
        finally:
            stop.touch()
            if writer.poll() is None:
                writer.kill()


def test_the_cli_says_what_gc_left_and_why(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        store.start_run("wf", inputs={"n": 1}).conclude("succeeded")
    reader = apsw.Connection(str(db_path))
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM log").fetchall()  # a snapshot, held
    try:
        with fe.Store.open(db_path) as store:
            store.start_run("wf", inputs={"n": 2})  # frames the reader's snapshot predates
        result = CliRunner().invoke(main, ["gc", "--db", str(db_path)])
        assert result.exit_code == 0, result.output
        assert "not done: WAL not truncated: a reader holds a snapshot" in result.stderr
        result = CliRunner().invoke(main, ["gc", "--db", str(db_path), "--json"])
        report = json.loads(result.stdout)
        assert report["complete"] is False and report["wal_truncated"] is False
        assert "a reader holds a snapshot" in report["not_done"][0]
    finally:
        reader.execute("ROLLBACK")
        reader.close()
    result = CliRunner().invoke(main, ["gc", "--db", str(db_path), "--json"])
    assert json.loads(result.stdout)["complete"] is True
    assert "not done" not in result.stderr


@pytest.mark.parametrize("grace", ["x", float("nan"), float("inf"), -1, -0.5, True, None, 10**400, [1]])
def test_gc_refuses_a_bad_grace_period_before_anything_runs(db_path: Path, grace: object) -> None:
    with fe.Store.open(db_path) as store:
        run = store.start_run("wf", inputs={"blob": "x" * 50_000})
        run.conclude("succeeded")
        store.evict_run(run.id, reason="test")
        free = store.conn.execute("PRAGMA freelist_count").fetchall()[0][0]
        assert free > 0
        with pytest.raises(fe.InvalidRequest) as info:
            store.gc(grace)  # type: ignore[arg-type]
        assert "artifact_grace_seconds" in str(info.value)
        assert store.conn.execute("PRAGMA freelist_count").fetchall()[0][0] == free  # no vacuum ran


def test_gc_accepts_whole_and_fractional_seconds(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        assert store.gc(0).complete
        assert store.gc(1.5).complete


def test_a_lock_that_outlasts_the_wait_is_a_store_error(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        run = store.start_run("wf", inputs={"blob": "x" * 50_000})
        run.conclude("succeeded")
        store.evict_run(run.id, reason="test")
        blocker = apsw.Connection(str(db_path))
        blocker.execute("BEGIN IMMEDIATE")  # another writer holds the write lock
        store.conn.set_busy_timeout(50)
        try:
            with pytest.raises(fe.StoreError) as info:
                store.gc()
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert "locked" in str(info.value) and "run it again" in str(info.value)


def test_a_full_disk_and_a_lock_are_store_errors_for_maintenance() -> None:
    full = translate(apsw.FullError("database or disk is full"), "gc", maintenance=True)
    assert isinstance(full, fe.StoreError) and "free some space" in str(full)
    busy = translate(apsw.BusyError("database is locked"), "gc", maintenance=True)
    assert isinstance(busy, fe.StoreError) and not isinstance(busy, fe.Conflict)
    assert isinstance(translate(apsw.BusyError("database is locked"), "append"), fe.Conflict)
