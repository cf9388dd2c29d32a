"""The SQLite backend: the seam (``log.backend``) over one apsw connection.

Every public method opens its own transaction and hands the cursor to a private
``_insert``; callers that must commit more in the same transaction (projections) pass
``then``, which runs on the same cursor before COMMIT. The hot append path writes
``BEGIN IMMEDIATE ... COMMIT`` itself: apsw's savepoint context manager is measurably
slower there. ``translate`` is the one place an apsw error becomes a forkline_es error.

SQLite has one writer at a time and gives each row ``END_OF_LOG + 1`` under that lock,
so positions are given out in commit order: the horizon is the end of the log.
"""

from __future__ import annotations

import os
import re
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any, Final, NoReturn, TypeVar

import apsw
import msgspec

from forkline_es._logging import get_logger
from forkline_es.errors import Conflict, ForklineError, RunNotRetained, StoreDamaged, StoreError
from forkline_es.log.backend import Backend, Cursor, Reclaimed
from forkline_es.log.checkpoint import truncate
from forkline_es.log.connection import Connection, Durability, open_connection, open_read_only
from forkline_es.log.group import Batch, Outcome
from forkline_es.log.rows import NewRow
from forkline_es.log.schema import END_OF_LOG, EVICTED_RUN_REFUSED, NOT_ITS_NEXT_ROW, SLOTS_PER_EVENT
from forkline_es.log.scratch import new_check_copy, remove_check_copy, sweep_check_copies
from forkline_es.log.sqlite_fence import SqliteFence
from forkline_es.log.triggers import TriggerDifference, trigger_differences
from forkline_es.log.wal import WalWatch, release

__all__ = ["SQLITE", "SqliteBackend", "SqliteDialect", "open_sqlite", "scratch_in_memory", "translate"]

T = TypeVar("T")

