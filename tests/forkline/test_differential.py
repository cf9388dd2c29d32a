"""The same calls on Forkline 0.5.0 and on ``forkline_es.forkline``, results compared.

Runs are drawn by hypothesis (steps named from a few names, events of the types the
comparisons single out, small JSON payloads), then compared by both packages' replay engine,
first-divergence diff, JSON diff and deep comparison; step stores are recorded through both
packages' ``SQLiteStore`` and compared through their ``ReplayEngine``. Everything that
reaches a caller (``to_dict``, ``summary``, divergence points, explanations) must agree,
except the ids the two stores number differently (documented in docs/forkline.md).
"""

from __future__ import annotations

import os
import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import forkline_es.forkline as ours

from ._real import load

forkline = load()
PACKAGES = (forkline, ours)

scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["a", "b", "ts"]))
payloads = st.dictionaries(
    st.sampled_from(["q", "r", "ts", "created_at", "result", "name"]),
    st.one_of(scalars, st.lists(scalars, max_size=3)),
    max_size=3,
)
events = st.lists(
    st.tuples(st.sampled_from(["input", "output", "error", "tool_call", "llm_call"]), payloads), max_size=3
)
steps = st.lists(st.tuples(st.sampled_from(["plan", "act", "check"]), events), max_size=5)

Spec = list[tuple[str, list[tuple[str, dict[str, Any]]]]]


def build(pkg: Any, run_id: str, spec: Spec) -> Any:
    """The run ``spec`` as ``pkg``'s in-memory ``Run`` (same ids and times in both)."""
    return pkg.Run(
        run_id=run_id,
        created_at="2026-01-01T00:00:00+00:00",
        steps=[
            pkg.Step(
                step_id=i + 1,
                run_id=run_id,
                idx=i,
                name=name,
                started_at="t",
                events=[
                    pkg.Event(event_id=n, run_id=run_id, step_idx=i, type=t, created_at="t", payload=p)
                    for n, (t, p) in enumerate(evs)
                ],
            )
            for i, (name, evs) in enumerate(spec)
        ],
    )


def replay_view(result: Any) -> dict[str, Any]:
    out = result.to_dict()
    out["summary"] = result.summary()
    out["steps"] = [(s.step_idx, s.step_name, s.events_compared, s.matched) for s in result.step_results]
    out["is_match"] = result.is_match()
    if result.divergence is not None:
        d = result.divergence
        out["point"] = (d.step_idx, d.step_name, d.event_idx, d.divergence_type, d.context)
        out["diffs"] = [str(f) for f in d.field_diffs]
        out["new_summary"] = result.get_divergence().summary()
    return out


@settings(max_examples=150, deadline=None)
@given(
    a=steps,
    b=steps,
    window=st.integers(1, 4),
    context=st.integers(0, 3),
    ts=st.booleans(),
    show=st.sampled_from(["input", "output", "both"]),
)
def test_in_memory_comparisons_agree(
    a: Spec, b: Spec, window: int, context: int, ts: bool, show: str
) -> None:
    views = []
    for pkg in PACKAGES:
        run_a, run_b = build(pkg, "a", a), build(pkg, "b", b)
        engine = pkg.ReplayEngine.__new__(pkg.ReplayEngine)  # no store: compare_loaded_runs only
        views.append(
            {
                "replay": replay_view(engine.compare_loaded_runs(run_a, run_b, ignore_timestamps=ts)),
                "first": pkg.find_first_divergence(
                    run_a, run_b, window=window, context_size=context, show=show
                ).to_dict(),
                "diff_runs": pkg.diff_runs(run_a, run_b),
                "steps": [
                    pkg.compare_steps(x, y, ts)[0] for x, y in zip(run_a.steps, run_b.steps, strict=False)
                ],
            }
        )
    theirs, mine = views
    assert mine["replay"] == theirs["replay"]
    assert mine["first"] == theirs["first"]
    assert (mine["diff_runs"].same, mine["diff_runs"].notes) == (
        theirs["diff_runs"].same,
        theirs["diff_runs"].notes,
    )
    assert mine["steps"] == theirs["steps"]


values = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(-5, 5), st.floats(-2, 2, allow_nan=False), st.text(max_size=3)
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["a", "b", "ts", "c"]), inner, max_size=3),
    ),
    max_leaves=10,
)


@settings(max_examples=300, deadline=None)
@given(old=values, new=values)
def test_json_diff_and_deep_compare_agree(old: Any, new: Any) -> None:
    assert ours.json_diff(old, new) == forkline.json_diff(old, new)
    mine = [(d.path, d.expected, d.actual, str(d)) for d in ours.deep_compare(old, new, "p", {"ts"})]
    theirs = [(d.path, d.expected, d.actual, str(d)) for d in forkline.deep_compare(old, new, "p", {"ts"})]
    assert mine == theirs
    root = [(d.path, d.expected, d.actual) for d in ours.deep_compare(old, new)]
    assert root == [(d.path, d.expected, d.actual) for d in forkline.deep_compare(old, new)]


