"""Connections to a PostgreSQL store: set-up, schema creation and migration, the read
barrier's ``horizon``, and the one place psycopg errors become forkline_es errors.

Connections are in autocommit mode, and the backend writes ``BEGIN`` and ``COMMIT`` itself,
as the SQLite side writes ``BEGIN IMMEDIATE``: a statement outside a transaction is then
one of its own (a read sees the latest commit, as an apsw statement outside a transaction
does), a transaction starts exactly where the code says, and no driver state decides when
one is open. psycopg's default (an implicit BEGIN before the first statement, held until
``commit()``) would leave a forgotten read holding a snapshot, and with it the vacuum of
every table, for as long as the connection lives.
"""

from __future__ import annotations

import contextlib
import math
import urllib.parse
from decimal import Decimal
from typing import Any

import psycopg
from psycopg import errors as pg
from psycopg import postgres
from psycopg.abc import Buffer
from psycopg.types.numeric import FloatDumper, NumericLoader

from forkline_es.errors import Conflict, ForklineError, RunNotRetained, StoreError
from forkline_es.log.connection import BUSY_TIMEOUT_MS
from forkline_es.log.postgres.cursor import PgCursor
from forkline_es.log.postgres.schema import (
    SCHEMA_LOCK,
    SCHEMA_VERSION,
    TABLES,
    VERSION_TABLE,
    migration,
)
from forkline_es.log.schema import APPLICATION_ID, EVICTED_RUN_REFUSED, NOT_ITS_NEXT_ROW

__all__ = ["connect", "ensure_schema", "horizon", "schema_version", "translate"]


class _SqliteNumber(NumericLoader):
    """``numeric`` as SQLite gives a number back: an int when it has no fractional digits
    (``sum()`` of bigints is numeric in PostgreSQL, and code above the seam adds and
    compares ints), else a float. A float went in with a fractional digit (``_ExactFloat``),
    so an untyped observation value 3.0 comes back a float and 3 an int, as on SQLite."""

    def load(self, data: Any) -> Any:
        number = super().load(data)
        if isinstance(number, Decimal) and number.is_finite():
            exponent = number.as_tuple().exponent
            return int(number) if isinstance(exponent, int) and exponent >= 0 else float(number)
        return number


class _ExactFloat(FloatDumper):
    """A Python float as ``numeric`` text with every digit of its shortest repr and at least
    one fractional digit. psycopg's float8 would be cast to a numeric column with 15 digits
    (0.30000000000000004 became 0.3) and 3.0 would come back the int 3: documents differed
    from SQLite's. Compared with a float8 column, numeric is cast back exactly."""

    oid = postgres.types["numeric"].oid

    def dump(self, obj: float) -> Buffer | None:
        if not math.isfinite(obj):
            return super().dump(obj)  # 'NaN', 'Infinity': numeric takes them too
        text = format(Decimal(repr(obj)), "f")
        return (text if "." in text else f"{text}.0").encode()


def connect(dsn: str, *, lock_timeout_ms: int = BUSY_TIMEOUT_MS) -> psycopg.Connection[Any]:
    """A connection to ``dsn`` in autocommit mode (see the module docstring), UTF-8, with
    ``lock_timeout``: a row or advisory lock held past it refuses the call (``conflict``)
    instead of waiting for ever, as SQLite's busy timeout does. Refusals are StoreErrors."""
    try:
        conn = psycopg.connect(dsn, autocommit=True, client_encoding="UTF8", application_name="forkline_es")
    except psycopg.Error as e:
        raise StoreError(f"cannot connect to the PostgreSQL store {_shown_dsn(dsn)}: {e}") from None
    try:
        conn.adapters.register_loader("numeric", _SqliteNumber)
        conn.adapters.register_dumper(float, _ExactFloat)
        conn.execute(f"SET lock_timeout = {int(lock_timeout_ms)}")
    except psycopg.Error as e:
        conn.close()
        raise translate(e, f"setting up the connection to {_shown_dsn(dsn)}") from None
    return conn


