"""Which backend a store location names, and the driver errors of every backend.

The one place that chooses a backend, by the form of the location: ``postgresql://`` or
``postgres://`` is a PostgreSQL DSN (psycopg imported only then: the ``postgres`` extra),
anything else a SQLite file path or ``":memory:"``. Everything above receives a
``Backend`` and never asks which.
"""

from __future__ import annotations

import os
import sys

from forkline_es.errors import ForklineError, StoreError
from forkline_es.log.backend import Backend
from forkline_es.log.connection import Durability
from forkline_es.log.sqlite import SqliteBackend, open_sqlite
from forkline_es.log.sqlite import translate as translate_sqlite

__all__ = ["driver_errors", "is_dsn", "open_backend", "translate_driver_error"]


def is_dsn(location: str | os.PathLike[str]) -> bool:
    """Whether ``location`` names a PostgreSQL store rather than a SQLite file."""
    return isinstance(location, str) and location.startswith(("postgresql://", "postgres://"))


def driver_errors() -> tuple[type[BaseException], ...]:
    """Every loaded backend's driver exception classes: what may escape a read outside a transaction.

    psycopg counts only once imported (opening a PostgreSQL store imports it): no psycopg
    error can be raised before, and importing it eagerly cost ``import forkline_es`` 35 ms.
    """
    psycopg = sys.modules.get("psycopg")
    return SqliteBackend.errors + ((psycopg.Error,) if psycopg is not None else ())


def open_backend(
    location: str | os.PathLike[str], durability: Durability = "normal", *, read_only: bool = False
) -> Backend:
    """Open the store at ``location`` (creating or migrating it unless ``read_only``)."""
    if is_dsn(location):
        try:
            from forkline_es.log.postgres.backend import PostgresBackend
        except ImportError as e:
            raise StoreError(
                f"a PostgreSQL store needs psycopg 3 ({e}): pip install 'forkline-es[postgres]'"
            ) from None
        return PostgresBackend(os.fspath(location), read_only=read_only)
    return open_sqlite(location, durability, read_only=read_only)


def translate_driver_error(error: BaseException, what: str) -> ForklineError:
    """A driver error met outside the backends' own transactions, as a forkline_es error."""
    if not isinstance(error, SqliteBackend.errors):
        from forkline_es.log.postgres.connection import translate as translate_postgres

        return translate_postgres(error, what)
    return translate_sqlite(error, what)
