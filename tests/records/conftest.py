"""A small recorded store shared by the records tests: a finished run, an active one, a child."""

from __future__ import annotations

from pathlib import Path

import pytest

import forkline_es as fe
from forkline_es.testing.histories import ARTIFACT
from tests.every_backend import mem_store, store  # noqa: F401 (fixtures: this suite runs on every backend)


def record_sample(into: fe.Store) -> None:
    run = into.start_run("billing/invoice", name="Invoice", inputs={"n": 2}, run_id="done")
    run.begin_step("fetch/0", arguments={"url": "https://x"})
    run.invoke("fetch/0", 1, "http.get", ARTIFACT, "ambiguous")
    run.result("fetch/0", 1, "failed", code="timeout")
    run.invoke("fetch/0", 2, "http.get", ARTIFACT, "not-dispatched")
    run.result("fetch/0", 2, "succeeded", result=fe.Sensitive({"token": "t"}), details=fe.NOT_RECORDED)
    run.end_step("fetch/0", "succeeded", branch={"case": "ok"}, binding=[1, 2])
    child = into.start_run("ingest", parent="done", run_id="child")
    run.child("load", "child")
    child.begin_step("parse")  # still active: no outcome
    run.conclude("succeeded", outputs={"total": 3})


@pytest.fixture
def sample_db(db_path: Path) -> Path:
    with fe.Store.open(db_path) as opened:
        record_sample(opened)
    return db_path
