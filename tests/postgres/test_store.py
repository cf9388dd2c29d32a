"""``fe.Store.open(dsn)``: the same facade on PostgreSQL, its artifact files where open says."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

import forkline_es as fe
from forkline_es.testing.backends import in_schema


def test_a_postgresql_store_without_an_artifacts_folder_refuses_artifacts_and_writes_nothing(
    pg_dsn: str, tmp_path: Path
) -> None:
    source = tmp_path / "report.txt"
    source.write_text("hello")
    with fe.Store.open(pg_dsn) as store:
        run = store.start_run("wf", run_id="r")
        with pytest.raises(fe.InvalidRequest, match="artifacts="):
            run.add_artifact(source, "report")
        assert [e["kind"] for e in store.get_run_record("r")["entries"]] == ["start"]
    with fe.Store.open(pg_dsn, artifacts=tmp_path / "shared") as store:
        run = store.resume_run("r")
        run.add_artifact(source, "report")
        (artifact,) = store.get_run_record("r")["x-artifacts"]
        assert (tmp_path / "shared" / artifact["path"]).read_text() == "hello"
        assert store.verify_run("r").ok


def test_the_location_shown_never_holds_the_password(pg_dsn: str) -> None:
    with_password = pg_dsn.replace("postgresql://postgres@", "postgresql://postgres:s3cret@")
    with fe.Store.open(with_password) as store:
        assert "s3cret" not in store.path


def test_a_rebuild_and_a_check_on_postgresql_keep_the_views_over_its_tables(pg_dsn: str) -> None:
    with fe.Store.open(pg_dsn) as store:
        store.start_run("wf", run_id="r")
        assert store.rebuild_projections() == 1  # the runs view depends on run_summary
        assert store.check_projections() == []  # its refold in a scratch schema leaves the live views
        assert [row[0] for row in store.conn.execute("SELECT run_id FROM runs").fetchall()] == ["r"]


def test_a_scratch_copy_holds_the_log_and_projections_but_no_cached_texts_or_checkpoints(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A check copies what it compares; the stored record texts and run checkpoints, which
    can weigh as much as the projections, get their tables and none of their rows."""
    from forkline_es.recording import checkpoint

    monkeypatch.setattr(checkpoint, "EVERY", 4)  # a run checkpoint after a few rows
    with fe.Store.open(pg_dsn) as store:
        run = store.start_run("wf", run_id="r")
        for i in range(6):
            run.begin_step(f"s/{i}", arguments={"i": i})
        run.conclude("succeeded")
        store.get_run_record("r")  # stores the concluded run's text
        live = {t: store.conn.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in _CACHES}
        assert live["record_text"] >= 1 and live["run_checkpoint"] >= 1, live
        with store.backend.scratch_copy() as copy, copy.snapshot() as cur:
            counted = {t: cur.execute(f"SELECT count(*) FROM {t}").fetchall()[0][0] for t in _TABLES}
        assert {t: counted[t] for t in _CACHES} == dict.fromkeys(_CACHES, 0)
        assert counted["log"] == 8 and counted["step_view"] == 6 and counted["entry"] == 8
        assert store.check_projections() == []


