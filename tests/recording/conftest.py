"""Fixtures of the recording tests."""

from __future__ import annotations

from tests.every_backend import mem_store, store  # noqa: F401 (fixtures: this suite runs on every backend)
