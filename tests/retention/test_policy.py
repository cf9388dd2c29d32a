"""The pure planner: which completed runs go, which stay and why, which payloads drop."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.retention.policy import RunFacts, format_duration, parse_duration, plan_retention

NOW = datetime(2026, 6, 1, tzinfo=UTC)
TERMINAL = ("succeeded", "failed", "cancelled", "stopped")


def done(
    run_id: str, days_ago: float, workflow: str = "wf", parent: str | None = None, pos: int = 0
) -> RunFacts:
    return RunFacts(run_id, workflow, "succeeded", NOW - timedelta(days=days_ago), parent, pos or None)


def evicted(plan: object) -> list[str]:
    return [e.run_id for e in plan.evict]  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30d", timedelta(days=30)),
        ("12h", timedelta(hours=12)),
        ("1d12h", timedelta(hours=36)),
        ("2w", timedelta(days=14)),
        ("90m", timedelta(minutes=90)),
        ("0s", timedelta(0)),
    ],
)
def test_durations_parse(text: str, expected: timedelta) -> None:
    assert parse_duration(text) == expected


@pytest.mark.parametrize(
    "bad", ["", "30", "d", "-1d", "1.5d", "30 days", timedelta(days=-1), 7, "999999999w", "9" * 20 + "d"]
)
def test_bad_durations_are_invalid_requests(bad: object) -> None:
    with pytest.raises(fe.InvalidRequest):
        parse_duration(bad)  # type: ignore[arg-type]


@given(st.integers(0, 10**8))
def test_format_duration_round_trips(seconds: int) -> None:
    d = timedelta(seconds=seconds)
    assert parse_duration(format_duration(d)) == d


def test_policy_checks_its_fields() -> None:
    with pytest.raises(fe.InvalidRequest):
        fe.RetentionPolicy(keep_last=-1)
    with pytest.raises(fe.InvalidRequest):
        fe.RetentionPolicy(keep_last=True)
    with pytest.raises(fe.InvalidRequest):
        fe.RetentionPolicy(payload_classes=["secrets"])
    p = fe.RetentionPolicy(keep_last=3, max_age="30d", drop_payloads_after="7d", payload_classes=["results"])
    assert p.describe() == "keep-last=3 max-age=30d drop-payloads-after=7d classes=results"
    assert fe.RetentionPolicy().describe() == "keep-everything"


def test_keep_last_counts_completed_runs_per_workflow() -> None:
    runs = [done(f"a{i}", i, "a") for i in range(5)] + [done(f"b{i}", i, "b") for i in range(2)]
    runs.append(RunFacts("a-active", "a", "active"))
    plan = plan_retention(fe.RetentionPolicy(keep_last=2), runs, NOW)
    assert sorted(evicted(plan)) == ["a2", "a3", "a4"]


def test_rules_compose_as_a_union_of_evictions() -> None:
    runs = [done("old", 40), done("new1", 1), done("new2", 2), done("new3", 3)]
    assert evicted(plan_retention(fe.RetentionPolicy(max_age="30d"), runs, NOW)) == ["old"]
    assert evicted(plan_retention(fe.RetentionPolicy(keep_last=3), runs, NOW)) == ["old"]
    both = plan_retention(fe.RetentionPolicy(keep_last=2, max_age="30d"), runs, NOW)
    assert sorted(evicted(both)) == ["new3", "old"]


def test_non_terminal_runs_are_never_planned() -> None:
    runs = [RunFacts(f"r-{s}", "wf", s, NOW - timedelta(days=400)) for s in ("active", "suspended", "held")]
    plan = plan_retention(fe.RetentionPolicy(keep_last=0, max_age="0s", drop_payloads_after="0s"), runs, NOW)
    assert plan.evict == () and plan.reduce == ()


def test_a_child_stays_while_its_parent_is_retained() -> None:
    runs = [done("parent", 1, "p"), done("child", 50, "c", parent="parent")]
    plan = plan_retention(fe.RetentionPolicy(max_age="30d"), runs, NOW)
    assert evicted(plan) == []
    assert [(k.run_id, "parent" in k.why) for k in plan.kept] == [("child", True)]


def test_a_tree_goes_root_first() -> None:
    runs = [
        done("zchild", 50, parent="aparent"),
        done("aparent", 60),
        done("grandchild", 40, parent="zchild"),
    ]
    plan = plan_retention(fe.RetentionPolicy(max_age="30d"), runs, NOW)
    assert evicted(plan) == ["aparent", "zchild", "grandchild"]


def test_an_active_parent_keeps_its_children() -> None:
    runs = [RunFacts("p", "wf", "active"), done("c", 50, parent="p")]
    assert evicted(plan_retention(fe.RetentionPolicy(max_age="1d"), runs, NOW)) == []


def test_parent_cycles_keep_everyone() -> None:
    runs = [done("a", 50, parent="b"), done("b", 50, parent="a")]
    assert evicted(plan_retention(fe.RetentionPolicy(max_age="1d"), runs, NOW)) == []


def test_unacknowledged_completions_are_kept() -> None:
    runs = [done("seen", 50, pos=10), done("unseen", 50, pos=20)]
    plan = plan_retention(fe.RetentionPolicy(max_age="1d"), runs, NOW, acknowledged_through=15)
    assert evicted(plan) == ["seen"]
    assert [k.run_id for k in plan.kept] == ["unseen"]


def test_payload_reduction_spares_evicted_and_recent_runs() -> None:
    runs = [done("old", 50), done("mid", 10), done("new", 1), RunFacts("live", "wf", "active")]
    plan = plan_retention(
        fe.RetentionPolicy(max_age="30d", drop_payloads_after="7d", payload_classes=["results"]), runs, NOW
    )
    assert evicted(plan) == ["old"]
    assert [(r.run_id, r.classes) for r in plan.reduce] == [("mid", frozenset({"results"}))]


def test_now_must_be_aware() -> None:
    with pytest.raises(fe.InvalidRequest):
        plan_retention(fe.RetentionPolicy(), [], datetime(2026, 1, 1))


facts = st.builds(
    RunFacts,
    run_id=st.sampled_from([f"r{i}" for i in range(12)]),
    workflow=st.sampled_from(["a", "b"]),
    status=st.sampled_from([*TERMINAL, "active", "suspended", "held"]),
    ended_at=st.integers(0, 100).map(lambda d: NOW - timedelta(days=d)),
    parent=st.none() | st.sampled_from([f"r{i}" for i in range(12)]),
    concluded_at_position=st.integers(1, 1000),
)
policies = st.builds(
    fe.RetentionPolicy,
    keep_last=st.none() | st.integers(0, 4),
    max_age=st.none() | st.integers(0, 100).map(lambda d: timedelta(days=d)),
    drop_payloads_after=st.none() | st.integers(0, 100).map(lambda d: timedelta(days=d)),
)


@given(policies, st.lists(facts, max_size=12, unique_by=lambda r: r.run_id), st.none() | st.integers(0, 1000))
def test_plan_properties(policy: fe.RetentionPolicy, runs: list[RunFacts], acked: int | None) -> None:
    plan = plan_retention(policy, runs, NOW, acked)
    by_id = {r.run_id: r for r in runs}
    gone = evicted(plan)
    assert len(gone) == len(set(gone))
    for i, run_id in enumerate(gone):
        r = by_id[run_id]
        assert r.status in TERMINAL  # non-terminal runs are never touched
        if acked is not None:
            assert r.concluded_at_position is not None and r.concluded_at_position <= acked
        if r.parent in by_id:  # the parent goes too, and earlier in the plan
            assert r.parent in gone[:i]
    # whatever stays, with its parent gone or not, the rule holds: no retained parent above an evicted child
    for run_id in gone:
        assert by_id[run_id].parent not in set(by_id) - set(gone)
    for red in plan.reduce:
        assert by_id[red.run_id].status in TERMINAL and red.run_id not in gone
    # keep_last alone never leaves a workflow with fewer than N completed runs
    if policy.keep_last is not None and policy.max_age is None:
        for wf in ("a", "b"):
            done_wf = [r for r in runs if r.workflow == wf and r.status in TERMINAL]
            left = [r for r in done_wf if r.run_id not in gone]
            assert len(left) >= min(policy.keep_last, len(done_wf))


def test_an_age_reaching_back_past_year_one_selects_nothing(store: fe.Store) -> None:
    """'Older than 2,700 years' is a valid way to say never, not an overflow."""
    store.start_run("wf").conclude("succeeded")
    report = store.apply_retention(fe.RetentionPolicy(max_age="1000000d", drop_payloads_after="1000000d"))
    assert list(report.evicted) == [] and list(report.reduced) == []
    assert store.purge_tombstones("1000000d") == 0
