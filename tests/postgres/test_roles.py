"""The roles docs/postgres.md gives executors and retention, run as the doc writes them."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

import forkline_es as fe

DOC = Path(__file__).parents[2] / "docs" / "postgres.md"


def doc_sql(marker: str) -> str:
    """The ```sql block that follows ``<!-- roles:marker -->`` in docs/postgres.md."""
    found = re.search(rf"<!-- roles:{marker} -->\n```sql\n(.*?)```", DOC.read_text(), re.S)
    assert found is not None, f"docs/postgres.md has no roles:{marker} block"
    return found[1]


def as_role(dsn: str, role: str) -> str:
    return re.sub(r"^postgresql://[^@]+@", f"postgresql://{role}@", dsn)


@pytest.fixture
def roles(pg_dsn: str) -> Iterator[tuple[str, str]]:
    """(application, maintenance): the documented roles, granted as docs/postgres.md writes
    it on a store the owner created with one concluded run "old"; dropped afterwards."""
    database = pg_dsn.rsplit("/", 1)[1]
    app, maintenance = f"{database}_app", f"{database}_maint"  # roles are the whole server's
    with fe.Store.open(pg_dsn) as owner:  # the owner creates the schema
        owner.start_run("wf", run_id="old").conclude("succeeded")
    with psycopg.connect(pg_dsn, autocommit=True) as c:
        for marker in ("application", "maintenance"):
            sql = doc_sql(marker).replace("fe_maintenance", maintenance).replace("fe_app", app)
            for statement in filter(str.strip, sql.split(";")):
                c.execute(statement)
    try:
        yield app, maintenance
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as c:
            for role in (maintenance, app):
                c.execute(f"DROP OWNED BY {role}")
                c.execute(f"DROP ROLE {role}")


def test_the_documented_roles_record_and_retain_and_rewrite_nothing(
    pg_dsn: str, roles: tuple[str, str]
) -> None:
    app, maintenance = roles
    with fe.Store.open(as_role(pg_dsn, app)) as store:
        run = store.start_run("wf", run_id="r", inputs={"q": "hello"})
        run.begin_step("s")
        run.end_step("s", "succeeded")
        run.conclude("succeeded")
        assert [e["kind"] for e in store.get_run_record("r")["entries"]][-1] == "conclude"
        stored = store.conn.execute("SELECT run_id, seq FROM record_text").fetchall()
        assert stored == [("r", 4)]  # the first read stored its text, as the executor
        with pytest.raises(fe.StoreError, match="the maintenance role runs retention"):
            store.evict_run("old", reason="not mine")  # retention is not the executor's to do
        with pytest.raises(fe.StoreError, match=r"the owner .* runs rebuild --check"):
            store.check_projections()  # its throwaway schema is the owner's to make
        assert store.get_run_record("old")["run"]["status"] == "succeeded"
    for statement in (
        "DELETE FROM log",
        "UPDATE log SET kind = 'x'",
        "TRUNCATE log",
        "DELETE FROM payload",
    ):
        with (
            psycopg.connect(as_role(pg_dsn, app), autocommit=True) as c,
            pytest.raises(psycopg.errors.InsufficientPrivilege),
        ):
            c.execute(statement)
    with fe.Store.open(as_role(pg_dsn, maintenance)) as store:
        store.remove_payloads("r", reason="privacy")
        store.evict_run("old", reason="expired")
        store.register_consumer("billing")
        with pytest.raises(fe.RunNotRetained):
            store.get_run_record("old")
        assert store.verify_run("r").ok
        assert store.conn.execute("SELECT count(*) FROM record_text").fetchall() == [(0,)]
        report = store.gc()  # no artifact folder given: the database part only, said so
        assert [why[:34] for why in report.not_done] == ["artifact files were not swept: thi"]
    with (
        psycopg.connect(as_role(pg_dsn, maintenance), autocommit=True) as c,
        pytest.raises(psycopg.errors.RestrictViolation),
    ):
        c.execute("DELETE FROM log WHERE run_id = 'r'")  # the triggers still decide


def test_the_roles_keep_their_grants_through_a_rebuild_by_the_owner(
    pg_dsn: str, roles: tuple[str, str]
) -> None:
    """A rebuild drops and creates the projection tables (and the views over them): the
    grants other roles hold on them are given back in the same transaction."""
    app, maintenance = roles
    with psycopg.connect(pg_dsn, autocommit=True) as c:
        before = c.execute(_GRANTS).fetchall()
    with fe.Store.open(pg_dsn) as owner:
        assert owner.rebuild_projections() == 2
    with psycopg.connect(pg_dsn, autocommit=True) as c:
        assert c.execute(_GRANTS).fetchall() == before
    with fe.Store.open(as_role(pg_dsn, app)) as store:
        run = store.start_run("wf", run_id="r")
        run.begin_step("s")
        run.end_step("s", "succeeded")
        run.conclude("succeeded")
        assert [r["id"] for r in store.list_runs()] == ["r", "old"]
        assert store.conn.execute("SELECT count(*) FROM runs").fetchall() == [(2,)]
    with fe.Store.open(as_role(pg_dsn, maintenance)) as store:
        store.evict_run("old", reason="expired")


#: Every privilege granted on a relation of the schema, as (relation, grantee, privilege).
_GRANTS = (
    "SELECT table_name, grantee, privilege_type FROM information_schema.role_table_grants "
    "WHERE table_schema = current_schema() AND grantee <> current_user ORDER BY 1, 2, 3"
)
