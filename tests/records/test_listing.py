"""list_runs: filters, newest-first order and keyset pages, against a plain Python filter."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.values import canonical_timestamp
from forkline_es.values._time import parse_instant

# Whole seconds and fractions of the same second: text order is not time order here.
TIMES = [
    "2026-05-01T12:00:00Z",
    "2026-05-01T12:00:00.5Z",
    "2026-05-01T12:00:00.25Z",
    "2026-05-01T12:00:01Z",
    "2026-05-01T13:00:00Z",
    "2026-05-02T00:00:00.000001Z",
]
STATUSES = ("active", "held", "succeeded")


def record(
    store: fe.Store, rid: str, at: str, status: str, labels: dict[str, str], parent: str | None
) -> None:
    with store._recorded_at(at):
        run = store.start_run("wf/a" if rid < "m" else "wf/b", run_id=rid, labels=labels, parent=parent)
        if status == "held":
            run.hold(reason="waiting")
        elif status == "succeeded":
            run.conclude("succeeded")


runs_st = st.lists(
    st.tuples(
        st.sampled_from(TIMES),
        st.sampled_from(STATUSES),
        st.dictionaries(st.sampled_from(["customer", "env"]), st.sampled_from(["c-1", "c-2"]), max_size=2),
        st.booleans(),
    ),
    max_size=14,
)
query_st = st.fixed_dictionaries(
    {},
    optional={
        "workflow": st.sampled_from(["wf/a", "wf/b"]),
        "status": st.one_of(st.sampled_from(STATUSES), st.lists(st.sampled_from(STATUSES), min_size=1)),
        "since": st.sampled_from(TIMES),
        "until": st.sampled_from(TIMES),
        "parent": st.just("p"),
        "labels": st.dictionaries(st.sampled_from(["customer", "env"]), st.sampled_from(["c-1", "c-2"])),
    },
)


def expected(runs: list[tuple[str, str, str, dict[str, str], str | None]], q: dict[str, Any]) -> list[str]:
    statuses = {q["status"]} if isinstance(q.get("status"), str) else set(q.get("status") or STATUSES)
    out = []
    for rid, at, status, labels, parent in runs:
        t = parse_instant(at)
        if "workflow" in q and q["workflow"] != ("wf/a" if rid < "m" else "wf/b"):
            continue
        if status not in statuses or ("parent" in q and parent != q["parent"]):
            continue
        if "since" in q and t < parse_instant(q["since"]):  # type: ignore[operator]
            continue
        if "until" in q and not t < parse_instant(q["until"]):  # type: ignore[operator]
            continue
        if any(labels.get(k) != v for k, v in q.get("labels", {}).items()):
            continue
        out.append((t, rid))
    return [rid for _, rid in sorted(out, reverse=True)]


@settings(max_examples=40, deadline=None)
@given(runs_st, query_st, st.integers(1, 5))
def test_filters_order_and_pages_match_a_plain_filter(
    runs: list[tuple[str, str, dict[str, str], bool]], q: dict[str, Any], page: int
) -> None:
    with fe.Store.open(":memory:") as store:
        recorded = []
        for i, (at, status, labels, child) in enumerate(runs):
            rid = f"{'am'[i % 2]}{i:02d}"
            parent = "p" if child else None
            record(store, rid, at, status, labels, parent)
            recorded.append((rid, at, status, labels, parent))
        want = expected(recorded, q)
        assert [r["id"] for r in store.list_runs(**q)] == want
        walked: list[str] = []
        before = None
        while True:
            got = [r["id"] for r in store.list_runs(**q, limit=page, before=before)]
            assert len(got) <= page
            walked += got
            if len(got) < page:
                break
            before = got[-1]
        assert walked == want


def test_labels_are_shown_and_refused_when_not_strings(backend_store: fe.Store) -> None:
    backend_store.start_run("wf", run_id="r1", labels={"customer": "c-42", "tier": ""})
    backend_store.start_run("wf", run_id="r2")
    listed = {r["id"]: r for r in backend_store.list_runs()}
    assert listed["r1"]["x-labels"] == {"customer": "c-42", "tier": ""}
    assert "x-labels" not in listed["r2"]
    assert backend_store.get_run_record("r1")["run"]["x-labels"] == {"customer": "c-42", "tier": ""}
    assert [r["id"] for r in backend_store.list_runs(labels={"customer": "c-42"})] == ["r1"]
    for bad in ({"n": 1}, {"": "v"}, {"a=b": "v"}, {"n": "a\x00"}, ["customer"], {1: "v"}):
        with pytest.raises(fe.InvalidRequest):
            backend_store.start_run("wf", run_id="r3", labels=bad)  # type: ignore[arg-type]
    assert {r["id"] for r in backend_store.list_runs()} == {"r1", "r2"}  # refused: nothing written


def test_a_repeated_start_with_other_labels_is_a_conflict(mem_store: fe.Store) -> None:
    mem_store.start_run("wf", run_id="r", labels={"a": "1"})
    assert mem_store.start_run("wf", run_id="r", labels={"a": "1"}).id == "r"
    with pytest.raises(fe.Conflict):
        mem_store.start_run("wf", run_id="r", labels={"a": "2"})


def test_since_takes_an_age_a_datetime_or_a_timestamp(backend_store: fe.Store) -> None:
    now = datetime.now(UTC)
    old = (now - timedelta(hours=3)).isoformat()
    with backend_store._recorded_at(canonical_timestamp(now - timedelta(hours=3))):
        backend_store.start_run("wf", run_id="old")
    backend_store.start_run("wf", run_id="new")
    assert [r["id"] for r in backend_store.list_runs(since="2h")] == ["new"]
    assert [r["id"] for r in backend_store.list_runs(since=timedelta(hours=4))] == ["new", "old"]
    assert [r["id"] for r in backend_store.list_runs(until="2h")] == ["old"]
    assert [r["id"] for r in backend_store.list_runs(since=old)] == ["new", "old"]
    assert [r["id"] for r in backend_store.list_runs(since=now - timedelta(hours=1))] == ["new"]


@pytest.mark.parametrize(
    "bad",
    [
        {"status": "done"},
        {"status": []},
        {"status": 3},
        {"since": "yesterday"},
        {"since": "2026-05-01T12:00:00"},  # no offset: which zone?
        {"since": datetime(2026, 5, 1)},  # naive on purpose
        {"until": "-2h"},
        {"limit": 0},
        {"limit": 2**63},  # past SQLite's and PostgreSQL's integers
        {"workflow": "w\x00x"},  # refused as every other identifier with NUL is
        {"labels": {f"k{i}": "v" for i in range(101)}},  # past the listing's label filters
        {"limit": True},
        {"limit": "20"},
        {"parent": ""},
        {"labels": {"k": 2}},
        {"before": 7},
    ],
)
def test_bad_filters_are_invalid_requests(mem_store: fe.Store, bad: dict[str, Any]) -> None:
    mem_store.start_run("wf", run_id="r")
    with pytest.raises(fe.InvalidRequest):
        mem_store.list_runs(**bad)


def test_a_page_before_an_unknown_run_is_run_not_found(mem_store: fe.Store) -> None:
    with pytest.raises(fe.RunNotFound):
        mem_store.list_runs(before="nope")
