"""Odd values given to every public Store, Run and RunRecorder method: only forkline_es
errors escape (never ValueError, TypeError, OverflowError, RecursionError, ...), and a
refused call writes nothing (issue 20, item 12)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import forkline_es as fe

from .helpers import ARTIFACT

HUGE = 10**5000  # past Python's 4,300-digit int <-> str limit


def _deep(levels: int) -> Any:
    value: Any = 1
    for _ in range(levels):
        value = [value]
    return value


def _cycle() -> list[Any]:
    loop: list[Any] = []
    loop.append(loop)
    return loop


class _BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


ODD_SCALARS = [
    HUGE,
    -HUGE,
    2**63,
    2**64,
    -(2**63) - 1,
    2**70,
    -1,
    0,
    True,
    float("nan"),
    float("inf"),
    -0.0,
    1e308,
    "",
    "a\x00b",
    "\ud800",
    "\x1b]0;title\x07",
    "x" * 5000,
    b"bytes",
    None,
    object(),
    _BadRepr(),
    {1, 2},
    fe.Duration(HUGE),
    fe.Duration(2**70),
    timedelta(days=999_999_999),
]
ODD_CONTAINERS = [
    [HUGE],
    {"k": HUGE},
    {"a\x00": 1},
    {"\ud800": 1},
    {1: 2},
    [float("nan")],
    _deep(100_000),
    _cycle(),
    {"case": "\ud800"},
    {"arm": HUGE},
    {"arm": 2**64},
    [[HUGE]],
    [["\ud800"]],
    ("a", 1),
]
ODD = ODD_SCALARS + ODD_CONTAINERS


def _open_in(folder: Path, path: Any) -> None:
    """``Store.open(path)`` with relative names landing in ``folder``, not in the test's cwd."""
    with contextlib.chdir(folder):
        fe.Store.open(path).close()


Call = Callable[[fe.Store, Any, fe.RunRecorder, Any], Any]

