"""`forkline-es retention apply`, `evict`, `gc`: thin skins over the store's retention methods."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

from forkline_es.cli._common import (
    db_option,
    echo_json,
    json_option,
    open_for_read,
    print_table,
    refusals,
    say,
)
from forkline_es.cli.stats import size_text
from forkline_es.retention.apply import GcReport
from forkline_es.retention.policy import PAYLOAD_CLASSES, RetentionPolicy

__all__ = ["COMMANDS"]

Progress = Callable[[int, int], None]


@contextmanager
def _progress_bar(label: str, enabled: bool) -> Iterator[Progress | None]:
    """A rich progress bar on stderr when it is a terminal; nothing otherwise."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        label,
        BarColumn(),
        MofNCompleteColumn(),
        TimeRemainingColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task("runs", total=None)

        def update(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)

        yield update


@click.group("retention")
def retention() -> None:
    """Reduce payloads and evict completed runs under a policy (docs/retention.md)."""


@retention.command("apply")
@db_option
@click.option("--keep-last", type=click.IntRange(min=0), help="Keep the last N completed runs per workflow.")
@click.option("--max-age", help="Evict completed runs that ended longer ago than this (e.g. 30d, 12h).")
@click.option("--drop-payloads-after", help="Remove payload values of completed runs ended longer ago.")
@click.option(
    "--classes",
    "classes",
    multiple=True,
    type=click.Choice(sorted(PAYLOAD_CLASSES)),
    help="Payload classes to remove (repeatable; default: all).",
)
@click.option("--dry-run", is_flag=True, help="Print what would be removed and evicted; write nothing.")
@json_option
def apply(
    db: str,
    keep_last: int | None,
    max_age: str | None,
    drop_payloads_after: str | None,
    classes: tuple[str, ...],
    dry_run: bool,
    as_json: bool,
) -> None:
    """Apply a retention policy: one transaction per run, non-terminal runs untouched."""
    store = open_for_read(db)
    with store, refusals():
        policy = RetentionPolicy(keep_last, max_age, drop_payloads_after, classes or None)
        with _progress_bar("retention", sys.stderr.isatty() and not as_json and not dry_run) as progress:
            report = store.apply_retention(policy, dry_run=dry_run, progress=progress)
    if as_json:
        echo_json(report.to_dict())
        return
    verb = "would evict" if dry_run else "evicted"
    reduce_verb = "would reduce" if dry_run else "reduced"
    rows = [(e.run_id, e.workflow, verb, e.reason) for e in report.evicted]
    rows += [(r.run_id, "", reduce_verb, f"{len(r.removed)} payload values") for r in report.reduced]
    rows += [(k.run_id, "", "kept", k.why) for k in report.kept]
    print_table(f"retention: {report.policy}", ["run", "workflow", "action", "why"], rows)
    click.echo(
        f"{verb} {len(report.evicted)} runs, {reduce_verb} {len(report.reduced)}, "
        f"kept {len(report.kept)} selected runs",
        err=True,
    )


@click.command("evict")
@db_option
@click.argument("run_id")
@click.option("--reason", required=True, help="Why the run is evicted; kept in its tombstone.")
@click.option(
    "--force",
    is_flag=True,
    help="Evict even if a consumer has not acknowledged it or its parent is retained.",
)
@json_option
def evict(db: str, run_id: str, reason: str, force: bool, as_json: bool) -> None:
    """Evict one completed run: record its tombstone, then delete its events and values."""
    store = open_for_read(db)
    with store, refusals():
        done = store.evict_run(store.resolve_run_id(run_id), reason, policy="manual", force=force)
    if as_json:
        echo_json(
            {
                "run_id": done.run_id,
                "workflow": done.workflow,
                "reason": done.reason,
                "events": done.events,
                "payloads": done.payloads,
            }
        )
        return
    say(f"evicted {done.run_id} ({done.events} events, {done.payloads} payload values): {done.reason}")


@click.command("gc")
@db_option
@json_option
def gc(db: str, as_json: bool) -> None:
    """Give the space freed by eviction back to the file system (incremental vacuum, WAL truncate).

    Once it completes, no removed or evicted value is left in the database or its WAL
    (docs/retention.md); what it could not do now, and why, is printed as "not done". On
    a terminal a progress bar follows the vacuum; the last line says what was freed.
    """
    store = open_for_read(db)
    with store, refusals(), _progress_bar("gc", sys.stderr.isatty() and not as_json) as progress:
        report = store.gc(progress=progress)
    if as_json:
        echo_json(report.to_dict())
        return
    click.echo(
        f"pages {report.pages_before} -> {report.pages_after} ({report.page_size} bytes each); "
        f"file {_bytes(report.file_bytes_before)} -> {_bytes(report.file_bytes_after)}"
    )
    for why in report.not_done:
        click.echo(f"not done: {why}", err=True)
    click.echo(_freed(report))


def _bytes(n: int | None) -> str:
    return "unknown" if n is None else size_text(n)


def _freed(report: GcReport) -> str:
    """One line: what gc gave back, in bytes a person reads."""
    before, after = report.file_bytes_before, report.file_bytes_after
    pages = max(report.pages_before - report.pages_after, 0)
    given = pages * report.page_size if before is None or after is None else max(before - after, 0)
    parts = [f"freed {size_text(given)} of the database ({pages} pages)"]
    if report.artifact_files_removed:
        parts.append(
            f"{report.artifact_files_removed} artifact files ({size_text(report.artifact_bytes_removed)})"
        )
    if report.leftover_files_removed:
        parts.append(
            f"{report.leftover_files_removed} leftover files ({size_text(report.leftover_bytes_removed)})"
        )
    tail = "complete" if report.complete else "incomplete: see not done"
    return ", ".join(parts) + f"; {tail}"


COMMANDS: list[click.Command] = [retention, evict, gc]
