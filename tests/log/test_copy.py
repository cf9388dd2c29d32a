"""``copy_store``: a store moved SQLite -> PostgreSQL -> SQLite comes back row for row."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import forkline_es as fe
from forkline_es.copying import copy_store
from forkline_es.log.copy import copy_log


def record(store: fe.Store, conclude: bool = True) -> str:
    run = store.start_run("wf", inputs={"n": 1, "text": "ünï\u2028"})
    run.begin_step("fetch", arguments={"url": "x"})
    run.invoke("fetch", 1, "http.get", "sha256:" + "c0" * 32, "ambiguous", arguments=[1, 2])
    run.result("fetch", 1, "succeeded", result={"body": "y"}, details=None)
    run.end_step("fetch", "succeeded", result="ok", event={"e": 1})
    if conclude:
        run.conclude("succeeded", outputs={"out": True})
    return run.id


def populate(store: fe.Store, tmp_path: Path) -> list[str]:
    """Runs with payloads, an artifact, an evicted run, removed payloads and a consumer."""
    consumer = store.register_consumer("shipper")
    kept = [record(store) for _ in range(3)]
    gone = record(store)
    store.evict_run(gone, reason="test", policy="manual", force=True)
    store.remove_payloads(kept[1], ["results"], reason="too big")
    source = tmp_path / "report.txt"
    source.write_text("artifact bytes")
    live = record(store, conclude=False)
    store.resume_run(live).add_artifact(source, "report")
    store.acknowledge(consumer.name, store.completions(consumer.name)[0].position)
    return [*kept, live]


#: Derived data a copy never carries: the stored record texts the exports below write
#: (the copy's first reads build and store their own).
NOT_COPIED = ("record_text",)


def tables(store: fe.Store) -> dict[str, list[tuple[Any, ...]]]:
    """Every table of a SQLite store but ``NOT_COPIED``, its rows sorted."""
    names = [
        n
        for (n,) in store.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        if not n.startswith("sqlite_") and n not in NOT_COPIED
    ]
    return {n: sorted(tuple(r) for r in store.conn.execute(f"SELECT * FROM {n}").fetchall()) for n in names}


def pg_tables(store: fe.Store, names: list[str]) -> dict[str, list[tuple[Any, ...]]]:
    out = {}
    for n in names:
        cur = store.conn.execute(f"SELECT * FROM {n}")
        out[n] = sorted(tuple(r) for r in cur.fetchall())
    return out


def test_sqlite_to_postgresql_and_back_keeps_every_row(pg_dsn: str, tmp_path: Path) -> None:
    first, last = tmp_path / "first.db", tmp_path / "last.db"
    with fe.Store.open(first) as store:
        runs = populate(store, tmp_path)
        documents = {r: store.export_run_record(r) for r in runs}
        before = tables(store)
        evictions = store.evictions()
        assert store.conn.execute("SELECT count(*) FROM record_text").fetchall()[0][0] == len(runs) - 1
    assert (
        before["eviction"] and before["consumer"] and any(r[5] == "payloads-removed" for r in before["log"])
    )
    seen: list[tuple[int, int]] = []
    report = copy_store(
        first, pg_dsn, dst_artifacts=tmp_path / "shared", progress=lambda d, t: seen.append((d, t))
    )
    assert report.log_rows == len(before["log"]) and report.artifact_files >= 1
    assert seen[0] == (0, len(before["log"])) and seen[-1] == (len(before["log"]),) * 2
    with fe.Store.open(pg_dsn, artifacts=tmp_path / "shared") as pg:
        assert pg_tables(pg, list(before)) == before
        assert pg_tables(pg, list(NOT_COPIED)) == {"record_text": []}
        assert {r: pg.export_run_record(r) for r in runs} == documents
        assert all(v.ok for v in pg.verify_all()) and pg.check_projections() == []
        assert pg.evictions() == evictions
    copy_store(pg_dsn, last, src_artifacts=tmp_path / "shared")
    with fe.Store.open(last) as back:
        assert tables(back) == before
        assert {r: back.export_run_record(r) for r in runs} == documents
        assert all(v.ok for v in back.verify_all()) and back.check_projections() == []
        back.start_run("wf", run_id="after")  # appends go on past the copied end
        ends = back.conn.execute("SELECT position FROM log WHERE run_id = 'after'").fetchall()
        assert ends[0][0] > max(p for p, *_ in before["log"])


def test_sqlite_to_sqlite_copies_artifact_files(tmp_path: Path) -> None:
    with fe.Store.open(tmp_path / "a.db") as store:
        runs = populate(store, tmp_path)
        before = tables(store)
    report = copy_store(tmp_path / "a.db", tmp_path / "b.db")
    assert report.artifacts_skipped is None and report.artifact_files >= 1
    with fe.Store.open(tmp_path / "b.db") as copy:
        assert tables(copy) == before
        assert all(copy.verify_run(r).ok for r in runs)


def test_a_non_empty_destination_is_refused_and_left_untouched(tmp_path: Path) -> None:
    with fe.Store.open(tmp_path / "a.db") as store:
        record(store)
    with fe.Store.open(tmp_path / "b.db") as other:
        gone = record(other)
        other.evict_run(gone, reason="only an end of log is left")
        other.purge_tombstones("0s")
        before = tables(other)
    assert before["log"] == [] and before["log_end"]  # no rows, yet not empty
    with pytest.raises(fe.InvalidRequest, match="not empty"):
        copy_store(tmp_path / "a.db", tmp_path / "b.db")
    with fe.Store.open(tmp_path / "b.db") as other:
        assert tables(other) == before


def test_the_cli_copies_through_its_entry_point_and_refuses_a_second_time(tmp_path: Path) -> None:
    with fe.Store.open(tmp_path / "a.db") as store:
        record(store)
        before = tables(store)
    cli = [
        str(Path(sys.executable).parent / "forkline-es"),
        "copy",
        str(tmp_path / "a.db"),
        str(tmp_path / "b.db"),
    ]
    done = subprocess.run(cli, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stderr  # no progress bar when piped
    with fe.Store.open(tmp_path / "b.db") as copy:
        assert tables(copy) == before
    again = subprocess.run(cli, capture_output=True, text=True, check=False)
    assert again.returncode == 2 and "invalid-request" in again.stderr and "not empty" in again.stderr


def test_the_cli_takes_its_source_from_db(tmp_path: Path) -> None:
    with fe.Store.open(tmp_path / "a.db") as store:
        record(store)
        before = tables(store)
    forkline_es = str(Path(sys.executable).parent / "forkline-es")
    done = subprocess.run(
        [forkline_es, "--db", str(tmp_path / "a.db"), "copy", str(tmp_path / "b.db"), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["log_rows"] == len(before["log"])
    with fe.Store.open(tmp_path / "b.db") as copy:
        assert tables(copy) == before
    both = subprocess.run(
        [forkline_es, "copy", "--db", "x.db", str(tmp_path / "a.db"), str(tmp_path / "c.db")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert both.returncode == 2 and not (tmp_path / "c.db").exists()


@pytest.mark.parametrize("batch", [1, 2, 3, 1000])
def test_every_batch_size_copies_the_same_rows(tmp_path: Path, batch: int) -> None:
    with fe.Store.open(tmp_path / "a.db") as store:
        populate(store, tmp_path)
        before = tables(store)
    seen: list[int] = []
    with fe.Store.open(tmp_path / "a.db", read_only=True) as src, fe.Store.open(tmp_path / "b.db") as dst:
        assert copy_log(src.backend, dst.backend, lambda done, total: seen.append(done), batch=batch) == len(
            before["log"]
        )
    assert seen == sorted(seen) and len(seen) == 1 + -(-len(before["log"]) // batch)
    with fe.Store.open(tmp_path / "b.db") as copy:
        copy.rebuild_projections()
        assert tables(copy) == before


def test_a_non_empty_postgresql_destination_is_refused_and_left_untouched(
    pg_dsn: str, tmp_path: Path
) -> None:
    with fe.Store.open(tmp_path / "a.db") as store:
        record(store)
    with fe.Store.open(pg_dsn) as pg:
        pg.register_consumer("only-a-consumer")
        held = pg.conn.execute("SELECT * FROM consumer").fetchall()
    with pytest.raises(fe.InvalidRequest, match=r"not empty.*consumer"):
        copy_store(tmp_path / "a.db", pg_dsn)
    with fe.Store.open(pg_dsn) as pg:
        assert pg.conn.execute("SELECT * FROM consumer").fetchall() == held
        assert pg.conn.execute("SELECT count(*) FROM log").fetchall()[0][0] == 0


def test_a_postgresql_role_that_may_not_refold_is_refused_before_a_row_is_written(
    pg_dsn: str, tmp_path: Path
) -> None:
    """The copy ends with a refold, which drops and creates the projections: only their
    owner may. A role with every other grant it needs is refused with nothing written."""
    import psycopg

    with fe.Store.open(tmp_path / "a.db") as store:
        record(store)
    fe.Store.open(pg_dsn).close()  # the owner creates the schema
    role = pg_dsn.rsplit("/", 1)[1] + "_copier"
    with psycopg.connect(pg_dsn, autocommit=True) as c:
        c.execute(f"CREATE ROLE {role} LOGIN")
        c.execute(f"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO {role}")
        c.execute(f"GRANT USAGE, SELECT, UPDATE ON SEQUENCE log_position TO {role}")
    try:
        as_copier = pg_dsn.replace("postgresql://postgres@", f"postgresql://{role}@")
        with pytest.raises(fe.StoreError, match="owner"):
            copy_store(tmp_path / "a.db", as_copier)
        with fe.Store.open(pg_dsn) as pg:
            for table in ("log", "payload", "eviction", "consumer"):
                assert pg.conn.execute(f"SELECT count(*) FROM {table}").fetchall() == [(0,)], table
        copy_store(tmp_path / "a.db", pg_dsn)  # the owner then copies into it
    finally:
        with psycopg.connect(pg_dsn, autocommit=True) as c:
            c.execute(f"DROP OWNED BY {role}")
            c.execute(f"DROP ROLE {role}")
