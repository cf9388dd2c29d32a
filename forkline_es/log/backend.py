"""The storage seam: what every package above ``log/`` may ask of a database, and nothing more.

A ``Backend`` owns one database connection (SQLite today: ``log.sqlite``; PostgreSQL
next) and gives the rest of the code a ``Cursor`` inside a transaction it opens and
closes itself. Every statement above the seam is written once, with ``?`` placeholders,
in SQL both databases accept (``INSERT ... ON CONFLICT ... DO UPDATE``, ``RETURNING``,
``coalesce``); the few that truly differ are the ``Dialect``'s. No code above the seam
imports a driver or asks which backend it runs on: it asks the backend or its dialect.

A follower of the log (the completion feed, ``acknowledge``, ``register_consumer(since=
"now")``, projector catch-up and rebuild) reads up to ``horizon(cur)``: on a database
whose positions are not given out in commit order, the highest position seen is not yet
a promise that no lower one will still commit.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, NoReturn, Protocol, TypeVar

from forkline_es.errors import ForklineError
from forkline_es.log.rows import NewRow

__all__ = ["Backend", "Cursor", "Dialect", "ProjectorFence", "Reclaimed", "Rows", "TriggerDifference"]

T = TypeVar("T")


class Rows(Protocol):
    """What a statement gives back: its rows as tuples, iterated or fetched at once."""

    def __iter__(self) -> Iterator[Any]: ...

    def fetchall(self) -> list[Any]: ...


class Cursor(Protocol):
    """A cursor inside one of the backend's transactions; ``?`` placeholders."""

    def execute(self, sql: str, params: Any = (), /) -> Rows: ...

    def executemany(self, sql: str, params: Iterable[Sequence[Any]], /) -> Any: ...


class Dialect(Protocol):
    """The statements that differ between backends; every other statement is written once."""

    @property
    def name(self) -> str:
        """A short name for messages and logs ("sqlite", "postgresql"), never for branching."""
        ...

    @property
    def end_of_log(self) -> str:
        """An SQL expression: the highest log position ever given out (evicted rows included)."""
        ...

    @property
    def last_rows(self) -> str:
        """A query: ``(run_id, seq, digest)`` of each run's last row, in ``run_id`` order."""
        ...

    @property
    def table_sizes(self) -> str:
        """A query: ``(table, bytes)`` for each table of the database, its indexes included."""
        ...

    @property
    def database_size(self) -> str:
        """A query: one row, the database's size in bytes (for SQLite its pages in use or
        free, without the WAL)."""
        ...

    @property
    def free_space(self) -> str:
        """A query: one row, the bytes of free pages the database holds for reuse (SQLite's
        freelist, which ``gc`` gives back), or NULL where the server manages it."""
        ...

    def byte_length(self, column: str) -> str:
        """An SQL expression: the UTF-8 length in bytes of the text in ``column``."""
        ...

    def text_bytes(self, column: str) -> str:
        """An SQL expression: the text in ``column`` as its bytes, which a damaged file's
        text may hold without being UTF-8 (``EventLog.read_run_bytes``)."""
        ...

    def each(self, alias: str, of: str = "int") -> str:
        """A table expression, one ``?`` parameter (``array``'s value), column ``value``:
        the members of a list of ints (``of="int"``) or texts (``of="text"``)."""
        ...

    def array(self, values: Sequence[int] | Sequence[str]) -> object:
        """The parameter ``each`` takes for ``values``."""
        ...

    def json_text(self, column: str, member: str) -> str:
        """An SQL expression: the text member ``member`` of the JSON object in ``column``."""
        ...

    def ddl(self, template: str) -> str:
        """Projection and artifact DDL, written once in SQLite's words, in this database's:
        ``WITHOUT ROWID`` tables, integer widths and text collation are where they differ."""
        ...

    def temp_ddl(self, ddl: str) -> str:
        """``ddl``'s tables and indexes created as temporary ones of the same names, which
        this connection then reads instead (the read-only store's private fold)."""
        ...

    def drop_derived(self, cur: Cursor, tables: Sequence[str]) -> None:
        """Drop the projection ``tables`` (views over them go too) in ``cur``'s transaction,
        which then refolds them from the log: a rebuild. They hold references, digests and
        what the log's bodies say, never a payload value."""
        ...

    def kept_privileges(self, cur: Cursor) -> list[str]:
        """Statements that give back, once a rebuild has created them again, the privileges
        other roles hold on the tables and views a rebuild drops (``drop_derived``): on
        PostgreSQL the grants an executor role reads and folds through; none on SQLite."""
        ...


@dataclass(frozen=True, slots=True)
class TriggerDifference:
    """One trigger that is not as the schema makes it: ``state`` is missing, altered or unexpected."""

    name: str
    table: str
    state: str
    expected: str | None
    actual: str | None


@dataclass(frozen=True, slots=True)
class Reclaimed:
    """What ``Backend.reclaim`` gave back to the file system (gc), in the backend's units."""

    page_size: int
    pages_before: int
    pages_after: int
    bytes_before: int | None
    bytes_after: int | None
    free_pages: int
    wal_truncated: bool
    not_done: tuple[str, ...]


