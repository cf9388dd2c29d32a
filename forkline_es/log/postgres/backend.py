"""The PostgreSQL backend: the seam (``log.backend``) over one psycopg connection.

Built from the pieces beside it: ``connection`` (connect in autocommit mode, schema
creation under an advisory lock, the read barrier's ``horizon``, ``translate``),
``cursor`` (``?`` placeholders) and ``schema`` (the log-level tables and their triggers,
which give each row its position behind the shared barrier lock). Transactions are
written out (``BEGIN`` ... ``COMMIT``), as the SQLite backend writes ``BEGIN IMMEDIATE``.

A snapshot is a REPEATABLE READ transaction opened after the horizon was read (a
snapshot older than the barrier could miss a row below the end): ``horizon(cur)`` inside
it is that value, and every row at or below it is visible in the snapshot.

A connection the server drops (a restart, a failover, an idle timeout) is replaced at the
next call (``_live``): a transaction or snapshot whose ``BEGIN`` found it dead begins again
on the new one, and an append whose connection died under it is looked up there and sent
again only if none of its rows is in the log (``_append_after_loss``).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import re
import secrets
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Final, NoReturn, TypeVar

import psycopg

from forkline_es._logging import get_logger
from forkline_es.errors import Conflict, ForklineError, StoreError
from forkline_es.log.backend import Backend, Cursor, Reclaimed, TriggerDifference
from forkline_es.log.postgres import connection as pgc
from forkline_es.log.postgres import triggers as pg_triggers
from forkline_es.log.postgres.cursor import PgCursor
from forkline_es.log.postgres.fence import PostgresFence
from forkline_es.log.postgres.fold import Carried, FoldCursor
from forkline_es.log.postgres.schema import CHECK_LOCKS, END_OF_LOG, TABLES
from forkline_es.log.rows import NewRow
from forkline_es.log.schema import SLOTS_PER_EVENT

__all__ = ["POSTGRES", "PostgresBackend", "PostgresDialect"]

T = TypeVar("T")

_log = get_logger("forkline_es.log")

_DIGEST_AT: Final = "SELECT digest FROM log WHERE run_id = ? AND seq = ?"
#: Log-level tables a scratch copy takes (the projection tables are refolded there).
_COPIED: Final = ("log", "payload", "eviction", "log_end", "consumer", "projector", "forkline_es_schema")
#: Caches kept beside the log that no check reads (stored run record texts, run checkpoints):
#: a scratch copy has the tables, so that no unqualified name reaches the live ones, but
#: none of their rows, which can weigh as much as the projections.
_LEFT_EMPTY: Final = ("record_text", "run_checkpoint", "run_checkpoint_piece")


class PostgresDialect:
    """PostgreSQL's words for what differs from SQLite's."""

    name = "postgresql"
    end_of_log = END_OF_LOG
    last_rows = "SELECT DISTINCT ON (run_id) run_id, seq, digest FROM log ORDER BY run_id, seq DESC"

    _JSON_PATH: Final = re.compile(r"json_extract\(([\w.]+), '\$\.([\w.]+)'\)")
    _TYPELESS: Final = re.compile(r"^(\s*value\s+)NOT NULL", re.MULTILINE)
    _TEMP: Final = re.compile(r"\bCREATE\s+(TABLE|VIEW)\s+", re.IGNORECASE)

    # the tables of the schema the store uses, each with its indexes and TOAST
    table_sizes = (
        "SELECT c.relname, pg_total_relation_size(c.oid) FROM pg_class AS c "
        "JOIN pg_namespace AS n ON n.oid = c.relnamespace "
        "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p')"
    )
    database_size = "SELECT pg_database_size(current_database())"
    free_space = "SELECT NULL"  # autovacuum's to manage; gc never runs VACUUM FULL

    def byte_length(self, column: str) -> str:
        return f"octet_length({column})"

    def text_bytes(self, column: str) -> str:
        return f"convert_to({column}, 'UTF8')"  # the server keeps text UTF-8: never damaged so

    def each(self, alias: str, of: str = "int") -> str:
        return f"unnest(CAST(? AS {'bigint' if of == 'int' else 'text'}[])) AS {alias}(value)"

    def array(self, values: Sequence[int] | Sequence[str]) -> object:
        return list(values)

    def json_text(self, column: str, member: str) -> str:
        return f"(CAST({column} AS json) ->> '{member}')"

    def ddl(self, template: str) -> str:
        """SQLite's DDL words in PostgreSQL's: no ``WITHOUT ROWID``, 64-bit integers, text in
        code-point order (``COLLATE "C"``), an untyped ``value`` numeric, ``json_extract`` as
        ``#>>`` and no unary ``+`` (SQLite's hint not to use an index)."""
        sql = template.replace(") WITHOUT ROWID;", ");")
        sql = re.sub(r"\bINTEGER\b", "bigint", sql)
        sql = re.sub(r"\bTEXT\b", 'text COLLATE "C"', sql)
        sql = self._TYPELESS.sub(r"\1numeric NOT NULL", sql)
        sql = self._JSON_PATH.sub(lambda m: f"(CAST({m[1]} AS json) #>> '{{{m[2].replace('.', ',')}}}')", sql)
        return sql.replace("+p.slot", "p.slot")

    def temp_ddl(self, ddl: str) -> str:
        return self._TEMP.sub(lambda m: f"CREATE TEMP {m[1]} ", ddl)

    def kept_privileges(self, cur: Cursor) -> list[str]:
        """A ``GRANT`` for each privilege another role holds on a table or view of the
        schema other than the log's own (which a rebuild never drops): ``DROP TABLE`` takes
        a table's grants with it, and the documented executor and maintenance roles
        (docs/postgres.md, "Roles") would lose every read and fold of the projections."""
        rows = cur.execute(_GRANTED, (list(_LOG_LEVEL),)).fetchall()
        return [
            f"GRANT {privilege} ON {_ident(relation)} TO {'PUBLIC' if role is None else _ident(role)}"
            + (" WITH GRANT OPTION" if grantable else "")
            for relation, privilege, role, grantable in rows
        ]

    def drop_derived(self, cur: Cursor, tables: Sequence[str]) -> None:
        """``CASCADE``: the views over them go too (SQLite leaves those; the projectors
        recreate them)."""
        for table in tables:
            cur.execute(f"DROP TABLE IF EXISTS {table} CASCADE")


