"""The command line on a PostgreSQL store: ``--db postgresql://...`` or ``FORKLINE_ES_DB``."""

from __future__ import annotations

import json

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
    with psycopg.connect(pg_dsn) as conn:
        tables = conn.execute("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'").fetchall()
    assert tables == [(0,)]
