"""The ``runs`` and ``events`` views: Forkline's columns, read by plain sqlite3, over the log."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.log.events import PayloadsRemoved

RUN_COLUMNS = [
    "run_id",
    "schema_version",
    "entrypoint",
    "started_at",
    "ended_at",
    "status",
    "python_version",
    "platform",
    "cwd",
]
EVENT_COLUMNS = ["event_id", "run_id", "ts", "type", "payload"]


def _select(path: Path, sql: str) -> tuple[list[str], list[tuple[object, ...]]]:
    """Columns and rows as the stdlib sqlite3 module (not apsw, not forkline_es) sees them."""
    conn = sqlite3.connect(path)
    try:
        cur = conn.execute(sql)
        return [d[0] for d in cur.description], cur.fetchall()
    finally:
        conn.close()


def _one_of_each(path: Path) -> str:
    with fe.RunRecorder(path) as r:
        run_id = r.start_run(entrypoint="examples/minimal.py")
        r.log_event(run_id, "input", {"prompt": "hello"})
        r.end_run(run_id, status="success")
    return run_id


def test_a_fresh_database_shows_one_run_and_one_event(db_path: Path) -> None:
    run_id = _one_of_each(db_path)
    columns, runs = _select(db_path, "SELECT * FROM runs;")
    assert columns == RUN_COLUMNS
    assert len(runs) == 1
    assert runs[0][:3] == (run_id, "0.1", "examples/minimal.py")
    assert runs[0][5] == "success"
    assert runs[0][8] == os.getcwd()
    columns, events = _select(db_path, "SELECT * FROM events;")
    assert columns == EVENT_COLUMNS
    assert len(events) == 1
    event_id, rid, ts, kind, payload = events[0]
    assert isinstance(event_id, int) and rid == run_id and kind == "input"
    assert isinstance(ts, str) and ts.endswith("Z")
    assert json.loads(str(payload)) == {"prompt": "hello"}
    assert payload == '{"prompt":"hello"}'  # canonical JSON: inspectable as text


def _sqlite3_cli(path: Path, sql: str) -> str:
    """``sqlite3 -header runs.db SQL``; the stdlib module stands in where the CLI is absent."""
    if shutil.which("sqlite3"):
        return subprocess.run(
            ["sqlite3", "-header", str(path), sql], check=True, capture_output=True, text=True
        ).stdout
    columns, rows = _select(path, sql)
    lines = ["|".join(columns)] + ["|".join("" if v is None else str(v) for v in row) for row in rows]
    return "\n".join(lines) + "\n"


def test_the_sqlite3_command_line_shows_the_seed_columns(db_path: Path) -> None:
    run_id = _one_of_each(db_path)
    runs = _sqlite3_cli(db_path, "SELECT * FROM runs;").splitlines()
    assert runs[0] == "|".join(RUN_COLUMNS)
    assert len(runs) == 2 and runs[1].startswith(f"{run_id}|0.1|examples/minimal.py|")
    events = _sqlite3_cli(db_path, "SELECT * FROM events;").splitlines()
    assert events[0] == "|".join(EVENT_COLUMNS)
    assert len(events) == 2 and events[1].endswith('|input|{"prompt":"hello"}')


def test_executor_runs_appear_in_runs_but_their_entries_not_in_events(store: fe.Store) -> None:
    run = store.start_run(workflow="billing/invoice", inputs={"n": 1})
    run.begin_step("charge", arguments={"amount": 3})
    rows = store.conn.execute("SELECT entrypoint, status, ended_at FROM runs").fetchall()
    assert rows == [("billing/invoice", None, None)]
    run.end_step("charge", "succeeded")
    run.conclude("failed", code="timeout")
    assert store.conn.execute("SELECT status FROM runs").fetchall() == [("failure",)]
    assert store.conn.execute("SELECT count(*) FROM events").fetchall() == [(0,)]


def test_the_views_survive_a_rebuild_unchanged(db_path: Path) -> None:
    with fe.RunRecorder(db_path) as r:
        for n in range(3):
            run_id = r.start_run(f"job{n}.py")
            r.log_event(run_id, "input", {"n": n, "password": "hunter2"})
            if n:
                r.end_run(run_id, ["success", "error"][n - 1])
        conn = r.store.conn
        before = [conn.execute(f"SELECT * FROM {v}").fetchall() for v in ("runs", "events")]
        assert r.store.rebuild_projections() > 0
        after = [conn.execute(f"SELECT * FROM {v}").fetchall() for v in ("runs", "events")]
    assert after == before
    assert [len(rows) for rows in after] == [3, 3]


def test_a_database_without_the_views_gets_them_at_open(db_path: Path) -> None:
    """A store made before the views existed: its projector row is missing, so open rebuilds."""
    run_id = _one_of_each(db_path)
    with fe.Store.open(db_path) as store, store.log.transaction("simulate an older database") as cur:
        cur.execute("DROP VIEW runs")
        cur.execute("DROP VIEW events")
        cur.execute("DELETE FROM projector WHERE name = 'forkline-views'")
    with fe.Store.open(db_path):
        pass
    assert _select(db_path, "SELECT run_id FROM runs")[1] == [(run_id,)]
    assert len(_select(db_path, "SELECT * FROM events")[1]) == 1


def test_a_payload_removed_by_retention_reads_as_null(db_path: Path) -> None:
    """The view keeps the event and shows NULL where retention removed the value."""
    with fe.RunRecorder(db_path) as r:
        run_id = r.start_run("x.py")
        event_id = r.log_event(run_id, "input", {"a": 1})
        handle = r.store.resume_run(run_id)
        handle._append_event(PayloadsRemoved(removed=[(event_id, "payload")], policy="test"), "rm")
        with r.store.log.transaction("remove") as cur:
            cur.execute("DELETE FROM payload WHERE position = ? AND slot = 'payload'", (event_id,))
        (event,) = r.get_events(run_id)
        assert event["event_id"] == event_id and event["payload"] is None


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


@settings(max_examples=50)
@given(payload=st.dictionaries(st.text(max_size=8), json_values, max_size=4))
def test_what_is_logged_is_what_the_view_holds(payload: dict[str, object]) -> None:
    policy = fe.RedactionPolicy.default()
    with fe.RunRecorder(":memory:", redaction_policy=policy) as r:
        run_id = r.start_run("x.py")
        event_id = r.log_event(run_id, "input", payload)
        (event,) = r.get_events(run_id)
        assert event["event_id"] == event_id
        assert event["payload"] == policy.redact(payload)
        (stored,) = r.store.conn.execute("SELECT payload FROM events").fetchall()[0]
        assert stored == fe.canonical_json(policy.redact(payload)).decode()


@settings(max_examples=50)
@given(payload=st.dictionaries(st.text(max_size=8), json_values, max_size=4))
def test_without_redaction_the_payload_round_trips(payload: dict[str, object]) -> None:
    with fe.RunRecorder(":memory:", redaction_policy=fe.RedactionPolicy.none()) as r:
        run_id = r.start_run("x.py")
        r.log_event(run_id, "input", payload)
        assert [e["payload"] for e in r.get_events(run_id)] == [payload]


# -- the seed's examples, run as written --------------------------------------------------------

EXAMPLES = Path(__file__).parent / "examples"


def _python(args: list[str], cwd: Path) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, check=True, capture_output=True, text=True
    )
    return done.stdout


@pytest.fixture(scope="module")
def minimal_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``python examples/minimal.py`` in an empty directory, twice: runs.db is created, then updated."""
    where = tmp_path_factory.mktemp("minimal")
    for _ in range(2):
        _python([str(EXAMPLES / "minimal.py")], where)
    return where / "runs.db"