#: What a check's throwaway schema is named (``scratch_copy``), and how gc finds them.
_CHECK_SCHEMA: Final = re.compile(r"forkline_check_[0-9a-f]{16}")
_CHECK_SCHEMAS: Final = (
    "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'forkline\\_check\\_%' ORDER BY 1"
)
_CHECK_LOCK: Final = "SELECT pg_try_advisory_lock(?, hashtext(?))"
_CHECK_UNLOCK: Final = "SELECT pg_advisory_unlock(?, hashtext(?))"
#: Whether any session holds a check schema's lock (two int4 keys: classid, objid, objsubid 2).
_CHECK_HELD: Final = (
    "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 2 "
    "AND classid = CAST(? AS bigint)::oid AND objid = (hashtext(?)::bigint & 4294967295)::oid)"
)
_SCHEMA_BYTES: Final = (
    "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class AS c "
    "JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = ? AND c.relkind IN ('r', 'm')"
)
#: Each privilege another role holds on a relation of the current schema (``kept_privileges``).
_GRANTED: Final = (
    "SELECT c.relname, a.privilege_type, r.rolname, a.is_grantable "
    "FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace "
    "CROSS JOIN LATERAL aclexplode(c.relacl) AS a LEFT JOIN pg_roles AS r ON r.oid = a.grantee "
    "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'v', 'm', 'p') "
    "AND a.grantee <> c.relowner AND NOT c.relname = ANY(?) ORDER BY 1, 2, 3"
)
_LOG_LEVEL: Final = frozenset(TABLES)


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


POSTGRES: Final = PostgresDialect()