_INSERT_ROW: Final = (
    "INSERT INTO log (position, run_id, seq, entry, generation, kind, at, key, body, digest, prev) "
    f"VALUES ({END_OF_LOG} + 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_PAYLOAD: Final = "INSERT INTO payload (id, position, slot, value) VALUES (?, ?, ?, ?)"
_log = get_logger("forkline_es.log")


class SqliteDialect:
    """SQLite's words for what differs: JSON lists through ``json_each``, ``json_extract``."""

    name = "sqlite"
    end_of_log = END_OF_LOG
    # The (run_id, seq) key gives max(seq) per run with one seek, and SQLite takes the bare
    # column digest from that row.
    last_rows = "SELECT run_id, max(seq), digest FROM log GROUP BY run_id ORDER BY run_id"

    _TEMP_CREATE: Final = re.compile(r"\bCREATE\s+(TABLE|VIEW)\s+", re.IGNORECASE)
    _TEMP_NAMED: Final = re.compile(
        r"\b(CREATE\s+(?:UNIQUE\s+)?INDEX|DROP\s+(?:TABLE|VIEW|INDEX))\s+(IF\s+(?:NOT\s+)?EXISTS\s+)?(\w+)\b",
        re.IGNORECASE,
    )

    # dbstat (the pages of every b-tree), indexes counted with their table
    table_sizes = (
        "SELECT coalesce(s.tbl_name, d.name), sum(d.pgsize) FROM dbstat AS d "
        "LEFT JOIN sqlite_schema AS s ON s.name = d.name GROUP BY 1"
    )
    database_size = "SELECT c.page_count * s.page_size FROM pragma_page_count() AS c, pragma_page_size() AS s"
    free_space = (
        "SELECT f.freelist_count * s.page_size FROM pragma_freelist_count() AS f, pragma_page_size() AS s"
    )

    def byte_length(self, column: str) -> str:
        return f"length(CAST({column} AS BLOB))"

    def text_bytes(self, column: str) -> str:
        return f"CAST({column} AS BLOB)"

    def each(self, alias: str, of: str = "int") -> str:
        return f"json_each(?) AS {alias}"

    def array(self, values: Sequence[int] | Sequence[str]) -> object:
        return msgspec.json.encode(list(values)).decode()  # text: a BLOB would be read as JSONB

    def json_text(self, column: str, member: str) -> str:
        return f"json_extract({column}, '$.{member}')"

    def ddl(self, template: str) -> str:
        return template

    def temp_ddl(self, ddl: str) -> str:
        ddl = self._TEMP_CREATE.sub(lambda m: f"CREATE TEMP {m[1]} ", ddl)
        return self._TEMP_NAMED.sub(lambda m: f"{m[1]} {m[2] or ''}temp.{m[3]}", ddl)

    def kept_privileges(self, cur: Cursor) -> list[str]:
        return []  # a file has no roles: its permissions are the file system's

    def drop_derived(self, cur: Cursor, tables: Sequence[str]) -> None:
        """The drops without ``secure_delete``, which is back on before this returns.

        With it, every page of every dropped table is overwritten with zeros, and the
        statement journal keeps each page's original in memory until the DROP ends: a
        rebuild of 1,000,000 events peaked at 412 MB and spent a third of its time there
        (docs/benchmarks.md). Zeroing them protects nothing: they hold no payload value,
        what they say is in the log rows that stay, and a page reused later is written
        whole, while ``gc`` cuts the free ones off the file or fills them (docs/retention.md).
        """
        cur.execute("PRAGMA secure_delete = OFF")
        try:
            for table in tables:
                cur.execute(f"DROP TABLE IF EXISTS {table}")
        finally:
            cur.execute("PRAGMA secure_delete = ON")


SQLITE: Final = SqliteDialect()


def translate(error: BaseException, what: str, *, maintenance: bool = False) -> ForklineError:
    """The one place where an apsw error becomes a forkline_es error.

    ``maintenance`` (gc): a lock that outlasted the busy wait is the store's error, not
    the ``conflict`` that refuses an append.
    """
    if isinstance(error, apsw.ConstraintError) and NOT_ITS_NEXT_ROW in str(error):
        return Conflict(
            f"{what}: the run's rows are not the ones this handle follows (it was evicted and "
            "its tombstone purged, or its id started again as another run); nothing was written: "
            "get a fresh handle with store.resume_run(run_id)"
        )
    if isinstance(error, apsw.ConstraintError) and "log.run_id, log.seq" in str(error):
        return Conflict(
            f"{what}: another writer appended to this run first (its seq is taken); "
            "get a fresh handle with store.resume_run(run_id) and decide again"
        )
    if isinstance(error, apsw.ConstraintError) and EVICTED_RUN_REFUSED in str(error):
        return RunNotRetained(
            f"{what}: the run was evicted (its eviction is recorded), so it takes no more events; "
            "nothing was written (record into a new run instead)"
        )
    if isinstance(error, apsw.BusyError | apsw.LockedError):
        if maintenance:
            return StoreError(
                f"{what}: the database stayed locked by another connection ({error}); "
                "nothing of the unfinished step was kept: run it again"
            )
        return Conflict(f"{what}: the database stayed locked by another writer; retry the call")
    if isinstance(error, apsw.FullError):
        return StoreError(
            f"{what}: {error}: the disk (or the file size limit) is full; the unfinished "
            "transaction was rolled back: free some space and run it again"
        )
    if isinstance(error, apsw.ConstraintError):
        return StoreError(f"{what}: {error} (the log refused the write; nothing was written)")
    if isinstance(error, apsw.CorruptError | apsw.NotADBError):
        return StoreDamaged(
            f"{what}: {error}: the file is damaged; `sqlite3 FILE 'PRAGMA integrity_check'` says "
            "where, and a copy of it is what to restore"
        )
    return StoreError(f"{what}: {error}")


#: Pages one incremental-vacuum step gives back, in one short write transaction.
_VACUUM_STEP: Final = 1000
#: The pause between steps: longer than a waiting writer's longest sleep (2 ms,
#: log.connection), so that every waiting append gets the write lock in between.
_VACUUM_PAUSE: Final = 0.005
#: How long gc keeps trying to empty the WAL (each attempt holds writers for 50 ms at most).
_WAL_WAIT: Final = 2.0


class SqliteBackend:
    """The seam over one apsw connection (``Backend``).

    Given ``reopen``, the backend watches the connection's WAL file (``log.wal``) and,
    before each transaction or read, replaces a connection whose WAL another copy of
    SQLite in this process deleted (Python's ``sqlite3`` module closing a connection to
    our file).
    """

    dialect = SQLITE
    errors: tuple[type[BaseException], ...] = (apsw.Error,)

    def __init__(
        self, conn: Connection, reopen: Callable[[], Connection] | None = None, location: str | None = None
    ) -> None:
        self.conn = conn
        #: The path as the caller gave it (``conn.filename`` is absolute).
        self.location: str = location if location is not None else (conn.filename or ":memory:")
        self._reopen = reopen
        self._wal = WalWatch(conn.filename) if reopen is not None else None
        #: Opened read-only (``connection.open_read_only``): every write is refused here,
        #: before SQLite would refuse it.
        self.read_only: bool = bool(conn.readonly("main"))
        #: Held for each transaction: threads share the one connection (group commit,
        #: ``log.group``), and a statement of another thread must never run inside ours.
        self._lock = threading.RLock()
        self.projectors = SqliteFence()

    translate = staticmethod(translate)

    def refuse_write(self, what: str) -> NoReturn:
        raise StoreError(
            f"{what}: {self.location} was opened read-only (read_only=True), which writes "
            "nothing; open it with fe.Store.open(path) to record, retain or collect"
        )

    def connection(self) -> Connection:
        """The live connection, replaced first if its WAL was deleted under it."""
        wal = self._wal
        if wal is not None and wal.deleted() and not self.conn.in_transaction:
            assert self._reopen is not None
            path = self.conn.filename
            release(self.conn)
            wal.close()
            self.conn = self._reopen()
            self._wal = WalWatch(path)
            _log.warning("wal_deleted_reconnected", path=path)
        return self.conn

    def cursor(self) -> Cursor:
        """A cursor outside any transaction: each statement reads its own snapshot.

        Each statement runs under the backend's lock and is fetched whole before the lock is
        let go, so that it never runs inside another thread's open transaction (apsw would
        refuse it, or it would read rows that may still roll back).
        """
        return _LockedCursor(self)

    def close(self) -> None:
        self.conn.close()
        if self._wal is not None:
            self._wal.close()

    # -- writing ---------------------------------------------------------------------

    def append(
        self,
        rows: Sequence[NewRow],
        then: Callable[[Cursor], T] | None = None,
    ) -> tuple[list[int], T | None]:
        """Append ``rows`` atomically (all or none); return their positions.

        ``then(cursor)`` runs inside the same transaction, after the inserts; if it raises,
        nothing of the batch is kept.
        """
        if self.read_only:
            self.refuse_write("append")
        with self._lock:
            cur = self._begin_immediate("append")
            try:
                positions = self._insert(cur, rows)
                result = then(cur) if then is not None else None
                cur.execute("COMMIT")
            except BaseException as e:
                self._rollback(cur)
                if isinstance(e, apsw.Error):
                    raise translate(e, "append") from None
                raise
        return positions, result

    def _begin_immediate(self, what: str, *, maintenance: bool = False) -> apsw.Cursor:
        """A cursor in a new write transaction (BEGIN IMMEDIATE: the write lock now, so a
        busy store makes the caller wait here, before any work, not at its first write)."""
        cur: apsw.Cursor = self.connection().cursor()
        try:
            cur.execute("BEGIN IMMEDIATE")
        except apsw.Error as e:
            raise translate(e, what, maintenance=maintenance) from None
        return cur

    def append_group(self, batches: Sequence[Batch]) -> list[Outcome]:
        """Several callers' batches in one transaction, each in its own savepoint (``log.group``).

        A batch that fails rolls back to its savepoint and its error is its outcome; the
        others commit. A failure of BEGIN or COMMIT raises: no batch was kept.
        """
        if self.read_only:
            self.refuse_write("append")
        out: list[Outcome] = []
        with self._lock:
            cur = self._begin_immediate("append")
            try:
                for rows, then in batches:
                    cur.execute("SAVEPOINT caller")
                    try:
                        positions = self._insert(cur, rows)
                        result = then(cur) if then is not None else None
                        cur.execute("RELEASE caller")
                    except Exception as e:
                        cur.execute("ROLLBACK TO caller")
                        cur.execute("RELEASE caller")
                        out.append(translate(e, "append") if isinstance(e, apsw.Error) else e)
                    else:
                        out.append((positions, result))
                cur.execute("COMMIT")
            except BaseException as e:
                self._rollback(cur)
                if isinstance(e, apsw.Error):
                    raise translate(e, "append") from None
                raise
        return out

    def _insert(self, cur: Any, rows: Sequence[NewRow]) -> list[int]:
        """Each row takes ``END_OF_LOG + 1`` under the write lock; its position is the rowid."""
        positions: list[int] = []
        conn = self.conn
        for r in rows:
            cur.execute(_INSERT_ROW, r.columns())
            position = conn.last_insert_rowid()
            positions.append(position)
            first = position * SLOTS_PER_EVENT
            for k, (slot, value) in enumerate(r.payloads):
                cur.execute(_INSERT_PAYLOAD, (first + k, position, slot, value.decode()))
        return positions

    @staticmethod
    def _rollback(cur: Any) -> None:
        with suppress(apsw.Error):  # SQLite may have rolled back already (e.g. on I/O error)
            cur.execute("ROLLBACK")

    @contextmanager
    def transaction(self, what: str, *, maintenance: bool = False) -> Iterator[Cursor]:
        """A write transaction for the rare paths (retention, rebuild, gc): BEGIN IMMEDIATE."""
        if self.read_only:
            self.refuse_write(what)
        with self._lock:
            cur = self._begin_immediate(what, maintenance=maintenance)
            try:
                yield cur
                cur.execute("COMMIT")
            except BaseException as e:
                self._rollback(cur)
                if isinstance(e, apsw.Error):
                    raise translate(e, what, maintenance=maintenance) from None
                raise

    @contextmanager
    def snapshot(self, *, following: bool = False) -> Iterator[Cursor]:
        """A read transaction: every statement inside sees one coherent state.

        A driver error met inside (a damaged page: ``CorruptError``) leaves as a
        ``StoreError``, like a failed append, never as a raw apsw exception. ``following``
        changes nothing here: the end of the log in any snapshot is a horizon.
        """
        with self._lock:
            cur = self.connection().cursor()
            if self.conn.in_transaction:  # already inside this thread's transaction
                yield cur
                return
            cur.execute("BEGIN")
            try:
                yield cur
            except apsw.Error as e:
                raise translate(e, "read") from None
            finally:
                self._rollback(cur)

    @contextmanager
    def private(self, what: str) -> Iterator[Cursor]:
        """A transaction that reads one snapshot and writes only temporary tables: allowed on
        a read-only connection (the read-only store's private fold)."""
        with self._lock:
            cur = self.connection().cursor()
            cur.execute("BEGIN")
            try:
                yield cur
                cur.execute("COMMIT")
            except BaseException as e:
                self._rollback(cur)
                if isinstance(e, apsw.Error):
                    raise translate(e, what) from None
                raise

    def horizon(self, cur: Cursor) -> int:
        """One writer at a time, each row taking the end of the log plus one under the write
        lock: every position up to the end of the log is committed in any snapshot."""
        return int(cur.execute(f"SELECT {END_OF_LOG}").fetchall()[0][0])

    # -- catalogue ---------------------------------------------------------------------

    def columns(self, cur: Cursor, table: str) -> tuple[str, ...]:
        return tuple(str(c[1]) for c in cur.execute(f"PRAGMA table_info({table})").fetchall())

    def primary_key(self, cur: Cursor, table: str) -> tuple[str, ...]:
        info = cur.execute(f"PRAGMA table_info({table})").fetchall()
        return tuple(str(c[1]) for c in sorted(info, key=lambda c: c[5]) if c[5] > 0)

    def has_temp_table(self, cur: Cursor, table: str) -> bool:
        return bool(cur.execute("SELECT 1 FROM temp.sqlite_schema WHERE name = ?", (table,)).fetchall())

    def trigger_differences(self, cur: Cursor) -> list[TriggerDifference]:
        return trigger_differences(cur)

    # -- space -------------------------------------------------------------------------

    def _pragma(self, name: str) -> int:
        return int(self.connection().execute(f"PRAGMA {name}").fetchall()[0][0])

    def _sizes(self) -> tuple[int, int | None]:
        pages = self._pragma("page_count")
        path = self.location
        if path == ":memory:" or not os.path.exists(path):
            return pages, None
        wal = path + "-wal"
        return pages, os.path.getsize(path) + (os.path.getsize(wal) if os.path.exists(wal) else 0)

    def _give_back_free_pages(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Incremental vacuum in short write transactions, appends between them; returns the
        pages still free (other connections may free pages meanwhile). ``progress`` hears
        (pages given back, pages free at the start) after each step.

        A database created before auto_vacuum was set is converted by one full VACUUM, which
        holds the write lock for as long as it takes (once per database).
        """
        if self._pragma("auto_vacuum") != 2:
            self.connection().execute("PRAGMA auto_vacuum = INCREMENTAL")
            self.connection().execute("VACUUM")
            return self._pragma("freelist_count")
        total = self._pragma("freelist_count")
        for _ in range(total // _VACUUM_STEP + 2):
            with self.transaction("gc", maintenance=True) as cur:
                free = int(cur.execute("PRAGMA freelist_count").fetchall()[0][0])
                if progress is not None:
                    progress(max(total - free, 0), max(total, 1))
                if not free:
                    return 0
                cur.execute(f"PRAGMA incremental_vacuum({_VACUUM_STEP})").fetchall()
            time.sleep(_VACUUM_PAUSE)
        return self._pragma("freelist_count")

    def _empty_wal(self) -> str | None:
        """Empty the WAL file (TRUNCATE) without holding writers while readers are waited for;
        None when done, else why not."""
        if self.location == ":memory:":
            return None
        last = truncate(self.connection(), _WAL_WAIT)
        if last.done:
            return None
        why = "a reader holds a snapshot" if last.uncopied else "readers or writers kept it in use"
        return (
            f"WAL not truncated: {why} (gc waited {_WAL_WAIT:.0f} s); removed values may remain "
            "in its frames until a later gc empties it: run gc again once long reads have ended"
        )

    def wal_bytes(self) -> int | None:
        wal = self.location + "-wal"
        return os.path.getsize(wal) if os.path.exists(wal) else 0

    def reclaim(self, progress: Callable[[int, int], None] | None = None) -> Reclaimed:
        """Free pages back to the file system (incremental vacuum in short steps), then the
        WAL emptied; appends wait at most a fraction of a second at a time."""
        not_done: list[str] = []
        try:
            page_size = self._pragma("page_size")
            pages_before, bytes_before = self._sizes()
            free = self._give_back_free_pages(progress)
            if free:
                not_done.append(
                    f"{free} free pages not given back: other connections freed pages while gc ran; "
                    "run gc again"
                )
            wal = self._empty_wal()
            if wal is not None:
                not_done.append(wal)
            pages_after, bytes_after = self._sizes()
        except apsw.Error as e:
            raise translate(e, "gc", maintenance=True) from None
        return Reclaimed(
            page_size,
            pages_before,
            pages_after,
            bytes_before,
            bytes_after,
            free,
            wal is None,
            tuple(not_done),
        )

    def artifacts_beside(self) -> str | None:
        return self.location

    def sweep_leftovers(self, grace_seconds: float) -> tuple[int, int]:
        """Scratch copies of killed ``rebuild --check`` runs beside the file."""
        return sweep_check_copies(self.conn.filename, grace_seconds)  # the absolute path

    @contextmanager
    def scratch_copy(self) -> Iterator[Backend]:
        """A copy beside the database (``log.scratch``) made by the backup API in one step,
        i.e. in one read transaction of the live file: one snapshot, however many processes
        write meanwhile (a backup in several steps restarts whenever another connection
        writes, and may never finish while one keeps writing)."""
        target = new_check_copy(self.conn.filename or ":memory:")
        try:
            copy = apsw.Connection(target)
            try:
                try:
                    with copy.backup("main", self.connection(), "main") as backup:
                        backup.step(-1)
                except apsw.Error as e:
                    raise translate(e, "copy the database") from None
                yield SqliteBackend(copy)
            finally:
                copy.close()
        finally:
            remove_check_copy(target)


class _Fetched(list[Any]):
    """A statement's rows, fetched: what ``Rows`` promises (iteration and ``fetchall``)."""

    def fetchall(self) -> list[Any]:
        return self


class _LockedCursor:
    """``SqliteBackend.cursor``'s cursor: each statement under the backend's lock, fetched."""

    __slots__ = ("_backend",)

    def __init__(self, backend: SqliteBackend) -> None:
        self._backend = backend

    def execute(self, sql: str, params: Any = (), /) -> _Fetched:
        with self._backend._lock:
            return _Fetched(self._backend.connection().cursor().execute(sql, params))

    def executemany(self, sql: str, params: Any, /) -> _Fetched:
        with self._backend._lock:
            return _Fetched(self._backend.connection().cursor().executemany(sql, params))


def open_sqlite(
    path: str | os.PathLike[str], durability: Durability = "normal", *, read_only: bool = False
) -> SqliteBackend:
    """Open (creating or migrating; or read-only, never writing) a forkline_es SQLite file."""
    location = os.fspath(path)
    if read_only:
        return SqliteBackend(open_read_only(path), reopen=lambda: open_read_only(path), location=location)
    conn = open_connection(path, durability)
    return SqliteBackend(conn, reopen=lambda: open_connection(path, durability), location=location)


def scratch_in_memory() -> SqliteBackend:
    """A throwaway in-memory store without the append-only triggers: a refold's scratch."""
    conn = open_connection(":memory:")
    for (name,) in conn.execute("SELECT name FROM sqlite_schema WHERE type = 'trigger'").fetchall():
        conn.execute(f"DROP TRIGGER {name}")
    return SqliteBackend(conn)
