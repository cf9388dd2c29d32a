"""Importing a Forkline runs.db: the runs read back as they did, and bad sources write nothing.

Sources are written with the stdlib sqlite3 module in Forkline 0.5.0's schema (Recording
v0's tables plus its ``runs.forkline_version``), rows as Forkline writes them.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.cli.main import main
from forkline_es.compat import importer
from forkline_es.schema import run_record_schema

FORKLINE_DDL = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY,
    schema_version TEXT NOT NULL DEFAULT '0.1',
    forkline_version TEXT,
    entrypoint TEXT NOT NULL,
    started_at TEXT NOT NULL,
    ended_at TEXT,
    status TEXT,
    python_version TEXT NOT NULL,
    platform TEXT NOT NULL,
    cwd TEXT NOT NULL
);
CREATE TABLE events (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT,
    run_id TEXT NOT NULL,
    ts TEXT NOT NULL,
    type TEXT NOT NULL,
    payload TEXT NOT NULL,
    FOREIGN KEY (run_id) REFERENCES runs(run_id)
);
"""

ENV = ("3.11.7", "Linux-6.1-x86_64", "/home/me/project")


def forkline_db(path: Path, runs: list[dict[str, Any]], events: list[tuple[str, str, str, str]]) -> Path:
    """A Forkline runs.db: ``runs`` as dicts, ``events`` as (run_id, ts, type, payload text)."""
    conn = sqlite3.connect(path)
    conn.executescript(FORKLINE_DDL)
    for r in runs:
        conn.execute(
            "INSERT INTO runs (run_id, schema_version, forkline_version, entrypoint, started_at, ended_at, "
            "status, python_version, platform, cwd) VALUES (?, '1.0', '0.5.0', ?, ?, ?, ?, ?, ?, ?)",
            (r["run_id"], r["entrypoint"], r["started_at"], r.get("ended_at"), r.get("status"), *ENV),
        )
    conn.executemany("INSERT INTO events (run_id, ts, type, payload) VALUES (?, ?, ?, ?)", events)
    conn.commit()
    conn.close()
    return path


def sample(path: Path) -> Path:
    return forkline_db(
        path,
        [
            {
                "run_id": "a" * 32,
                "entrypoint": "examples/minimal.py",
                "started_at": "2026-01-01T12:00:00.100000+00:00",
                "ended_at": "2026-01-01T12:00:03.250000+00:00",
                "status": "success",
            },
            {"run_id": "b" * 32, "entrypoint": "agent.py", "started_at": "2026-01-01T12:00:01+00:00"},
            {
                "run_id": "c" * 32,
                "entrypoint": "agent.py",
                "started_at": "2026-01-01T13:00:00+00:00",
                "ended_at": "2026-01-01T13:00:01+00:00",
                "status": "error",
            },
        ],
        [
            ("a" * 32, "2026-01-01T12:00:01.000001+00:00", "input", '{"prompt":"hi","api_key":"sk-live-1"}'),
            ("b" * 32, "2026-01-01T12:00:01.500000+00:00", "input", '{"i": 1}'),
            ("a" * 32, "2026-01-01T12:00:02+00:00", "tool_call", '{"name": "search", "args": {"q": "x"}}'),
            ("a" * 32, "2026-01-01T12:00:03+00:00", "output", '{"text": "hello", "n": [1, 2.5, null]}'),
            ("c" * 32, "2026-01-01T13:00:00.5+00:00", "error", '"boom"'),
        ],
    )


