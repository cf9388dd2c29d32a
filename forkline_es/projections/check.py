"""Offline comparison: rebuild the projections into a scratch copy and diff them with the live ones.

The live database is only read: the backend's ``scratch_copy`` copies one snapshot of it
(on SQLite the backup API in one step), however many processes write meanwhile. Both
sides come from that copy: its projection rows are read first (the live side), then it is
refolded from its log and every projection table, plus the projector positions, is
compared row by row by primary key. An empty list means the projections were exactly what
the log gives, at that snapshot; a write committed later is in neither side. The copy
lives beside the database (``log.scratch``), where gc finds it if a check is killed.

``run_differences`` does the same for one run, in a scratch in-memory SQLite store
whatever the live backend: a run's projections depend on its own events only, so its log
rows alone must fold into its live rows.
``verify`` uses it to see a history that is consistent in itself but not with what was
folded when it was written (a deleted tail, a run rewritten to its end).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from msgspec.structs import astuple

from forkline_es.log.backend import Backend, Cursor
from forkline_es.log.eventlog import EventLog
from forkline_es.log.rows import LOG_COLUMNS, LogRow
from forkline_es.log.schema import SLOTS_PER_EVENT
from forkline_es.log.sqlite import scratch_in_memory
from forkline_es.projections.runner import Projections, Projector
from forkline_es.projections.sql import DDL

__all__ = [
    "RunRefolder",
    "check_projections",
    "compare_rows",
    "compare_tables",
    "run_differences",
    "table_rows",
]

Progress = Callable[[int, int], None]
#: Fresh instances of the projectors a store folds beside the core read models (``store.extra_projectors``).
Extra = Callable[[], Iterable[Projector]]


def _layout(backend: Backend, cur: Cursor, table: str) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """``table``'s columns, and the indexes of its primary key's (all columns when it has none)."""
    columns = backend.columns(cur, table)
    key = tuple(columns.index(c) for c in backend.primary_key(cur, table))
    return columns, key or tuple(range(len(columns)))


#: A table's rows by primary key.
Rows = dict[tuple[Any, ...], tuple[Any, ...]]


def table_rows(backend: Backend, cur: Cursor, table: str) -> Rows:
    """Every row of ``table`` keyed by its primary key (all columns when it has none)."""
    columns, key = _layout(backend, cur, table)
    if not columns:
        return {}
    return {
        tuple(row[i] for i in key): tuple(row)
        for row in cur.execute(f"SELECT {', '.join(columns)} FROM {table}")
    }


def compare_tables(live: Backend, rebuilt: Backend, tables: Iterable[str]) -> list[str]:
    """One line per differing row of each table, live versus rebuilt (each read in one snapshot)."""
    with live.snapshot() as cur:
        rows = [(table, table_rows(live, cur, table)) for table in tables]
    return compare_rows(rows, rebuilt)


def compare_rows(live: Iterable[tuple[str, Rows]], rebuilt: Backend) -> list[str]:
    """One line per differing row of each (table, rows read earlier), versus ``rebuilt``."""
    out: list[str] = []
    with rebuilt.snapshot() as cur:
        for table, rows in live:
            out.extend(_differences(table, rows, table_rows(rebuilt, cur, table), "the rebuild"))
    return out


#: Columns holding a whole JSON state or fragment: named when they differ, not printed.
_LONG: Final = frozenset({"state", "doc"})


def _differences(
    table: str, a: Rows, b: Rows, what: str, columns: tuple[str, ...] | None = None
) -> list[str]:
    """One line per differing row: ``a`` is live, ``b`` ``what``. With ``columns``, a changed
    row names its changed columns (JSON ``state`` and ``doc`` only by name) instead of both rows."""
    found: list[str] = []
    for key in sorted(a.keys() | b.keys(), key=repr):
        if key not in b:
            found.append(f"{table} {key!r}: live has {a[key]!r}, {what} has no such row")
        elif key not in a:
            found.append(f"{table} {key!r}: {what} has {b[key]!r}, live has no such row")
        elif a[key] != b[key]:
            found.append(f"{table} {key!r}: " + _changed(a[key], b[key], what, columns))
    return found


def _changed(a: tuple[Any, ...], b: tuple[Any, ...], what: str, columns: tuple[str, ...] | None) -> str:
    if columns is None:
        return f"live {a!r} != {what} {b!r}"
    return "; ".join(
        f"{c} differs" if c in _LONG else f"{c} live {x!r} != {what} {y!r}"
        for c, x, y in zip(columns, a, b, strict=True)
        if x != y
    )


def _keyed(values: Iterable[tuple[int, str, str]]) -> Iterator[tuple[int, int, str, str]]:
    """(id, position, slot, value) rows: each event's values numbered in slot order."""
    place: dict[int, int] = {}
    for position, slot, value in sorted(values):
        k = place[position] = place.get(position, -1) + 1
        yield position * SLOTS_PER_EVENT + k, position, slot, value


