"""`forkline-es verify RUN` / `forkline-es verify --all`: re-check history and artifact files;
`forkline-es anchors`: the digests to keep elsewhere and give back to `verify --anchors`.

Exit 0 when everything verifies, 1 when any problem is found (a damaged file included), 2
on a refusal (an unknown run, a malformed anchors file, or neither/both of RUN and --all).
Nothing is ever repaired or written: the database is opened read-only.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from forkline_es.artifacts.anchors import parse_anchors
from forkline_es.artifacts.verify import STORE_KINDS, VerifyReport
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
from forkline_es.errors import InvalidRequest
from forkline_es.values import canonical_json

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
    whose = "store" if report.run_id is None else f"run {report.run_id}"
    if report.ok:
        what = [_plural(report.events, "event"), _plural(report.artifacts, "artifact")]
        if report.manifests:
            what.append("manifest")
        say(f"{whose}: ok ({', '.join(what)})")
        return
    say(f"{whose}: {_plural(len(report.problems), 'problem')}")
    for p in report.problems:
        where = "store" if p.kind in STORE_KINDS else f"seq {p.seq}" if p.seq is not None else "run"
        say(f"  {where}  {p.kind}  {p.message}")


def _read_anchors(source: str) -> dict[str, dict[str, Any]]:
    """The anchors in the file ``source`` ("-": standard input); invalid-request when they
    cannot be read or are malformed."""
    try:
        data = sys.stdin.buffer.read() if source == "-" else Path(source).read_bytes()
    except OSError as e:
        raise InvalidRequest(
            f"cannot read the anchors file {source}: {e.strerror or e}; "
            "pass the file `forkline-es anchors > FILE` wrote"
        ) from None
    return parse_anchors(data, source)


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
@click.option(
    "--anchors",
    "anchors_file",
    metavar="FILE",
    help="Also check each run against the anchors `forkline-es anchors` printed earlier into "
    "FILE (- reads standard input): a run rewritten at or before its anchor is an anchor-mismatch.",
)
@db_option
@json_option
def verify(
    run_id: str | None, every: bool, skip_projections: bool, anchors_file: str | None, db: str, as_json: bool
) -> None:
    """Re-check RUN's hash chain, payload values, artifact files and manifest, its projections
    against a refold of its rows, and the log's triggers (or --all runs).

    Exits 1 when anything does not match what was recorded, or the file is damaged; never
    repairs anything, and opens the database read-only.
    """
    if (run_id is None) == (not every):
        fail("give one RUN, or --all (not both); `forkline-es runs` lists the runs")
    with refusals():
        anchors = _read_anchors(anchors_file) if anchors_file is not None else None
    store = open_read_only(db, damaged=EXIT_DIFFERENCE)
    with store, refusals(damaged=EXIT_DIFFERENCE):
        if run_id is not None:
            report = store.verify_run(store.resolve_run_id(run_id), anchors, projections=not skip_projections)
            if as_json:
                echo_json(report.to_dict())
            else:
                _render(report)
            sys.exit(EXIT_OK if report.ok else EXIT_DIFFERENCE)
        with _progress_bar(sys.stderr.isatty()) as progress:
            reports = store.verify_all(progress, projections=not skip_projections, anchors=anchors)
    own = [p for r in reports if r.run_id is None for p in r.problems]
    runs = [r for r in reports if r.run_id is not None]
    failed = [r for r in runs if not r.ok]
    if as_json:
        echo_json(
            {
                "ok": not failed and not own,
                "runs": len(runs),
                "failed": len(failed),
                "store": [p.to_dict() for p in own],
                "reports": [r.to_dict() for r in failed],
            }
        )
    else:
        for r in reports:
            if not r.ok:
                _render(r)
        click.echo(
            f"verified {_plural(len(runs), 'run')}: "
            + (f"{len(failed)} with problems" if failed or own else "ok")
            + (f"; the store has {_plural(len(own), 'problem')}" if own else "")
        )
    sys.exit(EXIT_OK if not failed and not own else EXIT_DIFFERENCE)


@click.command()
@db_option
@click.option("--json", "as_json", is_flag=True, help="Accepted as on every read command: JSON either way.")
def anchors(db: str, as_json: bool) -> None:
    """Print each retained run's last seq and digest as JSON, to keep outside the database.

    Canonical JSON on one line, keys sorted: {RUN: {"digest": "sha256:...", "seq": N}, ...}.
    Kept elsewhere (another system, a signed copy), it lets `verify --anchors FILE` report
    any run rewritten at or before its anchor.
    """
    store = open_read_only(db)
    with store, refusals():
        taken = store.anchors()
    data = canonical_json(taken)
    if sys.stdout.isatty():  # the same JSON value, without raw DEL or C1 for the terminal
        data = json_text(data)
    click.echo(data.decode())


COMMANDS: list[click.Command] = [verify, anchors]
