"""The packed columns behind a run handle's state answer as the dicts they replace did."""

from __future__ import annotations

from array import array

from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.recording.state import RunState, _Texts, _widened

_TEXT = st.text(alphabet="ab:/é0", max_size=4)
_STEP = st.tuples(_TEXT, st.booleans(), st.sampled_from(["add", "add", "add", "compact", "bulk"]))


@settings(max_examples=200, deadline=None)
@given(st.lists(_STEP, max_size=3_000), st.lists(_TEXT, max_size=20))
def test_texts_find_and_text_match_a_dict_and_a_list(
    steps: list[tuple[str, bool, str]], probes: list[str]
) -> None:
    texts, model, numbered = _Texts(), {}, []
    for text, indexed, op in steps:
        if op == "compact":
            texts.compact()
        elif op == "bulk":
            texts.bulk = True
        number = texts.add(text, indexed=indexed)
        assert number == len(numbered)
        numbered.append(text)
        if indexed:
            model[text] = number  # the later number wins, as in a dict
    for n, text in enumerate(numbered):
        assert texts.text(n) == text
    for text in [*model, *probes]:
        assert texts.find(text) == model.get(text)
    texts.compact()
    for text in [*model, *probes]:
        assert texts.find(text) == model.get(text)
    assert len(texts) == len(numbered)


def test_many_texts_cross_the_recent_dict_into_the_sorted_columns() -> None:
    texts = _Texts()
    for i in range(20_000):
        texts.add(f"begin:0:s/{i}")
    assert len(texts._recent) < 20_000 // 4  # most are packed
    assert [texts.find(f"begin:0:s/{i}") for i in (0, 9_999, 19_999)] == [0, 9_999, 19_999]
    assert texts.find("begin:0:s/20000") is None


def test_a_four_byte_column_widens_when_a_number_does_not_fit() -> None:
    narrow = array("I", [1, 2])
    wide = _widened(narrow, 2**40)
    assert wide.typecode == "Q" and list(wide) == [1, 2, 2**40]
    signed = _widened(array("i", [-1]), -(2**40))
    assert signed.typecode == "q" and list(signed) == [-1, -(2**40)]


def _view(state: RunState) -> dict[str, object]:
    """Everything a recording call can be checked against, as plain data."""
    return {
        "scalars": (state.seq, state.entries, state.generation, state.status, state.last_digest),
        "facts": list(state.facts),
        "status": dict(state.path_status),
        "begun": dict(state.begun_in),
        "attempts": dict(state.max_attempt),
        "entries": dict(state.path_entries),
        "open": sorted(state.open_invokes),
        "in_flight": state.in_flight(),
        "concluded": (state.concluded, sorted(state.children), state.dry_run, state.workflow),
    }


_STEPS = st.lists(
    st.tuples(
        st.sampled_from(["a", "b/0", "b/1", "c"]),
        st.sampled_from(["begin", "invoke", "result", "end", "recover"]),
    ),
    max_size=40,
)


@settings(max_examples=60, deadline=None)
@given(_STEPS)
def test_resume_folds_the_same_state_the_live_handle_built(steps: list[tuple[str, str]]) -> None:
    """``RunState.fold`` (a resume: light decoding, keys indexed in one go) against ``apply``
    (each call as it is recorded), over histories with retries and recoveries."""
    art = "sha256:" + "e" * 64
    with fe.Store.open(":memory:") as store:
        run = store.start_run("wf", run_id="r")
        for path, op in steps:
            state = run._state
            try:
                if op == "begin":
                    run.begin_step(path, arguments={"p": path})
                elif op == "invoke":
                    run.invoke(path, state.next_attempt(path), "op", art, "not-dispatched")
                elif op == "result":
                    pending = sorted(state.open_invokes)
                    if pending:
                        run.result(*pending[0], "failed", code="x")
                elif op == "end":
                    run.end_step(path, "succeeded")
                else:
                    run.recover([f.seq for f in run.in_flight() if f.path == path])
            except fe.Conflict:
                pass
        resumed = store.resume_run("r")._state
        assert _view(resumed) == _view(run._state)
        for seq in range(1, run._state.seq + 1):
            key = store._log_row("r", seq).key  # type: ignore[union-attr]
            assert resumed.seen(key) == run._state.seen(key) is not None
        assert resumed.seen("never") is None


@settings(max_examples=200, deadline=None)
@given(st.lists(_TEXT, max_size=300), st.integers(1, 50), st.lists(_TEXT, max_size=20))
def test_texts_saved_in_pieces_load_back_the_same(texts: list[str], size: int, probes: list[str]) -> None:
    """``piece`` over consecutive ranges, then ``load``: the same texts, found the same
    (the empty text, a gap or a one-off key, is never indexed: the saved index skips it)."""
    saved = _Texts()
    for text in texts:
        saved.add(text, indexed=text != "")
    pieces = [saved.piece(a, min(a + size, len(texts))) for a in range(0, len(texts), size)]
    loaded = _Texts()
    loaded.load(pieces, saved.indexed)
    assert [loaded.text(n) for n in range(len(loaded))] == texts
    assert loaded.indexed == saved.indexed
    for text in [*texts, *probes]:
        if text:
            assert loaded.find(text) == saved.find(text)
