"""The ``forkline-es`` group: each module of this package contributes its COMMANDS."""

from __future__ import annotations

import click

from forkline_es import __version__
from forkline_es.cli import demo, records, replay, retention, verify

__all__ = ["main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="forkline-es")
def main() -> None:
    """Record, inspect, diff and verify durable runs kept in an event-sourced SQLite log."""


for _module in (demo, records, retention, replay, verify):
    for _command in _module.COMMANDS:
        main.add_command(_command)
