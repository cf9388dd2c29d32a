"""Run checkpoints (``recording.checkpoint``): a handle resumed from one is the handle a
full fold of the log gives, and a checkpoint that does not stand for the log is not used."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator

import pytest
from hypothesis import settings
from hypothesis.stateful import invariant, run_state_machine_as_test

import forkline_es as fe
from forkline_es.errors import RecordError
from forkline_es.recording import checkpoint
from forkline_es.recording.state import RunState
from forkline_es.testing.backends import FreshStores, on_backend
from forkline_es.testing.histories import ARTIFACT, HistoryMachine

from .helpers import columns, full_fold


@pytest.fixture
def small_pieces(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A checkpoint every 4 rows, paths saved 2 a piece: short histories cross many."""
    monkeypatch.setattr(checkpoint, "EVERY", 4)
    monkeypatch.setattr(checkpoint, "PATHS_PER_PIECE", 2)
    yield


def refusals(state: RunState) -> list[str | None]:
    """What the state answers to the next calls a recorder could make: the same refusals."""
    out: list[str | None] = []
    paths = [state._paths.text(n) for n in range(len(state._paths))] + ["new/0"]
    checks = [
        lambda: state.check_status_change("suspended"),
        lambda: state.check_status_change("held"),
        lambda: state.check_status_change("active"),
        lambda: state.check_conclude("succeeded", True),
        lambda: state.check_recover(list(range(1, state.entries + 1))),
        lambda: state.check_recover([f.seq for f in state.in_flight()]),
        lambda: state.check_artifact("a.txt", "sha256:" + "1" * 64),
        lambda: state.check_manifest(ARTIFACT),
        lambda: state.check_child("x", "run-001"),
    ]
    for path in paths:
        checks += [
            lambda p=path: state.check_begin(p),
            lambda p=path: state.check_invoke(p, state.next_attempt(p), "not-dispatched"),
            lambda p=path: state.check_invoke(p, 1, "ambiguous"),
            lambda p=path: state.check_result(p, 1, "succeeded"),
            lambda p=path: state.check_end(p, "succeeded"),
            lambda p=path: state.check_end(p, "skipped"),
        ]
    for check in checks:
        try:
            check()
            out.append(None)
        except RecordError as e:
            out.append(f"{e.code}: {e.message}")
    return out


class CheckpointMachine(HistoryMachine):
    """Histories with crashes, recoveries, supersessions, children, holds and concluded
    runs, on a database a second store shares: every run resumed (from its checkpoint)
    equals its full fold and its live handle, and answers the next calls the same."""

    def open_store(self) -> fe.Store:
        assert self.fresh is not None
        self.location = self.fresh.location()
        return self.fresh.open(self.location)

    def open_others(self, store: fe.Store) -> list[fe.Store]:
        assert self.fresh is not None
        return [self.fresh.open(self.location)]

    @invariant()
    def resumed_equals_full_fold(self) -> None:
        for run_id, handle in self.handles.items():
            seq = handle._state.seq
            if seq > checkpoint.EVERY:  # the append of row EVERY * k + 1 wrote one, and it holds
                with self.store.log.snapshot() as cur:
                    assert checkpoint.load(cur, run_id, RunState(run_id=run_id))
                    stored = cur.execute("SELECT seq FROM run_checkpoint WHERE run_id = ?", (run_id,))
                    assert stored.fetchall()[0][0] == (seq - 1) // checkpoint.EVERY * checkpoint.EVERY
            resumed = self.stores[-1].resume_run(run_id)._state
            expected = full_fold(self.store, run_id)
            assert columns(resumed) == columns(expected) == columns(handle._state)
            assert refusals(resumed) == refusals(expected)


def test_a_resumed_handle_equals_a_full_fold(fresh_stores: FreshStores, small_pieces: None) -> None:
    run_state_machine_as_test(
        on_backend(CheckpointMachine, fresh_stores),
        settings=settings(
            max_examples=fresh_stores.examples(settings().max_examples), stateful_step_count=30
        ),
    )


def _long_run(store: fe.Store, steps: int) -> fe.Run:
    run = store.start_run("wf", run_id="r")
    for i in range(steps):
        run.begin_step(f"s/{i}")
        run.end_step(f"s/{i}", "succeeded")
    return run


def _stored(store: fe.Store) -> tuple[int, int]:
    with store.log.snapshot() as cur:
        seq = cur.execute("SELECT seq FROM run_checkpoint WHERE run_id = 'r'").fetchall()[0][0]
        pieces = cur.execute("SELECT count(*) FROM run_checkpoint_piece WHERE run_id = 'r'").fetchall()[0][0]
    return int(seq), int(pieces)


def test_checkpoints_are_written_at_multiples_of_every(store: fe.Store, small_pieces: None) -> None:
    run = _long_run(store, 10)  # 21 rows
    assert _stored(store)[0] == 20
    with run.batch():  # a batch that crosses 24 carries the checkpoint at 24
        for i in range(10, 13):
            run.begin_step(f"s/{i}")
            run.end_step(f"s/{i}", "succeeded")
    assert run._state.seq == 27 and _stored(store)[0] == 24
    resumed = store.resume_run("r")._state
    assert columns(resumed) == columns(full_fold(store, "r")) == columns(run._state)
    with run.batch():  # one that crosses 28 and 32 carries the later one, with what both hold
        run.recover([])  # 28
        for i in range(13, 16):
            run.begin_step(f"s/{i}")
            run.end_step(f"s/{i}", "succeeded")
    assert run._state.seq == 34 and _stored(store)[0] == 32
    assert columns(store.resume_run("r")._state) == columns(full_fold(store, "r")) == columns(run._state)
    with pytest.raises(RuntimeError), run.batch():  # a batch that is not written writes no checkpoint
        for i in range(16, 18):
            run.begin_step(f"s/{i}")
            run.end_step(f"s/{i}", "succeeded")
        raise RuntimeError("the executor gave up")
    assert _stored(store)[0] == 32
    assert columns(store.resume_run("r")._state) == columns(run._state)