class PostgresBackend:
    """The seam over one psycopg connection in autocommit mode (``Backend``)."""

    dialect = POSTGRES
    errors: tuple[type[BaseException], ...] = (psycopg.Error,)

    def __init__(self, dsn: str, *, read_only: bool = False, create: bool = True) -> None:
        self._dsn = dsn
        #: The DSN without its password, for messages.
        self.location = pgc._shown_dsn(dsn)
        self.read_only = read_only
        self._closed = False
        self._attach(pgc.connect(dsn))
        #: While an append's fold runs: its pipeline, which every cursor given out then uses
        #: (a statement queued on a plain cursor would read as no rows).
        self._pipeline: psycopg.Pipeline | None = None
        #: While an append's fold runs: its cursor, which ``cursor`` and ``snapshot`` give out
        #: then (a read on another would not see the append's rows).
        self._fold: FoldCursor | None = None
        self._in_transaction = False
        #: The horizon a ``following`` snapshot fixed before it began; None otherwise.
        self._snapshot_horizon: int | None = None
        self.projectors = PostgresFence()
        if create and not read_only:
            try:
                pgc.ensure_schema(self.conn)
            except BaseException:
                self.conn.close()
                raise
        elif pgc.schema_version(self._cur) is None:
            self.conn.close()
            raise StoreError(
                f"{self.location}: no forkline_es store there; a read-only open never creates one "
                f"(record one with `forkline-es demo --db {self.location}`, as a role that may "
                "create tables there)"
            )

    translate = staticmethod(pgc.translate)

    def refuse_write(self, what: str) -> NoReturn:
        raise StoreError(
            f"{what}: the store was opened read-only (read_only=True), which writes nothing; "
            "open it with fe.Store.open(dsn) to record, retain or collect"
        )

    def connection(self) -> Any:
        return self.conn

    def cursor(self) -> Cursor:
        if self._fold is not None:
            return self._fold
        self._live()
        if self._pipeline is None and not self._in_transaction:
            return _Bare(self)
        return PgCursor(self.conn.cursor(), self._pipeline)

    def close(self) -> None:
        self._closed = True
        self.conn.close()

    # -- a connection the server dropped ---------------------------------------------------

    def _attach(self, conn: psycopg.Connection[Any]) -> None:
        self.conn = conn
        self._cur = PgCursor(conn.cursor())
        #: The cursor of an appended row's statement (the first row's, when there are several).
        self._insert = psycopg.RawCursor(conn)

    def _live(self) -> None:
        """Replace a connection the server dropped (psycopg marks it ``broken`` when a call
        finds it gone), rather than fail every later call of this handle. The projector
        versions' session lock went with the old session: the fence takes it again at the
        next fold, if the stored versions are still ours."""
        if not self.conn.broken or self._closed or self._in_transaction:
            return
        self._attach(pgc.connect(self._dsn))
        self.projectors.lost()
        _log.warning("store_reconnected", store=self.location)

    def _first(self, step: Callable[[], T]) -> T:
        """The first statement of a transaction or snapshot, on a live connection. One that
        finds the connection dead (dropped while idle) did nothing: it is sent again, once,
        on a new connection."""
        self._live()
        try:
            return step()
        except psycopg.OperationalError:
            if not self.conn.broken:
                raise
            self._live()
            return step()

    # -- transactions ----------------------------------------------------------------------

    def _rollback(self) -> None:
        self._in_transaction = False
        self._snapshot_horizon = None
        if not self.conn.closed:
            with contextlib.suppress(psycopg.Error):
                self._cur.execute("ROLLBACK")

    def append(
        self, rows: Sequence[NewRow], then: Callable[[Cursor], T] | None = None
    ) -> tuple[list[int], T | None]:
        """All the rows, their payload values and the fold's writes in one prepared
        statement (``_append_sql``), in autocommit: its own transaction, one round trip.
        The rows take their positions from the log's BEFORE INSERT trigger (behind the
        shared barrier lock).

        ``then`` runs first, on a ``FoldCursor`` that keeps the writes the statement can
        carry (the fold needs no position). A fold that reads, or makes a write one
        statement cannot carry (``fold``'s docstring), opens a transaction at that point in
        pipeline mode: ``BEGIN``, the statement with the writes kept so far, then each of
        the fold's statements as it comes, and ``COMMIT``; one sync brings every result
        back, the positions included, and each read the fold makes costs one more (a read
        syncs what is queued before it, so it sees the rows). An error of any statement (a
        taken ``(run_id, seq)`` included) is raised by the sync that brings it back, nothing
        of the append is kept, and it is translated here; the fold has then run for
        nothing, which its caller undoes in its caches.
        """
        if self.read_only:
            self.refuse_write("append")
        statement = _append(rows)  # refused before anything is sent
        self._live()
        try:
            return self._append_once(statement, then)
        except ForklineError:
            if not self.conn.broken:
                raise
            return self._append_after_loss(rows, statement, then)

    def _append_after_loss(
        self,
        rows: Sequence[NewRow],
        statement: tuple[tuple[int, ...], list[Any]],
        then: Callable[[Cursor], T] | None,
    ) -> tuple[list[int], T | None]:
        """The connection died during an append: on a new one, the log says whether it
        committed. None of its rows there: it did not (a dead session's transaction is
        rolled back; one still alive behind a broken network holds ``(run_id, seq)`` until it
        ends, and ours then waits and gets ``conflict``), so it is sent again, once. All of
        them there: the commit's acknowledgement alone was lost; the call raises as before,
        and the recording handle adopts its row by digest at its next call."""
        self._live()
        try:
            found = [self._cur.execute(_DIGEST_AT, (r.run_id, r.seq)).fetchall()[:1] for r in rows]
        except psycopg.Error as e:
            raise pgc.translate(e, "append") from None
        if any(f and f[0][0] != r.digest for f, r in zip(found, rows, strict=True)):
            raise Conflict(
                f"append to {self.location}: another writer took the seq while the connection was down"
            )
        if any(found):
            raise StoreError(
                f"append to {self.location}: the connection was lost at COMMIT, after the rows "
                "committed; the recording handle adopts them at its next call"
            )
        _log.warning("append_resent", store=self.location, rows=len(rows))
        return self._append_once(statement, then)

    def _append_once(
        self, statement: tuple[tuple[int, ...], list[Any]], then: Callable[[Cursor], T] | None
    ) -> tuple[list[int], T | None]:
        shape, params = statement
        insert = self._insert
        if then is None:
            try:  # one statement: its own transaction, nothing to roll back if it fails
                return _positions(insert.execute(_append_sql(shape), params, prepare=True)), None
            except psycopg.Error as e:
                raise pgc.translate(e, "append") from None
        conn = self.conn
        stack = contextlib.ExitStack()

        def begin(kept: list[Carried]) -> PgCursor:
            """The fold needs a transaction: BEGIN and the statement so far, pipelined."""
            pipeline = self._pipeline = stack.enter_context(conn.pipeline())
            self._cur.raw.execute("BEGIN")
            insert.execute(*_with_writes(shape, params, kept), prepare=True)
            return PgCursor(conn.cursor(), pipeline)

        fold = FoldCursor(begin, len(params))
        try:
            self._in_transaction = True
            with stack:
                self._fold = fold
                try:
                    result = then(fold)
                finally:
                    self._fold = self._pipeline = None
                if fold.opened:
                    self._cur.raw.execute("COMMIT")
                else:  # one statement: its own transaction
                    insert.execute(*_with_writes(shape, params, fold.kept), prepare=True)
            positions = _positions(insert)  # the pipeline's one sync, if it was opened
            self._in_transaction = False
        except BaseException as e:
            if fold.opened:
                self._abandon()
            self._in_transaction = False
            if isinstance(e, psycopg.Error):
                raise pgc.translate(e, "append") from None
            raise
        return positions, result

    def _abandon(self) -> None:
        """Roll a failed pipelined append back through psycopg's own ``rollback``, which also
        forgets every statement psycopg counts as prepared (and deallocates them): a statement
        it began preparing behind the failure was skipped by the server, Parse included, and
        would otherwise be "prepared statement does not exist" at its next use."""
        self._in_transaction = False
        self._snapshot_horizon = None
        if not self.conn.closed:
            with contextlib.suppress(psycopg.Error):
                self.conn.rollback()

    @contextmanager
    def transaction(self, what: str, *, maintenance: bool = False) -> Iterator[Cursor]:
        if self.read_only:
            self.refuse_write(what)
        try:
            self._first(lambda: self._cur.execute("BEGIN"))
        except psycopg.Error as e:
            raise pgc.translate(e, what, maintenance=maintenance) from None
        self._in_transaction = True
        try:
            yield self._cur
            self._cur.execute("COMMIT")
            self._in_transaction = False
        except BaseException as e:
            self._rollback()
            if isinstance(e, psycopg.Error):
                raise pgc.translate(e, what, maintenance=maintenance) from None
            raise

    @contextmanager
    def snapshot(self, *, following: bool = False) -> Iterator[Cursor]:
        """REPEATABLE READ. ``following``: the horizon is read first (waiting for appends in
        flight), so every row up to it is in the snapshot; plain reads never wait."""
        if self._in_transaction:  # an append's fold included: its cursor
            yield self._cur if self._fold is None else self._fold
            return
        try:
            top = self._first(lambda: pgc.horizon(self._cur)) if following else None
            self._first(lambda: self._cur.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"))
        except psycopg.Error as e:
            raise pgc.translate(e, "read") from None
        self._in_transaction = True
        self._snapshot_horizon = top
        try:
            yield self._cur
        except psycopg.Error as e:
            raise pgc.translate(e, "read") from None
        finally:
            self._rollback()

    @contextmanager
    def private(self, what: str) -> Iterator[Cursor]:
        with self.transaction(what) as cur:
            yield cur

    def horizon(self, cur: Cursor) -> int:
        if self._snapshot_horizon is not None:
            return self._snapshot_horizon
        assert isinstance(cur, PgCursor)
        return pgc.horizon(cur)  # outside a transaction, or in a READ COMMITTED one: the barrier

    # -- catalogue ---------------------------------------------------------------------------

    def columns(self, cur: Cursor, table: str) -> tuple[str, ...]:
        rows = cur.execute(
            "SELECT a.attname FROM pg_attribute AS a WHERE a.attrelid = to_regclass(?) "
            "AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum",
            (table,),
        ).fetchall()
        return tuple(str(n) for (n,) in rows)

    def primary_key(self, cur: Cursor, table: str) -> tuple[str, ...]:
        rows = cur.execute(
            "SELECT a.attname FROM pg_index AS i CROSS JOIN unnest(i.indkey) WITH ORDINALITY AS k(attnum, n) "
            "JOIN pg_attribute AS a ON a.attrelid = i.indrelid AND a.attnum = k.attnum "
            "WHERE i.indrelid = to_regclass(?) AND i.indisprimary ORDER BY k.n",
            (table,),
        ).fetchall()
        return tuple(str(n) for (n,) in rows)

    def has_temp_table(self, cur: Cursor, table: str) -> bool:
        return bool(
            cur.execute(
                "SELECT 1 FROM pg_class WHERE relnamespace = pg_my_temp_schema() AND relname = ?", (table,)
            ).fetchall()
        )

    def trigger_differences(self, cur: Cursor) -> list[TriggerDifference]:
        """The log's triggers against those its schema version makes (``triggers``)."""
        assert isinstance(cur, PgCursor)
        version = pgc.schema_version(cur)
        return [] if version is None else pg_triggers.trigger_differences(cur, version)

    # -- space and scratch -------------------------------------------------------------------

    def wal_bytes(self) -> int | None:
        """The server's WAL files (pg_ls_waldir: superusers and pg_monitor members)."""
        try:
            ((size,),) = self._cur.execute("SELECT coalesce(sum(size), 0) FROM pg_ls_waldir()").fetchall()
        except psycopg.errors.InsufficientPrivilege:
            return None
        return int(size)

    def reclaim(self, progress: Callable[[int, int], None] | None = None) -> Reclaimed:
        """Autovacuum gives space back on PostgreSQL; gc never runs VACUUM FULL on a shared
        database. The figures are the database's size in 8 KiB pages."""
        ((size,),) = self._cur.execute("SELECT pg_database_size(current_database())").fetchall()
        pages = int(size) // 8192
        return Reclaimed(8192, pages, pages, int(size), int(size), 0, True, ())

    def artifacts_beside(self) -> str | None:
        return None

    def sweep_leftovers(self, grace_seconds: float) -> tuple[int, int]:
        """Drop the check schemas (``scratch_copy``) of the database whose check has gone: a
        killed ``rebuild --check`` leaves its copy of the log, every payload value included,
        which eviction and payload removal would otherwise never reach. A live check holds
        its schema's advisory lock; the lock, not an age, tells them apart (``grace_seconds``
        is the artifact files' and SQLite's). A schema this role may not drop (the owner's)
        is left, and said. Returns (schemas dropped, their bytes)."""
        cur = self._cur
        dropped = size = 0
        for (name,) in cur.execute(_CHECK_SCHEMAS).fetchall():
            if not _CHECK_SCHEMA.fullmatch(name):
                continue
            ((held,),) = cur.execute(_CHECK_HELD, (CHECK_LOCKS, name)).fetchall()
            if held:
                continue  # its check runs (in this session too: a session takes its own lock again)
            ((free,),) = cur.execute(_CHECK_LOCK, (CHECK_LOCKS, name)).fetchall()
            if not free:
                continue  # a check took it just now
            try:
                ((schema_bytes,),) = cur.execute(_SCHEMA_BYTES, (name,)).fetchall()
                cur.execute(f"DROP SCHEMA {name} CASCADE")
                dropped, size = dropped + 1, size + int(schema_bytes)
            except psycopg.errors.InsufficientPrivilege:
                _log.warning("check_schema_left", schema=name, why="only its owner may drop it")
            finally:
                cur.execute(_CHECK_UNLOCK, (CHECK_LOCKS, name)).fetchall()
        return dropped, size

    @contextmanager
    def scratch_copy(self) -> Iterator[Backend]:
        """A schema of its own holding a copy of the log-level tables and the projections as
        one REPEATABLE READ snapshot saw them (no triggers: a copy made to be thrown away),
        and the caches' tables empty (``_LEFT_EMPTY``); dropped at exit."""
        name = f"forkline_check_{secrets.token_hex(8)}"
        cur = self._cur
        try:
            ((live,),) = cur.execute("SELECT current_schema()").fetchall()
            cur.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            cur.execute(f"CREATE SCHEMA {name}")
            # held by this session until the schema is dropped: a gc meanwhile leaves it be
            cur.execute("SELECT pg_advisory_lock(?, hashtext(?))", (CHECK_LOCKS, name)).fetchall()
            for table in _COPIED:
                cur.execute(
                    f"CREATE TABLE {name}.{table} (LIKE {table} INCLUDING DEFAULTS INCLUDING INDEXES)"
                )
                cur.execute(f"INSERT INTO {name}.{table} SELECT * FROM {table}")
            for table in self._projection_tables(cur):
                cur.execute(
                    f"CREATE TABLE {name}.{table} (LIKE {table} INCLUDING DEFAULTS INCLUDING INDEXES)"
                )
                if table not in _LEFT_EMPTY:
                    cur.execute(f"INSERT INTO {name}.{table} SELECT * FROM {table}")
            # A stand-in for each live view, so that a refold's unqualified DROP VIEW there
            # finds the copy's first and never drops the live one (the real one is made next).
            for (view,) in cur.execute(
                "SELECT table_name FROM information_schema.views WHERE table_schema = current_schema()"
            ).fetchall():
                cur.execute(f'CREATE VIEW {name}."{view}" AS SELECT 1 AS placeholder')
            cur.execute("COMMIT")
        except BaseException as e:
            self._rollback()
            if isinstance(e, psycopg.Error):
                raise pgc.translate(e, "copy the store into a throwaway schema for a check") from None
            raise
        try:
            # the live schema second: its functions (log_horizon) resolve, its tables never do
            copy = PostgresBackend(_with_search_path(self._dsn, f"{name},{live}"), create=False)
            try:
                yield copy
            finally:
                copy.close()
        finally:
            with contextlib.suppress(psycopg.Error):
                self._cur.execute(f"DROP SCHEMA {name} CASCADE")
                self._cur.execute(_CHECK_UNLOCK, (CHECK_LOCKS, name)).fetchall()

    @staticmethod
    def _projection_tables(cur: Cursor) -> list[str]:
        rows = cur.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() "
            "AND table_type = 'BASE TABLE' AND table_name <> ALL(?)",
            (list(_COPIED),),
        ).fetchall()
        return [str(t) for (t,) in rows]


