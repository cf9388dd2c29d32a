"""Anchors: a run's last digest kept outside the file catches every consistent rewrite before it.

Each case of ``tampering.CASES`` edits a recorded run around the triggers and recomputes all
that would give it away (slot digests, manifest digest and file, every digest and link after
the edit). Without anchors some of them verify clean (docs/verify.md lists which); with
anchors taken before the edit, every one is an ``anchor-mismatch`` at the anchored seq.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import forkline_es as fe
from forkline_es.cli.main import main

from .helpers import kinds_at, relink, untrigger
from .tampering import CASES, RUN, record_history, tamper

#: The module tampers with the store through SQLite's own connection (drops triggers,
#: rewrites rows and files) to show what verify finds; on PostgreSQL the triggers refuse
#: that client, and tests/postgres/test_triggers.py covers them.
pytestmark = pytest.mark.sqlite_only("tampers with a SQLite file through apsw to show what verify finds")


@pytest.fixture
def store(sqlite_store: fe.Store) -> fe.Store:
    return sqlite_store


#: What verify finds without anchors after each rewrite (all of it ``projection-mismatch``:
#: the chain holds). docs/verify.md, "What a consistent rewrite can hide", says the same.
WITHOUT_ANCHORS: dict[str, set[str]] = {
    "invoke-arguments-swapped": {"projection-mismatch"},
    "result-values-swapped": set(),
    "final-result-value": set(),
    "conclusion-outputs": {"projection-mismatch"},
    "middle-timestamp": {"projection-mismatch"},  # entries carry x-at (issue 23): the refold sees it
    "idempotency-key": set(),
    "hold-reason": set(),
    "hold-code": set(),
    "step-arguments": {"projection-mismatch"},
    "run-inputs": {"projection-mismatch"},
    "step-result": {"projection-mismatch"},
    "environment": {"projection-mismatch"},
    "step-outcome": {"projection-mismatch"},
    "conclusion-status": {"projection-mismatch"},
    "operation": {"projection-mismatch"},
    "dispatch": {"projection-mismatch"},
    "artifact-content": {"projection-mismatch"},
    "manifest-fact": {"projection-mismatch"},
    "observation-value": {"projection-mismatch"},
    "tail-deleted": {"projection-mismatch"},
    "middle-rows-deleted": {"projection-mismatch"},
    "status-rewritten-and-refolded": set(),
    "run-deleted": set(),
}


def _cli(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


def test_every_case_has_its_expectation() -> None:
    assert set(WITHOUT_ANCHORS) == set(CASES) and len(CASES) >= 22


def test_anchors_are_each_retained_run_s_last_seq_and_digest(store: fe.Store) -> None:
    assert store.anchors() == {}
    record_history(store, "a")
    b = store.start_run("wf", run_id="b")
    b.begin_step("s")
    store.start_run("wf", run_id="gone").conclude("succeeded")
    store.evict_run("gone", reason="test")
    last = {
        str(r): {"seq": int(s), "digest": str(d)}
        for r, s, d in store.conn.execute(
            "SELECT run_id, seq, digest FROM log AS l "
            "WHERE seq = (SELECT max(seq) FROM log WHERE run_id = l.run_id)"
        )
    }
    anchors = store.anchors()
    assert anchors == last and set(anchors) == {"a", "b"} and anchors["b"]["seq"] == 2
    assert all(fe.canonical_json(a) for a in anchors.values())  # plain JSON data


@pytest.mark.parametrize("case", list(CASES))
def test_with_anchors_every_consistent_rewrite_is_an_anchor_mismatch(
    store: fe.Store, tmp_path: Path, case: str
) -> None:
    record_history(store)
    record_history(store, "other")
    anchors = store.anchors()
    seq = anchors[RUN]["seq"]
    assert all(r.ok for r in store.verify_all(anchors=anchors))
    tamper(store, case)
    report = store.verify_run(RUN, anchors=anchors)
    assert ("anchor-mismatch", seq) in kinds_at(report)
    found = {r.run_id: kinds_at(r) for r in store.verify_all(anchors=anchors)}
    assert ("anchor-mismatch", seq) in found[RUN]
    assert found["other"] == []  # the other run is as anchored
    mismatch = next(p for p in report.problems if p.kind == "anchor-mismatch")
    assert mismatch.expected == anchors[RUN]["digest"] and mismatch.actual != mismatch.expected


@pytest.mark.parametrize("case", list(CASES))
def test_without_anchors_a_consistent_rewrite_is_seen_only_through_the_projections(
    store: fe.Store, case: str
) -> None:
    record_history(store)
    tamper(store, case)
    if case == "run-deleted":  # nothing is left to verify, nothing lists it
        with pytest.raises(fe.RunNotFound):
            store.verify_run(RUN)
        assert store.verify_all() == []
        return
    assert {p.kind for p in store.verify_run(RUN).problems} == WITHOUT_ANCHORS[case]
    assert {p.kind for r in store.verify_all() for p in r.problems} == WITHOUT_ANCHORS[case]


def test_rows_appended_after_the_anchor_are_not_a_mismatch_and_not_covered(store: fe.Store) -> None:
    """An anchor pins its row and those before it; what came later is checked by the chain only."""
    run = store.start_run("wf", run_id="r")
    run.begin_step("a")
    anchors = store.anchors()
    run.end_step("a", "succeeded", result=1)
    run.conclude("succeeded")
    assert store.verify_run("r", anchors=anchors).ok
    untrigger(store)
    store.conn.execute("UPDATE log SET key = 'forged' WHERE run_id = 'r' AND seq = 3")
    relink(store, "r")
    assert store.verify_run("r", anchors=anchors).ok  # after the anchor: not seen
    store.conn.execute("UPDATE log SET key = 'forged' WHERE run_id = 'r' AND seq = 2")
    relink(store, "r")
    assert kinds_at(store.verify_run("r", anchors=anchors)) == [("anchor-mismatch", 2)]


def test_a_run_evicted_since_the_anchor_is_not_a_mismatch(store: fe.Store) -> None:
    record_history(store)
    anchors = store.anchors()
    store.evict_run(RUN, reason="retention")
    assert store.verify_all(anchors=anchors) == []
    with pytest.raises(fe.RunNotRetained):
        store.verify_run(RUN, anchors=anchors)


def test_a_run_that_vanished_without_an_eviction_record_is_a_mismatch(store: fe.Store) -> None:
    record_history(store)
    anchors = store.anchors()
    store.evict_run(RUN, reason="retention")
    store.purge_tombstones("0s")  # its eviction record is gone too: nothing says it went
    ((run_id, kinds),) = [(r.run_id, kinds_at(r)) for r in store.verify_all(anchors=anchors)]
    assert (run_id, kinds) == (RUN, [("anchor-mismatch", anchors[RUN]["seq"])])
    assert kinds_at(store.verify_run(RUN, anchors=anchors)) == kinds
    with pytest.raises(fe.RunNotFound):
        store.verify_run(RUN)  # without the anchor there is no evidence it existed


def test_a_run_still_listed_and_anchored_is_missing_and_mismatched(store: fe.Store) -> None:
    record_history(store)
    anchors = store.anchors()
    untrigger(store)
    store.conn.execute("DELETE FROM payload")
    store.conn.execute("DELETE FROM log")
    seq = anchors[RUN]["seq"]
    expected = [("run-missing", None), ("anchor-mismatch", seq)]
    assert [(r.run_id, kinds_at(r)) for r in store.verify_all(anchors=anchors)] == [(RUN, expected)]
    assert kinds_at(store.verify_run(RUN, anchors=anchors)) == expected


def test_a_run_started_after_the_anchors_is_verified_without_one(store: fe.Store) -> None:
    anchors = store.anchors()
    store.start_run("wf", run_id="new").conclude("succeeded")
    assert [r.ok for r in store.verify_all(anchors=anchors)] == [True]
    assert store.verify_run("new", anchors).ok  # anchors may be passed by position too


_DIGEST = "sha256:" + "0" * 64

MALFORMED: list[Any] = [
    [],
    "r",
    {"r": []},
    {"r": {"seq": 1}},
    {"r": {"seq": 1, "digest": _DIGEST, "extra": 1}},
    {"r": {"seq": 0, "digest": _DIGEST}},
    {"r": {"seq": True, "digest": _DIGEST}},
    {"r": {"seq": 1.0, "digest": _DIGEST}},
    {"r": {"seq": "1", "digest": _DIGEST}},
    {"r": {"seq": 1, "digest": "sha256:" + "A" * 64}},
    {"r": {"seq": 1, "digest": None}},
    {"": {"seq": 1, "digest": _DIGEST}},
    {1: {"seq": 1, "digest": _DIGEST}},
    {"r": {"seq": 10**5000, "digest": None}},
]


@pytest.mark.parametrize("anchors", MALFORMED, ids=range(len(MALFORMED)))
def test_malformed_anchors_are_an_invalid_request(store: fe.Store, anchors: Any) -> None:
    record_history(store, "r")
    with pytest.raises(fe.InvalidRequest, match="anchor"):
        store.verify_run("r", anchors=anchors)
    with pytest.raises(fe.InvalidRequest, match="anchor"):
        store.verify_all(anchors=anchors)


@pytest.mark.parametrize(
    "text",
    [
        b"",
        b"{",
        b"[1]",
        b'{"r": {"seq": 1}}',
        b"\xff",
        b"[" * 100_000 + b"]" * 100_000,
        b'{"r": {"seq": 1' + b"0" * 30 + b"}}",
    ],
    ids=["empty", "truncated", "list", "no-digest", "not-utf8", "deep", "huge-seq"],
)
def test_a_malformed_anchors_file_exits_2_with_the_code(store: fe.Store, db_path: Path, text: bytes) -> None:
    record_history(store, "r")
    bad = db_path.parent / "anchors.json"
    bad.write_bytes(text)
    for target in ("r", "--all"):
        code, out, err = _cli("verify", target, "--db", str(db_path), "--anchors", str(bad))
        assert (code, out) == (2, "") and err.startswith("error: invalid-request: "), err
    code, _, err = _cli("verify", "--all", "--db", str(db_path), "--anchors", str(db_path.parent / "none"))
    assert code == 2 and "invalid-request" in err and "cannot read the anchors file" in err


def test_cli_round_trip_anchors_tamper_verify(store: fe.Store, db_path: Path) -> None:
    record_history(store)
    record_history(store, "other")
    code, out, _ = _cli("anchors", "--db", str(db_path))
    assert code == 0 and out == fe.canonical_json(store.anchors()).decode() + "\n"
    saved = db_path.parent / "anchors.json"
    saved.write_text(out)
    assert _cli("verify", "--all", "--db", str(db_path), "--anchors", str(saved))[0] == 0
    assert _cli("verify", RUN, "--db", str(db_path), "--anchors", "-", stdin=out)[0] == 0

    tamper(store, "result-values-swapped")  # verifies clean without the anchors
    assert _cli("verify", "--all", "--db", str(db_path))[0] == 0
    seq = json.loads(out)[RUN]["seq"]
    code, out, _ = _cli("verify", "--all", "--db", str(db_path), "--anchors", str(saved))
    assert code == 1
    assert out.splitlines()[0] == f"run {RUN}: 1 problem"
    assert out.splitlines()[1].startswith(f"  seq {seq}  anchor-mismatch  ")
    code, out, _ = _cli("verify", RUN, "--json", "--db", str(db_path), "--anchors", str(saved))
    assert code == 1 and [p["kind"] for p in json.loads(out)["problems"]] == ["anchor-mismatch"]
    code, out, _ = _cli("verify", "--all", "--json", "--db", str(db_path), "--anchors", str(saved))
    doc = json.loads(out)
    assert code == 1 and (doc["ok"], doc["runs"], doc["failed"], doc["store"]) == (False, 2, 1, [])
    assert [r["run_id"] for r in doc["reports"]] == [RUN]


def test_anchors_of_a_missing_database_create_nothing(tmp_path: Path) -> None:
    code, out, err = _cli("anchors", "--db", str(tmp_path / "none.db"))
    assert (code, out) == (2, "") and "forkline-es demo" in err
    assert not (tmp_path / "none.db").exists()