def test_the_log_row_at_the_checkpoint_must_carry_its_digest(
    store: fe.Store, small_pieces: None, caplog: pytest.LogCaptureFixture
) -> None:
    run = _long_run(store, 5)
    with store.log.transaction("test") as cur:
        cur.execute("UPDATE run_checkpoint SET digest = ? WHERE run_id = 'r'", ("sha256:" + "0" * 64,))
    assert _used_checkpoint(store) is False
    caplog.set_level(logging.WARNING, logger="forkline_es")
    assert columns(store.resume_run("r")._state) == columns(run._state)
    warned = [json.loads(r.getMessage()) for r in caplog.records if r.name.startswith("forkline_es")]
    assert [(w["event"], w["run_id"], w["level"]) for w in warned] == [
        ("checkpoint_not_used", "r", "warning")
    ]
    assert "row 8" in str(warned[0]["reason"])


@pytest.mark.parametrize(
    "damage",
    [
        "UPDATE run_checkpoint SET head = ? WHERE run_id = 'r'",
        "UPDATE run_checkpoint_piece SET data = ? WHERE run_id = 'r' AND piece = 0",
        "UPDATE run_checkpoint_piece SET data = ? WHERE run_id = 'r' AND piece = -1",
    ],
)
def test_a_corrupted_checkpoint_is_not_used(store: fe.Store, small_pieces: None, damage: str) -> None:
    run = _long_run(store, 5)
    with store.log.transaction("test") as cur:
        cur.execute(damage, (b"\x93\x01\x02",))
    assert _used_checkpoint(store) is False
    resumed = store.resume_run("r")
    assert columns(resumed._state) == columns(run._state)
    assert refusals(resumed._state) == refusals(run._state)
    for i in range(5, 8):  # and the handle writes a whole checkpoint again
        resumed.begin_step(f"s/{i}")
        resumed.end_step(f"s/{i}", "succeeded")
    assert _used_checkpoint(store) is True
    assert columns(store.resume_run("r")._state) == columns(resumed._state)


def test_a_checkpoint_of_another_format_is_not_used(store: fe.Store, small_pieces: None) -> None:
    _long_run(store, 5)
    with store.log.transaction("test") as cur:
        cur.execute("UPDATE run_checkpoint SET format = ? WHERE run_id = 'r'", (checkpoint.FORMAT + 1,))
    assert _used_checkpoint(store) is False


def test_a_lost_piece_is_not_used(store: fe.Store, small_pieces: None) -> None:
    _long_run(store, 5)
    with store.log.transaction("test") as cur:
        cur.execute("DELETE FROM run_checkpoint_piece WHERE run_id = 'r' AND piece = 1")
    assert _used_checkpoint(store) is False


def test_a_concluded_run_refuses_the_same_after_a_checkpoint(store: fe.Store, small_pieces: None) -> None:
    run = _long_run(store, 2)
    run.conclude("succeeded")  # row 6
    for i in range(5):
        run.observe("m", i, step=None, key=f"o{i}")  # an observation is no entry: rows 7..11
    resumed = store.resume_run("r")
    assert _used_checkpoint(store) is True
    with pytest.raises(fe.Conflict, match="concluded"):
        resumed.begin_step("late")
    assert resumed.observe("m", 0, key="o0") == 7  # a repeat answers the original


def test_eviction_deletes_the_checkpoint(store: fe.Store, small_pieces: None) -> None:
    run = _long_run(store, 5)
    run.conclude("succeeded")
    store.evict_run("r", reason="test")
    with store.log.snapshot() as cur:
        for table in ("run_checkpoint", "run_checkpoint_piece"):
            assert cur.execute(f"SELECT count(*) FROM {table}").fetchall()[0][0] == 0
    with pytest.raises(fe.RunNotRetained):
        store.resume_run("r")


def _used_checkpoint(store: fe.Store) -> bool:
    """Whether resume_run would take the stored checkpoint."""
    with store.log.snapshot() as cur:
        try:
            return checkpoint.load(cur, "r", RunState(run_id="r"))
        except checkpoint.Mismatch:
            return False


def test_a_refused_append_at_a_checkpoint_writes_none(store: fe.Store, small_pieces: None) -> None:
    """The loser of a seq race at the checkpoint seq writes nothing; the winner's stands."""
    run = store.start_run("wf", run_id="r")
    run.begin_step("a")
    run.end_step("a", "succeeded")
    run.begin_step("b")  # row 4
    other = store.resume_run("r")
    run.end_step("b", "succeeded")  # row 5 carries the checkpoint at 4
    with pytest.raises(fe.Conflict):
        other.begin_step("c")  # row 5 again: refused, its checkpoint with it
    assert other._state._path_low <= 1  # what it had to save is still to save
    assert _stored(store)[0] == 4
    assert columns(store.resume_run("r")._state) == columns(run._state) == columns(full_fold(store, "r"))