_LOG_COLUMNS: Final = "run_id, seq, entry, generation, kind, at, key, body, digest, prev"


@functools.lru_cache(maxsize=256)
def _append_sql(values: tuple[int, ...], writes: tuple[str, ...] = ()) -> bytes:
    """The rows of one append (``values``: each row's number of payload values), their
    payload values and a fold's ``writes`` (``fold.Carried.sql``) as one statement: its rows
    are inserted in order, so the log's trigger gives them rising positions, and each
    payload row takes its log row's (``id``: position * SLOTS_PER_EVENT + its place),
    joined by the row's ``(run_id, seq)`` (its own parameters again; the log's unique key),
    which the server runs in about 20 µs less per batched step than numbering the rows
    by position. The payload CTE reads the positions, so the log rows are all in before
    any value (the value's trigger finds its row); the writes are CTEs that nothing reads,
    run after the rest. A batch is one statement however many rows it has, as psycopg
    spends client CPU per statement sent. Prepared (one per shape of append: a few, since
    executors repeat the same calls), and in the server's own ``$n`` placeholders for a
    ``RawCursor``: psycopg parses a statement of ``%s`` again at every call once it has
    more than 50 parameters, which a batched step's has. Bytes: psycopg takes them as
    they are."""
    width = len(_LOG_COLUMNS.split(", "))  # run_id and seq first: $1, $2 of the first row
    rows = ", ".join(
        "(" + ", ".join(f"${i * width + c}" for c in range(1, width + 1)) + ")" for i in range(len(values))
    )
    log = f"INSERT INTO log ({_LOG_COLUMNS}) VALUES {rows}"
    if not any(values) and not writes:
        return f"{log} RETURNING position".encode()
    numbers = itertools.count(len(values) * width + 1)
    ctes = [f"l AS ({log} RETURNING position, run_id, seq)"]
    if any(values):
        slots = ", ".join(
            f"(${i * width + 1}, ${i * width + 2}, {k}, ${next(numbers)}, ${next(numbers)})"
            for i, count in enumerate(values)
            for k in range(count)
        )
        ctes.append(
            f"p AS (INSERT INTO payload (id, position, slot, value) "
            f"SELECT l.position * {SLOTS_PER_EVENT} + v.k, l.position, v.slot, v.value "
            f"FROM l JOIN (VALUES {slots}) AS v(run_id, seq, k, slot, value) "
            "ON l.run_id = v.run_id AND l.seq = v.seq)"
        )
    for i, sql in enumerate(writes):  # psycopg's %s and %% in the server's words
        numbered = _PYFORMAT.sub(lambda m: "%" if m[0] == "%%" else f"${next(numbers)}", sql)
        ctes.append(f"w{i} AS ({numbered})")
    return f"WITH {', '.join(ctes)} SELECT position FROM l ORDER BY position".encode()


