"""How big is this database, and what fills it: the figures behind ``forkline-es stats``.

One snapshot: the database's size and free space, each table's bytes (indexes included),
runs by status and by workflow, log events by kind, and payload values and their bytes by
payload class. The statements that differ between SQLite and PostgreSQL (sizes, byte
lengths) are the dialect's; everything else is written once.
"""

from __future__ import annotations

from typing import Any, Final

from forkline_es.log.backend import Cursor, Dialect
from forkline_es.vocabulary import SLOT_CLASS

__all__ = ["LOGGED", "collect"]

#: The class a Forkline-style logged event's payload is counted under (its slot is no
#: slot of the record's table).
LOGGED: Final = "logged events"


def _one(cur: Cursor, sql: str) -> int | None:
    rows = cur.execute(sql).fetchall()
    return None if not rows or rows[0][0] is None else int(rows[0][0])


def collect(cur: Cursor, dialect: Dialect) -> dict[str, Any]:
    """The store's figures from ``cur`` (one snapshot); sizes in bytes, lists largest first."""
    tables = sorted(
        ((str(name), int(size or 0)) for name, size in cur.execute(dialect.table_sizes).fetchall()),
        key=lambda t: (-t[1], t[0]),
    )
    by_status: dict[str, int] = {}
    by_workflow: dict[str, dict[str, int]] = {}
    for workflow, status, n in cur.execute(
        "SELECT workflow, status, count(*) FROM run_summary GROUP BY workflow, status"
    ):
        by_status[status] = by_status.get(status, 0) + int(n)
        by_workflow.setdefault(workflow, {})[status] = int(n)
    kinds = {str(k): int(n) for k, n in cur.execute("SELECT kind, count(*) FROM log GROUP BY kind")}
    classes: dict[str, dict[str, int]] = {}
    length = dialect.byte_length("value")
    for slot, n, size in cur.execute(f"SELECT slot, count(*), sum({length}) FROM payload GROUP BY slot"):
        figures = classes.setdefault(SLOT_CLASS.get(slot, LOGGED), {"values": 0, "bytes": 0})
        figures["values"] += int(n)
        figures["bytes"] += int(size or 0)
    workflows = sorted(by_workflow.items(), key=lambda w: (-sum(w[1].values()), w[0]))
    return {
        "database_bytes": _one(cur, dialect.database_size),
        "free_bytes": _one(cur, dialect.free_space),
        "tables": [{"table": name, "bytes": size} for name, size in tables],
        "runs": {
            "total": sum(by_status.values()),
            "by_status": dict(sorted(by_status.items(), key=lambda s: (-s[1], s[0]))),
            "by_workflow": [
                {"workflow": w, "runs": sum(counts.values()), "by_status": dict(sorted(counts.items()))}
                for w, counts in workflows
            ],
            "evicted": _one(cur, "SELECT count(*) FROM eviction") or 0,
        },
        "events": {
            "total": sum(kinds.values()),
            "by_kind": dict(sorted(kinds.items(), key=lambda k: (-k[1], k[0]))),
        },
        "payloads": dict(sorted(classes.items(), key=lambda c: (-c[1]["bytes"], c[0]))),
    }
