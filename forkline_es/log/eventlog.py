"""The event log's reads, written once over the storage seam (``log.backend``).

``EventLog`` is what the packages above ask the log: one run's rows, the log in position
order up to the horizon, payload values, eviction records. Its statements are portable;
what differs (a list of positions as a parameter, the end of the log) is the backend's
dialect. Writes go to the backend: ``transaction`` and ``snapshot`` are its own bound
methods; ``append`` goes through the group commit (``log.group``), so that threads
appending at once share a transaction.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Final

from forkline_es.log.backend import Backend, Cursor
from forkline_es.log.group import GroupCommit
from forkline_es.log.rows import LOG_COLUMNS, LogRow
from forkline_es.log.schema import payload_ids

__all__ = ["EventLog"]

_COLUMNS: Final = LOG_COLUMNS
_READ_BATCH: Final = 5_000
#: The log's text columns (``read_run_bytes``).
_TEXTS: Final = ("run_id", "kind", "at", "key", "body", "digest", "prev")


def _replaced(data: bytes | None) -> Any:
    """Text as stored, each byte that is not UTF-8 replaced with U+FFFD (None stays None)."""
    return None if data is None else bytes(data).decode("utf-8", "replace")


class EventLog:
    """Reads the ``log``, ``payload`` and ``eviction`` tables through one backend."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.dialect = backend.dialect
        self.read_only = backend.read_only
        self.group = GroupCommit(backend)
        self.append = self.group.append
        self.transaction = backend.transaction
        self.snapshot = backend.snapshot
        self.refuse_write = backend.refuse_write

    def _cursor(self, cur: Cursor | None) -> Cursor:
        return cur if cur is not None else self.backend.cursor()

    # -- reading ---------------------------------------------------------------------

    def read_run(self, run_id: str, cur: Cursor | None = None) -> Iterator[LogRow]:
        """One run's events in seq order, streamed."""
        c = self._cursor(cur)
        for row in c.execute(f"SELECT {_COLUMNS} FROM log WHERE run_id = ? ORDER BY seq", (run_id,)):
            yield LogRow(*row)

    def read_run_bytes(self, run_id: str, cur: Cursor | None = None) -> Iterator[LogRow]:
        """``read_run`` for a damaged file: its text read as bytes and decoded with each
        byte that is not UTF-8 replaced (U+FFFD), so that ``verify`` finds the row whose
        digest no longer matches instead of failing at the first such row."""
        texts = ", ".join(self.dialect.text_bytes(c) for c in _TEXTS)
        sql = f"SELECT position, seq, entry, generation, {texts} FROM log WHERE run_id = ? ORDER BY seq"
        for position, seq, entry, generation, *raw in self._cursor(cur).execute(sql, (run_id,)):
            text = dict(zip(_TEXTS, (_replaced(b) for b in raw), strict=True))
            yield LogRow(position=position, seq=seq, entry=entry, generation=generation, **text)

    def read_run_from(
        self, run_id: str, seq: int, limit: int = -1, *, cur: Cursor | None = None
    ) -> Iterator[LogRow]:
        """One run's events from ``seq`` on, in seq order (``limit`` of them when >= 0)."""
        sql = f"SELECT {_COLUMNS} FROM log WHERE run_id = ? AND seq >= ? ORDER BY seq"
        params: tuple[object, ...] = (run_id, seq)
        if limit >= 0:  # PostgreSQL refuses a negative LIMIT (SQLite reads it as none)
            sql, params = f"{sql} LIMIT ?", (run_id, seq, limit)
        for row in self._cursor(cur).execute(sql, params):
            yield LogRow(*row)

    def read_from(
        self,
        position: int = 0,
        batch: int = _READ_BATCH,
        *,
        upto: int | None = None,
        cur: Cursor | None = None,
    ) -> Iterator[LogRow]:
        """The log after ``position`` in position order, fetched in bounded batches; through
        ``upto`` (a horizon, ``Backend.horizon``) when given."""
        c = self._cursor(cur)
        params: tuple[int, ...] = ()
        sql = f"SELECT {_COLUMNS} FROM log WHERE position > ? ORDER BY position LIMIT ?"
        if upto is not None:
            sql = f"SELECT {_COLUMNS} FROM log WHERE position > ? AND position <= ? ORDER BY position LIMIT ?"
            params = (upto,)
        while True:
            rows = c.execute(sql, (position, *params, batch)).fetchall()
            if not rows:
                return
            for row in rows:
                yield LogRow(*row)
            position = rows[-1][0]

    def run_payloads(self, run_id: str, cur: Cursor | None = None) -> list[tuple[int, str, str]]:
        """(position, slot, value) of every payload value still stored for the run's events."""
        c = self._cursor(cur)
        sql = (
            "SELECT p.position, p.slot, p.value FROM log AS l "
            f"JOIN payload AS p ON p.id {payload_ids('l.position')} WHERE l.run_id = ?"
        )
        return [(int(p), str(s), str(v)) for p, s, v in c.execute(sql, (run_id,))]

    def run_payloads_bytes(self, run_id: str, cur: Cursor | None = None) -> list[tuple[int, str, str]]:
        """``run_payloads`` for a damaged file, as ``read_run_bytes`` reads rows."""
        c = self._cursor(cur)
        slot, value = self.dialect.text_bytes("p.slot"), self.dialect.text_bytes("p.value")
        sql = (
            f"SELECT p.position, {slot}, {value} FROM log AS l "
            f"JOIN payload AS p ON p.id {payload_ids('l.position')} WHERE l.run_id = ?"
        )
        return [(int(p), _replaced(s), _replaced(v)) for p, s, v in c.execute(sql, (run_id,))]

    def payloads(self, positions: Sequence[int], cur: Cursor | None = None) -> dict[tuple[int, str], str]:
        """Payload values still stored for the given events, keyed by (position, slot)."""
        c = self._cursor(cur)
        sql = (
            f"SELECT p.position, p.slot, p.value FROM {self.dialect.each('j')} "
            f"JOIN payload AS p ON p.id {payload_ids('j.value')}"
        )
        rows = c.execute(sql, (self.dialect.array(positions),))
        return {(position, slot): value for position, slot, value in rows}

    def max_position(self, cur: Cursor | None = None) -> int:
        row = self._cursor(cur).execute("SELECT max(position) FROM log").fetchall()[0][0]
        return int(row or 0)

    def end_position(self, cur: Cursor | None = None) -> int:
        """The highest position ever given out: above ``max_position`` once the newest run is evicted."""
        return int(self._cursor(cur).execute(f"SELECT {self.dialect.end_of_log}").fetchall()[0][0])

    def run_exists(self, run_id: str, cur: Cursor | None = None) -> bool:
        c = self._cursor(cur)
        return bool(c.execute("SELECT 1 FROM log WHERE run_id = ? AND seq = 1", (run_id,)).fetchall())

    def eviction(self, run_id: str, cur: Cursor | None = None) -> tuple[str, str, str | None] | None:
        """(at, reason, policy) of the run's eviction record, if one is kept."""
        c = self._cursor(cur)
        rows = c.execute("SELECT at, reason, policy FROM eviction WHERE run_id = ?", (run_id,)).fetchall()
        return (rows[0][0], rows[0][1], rows[0][2]) if rows else None
