"""Stores the web tests read: the demo's, and one holding hostile text."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.testclient import TestClient

import forkline_es as fe
from forkline_es.demo import demo_ids, record_demo
from forkline_es.web import create_app

#: Text a model could return, meant to run in an operator's browser.
HOSTILE = '<script>alert("x")</script><img src=x onerror="alert(1)">'
HOSTILE_RUN = "hostile-run"


@pytest.fixture(scope="session")
def demo_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's runs (``forkline-es demo``), recorded once for every web test."""
    db = tmp_path_factory.mktemp("web-demo") / "runs.db"
    with fe.Store.open(db) as store:
        ids, _ = demo_ids(store)
        record_demo(store, ids)
    return db


@pytest.fixture(scope="session")
def hostile_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A run whose workflow, name, label, operation, codes, reason and payloads hold markup, and
    its child run whose id does too."""
    db = tmp_path_factory.mktemp("web-hostile") / "runs.db"
    digest = "sha256:" + "0" * 64
    with fe.Store.open(db) as store:
        run = store.start_run(
            HOSTILE, name=HOSTILE, inputs={"prompt": HOSTILE}, labels={"who": HOSTILE}, run_id=HOSTILE_RUN
        )
        run.begin_step("answer", arguments={HOSTILE: HOSTILE})
        run.invoke("answer", 1, HOSTILE, digest, "not-dispatched", arguments={"q": HOSTILE})
        run.result("answer", 1, "failed", code=HOSTILE, result={"text": HOSTILE})
        run.end_step("answer", "failed", code=HOSTILE)
        run.begin_step("delegate")
        run.child("delegate", HOSTILE)  # a child whose very id is markup
        store.start_run(HOSTILE, run_id=HOSTILE, parent=HOSTILE_RUN).conclude("failed", reason=HOSTILE)
        run.end_step("delegate", "failed")
        run.conclude("failed", code=HOSTILE, reason=HOSTILE)
    return db


@pytest.fixture(scope="session")
def demo_client(demo_db: Path) -> Iterator[TestClient]:
    with fe.Store.open(demo_db, read_only=True) as store, TestClient(create_app(store)) as client:
        yield client


@pytest.fixture(scope="session")
def hostile_client(hostile_db: Path) -> Iterator[TestClient]:
    with fe.Store.open(hostile_db, read_only=True) as store, TestClient(create_app(store)) as client:
        yield client
