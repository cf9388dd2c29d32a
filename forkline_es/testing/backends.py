"""Fresh stores of every backend, for the seam's contract tests and the suites above it.

A test takes handles on one fresh store (``BackendOpener``) and asks only what the
``Backend`` protocol promises; the pytest fixture parametrizes it over ``BACKENDS``.

``FreshStores`` gives a new, empty store at each call, cheaply: a file (or memory) on
SQLite, a schema of its own in one database on PostgreSQL (creating a database costs a
checkpoint; a schema is a catalogue row). Hypothesis examples and the behavioural suites
take it, so each example meets an empty store on either backend.
"""

from __future__ import annotations

import itertools
import os
import urllib.parse
from pathlib import Path
from typing import Any, Final, TypeVar

from forkline_es.log.backend import Backend
from forkline_es.log.opening import open_backend
from forkline_es.store import Store
from forkline_es.testing.postgres import create_schema, drop_schemas

__all__ = ["BACKENDS", "BackendOpener", "FreshStores", "in_schema", "on_backend"]

M = TypeVar("M")

#: PostgreSQL examples cost a schema, its DDL and a server round trip per statement: a
#: state machine there runs this share of the profile's examples (never fewer than 3).
POSTGRES_EXAMPLE_SHARE: Final = 10

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


def in_schema(dsn: str, schema: str) -> str:
    """``dsn`` (a ``postgresql://`` URL) whose connections work in ``schema`` (search_path)."""
    sep = "&" if "?" in dsn else "?"
    return f"{dsn}{sep}options={urllib.parse.quote(f'-csearch_path={schema}')}"


class FreshStores:
    """New, empty stores of one backend (``kind``), each at a location of its own.

    SQLite: a file in ``folder`` (``memory=True``: ``":memory:"``). PostgreSQL: a new schema
    in the database at ``dsn``, created here; the caller drops the database at the end,
    and every schema with it. ``open()`` opens a store at a new location (artifact files
    in a folder of its own under ``folder``); ``location()`` only makes the location, for
    a test that opens it several times or in other processes.
    """

    def __init__(
        self, kind: str, folder: str | os.PathLike[str], dsn: str | None = None, *, memory: bool = False
    ) -> None:
        if kind not in BACKENDS:
            raise ValueError(f"no backend named {kind!r}; one of {', '.join(BACKENDS)}")
        if kind == "postgresql" and dsn is None:
            raise ValueError("fresh PostgreSQL stores need the DSN of a database to make schemas in")
        self.kind = kind
        self.folder = Path(folder)
        self.dsn = dsn
        self.memory = memory
        self._schemas: list[str] = []
        self._artifacts: dict[str, str] = {}

    #: Schema and file names, unique in the process (schemas of several tests share a database).
    _count: Final = itertools.count(1)

    def examples(self, n: int, share: int = POSTGRES_EXAMPLE_SHARE) -> int:
        """How many of a profile's ``n`` hypothesis examples run on this backend: all on
        SQLite, one in ``share`` on PostgreSQL (never fewer than 3)."""
        return n if self.kind == "sqlite" else max(3, n // share)

    def location(self, *, memory: bool | None = None) -> str:
        """A new, empty location: a file path, ``":memory:"`` (``memory``, by default the
        instance's), or a DSN naming a new schema (a schema is never in memory)."""
        n = next(self._count)
        if self.kind == "sqlite":
            in_memory = self.memory if memory is None else memory
            return ":memory:" if in_memory else str(self.folder / f"store{n}.db")
        assert self.dsn is not None
        schema = f"store{n}"
        create_schema(self.dsn, schema)
        self._schemas.append(schema)
        location = in_schema(self.dsn, schema)
        self._artifacts[location] = str(self.folder / f"{schema}.artifacts")
        return location

    def artifacts_for(self, location: str) -> str | None:
        """The artifact folder a store at ``location`` takes: None on SQLite (beside the
        file), a folder of its own on PostgreSQL."""
        return self._artifacts.get(location)

    def open(self, location: str | None = None, *, memory: bool | None = None, **options: Any) -> Store:
        """A store at ``location`` (a new one when None), with ``Store.open``'s ``options``."""
        where = self.location(memory=memory) if location is None else location
        artifacts = self.artifacts_for(where)
        if artifacts is not None:
            options.setdefault("artifacts", artifacts)
        return Store.open(where, **options)

    def close(self) -> None:
        """Drop the schemas made here (their stores closed by now)."""
        if self._schemas:
            assert self.dsn is not None
            drop_schemas(self.dsn, self._schemas)
            self._schemas.clear()


def on_backend(machine: type[M], fresh: FreshStores) -> type[M]:
    """``machine`` (a ``testing.histories.HistoryMachine``) whose examples each take a new
    store of ``fresh``: run it with ``hypothesis.stateful.run_state_machine_as_test``."""
    return type(f"{machine.__name__}On{fresh.kind.capitalize()}", (machine,), {"fresh": fresh})