def _shown_dsn(dsn: str) -> str:
    """``dsn`` without its password, for messages and ``Store.path``."""
    try:
        parts = psycopg.conninfo.conninfo_to_dict(dsn)
    except psycopg.ProgrammingError:
        return "(a DSN that does not parse)"
    for secret in ("password", "sslpassword"):
        parts.pop(secret, None)
    host, port, db = parts.pop("host", ""), parts.pop("port", ""), parts.pop("dbname", "")
    user = parts.pop("user", "")
    # The other parameters stay (``options=-csearch_path=...`` names the store's schema):
    # ``Store.path`` opens the same store again.
    query = "?" + urllib.parse.urlencode(parts, quote_via=urllib.parse.quote) if parts else ""
    return f"postgresql://{user}@{host}{':' if port else ''}{port}/{db}{query}"


# -- schema ------------------------------------------------------------------------------


def schema_version(cur: PgCursor) -> int | None:
    """This layout's version in the connection's current schema; None when it has no
    forkline_es tables; a StoreError when it holds another application's tables or a newer
    version than this forkline_es makes."""
    ((schema, table),) = cur.execute(
        "SELECT current_schema(), to_regclass(format('%I.%I', current_schema(), ?::text))::text",
        (VERSION_TABLE,),
    ).fetchall()
    if schema is None:
        raise StoreError("the connection has no current schema (search_path names none that exists)")
    if table is None:
        ours = cur.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
            "AND table_name = ANY(?)",
            (list(TABLES),),
        ).fetchall()
        if ours:
            raise StoreError(
                f"schema {schema} holds tables named {', '.join(sorted(t for (t,) in ours))} but no "
                f"{VERSION_TABLE}: they are another application's, and forkline_es will not write "
                "there; use another database or schema (search_path)"
            )
        return None
    ((application, version),) = cur.execute(f"SELECT application, version FROM {VERSION_TABLE}").fetchall()
    if application != APPLICATION_ID:
        raise StoreError(f"{VERSION_TABLE} in schema {schema} is another application's ({application:#x})")
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"schema {schema} has forkline_es PostgreSQL schema version {version}, newer than this "
            f"forkline_es supports ({SCHEMA_VERSION}); upgrade forkline_es to open it"
        )
    return int(version)


def ensure_schema(conn: psycopg.Connection[Any]) -> None:
    """Create or migrate the tables in the connection's current schema, one transaction per
    step, under the advisory ``SCHEMA_LOCK`` (the version read again under it): several
    hosts opening a new database at once create it once.

    The lock is a session lock taken before each step's transaction begins, not inside it:
    a transaction that waited for a lock inside would still see the catalogue as it was
    when it began (tables another host has since created look absent to ``to_regclass``).
    The first look, without the lock, only decides whether to take it: its two catalogue
    reads are separate statements, and another host committing its creation between them
    makes our tables look like another application's, which only the look under the lock
    may conclude.
    """
    cur = PgCursor(conn.cursor())
    try:
        with contextlib.suppress(StoreError):
            if schema_version(cur) == SCHEMA_VERSION:
                return
        for step in range(SCHEMA_VERSION):
            cur.execute(f"SELECT pg_advisory_lock({SCHEMA_LOCK})")
            try:
                cur.execute("BEGIN")
                if (schema_version(cur) or 0) > step:
                    cur.execute("COMMIT")
                    continue
                ((schema,),) = cur.execute("SELECT current_schema()").fetchall()
                cur.execute(migration(step, schema))
                cur.execute(f"UPDATE {VERSION_TABLE} SET version = ?", (step + 1,))
                cur.execute("COMMIT")
            finally:
                if not conn.closed:
                    with contextlib.suppress(psycopg.Error):
                        if conn.info.transaction_status != psycopg.pq.TransactionStatus.IDLE:
                            cur.execute("ROLLBACK")
                        cur.execute(f"SELECT pg_advisory_unlock({SCHEMA_LOCK})")
    except psycopg.Error as e:
        raise translate(e, "creating the forkline_es tables", maintenance=True) from None


# -- the read barrier --------------------------------------------------------------------


