"""``diff_runs`` reads stored runs from their canonical bytes and decodes entries lazily:
its result must equal diffing the two ``get_run_record`` documents, whatever differs."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe

from .histories import MUTATIONS, Step, histories, mutate, record


def _documents_diff(store: fe.Store, a: str, b: str, window: int = 64) -> fe.RunDiff:
    return fe.diff_documents(
        store.get_run_record(a), store.get_run_record(b), resolve=store.get_run_record, window=window
    )


@settings(max_examples=60)
@given(histories(), st.data())
def test_diff_runs_equals_the_diff_of_the_documents(h, data) -> None:
    how = data.draw(st.sampled_from(["same", "mutate", "insert", "remove"]))
    other = h
    if how == "mutate":
        k = data.draw(st.integers(0, len(h.steps) - 1))
        other = mutate(h, k, data.draw(st.sampled_from(sorted(MUTATIONS))))
    elif how == "insert":
        k = data.draw(st.integers(0, len(h.steps)))
        other = replace(h, steps=(*h.steps[:k], Step("inserted", retried=True), *h.steps[k:]))
    elif how == "remove":
        k = data.draw(st.integers(0, len(h.steps) - 1))
        other = replace(h, steps=h.steps[:k] + h.steps[k + 1 :])
    window = data.draw(st.sampled_from([1, 2, 64]))
    with fe.Store.open(":memory:") as store:
        a, _ = record(store, h)
        b, _ = record(store, other)
        for x, y in ((a, b), (b, a), (a, a)):
            assert fe.diff_runs(store, x, y, window=window) == _documents_diff(store, x, y, window)


def _with_child(store: fe.Store, workflow: str, crash: bool, open_end: bool) -> str:
    run = store.start_run("wf/parent", inputs={"n": 1})
    begun = run.begin_step("a", arguments=[1, 2])
    invoked = run.invoke("a", 1, "http.get", "sha256:" + "ab" * 32, "ambiguous", arguments=[1, 2])
    if crash:
        run.recover([begun, invoked])
        run.begin_step("a", arguments=[1, 2.0])
    run.end_step("a", "succeeded")
    child = store.start_run(workflow, parent=run.id)
    child.begin_step("c")
    child.end_step("c", "failed" if crash else "succeeded")
    child.conclude("succeeded")
    run.child("b", child.id)
    if not open_end:
        run.conclude("succeeded")
    return run.id


@settings(max_examples=20)
@given(
    st.lists(
        st.tuples(st.sampled_from(["wf/c", "wf/d"]), st.booleans(), st.booleans()), min_size=2, max_size=2
    )
)
def test_recoveries_children_and_open_runs_diff_as_their_documents(shapes) -> None:
    with fe.Store.open(":memory:") as store:
        a, b = (_with_child(store, *shape) for shape in shapes)
        assert fe.diff_runs(store, a, b) == _documents_diff(store, a, b)


def test_user_values_named_like_uncompared_members_still_differ(tmp_path) -> None:
    """The byte shortcut that takes seqs and times out never takes a user's value out."""
    with fe.Store.open(tmp_path / "r.db") as store:
        ids = []
        for n in (1, 2):
            run = store.start_run("wf")
            run.begin_step("s", arguments={"seq": n, "x-at": f"t{n}"})
            run.end_step("s", "succeeded")
            run.conclude("succeeded")
            ids.append(run.id)
        diff = fe.diff_runs(store, *ids)
    assert not diff.is_match
    first = diff.first
    assert first is not None and first.kind == "arguments" and len(first.changes) == 2
