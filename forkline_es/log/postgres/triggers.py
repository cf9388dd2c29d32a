"""The log's triggers on PostgreSQL, as the schema makes them and as the database holds them.

The rules hold for any client only while their triggers are there, enabled and running
the bodies the schema gave their functions: the owner (or a superuser) can drop one,
``ALTER TABLE ... DISABLE TRIGGER`` it (which lasts for every session), or ``CREATE OR
REPLACE`` its function with a body that lets everything through. ``verify`` compares
(``trigger_differences``, SQLite's ``log.triggers`` in PostgreSQL's terms). The expected
set is read from the migrations' own text (``schema.migration``), so a trigger a new
migration adds is expected from that version on, with the exact body it creates.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import Final

from forkline_es.log.backend import Cursor, TriggerDifference
from forkline_es.log.postgres.schema import TABLES, migration

__all__ = ["trigger_differences"]

_TRIGGER: Final = re.compile(
    r"CREATE TRIGGER (\w+) ((?:BEFORE|AFTER) [A-Z ]+?) ON (\w+)\s+(FOR EACH (?:ROW|STATEMENT)) "
    r"EXECUTE FUNCTION (\w+)\(\);"
)
#: A trigger function as a migration creates it, or replaces it (a later one wins).
_FUNCTION: Final = re.compile(
    r"CREATE (?:OR REPLACE )?FUNCTION (\w+)\(\) RETURNS trigger LANGUAGE plpgsql AS \$\$(.*?)\$\$;", re.S
)
#: ``pg_get_triggerdef`` of a trigger in the form the migrations write, schema-qualified.
_DEFINED: Final = re.compile(
    r"CREATE TRIGGER \S+ ((?:BEFORE|AFTER) [A-Z ]+?) ON \S+ (FOR EACH (?:ROW|STATEMENT)) "
    r"EXECUTE FUNCTION (?:\S+\.)?(\w+)\(\)\Z"
)
_FOUND: Final = (
    "SELECT t.tgname, c.relname, t.tgenabled, pg_get_triggerdef(t.oid), p.proname, p.prosrc "
    "FROM pg_trigger AS t JOIN pg_class AS c ON c.oid = t.tgrelid "
    "JOIN pg_namespace AS n ON n.oid = c.relnamespace JOIN pg_proc AS p ON p.oid = t.tgfoid "
    "WHERE NOT t.tgisinternal AND n.nspname = current_schema()"
)
#: ``pg_trigger.tgenabled``: fires in ordinary sessions ("O", origin) or always ("A").
_FIRES: Final = frozenset({"O", "A"})
_STATES: Final = {"D": "disabled", "R": "fires only in replica sessions"}


@dataclass(frozen=True, slots=True)
class _Trigger:
    table: str
    text: str  # "BEFORE INSERT ON log FOR EACH ROW EXECUTE FUNCTION f(): <the function's body>"


@functools.cache
def _expected(version: int, schema: str) -> dict[str, _Trigger]:
    """name -> trigger of every trigger the migrations up to ``version`` make in ``schema``."""
    sql = "\n".join(migration(step, schema) for step in range(version))
    bodies = {name: body for name, body in _FUNCTION.findall(sql)}
    return {
        name: _Trigger(table, _text(when, table, level, function, bodies.get(function)))
        for name, when, table, level, function in _TRIGGER.findall(sql)
    }


def _text(when: str, table: str, level: str, function: str, body: str | None) -> str:
    return f"{when} ON {table} {level} EXECUTE FUNCTION {function}(): {body}"


def trigger_differences(cur: Cursor, version: int) -> list[TriggerDifference]:
    """Every trigger of schema ``version`` that is gone, disabled, defined otherwise or whose
    function has another body, and every other trigger on a table the migrations make (it
    could refuse, change or skip a write). Triggers on projection tables are not judged."""
    ((schema,),) = cur.execute("SELECT current_schema()").fetchall()
    expected = _expected(version, str(schema))
    out: list[TriggerDifference] = []
    found: dict[str, tuple[str, str]] = {}
    for name, table, enabled, definition, function, body in cur.execute(_FOUND).fetchall():
        parts = _DEFINED.match(definition)
        if parts is None or parts[3] != function:  # a WHEN clause, arguments, another function
            text = f"{definition}: {body}"
        else:
            text = _text(parts[1], table, parts[2], function, body)
        if enabled not in _FIRES:
            text = f"{text} ({_STATES.get(str(enabled), 'not firing')})"
        found[str(name)] = (str(table), text)
    for name, want in sorted(expected.items()):
        have = found.get(name)
        if have is None:
            out.append(TriggerDifference(name, want.table, "missing", want.text, None))
        elif have != (want.table, want.text):
            out.append(TriggerDifference(name, want.table, "altered", want.text, have[1]))
    for name, (table, text) in sorted(found.items()):
        if name not in expected and table in TABLES:
            out.append(TriggerDifference(name, table, "unexpected", None, text))
    return out
