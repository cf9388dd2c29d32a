"""The PostgreSQL triggers hold for any client: a raw psycopg connection, not the library.

Each refusal leaves the tables as they were; what the rules allow (an evicted run's rows
after its values, a value whose removal is recorded) goes through.
"""

from __future__ import annotations

import hashlib
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any, ClassVar

import psycopg
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from psycopg import errors as pg

import forkline_es as fe
from forkline_es.log.postgres.connection import connect, ensure_schema, schema_version, translate
from forkline_es.log.postgres.cursor import PgCursor
from forkline_es.log.postgres.schema import END_OF_LOG, SCHEMA_VERSION, VERSION_TABLE
from forkline_es.log.schema import EVICTED_RUN_REFUSED
from forkline_es.testing.postgres import PostgresServer

COLUMNS = "run_id, seq, entry, generation, kind, at, key, body, digest, prev"


def _prev(run_id: str, seq: int) -> str | None:
    """The digest ``Raw.append`` gave the run's row before ``seq``."""
    return f"d:{run_id}:{seq - 1}" if seq > 1 else None


class Raw:
    """A plain psycopg connection (autocommit): what an operator's psql would do."""

    opened: ClassVar[list[Raw]] = []  # closed after each test by close_raw_connections

    def __init__(self, dsn: str) -> None:
        self.conn = psycopg.connect(dsn, autocommit=True)
        Raw.opened.append(self)

    def __call__(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        cur = self.conn.execute(sql, params or None)
        return cur.fetchall() if cur.description is not None else []

    def refused(self, sql: str, params: tuple[Any, ...] = ()) -> psycopg.Error:
        with pytest.raises(psycopg.Error) as info:
            self(sql, params)
        return info.value

    def append(
        self, run_id: str, seq: int, *, kind: str = "k", body: str = '{"a":1}', values: int = 0
    ) -> int:
        ((position,),) = self(
            f"INSERT INTO log ({COLUMNS}) VALUES (%s, %s, NULL, 0, %s, 't', %s, %s, %s, %s) "
            "RETURNING position",  # each row names the one before it (log_insert_rules)
            (run_id, seq, kind, f"{run_id}:{seq}", body, f"d:{run_id}:{seq}", _prev(run_id, seq)),
        )
        for k in range(values):
            self(
                "INSERT INTO payload (id, position, slot, value) VALUES (%s, %s, %s, %s)",
                (position * 16 + k, position, f"s{k}", str(k)),
            )
        return int(position)

    def evict(self, run_id: str) -> None:
        ((last,),) = self("SELECT max(position) FROM log WHERE run_id = %s", (run_id,))
        self(
            "INSERT INTO eviction (run_id, position, at, reason) VALUES (%s, %s, 't', 'test')", (run_id, last)
        )

    def tables(self) -> tuple[list[tuple[Any, ...]], ...]:
        return tuple(self(f"SELECT * FROM {t} ORDER BY 1") for t in ("log", "payload", "eviction", "log_end"))


@pytest.fixture(autouse=True)
def close_raw_connections() -> Iterator[None]:
    yield
    while Raw.opened:
        Raw.opened.pop().conn.close()


@pytest.fixture
def raw(pg_dsn: str) -> Raw:
    """A store's tables holding two runs, r1 and r2, of three rows with two values each."""
    with connect(pg_dsn) as conn:
        ensure_schema(conn)
    r = Raw(pg_dsn)
    for run in ("r1", "r2"):
        for seq in (1, 2, 3):
            r.append(run, seq, values=2)
    return r


def refusal(error: psycopg.Error) -> str:
    assert isinstance(error, pg.RestrictViolation), repr(error)
    assert error.diag.message_primary is not None
    return error.diag.message_primary


@pytest.mark.parametrize(
    ("statement", "message"),
    [
        ("UPDATE log SET kind = 'tampered' WHERE run_id = 'r1'", "never updated"),
        ("UPDATE log SET body = body", "never updated"),
        ("UPDATE log SET seq = seq + 100 WHERE run_id = 'r1'", "never updated"),
        (
            f"INSERT INTO log ({COLUMNS}) SELECT {COLUMNS} FROM log WHERE seq = 1 "
            "ON CONFLICT (run_id, seq) DO UPDATE SET body = '{}'",
            "never updated",
        ),
        (  # an old position is refused before its clash could become an update
            f"INSERT INTO log (position, {COLUMNS}) SELECT position, {COLUMNS} FROM log WHERE seq = 1 "
            "ON CONFLICT (position) DO UPDATE SET kind = 'tampered'",
            "past the end of the log",
        ),
    ],
)
def test_no_log_row_is_ever_updated(raw: Raw, statement: str, message: str) -> None:
    raw.evict("r1")  # not even an evicted run's rows may change
    before = raw.tables()
    assert message in refusal(raw.refused(statement))
    assert raw.tables() == before


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE payload SET value = '666'",
        "INSERT INTO payload SELECT * FROM payload ON CONFLICT (id) DO UPDATE SET value = '666'",
    ],
)
def test_no_payload_value_is_ever_updated(raw: Raw, statement: str) -> None:
    raw.evict("r1")
    before = raw.tables()
    assert "never updated" in refusal(raw.refused(statement))
    assert raw.tables() == before


