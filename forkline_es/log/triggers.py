"""The triggers that keep the log append-only, as the schema makes them and as a file holds them.

The triggers hold for any client, but anyone who can write the file can drop or rewrite
them, and with them goes the promise that rows are never changed. ``verify`` compares a
file's triggers with the ones its schema version makes (``trigger_differences``). The
expected set is not a list kept here: it is read back from a scratch in-memory database
that the migrations themselves build, so a trigger a new migration adds is expected from
that version on, with the exact SQL text SQLite stores for it.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

import apsw

from forkline_es.log.backend import Cursor, TriggerDifference
from forkline_es.log.connection import _migration_step
from forkline_es.log.schema import SCHEMA_VERSION

__all__ = ["ExpectedSchema", "TriggerDifference", "expected_schema", "file_triggers", "trigger_differences"]

_TRIGGERS: Final = "SELECT name, tbl_name, sql FROM sqlite_schema WHERE type = 'trigger'"
_TABLES: Final = "SELECT name FROM sqlite_schema WHERE type = 'table'"


@dataclass(frozen=True, slots=True)
class ExpectedSchema:
    """What a schema version makes: its triggers, and the tables they may be on."""

    triggers: Mapping[str, tuple[str, str]]  # name -> (table, sql)
    tables: frozenset[str]  # the tables the migrations make (the projections' are not theirs)


@functools.cache
def expected_schema(version: int = SCHEMA_VERSION) -> ExpectedSchema:
    """The triggers and tables schema ``version`` has, read from a scratch database that the
    migrations build step by step, as ``connection._migrate`` does for a file."""
    if not 0 <= version <= SCHEMA_VERSION:
        raise ValueError(f"no schema version {version}")
    conn = apsw.Connection(":memory:")
    try:
        conn.execute("PRAGMA foreign_keys = OFF")
        conn.execute("PRAGMA legacy_alter_table = ON")
        for step in range(version):
            with conn:
                _migration_step(conn, ":memory:", step)
        triggers = {str(n): (str(t), str(s)) for n, t, s in conn.execute(_TRIGGERS)}
        tables = frozenset(str(n) for (n,) in conn.execute(_TABLES))
    finally:
        conn.close()
    return ExpectedSchema(triggers, tables)


def file_triggers(cur: Cursor) -> dict[str, tuple[str, str | None]]:
    """name -> (table, sql) of every trigger in the file ``cur`` reads."""
    return {str(n): (str(t), None if s is None else str(s)) for n, t, s in cur.execute(_TRIGGERS)}


def trigger_differences(cur: Cursor) -> list[TriggerDifference]:
    """Every trigger of the file's schema version (``PRAGMA user_version``) that is gone or
    has other SQL, and every other trigger on a table the migrations make (it could refuse,
    change or silently skip a write). Triggers on projection tables are not ours to judge."""
    version = int(cur.execute("PRAGMA user_version").fetchall()[0][0])
    schema = expected_schema(min(max(version, 0), SCHEMA_VERSION))
    found = file_triggers(cur)
    out: list[TriggerDifference] = []
    for name, (table, sql) in sorted(schema.triggers.items()):
        have = found.get(name)
        if have is None:
            out.append(TriggerDifference(name, table, "missing", sql, None))
        elif have != (table, sql):
            out.append(TriggerDifference(name, table, "altered", sql, have[1]))
    for name, (table, actual) in sorted(found.items()):
        if name not in schema.triggers and table in schema.tables:
            out.append(TriggerDifference(name, table, "unexpected", None, actual))
    return out
