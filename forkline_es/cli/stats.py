"""`forkline-es stats`: how big the database is, what fills it, what retention would free."""

from __future__ import annotations

from typing import Any

import click

from forkline_es.cli._common import (
    db_option,
    echo_json,
    json_option,
    open_read_only,
    paged,
    print_table,
    refusals,
)
from forkline_es.retention.policy import PAYLOAD_CLASSES, RetentionPolicy

__all__ = ["COMMANDS", "size_text"]

_UNITS = ("B", "KiB", "MiB", "GiB", "TiB")


def size_text(n: int | None) -> str:
    """Bytes for a person: ``512 B``, ``296.0 KiB``, ``1.4 GiB``; "unknown" for None."""
    if n is None:
        return "unknown"
    size, unit = float(n), 0
    while size >= 1024 and unit < len(_UNITS) - 1:
        size, unit = size / 1024, unit + 1
    return f"{n} B" if unit == 0 else f"{size:.1f} {_UNITS[unit]}"


@click.command("stats")
@click.option(
    "--keep-last", type=click.IntRange(min=0), help="Say what keeping the last N runs per workflow frees."
)
@click.option(
    "--max-age", help="Say what evicting completed runs ended longer ago than this frees (e.g. 30d)."
)
@click.option(
    "--drop-payloads-after", help="Say what removing payload values of runs ended longer ago frees."
)
@click.option(
    "--classes",
    multiple=True,
    type=click.Choice(sorted(PAYLOAD_CLASSES)),
    help="The payload classes the removal takes (repeatable; default: all).",
)
@db_option
@json_option
@paged
def stats(
    keep_last: int | None,
    max_age: str | None,
    drop_payloads_after: str | None,
    classes: tuple[str, ...],
    db: str,
    as_json: bool,
) -> None:
    """Show how big the database is and what fills it, and what a retention policy would free.

    Database, free-page and WAL bytes, each table's bytes (indexes included), runs by status
    and by workflow, events by kind, payload values and bytes by class. Given the options of
    `retention apply`, also what applying that policy now would take out (nothing is written).
    """
    wanted = keep_last is not None or max_age or drop_payloads_after
    with open_read_only(db) as store, refusals():
        policy = RetentionPolicy(keep_last, max_age, drop_payloads_after, classes or None) if wanted else None
        figures = store.stats(policy)
    if as_json:
        return echo_json(figures)
    _render(figures)


def _render(f: dict[str, Any]) -> None:
    size = [
        ("database", size_text(f["database_bytes"])),
        (
            "free pages",
            size_text(f["free_bytes"]) if f["free_bytes"] is not None else "(managed by the server)",
        ),
        ("WAL", size_text(f["wal_bytes"])),
        ("backend", f["backend"]),
    ]
    print_table("size", ("what", "bytes"), size, section=True)
    print_table(
        "tables", ("table", "bytes"), [(t["table"], size_text(t["bytes"])) for t in f["tables"]], section=True
    )
    runs = f["runs"]
    statuses = [
        *runs["by_status"].items(),
        ("evicted (tombstones)", runs["evicted"]),
        ("total", runs["total"]),
    ]
    print_table("runs by status", ("status", "runs"), statuses, section=True)
    workflows = [
        (w["workflow"], w["runs"], ", ".join(f"{s} {n}" for s, n in w["by_status"].items()))
        for w in runs["by_workflow"]
    ]
    print_table("runs by workflow", ("workflow", "runs", "by status"), workflows, section=True)
    events = [*f["events"]["by_kind"].items(), ("total", f["events"]["total"])]
    print_table("events", ("kind", "events"), events, section=True)
    payloads = [(c, p["values"], size_text(p["bytes"])) for c, p in f["payloads"].items()]
    print_table("payload values by class", ("class", "values", "bytes"), payloads, section=True)
    if "retention" in f:
        r = f["retention"]
        freed = [
            ("runs evicted", r["runs_evicted"]),
            ("runs reduced", r["runs_reduced"]),
            ("events deleted", r["events"]),
            ("payload values deleted", r["payload_values"]),
            ("payload bytes freed", size_text(r["payload_bytes"])),
            ("selected but kept", r["kept"]),
        ]
        print_table(f"retention {r['policy']} would free", ("what", "amount"), freed, section=True)


COMMANDS: list[click.Command] = [stats]