CALLS: dict[str, Call] = {
    # Store: opening and recording
    "open path": lambda s, r, rr, v: _open_in(Path(s.path).parent, v),
    "open durability": lambda s, r, rr, v: fe.Store.open(":memory:", durability=v).close(),
    "open redaction": lambda s, r, rr, v: fe.Store.open(":memory:", redaction=v).close(),
    "open max_payload_bytes": lambda s, r, rr, v: fe.Store.open(":memory:", max_payload_bytes=v).close(),
    "start_run workflow": lambda s, r, rr, v: s.start_run(v),
    "start_run standard": lambda s, r, rr, v: s.start_run("w", standard=v),
    "start_run name": lambda s, r, rr, v: s.start_run("w", name=v),
    "start_run inputs": lambda s, r, rr, v: s.start_run("w", inputs=v),
    "start_run trigger": lambda s, r, rr, v: s.start_run("w", trigger=v),
    "start_run dry_run": lambda s, r, rr, v: s.start_run("w", dry_run=v),
    "start_run parent": lambda s, r, rr, v: s.start_run("w", parent=v),
    "start_run predecessor": lambda s, r, rr, v: s.start_run("w", predecessor=v),
    "start_run pins": lambda s, r, rr, v: s.start_run("w", pins=v),
    "start_run run_id": lambda s, r, rr, v: s.start_run("w", run_id=v),
    "start_run key": lambda s, r, rr, v: s.start_run("w", key=v),
    "start_run partial": lambda s, r, rr, v: s.start_run("w", dry_run=True, inputs=fe.Partial({}, [[v]])),
    "resume_run": lambda s, r, rr, v: s.resume_run(v),
    # Store: reading
    "list_runs": lambda s, r, rr, v: s.list_runs(v),
    "get_run_record": lambda s, r, rr, v: s.get_run_record(v),
    "get_step_record run": lambda s, r, rr, v: s.get_step_record(v, "s"),
    "get_step_record path": lambda s, r, rr, v: s.get_step_record("r", v),
    "export_run_record": lambda s, r, rr, v: s.export_run_record(v),
    "metrics workflow": lambda s, r, rr, v: s.metrics(v, "m"),
    "metrics name": lambda s, r, rr, v: s.metrics("w", v),
    "verify_run": lambda s, r, rr, v: s.verify_run(v),
    "verify_run anchors": lambda s, r, rr, v: s.verify_run("done", v),
    "verify_all anchors": lambda s, r, rr, v: s.verify_all(anchors=v),
    # Store: retention and the feed
    "evict_run run": lambda s, r, rr, v: s.evict_run(v, "why"),
    "evict_run reason": lambda s, r, rr, v: s.evict_run("done", v),
    "remove_payloads run": lambda s, r, rr, v: s.remove_payloads(v),
    "remove_payloads classes": lambda s, r, rr, v: s.remove_payloads("done", v),
    "purge_tombstones": lambda s, r, rr, v: s.purge_tombstones(v),
    "retention keep_last": lambda s, r, rr, v: s.apply_retention(fe.RetentionPolicy(keep_last=v)),
    "retention max_age": lambda s, r, rr, v: s.apply_retention(fe.RetentionPolicy(max_age=v)),
    "register_consumer": lambda s, r, rr, v: s.register_consumer(v),
    "register_consumer since": lambda s, r, rr, v: s.register_consumer("c", since=v),
    "unregister_consumer": lambda s, r, rr, v: s.unregister_consumer(v),
    "completions consumer": lambda s, r, rr, v: s.completions(v),
    "completions after": lambda s, r, rr, v: s.completions(after=v),
    "completions limit": lambda s, r, rr, v: s.completions(limit=v),
    "acknowledge consumer": lambda s, r, rr, v: s.acknowledge(v, 1),
    "acknowledge position": lambda s, r, rr, v: s.acknowledge("c", v),
    "gc artifact_grace_seconds": lambda s, r, rr, v: s.gc(v),
    # Run
    "begin_step path": lambda s, r, rr, v: r.begin_step(v),
    "begin_step arguments": lambda s, r, rr, v: r.begin_step("b", arguments=v),
    "begin_step key": lambda s, r, rr, v: r.begin_step("b", key=v),
    "invoke path": lambda s, r, rr, v: r.invoke(v, 1, "op", ARTIFACT, "not-dispatched"),
    "invoke attempt": lambda s, r, rr, v: r.invoke("s", v, "op", ARTIFACT, "not-dispatched"),
    "invoke operation": lambda s, r, rr, v: r.invoke("s", 2, v, ARTIFACT, "not-dispatched"),
    "invoke artifact": lambda s, r, rr, v: r.invoke("s", 2, "op", v, "not-dispatched"),
    "invoke dispatch": lambda s, r, rr, v: r.invoke("s", 2, "op", ARTIFACT, v),
    "invoke arguments": lambda s, r, rr, v: r.invoke("s", 2, "op", ARTIFACT, "ambiguous", arguments=v),
    "result attempt": lambda s, r, rr, v: r.result("s", v, "succeeded"),
    "result dispatch": lambda s, r, rr, v: r.result("s", 1, v),
    "result code": lambda s, r, rr, v: r.result("s", 1, "failed", code=v),
    "result result": lambda s, r, rr, v: r.result("s", 1, "succeeded", result=v),
    "result details": lambda s, r, rr, v: r.result("s", 1, "succeeded", details=v),
    "end_step outcome": lambda s, r, rr, v: r.end_step("s", v),
    "end_step code": lambda s, r, rr, v: r.end_step("s", "failed", code=v),
    "end_step branch": lambda s, r, rr, v: r.end_step("s", "succeeded", branch=v),
    "end_step branch arm": lambda s, r, rr, v: r.end_step("s", "succeeded", branch={"arm": v}),
    "end_step binding": lambda s, r, rr, v: r.end_step("s", "succeeded", binding=v),
    "child": lambda s, r, rr, v: r.child("s", v),
    "suspend reason": lambda s, r, rr, v: r.suspend(v),
    "hold code": lambda s, r, rr, v: r.hold(code=v),
    "hold step": lambda s, r, rr, v: r.hold(step=v),
    "hold reason": lambda s, r, rr, v: r.hold(reason=v),
    "resume key": lambda s, r, rr, v: r.resume(key=v),
    "recover": lambda s, r, rr, v: r.recover(v),
    "recover entry": lambda s, r, rr, v: r.recover([v]),
    "conclude status": lambda s, r, rr, v: r.conclude(v),
    "conclude reason": lambda s, r, rr, v: r.conclude("failed", reason=v),
    "conclude outputs": lambda s, r, rr, v: r.conclude("succeeded", outputs=v),
    "add_artifact source": lambda s, r, rr, v: r.add_artifact(v, "report"),
    "add_artifact kind": lambda s, r, rr, v: r.add_artifact(b"x", v),
    "add_artifact name": lambda s, r, rr, v: r.add_artifact(b"x", "report", name=v),
    "record_manifest fact": lambda s, r, rr, v: r.record_manifest(fact=v),
    "record_manifest config": lambda s, r, rr, v: r.record_manifest(config=v),
    "record_manifest packages": lambda s, r, rr, v: r.record_manifest(packages=v),
    "observe name": lambda s, r, rr, v: r.observe(v, 1),
    "observe value": lambda s, r, rr, v: r.observe("m", v),
    "observe unit": lambda s, r, rr, v: r.observe("m2", 1, unit=v),
    # RunRecorder
    "recorder start_run": lambda s, r, rr, v: rr.start_run(v),
    "recorder start_run id": lambda s, r, rr, v: rr.start_run("e", run_id=v),
    "recorder log_event run": lambda s, r, rr, v: rr.log_event(v, "t", {}),
    "recorder log_event type": lambda s, r, rr, v: rr.log_event("fl", v, {}),
    "recorder log_event payload": lambda s, r, rr, v: rr.log_event("fl", "t", v),
    "recorder end_run run": lambda s, r, rr, v: rr.end_run(v),
    "recorder end_run status": lambda s, r, rr, v: rr.end_run("fl", v),
    "recorder get_run": lambda s, r, rr, v: rr.get_run(v),
    "recorder get_events": lambda s, r, rr, v: rr.get_events(v),
}

