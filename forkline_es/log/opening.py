"""Which backend a store location names, and the driver errors of every backend.

The one place that chooses a backend: by the form of the location (a file path or
``":memory:"`` is SQLite). Everything above receives a ``Backend`` and never asks which.
"""

from __future__ import annotations

import os
from typing import Final

from forkline_es.errors import ForklineError
from forkline_es.log.backend import Backend
from forkline_es.log.connection import Durability
from forkline_es.log.sqlite import SqliteBackend, open_sqlite
from forkline_es.log.sqlite import translate as translate_sqlite

__all__ = ["DRIVER_ERRORS", "open_backend", "translate_driver_error"]

#: Every backend's driver exception classes: what may escape a read outside a transaction.
DRIVER_ERRORS: Final[tuple[type[BaseException], ...]] = SqliteBackend.errors


def open_backend(
    location: str | os.PathLike[str], durability: Durability = "normal", *, read_only: bool = False
) -> Backend:
    """Open the store at ``location`` (creating or migrating it unless ``read_only``)."""
    return open_sqlite(location, durability, read_only=read_only)


def translate_driver_error(error: BaseException, what: str) -> ForklineError:
    """A driver error met outside the backends' own transactions, as a forkline_es error."""
    return translate_sqlite(error, what)
