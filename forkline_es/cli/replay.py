"""`forkline-es diff` and `forkline-es export`: compare runs, record golden baselines."""

from __future__ import annotations

import sys

import click

from forkline_es.cli._common import (
    EXIT_DIFFERENCE,
    EXIT_OK,
    db_option,
    echo_json,
    fail,
    json_option,
    json_text,
    open_read_only,
    refusals,
    say,
)
from forkline_es.replay import DEFAULT_WINDOW, RunDiff, diff_documents, diff_runs, load_baseline
from forkline_es.replay.baseline import export_baseline

__all__ = ["COMMANDS"]


def _render(diff: RunDiff, show_all: bool) -> None:
    if diff.is_match:
        click.echo("match: no divergence")
        return
    shown = diff.divergences if show_all else diff.divergences[:1]
    for n, d in enumerate(shown):
        say(("first divergence: " if n == 0 else "") + d.describe())
    if not show_all and len(diff.divergences) > 1:
        click.echo(f"({len(diff.divergences) - 1} more; --all lists every divergence)")


@click.command()
@click.argument("runs", nargs=-1)
@click.option("--baseline", type=click.Path(dir_okay=False), help="Compare RUN with this baseline file.")
@click.option("--all", "show_all", is_flag=True, help="List every divergence, not just the first.")
@click.option(
    "--window",
    default=DEFAULT_WINDOW,
    show_default=True,
    type=click.IntRange(min=1),
    help="Entries looked ahead on each side to realign after a missing or extra step.",
)
@db_option
@json_option
def diff(
    runs: tuple[str, ...], baseline: str | None, show_all: bool, window: int, db: str, as_json: bool
) -> None:
    """Diff run A (expected) with run B, or a baseline with RUN. Exit 1 on a divergence."""
    wanted = 1 if baseline else 2
    if len(runs) != wanted:
        usage = "diff --baseline FILE RUN" if baseline else "diff A B (or diff --baseline FILE RUN)"
        fail(f"expected {wanted} run id(s), got {len(runs)}; usage: forkline-es {usage}")
    store = open_read_only(db)
    with store, refusals():
        runs = tuple(store.resolve_run_id(r) for r in runs)
        if baseline:
            result = diff_documents(
                load_baseline(baseline),
                store.get_run_record(runs[0]),
                resolve=store.get_run_record,
                window=window,
            )
        else:
            result = diff_runs(store, runs[0], runs[1], window=window)
    if as_json:
        echo_json(result.to_json(all=show_all))
    else:
        _render(result, show_all)
    sys.exit(EXIT_OK if result.is_match else EXIT_DIFFERENCE)


@click.command()
@click.argument("run")
@click.option(
    "--baseline",
    "as_baseline",
    is_flag=True,
    help="Leave out what varies between runs (ids, timestamps, generations), for golden files.",
)
@db_option
@json_option
def export(run: str, as_baseline: bool, db: str, as_json: bool) -> None:
    """Print RUN's record document as canonical JSON (e.g. `> run.golden.json`).

    Piped, the output is exactly the canonical bytes (a file written this way has the
    document's digest); a terminal gets a final newline too, and DEL and C1 characters
    escaped as \\u007f..\\u009f (the same JSON). The output is JSON either way; --json is
    accepted like on every read command.
    """
    store = open_read_only(db)
    with store, refusals():
        run = store.resolve_run_id(run)
        data = export_baseline(store, run) if as_baseline else store.export_run_record(run)
    if sys.stdout.isatty():  # the same JSON value, without raw DEL or C1 for the terminal
        data = json_text(data)
    click.echo(data, nl=sys.stdout.isatty())  # bytes go to the binary stream as they are


COMMANDS: list[click.Command] = [diff, export]
