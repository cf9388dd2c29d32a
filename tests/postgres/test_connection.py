"""Connections: what a DSN that cannot be reached says, and numbers as SQLite gives them."""

from __future__ import annotations

import socket

import pytest

import forkline_es as fe
from forkline_es.log.postgres.connection import connect
from forkline_es.log.postgres.cursor import PgCursor


def test_an_unreachable_server_is_a_store_error_that_never_shows_the_password() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with pytest.raises(fe.StoreError) as info:
        connect(f"postgresql://app:s3cret-pw@127.0.0.1:{port}/runs?connect_timeout=5")
    message = str(info.value)
    assert f"postgresql://app@127.0.0.1:{port}/runs" in message
    assert "s3cret-pw" not in message


def test_numbers_come_back_as_sqlite_gives_them(pg_dsn: str) -> None:
    with connect(pg_dsn) as conn:
        cur = PgCursor(conn.cursor())
        ((total, half, count, exists),) = cur.execute(
            "SELECT sum(x), sum(x) / 2.0, count(*), EXISTS (SELECT 1) FROM unnest(?::bigint[]) AS t(x)",
            ([2**40, 3],),
        ).fetchall()
    assert (total, type(total)) == (2**40 + 3, int)
    assert (half, type(half)) == ((2**40 + 3) / 2, float)
    assert count == 2 and exists == 1


def test_the_lock_timeout_is_set(pg_dsn: str) -> None:
    with connect(pg_dsn, lock_timeout_ms=1234) as conn:
        assert conn.execute("SHOW lock_timeout").fetchall() == [("1234ms",)]
    with connect(pg_dsn) as conn:
        assert conn.execute("SHOW lock_timeout").fetchall() == [("30s",)]
