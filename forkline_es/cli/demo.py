"""`forkline-es demo`: record the sample workflow with the bundled executor."""

from __future__ import annotations

import click

from forkline_es.cli._common import db_option

__all__ = ["COMMANDS"]


@click.command()
@db_option
def demo(db: str) -> None:
    """Record a sample run into DB."""
    click.echo(f"forkline-es demo: nothing recorded yet into {db} (the demo executor is not built yet).")


COMMANDS: list[click.Command] = [demo]
