"""A small model of an executor's calls, recorded on a Run or replayed on a Replayer.

A ``Step`` is one action step: begin, one or two attempts (the first may fail), end with
an outcome and a branch. Recording returns, for every (step index, what) the entry seq,
so a test can say exactly where a mutation must be reported.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from hypothesis import strategies as st

import forkline_es as fe

ART = "sha256:" + "ab" * 32
ART2 = "sha256:" + "cd" * 32

values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 5)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=4),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=6,
)


@dataclass(frozen=True)
class Step:
    path: str
    arguments: Any = None
    operation: str = "http.get"
    retried: bool = False
    result: Any = 0
    outcome: str = "succeeded"
    branch: dict[str, Any] | None = None


@dataclass(frozen=True)
class History:
    inputs: Any = None
    steps: tuple[Step, ...] = ()
    status: str = "succeeded"
    outputs: Any = field(default=None)


@st.composite
def steps(draw: st.DrawFn, path: str, values: st.SearchStrategy[Any] = values) -> Step:
    return Step(
        path=path,
        arguments=draw(values),
        operation=draw(st.sampled_from(["http.get", "db.put"])),
        retried=draw(st.booleans()),
        result=draw(values),
        outcome=draw(st.sampled_from(["succeeded", "failed"])),
        branch=draw(st.none() | st.builds(lambda n: {"arm": n}, st.integers(0, 2))),
    )


@st.composite
def histories(
    draw: st.DrawFn, min_steps: int = 1, max_steps: int = 5, values: st.SearchStrategy[Any] = values
) -> History:
    n = draw(st.integers(min_steps, max_steps))
    return History(
        inputs=draw(values),
        steps=tuple(draw(steps(f"s{i}", values)) for i in range(n)),
        status=draw(st.sampled_from(["succeeded", "failed"])),
        outputs=draw(values),
    )


def _conclude_args(h: History) -> dict[str, Any]:
    return {"outputs": h.outputs} if h.status == "succeeded" else {}


def record(store: fe.Store, h: History) -> tuple[str, dict[tuple[int, str], int]]:
    """Record ``h`` as a new run; returns its id and where each step's calls landed."""
    run = store.start_run("wf/replay", inputs=h.inputs)
    at: dict[tuple[int, str], int] = {}
    for k, s in enumerate(h.steps):
        at[k, "begin"] = run.begin_step(s.path, arguments=s.arguments)
        attempts = 2 if s.retried else 1
        for attempt in range(1, attempts + 1):
            seq = run.invoke(s.path, attempt, s.operation, ART, "ambiguous", arguments=s.arguments)
            at.setdefault((k, "invoke"), seq)
            last = attempt == attempts
            at[k, "result"] = run.result(
                s.path,
                attempt,
                "succeeded" if last else "failed",
                None if last else "retry",
                result=s.result if last else None,
            )
        at[k, "end"] = run.end_step(s.path, s.outcome, branch=s.branch)
    at[-1, "conclude"] = run.conclude(h.status, **_conclude_args(h))
    return run.id, at


#: Where a crash may strike in a step: after its begin, after an attempt's invoke or
#: result, or after its end. ``"step"`` recovery supersedes the step so far (it is begun
#: again), ``"attempt"`` only the attempt in flight (tried again under the next number).
CRASH_POINTS = ("begin", "invoke", "result", "end")


@st.composite
def crashes(draw: st.DrawFn, h: History) -> frozenset[tuple[int, str, str]]:
    """A set of (step index, point, mode) where the process dies once."""
    points = st.tuples(
        st.integers(0, max(len(h.steps) - 1, 0)),
        st.sampled_from(CRASH_POINTS),
        st.sampled_from(["step", "attempt"]),
    )
    return frozenset(draw(st.lists(points, max_size=4)))


