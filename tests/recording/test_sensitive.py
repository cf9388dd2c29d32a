"""Sensitive values never reach the disk: not the database, not the WAL, not a journal."""

from __future__ import annotations

import logging
import uuid
from pathlib import Path

import pytest

import forkline_es as fe

from .helpers import ARTIFACT


def _disk_bytes(db_path: Path) -> bytes:
    """Every byte of the database and its side files (-wal, -shm, -journal)."""
    files = [p for p in db_path.parent.iterdir() if p.name.startswith(db_path.name)]
    assert db_path in files
    return b"".join(p.read_bytes() for p in files)


def test_no_trace_of_a_sensitive_value_on_disk(db_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    secret = f"s1-{uuid.uuid4().hex}"
    keyed = f"s2-{uuid.uuid4().hex}"
    canary = f"c-{uuid.uuid4().hex}"  # a plain value: proves the grep sees what is written
    caplog.set_level(logging.DEBUG, logger="forkline_es")
    store = fe.Store.open(db_path, redaction=fe.RedactionPolicy.default())
    run = store.start_run(
        workflow="w", dry_run=True, inputs=fe.Sensitive({"token": secret}), trigger={"api_key": keyed}
    )
    run.begin_step("a", arguments=fe.Sensitive(secret))
    run.invoke("a", 1, "op", ARTIFACT, "not-dispatched", arguments={"api_key": keyed})
    run.result("a", 1, "succeeded", result=fe.Sensitive([secret]), details=canary)
    run.end_step("a", "succeeded", binding=fe.Partial(fe.Sensitive({"x": secret}), suppressed=[["x"]]))
    with pytest.raises(fe.InvalidValue):  # refused, and the refusal leaks nothing either
        run.begin_step("b", arguments={"k": fe.Sensitive(secret), "bad": float("nan")})
    run.conclude("succeeded", outputs=fe.Sensitive(secret))

    live = _disk_bytes(db_path)  # the WAL is still there while the store is open
    assert db_path.with_name(db_path.name + "-wal").exists()
    step = store.get_step_record(run.id, "a")
    record = store.get_run_record(run.id)
    store.close()
    closed = _disk_bytes(db_path)
    for data in (live, closed):
        assert secret.encode() not in data and keyed.encode() not in data
    assert canary.encode() in live
    assert secret not in caplog.text and keyed not in caplog.text

    assert record["payloads"]["inputs"]["state"] == "withheld"
    assert record["payloads"]["trigger"]["state"] == "withheld"
    assert record["payloads"]["outputs"]["state"] == "withheld"
    assert step["payloads"]["arguments"]["state"] == "withheld"
    assert step["payloads"]["result"]["state"] == "withheld"
    assert step["payloads"]["binding"] == {"class": "results", "state": "withheld", "suppressed": [["x"]]}
    assert step["payloads"]["details"]["state"] == "present"
    invoke = next(e for e in record["entries"] if e["kind"] == "invoke")
    assert invoke["payloads"]["arguments"]["state"] == "withheld"
    assert "value" not in invoke["payloads"]["arguments"]


def test_without_a_policy_a_credential_shaped_value_is_recorded(db_path: Path) -> None:
    keyed = f"s2-{uuid.uuid4().hex}"
    with fe.Store.open(db_path) as store:
        run = store.start_run(workflow="w", trigger={"api_key": keyed})
        assert store.get_run_record(run.id)["payloads"]["trigger"]["state"] == "present"
    assert keyed.encode() in _disk_bytes(db_path)


def test_not_recorded_and_partial_slots(store: fe.Store) -> None:
    run = store.start_run(workflow="w", dry_run=True, inputs=fe.NOT_RECORDED)
    run.begin_step("a", arguments=fe.Partial({"a": 1, "b": [1, 2]}, suppressed=[["c"], ["b", 2]]))
    step = store.get_step_record(run.id, "a")
    assert store.get_run_record(run.id)["payloads"]["inputs"] == {"class": "inputs", "state": "not-recorded"}
    arguments = step["payloads"]["arguments"]
    assert arguments["state"] == "present" and arguments["suppressed"] == [["c"], ["b", 2]]
    assert fe.decode_value(arguments["value"]) == {"a": 1, "b": [1, 2]}