def test_the_minimal_example_creates_and_updates_runs_db(minimal_db: Path) -> None:
    _, runs = _select(minimal_db, "SELECT run_id, entrypoint, status FROM runs")
    assert [(e, s) for _, e, s in runs] == [("examples/minimal.py", "success")] * 2
    _, events = _select(minimal_db, "SELECT run_id, type, payload FROM events ORDER BY event_id")
    assert [(t, json.loads(str(p))) for _, t, p in events] == [
        ("input", {"prompt": "hello"}),
        ("output", {"result": "world"}),
    ] * 2
    assert [r for r, _, _ in events] == [runs[0][0]] * 2 + [runs[1][0]] * 2


def test_the_inspect_script_lists_runs_and_shows_one(minimal_db: Path) -> None:
    script = str(EXAMPLES / "inspect_runs.py")
    _, runs = _select(minimal_db, "SELECT run_id FROM runs")
    listing = _python([script, "--db", str(minimal_db)], minimal_db.parent).splitlines()
    assert [line.split()[0] for line in listing] == [r for (r,) in runs]
    assert all(line.split()[-1] == "success" for line in listing)
    shown = _python([script, "--db", str(minimal_db), "--run-id", str(runs[0][0])], minimal_db.parent)
    assert "entrypoint: examples/minimal.py" in shown
    assert "schema_version: 0.1" in shown
    assert 'input {"prompt": "hello"}' in shown and 'output {"result": "world"}' in shown


def test_the_library_calls_behind_runs_and_show(minimal_db: Path) -> None:
    """What ``forkline-es runs`` / ``forkline-es show RUN`` render, on a Forkline-recorded db."""
    _, runs = _select(minimal_db, "SELECT run_id FROM runs")
    with fe.Store.open(minimal_db) as store:
        listed = store.list_runs()
        assert sorted(s["id"] for s in listed) == sorted(r for (r,) in runs)
        assert {s["workflow"] for s in listed} == {"examples/minimal.py"}
        assert {s["status"] for s in listed} == {"succeeded"}
        document = store.get_run_record(str(runs[0][0]))
        assert document["run"]["workflow"] == "examples/minimal.py"