def test_an_insert_never_replaces_a_row(raw: Raw) -> None:
    before = raw.tables()
    seq_taken = raw.refused(f"INSERT INTO log ({COLUMNS}) SELECT {COLUMNS} FROM log WHERE position = 1")
    assert isinstance(seq_taken, pg.UniqueViolation)
    assert isinstance(translate(seq_taken, "append"), fe.Conflict)
    positioned = raw.refused(  # r1's next row, following its seq 3, at a position taken
        f"INSERT INTO log (position, {COLUMNS}) SELECT position, run_id, 4, entry, generation, kind, at, "
        "key, body, digest, 'd:r1:3' FROM log WHERE position = 1"
    )
    assert "past the end of the log" in refusal(positioned)
    value = raw.refused("INSERT INTO payload SELECT id, position, slot, '666' FROM payload WHERE id = 16")
    assert isinstance(value, pg.UniqueViolation)
    assert raw.tables() == before


def test_a_position_given_past_the_end_is_kept_and_the_next_ones_follow_it(raw: Raw) -> None:
    raw(
        f"INSERT INTO log (position, {COLUMNS}) "
        "VALUES (100, 'r3', 1, NULL, 0, 'k', 't', 'x', 'b', 'd:r3:1', NULL)"
    )
    assert raw.append("r3", 2) == 101  # its prev is "d:r3:1", the digest of the row above
    assert raw(f"SELECT {END_OF_LOG}") == [(101,)]


@pytest.mark.parametrize(
    "statement",
    [
        "INSERT INTO log_end (id, position) VALUES (1, 500)",
        "INSERT INTO eviction (run_id, position, at, reason) VALUES ('gone', 500, 't', 'copied')",
    ],
)
def test_an_end_of_the_log_copied_in_moves_the_positions_past_it(raw: Raw, statement: str) -> None:
    raw(statement)
    assert raw.append("r3", 1) == 501


@pytest.mark.parametrize("table", ["log", "payload", "eviction"])
@pytest.mark.parametrize("how", ["", " CASCADE", " RESTART IDENTITY"])
def test_truncate_is_refused(raw: Raw, table: str, how: str) -> None:
    raw.evict("r1")
    before = raw.tables()
    assert "never truncated" in refusal(raw.refused(f"TRUNCATE {table}{how}"))
    assert raw.tables() == before


def test_log_rows_go_only_for_an_evicted_run_and_after_their_values(raw: Raw) -> None:
    before = raw.tables()
    assert "eviction is recorded" in refusal(raw.refused("DELETE FROM log WHERE run_id = 'r1'"))
    raw.evict("r2")  # another run's eviction frees nothing of r1
    assert "eviction is recorded" in refusal(raw.refused("DELETE FROM log WHERE run_id = 'r1'"))
    raw.evict("r1")
    assert "after its payload values" in refusal(raw.refused("DELETE FROM log WHERE run_id = 'r1'"))
    assert raw.tables()[:2] == before[:2]
    raw("DELETE FROM payload WHERE position IN (SELECT position FROM log WHERE run_id = 'r1')")
    raw("DELETE FROM log WHERE run_id = 'r1'")
    assert raw("SELECT DISTINCT run_id FROM log") == [("r2",)]
    assert raw("SELECT count(*) FROM payload") == [(6,)]


