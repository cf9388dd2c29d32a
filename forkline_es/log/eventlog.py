"""The append-only event log: atomic appends with optimistic concurrency, streaming reads.

Every public method opens its own transaction and hands the cursor to a private
``_insert``; callers that must commit more in the same transaction (projections) pass
``then``, which runs on the same cursor before COMMIT. The hot append path writes
``BEGIN IMMEDIATE ... COMMIT`` itself: apsw's savepoint context manager is measurably
slower there.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Final, TypeVar

import apsw
import msgspec

from forkline_es._logging import get_logger
from forkline_es.errors import Conflict, ForklineError, RunNotRetained, StoreDamaged, StoreError
from forkline_es.log.connection import Connection, Cursor
from forkline_es.log.rows import LOG_COLUMNS, LogRow, NewRow
from forkline_es.log.schema import END_OF_LOG, EVICTED_RUN_REFUSED, SLOTS_PER_EVENT, payload_ids
from forkline_es.log.wal import WalWatch, release

__all__ = ["EventLog", "end_of_log", "translate"]

T = TypeVar("T")

_COLUMNS: Final = LOG_COLUMNS
_INSERT_ROW: Final = (
    "INSERT INTO log (position, run_id, seq, entry, generation, kind, at, key, body, digest, prev) "
    f"VALUES ({END_OF_LOG} + 1, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
_INSERT_PAYLOAD: Final = "INSERT INTO payload (id, position, slot, value) VALUES (?, ?, ?, ?)"
_READ_BATCH: Final = 5_000
_log = get_logger("forkline_es.log")


def translate(error: apsw.Error, what: str, *, maintenance: bool = False) -> ForklineError:
    """The one place where a driver error becomes a forkline_es error.

    ``maintenance`` (gc): a lock that outlasted the busy wait is the store's error, not
    the ``conflict`` that refuses an append.
    """
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


def end_of_log(cur: Cursor) -> int:
    """The highest log position ever given out, evicted rows included (never reused)."""
    return int(cur.execute(f"SELECT {END_OF_LOG}").fetchall()[0][0])


class EventLog:
    """Appends to and reads from the ``log`` and ``payload`` tables of one connection.

    Given ``reopen``, the log watches the connection's WAL file (``log.wal``) and, before
    each transaction or read, replaces a connection whose WAL another copy of SQLite in
    this process deleted (Python's ``sqlite3`` module closing a connection to our file).
    """

    def __init__(self, conn: Connection, reopen: Callable[[], Connection] | None = None) -> None:
        self.conn = conn
        self._reopen = reopen
        self._wal = WalWatch(conn.filename) if reopen is not None else None
        #: Opened read-only (``connection.open_read_only``): every write is refused here,
        #: before SQLite would refuse it.
        self.read_only: bool = bool(conn.readonly("main"))

    def refuse_write(self, what: str) -> None:
        raise StoreError(
            f"{what}: {self.conn.filename} was opened read-only (read_only=True), which writes "
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

    def close(self) -> None:
        self.conn.close()
        if self._wal is not None:
            self._wal.close()

    # -- writing ---------------------------------------------------------------------

    def append(
        self,
        rows: Sequence[NewRow],
        then: Callable[[Cursor, list[int]], T] | None = None,
    ) -> tuple[list[int], T | None]:
        """Append ``rows`` atomically (all or none); return their positions.

        ``then(cursor, positions)`` runs inside the same transaction; if it raises,
        nothing of the batch is kept.
        """
        if self.read_only:
            self.refuse_write("append")
        cur = self.connection().cursor()
        try:
            cur.execute("BEGIN IMMEDIATE")
        except apsw.Error as e:
            raise translate(e, "append") from None
        try:
            positions = self._insert(cur, rows)
            result = then(cur, positions) if then is not None else None
            cur.execute("COMMIT")
        except BaseException as e:
            self._rollback(cur)
            if isinstance(e, apsw.Error):
                raise translate(e, "append") from None
            raise
        return positions, result

    def _insert(self, cur: Cursor, rows: Sequence[NewRow]) -> list[int]:
        positions: list[int] = []
        conn = self.conn
        for r in rows:
            if len(r.payloads) > SLOTS_PER_EVENT:
                raise StoreError(
                    f"an event carries at most {SLOTS_PER_EVENT} payload values, not {len(r.payloads)}"
                )
            cur.execute(
                _INSERT_ROW,
                (
                    r.run_id,
                    r.seq,
                    r.entry,
                    r.generation,
                    r.kind,
                    r.at,
                    r.key,
                    r.body.decode(),  # TEXT: json_each and LogRow.body expect text, not a BLOB
                    r.digest,
                    r.prev,
                ),
            )
            position = conn.last_insert_rowid()
            positions.append(position)
            first = position * SLOTS_PER_EVENT
            for k, (slot, value) in enumerate(r.payloads):
                cur.execute(_INSERT_PAYLOAD, (first + k, position, slot, value.decode()))
        return positions

    @staticmethod
    def _rollback(cur: Cursor) -> None:
        with suppress(apsw.Error):  # SQLite may have rolled back already (e.g. on I/O error)
            cur.execute("ROLLBACK")

    @contextmanager
    def transaction(self, what: str, *, maintenance: bool = False) -> Iterator[Cursor]:
        """A write transaction for the rare paths (retention, rebuild, gc): BEGIN IMMEDIATE."""
        if self.read_only:
            self.refuse_write(what)
        cur = self.connection().cursor()
        try:
            cur.execute("BEGIN IMMEDIATE")
        except apsw.Error as e:
            raise translate(e, what, maintenance=maintenance) from None
        try:
            yield cur
            cur.execute("COMMIT")
        except BaseException as e:
            self._rollback(cur)
            if isinstance(e, apsw.Error):
                raise translate(e, what, maintenance=maintenance) from None
            raise

    @contextmanager
    def snapshot(self) -> Iterator[Cursor]:
        """A read transaction: every statement inside sees one coherent state.

        A driver error met inside (a damaged page: ``CorruptError``) leaves as a
        ``StoreError``, like a failed append, never as a raw apsw exception.
        """
        cur = self.connection().cursor()
        if self.conn.in_transaction:  # already inside a caller's transaction
            yield cur
            return
        cur.execute("BEGIN")
        try:
            yield cur
        except apsw.Error as e:
            raise translate(e, "read") from None
        finally:
            self._rollback(cur)

    # -- reading ---------------------------------------------------------------------

    def read_run(self, run_id: str, cur: Cursor | None = None) -> Iterator[LogRow]:
        """One run's events in seq order, streamed."""
        c = cur if cur is not None else self.connection().cursor()
        for row in c.execute(f"SELECT {_COLUMNS} FROM log WHERE run_id = ? ORDER BY seq", (run_id,)):
            yield LogRow(*row)

    def read_run_from(self, run_id: str, seq: int, limit: int = -1) -> Iterator[LogRow]:
        """One run's events from ``seq`` on, in seq order."""
        sql = f"SELECT {_COLUMNS} FROM log WHERE run_id = ? AND seq >= ? ORDER BY seq LIMIT ?"
        for row in self.connection().execute(sql, (run_id, seq, limit)):
            yield LogRow(*row)

    def read_from(self, position: int = 0, batch: int = _READ_BATCH) -> Iterator[LogRow]:
        """The whole log after ``position`` in position order, fetched in bounded batches."""
        sql = f"SELECT {_COLUMNS} FROM log WHERE position > ? ORDER BY position LIMIT ?"
        while True:
            rows = self.connection().execute(sql, (position, batch)).fetchall()
            if not rows:
                return
            for row in rows:
                yield LogRow(*row)
            position = rows[-1][0]

    def run_payloads(self, run_id: str, cur: Cursor | None = None) -> list[tuple[int, str, str]]:
        """(position, slot, value) of every payload value still stored for the run's events."""
        c = cur if cur is not None else self.connection().cursor()
        sql = (
            "SELECT p.position, p.slot, p.value FROM log AS l "
            f"JOIN payload AS p ON p.id {payload_ids('l.position')} WHERE l.run_id = ?"
        )
        return [(int(p), str(s), str(v)) for p, s, v in c.execute(sql, (run_id,))]

    def payloads(self, positions: Sequence[int], cur: Cursor | None = None) -> dict[tuple[int, str], str]:
        """Payload values still stored for the given events, keyed by (position, slot)."""
        c = cur if cur is not None else self.connection().cursor()
        sql = (
            "SELECT p.position, p.slot, p.value FROM json_each(?) AS j "
            f"JOIN payload AS p ON p.id {payload_ids('j.value')}"
        )
        rows = c.execute(sql, (msgspec.json.encode(list(positions)).decode(),))  # text: a BLOB is JSONB
        return {(position, slot): value for position, slot, value in rows}

    def max_position(self) -> int:
        row = self.connection().execute("SELECT max(position) FROM log").fetchall()[0][0]
        return int(row or 0)

    def end_position(self) -> int:
        """The highest position ever given out: above ``max_position`` once the newest run is evicted."""
        return end_of_log(self.connection().cursor())

    def run_exists(self, run_id: str, cur: Cursor | None = None) -> bool:
        c = cur if cur is not None else self.connection().cursor()
        return bool(c.execute("SELECT 1 FROM log WHERE run_id = ? AND seq = 1", (run_id,)).fetchall())

    def eviction(self, run_id: str, cur: Cursor | None = None) -> tuple[str, str, str | None] | None:
        """(at, reason, policy) of the run's eviction record, if one is kept."""
        c = cur if cur is not None else self.connection().cursor()
        rows = c.execute("SELECT at, reason, policy FROM eviction WHERE run_id = ?", (run_id,)).fetchall()
        return (rows[0][0], rows[0][1], rows[0][2]) if rows else None
