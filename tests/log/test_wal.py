"""Python's sqlite3 module in the same process must not cost a single acknowledged event.

Its SQLite is another copy than apsw's; closing its last connection to our file deletes
the WAL our connection writes to (forkline_es/log/wal.py). These tests read the views
with ``sqlite3`` as issue 6 asks and go on recording in the same process, then count what
other processes see, after a clean exit and after ``kill -9``.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

import forkline_es as fe

_RECORD_READ_RECORD = """
import os, sqlite3, sys
import forkline_es as fe
db, kill = sys.argv[1], sys.argv[2] == "kill"
recorder = fe.RunRecorder(db_path=db)
run_id = recorder.start_run("main.py", run_id="r")
for i in range(50):
    recorder.log_event(run_id, "input", {"i": i})
peek = sqlite3.connect(db)
assert peek.execute("SELECT count(*) FROM events").fetchone()[0] == 50
peek.close()  # its SQLite now deletes the -wal our connection has open
for i in range(50, 100):
    recorder.log_event(run_id, "input", {"i": i})
    print(i, flush=True)  # acknowledged
if kill:
    os.kill(os.getpid(), 9)
recorder.end_run(run_id)
recorder.close()
"""


_COUNT = "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])"


def _count_elsewhere(db: Path, sql: str = "SELECT count(*) FROM events") -> int:
    """What another process counts (python's sqlite3 module there)."""
    out = subprocess.run(
        [sys.executable, "-c", _COUNT, str(db), sql], capture_output=True, text=True, check=True
    )
    return int(out.stdout)


@pytest.mark.parametrize("ending", ["clean", "kill"])
def test_reading_with_sqlite3_in_process_loses_nothing(tmp_path: Path, ending: str) -> None:
    db = tmp_path / "runs.db"
    done = subprocess.run(
        [sys.executable, "-c", _RECORD_READ_RECORD, str(db), ending], capture_output=True, text=True
    )
    acknowledged = [int(line) for line in done.stdout.split()]
    assert acknowledged == list(range(50, 100)), done.stderr
    assert done.returncode == (-signal.SIGKILL if ending == "kill" else 0), done.stderr
    assert _count_elsewhere(db) == 100
    with fe.Store.open(db) as store:
        assert [e["payload"]["i"] for e in fe.RunRecorder(db_path=db).get_events("r")] == list(range(100))
        assert store.verify_run("r").ok


def test_other_processes_see_every_append_made_after_the_peek(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    with fe.Store.open(db) as store:
        run = store.start_run("wf", run_id="r")
        peek = sqlite3.connect(db)
        peek.execute("SELECT count(*) FROM runs").fetchall()
        peek.close()
        assert not (tmp_path / "runs.db-wal").exists()  # what the other SQLite did
        run.begin_step("a")
        assert (tmp_path / "runs.db-wal").exists()  # a live WAL again, under its name
        assert _count_elsewhere(db, "SELECT count(*) FROM log WHERE run_id = 'r'") == 2


_CRASHED_WRITER = """
import os, sys
import forkline_es as fe
store = fe.Store.open(sys.argv[1])
store.start_run("wf", run_id="other")
os.kill(os.getpid(), 9)  # its frames stay in the -wal it made, not yet in the file
"""


def test_the_stale_connection_leaves_the_new_wal_of_another_process_alone(tmp_path: Path) -> None:
    """Closing our stale connection must not delete the files now at the -wal/-shm names."""
    db = tmp_path / "runs.db"
    with fe.Store.open(db) as store:
        store.start_run("wf", run_id="r")
        peek = sqlite3.connect(db)
        peek.execute("SELECT 1 FROM log").fetchall()
        peek.close()
        crashed = subprocess.run(
            [sys.executable, "-c", _CRASHED_WRITER, str(db)], capture_output=True, text=True
        )
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr
        assert (tmp_path / "runs.db-wal").stat().st_size > 0
        time.sleep(0.01)
        assert {r["id"] for r in store.list_runs()} == {"r", "other"}  # reconnected, WAL recovered
    with fe.Store.open(db) as again:
        assert {r["id"] for r in again.list_runs()} == {"r", "other"}


def test_an_untouched_wal_keeps_the_connection(tmp_path: Path) -> None:
    with fe.Store.open(tmp_path / "runs.db") as store:
        before = store.conn
        store.start_run("wf").conclude("succeeded")
        assert store.conn is before
        os.stat(tmp_path / "runs.db-wal")
