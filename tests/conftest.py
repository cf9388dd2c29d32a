"""Shared fixtures and hypothesis profiles.

``--slow`` selects the "slow" hypothesis profile (many more examples); CI runs the
default "ci" profile. ``HYPOTHESIS_PROFILE=dev`` is quicker for local iteration.
"""

from __future__ import annotations

import itertools
import os
import random
import re
from collections.abc import Iterator
from pathlib import Path

import apsw
import pytest
from hypothesis import HealthCheck, settings

import forkline_es as fe
from forkline_es.testing.backends import BACKENDS, BackendOpener, FreshStores
from forkline_es.testing.postgres import PostgresServer

settings.register_profile("ci", max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile(
    "slow", max_examples=2_000, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile("dev", max_examples=30, deadline=None)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--slow", action="store_true", help="use the large hypothesis profile")


def pytest_configure(config: pytest.Config) -> None:
    profile = "slow" if config.getoption("--slow") else os.environ.get("HYPOTHESIS_PROFILE", "ci")
    settings.load_profile(profile)
    config.addinivalue_line(
        "markers",
        "sqlite_only(why): the test is about SQLite itself (its file, WAL, apsw, a killed SQLite "
        "writer) and runs on SQLite only; ``why`` says so. It skips nothing: it documents why "
        "the test takes a SQLite store instead of the backend-parametrized ones.",
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A ``sqlite_only`` mark must say why, and must not sit on a test that runs on every
    backend (it would document a reason that is not true)."""
    for item in items:
        mark = item.get_closest_marker("sqlite_only")
        if mark is None:
            continue
        why = mark.args[0] if mark.args else mark.kwargs.get("why")
        if not isinstance(why, str) or not why.strip():
            raise pytest.UsageError(
                f"{item.nodeid}: @pytest.mark.sqlite_only needs the reason as its argument"
            )
        callspec = getattr(item, "callspec", None)
        if callspec is not None and any(v == "postgresql" for v in callspec.params.values()):
            raise pytest.UsageError(f"{item.nodeid}: marked sqlite_only but runs on PostgreSQL too")


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "runs.db"


@pytest.fixture
def store(db_path: Path) -> Iterator[fe.Store]:
    """A store on a temporary file (WAL, the default durability)."""
    with fe.Store.open(db_path) as s:
        yield s


@pytest.fixture
def mem_store() -> Iterator[fe.Store]:
    with fe.Store.open(":memory:") as s:
        yield s


@pytest.fixture
def sqlite_store(db_path: Path) -> Iterator[fe.Store]:
    """``store`` under a name no suite redefines: what a ``sqlite_only`` test takes in a
    suite whose ``store`` runs on every backend."""
    with fe.Store.open(db_path) as s:
        yield s


@pytest.fixture
def sqlite_mem_store() -> Iterator[fe.Store]:
    """``mem_store`` on SQLite, for ``sqlite_only`` tests (see ``sqlite_store``)."""
    with fe.Store.open(":memory:") as s:
        yield s


@pytest.fixture
def damaged_db(tmp_path: Path) -> Path:
    """A store of 20 concluded runs, checkpointed into its file, with noise written over
    the middle page of the ``log`` and of the ``entry`` table (the same noise every time). A fixed offset
    depended on the file's layout: at the middle it hit only payload pages once the listing
    indexes came (issue 23), a third in it hit the schema once run checkpoints came."""
    db = tmp_path / "runs.db"
    with fe.Store.open(db) as store:
        for i in range(20):
            run = store.start_run("wf", run_id=f"r{i}", inputs={"i": i})
            for s in range(5):
                run.begin_step(f"s/{s}", arguments={"x": "y" * 200})
                run.end_step(f"s/{s}", "succeeded")
            run.conclude("succeeded")
        store.gc()  # everything checkpointed into the file
    conn = apsw.Connection(str(db))
    try:  # the middle page of the log and of the records' entries, wherever the schema puts them
        pages = [
            [p for (p,) in conn.execute("SELECT pageno FROM dbstat WHERE name = ? ORDER BY pageno", (t,))]
            for t in ("log", "entry")
        ]
        page_size = conn.execute("PRAGMA page_size").fetchall()[0][0]
    finally:
        conn.close()
    rng = random.Random(1)
    with open(db, "r+b") as f:
        for of in pages:
            f.seek((of[len(of) // 2] - 1) * page_size)
            f.write(bytes(rng.randrange(256) for _ in range(page_size)))
    return db


# -- backends: every suite that takes ``open_backend`` runs once per backend --------------


def _location(request: pytest.FixtureRequest, kind: str, tmp_path: Path) -> str:
    """A fresh store's location: a file for SQLite, a database of its own on PostgreSQL."""
    return str(request.getfixturevalue("pg_dsn")) if kind == "postgresql" else str(tmp_path / "runs.db")


@pytest.fixture(params=BACKENDS)
def open_backend_handle(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[BackendOpener]:
    """``open_backend_handle()`` gives a new handle (its own connection) on one fresh store."""
    opener = BackendOpener(request.param, _location(request, request.param, tmp_path))
    try:
        yield opener
    finally:
        opener.close()


@pytest.fixture(scope="session")
def pg_stores_dsn(pg_server: PostgresServer) -> str:
    """One database of the session that ``fresh_stores`` makes its schemas in."""
    return pg_server.create_database("fresh_stores")


@pytest.fixture(params=BACKENDS)
def fresh_stores(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FreshStores]:
    """New, empty stores of each backend, as many as the test asks (one per hypothesis
    example): files on SQLite, a schema each on PostgreSQL (cheap), dropped at the end."""
    dsn = str(request.getfixturevalue("pg_stores_dsn")) if request.param == "postgresql" else None
    stores = FreshStores(request.param, tmp_path, dsn)
    try:
        yield stores
    finally:
        stores.close()


@pytest.fixture
def backend_store(fresh_stores: FreshStores) -> Iterator[fe.Store]:
    """A store on a fresh location of each backend: a suite's conftest makes it its ``store``
    to run on every backend (tests/records, tests/recording, ...)."""
    with fresh_stores.open() as s:
        yield s


@pytest.fixture
def backend_mem_store(fresh_stores: FreshStores) -> Iterator[fe.Store]:
    """``mem_store`` on each backend: in memory on SQLite, a fresh schema on PostgreSQL."""
    with fresh_stores.open(memory=True) as s:
        yield s


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL server per test process (each xdist worker has its own),
    started at the first test that asks for it. No server here fails the test: it never skips."""
    with PostgresServer() as server:
        yield server


_databases = itertools.count()


@pytest.fixture
def pg_dsn(pg_server: PostgresServer, request: pytest.FixtureRequest) -> Iterator[str]:
    """The DSN of a new, empty database of its own for this test, dropped after it."""
    name = f"t{next(_databases)}_" + re.sub(r"[^a-z0-9_]", "_", request.node.name.lower())[:40]
    yield pg_server.create_database(name)
    pg_server.drop_database(name)
