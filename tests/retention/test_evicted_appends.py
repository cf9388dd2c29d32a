"""An evicted run takes no more events (decisions: "Added in the second round").

A handle on a concluded run may still observe, add artifacts and record its manifest; once
another process evicts the run, each of those is ``run-not-retained`` and writes nothing: no
log row, no payload value, no projection row, no artifact file. The refusal is the log's own
trigger (``log_refuses_evicted_runs``), inside the append's transaction, so it holds for any
client: the Run handle, the Forkline RunRecorder, and a raw INSERT through apsw or sqlite3.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Final

import apsw
import pytest

import forkline_es as fe
from forkline_es.log.events import Observed, encode_body, kind_of
from forkline_es.log.rows import NewRow, row_digest
from forkline_es.retention.apply import EVICT_CHUNK

LATER = datetime.now(UTC) + timedelta(days=1)
_EVICT = (
    "import sys, forkline_es as fe\n"
    "with fe.Store.open(sys.argv[1]) as store:\n"
    "    store.evict_run(sys.argv[2], reason='evicted by another process')\n"
)
_CONCLUDE_AND_EVICT = (
    "import sys, forkline_es as fe\n"
    "with fe.Store.open(sys.argv[1]) as store:\n"
    "    store.resume_run(sys.argv[2]).conclude('succeeded')\n"
    "    store.evict_run(sys.argv[2], reason='evicted by another process')\n"
)


def in_another_process(script: str, db: Path | str, run_id: str) -> None:
    subprocess.run([sys.executable, "-c", script, str(db), run_id], check=True, timeout=120)


def concluded(store: fe.Store, run_id: str = "r1") -> fe.Run:
    """A concluded run with payload values, an artifact and an observation (no manifest yet)."""
    run = store.start_run("wf", run_id=run_id, inputs={"n": 1})
    run.begin_step("a", arguments={"x": 1})
    run.end_step("a", "succeeded", result={"ok": True})
    run.conclude("succeeded")
    run.add_artifact(b"first", "trace", name="first.txt")
    run.observe("before", 1.0)
    return run


def files(store: fe.Store) -> dict[str, int]:
    """Every file under the store's artifact folder (relative path -> size)."""
    root = store.artifact_files.root
    return {str(p.relative_to(root)): p.stat().st_size for p in root.rglob("*") if p.is_file()}


def state(store: fe.Store, run_id: str) -> dict[str, Any]:
    """Everything a refused append could have written: rows of every table, and the files."""
    conn = store.backend.cursor()
    catalogue = (
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
        "AND table_type = 'BASE TABLE'"
        if store.backend.dialect.name == "postgresql"
        else "SELECT name FROM sqlite_schema WHERE type = 'table'"
    )
    tables = [n for (n,) in conn.execute(catalogue).fetchall()]
    return {
        "tables": {t: conn.execute(f"SELECT * FROM {t} ORDER BY 1").fetchall() for t in tables},
        "run rows": conn.execute("SELECT count(*) FROM log WHERE run_id = ?", (run_id,)).fetchall(),
        "files": files(store),
    }


def test_appends_by_a_handle_on_a_run_another_process_evicted_are_refused_and_write_nothing(
    store: fe.Store, tmp_path: Path
) -> None:
    run = concluded(store)
    in_another_process(_EVICT, store.path, run.id)
    before = state(store, run.id)
    assert before["run rows"] == [(0,)]
    source = tmp_path / "report.txt"
    source.write_bytes(b"a new file")
    calls = {
        "observe": lambda: run.observe("after", 2.0),
        "observe, in a step": lambda: run.observe("after", 2.0, unit="s", step="a"),
        "add_artifact, bytes": lambda: run.add_artifact(b"new bytes", "trace", name="new.txt"),
        "add_artifact, a file": lambda: run.add_artifact(source, "report"),
        "record_manifest": lambda: run.record_manifest(config={"b": 2}),
    }
    for what, call in calls.items():
        with pytest.raises(fe.RunNotRetained) as info:
            call()
        assert info.value.code == "run-not-retained", what
        assert state(store, run.id) == before, what
    with pytest.raises(fe.RunNotRetained), run.batch():
        run.observe("in a batch", 3.0)
    assert state(store, run.id) == before
    with pytest.raises(fe.RunNotRetained):
        store.resume_run(run.id)
    assert [r.run_id for r in store.verify_all()] == []  # no rows of it: nothing to report


