"""Reading a frozen copy whose WAL still holds commits, without writing a byte beside it.

SQLite reads a WAL database through its ``-shm`` index, which it must be able to create;
on a read-only mount, or in a folder kept as it is, it cannot, and ``immutable=1`` would
read the database file alone and miss every commit still in ``-wal``. In exclusive locking
mode SQLite builds the WAL index in its own memory instead, but it takes a write lock on
the database file first. This VFS lets it: it opens the database and its WAL read-only and
takes no locks at all, which is safe only when nobody writes the file (a frozen copy:
``connection._frozen`` decides). Every other file (SQLite's temporary files) is opened as
the default VFS would open it.
"""

from __future__ import annotations

from typing import Final

import apsw

__all__ = ["FROZEN_VFS", "register"]

#: The name connections pass as ``vfs=``.
FROZEN_VFS: Final = "forkline-es-frozen"

#: The files of the database itself, opened read-only whatever SQLite asks.
_OURS: Final = apsw.SQLITE_OPEN_MAIN_DB | apsw.SQLITE_OPEN_WAL | apsw.SQLITE_OPEN_MAIN_JOURNAL
_WRITE: Final = apsw.SQLITE_OPEN_READWRITE | apsw.SQLITE_OPEN_CREATE


class _UnlockedFile(apsw.VFSFile):
    """A file of the frozen database: SQLite's locks are no-ops (nobody else writes it)."""

    def xLock(self, level: int) -> None:
        return None

    def xUnlock(self, level: int) -> None:
        return None

    def xCheckReservedLock(self) -> bool:
        return False


class _FrozenVFS(apsw.VFS):
    def __init__(self) -> None:
        super().__init__(FROZEN_VFS, "")  # "" inherits from the default VFS

    def xOpen(self, name: str | apsw.URIFilename | None, flags: list[int]) -> apsw.VFSFile:
        if flags[0] & _OURS:
            flags[0] = (flags[0] & ~_WRITE) | apsw.SQLITE_OPEN_READONLY
            return _UnlockedFile("", name, flags)
        return apsw.VFSFile("", name, flags)

    def xDelete(self, filename: str, syncdir: bool) -> None:
        raise apsw.ReadOnlyError(f"{filename}: a frozen copy is never changed")


_registered: list[_FrozenVFS] = []  # kept alive: SQLite holds a pointer to it


def register() -> str:
    """Register the VFS once per process; returns its name."""
    if not _registered:
        _registered.append(_FrozenVFS())
    return FROZEN_VFS
