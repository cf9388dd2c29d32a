"""The diff of two run record documents: aligned active entries, classified divergences.

``diff_documents`` is the core and works on documents alone, so a stored baseline file
can be diffed against a live run; ``diff_runs`` reads two runs from a store and resolves
child runs through it. The divergence kinds are stable names (``KINDS``) that tools may
match on. Every kind belongs to one class (``KIND_CLASS``): *behaviour* (what the run did),
*metadata* (names, times) or *infrastructure* (crashes, recoveries, attempt numbers,
retries). ``RunDiff.is_match`` counts behaviour only unless the diff is ``strict``.
A fact that shows in several entries (an argument in the begin, invoke and end entries)
is one divergence naming every place. docs/replay-diff.md gives the rule and examples.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, overload

import msgspec

from forkline_es._gc import gc_paused
from forkline_es.compat.views import Host as ViewsHost
from forkline_es.compat.views import run_events
from forkline_es.errors import InvalidRequest, RecordError, shown
from forkline_es.replay.align import DEFAULT_WINDOW, Op, align
from forkline_es.replay.entries import (
    RETRY,
    TIME_MEMBERS,
    Key,
    Parts,
    active_entries,
    comparable,
    ended_paths,
    entry_path,
    keys_from_parts,
    parts_of,
)
from forkline_es.replay.shape import check_document
from forkline_es.values import decode_json

__all__ = [
    "BEHAVIOUR",
    "CLASSES",
    "INFRASTRUCTURE",
    "KINDS",
    "KIND_CLASS",
    "LOGGED_MEMBER",
    "METADATA",
    "REMOVED_PAYLOAD",
    "TIME_MEMBERS",
    "Change",
    "Divergence",
    "Ignore",
    "Place",
    "Resolve",
    "RunDiff",
    "compare_entries",
    "diff_documents",
    "diff_runs",
    "entry_changes",
    "entry_facts",
    "json_changes",
    "logged_events",
    "stored_side",
]

#: (JSON Pointer, old, new); the pointer is relative to the entry (``""`` is the whole
#: entry) for entry divergences, to the logged event for logged-event divergences, and
#: to the document for ``run``/``name`` and run-level ``conclusion`` divergences.
#: None stands for "absent on that side".
Change = tuple[str, Any, Any]

#: One place a divergence shows: (A's entry seq, B's entry seq, pointer of the fact there).
Place = tuple[int | None, int | None, str]

#: A child run id -> its run record document (or a RecordError when it cannot be read).
Resolve = Callable[[str], Mapping[str, Any]]

BEHAVIOUR: Final = "behaviour"
METADATA: Final = "metadata"
INFRASTRUCTURE: Final = "infrastructure"
#: The classes of differences, in the order a report lists them.
CLASSES: Final = (BEHAVIOUR, METADATA, INFRASTRUCTURE)

#: Every divergence kind, in the priority used when one entry differs in several ways.
KINDS: Final = (
    "missing-step",  # an active entry of A with no counterpart in B
    "extra-step",  # an active entry of B with no counterpart in A
    "run",  # workflow, standard, dry_run or pins differ
    "operation",  # invoke: operation or artifact
    "arguments",  # invoke arguments, or a step's arguments slot
    "branch",  # a step's branch decision
    "outcome",  # a step's outcome, or a result's dispatch (succeeded/failed/ambiguous)
    "code",  # a step's or a result's classified code
    "dispatch",  # an invoke's dispatch (not-dispatched/ambiguous)
    "result",  # result, details, binding or event payloads
    "inputs",  # the start entry's inputs or trigger
    "child",  # the child run's own record differs (recursively)
    "conclusion",  # conclude status/path/code/reason/outputs, or a nonterminal status
    "logged",  # a logged (Forkline log_event) event's type or payload
    "missing-event",  # a logged event of A with no counterpart in B
    "extra-event",  # a logged event of B with no counterpart in A
    "name",  # the run's display name
    "labels",  # the run's labels (x-labels)
    "time",  # a time member (x-at, ...), compared only when asked (``times``)
    "attempt",  # an attempt number (recovery renumbers attempts)
    "retry",  # a retried attempt one run made and the other did not, or how it failed
    "recovery",  # crashes: recoveries and superseded entries
)

#: The class of each kind (``child`` takes the class of the child's own differences).
KIND_CLASS: Final[dict[str, str]] = {
    **{kind: BEHAVIOUR for kind in KINDS},
    "name": METADATA,
    "labels": METADATA,
    "time": METADATA,
    "attempt": INFRASTRUCTURE,
    "retry": INFRASTRUCTURE,
    "recovery": INFRASTRUCTURE,
}

_PRIORITY: Final = {kind: rank for rank, kind in enumerate(KINDS)}
_CLASS_RANK: Final = {c: rank for rank, c in enumerate(CLASSES)}

#: How deep child records are compared; deeper children are compared by path only.
MAX_CHILD_DEPTH: Final = 16

_canon: Final = msgspec.json.Encoder(order="sorted")


class Host(ViewsHost, Protocol):
    """What a diff reads of the store (``store.Store``, above this package): the record's
    bytes, and the log for its logged events."""

    def export_run_record(self, run_id: str) -> bytes: ...


def _same(a: Any, b: Any) -> bool:
    """Equality that tells 1 from 1.0 from True and 0.0 from -0.0, as the record does."""
    return bool(a == b) and _canon.encode(a) == _canon.encode(b)


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


def _is_typed(v: Any) -> bool:
    return isinstance(v, dict) and len(v) == 2 and isinstance(v.get("kind"), str) and "value" in v


def json_changes(a: Any, b: Any, pointer: str = "") -> list[Change]:
    """Leaf-level differences between two JSON values, as JSON Pointers.

    Maps and lists are descended; a typed value whose kind changed is reported whole, so
    ``1`` becoming ``"1"`` is one change, not a kind change and a value change.
    """
    if _same(a, b):
        return []
    if isinstance(a, dict) and isinstance(b, dict):
        if _is_typed(a) and _is_typed(b) and a["kind"] != b["kind"]:
            return [(pointer, a, b)]
        out: list[Change] = []
        for k in sorted(a.keys() | b.keys()):
            p = f"{pointer}/{_escape(k)}"
            if k not in a:
                out.append((p, None, b[k]))
            elif k not in b:
                out.append((p, a[k], None))
            else:
                out.extend(json_changes(a[k], b[k], p))
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = []
        for i in range(max(len(a), len(b))):
            p = f"{pointer}/{i}"
            if i >= len(a):
                out.append((p, None, b[i]))
            elif i >= len(b):
                out.append((p, a[i], None))
            else:
                out.extend(json_changes(a[i], b[i], p))
        return out
    return [(pointer, a, b)]


def _category(entry_kind: str, pointer: str) -> str:
    """The divergence kind of one changed field of an entry of ``entry_kind``."""
    if entry_kind == "invoke":
        if pointer.startswith(("/operation", "/artifact")):
            return "operation"
        return "dispatch" if pointer.startswith("/dispatch") else "arguments"
    if entry_kind == "result":
        if pointer.startswith("/dispatch"):
            return "outcome"
        return "code" if pointer.startswith("/code") else "result"
    if entry_kind == "step":
        for prefix, kind in (
            ("/step/payloads/arguments", "arguments"),
            ("/step/branch", "branch"),
            ("/step/outcome", "outcome"),
            ("/step/code", "code"),
        ):
            if pointer.startswith(prefix):
                return kind
        return "result"
    if entry_kind == "start":
        return "inputs"
    if entry_kind == "child":
        return "child"
    return "conclusion"


def _tokens(pointer: str) -> list[str]:
    return pointer.split("/")[1:] if pointer else []


#: The members of a retried attempt that still count as behaviour: what it asked for.
_RETRY_BEHAVIOUR: Final = frozenset({"operation", "artifact", "payloads/arguments"})


def _fact(entry_kind: str, pointer: str, phase: str) -> tuple[str, str, str]:
    """(kind, fact, root) of one changed field: the fact names the member whatever entry
    shows it (``payloads/result`` in a result and in a step view), ``root`` is the
    member's pointer in this entry."""
    tokens = _tokens(pointer)
    prefix = ""
    if entry_kind == "step" and tokens[:1] == ["step"]:
        tokens, prefix = tokens[1:], "/step"
    root = tokens[:2] if tokens[:1] == ["payloads"] else tokens[:1]
    fact = "/".join(root)
    root_pointer = prefix + "".join(f"/{t}" for t in root)
    if fact in TIME_MEMBERS:
        return "time", fact, root_pointer
    if fact == "attempt":
        return "attempt", fact, root_pointer
    if phase == RETRY and fact not in _RETRY_BEHAVIOUR:
        return "retry", fact, root_pointer
    kind = _category(entry_kind, pointer)
    if fact == "dispatch":
        fact = f"{entry_kind}-dispatch"  # an invoke's dispatch and a result's are two facts
    return kind, fact, root_pointer


