"""Every rule of the write path refuses with the right coded error and writes nothing."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

import pytest

import forkline_es as fe

from .helpers import ARTIFACT, snapshot

Call = Callable[[fe.Run], Any]

NAN = float("nan")
LONE = "x\ud800"
MALFORMED = ["", "a//b", "/a", "a/", "01", "a b", "$", "x" * 1025, "/".join(["a"] * 65), 7, None]


def prepared(store: fe.Store) -> fe.Run:
    """Entries: 1 start, 2 begin r (superseded by 3), 3 recovery, 4 begin a, 5 invoke a#1,
    6 begin b, 7 end b, 8 child of a. Generation 1; invoke a#1 is open."""
    run = store.start_run(workflow="wf", inputs={}, run_id="run-1")
    run.begin_step("r")
    assert run.recover([2]) == 1
    run.begin_step("a")
    run.invoke("a", 1, "op", ARTIFACT, "not-dispatched")
    run.begin_step("b")
    run.end_step("b", "succeeded")
    run.child("a", "kid-1")
    return run


INVALID_REQUEST: list[tuple[str, Call]] = [
    *[(f"begin_step path {p!r}", lambda r, p=p: r.begin_step(p)) for p in MALFORMED],
    *[
        (f"invoke path {p!r}", lambda r, p=p: r.invoke(p, 9, "op", ARTIFACT, "not-dispatched"))
        for p in MALFORMED
    ],
    *[(f"result path {p!r}", lambda r, p=p: r.result(p, 1, "succeeded")) for p in MALFORMED],
    *[(f"end_step path {p!r}", lambda r, p=p: r.end_step(p, "succeeded")) for p in MALFORMED],
    *[(f"child path {p!r}", lambda r, p=p: r.child(p, "kid-9")) for p in MALFORMED],
    *[
        (f"conclude path {p!r}", lambda r, p=p: r.conclude("failed", path=p))
        for p in MALFORMED
        if p is not None
    ],
    ("hold step malformed", lambda r: r.hold(step="a//b")),
    *[
        (f"invoke attempt {a!r}", lambda r, a=a: r.invoke("c", a, "op", ARTIFACT, "not-dispatched"))
        for a in (0, -1, "2", True, 2.0, None)
    ],
    *[
        (f"result attempt {a!r}", lambda r, a=a: r.result("a", a, "succeeded"))
        for a in (0, -3, "1", True, 1.0)
    ],
    *[
        (f"invoke dispatch {d!r}", lambda r, d=d: r.invoke("c", 1, "op", ARTIFACT, d))
        for d in ("succeeded", "failed", "bogus", "", None)
    ],
    *[
        (f"result dispatch {d!r}", lambda r, d=d: r.result("a", 1, d))
        for d in ("not-dispatched", "bogus", None)
    ],
    *[
        (f"end_step outcome {o!r}", lambda r, o=o: r.end_step("a", o))
        for o in ("ended", "active", "stopped", "", None)
    ],
    *[
        (f"end_step branch {b!r}", lambda r, b=b: r.end_step("a", "succeeded", branch=b))
        for b in (
            {"case": 1},
            {"arm": -1},
            {"arm": True},
            {"else": False},
            {"x": 1},
            {"case": "a", "arm": 1},
            {"case": "\ud800"},  # a lone surrogate: UTF-8 cannot store it
            "case",
            [],
        )
    ],
    *[
        (f"conclude status {s!r}", lambda r, s=s: r.conclude(s))
        for s in ("active", "suspended", "held", "done", "", None)
    ],
    ("conclude outputs on a failed run", lambda r: r.conclude("failed", outputs={})),
    ("invoke empty operation", lambda r: r.invoke("c", 1, "", ARTIFACT, "not-dispatched")),
    ("child empty run id", lambda r: r.child("a", "")),
    ("recover not a list", lambda r: r.recover(5)),  # type: ignore[arg-type]
    ("recover non-int entries", lambda r: r.recover(["4"])),  # type: ignore[list-item]
    ("recover bool entry", lambda r: r.recover([True])),  # type: ignore[list-item]
    ("recover an entry twice", lambda r: r.recover([4, 4])),
    ("empty idempotency key", lambda r: r.begin_step("c", key="")),
    # Text UTF-8 cannot encode (a lone surrogate) is refused before it reaches SQLite.
    ("lone surrogate operation", lambda r: r.invoke("c", 1, LONE, ARTIFACT, "not-dispatched")),
    ("lone surrogate result code", lambda r: r.result("a", 1, "failed", code=LONE)),
    ("lone surrogate end_step code", lambda r: r.end_step("a", "failed", code=LONE)),
    ("lone surrogate child run id", lambda r: r.child("a", LONE)),
    ("lone surrogate hold reason", lambda r: r.hold(LONE)),
    ("lone surrogate conclude reason", lambda r: r.conclude("failed", reason=LONE)),
    ("lone surrogate idempotency key", lambda r: r.begin_step("c", key=LONE)),
    ("lone surrogate artifact name", lambda r: r.add_artifact(LONE, b"x")),
    ("lone surrogate metric name", lambda r: r.observe(LONE, 1)),
]