def test_a_value_goes_only_when_its_run_is_evicted_or_its_removal_is_recorded(raw: Raw) -> None:
    ((p1,),) = raw("SELECT position FROM log WHERE run_id = 'r1' AND seq = 1")
    ((p2,),) = raw("SELECT position FROM log WHERE run_id = 'r2' AND seq = 1")
    assert "removal is recorded" in refusal(raw.refused("DELETE FROM payload WHERE position = %s", (p1,)))
    removal = f'{{"removed":[[{p1},"s0"]],"policy":"test"}}'
    raw.append("r2", 4, kind="payloads-removed", body=removal)  # another run's event names it
    assert "removal is recorded" in refusal(raw.refused("DELETE FROM payload WHERE position = %s", (p1,)))
    raw.append("r1", 4, kind="payloads-removed", body=removal)
    refusal(raw.refused("DELETE FROM payload WHERE position = %s AND slot = 's1'", (p1,)))  # not named
    raw("DELETE FROM payload WHERE position = %s AND slot = 's0'", (p1,))
    assert raw("SELECT slot FROM payload WHERE position = %s", (p1,)) == [("s1",)]
    raw.evict("r2")
    raw("DELETE FROM payload WHERE position = %s", (p2,))
    assert raw("SELECT count(*) FROM payload WHERE position = %s", (p2,)) == [(0,)]


def test_a_value_needs_its_log_row(raw: Raw) -> None:
    error = raw.refused(
        "INSERT INTO payload (id, position, slot, value) VALUES (%s, %s, 'x', '1')", (999 * 16, 999)
    )
    assert "needs its log row" in refusal(error)


def test_an_evicted_run_takes_no_more_rows(raw: Raw) -> None:
    raw.evict("r1")
    before = raw.tables()
    error = raw.refused(
        f"INSERT INTO log ({COLUMNS}) VALUES ('r1', 4, NULL, 0, 'k', 't', 'x', 'b', 'd', NULL)"
    )
    assert EVICTED_RUN_REFUSED in refusal(error)
    assert isinstance(translate(error, "append"), fe.RunNotRetained)
    # a seq the evicted run still holds is the append race it always was: conflict
    taken = raw.refused(
        f"INSERT INTO log ({COLUMNS}) SELECT {COLUMNS} FROM log WHERE run_id = 'r1' AND seq = 3"
    )
    assert isinstance(translate(taken, "append"), fe.Conflict)
    assert raw.tables() == before


def test_the_rules_hold_whatever_search_path_the_client_has(raw: Raw) -> None:
    raw.evict("r1")
    raw("CREATE SCHEMA decoy")
    raw("CREATE TABLE decoy.eviction (run_id text, position bigint)")  # empty: would evict nothing
    raw("SET search_path = decoy, pg_catalog")
    evicted = raw.refused(
        f"INSERT INTO public.log ({COLUMNS}) VALUES ('r1', 4, NULL, 0, 'k', 't', 'x', 'b', 'd', NULL)"
    )
    assert EVICTED_RUN_REFUSED in refusal(evicted)
    assert "never updated" in refusal(raw.refused("UPDATE public.log SET kind = 'x'"))
    ((position,),) = raw(
        f"INSERT INTO public.log ({COLUMNS}) VALUES ('r2', 4, NULL, 0, 'k', 't', 'x', 'b', 'd', 'd:r2:3') "
        "RETURNING position"
    )
    assert position == 7


