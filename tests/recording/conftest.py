"""Fixtures of the recording tests."""

from __future__ import annotations

import pytest

import forkline_es as fe


@pytest.fixture
def store(backend_store: fe.Store) -> fe.Store:
    """Every test here that takes ``store`` runs on each backend."""
    return backend_store