INVALID_VALUE: list[tuple[str, Call]] = [
    ("begin_step arguments NaN", lambda r: r.begin_step("c", arguments={"x": [1.0, NAN]})),
    ("invoke arguments bytes", lambda r: r.invoke("c", 1, "op", ARTIFACT, "not-dispatched", arguments=b"x")),
    ("result naive datetime", lambda r: r.result("a", 1, "succeeded", result=dt.datetime(2024, 1, 1))),
    ("result details set", lambda r: r.result("a", 1, "succeeded", details={1, 2})),
    ("end_step binding non-str key", lambda r: r.end_step("a", "succeeded", binding={1: "x"})),
    ("end_step event infinity", lambda r: r.end_step("a", "succeeded", event=float("inf"))),
    ("conclude outputs object", lambda r: r.conclude("succeeded", outputs=object())),
    ("partial without paths", lambda r: r.begin_step("c", arguments=fe.Partial({"a": 1}, suppressed=[]))),
    ("partial bad path part", lambda r: r.begin_step("c", arguments=fe.Partial({"a": 1}, suppressed=[[-1]]))),
    ("sensitive nested in a value", lambda r: r.begin_step("c", arguments={"k": fe.Sensitive("s")})),
]

CONFLICT: list[tuple[str, Call]] = [
    ("begin_step of an ended step", lambda r: r.begin_step("b", key="again")),
    ("begin_step already begun in this generation", lambda r: r.begin_step("a", key="again")),
    (
        "invoke attempt equal to previous",
        lambda r: r.invoke("a", 1, "op", ARTIFACT, "ambiguous", key="other"),
    ),
    (
        "invoke attempt below previous (superseded count)",
        lambda r: r.invoke("a", 1, "op2", ARTIFACT, "not-dispatched"),
    ),
    ("invoke of an ended step", lambda r: r.invoke("b", 1, "op", ARTIFACT, "not-dispatched")),
    ("result without invoke", lambda r: r.result("c", 1, "succeeded")),
    ("result for another attempt", lambda r: r.result("a", 2, "succeeded")),
    ("end_step never began", lambda r: r.end_step("zz", "succeeded")),
    ("end_step of the superseded step", lambda r: r.end_step("r", "succeeded")),
    ("end_step already ended", lambda r: r.end_step("b", "failed")),
    ("child recorded twice", lambda r: r.child("a", "kid-1", key="again")),
    ("child of an ended step", lambda r: r.child("b", "kid-2")),
    ("resume an active run", lambda r: r.resume()),
    ("recover supersedes start", lambda r: r.recover([1])),
    ("recover supersedes recovery", lambda r: r.recover([3])),
    ("recover supersedes already superseded", lambda r: r.recover([2])),
    ("recover supersedes unknown (0)", lambda r: r.recover([0])),
    ("recover supersedes a later entry", lambda r: r.recover([9])),
    ("recover supersedes far beyond", lambda r: r.recover([4, 1000])),
    ("recover supersedes a begin but not its end", lambda r: r.recover([6])),
    ("different call under a default key", lambda r: r.begin_step("a", arguments={"x": 1})),
    ("different call under an override key", lambda r: r.end_step("a", "failed", key="begin:1:a")),
]


def _refused(store: fe.Store, call: Call, exc: type[fe.RecordError], code: str) -> None:
    run = prepared(store)
    before = snapshot(store)
    with pytest.raises(exc) as info:
        call(run)
    assert type(info.value) is exc and info.value.code == code
    assert snapshot(store) == before
    # the refusal changed nothing in the handle either: a valid call still appends entry 9
    assert run.begin_step("fresh") == 9


@pytest.mark.parametrize(("name", "call"), INVALID_REQUEST, ids=[n for n, _ in INVALID_REQUEST])
def test_invalid_request(store: fe.Store, name: str, call: Call) -> None:
    _refused(store, call, fe.InvalidRequest, "invalid-request")


@pytest.mark.parametrize(("name", "call"), INVALID_VALUE, ids=[n for n, _ in INVALID_VALUE])
def test_invalid_value(store: fe.Store, name: str, call: Call) -> None:
    _refused(store, call, fe.InvalidValue, "invalid-value")


@pytest.mark.parametrize(("name", "call"), CONFLICT, ids=[n for n, _ in CONFLICT])
def test_conflict(store: fe.Store, name: str, call: Call) -> None:
    _refused(store, call, fe.Conflict, "conflict")


