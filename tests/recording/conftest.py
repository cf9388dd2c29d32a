"""Fixtures of the recording tests."""

from __future__ import annotations

import pytest

import forkline_es as fe


@pytest.fixture
def store(backend_store: fe.Store) -> fe.Store:
    """Every test here that takes ``store`` runs on each backend."""
    return backend_store


@pytest.fixture
def mem_store(backend_mem_store: fe.Store) -> fe.Store:
    """``mem_store`` too: in memory on SQLite, a fresh schema on PostgreSQL."""
    return backend_mem_store