def test_deleting_an_eviction_record_keeps_the_end_of_the_log(raw: Raw) -> None:
    raw.append("r3", 1, values=1)
    raw.evict("r3")
    ((end,),) = raw(f"SELECT {END_OF_LOG}")
    raw("DELETE FROM payload WHERE position IN (SELECT position FROM log WHERE run_id = 'r3')")
    raw("DELETE FROM log WHERE run_id = 'r3'")
    raw("DELETE FROM eviction WHERE run_id = 'r3'")
    assert raw("SELECT position FROM log_end") == [(end,)]
    assert raw(f"SELECT {END_OF_LOG}") == [(end,)]
    assert raw.append("r4", 1) == end + 1


def test_an_append_in_flight_when_its_run_is_evicted_is_kept_or_refused_never_orphaned(pg_dsn: str) -> None:
    with connect(pg_dsn) as conn:
        ensure_schema(conn)
    writer, evictor = Raw(pg_dsn), Raw(pg_dsn)
    writer.append("r1", 1)
    writer("BEGIN")
    writer.append("r1", 2)  # holds its run's lock until it commits
    evictor("SET lock_timeout = 200")
    timed_out = evictor.refused(
        "INSERT INTO eviction (run_id, position, at, reason) VALUES ('r1', 2, 't', 'x')"
    )
    assert isinstance(translate(timed_out, "evict"), fe.Conflict)
    writer("COMMIT")
    evictor.evict("r1")
    evictor("DELETE FROM log WHERE run_id = 'r1'")
    assert evictor("SELECT count(*) FROM log") == [(0,)]


# -- the text itself ---------------------------------------------------------------------

bodies = st.text(st.characters(exclude_characters="\x00", exclude_categories=["Cs"]), max_size=300)


@pytest.fixture(scope="module")
def texts(pg_server: PostgresServer) -> Iterator[PgCursor]:
    dsn = pg_server.create_database("texts_module")
    with connect(dsn) as conn:
        ensure_schema(conn)
        yield PgCursor(conn.cursor())


@settings(max_examples=60)
@given(body=bodies, value=bodies)
def test_bodies_and_values_round_trip_byte_for_byte(texts: PgCursor, body: str, value: str) -> None:
    cur = texts
    last_row = "SELECT seq, digest FROM log WHERE run_id = 'text' ORDER BY seq DESC LIMIT 1"
    last = cur.execute(last_row).fetchall()
    seq, prev = (last[0][0] + 1, last[0][1]) if last else (1, None)
    ((position,),) = cur.execute(
        f"INSERT INTO log ({COLUMNS}) VALUES (?, ?, NULL, 0, 'k', 't', ?, ?, ?, ?) RETURNING position",
        ("text", seq, f"k{seq}", body, hashlib.sha256(body.encode()).hexdigest(), prev),
    ).fetchall()
    cur.execute(
        "INSERT INTO payload (id, position, slot, value) VALUES (?, ?, 's', ?)",
        (position * 16, position, value),
    )
    ((got_body, digest, got_value, octets),) = cur.execute(
        "SELECT l.body, l.digest, p.value, octet_length(l.body) FROM log AS l "
        "JOIN payload AS p ON p.id = l.position * 16 WHERE l.position = ?",
        (position,),
    ).fetchall()
    assert got_body.encode() == body.encode()
    assert hashlib.sha256(got_body.encode()).hexdigest() == digest
    assert got_value.encode() == value.encode()
    assert octets == len(body.encode())


@settings(max_examples=30)
@given(run_ids=st.lists(bodies.filter(bool), min_size=2, max_size=8, unique=True))
def test_run_ids_sort_in_code_point_order(texts: PgCursor, run_ids: list[str]) -> None:
    """The log's own collation, whatever the database's locale: code points, as SQLite's BINARY."""
    for run_id in run_ids:
        texts.execute(
            f"INSERT INTO log ({COLUMNS}) VALUES (?, 1, NULL, 0, 'k', 't', 'k', '{{}}', 'd', NULL) "
            "ON CONFLICT (run_id, seq) DO NOTHING",
            (run_id,),
        )
    got = texts.execute(
        "SELECT run_id FROM log WHERE run_id = ANY(?) AND seq = 1 ORDER BY run_id", (run_ids,)
    )
    assert [r for (r,) in got] == sorted(run_ids)