def test_checks_beside_a_writing_process_find_no_difference_on_postgresql(
    pg_dsn: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``rebuild --check`` in processes of its own while another process appends without
    pause, on a store holding stored texts and run checkpoints (left empty in each copy):
    each check compares one snapshot's projections with its refold and finds nothing."""
    from forkline_es.recording import checkpoint

    monkeypatch.setattr(checkpoint, "EVERY", 4)
    with fe.Store.open(pg_dsn) as store:
        for n in range(5):
            run = store.start_run("seed", run_id=f"seed-{n}")
            for i in range(6):
                run.begin_step(f"s/{i}", arguments={"i": i})
            run.conclude("succeeded")
            store.get_run_record(run.id)  # its stored text

    def events() -> int:
        with fe.Store.open(pg_dsn) as store:
            return int(store.conn.execute("SELECT count(*) FROM log").fetchall()[0][0])

    writer = subprocess.Popen(
        [sys.executable, str(_WORKER), "writer", pg_dsn], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline() == b"writing\n", writer.stderr
        counts = [events()]
        for _ in range(3):
            done = subprocess.run(
                [sys.executable, "-c", _CLI, "rebuild", "--check", "--db", pg_dsn],
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            assert done.returncode == 0, (done.stdout + done.stderr)[:3000]
            assert "the projections equal a rebuild from the log" in done.stdout
            counts.append(events())
        assert writer.poll() is None, "the writer stopped while the checks ran"
    finally:
        writer.kill()
        writer.communicate()
    assert counts == sorted(set(counts))  # the writer appended during every check


_WORKER = Path(__file__).parents[1] / "projections" / "_worker.py"
_CLI = "import sys; from forkline_es.cli import main; sys.exit(main())"
_CACHES = ("record_text", "run_checkpoint", "run_checkpoint_piece")
_TABLES = (*_CACHES, "log", "step_view", "entry")


def test_the_path_of_a_store_in_a_schema_of_its_own_opens_that_store_again(pg_dsn: str) -> None:
    """``Store.path`` keeps the DSN's options (the schema a store lives in), never its password:
    a second handle opened on it meets the first one's runs."""
    with fe.Store.open(pg_dsn) as store:
        store.conn.execute("CREATE SCHEMA tenant")
    in_tenant = in_schema(pg_dsn.replace("postgres@", "postgres:s3cret@"), "tenant")
    with fe.Store.open(in_tenant) as store:
        store.start_run("wf", run_id="in-tenant")
        assert "s3cret" not in store.path
        with fe.Store.open(store.path) as again:
            assert [s["id"] for s in again.list_runs()] == ["in-tenant"]
    with fe.Store.open(pg_dsn) as public:
        assert public.list_runs() == []


def test_gc_of_a_store_without_an_artifacts_folder_does_the_database_part_and_says_what_it_left(
    pg_dsn: str,
) -> None:
    """A PostgreSQL store opened without ``artifacts=`` has no folder to sweep: gc still
    deletes the stored texts no read can take and reports the database, and its report says
    the artifact files were not swept, rather than failing after it wrote."""
    with fe.Store.open(pg_dsn) as store:
        run = store.start_run("wf", run_id="r")
        run.conclude("succeeded")
        store.get_run_record("r")  # stores the concluded run's text
        store.conn.execute("DELETE FROM record_text")
        store.conn.execute(
            "INSERT INTO record_text (run_id, seq, digest, format, size, text) "
            "SELECT run_id, seq, digest, -1, 0, '\\x00' FROM log WHERE run_id = 'r' AND seq = 1"
        )  # a text of another projector version: stale
        report = store.gc()
        assert store.conn.execute("SELECT count(*) FROM record_text").fetchall() == [(0,)]
    assert report.artifact_files_removed == 0
    assert not report.complete
    assert any("artifact files were not swept" in why and "--artifacts" in why for why in report.not_done)


def test_gc_drops_the_schema_a_killed_check_left_and_never_a_live_checks(pg_dsn: str, tmp_path: Path) -> None:
    """A check copies the log, every payload value included, into a schema of its own: one
    whose process was killed stays, so gc drops it (eviction and removal would never reach
    the values there), and leaves a running check's alone (its session holds the lock)."""
    with fe.Store.open(pg_dsn) as store:
        store.start_run("wf", run_id="r", inputs={"secret": "x" * 100})
    script = (
        "import sys, time, forkline_es as fe\n"
        "store = fe.Store.open(sys.argv[1])\n"
        "with store.backend.scratch_copy():\n"
        "    print('copied', flush=True)\n"
        "    time.sleep(600)\n"
    )
    killed = subprocess.Popen([sys.executable, "-c", script, pg_dsn], stdout=subprocess.PIPE, text=True)
    try:
        assert killed.stdout is not None and killed.stdout.readline() == "copied\n"
        with fe.Store.open(pg_dsn) as store, store.backend.scratch_copy():  # a live check beside it
            schemas = _check_schemas(store)
            assert len(schemas) == 2
            killed.kill()
            killed.wait()
            deadline = time.monotonic() + 30
            while store.gc().leftover_files_removed == 0:  # the server ends the dead session soon
                assert time.monotonic() < deadline, "the killed check's session never ended"
                time.sleep(0.05)
            (live,) = _check_schemas(store)  # this check's, still there while it runs
            assert live in schemas
        with fe.Store.open(pg_dsn) as store:
            assert _check_schemas(store) == []  # dropped when the check ended
            assert store.verify_run("r").ok
    finally:
        killed.kill()
        killed.wait()


def _check_schemas(store: fe.Store) -> list[str]:
    rows = store.conn.execute("SELECT nspname FROM pg_namespace WHERE nspname LIKE 'forkline_check_%'")
    return sorted(n for (n,) in rows.fetchall())
