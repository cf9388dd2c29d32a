"""The run aggregate: a fold of one run's events that every recording call is checked against.

``RunState.apply(row, event)`` folds an event that is already in the log; the
``check_*`` methods raise a coded refusal *before* anything is appended. A handle keeps
its state cached, so a call costs one in-memory check and one append, not a re-read.
"""

from __future__ import annotations

import hashlib
import operator
import zlib
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, chain, compress, repeat
from typing import Any, Final, overload

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
        if k == "case" and type(v) is str and (v == "" or is_text(v)) and "\x00" not in v:  # "" is one too
            return {"case": v}
        if k == "arm" and type(v) is int and 0 <= v <= LARGEST_NUMBER:
            return {"arm": v}
        if k == "else" and v is True:
            return {"else": True}
    raise InvalidRequest(
        f"branch must be {{'case': str}} (Unicode text without NUL), {{'arm': int from 0 to 2**63 - 1}} or "
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

#: Entry kinds by their one-byte code in ``RunState``'s per-entry columns.
_KINDS: Final = tuple(ENTRY_KINDS)
_KIND_CODE: Final = {kind: code for code, kind in enumerate(_KINDS)}
#: How many entry kind codes there are (a saved kind byte is below it).
ENTRY_CODES: Final = len(_KINDS)
_NOT_WORK_CODES: Final = frozenset(_KIND_CODE[k] for k in _NOT_WORK)
_BEGUN: Final = _KIND_CODE["step-begun"]
_ENDED: Final = _KIND_CODE["step-ended"]
_INVOKED: Final = _KIND_CODE["action-invoked"]
_RESULT: Final = _KIND_CODE["action-result"]

#: A path's status byte: never active (or every active entry superseded), active, ended.
_NONE, _ACTIVE, _DONE = 0, 1, 2
_STATUS_WORD: Final = {_ACTIVE: "active", _DONE: "ended"}

#: "No attempt" and "no step-begun entry" in the signed 64-bit columns (both are >= 0 when set).
_UNSET: Final = -1


#: ``_Texts``' index value: a text's 24-bit ``stable_hash`` above its 40-bit number.
_NUMBER_BITS: Final = 40
_NUMBER_MASK: Final = (1 << _NUMBER_BITS) - 1


def stable_hash(data: bytes | bytearray) -> int:
    """24 bits of CRC-32 of a text's UTF-8: the same in every process (``hash`` is salted)."""
    return zlib.crc32(data) >> 8


class _Texts:
    """Many short strings packed in one UTF-8 buffer, found by number or by text.

    A dict of 100,000 str keys costs about 100 bytes a key in objects; here a key costs its
    UTF-8 bytes and 12 bytes of columns (its end, and one packed index value). Strings are
    numbered from 0 in the order they are added. The ones added lately sit in a small dict;
    once it holds a quarter of the rest, they join the sorted index column (one C-level
    sort), found there by bisection. A text added again under a later number answers with
    the later one, as a dict assignment would.

    The index packs a text's ``stable_hash`` (24 bits, the same in every process, unlike
    ``hash``) above its number (40 bits), so one sorted column holds both, and index
    columns saved in pieces (a run checkpoint, ``recording.checkpoint``) are joined by one
    merge sort instead of hashing every text again.
    """

    __slots__ = ("_buf", "_ends", "_index", "_indexed", "_recent", "bulk")

    def __init__(self) -> None:
        self._buf = bytearray()
        #: 4-byte ends, widened to 8 the day one does not fit (``_widened``)
        self._ends = array("I")
        #: ``stable_hash(text) << 40 | number`` of the indexed texts not in ``_recent``, sorted
        self._index = array("Q")
        self._recent: dict[str, int] = {}
        self._indexed = 0
        #: while True (a resume folding the whole log), ``_recent`` grows until ``compact``
        self.bulk = False

    def __len__(self) -> int:
        return len(self._ends)

    @property
    def indexed(self) -> int:
        """How many texts were added to be found (a text added twice counts twice)."""
        return self._indexed

    def text(self, number: int) -> str:
        start = self._ends[number - 1] if number else 0
        return self._buf[start : self._ends[number]].decode()

    def add(self, text: str, *, indexed: bool = True) -> int:
        """Append ``text`` as the next number (found by ``find`` only if ``indexed``)."""
        number = len(self._ends)
        self._buf += text.encode()
        try:
            self._ends.append(len(self._buf))
        except OverflowError:
            self._ends = _widened(self._ends, len(self._buf))
        if indexed:
            self._indexed += 1
            self._recent[text] = number
            if not self.bulk and len(self._recent) > max(4096, len(self._index) >> 2):
                self.compact()  # ``settle``, inlined: this is every call's path
        return number

    def add_many(self, texts: list[str]) -> None:
        """``add`` each of ``texts`` (indexed) in one go: a resume's keys."""
        if not texts:
            return
        first = len(self._ends)
        encoded = [t.encode() for t in texts]
        start = len(self._buf)
        self._buf += b"".join(encoded)
        ends = list(accumulate(map(len, encoded), initial=start))[1:]
        if self._ends.typecode == "I" and ends[-1] > 0xFFFFFFFF:
            self._ends = _widened(self._ends)
        self._ends.extend(ends)
        self._recent.update(zip(texts, range(first, first + len(texts)), strict=True))
        self._indexed += len(texts)
        if not self.bulk:
            self.settle()

    def settle(self) -> None:
        """``compact`` once the recent texts are more than a quarter of the rest (and over
        4,096): each merge re-sorts the whole index, so it is paid every so often only."""
        self.bulk = False
        if len(self._recent) > max(4096, len(self._index) >> 2):
            self.compact()

    def find(self, text: str) -> int | None:
        """The number last added under ``text`` (indexed), or None."""
        number = self._recent.get(text)
        if number is not None:
            return number
        index = self._index
        if not index:
            return None
        low = stable_hash(text.encode()) << _NUMBER_BITS
        i = bisect_left(index, low)
        found = None
        while i < len(index) and index[i] >> _NUMBER_BITS == low >> _NUMBER_BITS:
            n = index[i] & _NUMBER_MASK  # numbers ascend within a hash: the last match wins
            if self.text(n) == text:
                found = n
            i += 1
        return found

    def compact(self) -> None:
        """Move the recent texts into the sorted index (two sorted runs: one merge)."""
        self.bulk = False
        if not self._recent:
            return
        recent = sorted(stable_hash(t.encode()) << _NUMBER_BITS | n for t, n in self._recent.items())
        self._index = array("Q", sorted(chain(self._index, recent)))
        self._recent = {}

    # -- saved in pieces (recording.checkpoint) --------------------------------------

    def piece(self, start: int, stop: int) -> tuple[bytes, array[int], array[int]]:
        """Texts ``start`` to ``stop - 1``: their UTF-8 bytes, their ends (offsets in the
        whole buffer) and the sorted index values of the nonempty ones (the empty text is
        never asked for: every key and path is nonempty, and gaps are stored empty)."""
        ends = self._ends[start:stop]
        base = self._ends[start - 1] if start else 0
        buf = bytes(self._buf[base : ends[-1] if ends else base])
        # C-level iteration (map over builtins) only: a piece is thousands of texts
        starts = list(chain((base,), ends[:-1]))
        offsets = [map(operator.sub, starts, repeat(base)), map(operator.sub, ends, repeat(base))]
        texts = map(buf.__getitem__, map(slice, *offsets))
        hashes = map(operator.rshift, map(zlib.crc32, texts), repeat(8))
        values = map(operator.or_, map(operator.lshift, hashes, repeat(_NUMBER_BITS)), range(start, stop))
        return buf, ends, array("Q", sorted(compress(values, map(operator.lt, starts, ends))))

    def load(self, pieces: Sequence[tuple[bytes, array[int], array[int]]], indexed: int) -> None:
        """Become the texts saved by ``piece`` over consecutive ranges from 0 (an empty
        ``_Texts`` only); ``indexed`` is the saved ``indexed`` count."""
        ends: list[array[int]] = []
        for buf, piece_ends, _ in pieces:
            self._buf += buf
            ends.append(piece_ends)
        if any(e.typecode != "I" for e in ends):
            self._ends = array("Q")
        for e in ends:
            self._ends.extend(e if e.typecode == self._ends.typecode else array(self._ends.typecode, e))
        if len(self._ends) and self._ends[-1] != len(self._buf):
            raise ValueError("text pieces do not join up")
        self._index = array("Q", sorted(chain.from_iterable(index for _, _, index in pieces)))
        self._indexed = indexed


def _widened(column: array[int], *values: int) -> array[int]:
    """``column`` as 8-byte numbers, with ``values`` appended (one did not fit in 4 bytes)."""
    wide = array("q" if column.typecode.islower() else "Q", column)
    wide.extend(values)
    return wide


class _PathView(Mapping[str, Any]):
    """A read-only map over ``RunState``'s per-path columns, for callers that ask by path."""

    __slots__ = ("_get", "_state")

    def __init__(self, state: RunState, get: Callable[[int], Any]) -> None:
        self._state, self._get = state, get

    def __getitem__(self, path: str) -> Any:
        pid = self._state._paths.find(path)
        value = None if pid is None else self._get(pid)
        if value is None:
            raise KeyError(path)
        return value

    def __iter__(self) -> Iterator[str]:
        paths = self._state._paths
        return (paths.text(pid) for pid in range(len(paths)) if self._get(pid) is not None)

    def __len__(self) -> int:
        return sum(1 for _ in self)


class _PathEntries(_PathView):
    """path -> entry seqs: every path in ``_paths`` has an entry, so membership is a lookup."""

    __slots__ = ()

    def __contains__(self, path: object) -> bool:
        return isinstance(path, str) and self._state._paths.find(path) is not None


class _Facts(Sequence[EntryFact]):
    """The run's entries as ``EntryFact`` values, built on demand from the packed columns."""

    __slots__ = ("_state",)

    def __init__(self, state: RunState) -> None:
        self._state = state

    def __len__(self) -> int:
        return len(self._state._kind)

    @overload
    def __getitem__(self, i: int) -> EntryFact: ...

    @overload
    def __getitem__(self, i: slice) -> list[EntryFact]: ...

    def __getitem__(self, i: int | slice) -> EntryFact | list[EntryFact]:
        if isinstance(i, slice):
            return [self._state._fact(n) for n in range(len(self))[i]]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        return self._state._fact(i)


@dataclass(slots=True)
class RunState:
    """Everything the log says about one run that a recording call can be refused on.

    A long run's handle stays small: per entry and per path the facts are packed in
    columns (``array``, ``bytearray``) rather than objects, idempotency keys and step
    paths live in ``_Texts``, and each call is remembered by a 16-byte digest, not its
    body: about 85 bytes an event in all (8.3 MB at 50,000 steps), where dicts of objects took 440.
    """

    run_id: str
    workflow: str = ""
    dry_run: bool = False
    seq: int = 0
    entries: int = 0
    generation: int = 0
    status: str = "active"
    last_digest: str | None = None
    #: idempotency keys, numbered by log seq - 1 (a key never asked again is stored empty)
    _keys: _Texts = field(default_factory=_Texts)
    #: ``call_digest`` of each log row, 16 bytes at (seq - 1) * 16
    _digests: bytearray = field(default_factory=bytearray)
    #: per log row (index seq - 1): 1 if the row is an entry (its entry seq is the count up to it)
    _is_entry: bytearray = field(default_factory=bytearray)
    #: per entry (index entry - 1): kind code, path number or -1, attempt or -1, superseded flag
    _kind: bytearray = field(default_factory=bytearray)
    #: generations run-length encoded: entries from ``_gen_from[i]`` (index) on have ``_gen[i]``
    _gen_from: array[int] = field(default_factory=lambda: array("Q"))
    _gen: array[int] = field(default_factory=lambda: array("q"))
    _pid: array[int] = field(default_factory=lambda: array("i"))  # widened if ever needed
    _attempt: array[int] = field(default_factory=lambda: array("q"))
    _superseded: bytearray = field(default_factory=bytearray)
    #: step paths named by any entry, numbered in order of first appearance
    _paths: _Texts = field(default_factory=_Texts)
    #: per path: ``_NONE``/``_ACTIVE``/``_DONE`` over active entries, the generation of the
    #: active step-begun entry (or -1), the highest attempt ever invoked (0 for none)
    _status: bytearray = field(default_factory=bytearray)
    _begun: array[int] = field(default_factory=lambda: array("q"))
    _max_attempt: array[int] = field(default_factory=lambda: array("q"))
    _last_path: tuple[str | None, int] = (None, _UNSET)
    #: (path, attempt) invoked in the current generation, without a result yet
    open_invokes: set[tuple[str, int]] = field(default_factory=set)
    children: set[str] = field(default_factory=set)
    concluded: bool = False
    #: artifact name -> the sha256 of its content: a name never changes content
    artifacts: dict[str, str] = field(default_factory=dict)
    #: the digest of the run's manifest: one manifest.json per run, never overwritten
    manifest: str | None = None
    #: run checkpoints (``recording.checkpoint``): the lowest path number whose per-path
    #: columns may have changed since the checkpoint this state knows is stored, and what
    #: that checkpoint holds (per row piece: entries through its end and its digest; per
    #: path piece: its digest). A new or fully folded state knows of none.
    _path_low: int = 0
    _saved_rows: list[tuple[int, bytes]] = field(default_factory=list)
    _saved_paths: list[bytes] = field(default_factory=list)

    # -- views for callers that ask by path or by entry ------------------------------------

    @property
    def facts(self) -> Sequence[EntryFact]:
        return _Facts(self)

    @property
    def path_status(self) -> Mapping[str, str]:
        """path -> "active" | "ended", over active (not superseded) entries only."""
        return _PathView(self, lambda pid: _STATUS_WORD.get(self._status[pid]))

    @property
    def begun_in(self) -> Mapping[str, int]:
        """path -> generation of the active step-begun entry, if any."""
        return _PathView(self, lambda pid: None if self._begun[pid] == _UNSET else self._begun[pid])

    @property
    def max_attempt(self) -> Mapping[str, int]:
        """path -> the highest attempt ever invoked there."""
        return _PathView(self, lambda pid: self._max_attempt[pid] or None)

    @property
    def path_entries(self) -> Mapping[str, list[int]]:
        """path -> entry seqs of every entry naming the path (superseded ones too)."""
        return _PathEntries(self, lambda pid: [i + 1 for i, p in enumerate(self._pid) if p == pid] or None)

    @property
    def remembered_keys(self) -> int:
        """How many distinct idempotency keys the handle can answer a repeat of."""
        return self._keys.indexed

    def fold_all(self) -> None:
        """About to fold the whole log (a resume): index keys and paths in one sort at the
        end, ``compact``, rather than a sort every so often."""
        self._keys.bulk = self._paths.bulk = True

    def compact(self) -> None:
        """Pack what folding left in dicts, as far as a live handle keeps them packed (after
        a resume from a checkpoint, the few rows folded after it stay in the recent dicts)."""
        self._keys.settle()
        self._paths.settle()

    def _fact(self, i: int) -> EntryFact:
        pid, attempt = self._pid[i], self._attempt[i]
        return EntryFact(
            i + 1,
            _KINDS[self._kind[i]],
            self._generation_of(i),
            None if pid == _UNSET else self._paths.text(pid),
            None if attempt == _UNSET else attempt,
            bool(self._superseded[i]),
        )

    def _generation_of(self, i: int) -> int:
        """The generation of the entry at index ``i``."""
        return self._gen[bisect_right(self._gen_from, i) - 1]

    def _find_path(self, path: str) -> int | None:
        """The path's number; the last one found is kept, since a call checks, then folds,
        the same path (a path's number never changes)."""
        if path == self._last_path[0]:
            return self._last_path[1]
        pid = self._paths.find(path)
        if pid is not None:
            self._last_path = (path, pid)
        return pid

    def _path_id(self, path: str) -> int:
        pid = self._find_path(path)
        if pid is None:
            pid = self._paths.add(path)
            self._status.append(_NONE)
            self._begun.append(_UNSET)
            self._max_attempt.append(0)
            self._last_path = (path, pid)
        return pid

    def _status_of(self, path: str) -> int:
        pid = self._find_path(path)
        return _NONE if pid is None else self._status[pid]

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
        if seq != self.seq + 1:  # seqs are consecutive; keep the numbering if not
            while seq > len(self._keys) + 1:
                self._keys.add("", indexed=False)
                self._digests += bytes(16)
                self._is_entry.append(0)
        self._is_entry.append(entry is not None)
        self.seq = seq
        self.last_digest = digest
        # Remembering a RunRecorder call's key would grow a long run's state for a key never
        # asked again (an import's keys are asked again).
        if type(event) is not ForklineLogged or not key.startswith(ONE_OFF_KEY):
            self._keys.add(key)
            self._digests += call_digest(event, body)
        else:
            self._keys.add("", indexed=False)
            self._digests += bytes(16)
        pid = _UNSET  # the path's number, for an entry that names one
        if entry is not None:
            self.entries = entry
            path = getattr(event, "path", None)
            if path is not None:
                pid = self._path_id(path)
                if pid < self._path_low:
                    self._path_low = pid
            attempt = getattr(event, "attempt", None)
            if not self._gen or self._gen[-1] != generation:
                self._gen_from.append(len(self._kind))
                self._gen.append(generation)
            self._kind.append(_KIND_CODE[_kind(event)])
            try:
                self._pid.append(pid)
            except OverflowError:
                self._pid = _widened(self._pid, pid)
            self._attempt.append(_UNSET if attempt is None else attempt)
            self._superseded.append(0)
        if not isinstance(event, _STATE_EVENTS):  # artifacts, observations, Forkline events
            return
        match event:  # every class matched here is in _STATE_EVENTS
            case RunStarted():
                self.workflow = event.workflow
                self.dry_run = event.dry_run
            case StepBegun():
                pid = self._path_id(event.path) if pid == _UNSET else pid
                self._status[pid] = _ACTIVE
                self._begun[pid] = generation
            case ActionInvoked():
                pid = self._path_id(event.path) if pid == _UNSET else pid
                self._max_attempt[pid] = max(self._max_attempt[pid], event.attempt)
                if self._status[pid] == _NONE:
                    self._status[pid] = _ACTIVE
                self.open_invokes.add((event.path, event.attempt))
            case ActionResult():
                self.open_invokes.discard((event.path, event.attempt))
            case StepEnded():
                self._status[self._path_id(event.path) if pid == _UNSET else pid] = _DONE
            case ChildStarted():
                self.children.add(event.child)
                pid = self._path_id(event.path) if pid == _UNSET else pid
                if self._status[pid] == _NONE:
                    self._status[pid] = _ACTIVE
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
        n = self._keys.find(key)
        if n is None:
            return None
        entry = self._is_entry[: n + 1].count(1) if self._is_entry[n] else None  # a repeat: rare
        return n + 1, entry, bytes(self._digests[n * 16 : n * 16 + 16])

    def apply_row(self, row: LogRow) -> None:
        """Fold a row read back from the log (resuming a run, adopting a lost acknowledgement)."""
        self.apply(row.seq, row.entry, row.generation, row.key, row.digest, row.body.encode(), row.event())

    def fold(self, rows: Iterable[LogRow]) -> None:
        """Fold a run's rows read back from the log in seq order (a resume), then ``compact``.

        Begun, invoked, result and ended entries, nearly all of a long run, are decoded
        only as far as the state needs (path and attempt), with the other kinds' fold
        (``apply``) inlined; every other row goes through ``apply`` itself.
        """
        self.fold_all()
        keys, digests, is_entry, kinds = self._keys, self._digests, self._is_entry, self._kind
        attempts, superseded, status = self._attempt, self._superseded, self._status
        light, blake2b = _LIGHT.decode, hashlib.blake2b
        pending: list[str] = []  # keys of the rows folded here, numbered once apply needs it
        for row in rows:
            code = _LIGHT_KINDS.get(row.kind)
            if code is None or row.entry is None or row.seq != self.seq + 1 or not self._gen:
                keys.add_many(pending)
                pending.clear()
                self.apply_row(row)
                continue
            body = row.body.encode()
            facts = light(body)
            pid = self._paths.find(facts.path)
            if pid is None:
                pid = self._path_id(facts.path)
            elif pid < self._path_low:
                self._path_low = pid
            generation = row.generation
            self.seq, self.last_digest, self.entries = row.seq, row.digest, row.entry
            pending.append(row.key)
            digests += blake2b(body, digest_size=16).digest()
            is_entry.append(1)
            if self._gen[-1] != generation:
                self._gen_from.append(len(kinds))
                self._gen.append(generation)
            kinds.append(code)
            self._pid.append(pid)  # a 4-byte column: pids stay far below 2**31 here
            attempts.append(_UNSET if facts.attempt is None else facts.attempt)
            superseded.append(0)
            if code == _BEGUN:
                status[pid] = _ACTIVE
                self._begun[pid] = generation
            elif code == _ENDED:
                status[pid] = _DONE
            elif code == _INVOKED:
                assert facts.attempt is not None
                if facts.attempt > self._max_attempt[pid]:
                    self._max_attempt[pid] = facts.attempt
                if status[pid] == _NONE:
                    status[pid] = _ACTIVE
                self.open_invokes.add((facts.path, facts.attempt))
            else:
                self.open_invokes.discard((facts.path, facts.attempt))
        keys.add_many(pending)
        self.compact()

    def _recover(self, supersedes: list[int], generation: int) -> None:
        self.generation = generation
        self.open_invokes.clear()  # a later result cannot answer an earlier generation's invoke
        touched: set[int] = set()
        for n in supersedes:
            self._superseded[n - 1] = 1
            if self._pid[n - 1] != _UNSET:
                touched.add(self._pid[n - 1])
        self._path_low = min(self._path_low, *touched) if touched else self._path_low
        for pid in touched:
            self._begun[pid] = _UNSET
            self._status[pid] = _NONE
        for i, pid in enumerate(self._pid):  # the touched paths' active entries, in order
            if pid not in touched or self._superseded[i]:
                continue
            kind = self._kind[i]
            if kind == _BEGUN:
                self._begun[pid] = self._generation_of(i)
            if self._status[pid] != _DONE:
                self._status[pid] = _DONE if kind == _ENDED else _ACTIVE

    def in_flight(self) -> list[InFlight]:
        """The entries no recovery superseded of every step not ended, in seq order: what a
        recovery after a crash supersedes so the steps run afresh (superseding all of a
        step's entries never orphans one, which ``check_recover`` would refuse)."""
        out: list[InFlight] = []
        status, kinds, superseded, attempts = self._status, self._kind, self._superseded, self._attempt
        for i, pid in enumerate(self._pid):
            if pid == _UNSET or superseded[i] or kinds[i] in _NOT_WORK_CODES or status[pid] == _DONE:
                continue
            attempt = attempts[i]
            out.append(
                InFlight(
                    i + 1,
                    ENTRY_KINDS[_KINDS[kinds[i]]],
                    self._paths.text(pid),
                    None if attempt == _UNSET else attempt,
                )
            )
        return out

    def next_attempt(self, path: str) -> int:
        """One more than the highest attempt ever invoked at ``path``, superseded ones too:
        attempt numbers are never reused."""
        pid = self._paths.find(path)
        return (0 if pid is None else self._max_attempt[pid]) + 1

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
        pid = self._find_path(path)
        if pid is not None and self._status[pid] == _DONE:
            raise Conflict(
                f"step {path!r} already ended; a recovery must supersede its entries before it runs again"
            )
        if pid is not None and self._begun[pid] == self.generation:
            raise Conflict(f"step {path!r} already began in generation {self.generation}")

    def check_invoke(self, path: str, attempt: object, dispatch: object) -> None:
        self.check_open()
        check_attempt(attempt)
        check_word(dispatch, INVOKE_DISPATCH, "invoke dispatch")
        pid = self._find_path(path)
        if pid is not None and self._status[pid] == _DONE:
            raise Conflict(f"step {path!r} already ended; it cannot be invoked again")
        previous = 0 if pid is None else self._max_attempt[pid]
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
        status = self._status_of(path)
        if status == _NONE and outcome not in ("skipped", "cancelled"):
            raise Conflict(
                f"step {path!r} never began and was never invoked; call begin_step first "
                "(only a skipped or cancelled step may end without beginning)"
            )
        if status == _DONE:
            raise Conflict(f"step {path!r} already ended")

    def check_child(self, path: str, child: object) -> None:
        self.check_open()
        check_text(child, "child run id")
        if child in self.children:
            raise Conflict(f"child run {child!r} is already recorded")
        if self._status_of(path) == _DONE:
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
            kind = _KINDS[self._kind[n - 1]]
            if kind in ("run-started", "recovered"):
                raise Conflict(f"recovery cannot supersede entry {n}: it is a {ENTRY_KINDS[kind]} entry")
            if self._superseded[n - 1]:
                raise Conflict(f"entry {n} is already superseded")
        facts = list(self.facts)  # a recovery is rare: the entries' objects, built once
        for orphan, partner in orphaned_by(facts, seqs):
            fact = facts[orphan - 1]
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


def orphaned_by(facts: Sequence[EntryFact], supersedes: Iterable[int]) -> list[tuple[int, int]]:
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


class _Light(msgspec.Struct, frozen=True):
    """The fields of a begun, invoked, result or ended event that ``RunState.fold`` reads."""

    path: str
    attempt: int | None = None


_LIGHT: Final = msgspec.json.Decoder(_Light)
_LIGHT_KINDS: Final = {
    kind: _KIND_CODE[kind] for kind in ("step-begun", "action-invoked", "action-result", "step-ended")
}


def _kind(event: EventBody) -> str:
    return str(event.__struct_config__.tag)


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
