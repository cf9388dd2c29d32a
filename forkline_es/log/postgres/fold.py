"""An append's fold on PostgreSQL: its writes go out in the append's own statement.

psycopg spends client CPU on every statement it sends (about 25 µs each), and a batched
step's fold is a few plain inserts and upserts. ``FoldCursor`` is the cursor ``then`` gets
(``backend.PostgresBackend.append``): a write it can carry (``carried``: a plain ``INSERT
... VALUES`` of one or several rows, with or without ``ON CONFLICT``) is kept, and the
append then sends the log rows, their payload values and the kept writes as one statement
of data-modifying CTEs (``backend._append_sql``), in autocommit: its own transaction, all
or nothing, one round trip, one statement.

What one statement cannot carry opens a transaction instead, at that moment (``open``):
``BEGIN`` and the statement with what was kept so far are queued in pipeline mode, and from
then on every statement goes to the pipeline as it comes, as before this module: a read
(it must see the rows: asking for its rows syncs the pipeline), a write that is not a plain
insert (an ``UPDATE`` or ``DELETE`` reads the table, and the sub-statements of one
statement see one snapshot, never each other's rows), a second write to a table already
written (``ON CONFLICT DO UPDATE`` cannot touch one row twice in one statement), an upsert
of several rows whose conflict keys are not distinct, a numbered placeholder, or more
parameters than a statement takes.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from forkline_es.log.postgres.cursor import MAX_PARAMS, PgCursor, pg_sql

__all__ = ["Carried", "FoldCursor", "carried"]

#: A one-row insert in psycopg's words (``pg_sql``'s output): its table, columns, row and
#: the rest, which may be an ``ON CONFLICT`` clause and nothing else.
_INSERT: Final = re.compile(
    r"INSERT INTO (\w+) \(([\w, ]+)\) VALUES (\((?:%s, )*%s\))((?: ON CONFLICT .*)?)\Z", re.DOTALL
)
#: An upsert's conflict target: the key its rows must not share within one statement.
_TARGET: Final = re.compile(r" ON CONFLICT \(([\w, ]+)\) DO ")
#: Words that make the rest more than a conflict clause over the row's own values.
_NOT_CARRIED: Final = re.compile(r"%s|\bSELECT\b|\bRETURNING\b|;", re.IGNORECASE)
#: A write's text is kept for this many rows at most: an executor's batches are small, and
#: a text per count of a large one would only grow.
_CACHED_ROWS: Final = 64
#: The tables the append's own CTEs write: a fold writing them is not carried.
_APPEND_TABLES: Final = frozenset({"log", "payload"})


@dataclass(frozen=True, slots=True)
class Carried:
    """A write the append's statement carries: ``sql`` is its text for ``rows`` rows."""

    table: str
    sql: str
    rows: int
    params: tuple[Any, ...]


class _Shape:
    """A carried insert's parts, worked out once per statement text (``_shape``)."""

    __slots__ = ("head", "key", "rest", "row", "table", "texts", "width")

    def __init__(self, table: str, head: str, row: str, rest: str, key: tuple[int, ...] | None) -> None:
        self.table, self.head, self.row, self.rest, self.key = table, head, row, rest, key
        self.width = row.count("%s")
        #: The statement's text for n rows, by n.
        self.texts: dict[int, str] = {}

    def text(self, rows: int) -> str:
        text = self.texts.get(rows)
        if text is None:
            text = self.head + ", ".join([self.row] * rows) + self.rest
            if rows <= _CACHED_ROWS:
                self.texts[rows] = text
        return text


@functools.lru_cache(maxsize=512)
def _shape(sql: str) -> _Shape | None:
    """``sql``'s parts, and the places of its conflict key among its columns (None: no key
    to check); None when the append cannot carry it."""
    query, numbered = pg_sql(sql)
    m = _INSERT.match(query)
    if numbered or m is None or _NOT_CARRIED.search(m[4]):
        return None
    table, columns, row, rest = m[1], [c.strip() for c in m[2].split(",")], m[3], m[4]
    key: tuple[int, ...] | None = None
    if rest:
        target = _TARGET.match(rest)
        if target is None:
            return None  # ON CONFLICT ON CONSTRAINT, or without a target: not checked here
        names = [c.strip() for c in target[1].split(",")]
        if not set(names) <= set(columns):
            return None
        key = tuple(columns.index(n) for n in names)
    return _Shape(table, f"INSERT INTO {table} ({m[2]}) VALUES ", row, rest, key)


def carried(sql: str, rows: Sequence[Sequence[Any]], room: int) -> Carried | None:
    """``sql`` (``?`` placeholders) for ``rows`` as one write of the append's statement, or
    None when it cannot be one (module docstring); ``room``: the parameters still free."""
    shape = _shape(sql)
    if shape is None or not rows:
        return None
    width, count = shape.width, len(rows)
    if width * count > room or any(len(r) != width for r in rows):
        return None
    if count == 1:
        return Carried(shape.table, shape.text(1), 1, tuple(rows[0]))
    key = shape.key
    if key is not None and len({tuple(r[i] for i in key) for r in rows}) < count:
        return None
    return Carried(shape.table, shape.text(count), count, tuple(itertools.chain.from_iterable(rows)))


class _Kept:
    """What a kept write gives back: no rows, as a write without RETURNING gives none."""

    __slots__ = ()

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def fetchall(self) -> list[Any]:
        return []


_KEPT: Final = _Kept()


class FoldCursor:
    """The cursor of an append's fold: keeps the writes its statement carries until the
    first statement that needs a transaction, which ``open`` begins (module docstring).

    ``open(kept)`` queues ``BEGIN`` and the append's statement with ``kept`` and returns the
    pipelined cursor every later statement goes to.
    """

    __slots__ = ("_open", "_params", "_pipelined", "_tables", "kept")

    def __init__(self, open: Callable[[list[Carried]], PgCursor], params: int) -> None:
        self._open = open
        self._pipelined: PgCursor | None = None
        #: The writes kept for the append's statement, in the order the fold made them.
        self.kept: list[Carried] = []
        self._tables = set(_APPEND_TABLES)
        self._params = params

    @property
    def opened(self) -> bool:
        """Whether a statement opened the transaction (the append then ends with COMMIT)."""
        return self._pipelined is not None

    def _keep(self, sql: str, rows: Sequence[Sequence[Any]]) -> bool:
        write = carried(sql, rows, MAX_PARAMS - self._params)
        if write is None or write.table in self._tables:
            return False
        self.kept.append(write)
        self._tables.add(write.table)
        self._params += len(write.params)
        return True

    def _transaction(self) -> PgCursor:
        if self._pipelined is None:
            self._pipelined = self._open(self.kept)
        return self._pipelined

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Any:
        if self._pipelined is None and params and self._keep(sql, (params,)):
            return _KEPT
        return self._transaction().execute(sql, params)

    def executemany(self, sql: str, params: Iterable[Sequence[Any]], /) -> Any:
        rows = [tuple(p) for p in params]
        if self._pipelined is None and (not rows or self._keep(sql, rows)):
            return _KEPT  # no rows: nothing to send
        return self._transaction().executemany(sql, rows)
