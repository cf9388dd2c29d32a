"""Every test here that takes ``store`` or ``mem_store`` runs on each backend, except the
modules that tamper with a SQLite file (they mark themselves ``sqlite_only``)."""

from __future__ import annotations

import pytest

import forkline_es as fe


@pytest.fixture
def store(backend_store: fe.Store) -> fe.Store:
    return backend_store


@pytest.fixture
def mem_store(backend_mem_store: fe.Store) -> fe.Store:
    return backend_mem_store
