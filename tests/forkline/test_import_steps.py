"""``import-forkline`` of a Forkline step store (``forkline.db``): runs as SQLiteStore records them."""

from __future__ import annotations

import hashlib
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import forkline_es as fe
from forkline_es.forkline import SQLiteStore

# Forkline 0.5.0's step-store schema (SQLiteStore._init_db), the columns the importer reads.
SCHEMA = """
CREATE TABLE runs (
    run_id TEXT PRIMARY KEY, created_at TEXT NOT NULL, forkline_version TEXT, schema_version TEXT
);
CREATE TABLE steps (
    step_id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, idx INTEGER NOT NULL,
    name TEXT NOT NULL, started_at TEXT NOT NULL, ended_at TEXT
);
CREATE TABLE events (
    event_id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, step_idx INTEGER NOT NULL,
    type TEXT NOT NULL, payload_json TEXT NOT NULL, created_at TEXT NOT NULL
);
"""
T = "2026-01-01T12:00:{:02d}.000001+00:00"


def step_store(path: Path, rows: dict[str, list[tuple[Any, ...]]]) -> Path:
    with sqlite3.connect(path) as conn:
        conn.executescript(SCHEMA)
        conn.executemany("INSERT INTO runs VALUES (?, ?, '0.5.0', '1.0')", rows.get("runs", []))
        conn.executemany(
            "INSERT INTO steps (run_id, idx, name, started_at, ended_at) VALUES (?, ?, ?, ?, ?)",
            rows.get("steps", []),
        )
        conn.executemany(
            "INSERT INTO events (run_id, step_idx, type, payload_json, created_at) VALUES (?, ?, ?, ?, ?)",
            rows.get("events", []),
        )
    conn.close()
    return path


def traced(tmp_path: Path) -> Path:
    """What a Tracer writes for: step 0 "fetch" { input; step 1 "inner" { output } }."""
    return step_store(
        tmp_path / "forkline.db",
        {
            "runs": [("t1", T.format(0))],
            "steps": [
                ("t1", 0, "fetch", T.format(1), T.format(6)),
                ("t1", 1, "inner", T.format(3), T.format(5)),
            ],
            "events": [
                ("t1", 0, "input", '{"api_key": "sk-live-1", "q": 1}', T.format(2)),
                ("t1", 1, "output", '{"a": [1, 2]}', T.format(4)),
            ],
        },
    )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_step_store_becomes_step_store_runs_with_its_times(tmp_path: Path) -> None:
    source = traced(tmp_path)
    before = digest(source)
    target = tmp_path / "runs.db"
    with fe.Store.open(target) as store:
        report = fe.import_forkline(source, store)
    assert (report.runs, report.events, report.resumed) == (1, 2, 0)
    assert digest(source) == before  # only read
    with SQLiteStore(str(target)) as steps:
        run = steps.load_run("t1")
        assert run is not None
        assert run.created_at == "2026-01-01T12:00:00.000001Z"
        assert [(s.idx, s.name, s.started_at[17:19], (s.ended_at or "")[17:19]) for s in run.steps] == [
            (0, "fetch", "01", "06"),
            (1, "inner", "03", "05"),
        ]
        # Payloads pass the default policy on the way in, as for a runs.db.
        assert [[(e.type, e.payload) for e in s.events] for s in run.steps] == [
            [("input", {"api_key": "[REDACTED]", "q": 1})],
            [("output", {"a": [1, 2]})],
        ]
        steps.start_step("t1", 2, "continued")  # the imported run goes on like a recorded one
        record = steps.store.get_run_record("t1")
        assert [e.get("step", {}).get("path") for e in record["entries"][1:]] == ["0", "1", "1", "0", "2"]
        assert steps.store.verify_run("t1").ok


