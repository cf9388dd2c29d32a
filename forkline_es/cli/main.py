"""The ``forkline-es`` group: each module of this package contributes its COMMANDS."""

from __future__ import annotations

import inspect
from typing import Final

import click

from forkline_es import __version__
from forkline_es.cli import (
    compat,
    copying,
    demo,
    forkline,
    records,
    replay,
    retention,
    serve,
    stats,
    verify,
)
from forkline_es.cli._common import ARTIFACTS, NO_PAGER

__all__ = ["SECTIONS", "main", "summary"]

#: How ``forkline-es --help`` groups the commands, in this order; others go under "Other".
SECTIONS: Final[dict[str, tuple[str, ...]]] = {
    "Record": ("demo", "import-forkline", "forkline"),
    "Inspect": ("runs", "show", "step", "log", "export"),
    "Browse": ("serve",),
    "Compare and check": ("diff", "verify", "anchors"),
    "Maintain": ("stats", "rebuild", "retention", "evict", "gc", "copy"),
}


def summary(command: click.Command) -> str:
    """A command's summary for the group's help: its first paragraph whole (wrapped, never
    cut mid-sentence as click's short help is)."""
    if command.short_help:
        return command.short_help
    return " ".join(inspect.cleandoc(command.help or "").split("\n\n")[0].split())


class SectionedGroup(click.Group):
    """A group whose help lists commands by task rather than alphabetically."""

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        commands = {
            name: cmd
            for name in self.list_commands(ctx)
            if (cmd := self.get_command(ctx, name)) is not None and not cmd.hidden
        }
        placed = {name for names in SECTIONS.values() for name in names}
        sections = [*SECTIONS.items(), ("Other", tuple(n for n in commands if n not in placed))]
        for title, names in sections:
            rows = [(n, summary(commands[n])) for n in names if n in commands]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


@click.group(
    cls=SectionedGroup,
    context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100},
    epilog="New here? `forkline-es demo` records sample runs into runs.db; it then prints what to try.",
)
@click.version_option(__version__, prog_name="forkline-es")
@click.option(
    "--db",
    default=None,
    envvar="FORKLINE_ES_DB",
    type=click.Path(dir_okay=False),
    help="The database for every subcommand: a SQLite file or a postgresql:// URL (each "
    "also takes --db; default $FORKLINE_ES_DB, else runs.db).",
)
@click.option(
    "--artifacts",
    default=None,
    envvar="FORKLINE_ES_ARTIFACTS",
    type=click.Path(file_okay=False),
    help="The artifact folder of the store (default $FORKLINE_ES_ARTIFACTS, else the folder "
    "beside a SQLite file); a PostgreSQL store needs it for artifact files.",
)
@click.option("--no-pager", is_flag=True, help="Never page long output (a terminal pages it by default).")
@click.pass_context
def main(ctx: click.Context, db: str | None, artifacts: str | None, no_pager: bool) -> None:
    """Record, inspect, diff and verify durable runs kept in an event-sourced SQLite log.

    Every command takes --db PATH or a postgresql:// URL (default $FORKLINE_ES_DB, else
    runs.db), before or after its name; read commands take --json. On a terminal, output
    longer than the screen goes through $PAGER (else less -R); --no-pager prints it
    straight, and piped output is never paged. Exit status: 0 success, 1 a check found a
    difference or a mismatch, 2 a usage error or a refusal (its code is printed).
    """
    ctx.meta[NO_PAGER] = no_pager
    ctx.meta[ARTIFACTS] = artifacts
    if db is not None:
        ctx.default_map = _db_defaults(main, db)


def _db_defaults(group: click.Group, db: str) -> dict[str, object]:
    """``forkline-es --db X CMD``: X becomes the default of every subcommand's --db."""
    defaults: dict[str, object] = {}
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            defaults[name] = _db_defaults(command, db)
        elif any(p.name == "db" for p in command.params):
            defaults[name] = {"db": db}
    return defaults


for _module in (demo, compat, records, retention, replay, verify, copying, stats, serve, forkline):
    for _command in _module.COMMANDS:
        main.add_command(_command)