TABLES = ("log", "payload", "consumer", "eviction", "run_summary", "entry")


def written(store: fe.Store) -> tuple[Any, ...]:
    return tuple(tuple(store.conn.execute(f"SELECT * FROM {t}").fetchall()) for t in TABLES)


def setup(store: fe.Store, recorder: fe.RunRecorder) -> Any:
    """A run with an open invoke of `s` attempt 1, a concluded run `done`, a consumer `c`."""
    run = store.start_run("w", run_id="r")
    run.begin_step("s")
    run.invoke("s", 1, "op", ARTIFACT, "not-dispatched")
    store.start_run("w", run_id="done").conclude("succeeded")
    store.register_consumer("c")
    recorder.start_run("e", run_id="fl")
    return run


def attempt(store: fe.Store, run: Any, recorder: fe.RunRecorder, call: str, value: Any) -> None:
    """Make the call; a forkline_es refusal must leave every table as it was."""
    before = written(store)
    try:
        CALLS[call](store, run, recorder, value)
    except fe.ForklineError:
        assert written(store) == before, f"{call}: a refused call wrote something"
    # anything else propagates and fails the test


@pytest.mark.parametrize("call", sorted(CALLS))
def test_every_odd_value_is_accepted_or_refused_with_a_coded_error(tmp_path: Path, call: str) -> None:
    with fe.Store.open(tmp_path / "runs.db") as store, fe.RunRecorder(tmp_path / "runs.db") as recorder:
        run = setup(store, recorder)
        for value in ODD:
            attempt(store, run, recorder, call, value)


