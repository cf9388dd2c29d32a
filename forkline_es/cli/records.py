"""`forkline-es` commands for records."""

from __future__ import annotations

import click

__all__ = ["COMMANDS"]

COMMANDS: list[click.Command] = []
