"""Observations: finite metrics, absent when never measured, exact per-workflow aggregates."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.artifacts.observations import aggregate, nearest_rank


def test_observe_records_and_aggregates_per_workflow(store: fe.Store) -> None:
    for i, value in enumerate([3, 1.5, 10, 7]):
        store.start_run("wf", run_id=f"r{i}").observe("latency", value, unit="ms")
    store.start_run("other").observe("latency", 1000)
    m = store.metrics("wf", "latency")
    assert m is not None
    assert (m.count, m.runs, m.min, m.max, m.units) == (4, 4, 1.5, 10, ("ms",))
    assert m.mean == (3 + 1.5 + 10 + 7) / 4
    assert m.p50 == 3  # nearest rank: ceil(0.5 * 4) = 2nd of [1.5, 3, 7, 10]
    assert m.p95 == 10


def test_a_metric_never_measured_is_absent_not_zero(store: fe.Store) -> None:
    run = store.start_run("wf")
    assert store.metrics("wf", "accuracy") is None
    assert "x-observations" not in store.get_run_record(run.id)


def test_ints_stay_ints_and_floats_stay_floats(store: fe.Store) -> None:
    run = store.start_run("wf")
    run.observe("a", 3)
    run.observe("b", 3.0)
    values = {o["name"]: o["value"] for o in store.get_run_record(run.id)["x-observations"]}
    assert type(values["a"]) is int and type(values["b"]) is float


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf, True, "1", None, 2**63])
def test_values_outside_finite_numbers_are_refused(store: fe.Store, bad: object) -> None:
    run = store.start_run("wf")
    with pytest.raises(fe.InvalidValue):
        run.observe("m", bad)  # type: ignore[arg-type]
    assert store.metrics("wf", "m") is None


def test_one_value_per_name_and_step_repeat_is_idempotent(store: fe.Store) -> None:
    run = store.start_run("wf")
    first = run.observe("loss", 0.5, step="train/0")
    assert run.observe("loss", 0.5, step="train/0") == first
    run.observe("loss", 0.25, step="train/1")
    with pytest.raises(fe.Conflict):
        run.observe("loss", 0.4, step="train/0")
    m = store.metrics("wf", "loss")
    assert m is not None and m.count == 2


def test_observations_after_conclude_are_accepted(store: fe.Store) -> None:
    run = store.start_run("wf")
    run.conclude("succeeded")
    run.observe("score", 0.8)
    assert store.metrics("wf", "score") is not None


def test_a_rebuild_reproduces_the_aggregates_exactly(store: fe.Store) -> None:
    values = [0.1, 0.2, 0.3, 1e16, -1e16, 7, 0.7]
    for i, v in enumerate(values):
        store.start_run("wf", run_id=f"r{i}").observe("x", v)
    before = store.metrics("wf", "x")
    store.rebuild_projections()
    assert store.metrics("wf", "x") == before


numbers = st.one_of(
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e300, max_value=1e300),
)


@given(st.lists(numbers, min_size=1, max_size=50), st.randoms())
def test_aggregates_do_not_depend_on_order(values: list[float], rnd: object) -> None:
    shuffled = list(values)
    rnd.shuffle(shuffled)  # type: ignore[attr-defined]
    assert aggregate("w", "m", values, 1, []) == aggregate("w", "m", shuffled, 1, [])


@given(st.lists(numbers, min_size=1, max_size=50))
def test_aggregates_match_their_definitions(values: list[float]) -> None:
    m = aggregate("w", "m", values, 1, [])
    assert m is not None
    ordered = sorted(values)
    exact = sum(Fraction(v) for v in values) / len(values)
    assert m.mean == float(exact)  # rounded once, from the exact mean
    assert (m.min, m.max) == (ordered[0], ordered[-1])
    for percent, got in ((50, m.p50), (95, m.p95)):
        # nearest rank: the smallest value with at least percent% of the values at or below it
        at_or_below = sum(1 for v in ordered if v <= got)
        assert at_or_below * 100 >= percent * len(ordered)
        assert sum(1 for v in ordered if v < got) * 100 < percent * len(ordered)


@settings(max_examples=50)
@given(st.integers(min_value=1, max_value=400))
def test_nearest_rank_is_computed_in_integers(n: int) -> None:
    ordered = list(range(1, n + 1))
    assert nearest_rank(ordered, 95) == math.ceil(Fraction(95 * n, 100))


def test_the_whole_64_bit_range_is_accepted_exactly(store: fe.Store) -> None:
    """Integers are not floats: 2**63 - 1 and -2**63 are stored and read back to the digit."""
    run = store.start_run("wf")
    for name, value in (("top", 2**63 - 1), ("bottom", -(2**63)), ("past_float", 2**53 + 1)):
        run.observe(name, value)
    values = {o["name"]: o["value"] for o in store.get_run_record(run.id)["x-observations"]}
    assert values == {"top": 2**63 - 1, "bottom": -(2**63), "past_float": 2**53 + 1}
    with pytest.raises(fe.InvalidValue):
        run.observe("under", -(2**63) - 1)


def test_runs_counts_runs_not_observations(store: fe.Store) -> None:
    for i in range(2):
        run = store.start_run("wf", run_id=f"r{i}")
        for step in range(3):
            run.observe("loss", step / 10, step=f"train/{step}")
    m = store.metrics("wf", "loss")
    assert m is not None and (m.count, m.runs) == (6, 2)


def test_units_are_those_stated_and_none_is_not_a_unit(store: fe.Store) -> None:
    store.start_run("wf").observe("latency", 3, unit="ms")
    store.start_run("wf").observe("latency", 4)
    store.start_run("wf").observe("latency", 0.005, unit="s")
    m = store.metrics("wf", "latency")
    assert m is not None and m.units == ("ms", "s")
    unitless = store.start_run("other")
    unitless.observe("n", 1)
    n = store.metrics("other", "n")
    assert n is not None and n.units == ()


def test_x_observations_are_in_recording_order_with_their_step(store: fe.Store) -> None:
    run = store.start_run("wf")
    run.observe("zeta", 1, step="train/0")
    run.observe("alpha", 2.5, unit="s")
    assert store.get_run_record(run.id)["x-observations"] == [
        {"name": "zeta", "value": 1, "step": "train/0"},
        {"name": "alpha", "value": 2.5, "unit": "s"},
    ]


@pytest.mark.parametrize(
    "kwargs",
    [{"name": ""}, {"name": "m", "unit": ""}, {"name": "m", "step": "a//b"}, {"name": "m", "step": "01"}],
)
def test_bad_observation_arguments_are_refused_and_write_nothing(
    store: fe.Store, kwargs: dict[str, str]
) -> None:
    run = store.start_run("wf")
    with pytest.raises(fe.InvalidRequest):
        run.observe(value=1, **kwargs)  # type: ignore[arg-type]
    assert "x-observations" not in store.get_run_record(run.id)
