"""Copy the log-level tables of one store into an empty one, on any pair of backends.

What is copied is the truth: every log row with its position, digest and prev link, every
payload value under its own id, the eviction records, ``log_end`` and the consumers'
checkpoints. Projections are not copied; the caller refolds them (``forkline_es.copying``).

Reads come from one snapshot of the source, in batches of ``batch`` log rows (memory stays
bounded whatever the store's size). Writes go in one destination transaction per batch: on
PostgreSQL every row of a batch holds its run's advisory lock until the commit, and one
transaction for a whole store would outgrow the server's lock table. Log rows are written
in position order before any eviction record or ``log_end``, because both backends accept
an explicit position only past the end of the log (PostgreSQL's ``log_insert_rules``) and
refuse rows of a run whose eviction is recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from forkline_es.errors import InvalidRequest
from forkline_es.log.backend import Backend, Cursor
from forkline_es.log.schema import SLOTS_PER_EVENT

__all__ = ["LOG_TABLES", "copy_log", "refuse_non_empty"]

#: The log-level tables a copy carries over, each with its columns in the order copied.
LOG_TABLES: Final[dict[str, tuple[str, ...]]] = {
    "log": (
        "position",
        "run_id",
        "seq",
        "entry",
        "generation",
        "kind",
        "at",
        "key",
        "body",
        "digest",
        "prev",
    ),
    "payload": ("id", "position", "slot", "value"),
    "eviction": ("run_id", "position", "at", "reason", "policy"),
    "log_end": ("id", "position"),
    "consumer": ("name", "position", "registered_at"),
}
#: Ordering keys of the tables read whole (small: one row per evicted run or consumer).
_ORDER: Final = {"eviction": "run_id", "log_end": "id", "consumer": "name"}

Progress = Callable[[int, int], None]


def _listed(table: str) -> str:
    return ", ".join(LOG_TABLES[table])


def _insert(table: str) -> str:
    marks = ", ".join("?" for _ in LOG_TABLES[table])
    return f"INSERT INTO {table} ({_listed(table)}) VALUES ({marks})"


def refuse_non_empty(dst: Backend, where: str) -> None:
    """``invalid-request`` unless ``dst`` holds nothing a copy would write: no row in any
    log-level table and an end of log of 0 (a store whose every run was evicted is not empty)."""
    with dst.snapshot() as cur:
        held = [t for t in LOG_TABLES if cur.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchall()]
        end = int(cur.execute(f"SELECT {dst.dialect.end_of_log}").fetchall()[0][0])
    if held or end:
        raise InvalidRequest(
            f"the destination {where} is not empty (it holds {', '.join(held) or 'a log end'}); "
            "a copy goes into a new, empty store only"
        )


def copy_log(src: Backend, dst: Backend, progress: Progress | None = None, *, batch: int = 500) -> int:
    """Copy ``src``'s log-level tables into ``dst`` (checked empty by the caller); returns the
    log rows copied. ``progress(done, total)`` after each batch, in log rows."""
    if batch < 1:
        raise InvalidRequest(f"batch must be at least 1, not {batch}")
    log_sql, payload_sql = _insert("log"), _insert("payload")
    done = 0
    with src.snapshot() as read:
        ((total,),) = read.execute("SELECT count(*) FROM log").fetchall()
        if progress is not None:
            progress(0, int(total))
        after = 0
        while True:
            rows = read.execute(
                f"SELECT {_listed('log')} FROM log WHERE position > ? ORDER BY position LIMIT ?",
                (after, batch),
            ).fetchall()
            if not rows:
                break
            first, last = int(rows[0][0]), int(rows[-1][0])
            values = read.execute(
                f"SELECT {_listed('payload')} FROM payload WHERE id BETWEEN ? AND ? ORDER BY id",
                (first * SLOTS_PER_EVENT, last * SLOTS_PER_EVENT + SLOTS_PER_EVENT - 1),
            ).fetchall()
            with dst.transaction("copy log rows") as write:
                write.executemany(log_sql, [tuple(r) for r in rows])
                if values:
                    write.executemany(payload_sql, [tuple(v) for v in values])
            done += len(rows)
            after = last
            if progress is not None:
                progress(done, int(total))
        _copy_small(read, dst)
    return done


def _copy_small(read: Cursor, dst: Backend) -> None:
    """The eviction records, ``log_end`` and consumers, after every log row: each moves the
    end of the log (or, for a consumer, names a position) the log rows must not be below."""
    for table, key in _ORDER.items():
        after: object = None
        while True:
            where = "" if after is None else f"WHERE {key} > ? "
            rows = read.execute(
                f"SELECT {_listed(table)} FROM {table} {where}ORDER BY {key} LIMIT 500",
                () if after is None else (after,),
            ).fetchall()
            if not rows:
                break
            with dst.transaction(f"copy {table}") as write:
                write.executemany(_insert(table), [tuple(r) for r in rows])
            after = rows[-1][LOG_TABLES[table].index(key)]
