"""Fresh stores of every backend, for the seam's contract tests and the suites above it.

A test takes handles on one fresh store (``BackendOpener``) and asks only what the
``Backend`` protocol promises; the pytest fixture parametrizes it over ``BACKENDS``.
"""

from __future__ import annotations

from typing import Final

from forkline_es.log.backend import Backend
from forkline_es.log.opening import open_backend

__all__ = ["BACKENDS", "BackendOpener"]

#: The backends the seam's contract runs against.
BACKENDS: Final = ("sqlite", "postgresql")


class BackendOpener:
    """Opens handles (each its own connection) on one fresh store; closes them all at the end."""

    def __init__(self, kind: str, location: str) -> None:
        self.kind = kind
        self.location = location
        self.opened: list[Backend] = []

    def __call__(self, *, read_only: bool = False) -> Backend:
        backend = open_backend(self.location, read_only=read_only)
        self.opened.append(backend)
        return backend

    def close(self) -> None:
        for backend in reversed(self.opened):
            backend.close()