def test_a_recovery_keeps_results_with_their_invokes_and_ends_with_their_begins(store: fe.Store) -> None:
    """Active entries must never hold a result without its invoke (decisions.md) or an end
    without its begin: the step's facts are read from the active entries."""
    run = store.start_run("wf")
    run.begin_step("a", arguments={"x": 1})  # 2
    run.invoke("a", 1, "op", ARTIFACT, "not-dispatched")  # 3
    run.result("a", 1, "succeeded", result=1)  # 4
    before = snapshot(store)
    for orphaning in ([3], [2, 3]):
        with pytest.raises(fe.Conflict, match="not entry 4, the result of 'a'"):
            run.recover(orphaning)
    assert snapshot(store) == before
    run.end_step("a", "succeeded")  # 5
    with pytest.raises(fe.Conflict, match="not entry 5, the step of 'a'"):
        run.recover([2])
    assert run.recover([3, 4]) == 1  # the attempt goes; the step keeps its begin and end
    doc = store.get_run_record(run.id)
    assert doc["steps"]["a"]["status"] == "ended"
    assert [e["seq"] for e in doc["entries"]] == [1, 2, 3, 4, 5, 6]
    assert run.recover([2, 5]) == 2  # the whole occurrence goes
    assert "a" not in store.get_run_record(run.id)["steps"]


AFTER_CONCLUDE: list[tuple[str, Call]] = [
    ("begin_step", lambda r: r.begin_step("c")),
    ("invoke", lambda r: r.invoke("a", 2, "op", ARTIFACT, "not-dispatched")),
    ("result", lambda r: r.result("a", 1, "succeeded")),
    ("end_step", lambda r: r.end_step("a", "succeeded")),
    ("child", lambda r: r.child("a", "kid-3")),
    ("suspend", lambda r: r.suspend()),
    ("hold", lambda r: r.hold(code="x")),
    ("resume", lambda r: r.resume()),
    ("recover", lambda r: r.recover([])),
    ("conclude again differently", lambda r: r.conclude("succeeded")),
]


@pytest.mark.parametrize(("name", "call"), AFTER_CONCLUDE, ids=[n for n, _ in AFTER_CONCLUDE])
def test_nothing_after_conclude(store: fe.Store, name: str, call: Call) -> None:
    run = prepared(store)
    concluded = run.conclude("failed", code="boom")
    before = snapshot(store)
    for handle in (run, store.resume_run(run.id)):
        with pytest.raises(fe.Conflict) as info:
            call(handle)
        assert info.value.code == "conflict"
    assert snapshot(store) == before
    assert run.conclude("failed", code="boom") == concluded  # the identical repeat is not a refusal


@pytest.mark.parametrize(
    ("status_calls", "call"),
    [
        ([], lambda r: r.resume()),
        (["suspend"], lambda r: r.suspend()),
        (["hold"], lambda r: r.suspend()),
        (["hold"], lambda r: r.hold()),
    ],
)
def test_status_changes_that_contradict_the_status(
    store: fe.Store, status_calls: list[str], call: Call
) -> None:
    run = prepared(store)
    for name in status_calls:
        assert getattr(run, name)() is None
    before = snapshot(store)
    with pytest.raises(fe.Conflict):
        call(run)
    assert snapshot(store) == before


START_REFUSALS: list[tuple[str, dict[str, Any], type[fe.RecordError]]] = [
    ("empty workflow", {"workflow": ""}, fe.InvalidRequest),
    ("workflow not str", {"workflow": 3}, fe.InvalidRequest),
    ("empty standard", {"workflow": "w", "standard": ""}, fe.InvalidRequest),
    ("dry_run not bool", {"workflow": "w", "dry_run": "yes"}, fe.InvalidRequest),
    ("pin not a digest", {"workflow": "w", "pins": {"definition": "sha256:XYZ"}}, fe.InvalidRequest),
    ("pins not a map", {"workflow": "w", "pins": ["x"]}, fe.InvalidRequest),
    ("empty run id", {"workflow": "w", "run_id": ""}, fe.InvalidRequest),
    ("empty idempotency key", {"workflow": "w", "key": ""}, fe.InvalidRequest),
    ("inputs NaN", {"workflow": "w", "inputs": {"x": NAN}}, fe.InvalidValue),
    ("trigger bytes", {"workflow": "w", "trigger": b"x"}, fe.InvalidValue),
    ("taken run id, other start", {"workflow": "other", "run_id": "run-1"}, fe.Conflict),
]


@pytest.mark.parametrize(("name", "kwargs", "exc"), START_REFUSALS, ids=[n for n, _, _ in START_REFUSALS])
def test_start_run_refusals(
    store: fe.Store, name: str, kwargs: dict[str, Any], exc: type[fe.RecordError]
) -> None:
    prepared(store)
    before = snapshot(store)
    with pytest.raises(exc) as info:
        store.start_run(**kwargs)
    assert type(info.value) is exc and info.value.code == exc.code
    assert snapshot(store) == before
