"""`forkline-es demo`: record the sample workflow with the bundled executor, say what to try next."""

from __future__ import annotations

import shlex
from typing import Any

import click

from forkline_es.cli._common import (
    artifacts_folder,
    db_option,
    echo_json,
    is_dsn,
    json_option,
    open_for_write,
    print_table,
    refusals,
    say,
)
from forkline_es.demo.workflow import children, demo_ids, record_demo
from forkline_es.store import Store

__all__ = ["COMMANDS", "next_commands"]

_NOTES = {
    "first": "crashed in `summarize`, resumed in generation 1; `fetch/1` failed once and was retried; "
    "`publish` timed out (ambiguous) and was retried; `notify` has a sensitive argument; "
    "it keeps an artifact (report.md) and a manifest",
    "dry-run": "a dry run: nothing dispatched, results partial (suppressed paths)",
    "held": "waits at step `approve` for a person (approval-required)",
    "replay": "replays demo-first with another model: diverges at `summarize`",
}


def next_commands(ids: dict[str, str], db: str, artifacts: str | None = None) -> list[str]:
    """The commands the demo suggests, with ``--db`` when it is not the default and the
    ``--artifacts`` folder it was given (a PostgreSQL store's `verify` needs it)."""
    first, replay = ids["first"], ids["replay"]
    commands = [
        ["runs"],
        ["show", first, "--timeline"],
        ["step", first, "summarize"],
        ["diff", first, replay],
        ["verify", first],
        # a check copies the store into a schema of its own on PostgreSQL, which only a role
        # that may create schemas can; verify --all refolds each run in memory, as any role
        ["verify", "--all"] if is_dsn(db) else ["rebuild", "--check"],
    ]
    extra = [] if db == "runs.db" else ["--db", db]
    folder = [] if artifacts is None else ["--artifacts", artifacts]
    return [shlex.join(["forkline-es", *folder, *c, *extra]) for c in commands]


def _rows(store: Store, ids: dict[str, str]) -> list[dict[str, Any]]:
    summaries = {s["id"]: s for s in store.list_runs()}
    rows = []
    for label, run_id in ids.items():
        note = _NOTES[label].replace("demo-first", ids["first"])
        rows.append({**summaries[run_id], "label": label, "shows": note})
        for child in children(store, run_id):
            if child in summaries:  # an evicted child run is not shown
                shows = f"child run of {run_id}"
                rows.append({**summaries[child], "label": f"{label}/child", "shows": shows})
    return rows


@click.command()
@db_option
@json_option
def demo(db: str, as_json: bool) -> None:
    """Record the sample workflow into DB with the bundled executor.

    The demo's runs show a crash and its recovery, retries, an ambiguous dispatch, a
    child run, a dry run, a held run, a sensitive argument and a replay that diverges.
    Running it again finds the runs already there and records nothing new.
    """
    with open_for_write(db) as store, refusals():
        ids, present = demo_ids(store)
        if not present:
            record_demo(store, ids)
        rows = _rows(store, ids)
    commands = next_commands(ids, db, artifacts_folder())
    if as_json:
        echo_json({"db": db, "recorded": not present, "runs": rows, "next": commands})
        return
    said = "recorded the demo into" if not present else "the demo's runs are already in"
    say(f"forkline-es demo: {said} {db}")
    click.echo()
    columns = ("run", "workflow", "status", "what it shows")
    print_table(None, columns, [(r["id"], r["workflow"], r["status"], r["shows"]) for r in rows])
    click.echo("\nNext, try:")
    for command in commands:
        say(f"  {command}")


COMMANDS: list[click.Command] = [demo]
