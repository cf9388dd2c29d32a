"""``forkline.cli``: Forkline's ``main(argv)``, the same commands as ``forkline-es forkline``.

``python -m forkline_es.forkline.cli list`` runs as ``forkline list`` does, so a pipeline
that calls Forkline's command line can alias it without installing a second ``forkline``
script (which would clash with Forkline's own where both are installed).
"""

from __future__ import annotations

__all__ = ["main"]


def main(argv: list[str] | None = None) -> None:
    """Run one Forkline command (``run``, ``list``, ``replay``, ``diff``, ``ci ...``); exits
    with its status."""
    from forkline_es.cli.forkline import forkline  # the command line sits above this package

    forkline.main(args=argv, prog_name="forkline")
