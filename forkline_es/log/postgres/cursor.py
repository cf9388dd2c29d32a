"""The cursor code above the seam gets on PostgreSQL: SQLite's ``?`` placeholders, apsw's shape.

Every statement above the seam is written once with ``?`` placeholders
(``log/backend.py``); psycopg takes ``%s`` and reads every ``%`` of a statement that has
parameters as the start of one, string literals included. ``pg_sql`` rewrites a statement
once (cached by its text): ``?`` outside literals, quoted identifiers and comments becomes
``%s`` (SQLite's numbered ``?N``: ``%(N)s``), and every ``%`` is doubled. A statement
without parameters goes to psycopg as it is and unparsed, which is also how several
``;``-separated statements (projection DDL) run in one call, as apsw runs them.

In pipeline mode (an append's fold, ``backend.PostgresBackend.append``) a ``PgCursor``
made with the ``Pipeline`` queues each statement on a psycopg cursor of its own, so that
every statement keeps its own result, and asking for rows (``fetchall``, iterating,
``rowcount``) first syncs the pipeline: a write costs no round trip, a read one.

Text goes in and comes out as ``str``: the connection's client encoding is UTF-8
(``connection.connect``), so canonical JSON text round-trips byte for byte once encoded
again. A ``bytes`` parameter stays ``bytea``, as it is a BLOB to SQLite: the seam decodes
bodies to text before they reach a cursor.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Final

import psycopg

__all__ = ["MAX_PARAMS", "PgCursor", "pg_sql"]

_QUOTES: Final = ("'", '"')
#: A plain insert of one row of ``?`` placeholders: several rows of it make one statement.
_VALUES: Final = re.compile(r"INSERT INTO \w+ \([\w, ]+\) VALUES (\((?:\?, )*\?\))\Z")
#: PostgreSQL takes at most 65,535 parameters a statement.
MAX_PARAMS: Final = 65_535


@functools.lru_cache(maxsize=2048)
def pg_sql(sql: str) -> tuple[str, bool]:
    """``sql`` with ``?`` placeholders in psycopg's words, and whether they are numbered.

    ``?`` becomes ``%s`` and SQLite's numbered ``?N`` becomes ``%(N)s`` (the statement then
    takes its parameters as ``{"N": value}``: ``numbered``), every ``%`` is doubled. ``?``
    inside a string literal, a quoted identifier or a comment is text, not a parameter.
    A statement mixing both forms is refused, as SQLite would number them confusingly.
    """
    out: list[str] = []
    plain = numbered = False
    i, n = 0, len(sql)
    while i < n:
        c = sql[i]
        if c in _QUOTES:  # a literal or quoted identifier; a doubled quote stays inside it
            end = sql.find(c, i + 1)
            while end != -1 and end + 1 < n and sql[end + 1] == c:
                end = sql.find(c, end + 2)
            end = n - 1 if end == -1 else end
            out.append(sql[i : end + 1].replace("%", "%%"))
            i = end + 1
        elif sql.startswith("--", i):
            end = sql.find("\n", i)
            end = n if end == -1 else end
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif sql.startswith("/*", i):
            end = sql.find("*/", i + 2)
            end = n if end == -1 else end + 2
            out.append(sql[i:end].replace("%", "%%"))
            i = end
        elif c == "?":
            j = i + 1
            while j < n and sql[j].isdigit():
                j += 1
            if j > i + 1:
                numbered = True
                out.append(f"%({int(sql[i + 1 : j])})s")
            else:
                plain = True
                out.append("%s")
            i = j
        elif c == "%":
            out.append("%%")
            i += 1
        else:
            out.append(c)
            i += 1
    if plain and numbered:
        raise ValueError(f"a statement takes ? or ?N placeholders, not both: {sql!r}")
    return "".join(out), numbered


def _params(params: Sequence[Any], numbered: bool) -> Sequence[Any] | dict[str, Any]:
    return {str(k): v for k, v in enumerate(params, 1)} if numbered else params


class PgCursor:
    """A psycopg cursor behind the seam's ``Cursor`` protocol: ``execute`` returns the cursor
    itself, iterable over tuples and with ``fetchall``; a statement without rows (an INSERT
    without RETURNING) iterates as empty, as apsw's does, instead of raising."""

    __slots__ = ("_cur", "_pipeline")

    def __init__(self, cur: psycopg.Cursor[Any], pipeline: psycopg.Pipeline | None = None) -> None:
        self._cur = cur
        #: Set in pipeline mode: each ``execute`` queues on a cursor of its own (module docstring).
        self._pipeline = pipeline

    @property
    def raw(self) -> psycopg.Cursor[Any]:
        """The psycopg cursor, for the PostgreSQL modules' own statements (DDL, COPY)."""
        return self._cur

    @property
    def rowcount(self) -> int:
        """How many rows the last statement changed or returned."""
        self._arrived()
        return self._cur.rowcount

    def _target(self) -> PgCursor:
        """Where the next statement goes: this cursor, or in pipeline mode a fresh one."""
        if self._pipeline is None:
            return self
        return PgCursor(self._cur.connection.cursor(), self._pipeline)

    def _arrived(self) -> None:
        """In pipeline mode, the statement's result once the server has sent it (a sync)."""
        if self._pipeline is not None and self._cur.pgresult is None:
            self._pipeline.sync()

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> PgCursor:
        target = self._target()
        if params:
            query, numbered = pg_sql(sql)
            target._cur.execute(query, _params(params, numbered))
        else:  # unparsed: no % to double, and ;-separated statements allowed
            target._cur.execute(sql)
        return target

    def executemany(self, sql: str, params: Iterable[Sequence[Any]], /) -> PgCursor:
        """A plain ``INSERT ... VALUES (?, ...)`` of several rows goes as one statement of
        many rows (``_many_rows``): psycopg spends client CPU on each statement it sends, which
        a fold's entry rows and a rebuild's batches would pay row by row. Anything else (an
        upsert, whose rows could meet each other's conflicts; a DELETE) one by one."""
        target = self._target()
        values = _VALUES.match(sql)
        if values is not None:
            rows = [tuple(p) for p in params]
            width = values[1].count("?")
            step = max(1, MAX_PARAMS // width)
            for start in range(0, len(rows), step):
                chunk = rows[start : start + step]
                query, _ = pg_sql(f"{sql}{(', ' + values[1]) * (len(chunk) - 1)}")
                if start:
                    target = self._target()
                target._cur.execute(query, [v for row in chunk for v in row])
            return target
        query, numbered = pg_sql(sql)
        target._cur.executemany(query, (_params(p, numbered) for p in params))
        return target

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        self._arrived()
        if self._cur.description is None:
            return iter(())
        return iter(self._cur)

    def fetchall(self) -> list[tuple[Any, ...]]:
        self._arrived()
        if self._cur.description is None:
            return []
        return self._cur.fetchall()
