"""Reading another application's SQLite file (Forkline's runs.db), never writing it.

The compat package recognises and imports such a file; the driver stays here, below the
seam, with the one translation of its errors: whatever goes wrong reading the file is a
``ForeignFileError`` carrying SQLite's message.
"""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Iterator
from typing import Any

import apsw

__all__ = ["ForeignFile", "ForeignFileError", "open_foreign"]


class ForeignFileError(Exception):
    """The file could not be opened or read as SQLite (the message says why)."""


class ForeignFile:
    """A read-only connection to a SQLite file of another application."""

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def columns(self, table: str) -> set[str] | None:
        """The columns of ``table``; None when the file has no such table."""
        try:
            kind = self._conn.execute("SELECT type FROM sqlite_schema WHERE name = ?", (table,)).fetchall()
            if kind != [("table",)]:
                return None
            return {str(c[1]) for c in self._conn.execute(f"PRAGMA table_info({table})")}
        except apsw.Error as e:
            raise ForeignFileError(str(e)) from None

    def rows(self, sql: str, params: tuple[Any, ...] = ()) -> Iterator[Any]:
        try:
            yield from self._conn.execute(sql, params)
        except apsw.Error as e:
            raise ForeignFileError(str(e)) from None

    def close(self) -> None:
        self._conn.close()


def open_foreign(path: str, *, immutable: bool = False) -> ForeignFile:
    """Open ``path`` read-only. ``immutable``: not even the -wal and -shm files a read-only
    connection to a WAL-mode file would create beside it (the file must stay untouched)."""
    try:
        if immutable:
            uri = "file:" + urllib.parse.quote(os.path.abspath(path)) + "?immutable=1"
            return ForeignFile(apsw.Connection(uri, flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI))
        return ForeignFile(apsw.Connection(path, flags=apsw.SQLITE_OPEN_READONLY))
    except apsw.Error as e:
        raise ForeignFileError(str(e)) from None
