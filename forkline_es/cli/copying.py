"""`forkline-es copy SRC DST`: a whole store into a new, empty one, on either backend."""

from __future__ import annotations

import sys

import click

from forkline_es.cli._common import db_option, echo_json, json_option, refusals, say
from forkline_es.cli.retention import _progress_bar
from forkline_es.copying import copy_store

__all__ = ["COMMANDS"]


@click.command("copy")
@db_option
@click.argument("stores", nargs=-1, required=True, metavar="[SRC] DST")
@click.option(
    "--src-artifacts", type=click.Path(file_okay=False), help="SRC's artifact folder (a PostgreSQL SRC)."
)
@click.option(
    "--dst-artifacts", type=click.Path(file_okay=False), help="DST's artifact folder (a PostgreSQL DST)."
)
@json_option
@click.pass_context
def copy(
    ctx: click.Context,
    db: str,
    stores: tuple[str, ...],
    src_artifacts: str | None,
    dst_artifacts: str | None,
    as_json: bool,
) -> None:
    """Copy the store SRC (default: --db) into a new, empty store DST (each a file or a
    postgresql:// DSN).

    Every log row keeps its position and digest; payload values, eviction records and
    consumer checkpoints go too, and DST's projections are refolded. A DST that holds
    anything is refused and left as it was. Stop the writers of SRC first (docs/postgres.md).
    """
    if len(stores) > 2:
        raise click.UsageError("copy takes SRC and DST, or DST alone (SRC is then --db)")
    if len(stores) == 2 and ctx.get_parameter_source("db") is click.core.ParameterSource.COMMANDLINE:
        raise click.UsageError("give SRC either as --db or as the first argument, not both")
    src, dst = stores if len(stores) == 2 else (db, stores[0])
    with refusals(), _progress_bar("copy", sys.stderr.isatty() and not as_json) as progress:
        report = copy_store(
            src, dst, src_artifacts=src_artifacts, dst_artifacts=dst_artifacts, progress=progress
        )
    if as_json:
        echo_json(
            {
                "log_rows": report.log_rows,
                "events_folded": report.events_folded,
                "artifact_files": report.artifact_files,
                "artifacts_skipped": report.artifacts_skipped,
            }
        )
        return
    say(f"copied {report.log_rows} log rows and {report.artifact_files} artifact files")
    if report.artifacts_skipped is not None:
        say(f"artifact files not copied: {report.artifacts_skipped}", err=True)


COMMANDS: list[click.Command] = [copy]
