"""A small recorded store shared by the records tests: a finished run, an active one, a child."""

from __future__ import annotations

from pathlib import Path

import pytest

import forkline_es as fe
from forkline_es.testing.histories import ARTIFACT


def record_sample(store: fe.Store) -> None:
    run = store.start_run("billing/invoice", name="Invoice", inputs={"n": 2}, run_id="done")
    run.begin_step("fetch/0", arguments={"url": "https://x"})
    run.invoke("fetch/0", 1, "http.get", ARTIFACT, "ambiguous")
    run.result("fetch/0", 1, "failed", code="timeout")
    run.invoke("fetch/0", 2, "http.get", ARTIFACT, "not-dispatched")
    run.result("fetch/0", 2, "succeeded", result=fe.Sensitive({"token": "t"}), details=fe.NOT_RECORDED)
    run.end_step("fetch/0", "succeeded", branch={"case": "ok"}, binding=[1, 2])
    child = store.start_run("ingest", parent="done", run_id="child")
    run.child("load", "child")
    child.begin_step("parse")  # still active: no outcome
    run.conclude("succeeded", outputs={"total": 3})


@pytest.fixture
def sample_db(db_path: Path) -> Path:
    with fe.Store.open(db_path) as store:
        record_sample(store)
    return db_path


@pytest.fixture
def store(backend_store: fe.Store) -> fe.Store:
    """Every test here that takes ``store`` runs on each backend."""
    return backend_store


@pytest.fixture
def mem_store(backend_mem_store: fe.Store) -> fe.Store:
    """``mem_store`` too: in memory on SQLite, a fresh schema on PostgreSQL."""
    return backend_mem_store
