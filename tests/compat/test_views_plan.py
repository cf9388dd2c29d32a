"""The ``runs`` and ``events`` views stay linear: payload is reached only through its key.

As a LEFT JOIN, ``events`` made SQLite (3.40 in the sqlite3 shell and Python's module, 3.5x
in apsw) build an automatic index on ``payload.slot``, which every value matches, so each
event read every value: ``SELECT * FROM events`` took 22 s at 16,000 events. These tests
explain the views' queries with both SQLite builds and refuse any way into ``payload`` other
than a search of its INTEGER PRIMARY KEY, and check the rows against the log itself.
"""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import apsw
import pytest

import forkline_es as fe
from forkline_es.log.events import PayloadsRemoved
from forkline_es.log.schema import payload_ids

Explain = Callable[[str, tuple[Any, ...]], list[str]]

#: The version 2 view, as databases made before version 3 hold it.
_OLD_EVENTS_VIEW = f"""
CREATE VIEW events AS
SELECT l.position AS event_id, l.run_id AS run_id, l.at AS ts,
       json_extract(l.body, '$.event_type') AS type, p.value AS payload
FROM log AS l
LEFT JOIN payload AS p ON p.id {payload_ids("l.position")} AND p.slot = 'payload'
WHERE l.kind = 'forkline-logged'
ORDER BY l.position
"""


def _record(path: Path) -> tuple[str, str]:
    """Two Forkline runs with interleaved events (one value removed by retention) and an
    executor run with payloads of its own, none of which are Forkline events."""
    with fe.RunRecorder(path, redaction_policy=fe.RedactionPolicy.none()) as r:
        a, b = r.start_run("a.py"), r.start_run("b.py")
        executor = r.store.start_run("wf", inputs={"n": 1})
        executor.begin_step("s", arguments={"x": "y"})
        for n in range(20):
            r.log_event(a if n % 3 else b, f"type{n % 4}", {"n": n, "text": "x" * n})
        removed = r.log_event(a, "input", {"gone": True})
        r.log_event(b, "output", [1, "two", None])
        handle = r.store.resume_run(a)
        handle._append_event(PayloadsRemoved(removed=[(removed, "payload")], policy="test"), "rm")
        with r.store.log.transaction("remove") as cur:
            cur.execute("DELETE FROM payload WHERE position = ? AND slot = 'payload'", (removed,))
        executor.end_step("s", "succeeded", result={"ok": True})
        executor.conclude("succeeded", outputs={"n": 2})
        r.end_run(a)
    return a, b


@pytest.fixture
def recorded(db_path: Path) -> Path:
    _record(db_path)
    return db_path


@pytest.fixture(params=["sqlite3", "apsw"])
def explain(request: pytest.FixtureRequest, recorded: Path) -> Iterator[Explain]:
    """EXPLAIN QUERY PLAN through the stdlib module (the shell's SQLite) or apsw (the store's)."""
    conn: Any = sqlite3.connect(recorded) if request.param == "sqlite3" else apsw.Connection(str(recorded))

    def plan(sql: str, args: tuple[Any, ...]) -> list[str]:
        return [str(row[3]) for row in conn.execute("EXPLAIN QUERY PLAN " + sql, args).fetchall()]

    yield plan
    conn.close()


_QUERIES = (
    ("SELECT * FROM events", ()),
    ("SELECT * FROM events WHERE run_id = ?", ("any",)),
    ("SELECT event_id, run_id, ts, type, payload FROM events WHERE run_id = ? ORDER BY event_id", ("any",)),
    ("SELECT * FROM runs", ()),
    ("SELECT * FROM runs WHERE run_id = ?", ("any",)),
)


def _detours(plan: list[str]) -> list[str]:
    """The plan's steps on ``payload`` (alias ``p``) that are not a search of its key, and any
    automatic index (a whole-table build per query)."""
    return [
        step
        for step in plan
        if "AUTOMATIC" in step
        or (
            re.search(r"\b(payload|p)\b", step)
            and not re.match(r"SEARCH (payload|p) USING INTEGER PRIMARY KEY", step)
        )
    ]


@pytest.mark.parametrize(("sql", "args"), _QUERIES)
@pytest.mark.parametrize("analyzed", [False, True], ids=["fresh", "analyzed"])
def test_payload_is_only_searched_by_its_key(
    explain: Explain, recorded: Path, sql: str, args: tuple[Any, ...], analyzed: bool
) -> None:
    if analyzed:  # statistics must not lure the planner elsewhere either
        conn = sqlite3.connect(recorded)
        conn.execute("ANALYZE")
        conn.close()
    plan = explain(sql, args)
    assert _detours(plan) == [], plan
    assert not any(step.startswith("SCAN p") or step.startswith("SCAN payload") for step in plan)
    if "FROM events" in sql:
        assert any(re.match(r"SEARCH p USING INTEGER PRIMARY KEY", step) for step in plan), plan
    if "run_id = ?" in sql and "FROM events" in sql and not analyzed:  # found by the log's index
        assert any(step.startswith("SEARCH l USING INDEX") and "run_id=?" in step for step in plan), plan


def test_the_old_view_is_refused(explain: Explain, recorded: Path) -> None:
    """The check above sees the version 2 view's detour (so it would have caught it)."""
    conn = sqlite3.connect(recorded)
    conn.executescript(f"DROP VIEW events; {_OLD_EVENTS_VIEW};")
    conn.close()
    assert _detours(explain("SELECT * FROM events", ())) != []


def _expected_events(path: Path) -> list[tuple[Any, ...]]:
    """The events view computed in Python from the log and payload tables, read in full."""
    conn = sqlite3.connect(path)
    try:
        values = {
            (pos, slot): value
            for pos, slot, value in conn.execute("SELECT position, slot, value FROM payload")
        }
        log = conn.execute("SELECT position, run_id, at, kind, body FROM log").fetchall()
    finally:
        conn.close()
    return [
        (position, run_id, at, json.loads(body)["event_type"], values.get((position, "payload")))
        for position, run_id, at, kind, body in sorted(log)
        if kind == "forkline-logged"
    ]


def test_the_rows_are_the_log_s_forkline_events(recorded: Path) -> None:
    expected = _expected_events(recorded)
    assert len(expected) == 22 and sum(1 for row in expected if row[4] is None) == 1
    conn = sqlite3.connect(recorded)
    try:
        assert conn.execute("SELECT * FROM events").fetchall() == expected
        for (run_id,) in conn.execute("SELECT run_id FROM runs").fetchall():
            rows = conn.execute("SELECT * FROM events WHERE run_id = ?", (run_id,)).fetchall()
            assert rows == [row for row in expected if row[1] == run_id]
    finally:
        conn.close()


def test_a_database_with_the_old_view_gets_the_new_one_at_open(recorded: Path) -> None:
    """Version 3 of the forkline-views projector replaces a version 2 database's view."""
    conn = sqlite3.connect(recorded)
    before = conn.execute("SELECT * FROM events").fetchall()
    older = "UPDATE projector SET version = 2 WHERE name = 'forkline-views'"
    conn.executescript(f"DROP VIEW events; {_OLD_EVENTS_VIEW}; {older};")
    conn.close()
    with fe.Store.open(recorded) as store:
        (sql,) = store.conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'events'").fetchall()[0]
        assert "LEFT JOIN" not in sql
        plan = [str(row[3]) for row in store.conn.execute("EXPLAIN QUERY PLAN SELECT * FROM events")]
        assert _detours(plan) == []
        assert store.conn.execute("SELECT * FROM events").fetchall() == before
