"""Offline comparison: rebuild the projections into a scratch copy and diff them with the live ones.

The live database is only read (apsw's backup API copies it); the copy is refolded from
its log and every projection table, plus the projector positions, is compared row by row
by primary key. An empty list means the live projections are exactly what the log gives.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterable
from typing import Any, Final

import apsw

from forkline_es.log.connection import Connection
from forkline_es.log.eventlog import EventLog
from forkline_es.projections.registry import extra_projectors
from forkline_es.projections.runner import Projections

__all__ = ["check_projections", "compare_tables", "copy_database", "rebuilt_differences", "table_rows"]

#: Differences reported per table before the rest are summarised in one line.
MAX_REPORTED: Final = 50

Progress = Callable[[int, int], None]


def table_rows(conn: Connection, table: str) -> dict[tuple[Any, ...], tuple[Any, ...]]:
    """Every row of ``table`` keyed by its primary key (all columns when it has none)."""
    info = conn.execute(f"PRAGMA table_info({table})").fetchall()
    if not info:
        return {}
    columns = [c[1] for c in info]
    pk = [c[1] for c in sorted(info, key=lambda c: c[5]) if c[5] > 0] or columns
    index = [columns.index(c) for c in pk]
    return {
        tuple(row[i] for i in index): tuple(row)
        for row in conn.execute(f"SELECT {', '.join(columns)} FROM {table}")
    }


def compare_tables(live: Connection, rebuilt: Connection, tables: Iterable[str]) -> list[str]:
    """One line per differing row of each table, live versus rebuilt."""
    out: list[str] = []
    for table in tables:
        a, b = table_rows(live, table), table_rows(rebuilt, table)
        found: list[str] = []
        for key in sorted(a.keys() | b.keys(), key=repr):
            if key not in b:
                found.append(f"{table} {key!r}: live has {a[key]!r}, the rebuild has no such row")
            elif key not in a:
                found.append(f"{table} {key!r}: the rebuild has {b[key]!r}, live has no such row")
            elif a[key] != b[key]:
                found.append(f"{table} {key!r}: live {a[key]!r} != rebuilt {b[key]!r}")
        out.extend(found[:MAX_REPORTED])
        if len(found) > MAX_REPORTED:
            out.append(f"{table}: {len(found) - MAX_REPORTED} more differing rows")
    return out


def copy_database(source: Connection, target: str) -> Connection:
    """A consistent copy of ``source`` at ``target`` (a path or ":memory:"), via the backup API."""
    copy = apsw.Connection(target)
    with copy.backup("main", source, "main") as backup:
        while not backup.done:
            backup.step(4096)
    return copy


def rebuilt_differences(
    conn: Connection,
    tables: Iterable[str],
    rebuild: Callable[[Connection, Progress | None], Any],
    progress: Progress | None = None,
    scratch_dir: str | None = None,
) -> list[str]:
    """Copy ``conn`` to a scratch file, ``rebuild(copy, progress)`` there, and diff the tables."""
    fd, path = tempfile.mkstemp(suffix=".db", prefix="forkline-es-check-", dir=scratch_dir)
    os.close(fd)
    try:
        copy = copy_database(conn, path)
        try:
            rebuild(copy, progress)
            return compare_tables(conn, copy, tables)
        finally:
            copy.close()
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            if os.path.exists(path + suffix):
                os.remove(path + suffix)


def _rebuild(copy: Connection, progress: Progress | None) -> None:
    Projections(EventLog(copy), extra_projectors()).rebuild(progress)


def check_projections(conn: Connection, progress: Progress | None = None) -> list[str]:
    """Every difference between the live projections of ``conn`` and a rebuild from its log."""
    tables = (*Projections(EventLog(conn), extra_projectors()).tables, "projector")
    return rebuilt_differences(conn, tables, _rebuild, progress)