def check_projections(backend: Backend, extra: Extra, progress: Progress | None = None) -> list[str]:
    """Every difference between the live projections of ``backend`` and a rebuild from its log,
    both taken from one scratch copy of one snapshot."""
    with backend.scratch_copy() as copy:
        projections = Projections(EventLog(copy), extra())
        with copy.snapshot() as cur:  # before the rebuild
            live = [(table, table_rows(copy, cur, table)) for table in (*projections.tables, "projector")]
        projections.rebuild(progress)
        return compare_rows(live, copy)


_LOG_PARAMS: Final = ", ".join("?" for _ in LOG_COLUMNS.split(", "))


@dataclass(frozen=True, slots=True)
class _RunTable:
    """How to read one run's rows of a projection table, by its ``run_id`` column (every
    per-run table has one: no fold knows a log position); keyed by primary key."""

    name: str
    columns: tuple[str, ...]
    sql: str
    key: tuple[int, ...]

    @classmethod
    def of(cls, backend: Backend, cur: Cursor, name: str) -> _RunTable | None:
        columns, key = _layout(backend, cur, name)
        if "run_id" not in columns:
            return None  # not a per-run table: nothing to compare run by run
        return cls(name, columns, f"SELECT * FROM {name} WHERE run_id = ?", key)

    def rows(self, cur: Cursor, run_id: str) -> Rows:
        return {tuple(row[i] for i in self.key): tuple(row) for row in cur.execute(self.sql, (run_id,))}


class RunRefolder:
    """Refolds single runs in one scratch in-memory database, emptied between runs.

    The scratch log has no append-only triggers: it is a copy made to be thrown away.
    Use as a context manager, or ``close()``; one per thread.
    """

    def __init__(self, extra: Extra) -> None:
        self.scratch = scratch_in_memory()
        self.projections = Projections(EventLog(self.scratch), extra())
        dialect = self.scratch.dialect
        with self.scratch.transaction("prepare a refold") as cur:
            cur.execute(dialect.ddl(DDL))
            for projector in self.projections.extra:
                cur.execute(dialect.ddl(projector.ddl))
            found = (_RunTable.of(self.scratch, cur, name) for name in self.projections.tables)
            self.tables = [t for t in found if t is not None]

    def differences(
        self, cur: Cursor, run_id: str, rows: Sequence[LogRow], values: Iterable[tuple[int, str, str]]
    ) -> list[str]:
        """Every difference between one run's live projection rows (read through ``cur``,
        the caller's snapshot) and a refold of ``rows``, the run's log rows in seq order,
        with ``values``, its stored payload values as (position, slot, value)."""
        return self.compare(cur, run_id, self.refold(run_id, rows, values))

    def refold(
        self, run_id: str, rows: Sequence[LogRow], values: Iterable[tuple[int, str, str]]
    ) -> list[tuple[_RunTable, Rows]]:
        """The run's projection rows, table by table, as a refold of ``rows`` and ``values``
        gives them. The rows are folded one by one as appends fold them (the property tests
        hold that equal to a rebuild), which spares a rebuild's dropping and creating of
        tables. Nothing here reads the live store: an error is the rows' own."""
        with self.scratch.transaction("refold a run") as scratch:
            for name in (*self.projections.tables, "payload", "log"):
                scratch.execute(f"DELETE FROM {name}")
            scratch.executemany(f"INSERT INTO log ({LOG_COLUMNS}) VALUES ({_LOG_PARAMS})", map(astuple, rows))
            scratch.executemany(
                "INSERT INTO payload (id, position, slot, value) VALUES (?, ?, ?, ?)", _keyed(values)
            )
            self.projections.forget(run_id)
            for row in rows:
                self.projections.apply(scratch, row, row.event())
            return [(table, table.rows(scratch, run_id)) for table in self.tables]

    def compare(self, cur: Cursor, run_id: str, folded: list[tuple[_RunTable, Rows]]) -> list[str]:
        """Each difference between the live projection rows (through ``cur``) and ``folded``."""
        out: list[str] = []
        for table, want in folded:
            out.extend(_differences(table.name, table.rows(cur, run_id), want, "refold", table.columns))
        return out

    def close(self) -> None:
        self.scratch.close()

    def __enter__(self) -> RunRefolder:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def run_differences(log: EventLog, cur: Cursor, run_id: str, extra: Extra) -> list[str]:
    """``RunRefolder.differences`` for one run read through ``cur`` (a snapshot of ``log``),
    in a scratch database of its own."""
    rows, values = list(log.read_run(run_id, cur)), log.run_payloads(run_id, cur)
    with RunRefolder(extra) as refolder:
        return refolder.differences(cur, run_id, rows, values)