def horizon(cur: PgCursor) -> int:
    """The end of the log below which nothing will ever commit again: every row at or below
    it is committed, and visible to any statement or snapshot that starts after this call.

    ``log_horizon()`` (``schema``) takes the barrier lock exclusively, waiting for the
    appends in flight, and reads the end of the log while holding it, in a snapshot that
    starts after the lock was granted. Outside a transaction the lock is released when the
    call returns; inside a READ COMMITTED transaction, when that transaction ends (end it
    soon: appends wait meanwhile). In a REPEATABLE READ or SERIALIZABLE transaction it is
    refused: that snapshot may be older than the lock and miss rows below the end. Take the
    horizon first, then open such a snapshot and read up to it.
    """
    try:
        return int(cur.execute("SELECT log_horizon()").fetchall()[0][0])
    except pg.FeatureNotSupported as e:
        raise StoreError(f"horizon: {e.diag.message_primary}") from None


# -- errors ------------------------------------------------------------------------------


def translate(error: BaseException, what: str, *, maintenance: bool = False) -> ForklineError:
    """The one place where a psycopg error becomes a forkline_es error.

    ``maintenance`` (gc, schema creation): a lock held past the timeout is the store's
    error, not the ``conflict`` that refuses an append.
    """
    if isinstance(error, ForklineError):
        return error
    diag = getattr(error, "diag", None)
    primary = diag.message_primary if diag is not None else None
    message = primary or str(error).strip()  # without psycopg's CONTEXT lines
    if (
        isinstance(error, pg.UniqueViolation)
        and diag is not None
        and diag.constraint_name == "log_run_id_seq_key"
    ):
        return Conflict(
            f"{what}: another writer appended to this run first (its seq is taken); "
            "get a fresh handle with store.resume_run(run_id) and decide again"
        )
    if isinstance(error, pg.UniqueViolation) and diag is not None and diag.constraint_name == "eviction_pkey":
        # Two hosts evicted the run at once: both read it retained, the other one's record
        # committed first. The run is evicted, as the caller asked; this call did nothing.
        return RunNotRetained(
            f"{what}: another process evicted the run meanwhile (its eviction is recorded); "
            "nothing was written"
        )
    if isinstance(error, pg.IntegrityError) and NOT_ITS_NEXT_ROW in message:
        return Conflict(
            f"{what}: the run's rows are not the ones this handle follows (it was evicted and "
            "its tombstone purged, or its id started again as another run); nothing was written: "
            "get a fresh handle with store.resume_run(run_id)"
        )
    if isinstance(error, pg.IntegrityError) and EVICTED_RUN_REFUSED in message:
        return RunNotRetained(
            f"{what}: the run was evicted (its eviction is recorded), so it takes no more events; "
            "nothing was written (record into a new run instead)"
        )
    if isinstance(error, pg.LockNotAvailable | pg.SerializationFailure | pg.DeadlockDetected):
        if maintenance:
            return StoreError(
                f"{what}: another connection held a lock this needs ({message}); "
                "nothing of the unfinished step was kept: run it again"
            )
        return Conflict(
            f"{what}: another writer held the rows or locks this call needs ({message}); retry the call"
        )
    if isinstance(error, pg.IntegrityError | pg.RaiseException):
        return StoreError(f"{what}: {message} (the log refused the write; nothing was written)")
    if isinstance(error, pg.DiskFull):
        return StoreError(
            f"{what}: {message}: the database server's disk is full; the unfinished transaction "
            "was rolled back: free some space and run it again"
        )
    if isinstance(error, pg.InsufficientPrivilege):
        return StoreError(
            f"{what}: {message}: this connection's role may not do it. docs/postgres.md "
            '("Roles") says which role does what: the owner creates and upgrades the schema and '
            "runs rebuild --check (it makes a throwaway schema), the maintenance role runs "
            "retention and gc, executors record and read"
        )
    if isinstance(error, psycopg.OperationalError | psycopg.InterfaceError):
        return StoreError(
            f"{what}: the connection to PostgreSQL failed ({message}); what was not acknowledged "
            "may or may not have been committed: reopen the store and look"
        )
    return StoreError(f"{what}: {message}")
