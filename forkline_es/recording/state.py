"""The run aggregate: a fold of one run's events that every recording call is checked against.

``RunState.apply(row, event)`` folds an event that is already in the log; the
``check_*`` methods raise a coded refusal *before* anything is appended. A handle keeps
its state cached, so a call costs one in-memory check and one append, not a re-read.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from forkline_es.errors import Conflict, InvalidRequest, shown
from forkline_es.log.events import (
    ENTRY_KINDS,
    ONE_OFF_KEY,
    ActionInvoked,
    ActionResult,
    ArtifactAdded,
    ChildStarted,
    EventBody,
    ForklineLogged,
    ManifestRecorded,
    Recovered,
    RunConcluded,
    RunHeld,
    RunResumed,
    RunStarted,
    RunSuspended,
    StepBegun,
    StepEnded,
    encode_body,
)
from forkline_es.log.rows import LogRow
from forkline_es.paths import check_path
from forkline_es.values import check_text, is_text
from forkline_es.vocabulary import (
    INVOKE_DISPATCH,
    RESULT_DISPATCH,
    STEP_OUTCOMES,
    TERMINAL_OUTCOMES,
)

__all__ = [
    "LARGEST_NUMBER",
    "EntryFact",
    "RunState",
    "check_attempt",
    "check_branch",
    "check_path",
    "check_recover_shape",
    "check_text",
    "check_word",
    "orphaned_by",
]

#: The events ``RunState.apply`` folds beyond seq, digest, key and entry facts.
_STATE_EVENTS = (
    RunStarted,
    StepBegun,
    ActionInvoked,
    ActionResult,
    StepEnded,
    ChildStarted,
    RunSuspended,
    RunHeld,
    RunResumed,
    Recovered,
    RunConcluded,
    ArtifactAdded,
    ManifestRecorded,
)


#: The largest count or number argument (attempt, arm, entry seq, log position): SQLite's
#: 64-bit integer, which every such number must fit when it is stored or compared in SQL.
LARGEST_NUMBER: Final = 2**63 - 1


def check_branch(branch: Any) -> dict[str, Any] | None:
    """A branch decision is {case: str}, {arm: int >= 0} or {else: True}."""
    if branch is None:
        return None
    if isinstance(branch, dict) and len(branch) == 1:
        ((k, v),) = branch.items()
        if k == "case" and type(v) is str and (v == "" or is_text(v)):  # "" is a case name too
            return {"case": v}
        if k == "arm" and type(v) is int and 0 <= v <= LARGEST_NUMBER:
            return {"arm": v}
        if k == "else" and v is True:
            return {"else": True}
    raise InvalidRequest(
        f"branch must be {{'case': str}} (Unicode text), {{'arm': int from 0 to 2**63 - 1}} or "
        f"{{'else': True}}, not {shown(branch)}"
    )


def check_word(value: object, allowed: frozenset[str], what: str) -> str:
    if type(value) is not str or value not in allowed:
        raise InvalidRequest(f"{what} must be one of {sorted(allowed)}, not {shown(value)}")
    assert isinstance(value, str)
    return value


def check_labels(labels: object) -> dict[str, str] | None:
    """``labels`` as a run records them: a map of names (text without NUL or ``=``, which the
    CLI's ``--label name=value`` splits on) to string values; None or empty records none."""
    if labels is None:
        return None
    if not isinstance(labels, Mapping):
        raise InvalidRequest(
            f"labels is a map of names to strings, like {{'customer': 'c-42'}}, not {shown(labels)}"
        )
    for name, value in labels.items():
        if not is_text(name) or "\x00" in name or "=" in name:
            raise InvalidRequest(
                f"label name {shown(name)} must be a nonempty string of Unicode text without NUL or '='"
            )
        if type(value) is not str or (value and not is_text(value)) or "\x00" in value:
            raise InvalidRequest(
                f"label {name!r} has the value {shown(value)}: label values are strings of Unicode "
                "text without NUL (convert numbers and other values to text first)"
            )
    return dict(labels) or None


@dataclass(slots=True)
class EntryFact:
    """What recovery and validation need to know about one entry of the run record."""

    entry: int
    log_kind: str
    generation: int
    path: str | None = None
    attempt: int | None = None
    superseded: bool = False


@dataclass(frozen=True, slots=True)
class InFlight:
    """An entry of work a crash may have cut short: ``kind`` is the entry kind (``step``,
    ``invoke``, ``result``, ``child``); ``attempt`` is set for invokes and results."""

    seq: int
    kind: str
    path: str
    attempt: int | None = None


#: Entries that are never work in flight (and that a recovery may not supersede, or concludes).
_NOT_WORK: Final = frozenset({"run-started", "recovered", "run-concluded"})


@dataclass(slots=True)
class RunState:
    """Everything the log says about one run that a recording call can be refused on."""

    run_id: str
    workflow: str = ""
    dry_run: bool = False
    seq: int = 0
    entries: int = 0
    generation: int = 0
    status: str = "active"
    last_digest: str | None = None
    #: idempotency key -> ``_KEPT``-packed (log seq, entry seq or 0, ``call_digest``): a digest,
    #: not the body, in one bytes object, so that a long run's handle stays small (issue 22);
    #: read through ``seen``
    keys: dict[str, bytes] = field(default_factory=dict)
    facts: list[EntryFact] = field(default_factory=list)
    #: path -> entry seqs of every entry naming the path (superseded ones too)
    path_entries: dict[str, list[int]] = field(default_factory=dict)
    max_attempt: dict[str, int] = field(default_factory=dict)
    #: path -> "active" | "ended", over active (not superseded) entries only
    path_status: dict[str, str] = field(default_factory=dict)
    #: path -> generation of the active step-begun entry, if any
    begun_in: dict[str, int] = field(default_factory=dict)
    #: (path, attempt) invoked in the current generation, without a result yet
    open_invokes: set[tuple[str, int]] = field(default_factory=set)
    children: set[str] = field(default_factory=set)
    concluded: bool = False
    #: artifact name -> the sha256 of its content: a name never changes content
    artifacts: dict[str, str] = field(default_factory=dict)
    #: the digest of the run's manifest: one manifest.json per run, never overwritten
    manifest: str | None = None

    # -- folding ---------------------------------------------------------------------

    def apply(
        self,
        seq: int,
        entry: int | None,
        generation: int,
        key: str,
        digest: str,
        body: bytes,
        event: EventBody,
    ) -> None:
        """Fold one event that is in the log (never called for a refused call)."""
        self.seq = seq
        self.last_digest = digest
        # Remembering a RunRecorder call's key would grow a long run's state by about 500
        # bytes an event, for a key never asked again (an import's keys are asked again).
        if type(event) is not ForklineLogged or not key.startswith(ONE_OFF_KEY):
            self.keys[key] = _KEPT.pack(seq, entry or 0, call_digest(event, body))
        path = getattr(event, "path", None) if entry is not None else None
        if entry is not None:
            self.entries = entry
            attempt = getattr(event, "attempt", None)
            self.facts.append(EntryFact(entry, _kind(event), generation, path, attempt))
            if path is not None:
                self.path_entries.setdefault(path, []).append(entry)
        if not isinstance(event, _STATE_EVENTS):  # artifacts, observations, Forkline events
            return
        match event:  # every class matched here is in _STATE_EVENTS
            case RunStarted():
                self.workflow = event.workflow
                self.dry_run = event.dry_run
            case StepBegun():
                self.path_status[event.path] = "active"
                self.begun_in[event.path] = generation
            case ActionInvoked():
                self.max_attempt[event.path] = max(self.max_attempt.get(event.path, 0), event.attempt)
                self.path_status.setdefault(event.path, "active")
                self.open_invokes.add((event.path, event.attempt))
            case ActionResult():
                self.open_invokes.discard((event.path, event.attempt))
            case StepEnded():
                self.path_status[event.path] = "ended"
            case ChildStarted():
                self.children.add(event.child)
                self.path_status.setdefault(event.path, "active")
            case RunSuspended():
                self.status = "suspended"
            case RunHeld():
                self.status = "held"
            case RunResumed():
                self.status = "active"
            case Recovered():
                self._recover(event.supersedes, generation)
            case RunConcluded():
                self.status = event.status
                self.concluded = True
            case ArtifactAdded():
                self.artifacts[event.name] = event.sha256
            case ManifestRecorded():
                self.manifest = event.digest
            case _:
                pass

    def seen(self, key: str) -> tuple[int, int | None, bytes] | None:
        """(log seq, entry seq or None, call digest) of the call recorded under ``key``, if any."""
        kept = self.keys.get(key)
        if kept is None:
            return None
        seq, entry, digest = _KEPT.unpack(kept)
        return seq, entry or None, digest

    def apply_row(self, row: LogRow) -> None:
        """Fold a row read back from the log (resuming a run, adopting a lost acknowledgement)."""
        self.apply(row.seq, row.entry, row.generation, row.key, row.digest, row.body.encode(), row.event())

    def _recover(self, supersedes: list[int], generation: int) -> None:
        self.generation = generation
        self.open_invokes.clear()  # a later result cannot answer an earlier generation's invoke
        touched: set[str] = set()
        for n in supersedes:
            fact = self.facts[n - 1]
            fact.superseded = True
            if fact.path is not None:
                touched.add(fact.path)
        for path in touched:
            active = [self.facts[n - 1] for n in self.path_entries[path] if not self.facts[n - 1].superseded]
            self.begun_in.pop(path, None)
            self.path_status.pop(path, None)
            for fact in active:
                if fact.log_kind == "step-begun":
                    self.begun_in[path] = fact.generation
                status = "ended" if fact.log_kind == "step-ended" else "active"
                if self.path_status.get(path) != "ended":
                    self.path_status[path] = status

    def in_flight(self) -> list[InFlight]:
        """The entries no recovery superseded of every step not ended, in seq order: what a
        recovery after a crash supersedes so the steps run afresh (superseding all of a
        step's entries never orphans one, which ``check_recover`` would refuse)."""
        return [
            InFlight(f.entry, ENTRY_KINDS[f.log_kind], f.path, f.attempt)
            for f in self.facts
            if not f.superseded
            and f.path is not None
            and f.log_kind not in _NOT_WORK
            and self.path_status.get(f.path) != "ended"
        ]

    def next_attempt(self, path: str) -> int:
        """One more than the highest attempt ever invoked at ``path``, superseded ones too:
        attempt numbers are never reused."""
        return self.max_attempt.get(path, 0) + 1

    # -- checks (raise before anything is appended) -----------------------------------

    def check_open(self) -> None:
        if self.concluded:
            raise Conflict(f"run {self.run_id} is concluded ({self.status}); nothing more can be recorded")

    def check_artifact(self, name: str, sha256: str) -> None:
        """Under any key: the projection keeps one artifact per name, and gc keeps its file only."""
        held = self.artifacts.get(name)
        if held is not None and held != sha256:
            raise Conflict(
                f"artifact {name!r} of run {self.run_id} already holds other content ({held}); "
                "record the new content under another name"
            )

    def check_manifest(self, digest: str) -> None:
        """Under any key: a run has one manifest.json, which a different manifest would overwrite."""
        if self.manifest is not None and self.manifest != digest:
            raise Conflict(f"run {self.run_id} already recorded another manifest ({self.manifest})")

    def check_begin(self, path: str) -> None:
        self.check_open()
        if self.path_status.get(path) == "ended":
            raise Conflict(
                f"step {path!r} already ended; a recovery must supersede its entries before it runs again"
            )
        if self.begun_in.get(path) == self.generation:
            raise Conflict(f"step {path!r} already began in generation {self.generation}")

    def check_invoke(self, path: str, attempt: object, dispatch: object) -> None:
        self.check_open()
        check_attempt(attempt)
        check_word(dispatch, INVOKE_DISPATCH, "invoke dispatch")
        if self.path_status.get(path) == "ended":
            raise Conflict(f"step {path!r} already ended; it cannot be invoked again")
        previous = self.max_attempt.get(path, 0)
        assert isinstance(attempt, int)
        if attempt <= previous:
            raise Conflict(
                f"attempt {attempt} of {path!r} is not greater than the previous attempt {previous}"
            )

    def check_result(self, path: str, attempt: object, dispatch: object) -> None:
        self.check_open()
        check_attempt(attempt)
        check_word(dispatch, RESULT_DISPATCH, "result dispatch")
        assert isinstance(attempt, int)
        if (path, attempt) not in self.open_invokes:
            raise Conflict(
                f"no open invoke of {path!r} attempt {attempt} in generation {self.generation}: "
                "record run.invoke(...) first (a result answers an invoke of the active generation, once)"
            )

    def check_end(self, path: str, outcome: object) -> None:
        self.check_open()
        check_word(outcome, STEP_OUTCOMES, "step outcome")
        status = self.path_status.get(path)
        if status is None and outcome not in ("skipped", "cancelled"):
            raise Conflict(
                f"step {path!r} never began and was never invoked; call begin_step first "
                "(only a skipped or cancelled step may end without beginning)"
            )
        if status == "ended":
            raise Conflict(f"step {path!r} already ended")

    def check_child(self, path: str, child: object) -> None:
        self.check_open()
        check_text(child, "child run id")
        if child in self.children:
            raise Conflict(f"child run {child!r} is already recorded")
        if self.path_status.get(path) == "ended":
            raise Conflict(f"step {path!r} already ended; it cannot start a child run")

    def check_status_change(self, to: str) -> None:
        self.check_open()
        allowed = {
            "suspended": {"active"},
            "held": {"active", "suspended"},
            "active": {"suspended", "held"},
        }
        if self.status not in allowed[to]:
            raise Conflict(f"run {self.run_id} is {self.status}; it cannot become {to}")

    def check_recover(self, supersedes: object) -> list[int]:
        self.check_open()
        seqs = check_recover_shape(supersedes)
        for n in seqs:
            if not 1 <= n <= self.entries:
                raise Conflict(f"recovery supersedes entry {n}, which is not an earlier entry of this run")
            fact = self.facts[n - 1]
            if fact.log_kind in ("run-started", "recovered"):
                raise Conflict(
                    f"recovery cannot supersede entry {n}: it is a {ENTRY_KINDS[fact.log_kind]} entry"
                )
            if fact.superseded:
                raise Conflict(f"entry {n} is already superseded")
        for orphan, partner in orphaned_by(self.facts, seqs):
            fact = self.facts[orphan - 1]
            raise Conflict(
                f"recovery supersedes entry {partner} but not entry {orphan}, the "
                f"{ENTRY_KINDS[fact.log_kind]} of {fact.path!r} that depends on it; "
                "supersede both or neither"
            )
        return sorted(seqs)

    def check_conclude(self, status: object, has_outputs: bool) -> None:
        self.check_open()
        check_word(status, TERMINAL_OUTCOMES, "conclude status")
        if has_outputs and status != "succeeded":
            raise InvalidRequest("outputs are applicable only to a succeeded run")


def orphaned_by(facts: list[EntryFact], supersedes: Iterable[int]) -> list[tuple[int, int]]:
    """(entry, partner): active entries a recovery superseding ``supersedes`` would leave
    without the entry they depend on.

    A result depends on its invoke (the path's attempt; attempts are never reused) and a
    step's end on the begin it closed (the path's latest active begin before it). Either
    one left active alone is what decisions.md refuses at append time ("a result without
    its invoke"), and the step's current facts could no longer be read from active entries.
    """
    chosen = set(supersedes)
    invokes = {
        (f.path, f.attempt): f.entry for f in facts if f.entry in chosen and f.log_kind == "action-invoked"
    }
    begun: dict[str | None, int] = {}
    out: list[tuple[int, int]] = []
    for f in facts:
        if f.superseded:
            continue
        if f.log_kind == "step-begun":
            begun[f.path] = f.entry
        elif f.entry in chosen:
            continue
        elif f.log_kind == "step-ended" and begun.get(f.path) in chosen:
            out.append((f.entry, begun[f.path]))
        elif f.log_kind == "action-result" and (f.path, f.attempt) in invokes:
            out.append((f.entry, invokes[f.path, f.attempt]))
    return out


def check_recover_shape(supersedes: object) -> list[int]:
    """``supersedes`` is a list (or tuple) of distinct entry seq integers; checked before the log."""
    if not isinstance(supersedes, list | tuple) or any(
        type(n) is not int or not -LARGEST_NUMBER <= n <= LARGEST_NUMBER for n in supersedes
    ):
        raise InvalidRequest(f"supersedes must be a list of entry seq integers, not {shown(supersedes)}")
    seqs = list(supersedes)
    if len(set(seqs)) != len(seqs):
        raise InvalidRequest(f"supersedes lists an entry twice: {shown(seqs)}")
    return seqs


def check_attempt(attempt: object) -> None:
    if type(attempt) is not int or not 1 <= attempt <= LARGEST_NUMBER:
        raise InvalidRequest(f"attempt must be an integer from 1 to 2**63 - 1, not {shown(attempt)}")


def _kind(event: EventBody) -> str:
    return str(event.__struct_config__.tag)


#: A remembered key's value: log seq, entry seq (0 for none: entries count from 1), digest.
_KEPT: Final = struct.Struct("<qq16s")


def call_digest(event: EventBody, body: bytes) -> bytes:
    """16 bytes that stand for ``comparable(event, body)``: equal digests, the same call.

    BLAKE2b-128: a chance collision between two calls of a run is about 2**-128 per pair,
    far below the odds of the disk returning a wrong page, and the key's own text must
    match first.
    """
    return hashlib.blake2b(comparable(event, body), digest_size=16).digest()


def comparable(event: EventBody, body: bytes) -> bytes:
    """The bytes that decide whether a repeated call is the same call (environment aside)."""
    if isinstance(event, RunStarted) and event.env is not None:
        return encode_body(msgspec.structs.replace(event, env=None))
    return body
