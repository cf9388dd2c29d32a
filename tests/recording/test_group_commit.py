"""Group commit (``log.group``): threads of one store share transactions; each keeps its own
outcome, and nothing acknowledged is lost to a SIGKILL."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import apsw
import pytest

import forkline_es as fe
from forkline_es.log.group import GroupCommit
from forkline_es.log.rows import NewRow

THREADS = 8


def _record_in_threads(store: fe.Store, per: int) -> dict[str, list[int]]:
    runs = [store.start_run(workflow="group", run_id=f"t-{t}") for t in range(THREADS)]
    barrier = threading.Barrier(THREADS)
    got: dict[str, list[int]] = {}
    errors: list[BaseException] = []

    def record(run: fe.Run) -> None:
        try:
            barrier.wait()
            got[run.id] = [run.begin_step(f"s/{i}", arguments={"i": i}) for i in range(per)]
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    workers = [threading.Thread(target=record, args=(r,)) for r in runs]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors
    return got


@pytest.mark.parametrize("durability", ["normal", "full"])
def test_threads_share_transactions_and_every_event_is_kept(tmp_path: Path, durability: str) -> None:
    per = 60
    with fe.Store.open(tmp_path / "g.db", durability=durability) as store:  # type: ignore[arg-type]
        got = _record_in_threads(store, per)
        group = store.log.group
        assert group.batches == THREADS * (per + 1)
        assert group.transactions < group.batches  # some commits held several callers
        for run_id, entries in got.items():
            assert entries == list(range(2, per + 2))  # each call returned its own entry
            record = store.get_run_record(run_id)
            assert [e["step"]["path"] for e in record["entries"][1:]] == [f"s/{i}" for i in range(per)]
        assert store.check_projections() == []
        assert all(not r.problems for r in store.verify_all())


def test_reads_of_another_thread_meanwhile_see_only_committed_rows(tmp_path: Path) -> None:
    with fe.Store.open(tmp_path / "g.db") as store:
        store.start_run(workflow="group", run_id="watched")
        seen: list[int] = []
        errors: list[BaseException] = []
        stop = threading.Event()

        def read() -> None:
            try:
                while not stop.is_set():
                    seen.append(
                        len(store.get_run_record("t-0")["entries"])
                        if store.list_runs(workflow="group", limit=100)
                        and any(r["id"] == "t-0" for r in store.list_runs(workflow="group"))
                        else 0
                    )
                    store.log.eviction("t-0")  # a statement outside any transaction
            except BaseException as e:  # pragma: no cover - reported below
                errors.append(e)

        reader = threading.Thread(target=read)
        reader.start()
        try:
            _record_in_threads(store, 40)
        finally:
            stop.set()
            reader.join()
        assert not errors, errors
        assert seen == sorted(seen) and len(seen) > 1  # never a row that later went away


def test_one_callers_conflict_rolls_back_only_its_own_rows(tmp_path: Path) -> None:
    """A group holding a taken seq: that caller gets the conflict, the others commit."""
    with fe.Store.open(tmp_path / "g.db") as store:
        run = store.start_run(workflow="group", run_id="mine")
        run.begin_step("a")
        backend = store.log.backend
        taken = list(store.log.read_run("mine"))[-1]  # its (run_id, seq) is in the log already
        clash = NewRow(
            "mine", taken.seq, None, 0, "run-suspended", taken.at, "k", b"{}", "sha256:" + "0" * 64, None, ()
        )
        other = store.start_run(workflow="group", run_id="other")
        fresh = other.begin_step("b")  # commit one first, then build the next row by hand
        assert fresh == 2
        outcomes = backend.append_group([([clash], None), ([], None)])  # type: ignore[attr-defined]
        assert isinstance(outcomes[0], fe.Conflict)
        assert outcomes[1] == ([], None)
        assert [r.seq for r in store.log.read_run("mine")] == [1, 2]
        run.end_step("a", "succeeded")  # the handle is still good: nothing of the clash stayed
        assert [r.kind for r in store.log.read_run("mine")][-1] == "step-ended"


def test_a_failing_fold_fails_its_caller_only(tmp_path: Path) -> None:
    """Threads meet in one group; one caller's fold raises: only it fails, with no row kept."""
    with fe.Store.open(tmp_path / "g.db") as store:
        group = GroupCommit(store.log.backend)
        base = store.start_run(workflow="group", run_id="base")
        rows = list(store.log.read_run("base"))
        assert len(rows) == 1
        started = threading.Event()
        release = threading.Event()
        outcome: dict[str, object] = {}

        def slow_fold(cur: object) -> str:
            started.set()
            release.wait(5)
            return "slow"

        def boom(cur: object) -> None:
            raise ValueError("fold refused")

        def call(name: str, then: object) -> None:
            try:
                outcome[name] = group.append([], then)  # type: ignore[arg-type]
            except BaseException as e:
                outcome[name] = e

        first = threading.Thread(target=call, args=("first", slow_fold))
        first.start()
        assert started.wait(5)  # the first caller leads and holds the transaction
        later = [
            threading.Thread(target=call, args=(n, boom if n == "bad" else None)) for n in ("bad", "good")
        ]
        for t in later:
            t.start()
        time.sleep(0.2)  # both queue behind the leader
        release.set()
        for t in (first, *later):
            t.join(5)
        assert outcome["first"] == ([], "slow")
        assert isinstance(outcome["bad"], ValueError)
        assert outcome["good"] == ([], None)
        assert group.transactions == 2 and group.batches == 3  # bad and good in one
        assert base.id == "base"


