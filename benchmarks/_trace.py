"""Our SQL with none of our Python: the statements a recording runs, traced to be run again.

Several floors (``append_floor``, ``writers``, ``issue22``, ``projections``' rebuild) replay
what a store sent for some calls, so that the same rows, pages and commits are timed
without our Python around them. The trace is apsw's exec trace on the store's connection.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import forkline_es as fe
from forkline_es.log.schema import SLOTS_PER_EVENT
from forkline_es.log.sqlite import _INSERT_PAYLOAD, _INSERT_ROW, SqliteBackend

__all__ = ["Statement", "begin_steps", "replay", "traced", "tracing"]

#: One statement as SQLite ran it: its text and its bindings.
Statement = tuple[str, Any]


@contextmanager
def tracing(store: fe.Store) -> Iterator[list[Statement]]:
    """Every statement (with its bindings) the SQLite ``store`` runs inside the block, in
    order; ``executemany`` gives one for each row."""
    statements: list[Statement] = []

    def keep(_cursor: Any, sql: str, bindings: Any) -> bool:
        statements.append((sql, bindings))
        return True

    conn = cast(SqliteBackend, store.backend).conn
    conn.set_exec_trace(keep)
    try:
        yield statements
    finally:
        conn.set_exec_trace(None)


def traced(start: Path, copy: Path, run_id: str, record: Callable[[fe.Run], None]) -> list[Statement]:
    """Every statement that ``record`` ran on run ``run_id``, traced on ``copy``, a copy of
    ``start`` made here: replayed in order on another copy of ``start`` they write the same
    rows, since both files start alike."""
    shutil.copyfile(start, copy)
    with fe.Store.open(copy) as store:
        run = store.resume_run(run_id)
        with tracing(store) as statements:
            record(run)
    return statements


def begin_steps(n: int, run: fe.Run) -> None:
    """The many-caller benchmarks' call: ``n`` ``begin_step``, one commit each."""
    for i in range(n):
        run.begin_step(f"s/{i}", arguments={"i": i})


def replay(statements: list[Statement], cur: Any) -> None:
    """Run traced statements again on ``cur``. A payload row takes the position its log row
    was just given: other writers interleave differently than when traced."""
    position = 0
    for sql, b in statements:
        if sql == _INSERT_PAYLOAD:
            k = b[0] - b[1] * SLOTS_PER_EVENT
            b = (position * SLOTS_PER_EVENT + k, position, b[2], b[3])
        cur.execute(sql, b).fetchall()
        if sql == _INSERT_ROW:
            position = cur.connection.last_insert_rowid()
