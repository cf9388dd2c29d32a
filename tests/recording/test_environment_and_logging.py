"""The environment snapshot at start, and one structured log event per meaningful action."""

from __future__ import annotations

import json
import logging
import os
import platform
import socket
import subprocess
import sys

import pytest

import forkline_es as fe


def test_the_start_event_records_the_environment(store: fe.Store) -> None:
    run = store.start_run(workflow="w")
    (body,) = (
        store.backend.cursor()
        .execute("SELECT body FROM log WHERE run_id = ? AND kind = 'run-started'", (run.id,))
        .fetchall()[0]
    )
    env = json.loads(body)["env"]
    assert env == {
        "python_version": platform.python_version(),
        "platform": platform.platform(),
        "cwd": os.getcwd(),
        "hostname": socket.gethostname(),
        "forkline_es_version": fe.__version__,
    }


def _events(caplog: pytest.LogCaptureFixture) -> list[dict[str, object]]:
    return [json.loads(r.getMessage()) for r in caplog.records if r.name.startswith("forkline_es")]


def test_start_recovery_conclude_and_refusals_are_logged(
    store: fe.Store, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="forkline_es")
    run = store.start_run(workflow="w", run_id="r")
    with pytest.raises(fe.Conflict):
        store.start_run(workflow="other", run_id="r")
    run.begin_step("a")
    with pytest.raises(fe.Conflict):
        run.end_step("b", "succeeded")
    with pytest.raises(fe.InvalidRequest):
        run.invoke("a", 0, "op", "sha256:" + "0" * 64, "not-dispatched")
    run.recover([2])
    run.conclude("failed", code="E")
    events = _events(caplog)
    names = [e["event"] for e in events]
    assert names == ["run_started", "refused", "refused", "refused", "recovered", "concluded"]
    started, refused_start, refused_end, refused_invoke, recovered, concluded = events
    assert started["run_id"] == "r" and started["workflow"] == "w"
    assert (refused_start["call"], refused_start["run_id"]) == ("start_run", "r")
    assert (refused_end["call"], refused_end["code"]) == ("end_step", "conflict")
    assert (refused_invoke["call"], refused_invoke["code"]) == ("invoke", "invalid-request")
    assert (recovered["generation"], recovered["supersedes"]) == (1, [2])
    assert (concluded["status"], concluded["generation"]) == ("failed", 1)


def test_nothing_is_printed_by_default(tmp_path: os.PathLike[str]) -> None:
    script = (
        "import forkline_es as fe, os\n"
        f"s = fe.Store.open(os.path.join({str(tmp_path)!r}, 'r.db'))\n"
        "r = s.start_run(workflow='w')\n"
        "r.begin_step('a')\n"
        "try:\n    r.end_step('b', 'succeeded')\nexcept fe.Conflict:\n    pass\n"
        "r.recover([]); r.conclude('succeeded')\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, check=True)
    assert out.stdout == b"" and out.stderr == b""
