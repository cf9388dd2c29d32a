"""Every test here that takes ``store`` or ``mem_store`` runs on each backend."""

from __future__ import annotations

from tests.every_backend import mem_store, store  # noqa: F401 (fixtures: this suite runs on every backend)