@pytest.mark.parametrize("call", sorted(CALLS))
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=st.text(max_size=12) | st.integers() | st.floats() | st.lists(st.integers(), max_size=3))
def test_random_values_are_accepted_or_refused_with_a_coded_error(
    tmp_path_factory: Any, call: str, value: Any
) -> None:
    db = tmp_path_factory.mktemp("odd") / "runs.db"
    with fe.Store.open(db) as store, fe.RunRecorder(db) as recorder:
        attempt(store, setup(store, recorder), recorder, call, value)


# The cases the issue names, one by one.


def test_numbers_beyond_sqlite_are_invalid_requests(tmp_path: Path) -> None:
    with fe.Store.open(tmp_path / "runs.db") as store, fe.RunRecorder(tmp_path / "runs.db") as recorder:
        run = setup(store, recorder)
        before = written(store)
        for call in (
            lambda: store.completions(limit=2**70),
            lambda: store.completions(after=2**63),
            lambda: store.acknowledge("c", HUGE),
            lambda: run.invoke("s", 2**63, "op", ARTIFACT, "not-dispatched"),
            lambda: run.invoke("s", HUGE, "op", ARTIFACT, "not-dispatched"),
            lambda: run.end_step("s", "succeeded", branch={"arm": 2**64}),
            lambda: run.recover([HUGE]),
        ):
            with pytest.raises(fe.InvalidRequest, match=r"2\*\*63 - 1|entry seq integers"):
                call()
        assert written(store) == before
        run.invoke("s", 2**63 - 1, "op", ARTIFACT, "not-dispatched")  # the largest is fine


def test_a_5000_digit_integer_is_recorded_where_values_go_and_refused_where_numbers_go(
    tmp_path: Path,
) -> None:
    with fe.Store.open(tmp_path / "runs.db") as store:
        run = store.start_run("w", run_id="r", inputs={"n": HUGE, "d": fe.Duration(HUGE)})
        assert store.get_run_record("r")["payloads"]["inputs"]["value"]["value"]["n"]["value"] == HUGE
        with pytest.raises(fe.InvalidValue, match="64-bit"):
            run.observe("m", HUGE)  # a metric is a 64-bit int or a float
        with pytest.raises(fe.InvalidValue, match="4,300 digits"):
            run.record_manifest(seed=HUGE)  # manifest facts live in the event body


@pytest.mark.parametrize("bad", [5, b"runs.db", "a\x00b.db", "", None])
def test_store_open_refuses_a_path_that_is_not_a_file_name(tmp_path: Path, bad: Any) -> None:
    with contextlib.chdir(tmp_path):
        with pytest.raises(fe.InvalidRequest, match="store path"):
            fe.Store.open(bad)
        assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "call",
    [
        lambda s, r: s.start_run("w", run_id="a\x00b"),
        lambda s, r: s.start_run("w\x00x"),
        lambda s, r: r.begin_step("b", key="k\x00"),
        lambda s, r: r.invoke("s", 2, "op\x00", ARTIFACT, "not-dispatched"),
        lambda s, r: r.end_step("s", "failed", code="c\x00"),
        lambda s, r: r.hold(code="c\x00"),
        lambda s, r: r.child("s", "kid\x00"),
        lambda s, r: r.end_step("s", "succeeded", branch={"case": "paid\x00evil"}),
        lambda s, r: s.evict_run("done", "gdpr\x00request", force=True),
    ],
)
def test_nul_is_refused_in_identifiers_keys_operations_and_codes(tmp_path: Path, call: Any) -> None:
    with fe.Store.open(tmp_path / "runs.db") as store, fe.RunRecorder(tmp_path / "runs.db") as recorder:
        run = setup(store, recorder)
        before = written(store)
        with pytest.raises(fe.InvalidRequest, match="without NUL"):
            call(store, run)
        with pytest.raises(fe.InvalidRequest, match="without NUL"):
            recorder.log_event("fl", "type\x00", {})
        assert written(store) == before