def record_crashing(
    store: fe.Store, h: History, crash_at: frozenset[tuple[int, str, str]]
) -> tuple[str, dict[tuple[int, str], int]]:
    """Record ``h`` as ``record`` does, with the process dying at ``crash_at``: each time a
    new process resumes the run and recovers, superseding the work in flight, and the
    executor goes on from there with the same calls and answers. Attempt numbers keep
    counting, as an executor's ``next_attempt`` does after a recovery."""
    run = store.start_run("wf/replay", inputs=h.inputs)
    at: dict[tuple[int, str], int] = {}
    pending = set(crash_at)

    def crash(k: int, point: str, step_work: list[int], attempt_work: list[int]) -> str | None:
        """Die here if asked: the recovery's mode ("step" restarts the step), else None."""
        nonlocal run
        for mode in ("step", "attempt"):
            if (k, point, mode) not in pending:
                continue
            pending.discard((k, point, mode))
            run = store.resume_run(run.id)  # a new process
            if point == "end":
                run.recover([])  # nothing was in flight
                return None
            if mode == "step" or point == "begin":
                run.recover(step_work)
                return "step"
            run.recover(attempt_work)
            return "attempt"
        return None

    for k, s in enumerate(h.steps):
        number = 0  # the last attempt number used for this step, superseded ones included
        restart = True
        while restart:
            at.pop((k, "invoke"), None)  # a restarted step's first invoke is the new one
            work = [run.begin_step(s.path, arguments=s.arguments)]
            at[k, "begin"] = work[0]
            restart = crash(k, "begin", work, []) == "step"
            attempts = 2 if s.retried else 1
            done = 0
            while not restart and done < attempts:
                number += 1
                last = done + 1 == attempts
                invoke = run.invoke(s.path, number, s.operation, ART, "ambiguous", arguments=s.arguments)
                how = crash(k, "invoke", [*work, invoke], [invoke])
                if how is not None:
                    restart = how == "step"
                    continue
                result = run.result(
                    s.path,
                    number,
                    "succeeded" if last else "failed",
                    None if last else "retry",
                    result=s.result if last else None,
                )
                how = crash(k, "result", [*work, invoke, result], [invoke, result])
                if how is not None:
                    restart = how == "step"
                    continue
                work += [invoke, result]
                at.setdefault((k, "invoke"), invoke)
                at[k, "result"] = result
                done += 1
        at[k, "end"] = run.end_step(s.path, s.outcome, branch=s.branch)
        crash(k, "end", [], [])
    at[-1, "conclude"] = run.conclude(h.status, **_conclude_args(h))
    return run.id, at


def replay(rp: fe.Replayer, h: History) -> None:
    """Drive the Replayer with the calls ``h`` makes (results come from the record)."""
    for s in h.steps:
        rp.begin_step(s.path, arguments=s.arguments)
        for attempt in range(1, (2 if s.retried else 1) + 1):
            rp.invoke(s.path, attempt, s.operation, ART, arguments=s.arguments)
        rp.end_step(s.path, s.outcome, branch=s.branch)
    rp.conclude(h.status, **_conclude_args(h))
    rp.finish()


def other(value: Any) -> Any:
    """A value surely different from ``value`` in the typed domain."""
    return ["changed", value]


#: mutation -> (where in the record it first shows, the divergence kind)
MUTATIONS: dict[str, tuple[str, str]] = {
    "arguments": ("begin", "arguments"),
    "operation": ("invoke", "operation"),
    "result": ("result", "result"),
    "outcome": ("end", "outcome"),
    "branch": ("end", "branch"),
}


def mutate(h: History, k: int, what: str) -> History:
    s = h.steps[k]
    if what == "arguments":
        s = replace(s, arguments=other(s.arguments))
    elif what == "operation":
        s = replace(s, operation="changed.op")
    elif what == "result":
        s = replace(s, result=other(s.result))
    elif what == "outcome":
        s = replace(s, outcome="skipped" if s.outcome != "skipped" else "failed")
    elif what == "branch":
        s = replace(s, branch={"case": "other"})
    else:
        raise AssertionError(what)
    return replace(h, steps=(*h.steps[:k], s, *h.steps[k + 1 :]))


def variant_of(h: History, data: st.DataObject) -> History:
    """The history a replay runs: the same, one mutation, one insertion or one removal."""
    how = data.draw(st.sampled_from(["same", "mutate", "insert", "remove"]))
    if how == "mutate":
        return mutate(
            h, data.draw(st.integers(0, len(h.steps) - 1)), data.draw(st.sampled_from(sorted(MUTATIONS)))
        )
    if how == "insert":
        k = data.draw(st.integers(0, len(h.steps)))
        return replace(h, steps=(*h.steps[:k], Step("inserted"), *h.steps[k:]))
    if how == "remove":
        k = data.draw(st.integers(0, len(h.steps) - 1))
        return replace(h, steps=h.steps[:k] + h.steps[k + 1 :])
    return h


def guarded(rp: fe.Replayer, h: History) -> fe.DeterminismViolation | None:
    """Replay ``h`` through the guard: its violation, or None when the replay passed."""
    try:
        replay(rp, h)
    except fe.DeterminismViolation as v:
        return v
    return None


def assert_guard_agrees(violation: fe.DeterminismViolation | None, diff: fe.RunDiff) -> None:
    """The guard's first violation is the recorded diff's first divergence (kind, path and
    A's seq), and no violation means the two runs match."""
    if violation is None:
        assert diff.is_match, diff.first
    else:
        assert diff.first is not None
        assert (violation.kind, violation.path, violation.seq) == (
            diff.first.kind,
            diff.first.path,
            diff.first.seq_a,
        )