class ProjectorFence(Protocol):
    """Keeps handles of different projector versions from folding into one database at once
    (a rolling upgrade): ``key`` names a handle's whole set of projector versions.

    The projections' runner reads the stored versions and decides; the fence only makes the
    decision hold across processes and hosts, each database in its own way.
    """

    def hold_read(self, cur: Cursor, key: int) -> bool:
        """``cur``'s snapshot read the stored versions as ``key``'s: hold them from there if
        this database can (True), else do nothing (False: ``gate``, then ``hold``)."""
        ...

    def gate(self, cur: Cursor) -> None:
        """In a write transaction, before the stored versions are read: until it ends, no
        other handle reads them to hold or change them."""
        ...

    def others(self, cur: Cursor, key: int) -> bool:
        """Under ``gate``: whether a handle of another version set may still fold (a refold
        to ``key`` must then be refused)."""
        ...

    def hold(self, cur: Cursor, key: int) -> None:
        """Under ``gate``, the stored versions being ``key``'s: this handle folds with them."""
        ...

    def changed(self, cur: Cursor) -> bool:
        """In a write transaction that folds: whether the stored versions may differ from
        what this handle holds (then they are read again). False when it holds nothing."""
        ...


class Backend(Protocol):
    """One database under the log; see the module docstring for the rules above it."""

    @property
    def projectors(self) -> ProjectorFence:
        """Projector versions across processes and hosts (a rolling upgrade)."""
        ...

    @property
    def dialect(self) -> Dialect: ...

    @property
    def read_only(self) -> bool:
        """Opened read-only: every write is refused (``refuse_write``) before the database would."""
        ...

    @property
    def location(self) -> str:
        """The file path or DSN, for messages."""
        ...

    @property
    def errors(self) -> tuple[type[BaseException], ...]:
        """The driver's exception classes: what ``translate`` takes."""
        ...

    def append(
        self, rows: Sequence[NewRow], then: Callable[[Cursor], T] | None = None
    ) -> tuple[list[int], T | None]:
        """Insert ``rows`` (all or none) and return their positions; ``then(cursor)`` (the
        fold) runs on the same cursor in the same transaction, and if it raises nothing of
        the batch is kept. A taken ``(run_id, seq)`` is ``fe.Conflict``.

        ``then`` gets no positions: a backend may run it before the rows are inserted, or
        before the database has answered (PostgreSQL sends the rows, the fold's writes and
        the COMMIT in one round trip), so the fold may have run for a batch that is then
        refused; nothing of it is kept then, and its caller drops what it cached."""
        ...

    def transaction(self, what: str, *, maintenance: bool = False) -> AbstractContextManager[Cursor]:
        """A write transaction for the rare paths; ``what`` names it in errors. ``maintenance``:
        a lock held too long is a ``StoreError`` (gc), not the ``conflict`` of an append."""
        ...

    def snapshot(self, *, following: bool = False) -> AbstractContextManager[Cursor]:
        """A read transaction: every statement inside sees one coherent state (inside a
        transaction of this backend already, that transaction's cursor). ``following``: the
        reader follows the log and asks ``horizon(cur)`` inside; a backend whose horizon
        waits for appends in flight fixes it before the snapshot starts, and only then."""
        ...

    def private(self, what: str) -> AbstractContextManager[Cursor]:
        """A transaction that reads one snapshot and writes only temporary tables (allowed
        on a read-only store: its private fold of lagging projections)."""
        ...

    def cursor(self) -> Cursor:
        """A cursor outside any transaction: each statement reads its own snapshot."""
        ...

    def connection(self) -> Any:
        """The driver's connection, for tests and tools; code above the seam never uses it."""
        ...

    def horizon(self, cur: Cursor) -> int:
        """The position up to which every row is committed and will never be joined by a
        lower one: what a follower of the log reads up to (never a raw ``max(position)``).
        Inside a ``snapshot``, only one opened with ``following=True``; inside a write
        ``transaction`` it may hold back appends until that transaction ends."""
        ...

    def translate(self, error: BaseException, what: str, *, maintenance: bool = False) -> ForklineError:
        """The one place where this backend's driver error becomes a forkline_es error."""
        ...

    def refuse_write(self, what: str) -> NoReturn: ...

    def columns(self, cur: Cursor, table: str) -> tuple[str, ...]:
        """``table``'s columns in order (the catalogue); empty when there is no such table."""
        ...

    def primary_key(self, cur: Cursor, table: str) -> tuple[str, ...]:
        """``table``'s primary key columns in key order; empty when it has none."""
        ...

    def has_temp_table(self, cur: Cursor, table: str) -> bool:
        """Whether this connection holds a temporary table named ``table``."""
        ...

    def trigger_differences(self, cur: Cursor) -> list[TriggerDifference]:
        """The log's triggers gone, altered or added, against what its schema version made."""
        ...

    def wal_bytes(self) -> int | None:
        """The write-ahead log's size now: SQLite's ``-wal`` file; PostgreSQL's WAL (the
        server's, shared by its databases), None when this role may not read it."""
        ...

    def reclaim(self, progress: Callable[[int, int], None] | None = None) -> Reclaimed:
        """Give the space freed by eviction back (gc), in short steps appends can pass."""
        ...

    def artifacts_beside(self) -> str | None:
        """The database path artifact files are kept beside (``<path>.artifacts/``) when the
        store is opened without a folder for them; None where there is no such place (a
        server, whose hosts share a folder named at open)."""
        ...

    def sweep_leftovers(self, grace_seconds: float) -> tuple[int, int]:
        """Files of the backend's own that killed processes left (files, bytes removed)."""
        ...

    def scratch_copy(self) -> AbstractContextManager[Backend]:
        """A writable copy of one snapshot of this database, thrown away at exit: a check
        refolds there while the live database is only read."""
        ...

    def close(self) -> None: ...
