"""Projector versions across the hosts that share one PostgreSQL store (``ProjectorFence``).

Each writing handle holds, on its own session, a SHARED advisory lock keyed by the
store's schema and its version set (two int4 keys: ``hashtext`` of the schema, the
set's key). It takes it under the exclusive transaction lock ``gate`` after reading the
stored versions equal its own, so no refold can slip between the look and the lock. A
refold to other versions takes the gate and looks in ``pg_locks`` for any session that
holds a lock of this class with another key: while one does, a handle of the old versions
may still fold, and the refold is refused. The append path takes nothing: the lock lives
as long as the session (closing the handle, or losing its connection, lets it go). A
handle whose connection was replaced (``lost``) reads the versions again under the gate at
its next fold and holds them again, or is refused if a refold changed them meanwhile.
"""

from __future__ import annotations

from typing import Final

from forkline_es.log.backend import Cursor

__all__ = ["PostgresFence"]

#: The class (first int4 key) of the version locks, and of the gate, for the current schema.
_HOLDERS: Final = "hashtext('forkline_es projectors ' || current_schema())"
_GATE: Final = "hashtext('forkline_es projector gate ' || current_schema())"


class PostgresFence:
    """Session advisory locks: see the module docstring."""

    def __init__(self) -> None:
        self._lost = False

    def lost(self) -> None:
        """The session holding the lock is gone (a new connection replaced it)."""
        self._lost = True

    def hold_read(self, cur: Cursor, key: int) -> bool:
        return False  # a hold is taken under the gate only

    def gate(self, cur: Cursor) -> None:
        cur.execute(f"SELECT pg_advisory_xact_lock({_GATE}, 0)").fetchall()

    def others(self, cur: Cursor, key: int) -> bool:
        rows = cur.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND objsubid = 2 "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) "
            f"AND classid = ({_HOLDERS})::oid AND objid <> (?::int4)::oid",
            (key,),
        ).fetchall()
        return int(rows[0][0]) > 0

    def hold(self, cur: Cursor, key: int) -> None:
        cur.execute(f"SELECT pg_advisory_lock_shared({_HOLDERS}, ?::int4)", (key,)).fetchall()
        self._lost = False

    def changed(self, cur: Cursor) -> bool:
        """Only after the session was lost: while it holds the lock, a refold to other
        versions waits for it to go. Then under the gate, so none starts before the hold."""
        if not self._lost:
            return False
        self.gate(cur)
        return True