_PYFORMAT: Final = re.compile("%%|%s")


class _Bare(PgCursor):
    """A cursor for statements outside any transaction, each its own (a read between calls):
    one that finds the connection dead (dropped while idle) did nothing, so it goes again,
    once, on a new connection, as a transaction's first statement does (``_first``). Any
    other driver error leaves as it is, for the caller to translate (the seam's contract:
    SQLite's bare cursor raises apsw's)."""

    __slots__ = ("_backend",)

    def __init__(self, backend: PostgresBackend) -> None:
        super().__init__(backend.conn.cursor())
        self._backend = backend

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> PgCursor:
        def run() -> PgCursor:
            self._cur = self._backend.conn.cursor()  # the connection's, a new one after a drop
            return PgCursor.execute(self, sql, params)

        return self._backend._first(run)


def _append(rows: Sequence[NewRow]) -> tuple[tuple[int, ...], list[Any]]:
    """The append's shape (``_append_sql``) and its parameters; too many payload values is
    a StoreError."""
    params: list[Any] = []
    for r in rows:
        params += r.columns()
    for r in rows:
        for slot, value in r.payloads:
            params += (slot, value.decode())
    return tuple(len(r.payloads) for r in rows), params


def _with_writes(shape: tuple[int, ...], params: list[Any], writes: list[Carried]) -> tuple[bytes, list[Any]]:
    """The append's statement and parameters with the fold's kept ``writes``."""
    if not writes:
        return _append_sql(shape), params
    return _append_sql(shape, tuple(w.sql for w in writes)), params + [v for w in writes for v in w.params]


def _positions(insert: psycopg.Cursor[Any]) -> list[int]:
    """The positions the append's statement gave its rows, in the rows' order."""
    return [int(p) for (p,) in insert.fetchall()]


def _with_search_path(dsn: str, schema: str) -> str:
    """``dsn`` whose connections use ``schema`` first."""
    parts = psycopg.conninfo.conninfo_to_dict(dsn)
    parts["options"] = f"{parts.get('options') or ''} -c search_path={schema}".strip()
    return psycopg.conninfo.make_conninfo(**parts)  # type: ignore[arg-type]