# -- the schema itself -------------------------------------------------------------------

_OPEN: str = """
import sys
from forkline_es.log.postgres.connection import connect, ensure_schema
with connect(sys.argv[1]) as conn:
    ensure_schema(conn)
print("ok")
"""


@pytest.mark.parametrize("attempt", range(3))
def test_several_processes_creating_the_schema_at_once_create_it_once(pg_dsn: str, attempt: int) -> None:
    """Eight processes on a fresh database: one creates, the others wait and find it made.
    (A host whose lock-free first look straddled another's creation once took our tables
    for another application's: one failure in about fifteen such rounds of ten.)"""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN, pg_dsn], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        for _ in range(8)
    ]
    results = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 8, results
    raw = Raw(pg_dsn)
    assert raw(f"SELECT version FROM {VERSION_TABLE}") == [(SCHEMA_VERSION,)]
    assert raw("SELECT count(*) FROM pg_trigger WHERE tgrelid = 'log'::regclass AND NOT tgisinternal") == [
        (4,)
    ]


def test_another_applications_tables_or_a_newer_schema_are_refused(pg_dsn: str) -> None:
    raw = Raw(pg_dsn)
    raw("CREATE TABLE log (id int)")
    with connect(pg_dsn) as conn, pytest.raises(fe.StoreError, match="another application"):
        ensure_schema(conn)
    raw("DROP TABLE log")
    with connect(pg_dsn) as conn:
        ensure_schema(conn)
        raw(f"UPDATE {VERSION_TABLE} SET version = version + 1")
        with pytest.raises(fe.StoreError, match="newer than this"):
            schema_version(PgCursor(conn.cursor()))


def test_a_lost_connection_is_a_store_error(pg_dsn: str) -> None:
    conn = connect(pg_dsn)
    ((pid,),) = conn.execute("SELECT pg_backend_pid()").fetchall()
    Raw(pg_dsn)("SELECT pg_terminate_backend(%s)", (pid,))
    with pytest.raises(psycopg.OperationalError) as info:
        conn.execute("SELECT 1")
    translated = translate(info.value, "append")
    assert type(translated) is fe.StoreError
    assert "connection to PostgreSQL failed" in str(translated)


def test_a_deadlock_is_a_conflict(pg_dsn: str) -> None:
    with connect(pg_dsn) as conn:
        ensure_schema(conn)
    a, b = Raw(pg_dsn), Raw(pg_dsn)
    a("INSERT INTO consumer VALUES ('x', 0, 't'), ('y', 0, 't')")
    a("BEGIN")
    b("BEGIN")
    a("SELECT * FROM consumer WHERE name = 'x' FOR UPDATE")
    b("SELECT * FROM consumer WHERE name = 'y' FOR UPDATE")
    b.conn.execute("SET deadlock_timeout = 50")
    errors: list[BaseException] = []

    def second() -> None:
        try:
            a("SELECT * FROM consumer WHERE name = 'y' FOR UPDATE")
        except psycopg.Error as e:
            errors.append(e)

    t = threading.Thread(target=second)
    t.start()
    try:
        b("SELECT * FROM consumer WHERE name = 'x' FOR UPDATE")
    except psycopg.Error as e:
        errors.append(e)
    t.join(timeout=30)
    assert len(errors) == 1 and isinstance(errors[0], pg.DeadlockDetected)
    assert isinstance(translate(errors[0], "acknowledge"), fe.Conflict)


def test_a_serialization_failure_is_a_conflict(pg_dsn: str) -> None:
    with connect(pg_dsn) as conn:
        ensure_schema(conn)
    a, b = Raw(pg_dsn), Raw(pg_dsn)
    a("INSERT INTO consumer VALUES ('x', 0, 't')")
    a("BEGIN ISOLATION LEVEL REPEATABLE READ")
    a("SELECT * FROM consumer")
    b("UPDATE consumer SET position = 1")
    error = a.refused("UPDATE consumer SET position = 2")
    assert isinstance(error, pg.SerializationFailure)
    assert isinstance(translate(error, "acknowledge"), fe.Conflict)
