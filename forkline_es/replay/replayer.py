"""The replay guard: serve recorded results to a re-executing executor, stop at the first
call that differs from the record.

The executor makes the same calls it makes on a ``Run`` (``begin_step``, ``invoke``,
``end_step``, ``child``, ``conclude``), on the Replayer instead. Each call is turned into
the entry it would record and compared with the next active entry of the original, in
recorded order, with the same comparison ``diff_documents`` uses. ``invoke`` returns the
recorded result of that (path, attempt); the recorded ``result`` entry is consumed in its
original position. Attempts are matched by their order, not their number, so a replay
that numbers them differently (the original recovered from a crash) is faithful; a
recorded retried attempt the replay does not make is passed over. Only behaviour
differences are violations (``diff``'s classes); ``strict=True`` makes every difference
one. With ``record=True`` the replay is recorded as a successor run
(``predecessor`` set), including the offending call, so ``diff_runs(original, successor)``
reports the same first divergence as the guard.

A slot whose value retention removed cannot be checked: ``compare_entries`` lets it match
a replayed slot of the same class that is present or not-recorded, for the guard and the
diff alike. Slots the Replayer fills from such a record itself (inputs, trigger, served
results) replay as ``not-recorded``, in the successor and in the guard's own step view.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol

from forkline_es._logging import get_logger
from forkline_es.errors import DeterminismViolation, RecordError
from forkline_es.recording.markers import MISSING, NOT_RECORDED, Partial, Sensitive
from forkline_es.recording.payloads import SLOT_CLASS
from forkline_es.recording.state import check_branch
from forkline_es.replay.diff import (
    BEHAVIOUR,
    KIND_CLASS,
    Change,
    Divergence,
    entry_changes,
    entry_facts,
)
from forkline_es.replay.entries import RETRY, active_entries, entry_path, keys_of
from forkline_es.values import decode_value, encode_value

if TYPE_CHECKING:
    from forkline_es.recording.run import Run

__all__ = ["Recorded", "Replayer"]

_log = get_logger("forkline_es.replay")


class Host(Protocol):
    """What a replay asks of the store (``store.Store``, above this package)."""

    @property
    def is_sensitive(self) -> Callable[[Any], bool] | None: ...

    def get_run_record(self, run_id: str) -> dict[str, Any]: ...

    def start_run(
        self,
        workflow: str,
        *,
        standard: str,
        name: str | None,
        inputs: Any,
        trigger: Any,
        dry_run: bool,
        predecessor: str | None,
        pins: Mapping[str, str] | None,
    ) -> Run: ...


@dataclass(frozen=True, slots=True)
class Recorded:
    """The recorded outcome of one attempt; ``result``/``details`` are MISSING when unavailable."""

    path: str
    attempt: int
    dispatch: str | None
    code: str | None
    result: Any
    details: Any


def _slot(name: str, arg: Any, is_sensitive: Any) -> dict[str, Any] | None:
    """The slot a recorder call with ``arg`` would show in the document."""
    if arg is MISSING:
        return None
    slot: dict[str, Any] = {"class": SLOT_CLASS[name]}
    if isinstance(arg, Partial):
        slot["suppressed"] = [list(p) for p in arg.suppressed]
        arg = arg.value
    if arg is NOT_RECORDED:
        slot["state"] = "not-recorded"
    elif isinstance(arg, Sensitive) or (is_sensitive is not None and is_sensitive(arg)):
        slot["state"] = "withheld"
    else:
        slot["state"] = "present"
        slot["value"] = encode_value(arg)
    return slot


def _arg(slot: Mapping[str, Any] | None) -> Any:
    """The recorder argument that reproduces a recorded slot (removed -> not-recorded)."""
    if slot is None:
        return MISSING
    state = slot.get("state")
    value: Any
    if state == "present":
        value = decode_value(slot["value"])
    elif state == "withheld":
        value = Sensitive(None)
    else:
        value = NOT_RECORDED
    suppressed = slot.get("suppressed")
    return Partial(value, suppressed) if suppressed and value is not NOT_RECORDED else value


def _replayed(slots: Mapping[str, Any]) -> dict[str, Any]:
    """Recorded slots as the successor records them through ``_arg`` (removed -> not-recorded)."""
    out = dict(slots)
    for name, slot in slots.items():
        if slot.get("state") == "removed":
            out[name] = {"class": slot.get("class"), "state": "not-recorded"}
    return out


def _value(slot: Mapping[str, Any] | None) -> Any:
    if slot is None or slot.get("state") != "present":
        return MISSING
    return decode_value(slot["value"])


@dataclass(slots=True)
class _Step:
    """The replayed step view, folded like projections.steps so step entries compare exactly."""

    path: str
    status: str = "active"
    outcome: str | None = None
    code: str | None = None
    branch: dict[str, Any] | None = None
    slots: dict[str, Any] | None = None

    def render(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "path": self.path,
            "status": self.status,
            "payloads": dict(self.slots or {}),
        }
        if self.status == "ended":
            record["outcome"] = self.outcome
        if self.code is not None:
            record["code"] = self.code
        if self.branch is not None:
            record["branch"] = self.branch
        return record


def _same_place(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> bool:
    """Whether a call's entry stands where the expected one does: the same kind and step
    (and step status); an attempt's number does not place it, its order does."""
    kind = expected.get("kind")
    if kind != actual.get("kind"):
        return False
    if kind == "conclude":
        return True
    if kind == "step":
        return (expected.get("step") or {}).get("status") == (actual.get("step") or {}).get("status") and (
            entry_path(expected) == entry_path(actual)
        )
    return entry_path(expected) == entry_path(actual)


