"""verify reports the log's triggers gone, altered or added: a store-level problem.

The expected triggers are read from a scratch database the migrations build, never from a
list: a trigger a new migration adds is expected without a change here.
"""

from __future__ import annotations

import json
from pathlib import Path

import apsw
import pytest
from click.testing import CliRunner

import forkline_es as fe
from forkline_es.cli.main import main
from forkline_es.log.connection import open_connection
from forkline_es.log.schema import MIGRATIONS, SCHEMA_VERSION
from forkline_es.log.triggers import expected_schema, trigger_differences

from .helpers import drop_triggers, record_sample

#: The module tampers with the store through SQLite's own connection (drops triggers,
#: rewrites rows and files) to show what verify finds; on PostgreSQL the triggers refuse
#: that client, and tests/postgres/test_triggers.py covers them.
pytestmark = pytest.mark.sqlite_only("tampers with a SQLite file through apsw to show what verify finds")


@pytest.fixture
def store(sqlite_store: fe.Store) -> fe.Store:
    return sqlite_store


TRIGGER_KINDS = {"trigger-missing", "trigger-altered", "trigger-unexpected"}


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    return result.exit_code, result.output


def _store_kinds(report: fe.VerifyReport) -> list[tuple[str, str | None]]:
    return [(p.kind, p.path) for p in report.problems if p.kind in TRIGGER_KINDS]


def test_the_expected_triggers_are_those_a_new_database_gets() -> None:
    conn = open_connection(":memory:")
    query = "SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'trigger'"
    made = {n: (t, s) for n, t, s in conn.execute(query)}
    conn.close()
    assert dict(expected_schema(SCHEMA_VERSION).triggers) == made
    assert {"log_is_append_only", "payload_is_immutable"} <= set(made) and len(made) >= 10


def test_dropped_triggers_are_each_reported_for_the_store_and_every_run(
    store: fe.Store, tmp_path: Path, db_path: Path
) -> None:
    record_sample(store, tmp_path, run_id="a")
    record_sample(store, tmp_path, run_id="b")
    assert store.verify_run("a").ok and all(r.ok for r in store.verify_all())
    dropped = drop_triggers(store)
    assert len(dropped) >= 10
    wanted = sorted(("trigger-missing", name) for name in dropped)
    assert sorted(_store_kinds(store.verify_run("a"))) == wanted
    own, *runs = store.verify_all()
    assert own.run_id is None and sorted(_store_kinds(own)) == wanted
    assert all(p.seq is None for p in own.problems)
    assert [(r.run_id, r.ok) for r in runs] == [("a", True), ("b", True)]  # said once, not per run
    code, out = _cli("verify", "--all", "--db", str(db_path))
    lines = out.splitlines()
    assert code == 1 and lines[0] == f"store: {len(dropped)} problems"
    assert all(line.startswith("  store  trigger-missing  trigger ") for line in lines[1:-1])
    assert lines[-1] == f"verified 2 runs: 0 with problems; the store has {len(dropped)} problems"
    code, out = _cli("verify", "a", "--db", str(db_path), "--json")
    assert code == 1 and {p["kind"] for p in json.loads(out)["problems"]} == {"trigger-missing"}
    code, out = _cli("verify", "--all", "--db", str(db_path), "--json")
    doc = json.loads(out)
    assert code == 1 and (doc["ok"], doc["failed"], len(doc["store"])) == (False, 0, len(dropped))


def test_an_empty_store_without_its_triggers_fails_verify(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        drop_triggers(store)
        assert [r.run_id for r in store.verify_all()] == [None]
    assert _cli("verify", "--all", "--db", str(db_path))[0] == 1


def test_an_altered_and_an_unexpected_trigger(store: fe.Store, db_path: Path) -> None:
    store.start_run("wf", run_id="r").conclude("succeeded")
    store.conn.execute("DROP TRIGGER log_is_append_only")
    store.conn.execute(
        "CREATE TRIGGER log_is_append_only BEFORE UPDATE ON log WHEN 0 "
        "BEGIN SELECT RAISE(ABORT, 'forkline_es: log rows are never updated'); END"
    )
    store.conn.execute("CREATE TRIGGER swallow BEFORE INSERT ON log BEGIN SELECT RAISE(IGNORE); END")
    store.conn.execute("CREATE TRIGGER mine AFTER INSERT ON run_summary BEGIN SELECT 1; END")  # not ours
    problems = [p for p in store.verify_run("r").problems if p.kind in TRIGGER_KINDS]
    assert [(p.kind, p.path) for p in problems] == [
        ("trigger-altered", "log_is_append_only"),
        ("trigger-unexpected", "swallow"),
    ]
    assert "WHEN 0" in problems[0].actual and "WHEN 0" not in problems[0].expected
    assert _cli("verify", "r", "--db", str(db_path))[0] == 1


def test_an_older_schema_is_judged_by_its_own_triggers(tmp_path: Path) -> None:
    """A file at schema version 3 (e.g. a read-only copy not yet migrated) lacks version 4's
    triggers by design: only what version 3 made is expected of it."""
    conn = apsw.Connection(str(tmp_path / "v3.db"))
    conn.execute("PRAGMA foreign_keys = OFF")
    conn.execute("PRAGMA legacy_alter_table = ON")
    for version in range(3):
        with conn:
            conn.execute(MIGRATIONS[version])
            conn.execute(f"PRAGMA user_version = {version + 1}")
    cur = conn.cursor()
    assert trigger_differences(cur) == []
    conn.execute("DROP TRIGGER payload_belongs_to_a_log_row")
    found = [(d.name, d.state) for d in trigger_differences(cur)]
    assert found == [("payload_belongs_to_a_log_row", "missing")]
    conn.close()
