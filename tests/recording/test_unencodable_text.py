"""Identifiers UTF-8 cannot encode (lone surrogates) get coded refusals, never a UnicodeEncodeError.

Python strings may hold lone surrogates (``os.fsdecode`` of a stray byte, click's argv,
a bad JSON ``\\ud800``); SQLite and the encoder cannot take them, so every entry point
refuses them as ``invalid-request`` before anything is bound or written.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import forkline_es as fe
from forkline_es.cli import main

from .helpers import snapshot

LONE = "run\udcff"
DIGEST = "sha256:" + "ab" * 32

STORE_CALLS: list[tuple[str, Callable[[fe.Store], Any]]] = [
    ("list_runs", lambda s: s.list_runs(LONE)),
    ("get_run_record", lambda s: s.get_run_record(LONE)),
    ("export_run_record", lambda s: s.export_run_record(LONE)),
    ("get_step_record", lambda s: s.get_step_record(LONE, "a")),
    ("resume_run", lambda s: s.resume_run(LONE)),
    ("start_run workflow", lambda s: s.start_run(LONE)),
    ("start_run run_id", lambda s: s.start_run("wf", run_id=LONE)),
    ("start_run name", lambda s: s.start_run("wf", name=LONE)),
    ("start_run pins", lambda s: s.start_run("wf", pins={LONE: DIGEST})),
    ("evict_run", lambda s: s.evict_run(LONE, reason="test")),
    ("register_consumer", lambda s: s.register_consumer(LONE)),
    ("metrics", lambda s: s.metrics(LONE, "latency")),
    ("verify_run", lambda s: s.verify_run(LONE)),
    ("verify_run, empty id", lambda s: s.verify_run("")),
]


@pytest.mark.parametrize(("what", "call"), STORE_CALLS, ids=[w for w, _ in STORE_CALLS])
def test_store_calls_refuse_unencodable_text(
    store: fe.Store, what: str, call: Callable[[fe.Store], Any]
) -> None:
    store.start_run("wf", run_id="r1").conclude("succeeded")
    before = snapshot(store)
    with pytest.raises(fe.InvalidRequest) as refused:
        call(store)
    assert refused.value.code == "invalid-request"
    assert snapshot(store) == before


def test_the_recorder_refuses_writes_and_finds_nothing_to_read(tmp_path: Path) -> None:
    recorder = fe.RunRecorder(db_path=tmp_path / "runs.db")
    run_id = recorder.start_run("main.py")
    for call in (
        lambda: recorder.start_run(LONE),
        lambda: recorder.start_run("main.py", run_id=LONE),
        lambda: recorder.log_event(run_id, LONE, {}),
        lambda: recorder.log_event(LONE, "input", {}),
        lambda: recorder.end_run(LONE),
    ):
        with pytest.raises(fe.InvalidRequest):
            call()
    assert recorder.get_run(LONE) is None  # as for any id no run has
    assert recorder.get_events(LONE) == []
    assert recorder.get_events(run_id) == []


def test_the_command_line_refuses_with_exit_2(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    fe.Store.open(db).close()
    for args in (["runs", "--workflow", LONE], ["show", LONE], ["step", LONE, "a"], ["log", LONE]):
        result = CliRunner().invoke(main, [*args, "--db", str(db)])
        assert result.exit_code == 2, (args, result.output)
        assert "invalid-request" in result.output
