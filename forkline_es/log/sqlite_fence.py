"""Projector versions across the processes that share one SQLite file (``ProjectorFence``).

A refold drops and creates the projection tables, which changes SQLite's schema cookie
(``PRAGMA schema_version``, read from page 1, which every transaction has cached). So a
handle remembers the cookie of the snapshot in which it saw the stored versions equal its
own, and the fold of each appended event compares it first: only when it moved (a
refold, a migration, a gc that rewrote the schema) are the versions read again. Another
process's open never waits for this one: a handle of an older version is refused at its
next fold instead, with nothing of that transaction written.
"""

from __future__ import annotations

from forkline_es.log.backend import Cursor

__all__ = ["SqliteFence"]


def _cookie(cur: Cursor) -> int:
    return int(cur.execute("PRAGMA schema_version").fetchall()[0][0])


class SqliteFence:
    """The schema cookie this handle last saw with the stored versions equal to its own."""

    def __init__(self) -> None:
        self._held: int | None = None

    def hold_read(self, cur: Cursor, key: int) -> bool:
        self._held = _cookie(cur)
        return True

    def gate(self, cur: Cursor) -> None:
        """``BEGIN IMMEDIATE`` is the gate already: one writer at a time."""

    def others(self, cur: Cursor, key: int) -> bool:
        """Never known here: an older process finds out at its next fold (``changed``)."""
        return False

    def hold(self, cur: Cursor, key: int) -> None:
        self._held = _cookie(cur)

    def changed(self, cur: Cursor) -> bool:
        return self._held is not None and _cookie(cur) != self._held
