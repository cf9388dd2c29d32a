"""The ``forkline-es`` command line: thin commands over the library."""

from forkline_es.cli.main import main

__all__ = ["main"]
