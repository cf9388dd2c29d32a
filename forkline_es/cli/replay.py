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
    paged,
    refusals,
    say,
)
from forkline_es.replay import DEFAULT_WINDOW, Divergence, RunDiff, diff_documents, diff_runs, load_baseline
from forkline_es.replay.baseline import export_baseline, live_document
from forkline_es.replay.diff import CLASSES

__all__ = ["COMMANDS"]


def _lines(text: str) -> None:
    for line in text.split("\n"):  # one say per line: say escapes control characters
        say(line)


def _others(hidden: list[Divergence]) -> str:
    counts = [f"{n} {c}" for c in CLASSES if (n := sum(d.category == c for d in hidden))]
    return f"{len(hidden)} more: {', '.join(counts)}; --all lists every one"


def _render(diff: RunDiff, show_all: bool) -> None:
    first = diff.first
    if first is None:
        if not diff.divergences:
            click.echo("match: no divergence")
        else:
            ignored = [f"{len(diff.of_class(c))} {c}" for c in CLASSES if diff.of_class(c)]
            click.echo(f"match: no behaviour divergence ({', '.join(ignored)}; --strict counts them)")
        shown: tuple[Divergence, ...] = diff.divergences if show_all else ()
    else:
        _lines("first divergence: " + first.describe())
        shown = tuple(d for d in diff.divergences if d is not first) if show_all else ()
    for d in shown:
        _lines(d.describe())
    hidden = [d for d in diff.divergences if d is not first and d not in shown]
    if hidden and first is not None:
        click.echo(f"({_others(hidden)})")


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
@click.option(
    "--strict",
    is_flag=True,
    help="Count metadata and infrastructure differences too, not only behaviour.",
)
@click.option(
    "--times",
    is_flag=True,
    help="Compare when entries and steps were recorded (x-at ...): metadata, left out by default.",
)
@click.option(
    "--ignore",
    "ignore",
    multiple=True,
    metavar="POINTER",
    help="Leave out changes under this JSON Pointer pattern (`*` = one segment); repeatable.",
)
@db_option
@json_option
@paged
def diff(
    runs: tuple[str, ...],
    baseline: str | None,
    show_all: bool,
    window: int,
    strict: bool,
    times: bool,
    ignore: tuple[str, ...],
    db: str,
    as_json: bool,
) -> None:
    """Diff run A (expected) with run B, or a baseline with RUN. Exit 1 on a behaviour
    divergence (any divergence with --strict); behaviour is listed first."""
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
                live_document(store, runs[0]),
                resolve=store.get_run_record,
                window=window,
                strict=strict,
                ignore=ignore,
                times=times,
            )
        else:
            result = diff_runs(
                store, runs[0], runs[1], window=window, strict=strict, ignore=ignore, times=times
            )
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