def record(pkg: Any, folder: str, runs: dict[str, Spec]) -> Any:
    store = pkg.SQLiteStore(os.path.join(folder, f"{pkg.__name__}.db"))
    for run_id, spec in runs.items():
        store.start_run(run_id)
        for i, (name, evs) in enumerate(spec):
            store.start_step(run_id, i, name)
            for t, p in evs:
                store.append_event(run_id, i, t, p)
            store.end_step(run_id, i)
    return store


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(a=steps, b=steps)
def test_recorded_step_stores_compare_alike(a: Spec, b: Spec) -> None:
    views = []
    with tempfile.TemporaryDirectory() as folder:
        for pkg in PACKAGES:
            store = record(pkg, folder, {"a": a, "b": b})
            engine = pkg.ReplayEngine(store)
            views.append(
                [
                    replay_view(engine.compare_runs("a", "b")),
                    replay_view(engine.compare_runs("b", "a", ignore_timestamps=False)),
                    replay_view(engine.validate_run("a")),
                    engine.compare_runs("a", "nope").to_dict(),
                    engine.compare_runs("nope", "a").summary(),
                    pkg.find_first_divergence(store.load_run("a"), store.load_run("b")).to_dict(),
                ]
            )
            if hasattr(store, "close"):
                store.close()
    assert views[0] == views[1]


def _outcome(call: Any) -> Any:
    try:
        return call()
    except Exception as error:
        return (type(error).__name__, str(error))


@pytest.mark.parametrize("policy", ["default", "strict", "lenient"])
@settings(max_examples=20, deadline=None)
@given(spec=steps, change=st.integers(0, 6))
def test_replay_with_policies_and_executors(policy: str, spec: Spec, change: int) -> None:
    views = []
    with tempfile.TemporaryDirectory() as folder:
        for pkg in PACKAGES:
            store = record(pkg, folder, {"r": spec})
            engine = pkg.ReplayEngine(store)
            chosen = getattr(pkg.ReplayPolicy, policy)()

            def executor(step: Any, ctx: Any, pkg: Any = pkg) -> Any:
                assert ctx.get_step(step.idx) == step
                if step.idx == change:
                    raise RuntimeError("tool down")
                if step.idx == change - 1 and step.events:
                    first = step.events[0]
                    changed = pkg.Event(
                        first.event_id, first.run_id, first.step_idx, first.type, "t", {"x": 1}
                    )
                    return pkg.Step(step.step_id, step.run_id, step.idx, step.name, "t", events=[changed])
                return step

            def view(result: Any) -> Any:
                if isinstance(result, tuple):
                    return result
                out = replay_view(result)
                out.pop("replay_run_id")
                return out

            views.append(
                [
                    view(_outcome(lambda e=engine, c=chosen: e.replay("r", policy=c))),
                    view(
                        _outcome(lambda e=engine, c=chosen, x=executor: e.replay("r", policy=c, executor=x))
                    ),
                    view(_outcome(lambda e=engine: e.replay("missing"))),
                ]
            )
            if hasattr(store, "close"):
                store.close()
    assert views[0] == views[1]


def test_replay_context_cursor_and_order_errors() -> None:
    spec: Spec = [("plan", [("input", {"q": 1}), ("output", {"r": 2})])]
    seen = []
    for pkg in PACKAGES:
        ctx = pkg.ReplayContext.from_run(build(pkg, "r", spec))
        got = [
            ctx.peek_event(0).type,
            ctx.next_event(0, "input").payload,
            _outcome(lambda c=ctx: c.next_event(0, "input")),
            ctx.next_event(0).type,
            ctx.next_event(0),
            ctx.get_step(5),
            ctx.get_step_by_name("plan").name,
            [e.type for e in ctx.get_events_by_type(0, "output")],
            [e.type for e in ctx.iter_events(0)],
            ctx.get_event(0, 9),
        ]
        ctx.reset_cursor(0)
        got.append(ctx.next_event(0).type)
        seen.append(got)
    assert seen[0] == seen[1]
    assert seen[1][2][0] == "ReplayOrderError"


def test_public_names_match_forkline() -> None:
    assert set(forkline.__all__) <= set(ours.__all__)
    assert ours.FORKLINE_VERSION == forkline.FORKLINE_VERSION
    assert ours.SCHEMA_VERSION == forkline.SCHEMA_VERSION
    for name in ("DEFAULT_FORKLINE_VERSION", "DEFAULT_SCHEMA_VERSION"):
        assert getattr(ours, name) == getattr(forkline, name)
    for policy in ("default", "strict", "lenient"):
        assert vars(getattr(ours.ReplayPolicy, policy)()) == vars(getattr(forkline.ReplayPolicy, policy)())
    assert [s.value for s in ours.ReplayStatus] == [s.value for s in forkline.ReplayStatus]
    assert [r.value for r in ours.DivergenceReason] == [r.value for r in forkline.DivergenceReason]
    kinds = [k for k in vars(forkline.DivergenceType) if k.isupper()]
    assert {k: getattr(ours.DivergenceType, k) for k in kinds} == {
        k: getattr(forkline.DivergenceType, k) for k in kinds
    }
    for code in (n for n in forkline.__all__ if n.startswith("EXIT_")):
        assert getattr(ours, code) == getattr(forkline, code)
