"""verify on PostgreSQL reports the log's triggers gone, disabled, rewritten or added.

The owner can drop a trigger, ``ALTER TABLE ... DISABLE TRIGGER`` it (for every session
after), or ``CREATE OR REPLACE`` its function with a body that lets everything through;
each takes the rules away from every client, and verify must say so.
"""

from __future__ import annotations

import psycopg
import pytest
from click.testing import CliRunner

import forkline_es as fe
from forkline_es.cli.main import main
from forkline_es.log.postgres.schema import SCHEMA_VERSION, migration
from forkline_es.log.postgres.triggers import _expected

LET_THROUGH = (
    "CREATE OR REPLACE FUNCTION {f}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NEW; END $$"
)


def _store_problems(store: fe.Store) -> list[tuple[str, str | None, str | None]]:
    (report,) = [r for r in store.verify_all() if r.run_id is None] or [fe.VerifyReport(None, ())]
    return [(p.kind, p.path, p.actual) for p in report.problems]


def test_a_new_store_has_exactly_the_triggers_its_migrations_make(pg_dsn: str) -> None:
    with fe.Store.open(pg_dsn) as store:
        store.start_run("wf", run_id="r").conclude("succeeded")
        assert _store_problems(store) == []
        assert store.verify_run("r").ok
    expected = _expected(SCHEMA_VERSION, "public")
    rules = {"log_insert_rules", "log_is_append_only", "log_is_never_truncated", "payload_is_immutable"}
    assert rules <= set(expected)
    assert all(": None" not in t.text for t in expected.values())  # every function's body was found
    assert sum(migration(v, "public").count("CREATE TRIGGER") for v in range(SCHEMA_VERSION)) == len(expected)


@pytest.mark.parametrize(
    ("tamper", "kind", "name", "says"),
    [
        (
            "ALTER TABLE log DISABLE TRIGGER log_insert_rules",
            "trigger-altered",
            "log_insert_rules",
            "(disabled)",
        ),
        ("ALTER TABLE log DISABLE TRIGGER USER", "trigger-altered", "log_is_append_only", "(disabled)"),
        (
            "ALTER TABLE payload ENABLE REPLICA TRIGGER payload_is_immutable",
            "trigger-altered",
            "payload_is_immutable",
            "(fires only in replica sessions)",
        ),
        (LET_THROUGH.format(f="log_is_append_only"), "trigger-altered", "log_is_append_only", "RETURN NEW"),
        ("DROP TRIGGER log_is_never_truncated ON log", "trigger-missing", "log_is_never_truncated", None),
        (
            "CREATE TRIGGER sneaky BEFORE DELETE ON payload FOR EACH ROW EXECUTE FUNCTION never_truncated()",
            "trigger-unexpected",
            "sneaky",
            "never_truncated",
        ),
    ],
)
def test_each_tampering_is_a_store_problem_of_every_run(
    pg_dsn: str, tamper: str, kind: str, name: str, says: str | None
) -> None:
    with fe.Store.open(pg_dsn) as store:
        store.start_run("wf", run_id="r").conclude("succeeded")
        with psycopg.connect(pg_dsn, autocommit=True) as owner:
            owner.execute(tamper)
        found = [p for p in _store_problems(store) if p[1] == name]
        assert len(found) == 1 and found[0][0] == kind, _store_problems(store)
        assert says is None if found[0][2] is None else says in found[0][2]
        assert not store.verify_run("r").ok  # each run's report carries the store's problems
    out = CliRunner().invoke(main, ["verify", "--all", "--db", pg_dsn])
    assert out.exit_code == 1 and kind in out.output, out.output


def test_a_trigger_on_a_projection_table_is_not_judged(pg_dsn: str) -> None:
    """Projection tables are read models an operator may watch; only the log's tables are the rules'."""
    with fe.Store.open(pg_dsn) as store, psycopg.connect(pg_dsn, autocommit=True) as owner:
        owner.execute("CREATE FUNCTION mine() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN RETURN NULL; END$$")
        owner.execute("CREATE TRIGGER mine AFTER INSERT ON run_summary FOR EACH ROW EXECUTE FUNCTION mine()")
        store.start_run("wf", run_id="r")
        assert _store_problems(store) == []