def test_a_forkline_recorder_whose_run_another_process_concluded_and_evicted_is_refused(
    db_path: Path,
) -> None:
    with fe.RunRecorder(db_path) as recorder:
        run_id = recorder.start_run("agent.py")
        recorder.log_event(run_id, "llm_call", {"prompt": "hi"})
        in_another_process(_CONCLUDE_AND_EVICT, db_path, run_id)
        before = state(recorder.store, run_id)
        with pytest.raises(fe.RunNotRetained):
            recorder.log_event(run_id, "llm_call", {"prompt": "again"})
        with pytest.raises(fe.RunNotRetained):
            recorder.end_run(run_id)
        assert state(recorder.store, run_id) == before
        assert recorder.get_events(run_id) == []


@pytest.mark.parametrize("driver", ["apsw", "sqlite3"])
@pytest.mark.parametrize("seq", [1, 5])
def test_a_raw_insert_for_an_evicted_run_is_refused(db_path: Path, driver: str, seq: int) -> None:
    with fe.Store.open(db_path) as store:
        concluded(store, "gone")
        concluded(store, "kept")
        store.evict_run("gone", reason="test")
        top = store.log.end_position()
    row = ("gone", seq, None, 0, "observed", "2026-01-01T00:00:00Z", f"k{seq}", "{}", "sha256:0", None)
    sql = (
        "INSERT INTO log (position, run_id, seq, entry, generation, kind, at, key, body, digest, prev) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    )
    if driver == "apsw":
        conn: Any = apsw.Connection(str(db_path))
        error: type[Exception] = apsw.ConstraintError
    else:
        conn = sqlite3.connect(db_path, isolation_level=None)
        error = sqlite3.IntegrityError
    try:
        before = conn.execute("SELECT * FROM log ORDER BY position").fetchall()
        with pytest.raises(error, match="run-not-retained"):
            conn.execute(sql, (top + 1, *row))
        assert conn.execute("SELECT * FROM log ORDER BY position").fetchall() == before
        conn.execute(sql, (top + 1, "fresh", 1, *row[2:]))  # the same row of a new run goes in
    finally:
        conn.close()


def test_the_log_refuses_with_run_not_retained_below_the_run_handle(mem_store: fe.Store) -> None:
    run = concluded(mem_store)
    last = mem_store._log_row(run.id, 6)
    assert last is not None
    mem_store.evict_run(run.id, reason="test")
    event = Observed(name="late", value=1.0)
    body, kind, at = encode_body(event), kind_of(event), "2026-01-01T00:00:00Z"
    digest = row_digest(run.id, 7, None, 0, kind, at, "late", last.digest, body)
    row = NewRow(run.id, 7, None, 0, kind, at, "late", body, digest, last.digest)
    with pytest.raises(fe.RunNotRetained, match="nothing was written"):
        mem_store.log.append([row])
    assert mem_store.backend.cursor().execute("SELECT count(*) FROM log").fetchall() == [(0,)]


def _without_the_guard(store: fe.Store) -> None:
    """The store as version-4 code wrote to it: appends to an evicted run went through."""
    store.conn.execute("DROP TRIGGER IF EXISTS log_refuses_evicted_runs")


_VERSION_4: Final = "a store as version-4 code wrote it (no evicted-run trigger): only SQLite files had one"


@pytest.mark.sqlite_only(_VERSION_4)
def test_resume_run_of_an_evicted_run_is_refused_even_with_rows_left(
    sqlite_store: fe.Store, db_path: Path
) -> None:
    store = sqlite_store
    run = concluded(store)
    _without_the_guard(store)
    in_another_process(_EVICT, db_path, run.id)
    run.observe("orphan", 1.0)  # the old bug: seq 7 of a run whose rows are gone
    assert store.conn.execute("SELECT seq FROM log WHERE run_id = ?", (run.id,)).fetchall() == [(7,)]
    with pytest.raises(fe.RunNotRetained):
        store.resume_run(run.id)


def test_after_the_tombstone_is_purged_a_reused_id_starts_an_empty_history(store: fe.Store) -> None:
    run = concluded(store)
    in_another_process(_EVICT, store.path, run.id)
    for call in (lambda: run.observe("late", 1.0), lambda: run.add_artifact(b"late", "trace")):
        with pytest.raises(fe.RunNotRetained):
            call()
    with pytest.raises(fe.Conflict, match="identities are never reused"):
        store.start_run("wf", run_id=run.id)
    assert store.purge_tombstones("0s", now=LATER) == 1
    again = store.start_run("other", run_id=run.id, inputs={"second": True})
    rows = store.backend.cursor().execute("SELECT seq, kind FROM log WHERE run_id = ?", (run.id,)).fetchall()
    assert rows == [(1, "run-started")]
    assert again._state.seq == 1
    assert len(store.get_run_record(run.id)["entries"]) == 1
    assert store.resume_run(run.id)._state.seq == 1
    assert [(r.run_id, r.ok) for r in store.verify_all()] == [(run.id, True)]


@pytest.mark.sqlite_only(_VERSION_4)
def test_rows_left_of_a_purged_eviction_are_never_inherited(sqlite_store: fe.Store, db_path: Path) -> None:
    """Rows a version-4 store took after an eviction whose record was then purged: no rule
    lets them go, so a start under their id is refused rather than inheriting them."""
    store = sqlite_store
    run = concluded(store)
    _without_the_guard(store)
    in_another_process(_EVICT, db_path, run.id)
    run.observe("orphan", 1.0)
    store.purge_tombstones("0s", now=LATER)
    with pytest.raises(fe.Conflict, match="choose another run_id"):
        store.start_run("wf", run_id=run.id)
    with pytest.raises(fe.RunNotFound, match="no start"):
        store.resume_run(run.id)
    assert store.conn.execute("SELECT seq FROM log WHERE run_id = ?", (run.id,)).fetchall() == [(7,)]
    own, report = store.verify_all()  # the store's report first: the guard was dropped
    assert own.run_id is None and {p.kind for p in own.problems} == {"trigger-missing"}
    assert report.run_id == run.id
    assert [(p.kind, p.seq) for p in report.problems][:1] == [("seq-gap", 1)]


_OBSERVE_UNTIL_EVICTED = (
    "import sys, forkline_es as fe\n"
    "with fe.Store.open(sys.argv[1]) as store:\n"
    "    run, acked = store.resume_run(sys.argv[2]), 0\n"
    "    try:\n"
    "        while acked < 100_000:\n"
    "            run.observe(f'beside/{acked}', float(acked))\n"
    "            acked += 1\n"
    "            if acked == 20:\n"
    "                print('observing', flush=True)\n"
    "    except fe.RunNotRetained:\n"
    "        print(acked, flush=True)\n"
)
_EVICT_AND_COUNT = (
    "import sys, forkline_es as fe\n"
    "with fe.Store.open(sys.argv[1]) as store:\n"
    "    print(store.evict_run(sys.argv[2], reason='evicted by another process').events)\n"
)


def test_a_run_longer_than_an_eviction_chunk_evicted_while_another_process_appends_to_it(
    store: fe.Store,
) -> None:
    """The eviction deletes a long run a chunk a statement, in one transaction; another
    process observing on the run meanwhile has each observation either counted in the
    eviction and deleted with the run, or refused: none is left behind."""
    run = store.start_run("wf", run_id="long")
    for i in range(EVICT_CHUNK // 2 + 5):
        with run.batch():
            run.begin_step(f"s/{i}", arguments={"i": i})
            run.end_step(f"s/{i}", "succeeded", result={"i": i})
    run.conclude("succeeded")
    cur = store.backend.cursor()
    recorded = int(cur.execute("SELECT count(*) FROM log WHERE run_id = ?", (run.id,)).fetchall()[0][0])
    assert recorded > EVICT_CHUNK
    observer = subprocess.Popen(
        [sys.executable, "-c", _OBSERVE_UNTIL_EVICTED, str(store.path), run.id],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert observer.stdout is not None and observer.stdout.readline() == "observing\n"
        evicted = subprocess.run(
            [sys.executable, "-c", _EVICT_AND_COUNT, str(store.path), run.id],
            check=True,
            capture_output=True,
            text=True,
            timeout=120,
        )
        acked = int(observer.communicate(timeout=120)[0])
    finally:
        observer.kill()
    assert observer.returncode == 0
    assert int(evicted.stdout) == recorded + acked  # every acknowledged observation went with the run
    for table in ("log", "entry", "step_view", "run_summary", "observation"):
        assert cur.execute(f"SELECT count(*) FROM {table} WHERE run_id = ?", (run.id,)).fetchall() == [(0,)]
    with pytest.raises(fe.RunNotRetained):
        store.get_run_record(run.id)
