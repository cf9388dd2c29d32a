"""`forkline-es verify RUN` / `forkline-es verify --all`: re-check history and artifact files.

Exit 0 when everything verifies, 1 when any problem is found, 2 on a refusal (an unknown
run, or neither/both of RUN and --all). Nothing is ever repaired.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

from forkline_es.artifacts.verify import VerifyReport
from forkline_es.cli._common import (
    EXIT_DIFFERENCE,
    EXIT_OK,
    db_option,
    echo_json,
    fail,
    json_option,
    open_for_read,
    refusals,
    say,
)

__all__ = ["COMMANDS"]

Progress = Callable[[int, int], None]


@contextmanager
def _progress_bar(enabled: bool) -> Iterator[Progress | None]:
    """A rich progress bar on stderr when it is a terminal; nothing otherwise."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeRemainingColumn

    with Progress(
        "verifying",
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


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _render(report: VerifyReport) -> None:
    if report.ok:
        what = [_plural(report.events, "event"), _plural(report.artifacts, "artifact")]
        if report.manifests:
            what.append("manifest")
        say(f"run {report.run_id}: ok ({', '.join(what)})")
        return
    say(f"run {report.run_id}: {_plural(len(report.problems), 'problem')}")
    for p in report.problems:
        where = f"seq {p.seq}" if p.seq is not None else "run"
        say(f"  {where}  {p.kind}  {p.message}")


@click.command()
@click.argument("run_id", required=False)
@click.option("--all", "every", is_flag=True, help="Verify every run in the database.")
@click.option(
    "--no-projections",
    "skip_projections",
    is_flag=True,
    help="Do not compare each run's projections with a refold of its rows (faster; blind to "
    "a deleted tail or a run rewritten to its end).",
)
@db_option
@json_option
def verify(run_id: str | None, every: bool, skip_projections: bool, db: str, as_json: bool) -> None:
    """Re-check RUN's hash chain, payload values, artifact files and manifest, and its
    projections against a refold of its rows (or --all runs).

    Exits 1 when anything does not match what was recorded; never repairs anything.
    """
    if (run_id is None) == (not every):
        fail("give one RUN, or --all (not both); `forkline-es runs` lists the runs")
    store = open_for_read(db)
    with store, refusals():
        if run_id is not None:
            report = store.verify_run(run_id, projections=not skip_projections)
            if as_json:
                echo_json(report.to_dict())
            else:
                _render(report)
            sys.exit(EXIT_OK if report.ok else EXIT_DIFFERENCE)
        with _progress_bar(sys.stderr.isatty()) as progress:
            reports = store.verify_all(progress, projections=not skip_projections)
    failed = [r for r in reports if not r.ok]
    if as_json:
        echo_json(
            {
                "ok": not failed,
                "runs": len(reports),
                "failed": len(failed),
                "reports": [r.to_dict() for r in failed],
            }
        )
    else:
        for r in failed:
            _render(r)
        click.echo(
            f"verified {_plural(len(reports), 'run')}: "
            + (f"{len(failed)} with problems" if failed else "ok")
        )
    sys.exit(EXIT_OK if not failed else EXIT_DIFFERENCE)


COMMANDS: list[click.Command] = [verify]
