"""Schema version 1 -> 5. Version 2: the log loses AUTOINCREMENT and live projectors lose their
per-append position write. Version 3: payload values move to a rowid table keyed by
``payload_ids`` ranges. Version 4: triggers refuse an insert that would replace a row.
Version 5: a trigger refuses rows of an evicted run, and the rows such a run took before are
deleted. Every other fact, position, value and digest survives, and positions are still
never reused.

A version-1 file is made the way version-1 code left it: the version-1 DDL, then the rows
(and projection tables) of a store recorded by today's code, with the projector positions
at the end of the log as version 1 kept them.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import apsw
import pytest

import forkline_es as fe
from forkline_es.log.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION, SLOTS_PER_EVENT

_CORE = (
    "log",
    "payload",
    "eviction",
    "consumer",
    "projector",
    "log_end",
    "run_checkpoint",
    "run_checkpoint_piece",
    "record_text",
)
# Made by the migrations to versions 2 to 7, not present in a version-1 file.
_LATER = (
    "eviction_position",
    "log_end",
    "eviction_keeps_end_of_log",
    "payload_belongs_to_a_log_row",
    "log_deletes_after_its_values",
    "log_is_never_replaced",
    "log_seq_is_never_replaced",
    "payload_is_never_replaced",
    "log_refuses_evicted_runs",
    "run_checkpoint",
    "record_text",
)


def _record(store: fe.Store) -> list[str]:
    """Three runs (one with a removed payload, one evicted: the newest); the retained ids."""
    kept = []
    for i in range(3):
        run = store.start_run("wf", run_id=f"run-{i}", inputs={"i": i})
        run.begin_step("a", arguments={"n": i})
        run.end_step("a", "succeeded", result={"ok": i})
        run.conclude("succeeded", outputs={"i": i})
        kept.append(run.id)
        if i == 1:
            store.remove_payloads("run-1", ["arguments"], reason="test")
    store.evict_run("run-2", reason="newest run evicted", force=True)
    return kept[:2]


def _rows(conn: Any, table: str) -> list[tuple[Any, ...]]:
    columns = "position, slot, value" if table == "payload" else "*"  # whatever the version's key
    return [tuple(r) for r in conn.execute(f"SELECT {columns} FROM {table} ORDER BY 1, 2")]


def _version_1_copy(source: Path, target: Path) -> None:
    """``target``: ``source``'s rows under the version-1 schema, projector positions as v1 kept
    them (the end of the log)."""
    conn = apsw.Connection(str(target))
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    with conn:
        conn.execute(MIGRATIONS[0])
        conn.execute("PRAGMA user_version = 1")
    conn.execute("ATTACH ? AS src", (str(source),))
    with conn:
        have = {n for (n,) in conn.execute("SELECT name FROM main.sqlite_schema")}
        for name, sql in conn.execute(
            "SELECT name, sql FROM src.sqlite_schema WHERE sql IS NOT NULL AND type != 'view' "
            "ORDER BY type = 'table' DESC"
        ).fetchall():
            if name not in have and not name.startswith(("sqlite_", *_LATER)):
                conn.execute(sql)
        for table in ("log", "eviction", "consumer"):
            conn.execute(f"INSERT INTO main.{table} SELECT * FROM src.{table}")
        conn.execute("INSERT INTO main.payload SELECT position, slot, value FROM src.payload")
        end = conn.execute("SELECT max(position) FROM src.eviction").fetchall()[0][0]
        conn.execute("UPDATE sqlite_sequence SET seq = max(seq, ?) WHERE name = 'log'", (end,))
        top = conn.execute("SELECT seq FROM sqlite_sequence WHERE name = 'log'").fetchall()[0][0]
        # Version-1 code had the first Forkline views (made when the store opens; not copied).
        conn.execute(
            "INSERT INTO main.projector "
            "SELECT name, CASE name WHEN 'forkline-views' THEN 1 ELSE version END, ? FROM src.projector",
            (top,),
        )
        for (table,) in conn.execute("SELECT name FROM src.sqlite_schema WHERE type = 'table'").fetchall():
            if table not in _CORE and not table.startswith("sqlite_"):
                conn.execute(f"INSERT INTO main.{table} SELECT * FROM src.{table}")
    conn.execute("DETACH src")
    conn.close()


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, list[str], dict[str, Any]]:
    source = tmp_path / "source.db"
    with fe.Store.open(source) as store:
        kept = _record(store)
        documents = {run_id: store.get_run_record(run_id) for run_id in kept}
    return source, kept, documents


@pytest.fixture
def version_1(tmp_path: Path, recorded: tuple[Path, list[str], dict[str, Any]]) -> Path:
    """The recorded store as version-1 code left it."""
    old = tmp_path / "v1.db"
    _version_1_copy(recorded[0], old)
    return old


def _first_position(conn: Any, run_id: str) -> int:
    return int(conn.execute("SELECT min(position) FROM log WHERE run_id = ?", (run_id,)).fetchall()[0][0])


def test_a_version_1_file_keeps_every_row_position_and_document(
    version_1: Path, recorded: tuple[Path, list[str], dict[str, Any]]
) -> None:
    _, kept, documents = recorded
    old = version_1
    v1 = apsw.Connection(str(old))
    before = {t: _rows(v1, t) for t in ("log", "payload", "eviction")}
    top = v1.execute("SELECT seq FROM sqlite_sequence WHERE name = 'log'").fetchall()[0][0]
    v1.close()

    with fe.Store.open(old) as store:
        conn = store.conn
        assert conn.execute("PRAGMA user_version").fetchall()[0][0] == SCHEMA_VERSION == 8
        assert {t: _rows(conn, t) for t in ("log", "payload", "eviction")} == before
        log_sql = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'log'").fetchall()[0][0]
        assert "AUTOINCREMENT" not in log_sql
        assert conn.execute("SELECT * FROM sqlite_sequence").fetchall() == []
        assert {n for (n,) in conn.execute("SELECT name FROM sqlite_schema")} >= {
            "log_is_append_only",
            "log_deletes_only_evicted",
            "log_concluded",
            "eviction_position",
            "log_is_never_replaced",
            "log_seq_is_never_replaced",
            "payload_is_never_replaced",
        }
        assert conn.execute("SELECT DISTINCT position FROM projector").fetchall() == [(None,)]
        assert {run_id: store.get_run_record(run_id) for run_id in kept} == documents
        assert store.check_projections() == []
        assert all(report.ok for report in store.verify_all())
        _check_payload_table(conn)
        # The evicted run held the top positions; the next event still goes above them.
        run = store.start_run("wf", run_id="after")
        assert _first_position(conn, "after") == top + 1
        with pytest.raises(apsw.ConstraintError, match="never updated"):
            conn.execute("UPDATE log SET kind = 'x' WHERE run_id = ?", (run.id,))


def _check_payload_table(conn: Any) -> None:
    """Version 3's payload table: a rowid table, each row at its ``payload_ids`` key, its
    triggers back, and the ``events`` view rebuilt to find values by that key."""
    payload_sql = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'payload'").fetchall()[0][0]
    assert "WITHOUT ROWID" not in payload_sql
    for position, slot, key in conn.execute("SELECT position, slot, id FROM payload").fetchall():
        first = position * SLOTS_PER_EVENT
        assert first <= key < first + SLOTS_PER_EVENT, (position, slot, key)
    triggers = {n for (n,) in conn.execute("SELECT name FROM sqlite_schema WHERE tbl_name = 'payload'")}
    assert triggers >= {
        "payload_is_immutable",
        "payload_deletes_only_recorded",
        "payload_belongs_to_a_log_row",
    }
    assert conn.execute("PRAGMA foreign_key_list(payload)").fetchall() == []  # the triggers hold it
    with pytest.raises(apsw.ConstraintError, match="never updated"):
        conn.execute("UPDATE payload SET value = '1'")
    with pytest.raises(apsw.ConstraintError, match="only after its removal is recorded"):
        conn.execute("DELETE FROM payload")
    view = conn.execute("SELECT sql FROM sqlite_schema WHERE name = 'events'").fetchall()[0][0]
    assert "p.id BETWEEN" in view


def test_a_lagging_projector_is_caught_up_when_the_store_opens(
    recorded: tuple[Path, list[str], dict[str, Any]],
) -> None:
    """A number in ``projector.position`` says the rows after it were appended by a writer that
    did not fold them; the next open folds exactly those and marks the projector live."""
    source, kept, documents = recorded
    conn = apsw.Connection(str(source))
    folded = conn.execute("SELECT min(position) - 1 FROM log WHERE run_id = 'run-1'").fetchall()[0][0]
    conn.execute("UPDATE projector SET position = ?", (folded,))
    conn.execute("DELETE FROM run_summary WHERE run_id = 'run-1'")
    conn.execute("DELETE FROM step_view WHERE run_id = 'run-1'")
    conn.execute("DELETE FROM entry WHERE run_id = 'run-1'")
    conn.close()
    with fe.Store.open(source) as store:
        assert store.conn.execute("SELECT DISTINCT position FROM projector").fetchall() == [(None,)]
        assert {run_id: store.get_run_record(run_id) for run_id in kept} == documents
        assert store.check_projections() == []


def test_a_migration_that_would_break_a_reference_changes_nothing(version_1: Path) -> None:
    old = version_1
    v1 = apsw.Connection(str(old))
    v1.execute("INSERT INTO payload (position, slot, value) VALUES (999999, 'orphan', '1')")
    schema = v1.execute("SELECT sql FROM sqlite_schema ORDER BY name").fetchall()
    log = _rows(v1, "log")
    v1.close()
    with pytest.raises(fe.StoreError, match="foreign key"):
        fe.Store.open(old)
    v1 = apsw.Connection(str(old))
    assert v1.execute("PRAGMA user_version").fetchall()[0][0] == 1
    assert v1.execute("SELECT sql FROM sqlite_schema ORDER BY name").fetchall() == schema
    assert _rows(v1, "log") == log
    v1.close()


def test_the_end_version_1_kept_in_sqlite_sequence_survives_a_purged_tombstone(version_1: Path) -> None:
    """Version 1 evicted the newest run and then purged its tombstone: only sqlite_sequence
    still knew the end of the log. The migration carries it into log_end."""
    old = version_1
    v1 = apsw.Connection(str(old))
    v1.execute("DELETE FROM eviction")
    top = v1.execute("SELECT seq FROM sqlite_sequence WHERE name = 'log'").fetchall()[0][0]
    assert top > v1.execute("SELECT max(position) FROM log").fetchall()[0][0]
    v1.close()
    with fe.Store.open(old) as store:
        assert store.conn.execute("SELECT id, position FROM log_end").fetchall() == [(1, top)]
        assert store.log.end_position() == top
        store.start_run("wf", run_id="after")
        assert _first_position(store.conn, "after") == top + 1


def test_a_version_2_value_without_its_log_row_stops_the_migration_to_3(version_1: Path) -> None:
    """A version-2 file written with foreign keys off (the sqlite3 shell's default) can hold a
    value of no log row; version 3 has no foreign key, so its trigger refuses the copy."""
    conn = apsw.Connection(str(version_1))
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("PRAGMA legacy_alter_table = ON")
    with conn:
        conn.execute(MIGRATIONS[1])
        conn.execute("PRAGMA user_version = 2")
    conn.execute("INSERT INTO payload (position, slot, value) VALUES (999999, 'orphan', '1')")
    payload = _rows(conn, "payload")
    conn.close()
    with pytest.raises(fe.StoreError, match=r"schema version 3 stopped: .*needs its log row"):
        fe.Store.open(version_1)
    conn = apsw.Connection(str(version_1))
    assert conn.execute("PRAGMA user_version").fetchall()[0][0] == 2
    assert _rows(conn, "payload") == payload
    conn.close()


# -- version 4 -> 5: an evicted run takes no more rows ------------------------------------

_V5_OBJECTS = ("log_refuses_evicted_runs",)
LATER = datetime.now(UTC) + timedelta(days=1)


def _schema(conn: Any) -> set[tuple[str, str, str]]:
    return {
        (t, n, s)
        for t, n, s in conn.execute("SELECT type, name, sql FROM sqlite_schema WHERE sql IS NOT NULL")
    }


def _as_version_4(conn: Any) -> None:
    """Take the file back to the version-4 layout: what version 5 adds goes, user_version 4.
    Checked against the version-4 migrations run on an empty database."""
    for name in (*_V5_OBJECTS, "log_rows_follow_their_run"):  # version 8's too: its file has none
        conn.execute(f"DROP TRIGGER {name}")
    conn.execute("PRAGMA user_version = 4")
    fresh = apsw.Connection(":memory:")
    fresh.execute("PRAGMA foreign_keys = OFF")
    fresh.execute("PRAGMA legacy_alter_table = ON")
    for step in MIGRATIONS[:4]:
        fresh.execute(step)
    version_4 = _schema(fresh)
    fresh.close()
    assert {o for o in _schema(conn) if o[1] in {n for _, n, _ in version_4}} == version_4


def _orphans(store: fe.Store, run: fe.Run) -> None:
    """Rows appended to ``run`` after its eviction, as version-4 code let a handle do: one
    with a payload value (a Forkline event's), and an observation (a projection row)."""
    from forkline_es.compat.recorder import logged_event

    event, payloads = logged_event(fe.RedactionPolicy.default(), "late", {"note": "value"})
    run._append_event(event, "late-event", payloads, lambda: None)
    run.observe("late", 1.0)


def test_a_version_4_file_loses_the_rows_its_evicted_runs_took_and_refuses_more(tmp_path: Path) -> None:
    path = tmp_path / "v4.db"
    with fe.Store.open(path) as store:
        kept = store.start_run("wf", run_id="kept", inputs={"k": 1})
        kept.conclude("succeeded", outputs={"k": 1})
        gone = store.start_run("wf", run_id="gone", inputs={"g": 1})
        gone.conclude("succeeded")
        purged = store.start_run("wf", run_id="purged", inputs={"p": 1})
        purged.conclude("succeeded")
        _as_version_4(store.conn)
        store.evict_run("purged", reason="test")
        _orphans(store, purged)
        store.purge_tombstones("0s", now=LATER)  # its rows stay behind without a record
        store.evict_run("gone", reason="test")
        _orphans(store, gone)  # the newest positions of the log
        conn = store.conn
        assert conn.execute("PRAGMA user_version").fetchall()[0][0] == 4
        assert conn.execute("SELECT count(*) FROM log WHERE run_id = 'gone'").fetchall()[0][0] == 2
        assert conn.execute("SELECT count(*) FROM observation WHERE run_id = 'gone'").fetchall()[0][0] == 1
        top = store.log.end_position()
        kept_rows = conn.execute("SELECT * FROM log WHERE run_id IN ('kept', 'purged') ORDER BY 1").fetchall()
        evictions = conn.execute("SELECT * FROM eviction").fetchall()
        kept_values = conn.execute(
            "SELECT p.* FROM payload AS p JOIN log USING (position) WHERE run_id != 'gone' ORDER BY p.id"
        ).fetchall()
        assert len(kept_values) < conn.execute("SELECT count(*) FROM payload").fetchall()[0][0]
        document = store.get_run_record("kept")
        conn.execute("DROP TABLE run_checkpoint_piece")  # what versions 6 and 7 add, kept until
        conn.execute("DROP TABLE run_checkpoint")  # the evictions above, which delete from them
        conn.execute("DROP TABLE record_text")

    with fe.Store.open(path) as store:
        conn = store.conn
        assert conn.execute("PRAGMA user_version").fetchall()[0][0] == SCHEMA_VERSION == 8
        assert conn.execute("SELECT count(*) FROM log WHERE run_id = 'gone'").fetchall() == [(0,)]
        assert conn.execute("SELECT * FROM payload ORDER BY id").fetchall() == kept_values
        assert conn.execute("SELECT count(*) FROM observation WHERE run_id = 'gone'").fetchall() == [(0,)]
        # Everything else is as it was: retained rows, the left-behind rows, the tombstone.
        assert conn.execute("SELECT * FROM log ORDER BY 1").fetchall() == kept_rows
        assert conn.execute("SELECT * FROM eviction").fetchall() == evictions
        assert store.get_run_record("kept") == document
        assert store.check_projections() == []
        assert store.log.end_position() == top  # the deleted rows' positions are never given out again
        assert _first_position(conn, store.start_run("wf", run_id="after").id) == top + 1
        # The one run still reported: rows whose eviction record was purged before version 5.
        reported = [r for r in store.verify_all() if not r.ok]
        assert [(r.run_id, r.problems[0].kind, r.problems[0].seq) for r in reported] == [
            ("purged", "seq-gap", 1)
        ]
        with pytest.raises(fe.RunNotRetained):
            store.resume_run("gone")
        with pytest.raises(fe.RunNotRetained):
            gone_again = fe.Run(store, gone._state)
            gone_again.observe("later still", 2.0)
        with pytest.raises(fe.Conflict):
            store.start_run("wf", run_id="purged")


def test_a_version_4_file_without_such_rows_keeps_its_projections(tmp_path: Path) -> None:
    """The projectors are marked outdated (a refold at the next open) only when rows went."""
    path = tmp_path / "v4.db"
    with fe.Store.open(path) as store:
        run = store.start_run("wf", run_id="r")
        run.conclude("succeeded")
        store.evict_run("r", reason="test")
        store.start_run("wf", run_id="kept").conclude("succeeded")
        _as_version_4(store.conn)
    conn = apsw.Connection(str(path))
    projectors = conn.execute("SELECT * FROM projector ORDER BY name").fetchall()
    log = conn.execute("SELECT * FROM log ORDER BY position").fetchall()
    with conn:
        conn.execute(MIGRATIONS[4])
    assert conn.execute("SELECT * FROM projector ORDER BY name").fetchall() == projectors
    assert conn.execute("SELECT * FROM log ORDER BY position").fetchall() == log
    conn.close()
