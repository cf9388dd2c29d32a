"""`forkline-es` commands for verify."""

from __future__ import annotations

import click

__all__ = ["COMMANDS"]

COMMANDS: list[click.Command] = []
