"""The diff of two run record documents: aligned active entries, classified divergences.

``diff_documents`` is the core and works on documents alone, so a stored baseline file
can be diffed against a live run; ``diff_runs`` reads two runs from a store and resolves
child runs through it. The divergence kinds are stable names (``KINDS``) that tools may
match on; docs/replay-diff.md gives the rule and examples.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, overload

import msgspec

from forkline_es._gc import gc_paused
from forkline_es.errors import RecordError
from forkline_es.replay.align import DEFAULT_WINDOW, Op, align
from forkline_es.replay.entries import Key, active_entries, comparable, entry_path, keys_of, placement
from forkline_es.replay.shape import check_document
from forkline_es.values import decode_json

__all__ = [
    "KINDS",
    "Change",
    "Divergence",
    "Resolve",
    "RunDiff",
    "compare_entries",
    "diff_documents",
    "diff_runs",
    "json_changes",
]

#: (JSON Pointer, old, new); the pointer is relative to the entry (``""`` is the whole
#: entry) for entry divergences and to the document for ``run`` and run-level
#: ``conclusion`` divergences. None stands for "absent on that side".
Change = tuple[str, Any, Any]

#: A child run id -> its run record document (or a RecordError when it cannot be read).
Resolve = Callable[[str], Mapping[str, Any]]

#: Every divergence kind, in the priority used when one entry differs in several ways.
KINDS: Final = (
    "missing-step",  # an active entry of A with no counterpart in B
    "extra-step",  # an active entry of B with no counterpart in A
    "run",  # workflow, name, standard, dry_run or pins differ
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
)

_PRIORITY: Final = {kind: rank for rank, kind in enumerate(KINDS)}

#: How deep child records are compared; deeper children are compared by path only.
MAX_CHILD_DEPTH: Final = 16

_canon: Final = msgspec.json.Encoder(order="sorted")


class Host(Protocol):
    """What a diff reads of the store (``store.Store``, above this package)."""

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


def compare_entries(a: Mapping[str, Any], b: Mapping[str, Any]) -> tuple[str, list[Change]] | None:
    """(kind, changes) when two entries with the same key differ in what counts, else None."""
    ca, cb = comparable(a), comparable(b)
    if _same(ca, cb):
        return None
    changes = json_changes(ca, _removed_alike(ca, cb))
    if not changes:
        return None
    entry_kind = str(a.get("kind"))
    kind = min((_category(entry_kind, p) for p, _, _ in changes), key=_PRIORITY.__getitem__)
    return kind, changes


@dataclass(frozen=True, slots=True)
class Divergence:
    """One difference between run A (expected) and run B (actual).

    ``seq_a``/``seq_b`` are entry seqs (None on the side without the entry, or for
    run-level differences); ``detail`` is the nested diff of a ``child`` divergence.
    """

    kind: str
    path: str | None
    seq_a: int | None
    seq_b: int | None
    changes: list[Change] = field(default_factory=list)
    detail: RunDiff | None = None

    def describe(self, limit: int = 8) -> str:
        """A few lines for a person: what differs, where, and the first changes."""
        where = f"step {self.path!r}" if self.path is not None else "the run"
        seqs = ", ".join(
            f"{side} entry {seq}" for side, seq in (("A", self.seq_a), ("B", self.seq_b)) if seq is not None
        )
        lines = [f"{self.kind} at {where}" + (f" ({seqs})" if seqs else "")]
        for pointer, old, new in self.changes[:limit]:
            lines.append(f"  {pointer or '(entry)'}: {_show(old)} -> {_show(new)}")
        if len(self.changes) > limit:
            lines.append(f"  ... and {len(self.changes) - limit} more changes")
        return "\n".join(lines)

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "path": self.path,
            "seq_a": self.seq_a,
            "seq_b": self.seq_b,
            "changes": [{"pointer": p, "old": o, "new": n} for p, o, n in self.changes],
        }


def _show(value: Any, width: int = 160) -> str:
    if value is None:
        return "(absent)"
    text = _canon.encode(value).decode()
    return text if len(text) <= width else text[: width - 3] + "..."


@dataclass(frozen=True, slots=True)
class RunDiff:
    """Every divergence in order; ``first`` is the one a person should look at."""

    divergences: tuple[Divergence, ...] = ()

    @property
    def is_match(self) -> bool:
        return not self.divergences

    @property
    def first(self) -> Divergence | None:
        return self.divergences[0] if self.divergences else None

    def to_json(self, all: bool = True) -> dict[str, Any]:
        shown = self.divergences if all else self.divergences[:1]
        return {
            "match": self.is_match,
            "count": len(self.divergences),
            "first": self.first.to_json() if self.first else None,
            "divergences": [d.to_json() for d in shown],
        }


def _run_facts(document: Mapping[str, Any]) -> dict[str, Any]:
    run = document.get("run") or {}
    return {
        "standard": document.get("standard"),
        "run": {k: run.get(k) for k in ("workflow", "name", "dry_run")},
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
        if d.kind in ("missing-step", "extra-step"):
            for p, o, n in d.changes:
                member = o if d.kind == "missing-step" else n
                out.append((f"/child/entries/{member['seq'] - 1}{p}", o, n))
            continue
        seq = d.seq_a if d.seq_a is not None else d.seq_b
        base = "/child" + (f"/entries/{seq - 1}" if seq is not None and d.kind != "run" else "")
        out.extend((base + p, o, n) for p, o, n in d.changes)
    return out


def _skipped(
    ops: Sequence[Op], entries_a: Sequence[Mapping[str, Any]], entries_b: Sequence[Mapping[str, Any]]
) -> Callable[[int], tuple[Divergence, int]]:
    """A reader that groups a run of consecutive skips of one side and one path."""

    def group(at: int) -> tuple[Divergence, int]:
        op = ops[at][0]
        side = entries_a if op == "missing" else entries_b
        index = ops[at][1] if op == "missing" else ops[at][2]
        assert index is not None
        path = entry_path(side[index])
        members = [side[index]]
        end = at + 1
        while end < len(ops) and ops[end][0] == op:
            nxt = ops[end][1] if op == "missing" else ops[end][2]
            assert nxt is not None
            if entry_path(side[nxt]) != path:
                break
            members.append(side[nxt])
            end += 1
        seq = members[0].get("seq")
        if op == "missing":
            d = Divergence("missing-step", path, seq, None, [("", m, None) for m in members])
        else:
            d = Divergence("extra-step", path, None, seq, [("", None, m) for m in members])
        return d, end

    return group


@dataclass(frozen=True, slots=True)
class _Side:
    """What the diff needs of one run: run facts, active entries, their keys.

    ``raw`` (stored runs only) holds each active entry's canonical bytes: two entries with
    equal bytes are equal in everything that counts, so a matched pair is compared
    field by field only when its bytes differ. ``child`` reads a child entry's run.
    """

    facts: dict[str, Any]
    run: Mapping[str, Any]
    entries: Sequence[Mapping[str, Any]]
    keys: list[Key]
    child: Callable[[Mapping[str, Any]], _Side | None]
    raw: Sequence[msgspec.Raw] | None = None


def _document_side(document: Mapping[str, Any], resolve: Resolve | None) -> _Side:
    entries = active_entries(document)

    def child(entry: Mapping[str, Any]) -> _Side | None:
        doc = _child_document(entry, resolve)
        return None if doc is None else _document_side(doc, resolve)

    return _Side(_run_facts(document), document.get("run") or {}, entries, keys_of(entries), child)


def _diff(
    doc_a: Mapping[str, Any],
    doc_b: Mapping[str, Any],
    resolve: Resolve | None,
    window: int,
    depth: int,
) -> RunDiff:
    return _diff_sides(_document_side(doc_a, resolve), _document_side(doc_b, resolve), window, depth)


def _diff_sides(side_a: _Side, side_b: _Side, window: int, depth: int) -> RunDiff:
    found: list[Divergence] = []
    facts = json_changes(side_a.facts, side_b.facts)
    if facts:
        found.append(Divergence("run", None, None, None, facts))
    entries_a, entries_b = side_a.entries, side_b.entries
    keys_a, keys_b = side_a.keys, side_b.keys
    raw_a, raw_b = side_a.raw, side_b.raw
    ops = align(keys_a, keys_b, window)
    group = _skipped(ops, entries_a, entries_b)
    at = 0
    while at < len(ops):
        op, i, j = ops[at]
        if op != "match":
            d, at = group(at)
            found.append(d)
            continue
        at += 1
        assert i is not None and j is not None
        if raw_a is not None and raw_b is not None and raw_a[i] == raw_b[j]:
            continue  # identical bytes: nothing differs, and a child entry names the same run
        a, b = entries_a[i], entries_b[j]
        differs = compare_entries(a, b)
        if differs is not None:
            found.append(Divergence(differs[0], entry_path(a), a.get("seq"), b.get("seq"), differs[1]))
        elif a.get("kind") == "child" and depth < MAX_CHILD_DEPTH:
            ca, cb = side_a.child(a), side_b.child(b)
            if ca is not None and cb is not None:
                sub = _diff_sides(ca, cb, window, depth + 1)
                if not sub.is_match:
                    found.append(
                        Divergence("child", entry_path(a), a.get("seq"), b.get("seq"), _nested(sub), sub)
                    )
    concluded = any(k[0] == "conclude" for k in keys_a) or any(k[0] == "conclude" for k in keys_b)
    if not concluded:
        run_a, run_b = side_a.run, side_b.run
        fields = ("status", "code", "step", "reason")
        status = json_changes(
            {"run": {k: run_a.get(k) for k in fields}}, {"run": {k: run_b.get(k) for k in fields}}
        )
        if status:
            found.append(Divergence("conclusion", None, None, None, status))
    return RunDiff(tuple(found))


def diff_documents(
    doc_a: Mapping[str, Any],
    doc_b: Mapping[str, Any],
    *,
    resolve: Resolve | None = None,
    window: int = DEFAULT_WINDOW,
) -> RunDiff:
    """Diff two run record documents (or baselines); A is the expected side.

    ``resolve`` reads a child run's document by id, to compare child runs by their own
    records; without it (and without embedded child baselines) children are compared by
    path only. ``window`` bounds the realignment look-ahead (see ``replay.align``).

    The documents come from the caller (a baseline file, say), so their shape is checked
    first: what the diff cannot read is an ``InvalidRequest`` naming the member.
    """
    if window < 1:
        raise ValueError("window must be at least 1")
    check_document(doc_a, "document A", MAX_CHILD_DEPTH)
    check_document(doc_b, "document B", MAX_CHILD_DEPTH)
    return _diff(doc_a, doc_b, resolve, window, 0)


def diff_runs(store: Host, run_a: str, run_b: str, *, window: int = DEFAULT_WINDOW) -> RunDiff:
    """Diff two runs of ``store``; A is the expected side (e.g. the original of a replay).

    Refusals of the lookups (``RunNotFound``, ``RunNotRetained``) propagate unchanged.
    """
    if window < 1:
        raise ValueError("window must be at least 1")
    return _diff_sides(stored_side(store, run_a), stored_side(store, run_b), window, 0)


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
    for h in heads:
        if h.kind == "recovery" and h.supersedes:
            superseded.update(h.supersedes)
    keep = [n for n, h in enumerate(heads) if h.kind != "recovery" and h.seq not in superseded]
    keys = keys_from_heads(heads[n] for n in keep)
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
        "run": {k: doc.run.get(k) for k in ("workflow", "name", "dry_run")},
        "pins": doc.pins,
    }
    return _Side(facts, doc.run, _Decoded(active), keys, child, active)


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


def keys_from_heads(heads: Iterable[_EntryHead]) -> list[Key]:
    """``entries.keys_of`` over decoded heads (same keys for the same entries)."""
    seen: dict[tuple[str, str, int, str], int] = {}
    keys: list[Key] = []
    for h in heads:
        step = h.step or _StepHead()
        base = placement(h.kind, h.path, h.attempt, step.path, step.status)
        n = seen.get(base, 0)
        seen[base] = n + 1
        keys.append((*base, n))
    return keys