def instant(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def source_rows(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    conn = sqlite3.connect(path)
    conn.row_factory = sqlite3.Row
    runs = [dict(r) for r in conn.execute("SELECT * FROM runs ORDER BY run_id")]
    events = [dict(r) for r in conn.execute("SELECT * FROM events ORDER BY event_id")]
    conn.close()
    return runs, events


def log_rows(store: fe.Store) -> list[tuple[Any, ...]]:
    return store.conn.execute("SELECT * FROM log ORDER BY position").fetchall()


def test_imported_runs_read_back_as_forkline_showed_them(tmp_path: Path) -> None:
    source = sample(tmp_path / "old.db")
    with fe.Store.open(tmp_path / "new.db") as store:
        report = fe.import_forkline(source, store)
        assert (report.runs, report.events, report.resumed) == (3, 5, 0)
        schema = run_record_schema()
        for run_id in ("a" * 32, "b" * 32, "c" * 32):
            jsonschema.validate(store.get_run_record(run_id), schema)
    runs, events = source_rows(source)
    with fe.RunRecorder(tmp_path / "new.db") as recorder:
        for run in runs:
            got = recorder.get_run(run["run_id"])
            assert got is not None
            for column in ("entrypoint", "status", "python_version", "platform", "cwd"):
                assert got[column] == run[column], column
            for column in ("started_at", "ended_at"):
                if run[column] is None:
                    assert got[column] is None
                else:
                    assert instant(got[column]) == instant(run[column])
            mine = recorder.get_events(run["run_id"])
            theirs = [e for e in events if e["run_id"] == run["run_id"]]
            assert [e["type"] for e in mine] == [e["type"] for e in theirs]
            assert [instant(e["ts"]) for e in mine] == [instant(e["ts"]) for e in theirs]
            expected = [json.loads(e["payload"]) for e in theirs]
            for e in expected:
                if isinstance(e, dict) and "api_key" in e:
                    e["api_key"] = "[REDACTED]"  # the default policy, as for new events
            assert [e["payload"] for e in mine] == expected
            ids = [e["event_id"] for e in mine]
            assert ids == sorted(ids)
    with fe.Store.open(tmp_path / "new.db") as store:
        run_c = store.get_run_record("c" * 32)["run"]
        assert (run_c["status"], run_c["code"]) == ("failed", "error")
        assert store.get_run_record("b" * 32)["run"]["status"] == "active"
        assert store.check_projections() == []
        assert all(r.ok for r in store.verify_all())
    assert b"sk-live-1" not in (tmp_path / "new.db").read_bytes()


def test_importing_again_repeats_nothing(tmp_path: Path) -> None:
    source = sample(tmp_path / "old.db")
    with fe.Store.open(tmp_path / "new.db") as store:
        fe.import_forkline(source, store)
        before = log_rows(store)
        again = fe.import_forkline(source, store)
        assert (again.runs, again.resumed) == (3, 3)
        assert log_rows(store) == before


def test_an_interrupted_import_is_finished_by_running_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = sample(tmp_path / "old.db")
    with fe.Store.open(tmp_path / "whole.db") as store:
        fe.import_forkline(source, store)
        whole = [(r[1], r[2], r[5], r[6], r[7], r[8]) for r in log_rows(store)]
    record_run = importer._record_run
    done: list[str] = []

    def crash_after_one(*args: Any) -> None:
        if done:
            raise KeyboardInterrupt  # the process dies between two runs
        record_run(*args)
        done.append(args[2].run_id)

    monkeypatch.setattr(importer, "_record_run", crash_after_one)
    with fe.Store.open(tmp_path / "new.db") as store, pytest.raises(KeyboardInterrupt):
        fe.import_forkline(source, store)
    monkeypatch.setattr(importer, "_record_run", record_run)
    with fe.Store.open(tmp_path / "new.db") as store:
        assert [s["id"] for s in store.list_runs()] == done
        report = fe.import_forkline(source, store)
        assert report.resumed == 1
        # the same rows as one uninterrupted import, run by run (positions aside)
        rows = [(r[1], r[2], r[5], r[6], r[7], r[8]) for r in log_rows(store)]
        assert sorted(rows) == sorted(whole)
        assert store.check_projections() == []


def test_an_open_run_imported_earlier_receives_what_the_source_added_since(tmp_path: Path) -> None:
    source = sample(tmp_path / "old.db")
    with fe.Store.open(tmp_path / "new.db") as store:
        fe.import_forkline(source, store)
        conn = sqlite3.connect(source)
        conn.execute(
            "INSERT INTO events (run_id, ts, type, payload) VALUES (?, ?, 'more', '[1]')",
            ("b" * 32, "2026-01-01T12:00:09+00:00"),
        )
        conn.execute(
            "UPDATE runs SET ended_at = '2026-01-01T12:00:10+00:00', status = 'success' WHERE run_id = ?",
            ("b" * 32,),
        )
        conn.commit()
        conn.close()
        assert fe.import_forkline(source, store).resumed == 3
    with fe.RunRecorder(tmp_path / "new.db") as recorder:
        assert [e["payload"] for e in recorder.get_events("b" * 32)] == [{"i": 1}, [1]]
        run = recorder.get_run("b" * 32)
        assert run is not None and run["status"] == "success"
        assert instant(run["ended_at"]) == instant("2026-01-01T12:00:10+00:00")


def test_a_source_changed_after_its_run_was_imported_and_concluded_is_a_conflict(tmp_path: Path) -> None:
    source = sample(tmp_path / "old.db")
    with fe.Store.open(tmp_path / "new.db") as store:
        fe.import_forkline(source, store)
        before = log_rows(store)
        conn = sqlite3.connect(source)
        late = (
            "INSERT INTO events (run_id, ts, type, payload) VALUES (?, '2026-01-01T12:00:09+00:00', ?, '{}')"
        )
        conn.execute(late, ("a" * 32, "late"))  # Forkline lets a run take events after end_run
        conn.execute(late, ("b" * 32, "more"))
        conn.execute("UPDATE runs SET status = 'failure' WHERE run_id = ?", ("c" * 32,))
        conn.commit()
        conn.close()
        with pytest.raises(fe.Conflict) as refused:
            fe.import_forkline(source, store)
        assert "added to the source after the run was imported and concluded" in str(refused.value)
        assert "imported as failed, the source now says 'failure'" in str(refused.value)
        assert log_rows(store) == before  # not even run b's new event, which alone would fit


BAD = {
    "orphan event": ([], [("nobody", "2026-01-01T12:00:00+00:00", "input", "{}")], "no such run"),
    "NaN payload": (
        [{"run_id": "r", "entrypoint": "x.py", "started_at": "2026-01-01T12:00:00+00:00"}],
        [("r", "2026-01-01T12:00:00+00:00", "input", '{"x": NaN}')],
        "NaN is not standard JSON",
    ),
    "unknown status": (
        [{"run_id": "r", "entrypoint": "x.py", "started_at": "2026-01-01T12:00:00+00:00", "status": "meh"}],
        [],
        "status 'meh' has no engine outcome",
    ),
    "bad timestamp": (
        [{"run_id": "r", "entrypoint": "x.py", "started_at": "yesterday"}],
        [],
        "is not an ISO 8601 timestamp",
    ),
    "timestamp out of range": (
        [{"run_id": "r", "entrypoint": "x.py", "started_at": "0001-01-01T00:00:00+01:00"}],
        [],
        "outside the years 0001-9999",
    ),
    "empty entrypoint": (  # Forkline's NOT NULL lets '' through; the engine's workflow is nonempty
        [{"run_id": "r", "entrypoint": "", "started_at": "2026-01-01T12:00:00+00:00"}],
        [],
        "entrypoint '' is not a nonempty string",
    ),
    "empty run id": (
        [{"run_id": "", "entrypoint": "x.py", "started_at": "2026-01-01T12:00:00+00:00"}],
        [],
        "run id '' is not a nonempty string",
    ),
    "bad event timestamp": (
        [{"run_id": "r", "entrypoint": "x.py", "started_at": "2026-01-01T12:00:00+00:00"}],
        [("r", "soon", "input", "{}")],
        "ts 'soon' is not an ISO 8601 timestamp",
    ),
    "empty event type": (
        [{"run_id": "r", "entrypoint": "x.py", "started_at": "2026-01-01T12:00:00+00:00"}],
        [("r", "2026-01-01T12:00:00+00:00", "", "{}")],
        "event_type must be a nonempty string",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_source_that_cannot_be_carried_is_refused_whole(tmp_path: Path, case: str) -> None:
    runs, events, problem = BAD[case]
    good = {"run_id": "g", "entrypoint": "ok.py", "started_at": "2026-01-01T11:00:00+00:00"}
    source = forkline_db(tmp_path / "old.db", [good, *runs], events)
    with fe.Store.open(tmp_path / "new.db") as store:
        with pytest.raises(fe.InvalidRequest) as refused:
            fe.import_forkline(source, store)
        assert problem in str(refused.value)
        assert "nothing was written" in str(refused.value)
        assert log_rows(store) == []  # not even the good run


def test_a_long_list_of_problems_is_cut_after_ten(tmp_path: Path) -> None:
    events = [("nobody", "2026-01-01T12:00:00+00:00", "input", "{}")] * 12
    source = forkline_db(tmp_path / "old.db", [], events)
    with fe.Store.open(tmp_path / "new.db") as store, pytest.raises(fe.InvalidRequest) as refused:
        fe.import_forkline(source, store)
    message = str(refused.value)
    assert message.count("no such run") == 10 and message.endswith(" (and 2 more)")
    assert "event 10 (run nobody)" in message and "event 11 (run nobody)" not in message


def test_a_run_with_a_status_but_no_end_time_ends_at_its_last_event(tmp_path: Path) -> None:
    """Forkline's columns allow it (a hand-edited or half-written row): the run is concluded
    as its status says, no earlier than anything it recorded."""
    source = forkline_db(
        tmp_path / "old.db",
        [
            {
                "run_id": "r",
                "entrypoint": "x.py",
                "started_at": "2026-01-01T12:00:00+00:00",
                "status": "failure",
            }
        ],
        [
            ("r", "2026-01-01T12:00:05+00:00", "input", "{}"),
            ("r", "2026-01-01T12:00:07+00:00", "output", "{}"),
        ],
    )
    with fe.Store.open(tmp_path / "new.db") as store:
        fe.import_forkline(source, store)
    with fe.RunRecorder(tmp_path / "new.db") as recorder:
        run = recorder.get_run("r")
        assert run is not None and run["status"] == "failure"
        assert instant(run["ended_at"]) == instant("2026-01-01T12:00:07+00:00")


def test_an_environment_column_left_null_stays_null(tmp_path: Path) -> None:
    """A source whose schema lets ``cwd`` be NULL: the run shows NULL, not the text 'None'."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript(FORKLINE_DDL.replace("cwd TEXT NOT NULL", "cwd TEXT"))
    conn.execute(
        "INSERT INTO runs (run_id, entrypoint, started_at, python_version, platform, cwd) "
        "VALUES ('r', 'x.py', '2026-01-01T12:00:00+00:00', ?, ?, NULL)",
        ENV[:2],
    )
    conn.commit()
    conn.close()
    with fe.Store.open(tmp_path / "new.db") as store:
        fe.import_forkline(path, store)
    with fe.RunRecorder(tmp_path / "new.db") as recorder:
        run = recorder.get_run("r")
        assert run is not None and (run["python_version"], run["platform"], run["cwd"]) == (*ENV[:2], None)


def test_naive_timestamps_are_utc_whatever_the_local_zone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Forkline writes UTC; a timestamp without an offset is read as UTC, not as local time."""
    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        source = forkline_db(
            tmp_path / "old.db",
            [{"run_id": "r", "entrypoint": "x.py", "started_at": "2026-01-01T12:00:00"}],
            [("r", "2026-01-01T12:00:01.5", "input", "{}")],
        )
        with fe.Store.open(tmp_path / "new.db") as store:
            fe.import_forkline(source, store)
        with fe.RunRecorder(tmp_path / "new.db") as recorder:
            assert (recorder.get_run("r") or {})["started_at"] == "2026-01-01T12:00:00Z"
            assert [e["ts"] for e in recorder.get_events("r")] == ["2026-01-01T12:00:01.5Z"]
    finally:
        monkeypatch.undo()
        time.tzset()


def test_runs_started_out_of_id_order_keep_their_own_events(tmp_path: Path) -> None:
    source = forkline_db(
        tmp_path / "old.db",
        [
            {"run_id": "z", "entrypoint": "first.py", "started_at": "2026-01-01T10:00:00+00:00"},
            {"run_id": "a", "entrypoint": "second.py", "started_at": "2026-01-01T11:00:00+00:00"},
        ],
        [
            ("z", "2026-01-01T10:00:01+00:00", "input", '{"run": "z"}'),
            ("a", "2026-01-01T11:00:01+00:00", "input", '{"run": "a"}'),
            ("z", "2026-01-01T11:00:02+00:00", "output", '{"run": "z"}'),
        ],
    )
    with fe.Store.open(tmp_path / "new.db") as store:
        assert fe.import_forkline(source, store).events == 3
    with fe.RunRecorder(tmp_path / "new.db") as recorder:
        assert [e["payload"] for e in recorder.get_events("z")] == [{"run": "z"}] * 2
        assert [e["payload"] for e in recorder.get_events("a")] == [{"run": "a"}]


def test_an_id_the_store_evicted_is_a_conflict_and_nothing_is_written(tmp_path: Path) -> None:
    source = sample(tmp_path / "old.db")
    with fe.Store.open(tmp_path / "new.db") as store:
        store.start_run("mine", run_id="b" * 32).conclude("succeeded")
        store.evict_run("b" * 32, reason="test")
        before = log_rows(store)
        with pytest.raises(fe.Conflict, match="the store evicted a run of that id") as refused:
            fe.import_forkline(source, store)
        assert "nothing was written" in str(refused.value)
        assert log_rows(store) == before  # not even run a, which comes first


def test_a_run_concluded_in_the_store_after_its_import_is_final(tmp_path: Path) -> None:
    """Even when the source later agrees: the store's conclusion was not the import's."""
    source = sample(tmp_path / "old.db")
    with fe.Store.open(tmp_path / "new.db") as store:
        fe.import_forkline(source, store)
    with fe.RunRecorder(tmp_path / "new.db") as recorder:
        recorder.end_run("b" * 32, "success")
    conn = sqlite3.connect(source)
    conn.execute(
        "UPDATE runs SET status = 'success', ended_at = '2026-01-01T12:00:09+00:00' WHERE run_id = ?",
        ("b" * 32,),
    )
    conn.commit()
    conn.close()
    with fe.Store.open(tmp_path / "new.db") as store:
        before = log_rows(store)
        with pytest.raises(fe.Conflict) as refused:
            fe.import_forkline(source, store)
        assert f"run {'b' * 32}: concluded in the store since it was imported (not by the import)" in str(
            refused.value
        )
        assert log_rows(store) == before


def test_a_source_run_that_lost_its_status_since_its_import_is_a_conflict_saying_so(tmp_path: Path) -> None:
    """The import concluded it; the source now has no status: the message says that, not
    that something other than the import concluded it."""
    source = sample(tmp_path / "old.db")
    with fe.Store.open(tmp_path / "new.db") as store:
        fe.import_forkline(source, store)
        before = log_rows(store)
        conn = sqlite3.connect(source)
        conn.execute("UPDATE runs SET status = NULL, ended_at = NULL WHERE run_id = ?", ("a" * 32,))
        conn.commit()
        conn.close()
        with pytest.raises(fe.Conflict) as refused:
            fe.import_forkline(source, store)
        assert f"run {'a' * 32}: imported as succeeded, the source now has no status" in str(refused.value)
        assert "not by the import" not in str(refused.value)
        assert log_rows(store) == before


def test_a_source_forkline_crashed_while_writing_is_refused_untouched(tmp_path: Path) -> None:
    """A hot journal is Forkline's to roll back: opening the source for writing would roll it
    back into the file (and delete the journal). Read-only, the import refuses instead."""
    live, crashed = tmp_path / "live", tmp_path / "crashed"
    live.mkdir()
    crashed.mkdir()
    forkline_db(
        live / "runs.db", [{"run_id": "r", "entrypoint": "x.py", "started_at": "2026-01-01T12:00:00"}], []
    )
    conn = sqlite3.connect(live / "runs.db", isolation_level=None)
    conn.execute("PRAGMA cache_size = 1")  # uncommitted pages spill into the file
    conn.execute("BEGIN")
    for _ in range(500):
        conn.execute(
            "INSERT INTO events (run_id, ts, type, payload) VALUES ('r', '2026-01-01T12:00:01', 'x', ?)",
            ("y" * 500,),
        )
    for name in ("runs.db", "runs.db-journal"):  # the files as a kill -9 would leave them
        (crashed / name).write_bytes((live / name).read_bytes())
    conn.execute("ROLLBACK")
    conn.close()
    untouched = {p.name: p.read_bytes() for p in crashed.iterdir()}
    with fe.Store.open(tmp_path / "new.db") as store:
        with pytest.raises(fe.InvalidRequest, match="not a readable SQLite database"):
            fe.import_forkline(crashed / "runs.db", store)
        assert store.list_runs() == []
    assert {p.name: p.read_bytes() for p in crashed.iterdir()} == untouched


def test_what_is_not_a_forkline_database_is_refused(tmp_path: Path) -> None:
    with fe.Store.open(tmp_path / "new.db") as store:
        with pytest.raises(fe.InvalidRequest, match="no Forkline database"):
            fe.import_forkline(tmp_path / "missing.db", store)
        store.start_run("w")
        with pytest.raises(fe.InvalidRequest, match=r"not a Forkline database"):
            fe.import_forkline(tmp_path / "new.db", store)  # ours: views, not Forkline's tables
        (tmp_path / "text.db").write_text("hello")
        with pytest.raises(fe.InvalidRequest):
            fe.import_forkline(tmp_path / "text.db", store)


def test_a_run_id_the_store_holds_for_another_run_is_a_conflict(tmp_path: Path) -> None:
    source = sample(tmp_path / "old.db")
    with fe.Store.open(tmp_path / "new.db") as store:
        store.start_run("mine", run_id="b" * 32)
        before = log_rows(store)
        with pytest.raises(fe.Conflict, match="already holds another run"):
            fe.import_forkline(source, store)
        assert log_rows(store) == before


@pytest.mark.parametrize("opener", [fe.RunRecorder, fe.Store.open], ids=["RunRecorder", "Store.open"])
def test_opening_a_forkline_file_says_how_to_import_it(tmp_path: Path, opener: Any) -> None:
    source = sample(tmp_path / "runs.db")
    untouched = source.read_bytes()
    hint = f"mv {source} {source}.forkline && forkline-es --db {source} import-forkline"
    with pytest.raises(fe.StoreError, match=re.escape(hint)):
        opener(source)
    assert source.read_bytes() == untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs.db"]


def test_a_runs_table_alone_is_not_a_forkline_database(tmp_path: Path) -> None:
    """Recording v0 is both tables: a runs table with Forkline's columns and no events table
    is someone else's file, neither imported nor answered with the import hint."""
    path = tmp_path / "runs.db"
    with sqlite3.connect(path) as conn:
        conn.executescript(FORKLINE_DDL.split("CREATE TABLE events")[0])
    conn.close()
    with pytest.raises(fe.StoreError, match="another application") as refused:
        fe.Store.open(path)
    assert "import-forkline" not in str(refused.value)
    with (
        fe.Store.open(tmp_path / "new.db") as store,
        pytest.raises(fe.InvalidRequest, match=r"not a Forkline"),
    ):
        fe.import_forkline(path, store)


def test_a_folder_is_refused_as_a_folder_not_as_a_forkline_file(tmp_path: Path) -> None:
    """SQLite cannot open a folder at all: that says nothing about who wrote it."""
    with pytest.raises(fe.StoreError, match="is a directory") as refused:
        fe.Store.open(tmp_path)
    assert "import-forkline" not in str(refused.value)


def test_refusing_a_foreign_wal_database_leaves_no_file_beside_it(tmp_path: Path) -> None:
    """Checking who wrote a refused file must not create its -wal and -shm, which a
    read-only connection could not remove again."""
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE t (x)")
    conn.commit()
    conn.close()
    untouched = path.read_bytes()
    with pytest.raises(fe.StoreError, match="another application"):
        fe.Store.open(path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]
    assert path.read_bytes() == untouched


def test_another_applications_database_is_refused_saying_what_to_pass(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE t (x)")
    conn.close()
    untouched = path.read_bytes()
    with pytest.raises(fe.StoreError, match=r"another application \(tables of its own, no application_id\)"):
        fe.Store.open(path)
    assert path.read_bytes() == untouched


def test_the_command_line_on_a_forkline_file_says_how_to_import_it(tmp_path: Path) -> None:
    source = sample(tmp_path / "runs.db")
    untouched = source.read_bytes()
    for args in (["runs"], ["demo"]):
        result = CliRunner().invoke(main, ["--db", str(source), *args])
        assert result.exit_code == 2
        assert f"import-forkline {source}.forkline" in result.output
    assert source.read_bytes() == untouched


def test_the_command_line_imports_and_refuses_with_exit_codes(tmp_path: Path) -> None:
    source = sample(tmp_path / "old.db")
    db = str(tmp_path / "new.db")
    result = CliRunner().invoke(main, ["--db", db, "import-forkline", str(source), "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"source": str(source), "runs": 3, "events": 5, "resumed": 0}
    refused = CliRunner().invoke(main, ["import-forkline", db, "--db", str(tmp_path / "other.db")])
    assert refused.exit_code == 2
    assert "invalid-request" in refused.output
    assert list(tmp_path.glob("other.db*")) == []  # "nothing was written": not even a new file


def test_a_refused_import_into_a_new_path_leaves_no_database(tmp_path: Path) -> None:
    source = forkline_db(tmp_path / "old.db", [], [("nobody", "2026-01-01T12:00:00+00:00", "input", "{}")])
    result = CliRunner().invoke(main, ["--db", str(tmp_path / "new.db"), "import-forkline", str(source)])
    assert result.exit_code == 2 and "no such run" in result.output
    assert list(tmp_path.glob("new.db*")) == []


def test_a_refused_import_into_an_existing_database_leaves_it_as_it_was(tmp_path: Path) -> None:
    """Only a database the command itself created is removed on a refusal."""
    db = tmp_path / "mine.db"
    with fe.Store.open(db) as store:
        store.start_run("wf", run_id="kept").conclude("succeeded")
    source = forkline_db(tmp_path / "old.db", [], [("nobody", "2026-01-01T12:00:00+00:00", "input", "{}")])
    result = CliRunner().invoke(main, ["--db", str(db), "import-forkline", str(source)])
    assert result.exit_code == 2 and "no such run" in result.output
    with fe.Store.open(db) as store:
        assert [s["id"] for s in store.list_runs()] == ["kept"]


def test_the_text_says_how_many_runs_an_earlier_import_began(tmp_path: Path) -> None:
    source = sample(tmp_path / "old.db")
    db = tmp_path / "new.db"
    args = ["--db", str(db), "import-forkline", str(source)]
    first = CliRunner().invoke(main, args)
    assert first.output == f"imported 3 runs, 5 events from {source} into {db}\n"
    again = CliRunner().invoke(main, args)
    assert again.exit_code == 0
    assert (
        again.output == f"imported 3 runs (3 begun by an earlier import), 5 events from {source} into {db}\n"
    )


def big_source(path: Path, runs: int, events: int) -> Path:
    return forkline_db(
        path,
        [
            {
                "run_id": f"run-{r:04d}",
                "entrypoint": "agent.py",
                "started_at": f"2026-01-01T10:{r // 60 % 60:02d}:{r % 60:02d}+00:00",
                "ended_at": f"2026-01-01T11:{r // 60 % 60:02d}:{r % 60:02d}+00:00",
                "status": "success",
            }
            for r in range(runs)
        ],
        [
            (f"run-{r:04d}", f"2026-01-01T10:30:{e % 60:02d}+00:00", "step", json.dumps({"r": r, "e": e}))
            for e in range(events)
            for r in range(runs)
        ],
    )


def content(store: fe.Store) -> list[tuple[Any, ...]]:
    """The log as its runs hold it, positions aside."""
    return sorted(store.conn.execute("SELECT run_id, seq, entry, kind, at, key, body FROM log").fetchall())


def started_runs(db: Path) -> int:
    """Runs begun in ``db`` so far, read beside the writer (WAL); 0 before the schema exists."""
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
        try:
            return int(conn.execute("SELECT count(*) FROM log WHERE seq = 1").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def test_sigkill_during_an_import_leaves_whole_runs_and_a_second_import_finishes(tmp_path: Path) -> None:
    source = big_source(tmp_path / "old.db", runs=150, events=20)
    with fe.Store.open(tmp_path / "clean.db") as store:
        fe.import_forkline(source, store)
        clean = content(store)
    rng = random.Random(int.from_bytes(os.urandom(4), "big"))
    killed_midway = 0
    for attempt in range(3):
        db = tmp_path / f"killed-{attempt}.db"
        command = ["--db", str(db), "import-forkline", str(source)]
        proc = subprocess.Popen(
            [sys.executable, "-c", "from forkline_es.cli.main import main; main()", *command],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        target = rng.randint(1, 120)
        while proc.poll() is None and started_runs(db) < target:
            time.sleep(0.002)
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
        with fe.Store.open(db) as store:
            per_run = dict(
                store.conn.execute(
                    "SELECT run_id, count(*) FROM log WHERE kind = 'forkline-logged' GROUP BY run_id"
                ).fetchall()
            )
            started = [r for (r,) in store.conn.execute("SELECT run_id FROM log WHERE seq = 1")]
            assert all(per_run.get(r, 0) in (0, 20) for r in started), "a run's events are written whole"
            killed_midway += proc.returncode == -signal.SIGKILL and len(started) < 150
            fe.import_forkline(source, store)
            assert content(store) == clean
            assert store.check_projections() == []
    assert killed_midway > 0


_keys = st.sampled_from(["prompt", "api_key", "max_tokens", "author", "password", "x", "nested"])
_json: st.SearchStrategy[Any] = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys, inner, max_size=3),
    max_leaves=8,
)
_source_runs = st.lists(
    st.tuples(st.sampled_from([None, "success", "failure", "error"]), st.lists(_json, max_size=4)),
    max_size=4,
)


@settings(max_examples=40, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(runs=_source_runs, seed=st.randoms(use_true_random=False))
def test_any_source_reads_back_redacted_in_order_and_imports_once(
    tmp_path_factory: pytest.TempPathFactory, runs: list[tuple[str | None, list[Any]]], seed: random.Random
) -> None:
    folder = tmp_path_factory.mktemp("import")
    rows = [
        {
            "run_id": f"r{i}",
            "entrypoint": "agent.py",
            "started_at": f"2026-01-01T10:00:0{i}+00:00",
            "ended_at": None if status is None else f"2026-01-01T11:00:0{i}+00:00",
            "status": status,
        }
        for i, (status, _) in enumerate(runs)
    ]
    events = [
        (f"r{i}", f"2026-01-01T10:30:{n:02d}.5+00:00", f"t{n}", json.dumps(p))
        for i, (_, payloads) in enumerate(runs)
        for n, p in enumerate(payloads)
    ]
    seed.shuffle(events)  # Forkline interleaves runs' events in event_id order
    source = forkline_db(folder / "old.db", rows, events)
    policy = fe.RedactionPolicy.default()
    with fe.Store.open(folder / "new.db") as store:
        report = fe.import_forkline(source, store)
        assert (report.runs, report.events) == (len(runs), len(events))
        before = content(store)
        assert fe.import_forkline(source, store).resumed == len(runs)
        assert content(store) == before
    with fe.RunRecorder(folder / "new.db") as recorder:
        for i, (status, _) in enumerate(runs):
            run = recorder.get_run(f"r{i}")
            assert run is not None and run["status"] == status
            theirs = [e for e in events if e[0] == f"r{i}"]  # in event_id order: as inserted
            mine = recorder.get_events(f"r{i}")
            assert [(e["type"], instant(e["ts"])) for e in mine] == [
                (t, instant(ts)) for _, ts, t, _ in theirs
            ]
            assert [e["payload"] for e in mine] == [policy.redact(json.loads(p)) for *_, p in theirs]


def test_a_payload_nested_too_deeply_is_a_listed_problem_and_a_big_integer_is_a_value(tmp_path: Path) -> None:
    runs = [{"run_id": "r", "entrypoint": "x.py", "started_at": "2026-01-01T12:00:00+00:00"}]
    deep = "[" * 100_000 + "]" * 100_000
    source = forkline_db(tmp_path / "old.db", runs, [("r", "2026-01-01T12:00:01+00:00", "t", deep)])
    with fe.Store.open(tmp_path / "new.db") as store:
        with pytest.raises(fe.InvalidRequest, match="nested too deeply"):
            fe.import_forkline(source, store)
        assert log_rows(store) == []
    big = "-" + "7" * 5000
    source = forkline_db(tmp_path / "big.db", runs, [("r", "2026-01-01T12:00:01+00:00", "t", f"[{big}]")])
    with fe.Store.open(tmp_path / "new.db") as store:
        fe.import_forkline(source, store)
        with fe.RunRecorder(tmp_path / "new.db") as recorder:
            payload = recorder.get_events("r")[0]["payload"]
            assert fe.canonical_json(payload) == f"[{big}]".encode()  # exact digits, past 4,300
