"""run.batch(): several calls, one transaction, all or nothing."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.replay.baseline import baseline_document

ARTIFACT = "sha256:" + "cd" * 32


def _rows(store: fe.Store) -> int:
    return int(store.backend.cursor().execute("SELECT count(*) FROM log").fetchall()[0][0])


def _commits(store: fe.Store) -> list[int]:
    """One entry per transaction the store commits: each is one ``append`` of the backend."""
    seen: list[int] = []
    append = store.log.append

    def counted(*args: Any, **kwargs: Any) -> Any:
        result = append(*args, **kwargs)
        seen.append(1)
        return result

    store.log.append = counted  # type: ignore[method-assign]
    return seen


def _step(run: fe.Run, i: int) -> list[int]:
    path = f"s/{i}"
    return [
        run.begin_step(path, arguments={"i": i}),
        run.invoke(path, 1, "op", ARTIFACT, "not-dispatched", arguments={"i": i}),
        run.result(path, 1, "succeeded", result={"ok": i}),
        run.end_step(path, "succeeded"),
    ]


def _without_times(doc: dict[str, Any]) -> dict[str, Any]:
    """The document without its run id and its times (baselines leave out the same)."""
    return baseline_document(doc)


def test_a_batch_is_one_commit_and_records_what_single_calls_record(store: fe.Store) -> None:
    single = store.start_run(workflow="batch/w")
    _step(single, 0)
    batched = store.start_run(workflow="batch/w")
    commits = _commits(store)
    with batched.batch():
        seqs = _step(batched, 0)
    assert len(commits) == 1
    assert seqs == [2, 3, 4, 5]
    assert batched.last_position == store.log.max_position()
    assert _without_times(store.get_run_record(batched.id)) == _without_times(store.get_run_record(single.id))
    assert store.verify_run(batched.id).ok
    assert store.check_projections() == []


def test_an_exception_inside_writes_nothing_and_the_handle_goes_on(store: fe.Store) -> None:
    run = store.start_run(workflow="batch/w")
    before = _rows(store)
    with pytest.raises(RuntimeError), run.batch():
        _step(run, 0)
        raise RuntimeError("the executor died mid-batch")
    assert _rows(store) == before
    assert run.begin_step("s/0") == 2  # the handle is back at what the log says
    assert store.get_step_record(run.id, "s/0")["status"] == "active"


def test_a_refusal_inside_propagates_and_nothing_of_the_batch_is_kept(store: fe.Store) -> None:
    run = store.start_run(workflow="batch/w")
    before = _rows(store)
    with pytest.raises(fe.RecordError) as refused, run.batch():
        run.begin_step("a")
        run.result("a", 1, "succeeded")  # no invoke: a conflict
    assert refused.value.code == "conflict"
    assert _rows(store) == before


def test_batches_do_not_nest(store: fe.Store) -> None:
    run = store.start_run(workflow="batch/w")
    with pytest.raises(fe.InvalidRequest), run.batch(), run.batch():
        pass  # pragma: no cover - the inner batch refuses before the body runs


def test_a_batch_whose_run_moved_on_elsewhere_is_refused_whole_and_fences(store: fe.Store) -> None:
    run = store.start_run(workflow="batch/w")
    other = store.resume_run(run.id)
    before = _rows(store)
    with pytest.raises(fe.Conflict), run.batch():
        run.begin_step("a")
        other.begin_step("b")  # another handle appends first
        run.begin_step("c")
    assert _rows(store) == before + 1  # only the other handle's event
    with pytest.raises(fe.Conflict):
        run.begin_step("d")
    assert [s["path"] for s in store.get_run_record(run.id)["steps"].values()] == ["b"]


@settings(max_examples=25, deadline=None)
@given(cuts=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=5))
def test_any_grouping_into_batches_gives_the_same_record(cuts: list[int]) -> None:
    with fe.Store.open(":memory:") as store:
        single = store.start_run(workflow="batch/p")
        batched = store.start_run(workflow="batch/p")
        for i, n in enumerate(cuts):
            _step(single, i)
            with batched.batch():
                _step(batched, i)
                if n % 2:
                    batched.observe(f"m{i}", n)
            if n % 2:
                single.observe(f"m{i}", n)
        single.conclude("succeeded")
        with batched.batch():
            batched.conclude("succeeded")
        assert _without_times(store.get_run_record(batched.id)) == _without_times(
            store.get_run_record(single.id)
        )
        assert store.check_projections() == []
