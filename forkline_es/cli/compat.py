"""`forkline-es import-forkline`: bring a Forkline database's runs into a forkline_es database."""

from __future__ import annotations

import os
from pathlib import Path

import click

from forkline_es.cli._common import db_option, echo_json, json_option, open_for_write, refusals, say
from forkline_es.compat.importer import import_forkline

__all__ = ["COMMANDS"]


@click.command("import-forkline")
@db_option
@click.argument("source", type=click.Path(dir_okay=False))
@json_option
def import_forkline_command(db: str, source: str, as_json: bool) -> None:
    """Import every run of the Forkline database SOURCE into --db, times and order kept.

    SOURCE is a runs.db (RunRecorder's) or a step store (SQLiteStore's forkline.db), and
    is only read. Payloads pass the default redaction policy, as RunRecorder's do.
    Anything that cannot be carried (orphan events, events of no step, non-JSON payloads,
    unknown statuses, run ids --db holds for other runs) refuses the whole import, listed;
    running it again after an interruption finishes it without repeating a run.
    """
    fresh = not os.path.exists(db)
    store = open_for_write(db)
    try:
        with store, refusals():
            report = import_forkline(source, store)
    except SystemExit:
        if fresh:  # refused: the database this command created goes too ("nothing was written")
            for leftover in (db, f"{db}-wal", f"{db}-shm"):
                Path(leftover).unlink(missing_ok=True)
        raise
    if as_json:
        echo_json(
            {"source": report.source, "runs": report.runs, "events": report.events, "resumed": report.resumed}
        )
        return
    resumed = f" ({report.resumed} begun by an earlier import)" if report.resumed else ""
    say(
        f"imported {_count(report.runs, 'run')}{resumed}, {_count(report.events, 'event')} "
        f"from {report.source} into {db}"
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


COMMANDS: list[click.Command] = [import_forkline_command]
