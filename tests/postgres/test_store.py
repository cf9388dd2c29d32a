"""``fe.Store.open(dsn)``: the same facade on PostgreSQL, its artifact files where open says."""

from __future__ import annotations

from pathlib import Path

import pytest

import forkline_es as fe


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
