"""Seeing our WAL file deleted under an open connection, and leaving that connection safely.

apsw links its own copy of SQLite; Python's ``sqlite3`` module links another. POSIX locks
belong to the process, not to a library, so the two copies cannot see each other's locks:
when a ``sqlite3`` connection to our file closes, its SQLite finds no other reader, takes
the file as unused, checkpoints the WAL into it and deletes ``-wal`` and ``-shm``, which
our connection still has open (and closing its descriptor dropped our locks too). From
then on our commits would go to a deleted file: other processes never see them and a
crash loses them (SQLite's "How To Corrupt", section 2.2.1). Reading ``runs.db`` with
``sqlite3`` is what issue 6 asks people to do, so the store watches for it.

``WalWatch`` holds its own descriptor on the WAL file the connection opened; once that
file has no name left (``st_nlink == 0``) the connection is stale. ``release`` closes such
a connection without letting it delete whatever files now carry the ``-wal`` and ``-shm``
names (another process may have made new ones). Everything committed before the deletion
is in the database file: the other SQLite checkpointed it first.
"""

from __future__ import annotations

import ctypes
import os
from contextlib import suppress

import apsw

from forkline_es.log.connection import Connection

__all__ = ["WalWatch", "release"]


class WalWatch:
    """A descriptor on the WAL file of ``path`` as it is now (none for ``:memory:``).

    SQLite takes no lock on the WAL file itself (its locks are on the database and
    ``-shm`` files), so holding and closing this descriptor disturbs nothing.
    """

    def __init__(self, path: str) -> None:
        self._fd: int | None = None
        if path and path != ":memory:":
            with suppress(FileNotFoundError):
                self._fd = os.open(path + "-wal", os.O_RDONLY | os.O_CLOEXEC)

    def deleted(self) -> bool:
        """Has the WAL file we hold lost its name (deleted by another copy of SQLite)?"""
        return self._fd is not None and os.fstat(self._fd).st_nlink == 0

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def release(conn: Connection) -> None:
    """Close a stale connection without deleting the files now named ``-wal`` and ``-shm``
    (``SQLITE_FCNTL_PERSIST_WAL``); the checkpoint its close may run finds nothing left to
    copy: the SQLite that deleted the WAL checkpointed every frame of it first."""
    keep = ctypes.c_int(1)
    with suppress(apsw.Error):
        conn.file_control("main", apsw.SQLITE_FCNTL_PERSIST_WAL, ctypes.addressof(keep))
    conn.close(True)
