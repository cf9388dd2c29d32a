"""The defaults of Store.open and start_run are the documented ones: callers omit them."""

from __future__ import annotations

import re
from pathlib import Path

import forkline_es as fe


def test_a_start_with_only_a_workflow_has_the_documented_defaults(store: fe.Store) -> None:
    run = store.start_run("billing/invoice")
    assert re.fullmatch(r"[0-9a-f]{32}", run.id)  # generated: a UUID's hex
    doc = store.get_run_record(run.id)
    assert doc["standard"] == "1.0"
    assert doc["run"]["dry_run"] is False and doc["run"]["parent"] is None
    assert doc["payloads"] == {  # inputs={} is still a payload; no trigger slot at all
        "inputs": {"class": "inputs", "state": "present", "value": {"kind": "map", "value": {}}}
    }


def test_the_default_durability_is_wal_with_synchronous_normal(db_path: Path) -> None:
    """decisions.md, Durability: full (one fsync per commit) only when asked for."""
    with fe.Store.open(db_path) as store:
        assert store.conn.execute("PRAGMA journal_mode").fetchall() == [("wal",)]
        assert store.conn.execute("PRAGMA synchronous").fetchall() == [(1,)]  # NORMAL
    with fe.Store.open(db_path, durability="full") as store:
        assert store.conn.execute("PRAGMA synchronous").fetchall() == [(2,)]  # FULL