_KILLED = textwrap.dedent(
    """
    import sys, threading
    import forkline_es as fe
    path, durability = sys.argv[1], sys.argv[2]
    store = fe.Store.open(path, durability=durability)
    lock = threading.Lock()

    def record(t):
        run = store.start_run(workflow="killed", run_id=f"k-{t}")
        i = 0
        while True:
            entry = run.begin_step(f"s/{i}", arguments={"i": i})
            with lock:
                sys.stdout.write(f"{run.id} {entry}\\n")
                sys.stdout.flush()
            i += 1

    for t in range(8):
        threading.Thread(target=record, args=(t,), daemon=True).start()
    threading.Event().wait()
    """
)


@pytest.mark.parametrize("durability", ["normal", "full"])
def test_sigkill_loses_no_acknowledged_event_of_any_thread(tmp_path: Path, durability: str) -> None:
    for attempt in range(3):
        db = tmp_path / f"k{attempt}.db"
        proc = subprocess.Popen(
            [sys.executable, "-c", _KILLED, str(db), durability], stdout=subprocess.PIPE, bufsize=0
        )
        assert proc.stdout is not None
        # a loaded machine may take long to get several threads under way: wait up to 120 s
        first, seen, deadline = b"", set[bytes](), time.monotonic() + 120
        while len(seen) < 3 and time.monotonic() < deadline:  # several threads under way
            got = proc.stdout.readline()
            first += got
            seen.add(got.split()[0])
        time.sleep(0.05 + 0.1 * attempt)
        os.kill(proc.pid, signal.SIGKILL)
        out = first + proc.stdout.read()
        proc.wait()
        lines = out.decode().splitlines()
        if lines and not out.endswith(b"\n"):
            lines.pop()  # torn by the kill: never a whole acknowledgement
        acked: dict[str, int] = {}
        for line in lines:
            run_id, text = line.split()
            acked[run_id] = max(acked.get(run_id, 0), int(text))
        assert len(acked) >= 2, out  # several threads acknowledged before the kill
        conn = apsw.Connection(str(db))
        kept: dict[str, int] = dict(
            conn.execute("SELECT run_id, max(entry) FROM log GROUP BY run_id").fetchall()
        )
        conn.close()
        for run_id, entry in acked.items():
            assert kept[run_id] >= entry, (run_id, entry, kept[run_id])
        with fe.Store.open(db) as store:  # the file is whole: verify and a refold agree
            assert store.check_projections() == []
            assert all(not r.problems for r in store.verify_all())
