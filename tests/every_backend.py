"""``store`` and ``mem_store`` on every backend, for a suite's conftest to import.

A suite whose tests hold on both backends imports these two fixtures into its conftest;
they then override the SQLite ``store`` and ``mem_store`` of tests/conftest.py for that
suite, and each test runs once per backend (``backend_store``, ``fresh_stores``).
"""

from __future__ import annotations

import pytest

import forkline_es as fe

__all__ = ["mem_store", "store"]


@pytest.fixture
def store(backend_store: fe.Store) -> fe.Store:
    """Every test that takes ``store`` runs on each backend."""
    return backend_store


@pytest.fixture
def mem_store(backend_mem_store: fe.Store) -> fe.Store:
    """``mem_store`` too: in memory on SQLite, a fresh schema on PostgreSQL."""
    return backend_mem_store