def test_importing_again_repeats_nothing_and_adds_what_is_new(tmp_path: Path) -> None:
    source = traced(tmp_path)
    with fe.Store.open(tmp_path / "runs.db") as store:
        fe.import_forkline(source, store)
        rows = store.conn.execute("SELECT count(*) FROM log").fetchall()
        again = fe.import_forkline(source, store)
        assert again.resumed == 1 and store.conn.execute("SELECT count(*) FROM log").fetchall() == rows
        with sqlite3.connect(source) as conn:
            conn.execute(
                "INSERT INTO steps (run_id, idx, name, started_at) VALUES ('t1', 2, 'late', ?)",
                (T.format(7),),
            )
            conn.execute(
                "INSERT INTO events (run_id, step_idx, type, payload_json, created_at) "
                "VALUES ('t1', 2, 'x', '{}', ?)",
                (T.format(8),),
            )
        conn.close()
        fe.import_forkline(source, store)
        assert store.conn.execute("SELECT count(*) FROM log").fetchall()[0][0] == rows[0][0] + 2


@pytest.mark.parametrize(
    ("rows", "problem"),
    [
        ({"runs": [("r", T.format(0))], "events": [("r", 3, "x", "{}", T.format(1))]}, "no step 3"),
        ({"steps": [("ghost", 0, "s", T.format(0), None)]}, "no such run"),
        (
            {
                "runs": [("r", T.format(0))],
                "steps": [("r", 0, "a", T.format(1), None), ("r", 0, "b", T.format(2), None)],
            },
            "already has a step 0",
        ),
        ({"runs": [("r", T.format(0))], "steps": [("r", 0, "", T.format(1), None)]}, "name ''"),
        ({"runs": [("r", "yesterday")]}, "not an ISO 8601"),
        (
            {
                "runs": [("r", T.format(0))],
                "steps": [("r", 0, "a", T.format(1), None)],
                "events": [("r", 0, "x", '{"v": NaN}', T.format(2))],
            },
            "not standard JSON",
        ),
    ],
)
def test_what_load_run_could_never_show_refuses_the_whole_import(
    tmp_path: Path, rows: dict[str, list[tuple[Any, ...]]], problem: str
) -> None:
    good = {"runs": [("fine", T.format(0))], "steps": [("fine", 0, "ok", T.format(1), None)]}
    merged = {k: good.get(k, []) + rows.get(k, []) for k in ("runs", "steps", "events")}
    source = step_store(tmp_path / "forkline.db", merged)
    with fe.Store.open(tmp_path / "runs.db") as store:
        before = store.conn.execute("SELECT count(*) FROM log").fetchall()
        with pytest.raises(fe.InvalidRequest, match=problem):
            fe.import_forkline(source, store)
        assert store.conn.execute("SELECT count(*) FROM log").fetchall() == before


def test_a_run_id_held_by_another_run_is_a_conflict(tmp_path: Path) -> None:
    source = traced(tmp_path)
    with fe.Store.open(tmp_path / "runs.db") as store:
        store.start_run(workflow="billing", run_id="t1")
        with pytest.raises(fe.Conflict, match="another run"):
            fe.import_forkline(source, store)


def test_the_command_imports_a_step_store(tmp_path: Path) -> None:
    source = traced(tmp_path)
    cli = Path(sys.executable).parent / "forkline-es"
    done = subprocess.run(
        [str(cli), "--db", str(tmp_path / "runs.db"), "import-forkline", str(source)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "imported 1 run, 2 events" in done.stdout


def test_a_run_concluded_in_the_store_takes_nothing_more_from_the_source(tmp_path: Path) -> None:
    source = traced(tmp_path)
    with fe.Store.open(tmp_path / "runs.db") as store:
        fe.import_forkline(source, store)
        store.resume_run("t1").conclude("succeeded")
        assert fe.import_forkline(source, store).resumed == 1  # nothing new: fine
        with sqlite3.connect(source) as conn:
            conn.execute(
                "INSERT INTO steps (run_id, idx, name, started_at) VALUES ('t1', 2, 'late', ?)",
                (T.format(7),),
            )
        conn.close()
        rows = store.conn.execute("SELECT count(*) FROM log").fetchall()
        with pytest.raises(fe.Conflict, match="since the store concluded"):
            fe.import_forkline(source, store)
        assert store.conn.execute("SELECT count(*) FROM log").fetchall() == rows