class Replayer:
    """Guard a replay of ``run_id``: see the module docstring.

    Use as a context manager (``finish`` runs on a clean exit) or call ``finish()`` when
    the executor is done; a record with entries left over is a ``missing-step``.
    """

    def __init__(self, store: Host, run_id: str, *, record: bool = False, strict: bool = False) -> None:
        self.store = store
        self.run_id = run_id
        self.strict = strict
        document = store.get_run_record(run_id)
        self._entries = active_entries(document)
        self._keys = keys_of(self._entries)
        self._results: dict[tuple[str, int], int] = {}  # (path, attempt) -> its result entry
        for i, entry in enumerate(self._entries):
            if entry.get("kind") == "result":
                self._results.setdefault((str(entry.get("path")), int(entry.get("attempt") or 0)), i)
        self._done = [False] * len(self._entries)
        self._served: dict[int, int] = {}  # served result entry -> the replay's attempt number
        self._steps: dict[str, _Step] = {}
        self._at = 0
        self.run: Run | None = None
        if self._entries and self._entries[0].get("kind") == "start":
            self._consume(self._at)
        if record:
            self.run = self._start_successor(document)

    # -- the executor's calls ------------------------------------------------------------

    def begin_step(self, path: str, arguments: Any = MISSING) -> None:
        self._flush()
        step = self._steps.get(path) or _Step(path)
        slots = self._slots(arguments=arguments)
        after = _Step(
            path, step.status, step.outcome, step.code, step.branch, {**(step.slots or {}), **slots}
        )
        self._check({"kind": "step", "step": after.render()}, lambda run: run.begin_step(path, arguments))
        self._steps[path] = after

    def invoke(
        self,
        path: str,
        attempt: int,
        operation: str,
        artifact: str,
        dispatch: str | None = None,
        arguments: Any = MISSING,
    ) -> Any:
        """The recorded result value of (path, attempt), decoded; MISSING when unavailable."""
        return self.invoke_recorded(path, attempt, operation, artifact, dispatch, arguments).result

    def invoke_recorded(
        self,
        path: str,
        attempt: int,
        operation: str,
        artifact: str,
        dispatch: str | None = None,
        arguments: Any = MISSING,
    ) -> Recorded:
        """Like ``invoke``, with the recorded dispatch, code and details as well.

        ``dispatch`` defaults to the recorded one, since a replay does not dispatch.
        """
        expected = self._expected()  # passes served results first, as the fold would
        if dispatch is None:
            same = expected is not None and expected.get("kind") == "invoke" and expected.get("path") == path
            dispatch = str(expected.get("dispatch")) if same and expected is not None else "ambiguous"
        actual: dict[str, Any] = {
            "kind": "invoke",
            "path": path,
            "attempt": attempt,
            "operation": operation,
            "artifact": artifact,
            "dispatch": dispatch,
        }
        slots = self._slots(arguments=arguments)
        if slots:
            actual["payloads"] = slots
        chosen = dispatch
        at = self._check(
            actual, lambda run: run.invoke(path, attempt, operation, artifact, chosen, arguments)
        )
        step = self._steps.get(path) or _Step(path)
        kept = {k: v for k, v in (step.slots or {}).items() if k not in ("result", "details")}
        step.slots, step.code = {**kept, **slots}, None
        self._steps[path] = step
        recorded = int(self._entries[at].get("attempt") or 0)  # the record's number for it
        found = self._results.get((path, recorded))
        if found is None or found < at:
            return Recorded(path, attempt, None, None, MISSING, MISSING)
        self._served[found] = attempt
        entry = self._entries[found]
        payloads = entry.get("payloads") or {}
        return Recorded(
            path,
            attempt,
            entry.get("dispatch"),
            entry.get("code"),
            _value(payloads.get("result")),
            _value(payloads.get("details")),
        )

    def end_step(
        self,
        path: str,
        outcome: str,
        code: str | None = None,
        branch: Any = None,
        result: Any = MISSING,
        details: Any = MISSING,
        binding: Any = MISSING,
        event: Any = MISSING,
    ) -> None:
        self._flush()
        step = self._steps.get(path) or _Step(path)
        slots = self._slots(result=result, details=details, binding=binding, event=event)
        after = _Step(
            path,
            "ended",
            outcome,
            code if code is not None else step.code,
            check_branch(branch),
            {**(step.slots or {}), **slots},
        )
        self._check(
            {"kind": "step", "step": after.render()},
            lambda run: run.end_step(path, outcome, code, branch, result, details, binding, event),
        )
        self._steps[path] = after

    def child(self, path: str, child_run_id: str) -> None:
        """A child run started; compared by path here (``diff_runs`` compares its record)."""
        self._check(
            {"kind": "child", "path": path, "child": child_run_id},
            lambda run: run.child(path, child_run_id),
        )
        self._steps.setdefault(path, _Step(path))

    def conclude(
        self,
        status: str,
        path: str | None = None,
        code: str | None = None,
        reason: str | None = None,
        outputs: Any = MISSING,
    ) -> None:
        actual: dict[str, Any] = {"kind": "conclude", "status": status}
        for member, value in (("path", path), ("code", code), ("reason", reason)):
            if value is not None:
                actual[member] = value
        slots = self._slots(outputs=outputs)
        if slots:
            actual["payloads"] = slots
        self._check(actual, lambda run: run.conclude(status, path, code, reason, outputs))

    def finish(self) -> None:
        """Check that the replay made every recorded call; else a ``missing-step``."""
        self._flush()
        expected = self._expected()
        if expected is not None:
            self._violate("missing-step", expected, None, [("", expected, None)])

    def __enter__(self) -> Replayer:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        if t is None:
            self.finish()

    # -- the cursor ----------------------------------------------------------------------

    def _slots(self, **args: Any) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name, arg in args.items():
            slot = _slot(name, arg, self.store.is_sensitive)
            if slot is not None:
                out[name] = slot
        return out

    def _start_successor(self, document: Mapping[str, Any]) -> Run:
        run = document.get("run") or {}
        start = self._entries[0] if self._entries and self._entries[0].get("kind") == "start" else {}
        payloads = start.get("payloads") or {}
        successor = self.store.start_run(
            workflow=run["workflow"],
            standard=str(document.get("standard")),
            name=run.get("name"),
            inputs=_arg(payloads.get("inputs")),
            trigger=_arg(payloads.get("trigger")),
            dry_run=bool(run.get("dry_run")),
            predecessor=self.run_id,
            pins=document.get("pins"),
        )
        _log.info("replay_recording", run_id=successor.id, predecessor=self.run_id)
        return successor

    def _consume(self, at: int) -> None:
        self._done[at] = True

    def _flush(self) -> None:
        """Pass served results (recording them into the successor) and consumed entries."""
        while self._at < len(self._entries):
            at = self._at
            if not self._done[at] and at in self._served:
                entry = self._entries[at]
                payloads = entry.get("payloads") or {}
                path = str(entry.get("path"))
                step = self._steps.get(path)
                if step is not None:
                    step.slots = {**(step.slots or {}), **_replayed(payloads)}
                    step.code = entry.get("code")
                if self.run is not None:
                    self.run.result(
                        path,
                        self._served[at],  # as the replay numbered the attempt
                        str(entry["dispatch"]),
                        entry.get("code"),
                        _arg(payloads.get("result")),
                        _arg(payloads.get("details")),
                    )
                self._consume(at)
            if not self._done[at]:
                return
            self._at += 1

    def _expected(self) -> dict[str, Any] | None:
        self._flush()
        return self._entries[self._at] if self._at < len(self._entries) else None

    def _pass_retry(self) -> None:
        """Pass over the recorded retried attempt at the cursor (its invoke and result):
        the replay went on without it, which is infrastructure, not behaviour."""
        entry = self._entries[self._at]
        self._consume(self._at)
        result = self._results.get((str(entry.get("path")), int(entry.get("attempt") or 0)))
        if result is not None and result > self._at:
            self._done[result] = True

    def _check(self, actual: dict[str, Any], record: Any) -> int:
        """Compare the call's entry with the next expected one; consume it or raise."""
        expected = self._expected()
        while (
            expected is not None
            and self._keys[self._at][3] == RETRY
            and expected.get("kind") == "invoke"
            and not _same_place(expected, actual)
        ):
            self._pass_retry()
            expected = self._expected()
        if expected is None:
            self._record(record, failing=True)
            self._violate("extra-step", None, actual, [("", None, actual)])
        assert expected is not None
        if not _same_place(expected, actual):
            self._record(record, failing=True)
            self._violate("missing-step", expected, actual, [("", expected, None), ("", None, actual)])
        changes = entry_changes(expected, actual)
        if changes:
            phase = self._keys[self._at][3]
            counted = [
                (kind, [change for _, _, change in facts])
                for kind, facts in entry_facts(str(expected.get("kind")), changes, phase, times=False)
                if self.strict or KIND_CLASS[kind] == BEHAVIOUR
            ]
            if counted:
                self._record(record, failing=True)
                self._violate(counted[0][0], expected, actual, [c for _, found in counted for c in found])
        self._record(record, failing=False)
        at = self._at
        self._consume(at)
        return at

    def _record(self, record: Any, *, failing: bool) -> None:
        if self.run is None:
            return
        if not failing:
            record(self.run)
            return
        # The offending call too, so diff_runs sees what the guard saw; the log may refuse
        # it (e.g. an invoke of a step never begun), and then nothing was written.
        with suppress(RecordError):
            record(self.run)

    def _violate(
        self,
        kind: str,
        expected: Mapping[str, Any] | None,
        actual: Mapping[str, Any] | None,
        changes: list[Change],
    ) -> None:
        shown = expected if kind != "extra-step" or actual is None else actual
        path = entry_path(shown) if shown is not None else None
        seq = expected.get("seq") if expected is not None and kind != "extra-step" else None
        divergence = Divergence(kind, path, seq, None, changes)
        _log.info("replay_diverged", run_id=self.run_id, kind=kind, path=path, seq=seq)
        raise DeterminismViolation(
            kind,
            path,
            seq,
            dict(expected) if expected is not None else None,
            dict(actual) if actual is not None else None,
            changes,
            f"replay of run {self.run_id} is not deterministic: {divergence.describe()}",
        )
