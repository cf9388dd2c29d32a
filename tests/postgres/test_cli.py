"""The command line on a PostgreSQL store: ``--db postgresql://...`` or ``FORKLINE_ES_DB``."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import psycopg
from click.testing import CliRunner

import forkline_es as fe
from forkline_es.cli import main


def test_the_cli_reads_a_postgresql_store_named_by_flag_or_environment(pg_dsn: str) -> None:
    with fe.Store.open(pg_dsn) as store:
        run = store.start_run("wf", run_id="r1", inputs={"q": "hello"})
        run.begin_step("s")
        run.end_step("s", "succeeded")
        run.conclude("succeeded")
        expected = store.export_run_record("r1")
    runner = CliRunner()
    by_flag = runner.invoke(main, ["--db", pg_dsn, "export", "r1"])
    assert by_flag.exit_code == 0, by_flag.output
    assert by_flag.output.encode().rstrip(b"\n") == expected
    by_env = runner.invoke(main, ["runs", "--json"], env={"FORKLINE_ES_DB": pg_dsn})
    assert by_env.exit_code == 0, by_env.output
    assert [r["id"] for r in json.loads(by_env.output)] == ["r1"]
    verified = runner.invoke(main, ["verify", "r1"], env={"FORKLINE_ES_DB": pg_dsn})
    assert verified.exit_code == 0, verified.output


def test_a_postgresql_database_without_a_store_is_refused_and_left_empty(pg_dsn: str) -> None:
    result = CliRunner().invoke(main, ["--db", pg_dsn, "runs"])
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert f"forkline-es demo --db {pg_dsn}" in result.output  # what to do, as for a missing file
    with psycopg.connect(pg_dsn) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchall()
    assert tables == [(0,)]


def test_artifact_files_of_a_postgresql_store_come_from_the_artifacts_option(
    pg_dsn: str, tmp_path: Path
) -> None:
    shared = tmp_path / "shared-artifacts"
    with fe.Store.open(pg_dsn, artifacts=shared) as store:
        run = store.start_run("wf", run_id="r1")
        run.add_artifact(b"report body", "report", content_type="text/plain")
        run.conclude("succeeded")
    runner = CliRunner()
    without = runner.invoke(main, ["--db", pg_dsn, "verify", "r1"])
    assert without.exit_code == 2, without.output
    assert "--artifacts" in without.output
    by_flag = runner.invoke(main, ["--db", pg_dsn, "--artifacts", str(shared), "verify", "r1"])
    assert by_flag.exit_code == 0, by_flag.output
    by_env = runner.invoke(
        main, ["verify", "r1"], env={"FORKLINE_ES_DB": pg_dsn, "FORKLINE_ES_ARTIFACTS": str(shared)}
    )
    assert by_env.exit_code == 0, by_env.output
    (next(p for p in shared.rglob("*") if p.is_file())).write_bytes(b"tampered")
    tampered = runner.invoke(main, ["--db", pg_dsn, "--artifacts", str(shared), "verify", "r1"])
    assert tampered.exit_code == 1, tampered.output


def test_the_demos_next_commands_on_postgresql_run_as_printed(pg_dsn: str, tmp_path: Path) -> None:
    """On PostgreSQL the demo suggests ``verify --all`` (a refold of each run in memory, which
    any role may run) where on SQLite it suggests ``rebuild --check`` (a schema of its own
    there, which only the owner may create)."""
    folder = tmp_path / "shared"
    result = CliRunner().invoke(main, ["--artifacts", str(folder), "demo", "--db", pg_dsn, "--json"])
    assert result.exit_code == 0, result.output
    suggested = [shlex.split(c) for c in json.loads(result.output)["next"]]
    assert [c[3:5] for c in suggested][-1] == ["verify", "--all"]
    assert not any(c[3] == "rebuild" for c in suggested)
    for argv in suggested:
        ran = CliRunner().invoke(main, ["--no-pager", *argv[1:]])
        assert ran.exit_code == (1 if argv[3] == "diff" else 0), (argv, ran.output)
