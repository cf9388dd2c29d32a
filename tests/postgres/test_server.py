"""The throwaway PostgreSQL server the PostgreSQL tests and benchmarks run on."""

from __future__ import annotations

import shutil
from pathlib import Path

import psycopg
import pytest

from forkline_es.testing import postgres
from forkline_es.testing.postgres import PostgresServer, PostgresUnavailable


def test_a_database_per_test_on_a_durable_loopback_server(pg_server: PostgresServer, pg_dsn: str) -> None:
    with psycopg.connect(pg_dsn) as conn:
        settings = dict(
            conn.execute(
                "SELECT name, setting FROM pg_settings WHERE name IN "
                "('fsync', 'synchronous_commit', 'full_page_writes', 'listen_addresses', 'port')"
            ).fetchall()
        )
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname NOT IN ('pg_catalog', 'information_schema')"
        ).fetchone()
        database = conn.execute("SELECT current_database()").fetchone()
    assert settings == {
        "fsync": "on",
        "synchronous_commit": "on",
        "full_page_writes": "on",
        "listen_addresses": "127.0.0.1",
        "port": str(pg_server.port),
    }
    assert tables == (0,)
    assert database is not None and pg_dsn.endswith("/" + database[0])


def test_settings_override_and_stop_removes_everything() -> None:
    with PostgresServer(settings={"synchronous_commit": "off"}) as server:
        folder = server.folder
        assert folder is not None and (folder / "data" / "PG_VERSION").exists()
        dsn = server.create_database("bench")
        with psycopg.connect(dsn) as conn:
            assert conn.execute("SHOW synchronous_commit").fetchone() == ("off",)
            assert conn.execute("SHOW fsync").fetchone() == ("on",)
    assert not folder.exists()
    with pytest.raises(psycopg.OperationalError):
        psycopg.connect(dsn, connect_timeout=2)


def test_a_bad_database_name_is_refused(pg_server: PostgresServer) -> None:
    with pytest.raises(ValueError, match="identifier"):
        pg_server.create_database('x"; DROP DATABASE postgres; --')
    with pytest.raises(ValueError, match="identifier"):
        pg_server.drop_database('postgres"; --')


def test_a_database_is_dropped_with_connections_still_open(pg_server: PostgresServer) -> None:
    dsn = pg_server.create_database("dropped")
    left_open = psycopg.connect(dsn)
    pg_server.drop_database("dropped")
    with psycopg.connect(pg_server.dsn()) as conn:
        assert conn.execute("SELECT count(*) FROM pg_database WHERE datname = 'dropped'").fetchone() == (0,)
    with pytest.raises(psycopg.OperationalError):
        left_open.execute("SELECT 1")
    left_open.close()


def test_no_server_binaries_is_an_error_that_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(postgres.glob, "glob", lambda pattern: [])
    monkeypatch.setenv("PATH", str(tmp_path))
    assert shutil.which("initdb") is None
    with pytest.raises(PostgresUnavailable, match="apt-get install -y postgresql"):
        PostgresServer()