#: Slot states a removed slot matches: the value cannot be checked, so only its absence
#: (no slot) or a withheld value (the replay hid what the original showed) still differ.
_UNCHECKABLE: Final = frozenset({"removed", "present", "not-recorded"})


def _uncheckable(x: Any, y: Any) -> bool:
    """Retention removed one side's value: of the pair only the class can be compared."""
    if not isinstance(x, Mapping) or not isinstance(y, Mapping) or x.get("class") != y.get("class"):
        return False
    states = {x.get("state"), y.get("state")}
    return "removed" in states and states <= _UNCHECKABLE


def _slots_from(pa: Any, pb: Any) -> Any:
    """``pb`` (a slot map of B) with each slot that cannot be compared taken from ``pa``."""
    if not isinstance(pa, Mapping) or not isinstance(pb, Mapping):
        return pb
    taken = {n: pa[n] for n in pa.keys() & pb.keys() if _uncheckable(pa[n], pb[n])}
    return {**pb, **taken} if taken else pb


def _removed_alike(ca: dict[str, Any], cb: dict[str, Any]) -> dict[str, Any]:
    """``cb`` with the slots retention made uncomparable set equal to A's.

    A slot whose value retention removed (state ``removed``, on either side) matches a
    slot of the same class whose state is ``present``, ``not-recorded`` or ``removed``:
    a faithful replay of a reduced run passes the value or ``NOT_RECORDED``, and the
    Replayer uses this same comparison, so the guard and ``diff_runs`` agree.
    """
    payloads = _slots_from(ca.get("payloads"), cb.get("payloads"))
    if payloads is not cb.get("payloads"):
        cb = {**cb, "payloads": payloads}
    sa, sb = ca.get("step"), cb.get("step")
    if isinstance(sa, Mapping) and isinstance(sb, Mapping):
        payloads = _slots_from(sa.get("payloads"), sb.get("payloads"))
        if payloads is not sb.get("payloads"):
            cb = {**cb, "step": {**sb, "payloads": payloads}}
    return cb


