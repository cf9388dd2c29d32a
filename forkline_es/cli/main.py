"""The ``forkline-es`` group: global options, and the subcommands registered on it."""

from __future__ import annotations

import click

from forkline_es import __version__

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="forkline-es")
def main() -> None:
    """Record, inspect, diff and verify durable runs kept in an event-sourced SQLite log."""


@main.command()
@click.option("--db", default="runs.db", show_default=True, help="Database file to record into.")
def demo(db: str) -> None:
    """Record a sample run into DB."""
    click.echo(f"forkline-es demo: nothing recorded yet into {db} (the demo executor is not built yet).")
