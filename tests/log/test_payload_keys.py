"""Payload values are found by their key range (``payload_ids``), never by scanning the table.

Every statement the library runs during a broad workload (recording with payloads, Forkline
events, documents and step records, verification, payload removal, eviction, a rebuild), and
the views as ``sqlite3 runs.db`` reads them, is captured and explained: none may scan
``payload``, whose rows are most of a store's bytes, nor build an automatic index on it (a
whole-table pass per query: how the ``events`` view's LEFT JOIN made ``SELECT * FROM events``
quadratic; tests/compat/test_views_plan.py).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import apsw
import pytest

import forkline_es as fe
from forkline_es.log.schema import SLOTS_PER_EVENT

_NOT_QUERIES = ("CREATE", "DROP", "ALTER", "PRAGMA", "BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT", "RELEASE")


def _workload(recorder: fe.RunRecorder) -> None:
    store = recorder.store
    run = store.start_run("wf", run_id="run-1", inputs={"a": 1})
    run.begin_step("s", arguments={"x": "y" * 3000})  # a value larger than a quarter page
    run.end_step("s", "succeeded", result={"ok": True})
    run.conclude("succeeded", outputs={"n": 1})
    store.get_run_record(run.id)
    store.get_step_record(run.id, "s")
    store.export_run_record(run.id)
    assert store.verify_run(run.id).ok
    rid = recorder.start_run("main.py", run_id="forkline-1")
    recorder.log_event(rid, "input", {"prompt": "hello"})
    recorder.end_run(rid)
    assert recorder.get_events(rid)[0]["payload"] == {"prompt": "hello"}
    for view in ("runs", "events"):  # unfiltered, as `sqlite3 runs.db "SELECT * FROM events;"`
        store.conn.execute(f"SELECT * FROM {view}").fetchall()
    assert store.remove_payloads(run.id, ["arguments"]) != ()
    store.evict_run(rid, reason="test")
    store.rebuild_projections()
    assert store.check_projections() == []


def _whole_table(step: str) -> bool:
    """A plan step that reads all of ``payload``: a scan, or an automatic index (or the Bloom
    filter SQLite builds beside one) made from it."""
    return re.match(r"(SCAN|SEARCH|BLOOM FILTER ON) (payload|p)\b", step) is not None and (
        not step.startswith("SEARCH") or "AUTOMATIC" in step
    )


def test_no_statement_scans_the_payload_table(tmp_path: Path) -> None:
    seen: dict[str, Any] = {}

    def trace(cursor: Any, sql: str, bindings: Any) -> bool:
        seen.setdefault(sql, bindings)
        return True

    with fe.RunRecorder(tmp_path / "runs.db") as recorder:
        conn = recorder.store.conn
        conn.exec_trace = trace
        _workload(recorder)
        conn.exec_trace = None
        explained, scans = 0, []
        for sql, bindings in seen.items():
            if not re.search(r"\b(payload|events)\b", sql) or sql.lstrip().upper().startswith(_NOT_QUERIES):
                continue
            plan = [row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, bindings)]
            explained += 1
            if any(_whole_table(step) for step in plan):
                scans.append((sql, plan))
    assert scans == []
    assert explained >= 8  # inserts, joins by run, lookups by position, the view, both deletes


def test_each_value_sits_at_its_events_key(store: fe.Store) -> None:
    run = store.start_run("wf", inputs={"a": 1}, trigger={"t": 2})
    run.begin_step("s", arguments={"x": 1})
    run.conclude("succeeded", outputs={"n": 1})
    rows = store.conn.execute("SELECT id, position, slot FROM payload ORDER BY id").fetchall()
    assert [slot for _, _, slot in rows] == ["inputs", "trigger", "arguments", "outputs"]
    for key, position, _ in rows:
        assert key // SLOTS_PER_EVENT == position
    first_event = [key for key, position, _ in rows if position == rows[0][1]]
    assert first_event == [rows[0][1] * SLOTS_PER_EVENT, rows[0][1] * SLOTS_PER_EVENT + 1]


def test_a_row_off_its_key_is_refused(store: fe.Store) -> None:
    run = store.start_run("wf", inputs={"a": 1})
    run.begin_step("s", arguments={"x": 1})
    first = store.conn.execute("SELECT min(position) FROM log WHERE run_id = ?", (run.id,)).fetchall()[0][0]
    for sql, args in (
        (
            "INSERT INTO payload (id, position, slot, value) VALUES (?, ?, 'x', '1')",
            ((first + 1000) * SLOTS_PER_EVENT, first),  # a free key, of another position
        ),
        ("INSERT INTO payload (position, slot, value) VALUES (?, 'x', '1')", (first,)),  # id: max + 1
    ):
        with pytest.raises(apsw.ConstraintError, match="CHECK constraint failed"):
            store.conn.execute(sql, args)


def test_values_and_log_rows_keep_each_other_for_any_client(store: fe.Store) -> None:
    """Triggers, not a foreign key (which a shell connection does not enforce, and whose
    check on a log row's delete would scan every value): no value without its log row, and
    no log row deleted before its values, even of an evicted run."""
    run = store.start_run("wf", run_id="run-1", inputs={"a": 1})
    run.conclude("succeeded")
    conn = store.conn
    conn.execute("PRAGMA foreign_keys = OFF")
    top = conn.execute("SELECT max(position) FROM log").fetchall()[0][0]
    with pytest.raises(apsw.ConstraintError, match="needs its log row"):
        conn.execute(
            "INSERT INTO payload (id, position, slot, value) VALUES (?, ?, 'x', '1')",
            ((top + 1) * SLOTS_PER_EVENT, top + 1),
        )
    conn.execute("INSERT INTO eviction (run_id, position, at, reason) VALUES ('run-1', ?, 'x', 'y')", (top,))
    with pytest.raises(apsw.ConstraintError, match="only after its payload values"):
        conn.execute("DELETE FROM log WHERE run_id = 'run-1'")
    conn.execute("DELETE FROM payload WHERE position IN (SELECT position FROM log WHERE run_id = 'run-1')")
    conn.execute("DELETE FROM log WHERE run_id = 'run-1'")
    assert conn.execute("SELECT count(*) FROM log").fetchall() == [(0,)]


def test_every_foreign_key_has_an_index_on_its_columns(store: fe.Store) -> None:
    """A foreign key whose child columns lack an index makes every delete of a parent row scan
    the child table (how version 3's first draft made eviction quadratic)."""
    conn = store.conn
    tables = [n for (n,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")]
    for table in tables:
        keys: dict[int, list[str]] = {}
        for fk in conn.execute(f"PRAGMA foreign_key_list({table})").fetchall():
            keys.setdefault(fk[0], []).append(fk[3])
        indexed = [
            [info[2] for info in conn.execute(f"PRAGMA index_info({index[1]})").fetchall()]
            for index in conn.execute(f"PRAGMA index_list({table})").fetchall()
        ]
        for columns in keys.values():
            assert any(ix[: len(columns)] == columns for ix in indexed), (table, columns)