def entry_changes(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[Change]:
    """Every changed field of two entries with the same key (what ``comparable`` keeps)."""
    ca, cb = comparable(a), comparable(b)
    if _same(ca, cb):
        return []
    return json_changes(ca, _removed_alike(ca, cb))


def compare_entries(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[str, list[Change]] | None:
    """(kind, changes) when two entries with the same key differ, else None; the kind is
    the first of ``KINDS`` among the changed fields, whatever their class."""
    changes = entry_changes(a, b)
    if not changes:
        return None
    entry_kind = str(a.get("kind"))
    kind = min((_category(entry_kind, p) for p, _, _ in changes), key=_PRIORITY.__getitem__)
    return kind, changes


class Ignore:
    """Pointer patterns whose changes are left out: ``*`` stands for one segment, and a
    pattern covers the member it names and everything under it. A step view's pointers
    (``/step/payloads/...``) answer to the same pattern without ``/step`` as well."""

    __slots__ = ("_patterns",)

    def __init__(self, patterns: Iterable[str] = ()) -> None:
        if isinstance(patterns, str):
            raise InvalidRequest(
                f"ignore must be a list of JSON Pointer patterns, not the string {shown(patterns)}"
            )
        try:
            given = list(patterns)
        except TypeError:
            raise InvalidRequest(
                f"ignore must be a list of JSON Pointer patterns, not {shown(patterns)}"
            ) from None
        compiled: list[tuple[str, ...]] = []
        for pattern in given:
            if not isinstance(pattern, str) or not pattern.startswith("/"):
                raise InvalidRequest(
                    f"ignore pattern {shown(pattern)} is not a JSON Pointer pattern: it must start "
                    "with `/`, e.g. `/steps/*/result/model`, `/run/inputs` or `/step/*/x-at`"
                )
            compiled.append(tuple(_tokens(pattern)))
        self._patterns = tuple(compiled)

    def __bool__(self) -> bool:
        return bool(self._patterns)

    def covers(self, pointer: str, entry_kind: str | None = None, step: str | None = None) -> bool:
        """Whether a pattern covers ``pointer`` (of an entry of ``entry_kind`` at ``step``),
        or the path of its data: ``/steps/summarize/result/model``, ``/run/inputs/topic``."""
        tokens = _tokens(pointer)
        candidates = [tokens]
        if entry_kind == "step" and tokens[:1] == ["step"]:
            candidates.append(tokens[1:])
        if entry_kind is not None:
            named = _plain(pointer) or _slot_member(pointer)
            at_step = step is not None and entry_kind != "conclude"
            where = ["steps", *step.split("/")] if at_step and step is not None else ["run"]
            candidates.append([*where, *(named.split("/") if named else [])])
        return any(
            len(p) <= len(t) and all(x in ("*", y) for x, y in zip(p, t, strict=False))
            for p in self._patterns
            for t in candidates
        )


_NO_IGNORE: Final = Ignore()


@dataclass(frozen=True, slots=True)
class Divergence:
    """One difference between run A (expected) and run B (actual).

    ``seq_a``/``seq_b`` are entry seqs of the first place it shows (None on the side
    without the entry, or for run-level differences); ``places`` names every place the
    same fact shows; ``detail`` is the nested diff of a ``child`` divergence;
    ``event_a``/``event_b`` are the ``event_id``s of a logged-event divergence.
    ``category`` is its class (``behaviour``, ``metadata``, ``infrastructure``).
    """

    kind: str
    path: str | None
    seq_a: int | None
    seq_b: int | None
    changes: list[Change] = field(default_factory=list)
    detail: RunDiff | None = None
    category: str = ""
    places: tuple[Place, ...] = ()
    event_a: int | None = None
    event_b: int | None = None

    def __post_init__(self) -> None:
        if not self.category:
            object.__setattr__(self, "category", KIND_CLASS.get(self.kind, BEHAVIOUR))

    def headline(self) -> str:
        """One line in words: its class, what changed, where."""
        where = _places_text(self.places) if self.places else _place_text(self.seq_a, self.seq_b)
        if self.event_a is not None or self.event_b is not None:
            where = ", ".join(
                f"{side} event_id {e}"
                for side, e in (("A", self.event_a), ("B", self.event_b))
                if e is not None
            )
        text = f"{self.category}: {_words(self)}"
        named = self.changes and self.changes[0][0] and self.kind not in _WHOLE
        if named and len(self.changes) == 1:
            pointer, old, new = self.changes[0]
            text += f": {_plain(pointer) or pointer} {_show(old, 60)} -> {_show(new, 60)}"
        elif named:
            members = list(dict.fromkeys(_plain(p) or p for p, _, _ in self.changes))
            text += (
                ": " + ", ".join(members[:4]) + (f" and {len(members) - 4} more" if len(members) > 4 else "")
            )
        return text + (f" ({where})" if where else "")

    def data_path(self, pointer: str) -> str:
        """Where a change is, named by the data rather than its encoding in the entry:
        ``/steps/summarize/result/model`` for ``/payloads/result/value/value/model/value``
        of the step's result entry, ``/run/inputs/n`` for the start entry's inputs,
        ``/run/name``; a logged event's, a child's or a count's pointer as it is."""
        if self.kind in _WHOLE_ENTRIES or self.event_a is not None or self.event_b is not None:
            return pointer or "(entry)"
        if self.kind in ("run", "name", "labels", "recovery", "child") or (
            self.seq_a is None and self.seq_b is None
        ):
            return pointer
        named = _plain(pointer) or _slot_member(pointer)
        if self.path is not None and self.kind != "conclusion":  # a conclusion is the run's
            return f"/steps/{self.path}/{named}" if named else f"/steps/{self.path}"
        return f"/run/{named}" if named else "/run"

    def describe(self, limit: int = 8) -> str:
        """A few lines for a person: the headline, then the first changes, each at the
        path of its data (``data_path``)."""
        lines = [self.headline()]
        for pointer, old, new in self.changes[:limit]:
            lines.append(f"  {self.data_path(pointer)}: {_show(old)} -> {_show(new)}")
        if len(self.changes) > limit:
            lines.append(f"  ... and {len(self.changes) - limit} more changes")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "kind": self.kind,
            "class": self.category,
            "path": self.path,
            "seq_a": self.seq_a,
            "seq_b": self.seq_b,
            "summary": self.headline(),
            "changes": [
                {"pointer": p, "at": self.data_path(p), "old": o, "new": n} for p, o, n in self.changes
            ],
            "places": [{"seq_a": a, "seq_b": b, "pointer": p} for a, b, p in self.places],
        }
        if self.event_a is not None or self.event_b is not None:
            out["event_a"], out["event_b"] = self.event_a, self.event_b
        return out


def _places_text(places: Sequence[Place], limit: int = 6) -> str:
    """``entries 3, 5, 7`` when both runs number them alike, else ``A/B entries 19/16, 20/17``."""
    same = all(a == b for a, b, _ in places)
    seqs = [
        str(a) if same else f"{a if a is not None else '-'}/{b if b is not None else '-'}"
        for a, b, _ in places
    ]
    more = f" and {len(seqs) - limit} more" if len(seqs) > limit else ""
    return ("entries " if same else "A/B entries ") + ", ".join(seqs[:limit]) + more


def _place_text(seq_a: int | None, seq_b: int | None) -> str:
    if seq_a is not None and seq_b is not None:
        return f"A entry {seq_a}, B entry {seq_b}" if seq_a != seq_b else f"entry {seq_a}"
    if seq_a is not None:
        return f"A entry {seq_a}"
    return f"B entry {seq_b}" if seq_b is not None else ""


#: Kinds whose changes are whole entries or counts, not members to name in the headline.
_WHOLE: Final = frozenset(
    {"missing-step", "extra-step", "missing-event", "extra-event", "recovery", "run", "labels"}
)

_WORDS: Final = {
    "operation": "called a different operation",
    "arguments": "was given different arguments",
    "branch": "took a different branch",
    "outcome": "ended differently",
    "code": "has a different code",
    "dispatch": "was dispatched differently",
    "result": "returned a different result",
    "child": "started a child run that differs",
    "time": "has a different time",
    "attempt": "numbers its attempts differently",
    "retry": "retried differently",
}


def _words(d: Divergence) -> str:
    step = f"step {d.path!r}" if d.path is not None else "the run"
    count = len(d.changes)
    if d.kind == "missing-step":
        return f"{step} ran in A but not in B ({count} entries)"
    if d.kind == "extra-step":
        return f"{step} ran in B but not in A ({count} entries)"
    if d.kind == "retry" and d.changes and d.changes[0][0] == "":
        side = "A" if d.seq_a is not None else "B"
        tries = sum(1 for _, o, n in d.changes if (o if o is not None else n).get("kind") == "invoke")
        return f"{step} retried in {side} only: {tries} failed attempt{'s' if tries != 1 else ''}"
    if d.kind == "run":
        return "the run's definition differs (" + ", ".join(_plain(p) or p for p, _, _ in d.changes) + ")"
    if d.kind == "name":
        return "the run's name differs"
    if d.kind == "labels":
        return "the run's labels differ"
    if d.kind == "inputs":
        return "the run was started with different inputs"
    if d.kind == "conclusion":
        return "the run concluded differently"
    if d.kind == "recovery":
        counts = dict((p, (o, n)) for p, o, n in d.changes)
        told = []
        if "/recoveries" in counts:
            told.append("recoveries {} -> {}".format(*counts["/recoveries"]))
        if "/superseded" in counts:
            told.append("superseded entries {} -> {}".format(*counts["/superseded"]))
        return "the runs crashed and recovered differently (" + ", ".join(told) + ")"
    if d.kind == "logged":
        return "a logged event differs"
    if d.kind == "missing-event":
        return "a logged event of A is not in B"
    if d.kind == "extra-event":
        return "a logged event of B is not in A"
    return f"{step} {_WORDS.get(d.kind, 'differs')}"


#: Kinds whose changes are whole entries (the pointer is ``""``).
_WHOLE_ENTRIES: Final = frozenset({"missing-step", "extra-step", "missing-event", "extra-event"})


def _slot_member(pointer: str) -> str:
    """A slot's own member (``result/state``) or an entry's, for a pointer ``_plain``
    does not name: ``/payloads/result/state`` -> ``result/state``."""
    tokens = _tokens(pointer)
    if tokens[:1] == ["step"]:
        tokens = tokens[1:]
    if tokens[:1] == ["payloads"]:
        tokens = tokens[1:]
    return "/".join(tokens)


def _plain(pointer: str) -> str:
    """A pointer as a person names it: a payload's path with the typed-value members left
    out (``result/model`` for ``/payloads/result/value/value/model/value``), an entry's
    own member without ``/step`` (``outcome``); "" for a slot member that is no value."""
    tokens = _tokens(pointer)
    if tokens[:1] == ["step"]:
        tokens = tokens[1:]
    if tokens[:1] != ["payloads"]:
        return "/".join(tokens)  # a member of the entry itself: outcome, operation, run/name
    if len(tokens) < 3 or tokens[2] != "value":
        return ""
    rest, out = tokens[3:], [tokens[1]]
    while rest:  # a typed value: "value", then a key or index, then the member's typed value
        if rest[0] != "value":
            return ""
        rest = rest[1:]
        if rest:
            out.append(rest[0])
            rest = rest[1:]
    return "/".join(out)


def _show(value: Any, width: int = 160) -> str:
    if value is None:
        return "(absent)"
    text = _canon.encode(value).decode()
    return text if len(text) <= width else text[: width - 3] + "..."


@dataclass(frozen=True, slots=True)
class RunDiff:
    """Every divergence, behaviour first; ``first`` is the one a person should look at.

    Only behaviour counts (``is_match``, ``first``) unless the diff is ``strict``; the
    other classes are still listed, after it.
    """

    divergences: tuple[Divergence, ...] = ()
    strict: bool = False

    @property
    def counted(self) -> tuple[Divergence, ...]:
        """The divergences that decide ``is_match``."""
        if self.strict:
            return self.divergences
        return tuple(d for d in self.divergences if d.category == BEHAVIOUR)

    @property
    def is_match(self) -> bool:
        return not self.counted

    @property
    def first(self) -> Divergence | None:
        counted = self.counted
        return counted[0] if counted else None

    def of_class(self, category: str) -> tuple[Divergence, ...]:
        return tuple(d for d in self.divergences if d.category == category)

    @property
    def behaviour(self) -> tuple[Divergence, ...]:
        return self.of_class(BEHAVIOUR)

    @property
    def metadata(self) -> tuple[Divergence, ...]:
        return self.of_class(METADATA)

    @property
    def infrastructure(self) -> tuple[Divergence, ...]:
        return self.of_class(INFRASTRUCTURE)

    def to_json(self, all: bool = True) -> dict[str, Any]:
        shown_ = self.divergences if all else self.divergences[:1]
        return {
            "match": self.is_match,
            "strict": self.strict,
            "count": len(self.divergences),
            "counts": {c: len(self.of_class(c)) for c in CLASSES},
            "first": self.first.to_json() if self.first else None,
            "divergences": [d.to_json() for d in shown_],
        }


#: The run members compared: the definition (behaviour), the name and labels (metadata).
_RUN_FACTS: Final = ("workflow", "name", "dry_run", "x-labels")


def _run_facts(document: Mapping[str, Any]) -> dict[str, Any]:
    run = document.get("run") or {}
    return {
        "standard": document.get("standard"),
        "run": {k: run.get(k) for k in _RUN_FACTS},
        "pins": document.get("pins"),
    }


def _child_document(entry: Mapping[str, Any], resolve: Resolve | None) -> Mapping[str, Any] | None:
    """A baseline embeds the child's document; a live record names it, read via ``resolve``.

    An embedded document was checked with its parent; a resolved one enters here.
    """
    child = entry.get("child")
    if isinstance(child, Mapping):
        return child
    if isinstance(child, str) and resolve is not None:
        try:
            document = resolve(child)
        except RecordError:
            return None
        check_document(document, f"child run {child!r}", MAX_CHILD_DEPTH)
        return document
    return None


def _nested(sub: RunDiff) -> list[Change]:
    """A child diff's changes as pointers under ``/child`` (the child's record document).

    An entry's changes go under ``/child/entries/N``, N = seq - 1 (a record numbers its
    entries from 1, superseded and recovery entries included): the entry of A's child,
    or of B's for an entry only B has. Each member of a missing or extra group points at
    its own entry. B's seq of a matched entry is in the nested divergence (``detail``).
    """
    out: list[Change] = []
    for d in sub.divergences:
        if d.kind in ("missing-step", "extra-step") or (
            d.kind == "retry" and d.changes[:1] and d.changes[0][0] == ""
        ):
            for p, o, n in d.changes:
                member = o if o is not None else n
                out.append((f"/child/entries/{member['seq'] - 1}{p}", o, n))
            continue
        seq = d.seq_a if d.seq_a is not None else d.seq_b
        entry = seq is not None and d.kind not in ("run", "name", "labels", "recovery")
        base = "/child" + (f"/entries/{seq - 1}" if entry and seq is not None else "")
        out.extend((base + p, o, n) for p, o, n in d.changes)
    return out


@dataclass(frozen=True, slots=True)
class _Side:
    """What the diff needs of one run: run facts, active entries, what places them.

    ``raw`` (stored runs only) holds each active entry's canonical bytes: two entries with
    equal bytes are equal in everything that counts, so a matched pair is compared
    field by field only when its bytes differ. ``child`` reads a child entry's run.
    ``logged`` holds the run's logged events as (event_id, type, payload) when they are
    known (None for a document without them); ``recoveries`` and ``superseded`` count
    the run's recovery entries and the entries they took out of consideration.
    """

    facts: dict[str, Any]
    run: Mapping[str, Any]
    entries: Sequence[Mapping[str, Any]]
    parts: list[Parts]
    child: Callable[[Mapping[str, Any]], _Side | None]
    raw: Sequence[msgspec.Raw] | None = None
    logged: Sequence[tuple[int | None, str, Any]] | None = None
    recoveries: int = 0
    superseded: int = 0


#: The member of a document (a baseline) that carries the run's logged events.
LOGGED_MEMBER: Final = "x-logged"


def _document_logged(document: Mapping[str, Any]) -> list[tuple[int | None, str, Any]] | None:
    logged = document.get(LOGGED_MEMBER)
    if not isinstance(logged, list):
        return None
    return [
        (None, str(e.get("type")), REMOVED_PAYLOAD if e.get("removed") else e.get("payload"))
        for e in logged
        if isinstance(e, Mapping)
    ]


def _document_side(document: Mapping[str, Any], resolve: Resolve | None) -> _Side:
    entries = active_entries(document)
    every = document.get("entries") or []
    recoveries = [e for e in every if e.get("kind") == "recovery"]
    superseded = {s for e in recoveries for s in e.get("supersedes") or []}

    def child(entry: Mapping[str, Any]) -> _Side | None:
        doc = _child_document(entry, resolve)
        return None if doc is None else _document_side(doc, resolve)

    return _Side(
        _run_facts(document),
        document.get("run") or {},
        entries,
        [parts_of(e) for e in entries],
        child,
        logged=_document_logged(document),
        recoveries=len(recoveries),
        superseded=len(superseded),
    )


@dataclass(slots=True)
class _Found:
    """A divergence being built: places are added as the same fact shows again."""

    kind: str
    path: str | None
    seq_a: int | None
    seq_b: int | None
    changes: list[Change]
    order: tuple[int, int]
    places: list[Place] = field(default_factory=list)
    detail: RunDiff | None = None
    category: str = ""
    event_a: int | None = None
    event_b: int | None = None

    def build(self) -> Divergence:
        places = tuple(self.places) if len(self.places) > 1 else ()
        return Divergence(
            self.kind,
            self.path,
            self.seq_a,
            self.seq_b,
            self.changes,
            self.detail,
            self.category,
            places,
            self.event_a,
            self.event_b,
        )


@dataclass(frozen=True, slots=True)
class _Options:
    window: int
    strict: bool
    ignore: Ignore
    times: bool = False


def _kept(
    changes: Iterable[Change], entry_kind: str | None, options: _Options, step: str | None = None
) -> list[Change]:
    if not options.ignore:
        return list(changes)
    return [c for c in changes if not options.ignore.covers(c[0], entry_kind, step)]


def _is_retry_entry(key: Key) -> bool:
    return key[0] in ("invoke", "result") and key[3] == RETRY


class _LazyKeys:
    """A run's alignment keys, computed when first needed: two runs with the same parts
    align without them, and only a differing attempt asks for its phase."""

    __slots__ = ("_ended", "_keys", "_parts")

    def __init__(self, parts: list[Parts], ended: set[str]) -> None:
        self._parts, self._ended = parts, ended
        self._keys: list[Key] | None = None

    @property
    def keys(self) -> list[Key]:
        if self._keys is None:
            self._keys = keys_from_parts(self._parts, self._ended)
        return self._keys


def _skipped(
    ops: Sequence[Op], side_a: _Side, side_b: _Side, keys_a: _LazyKeys, keys_b: _LazyKeys
) -> Callable[[int], tuple[_Found, int]]:
    """A reader that groups a run of consecutive skips of one side and one path.

    A group made only of retried attempts (invokes and results of attempts followed by
    another attempt of the step) is a ``retry``: infrastructure, the step went on.
    """

    def group(at: int) -> tuple[_Found, int]:
        op = ops[at][0]
        side, keys = (side_a, keys_a) if op == "missing" else (side_b, keys_b)
        entries = side.entries
        index = ops[at][1] if op == "missing" else ops[at][2]
        assert index is not None
        path = entry_path(entries[index])
        members = [index]
        end = at + 1
        while end < len(ops) and ops[end][0] == op:
            nxt = ops[end][1] if op == "missing" else ops[end][2]
            assert nxt is not None
            if entry_path(entries[nxt]) != path:
                break
            members.append(nxt)
            end += 1
        rows = [entries[m] for m in members]
        seq = rows[0].get("seq")
        retry = all(_is_retry_entry(keys.keys[m]) for m in members)
        kind = "retry" if retry else "missing-step" if op == "missing" else "extra-step"
        if op == "missing":
            d = _Found(kind, path, seq, None, [("", m, None) for m in rows], (at, 0))
        else:
            d = _Found(kind, path, None, seq, [("", None, m) for m in rows], (at, 0))
        return d, end

    return group


def _diff(
    doc_a: Mapping[str, Any],
    doc_b: Mapping[str, Any],
    resolve: Resolve | None,
    options: _Options,
    depth: int,
) -> RunDiff:
    return _diff_sides(_document_side(doc_a, resolve), _document_side(doc_b, resolve), options, depth)


def _signature(path: str | None, kind: str, facts: list[tuple[str, str, Change]]) -> tuple[Any, ...]:
    """What makes two entries' changes one fact: the step, the kind, and each change's fact,
    pointer below the fact's root and values (so a step view's copy signs like the original)."""
    return (
        path,
        kind,
        tuple((fact, p[len(root) :], _canon.encode(o), _canon.encode(n)) for fact, root, (p, o, n) in facts),
    )


#: The changes of one entry of one kind: (kind, [(fact, root, change)]).
Facts = tuple[str, list[tuple[str, str, Change]]]


def entry_facts(entry_kind: str, changes: list[Change], phase: str, times: bool) -> list[Facts]:
    """The changes of one matched pair grouped by kind, in ``KINDS`` order, each change
    with its fact and the fact's root pointer; time members are left out unless ``times``,
    and always where one side has none (a baseline keeps no times)."""
    kinds: dict[str, list[tuple[str, str, Change]]] = {}
    for change in changes:
        kind, fact, root = _fact(entry_kind, change[0], phase)
        if kind == "time" and (not times or change[1] is None or change[2] is None):
            continue
        kinds.setdefault(kind, []).append((fact, root, change))
    return sorted(kinds.items(), key=lambda group: _PRIORITY[group[0]])


def _diff_sides(side_a: _Side, side_b: _Side, options: _Options, depth: int) -> RunDiff:
    found: list[_Found] = []
    facts = _kept(json_changes(side_a.facts, side_b.facts), None, options)
    named = [c for c in facts if c[0] == "/run/name"]
    labelled = [c for c in facts if c[0].startswith("/run/x-labels")]
    defined = [c for c in facts if c not in named and c not in labelled]
    for rank, (kind, changes) in enumerate((("run", defined), ("name", named), ("labels", labelled))):
        if changes:
            found.append(_Found(kind, None, None, None, changes, (-1, rank)))
    entries_a, entries_b = side_a.entries, side_b.entries
    raw_a, raw_b = side_a.raw, side_b.raw
    if side_a.parts == side_b.parts:  # the same entries in the same places: every pair matches
        ops: list[Op] = [("match", i, i) for i in range(len(side_a.parts))]
        keys_a = keys_b = _LazyKeys(side_a.parts, ended_paths(side_a.parts))
    else:
        ended = ended_paths(side_a.parts) & ended_paths(side_b.parts)
        keys_a, keys_b = _LazyKeys(side_a.parts, ended), _LazyKeys(side_b.parts, ended)
        ops = align(keys_a.keys, keys_b.keys, options.window)
    group = _skipped(ops, side_a, side_b, keys_a, keys_b)
    seen: dict[tuple[Any, ...], _Found] = {}
    at = 0
    while at < len(ops):
        op, i, j = ops[at]
        if op != "match":
            d, at = group(at)
            found.append(d)
            continue
        here = at
        at += 1
        assert i is not None and j is not None
        if (
            raw_a is not None
            and raw_b is not None
            and (raw_a[i] == raw_b[j] or (not options.times and _settled(raw_a[i], raw_b[j])))
        ):
            continue  # nothing compared differs, and a child entry names the same run
        a, b = entries_a[i], entries_b[j]
        changes = _kept(entry_changes(a, b), str(a.get("kind")), options, entry_path(a))
        path, seq_a, seq_b = entry_path(a), a.get("seq"), b.get("seq")
        groups = entry_facts(str(a.get("kind")), changes, keys_a.keys[i][3], options.times) if changes else []
        if groups:
            for rank, (kind, facts_) in enumerate(groups):
                signature = _signature(path, kind, facts_)
                root = facts_[0][1]
                earlier = seen.get(signature)
                if earlier is not None:
                    earlier.places.append((seq_a, seq_b, root))
                    continue
                mine = [change for _, _, change in facts_]
                d = _Found(kind, path, seq_a, seq_b, mine, (here, rank), [(seq_a, seq_b, root)])
                seen[signature] = d
                found.append(d)
        elif a.get("kind") == "child" and depth < MAX_CHILD_DEPTH:
            ca, cb = side_a.child(a), side_b.child(b)
            if ca is not None and cb is not None:
                sub = _diff_sides(ca, cb, options, depth + 1)
                if sub.divergences:
                    category = min((d.category for d in sub.divergences), key=_CLASS_RANK.__getitem__)
                    found.append(
                        _Found(
                            "child",
                            path,
                            seq_a,
                            seq_b,
                            _nested(sub),
                            (here, 0),
                            detail=sub,
                            category=category,
                        )
                    )
    concluded = any(p[0] == "conclude" for p in side_a.parts) or any(p[0] == "conclude" for p in side_b.parts)
    if not concluded:
        run_a, run_b = side_a.run, side_b.run
        fields = ("status", "code", "step", "reason")
        status = json_changes(
            {"run": {k: run_a.get(k) for k in fields}}, {"run": {k: run_b.get(k) for k in fields}}
        )
        status = _kept(status, None, options)
        if status:
            found.append(_Found("conclusion", None, None, None, status, (len(ops), 0)))
    if side_a.logged is not None and side_b.logged is not None:
        found.extend(_diff_logged(side_a.logged, side_b.logged, options, len(ops) + 1))
    crashes = [
        (pointer, x, y)
        for pointer, x, y in (
            ("/recoveries", side_a.recoveries, side_b.recoveries),
            ("/superseded", side_a.superseded, side_b.superseded),
        )
        if x != y
    ]
    if crashes:
        found.append(_Found("recovery", None, None, None, crashes, (len(ops) + 2**62, 0)))
    for d in found:
        if not d.category:
            d.category = KIND_CLASS.get(d.kind, BEHAVIOUR)
    found.sort(key=lambda d: (_CLASS_RANK[d.category], d.order))
    return RunDiff(tuple(d.build() for d in found), options.strict)


#: In an entry's canonical bytes, the members ``comparable`` leaves out (seq, generations,
#: a step's x-attempts) and the time members. Canonical JSON escapes every quote inside a
#: string, so ``"seq":`` can only be a member, never text within a value; a payload's map
#: keys hold typed values (objects), never a number or a timestamp string.
_UNCOMPARED: Final = re.compile(
    rb'"(?:seq|generation|x-attempts)":-?[0-9]+|"x-(?:at|started-at|ended-at|updated-at)":"[^"]*"'
)


def _settled(a: bytes, b: bytes) -> bool:
    """Whether two entries' bytes are equal once what is never compared (without
    ``times``) is taken out: most matched pairs of two runs differ only in their times and
    seqs, and this settles them without decoding either."""
    return _UNCOMPARED.sub(b"", a) == _UNCOMPARED.sub(b"", b)


def _diff_logged(
    logged_a: Sequence[tuple[int | None, str, Any]],
    logged_b: Sequence[tuple[int | None, str, Any]],
    options: _Options,
    base: int,
) -> list[_Found]:
    """Logged events compared in order: aligned by (type, occurrence) with the window the
    entries use, a matched pair by its payload's fields. A missing event of A next to an
    extra one of B (a substitution) is one ``logged`` divergence with its type change."""
    keys_a = keys_from_parts([("logged", t, 0, "", "") for _, t, _ in logged_a])
    keys_b = keys_from_parts([("logged", t, 0, "", "") for _, t, _ in logged_b])
    ops = align(keys_a, keys_b, options.window)
    out: list[_Found] = []
    at = 0
    while at < len(ops):
        op, i, j = ops[at]
        order = (base + at, 0)
        if op == "missing" and at + 1 < len(ops) and ops[at + 1][0] == "extra":
            j = ops[at + 1][2]
            at += 1
        at += 1
        ea = logged_a[i] if i is not None else None
        eb = logged_b[j] if j is not None else None
        if ea is not None and eb is not None:
            changes = json_changes({"type": ea[1], "payload": ea[2]}, {"type": eb[1], "payload": eb[2]})
            changes = [c for c in _kept(changes, None, options) if not _removed_payload(ea[2], eb[2], c)]
            if changes:
                out.append(_Found("logged", None, None, None, changes, order, event_a=ea[0], event_b=eb[0]))
        elif ea is not None:
            whole = {"type": ea[1], "payload": ea[2]}
            out.append(_Found("missing-event", None, None, None, [("", whole, None)], order, event_a=ea[0]))
        elif eb is not None:
            whole = {"type": eb[1], "payload": eb[2]}
            out.append(_Found("extra-event", None, None, None, [("", None, whole)], order, event_b=eb[0]))
    return out


#: A logged payload retention removed (the ``events`` view shows NULL): not comparable.
REMOVED_PAYLOAD: Final = msgspec.Raw(b'"~removed"')


def _removed_payload(a: Any, b: Any, change: Change) -> bool:
    return change[0].startswith("/payload") and (a is REMOVED_PAYLOAD or b is REMOVED_PAYLOAD)


def _options(window: int, strict: bool, ignore: Iterable[str], times: bool = False) -> _Options:
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ValueError("window must be at least 1")
    for name, flag in (("strict", strict), ("times", times)):
        if not isinstance(flag, bool):
            raise InvalidRequest(f"{name} must be True or False, not {shown(flag)}")
    return _Options(window, strict, ignore if isinstance(ignore, Ignore) else Ignore(ignore), times)


def diff_documents(
    doc_a: Mapping[str, Any],
    doc_b: Mapping[str, Any],
    *,
    resolve: Resolve | None = None,
    window: int = DEFAULT_WINDOW,
    strict: bool = False,
    ignore: Iterable[str] = (),
    times: bool = False,
) -> RunDiff:
    """Diff two run record documents (or baselines); A is the expected side.

    ``resolve`` reads a child run's document by id, to compare child runs by their own
    records; without it (and without embedded child baselines) children are compared by
    path only. ``window`` bounds the realignment look-ahead (see ``replay.align``).
    ``strict`` counts metadata and infrastructure differences too; ``times`` compares the
    time members (``x-at`` ...: metadata, which differ between any two runs, so left out
    by default); ``ignore`` leaves out the changes under the given pointer patterns.

    The documents come from the caller (a baseline file, say), so their shape is checked
    first: what the diff cannot read is an ``InvalidRequest`` naming the member.
    """
    options = _options(window, strict, ignore, times)
    check_document(doc_a, "document A", MAX_CHILD_DEPTH)
    check_document(doc_b, "document B", MAX_CHILD_DEPTH)
    return _diff(doc_a, doc_b, resolve, options, 0)


def diff_runs(
    store: Host,
    run_a: str,
    run_b: str,
    *,
    window: int = DEFAULT_WINDOW,
    strict: bool = False,
    ignore: Iterable[str] = (),
    times: bool = False,
) -> RunDiff:
    """Diff two runs of ``store``; A is the expected side (e.g. the original of a replay).

    Logged events (``RunRecorder.log_event``) are compared too. Refusals of the lookups
    (``RunNotFound``, ``RunNotRetained``) propagate unchanged. ``strict``, ``times`` and
    ``ignore`` as in ``diff_documents``.
    """
    options = _options(window, strict, ignore, times)
    return _diff_sides(stored_side(store, run_a), stored_side(store, run_b), options, 0)


def logged_events(store: ViewsHost, run_id: str) -> list[tuple[int | None, str, Any]]:
    """The run's logged events as (event_id, type, payload), payload decoded (or a marker
    when retention removed it)."""
    return [
        (int(event_id), str(kind), REMOVED_PAYLOAD if payload is None else decode_json(payload))
        for event_id, _, _, kind, payload in run_events(store, run_id)
    ]


def stored_side(store: Host, run_id: str) -> _Side:
    """One stored run as the diff sees it, from its canonical bytes (``export_run_record``).

    Only what the alignment needs is decoded up front (kind, seq, path, attempt, step path
    and status, supersedes, into Structs); an entry becomes a dict only when it is
    reported or when its bytes differ from its counterpart's. Same result as diffing
    ``get_run_record`` documents, without building two whole documents of dicts.
    """
    data = store.export_run_record(run_id)
    with gc_paused():
        doc = _doc_head.decode(data)
        heads = doc.entries
        raws = _doc_raw.decode(data).entries
    superseded: set[int] = set()
    recoveries = 0
    for h in heads:
        if h.kind == "recovery":
            recoveries += 1
            if h.supersedes:
                superseded.update(h.supersedes)
    keep = [n for n, h in enumerate(heads) if h.kind != "recovery" and h.seq not in superseded]
    parts = parts_from_heads(heads[n] for n in keep)
    active = [raws[n] for n in keep]

    def child(entry: Mapping[str, Any]) -> _Side | None:
        child_id = entry.get("child")
        if not isinstance(child_id, str):
            return None
        try:
            return stored_side(store, child_id)
        except RecordError:
            return None

    facts = {
        "standard": doc.standard,
        "run": {k: doc.run.get(k) for k in _RUN_FACTS},
        "pins": doc.pins,
    }
    return _Side(
        facts,
        doc.run,
        _Decoded(active),
        parts,
        child,
        active,
        logged_events(store, run_id),
        recoveries,
        len(superseded),
    )


class _Decoded(Sequence[Mapping[str, Any]]):
    """Entries decoded to dicts on first access (most are never looked at)."""

    __slots__ = ("_done", "_raw")

    def __init__(self, raw: list[msgspec.Raw]) -> None:
        self._raw = raw
        self._done: dict[int, dict[str, Any]] = {}

    def __len__(self) -> int:
        return len(self._raw)

    @overload
    def __getitem__(self, index: int) -> Mapping[str, Any]: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Mapping[str, Any]]: ...
    def __getitem__(self, index: int | slice) -> Mapping[str, Any] | Sequence[Mapping[str, Any]]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        if index < 0:
            index += len(self._raw)
        entry = self._done.get(index)
        if entry is None:
            entry = self._done[index] = decode_json(self._raw[index])
        return entry


class _StepHead(msgspec.Struct):
    path: str = ""
    status: str = ""


class _EntryHead(msgspec.Struct):
    """The members of an entry that place it; the rest is skipped by the decoder."""

    kind: str
    seq: int | None = None
    path: str | None = None
    attempt: int | None = None
    step: _StepHead | None = None
    supersedes: list[int] | None = None


class _DocHead(msgspec.Struct):
    entries: list[_EntryHead] = []
    run: dict[str, Any] = {}
    standard: Any = None
    pins: Any = None


class _DocRaw(msgspec.Struct):
    entries: list[msgspec.Raw] = []


_doc_head: Final = msgspec.json.Decoder(_DocHead)
_doc_raw: Final = msgspec.json.Decoder(_DocRaw)


def parts_from_heads(heads: Iterable[_EntryHead]) -> list[Parts]:
    """``entries.parts_of`` over decoded heads (the same parts for the same entries)."""
    return [
        (h.kind, h.path or "", h.attempt or 0, "", "")
        if h.step is None
        else (h.kind, h.path or "", h.attempt or 0, h.step.path, h.step.status)
        for h in heads
    ]
