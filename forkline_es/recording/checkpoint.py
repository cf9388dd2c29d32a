"""Run checkpoints: a handle's ``RunState`` saved beside the log, so that ``resume_run``
folds only the rows after it instead of the whole run (not SQLite's WAL checkpoint,
``log.checkpoint``).

A checkpoint stands for the state after row ``seq`` of a run, ``seq`` a multiple of
``EVERY``. The handle that appends row ``seq + 1`` writes it in that append's transaction
(``Saving.write``, from ``Store._commit``), so a crash leaves the previous checkpoint or
the new one, never half of one. It is derived data, never the truth: ``load`` takes it
only if the log's row ``seq`` has the digest it names (the rows' hash chain then vouches
for every row before), its format and byte order are this build's, and every piece is
there with the digest its head lists; anything else, or a blob that does not decode, is
a ``Mismatch`` and the caller folds the whole log.

Writing stays small and bounded. The state's append-only columns (per row: key, call
digest, is-an-entry; per entry: kind, path number, attempt) are saved once, in immutable
*row pieces* of ``EVERY`` rows. The per-path columns (text, status, begun, highest
attempt) are saved in *path pieces* of ``PATHS_PER_PIECE`` paths, and a checkpoint
rewrites only those from the lowest path a fold changed since the last one (``RunState.
_path_low``), skipping a piece whose digest did not change: usually the last one. The
*head* holds the rest (scalars, generations, the superseded entries' numbers, open
invokes, children, artifacts) and the digest of every piece.

Layout: ``run_checkpoint`` (one head per run) and ``run_checkpoint_piece`` (row piece
``i`` as piece ``i``, path piece ``j`` as piece ``-1 - j``); the log's schema makes both.
"""

from __future__ import annotations

import hashlib
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import msgspec

from forkline_es.log.backend import Cursor

if TYPE_CHECKING:
    from forkline_es.recording.state import RunState

__all__ = ["EVERY", "FORMAT", "PATHS_PER_PIECE", "Mismatch", "Saving", "due", "load"]

#: Rows per row piece; a checkpoint is due at every multiple of it.
EVERY: Final = 4096
#: Paths per path piece: a checkpoint rewrites the pieces of the paths changed since the
#: last one, usually the paths new since then, and the rest of the last piece.
PATHS_PER_PIECE: Final = 1024
#: The blob format: a head of another format is not read (the whole log is folded).
FORMAT: Final = 1


class Mismatch(Exception):
    """The stored checkpoint cannot stand for the log (the message says why)."""


class _Texts(msgspec.Struct, array_like=True, frozen=True):
    """A range of ``recording.state._Texts``: UTF-8, ends, sorted index values."""

    data: bytes
    ends_type: str
    ends: bytes
    index: bytes


class _RowPiece(msgspec.Struct, array_like=True, frozen=True):
    """Rows ``i * EVERY + 1`` to ``(i + 1) * EVERY``, and the entries among them."""

    keys: _Texts
    digests: bytes
    is_entry: bytes
    kinds: bytes
    pid_type: str
    pids: bytes
    attempts: bytes


class _PathPiece(msgspec.Struct, array_like=True, frozen=True):
    """Path numbers ``j * PATHS_PER_PIECE`` on, up to ``PATHS_PER_PIECE`` of them."""

    paths: _Texts
    status: bytes
    begun: bytes
    max_attempt: bytes


class _Head(msgspec.Struct, array_like=True, frozen=True):
    byteorder: str
    #: ``EVERY`` and ``PATHS_PER_PIECE`` when it was written
    every: int
    per_piece: int
    workflow: str
    dry_run: bool
    entries: int
    generation: int
    status: str
    concluded: bool
    manifest: str | None
    keys_indexed: int
    paths: int
    gen_from: bytes
    gen: bytes
    superseded: bytes
    open_invokes: list[tuple[str, int]]
    children: list[str]
    artifacts: dict[str, str]
    #: per row piece: entries through its last row, and its digest
    rows: list[tuple[int, bytes]]
    #: per path piece: its digest
    path_pieces: list[bytes]


_ENCODE: Final = msgspec.msgpack.Encoder().encode
_HEAD: Final = msgspec.msgpack.Decoder(_Head)
_ROWS: Final = msgspec.msgpack.Decoder(_RowPiece)
_PATHS: Final = msgspec.msgpack.Decoder(_PathPiece)

_PUT_PIECE: Final = (
    "INSERT INTO run_checkpoint_piece (run_id, piece, data) VALUES (?, ?, ?) "
    "ON CONFLICT (run_id, piece) DO UPDATE SET data = excluded.data"
)
_PUT_HEAD: Final = (
    "INSERT INTO run_checkpoint (run_id, seq, digest, format, head) VALUES (?, ?, ?, ?, ?) "
    "ON CONFLICT (run_id) DO UPDATE SET seq = excluded.seq, digest = excluded.digest, "
    "format = excluded.format, head = excluded.head"
)


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


@dataclass(slots=True)
class Saving:
    """A checkpoint built from a state, written with the append after its seq."""

    run_id: str
    seq: int
    digest: str
    head: bytes
    pieces: list[tuple[int, bytes]]
    rows: list[tuple[int, bytes]]
    paths: list[bytes]
    #: the state's ``_path_low`` before this checkpoint reset it (restored if not written)
    low: int

    def write(self, cur: Cursor) -> None:
        """Inside the append's transaction: the changed pieces, then the head."""
        if self.pieces:
            cur.executemany(_PUT_PIECE, [(self.run_id, n, data) for n, data in self.pieces])
        cur.execute(_PUT_HEAD, (self.run_id, self.seq, self.digest, FORMAT, self.head))

    def done(self, state: RunState) -> None:
        """The append committed: ``state`` knows what is stored now."""
        state._saved_rows, state._saved_paths = self.rows, self.paths

    def undo(self, state: RunState) -> None:
        """The append did not commit: the paths changed before it are still to save."""
        state._path_low = min(state._path_low, self.low)


def due(state: RunState, seq: int, previous: Saving | None = None) -> Saving | None:
    """The checkpoint to write with the append of row ``seq`` (``state`` is at ``seq - 1``):
    one when ``seq - 1`` is a positive multiple of ``EVERY``, else ``previous`` (a batch
    that crossed a multiple earlier: its checkpoint, still unwritten)."""
    at = seq - 1
    if at % EVERY or not at or state.seq != at or state.last_digest is None:
        return previous
    low = state._path_low if previous is None else min(state._path_low, previous.low)
    rows = list(state._saved_rows)
    pieces: list[tuple[int, bytes]] = []
    entries = rows[-1][0] if rows else 0
    for i in range(len(rows), at // EVERY):
        data, entries = _row_piece(state, i, entries)
        rows.append((entries, _digest(data)))
        pieces.append((i, data))
    paths = list(state._saved_paths)
    count = len(state._paths)
    for j in range(min(low // PATHS_PER_PIECE, len(paths)), -(-count // PATHS_PER_PIECE)):
        data = _path_piece(state, j)
        digest = _digest(data)
        if j < len(paths):
            if paths[j] == digest:
                continue
            paths[j] = digest
        else:
            paths.append(digest)
        pieces.append((-1 - j, data))
    superseded = array("Q")
    i = state._superseded.find(1)
    while i >= 0:
        superseded.append(i)
        i = state._superseded.find(1, i + 1)
    head = _Head(
        byteorder=sys.byteorder,
        every=EVERY,
        per_piece=PATHS_PER_PIECE,
        workflow=state.workflow,
        dry_run=state.dry_run,
        entries=state.entries,
        generation=state.generation,
        status=state.status,
        concluded=state.concluded,
        manifest=state.manifest,
        keys_indexed=state._keys.indexed,
        paths=count,
        gen_from=state._gen_from.tobytes(),
        gen=state._gen.tobytes(),
        superseded=superseded.tobytes(),
        open_invokes=sorted(state.open_invokes),
        children=sorted(state.children),
        artifacts=state.artifacts,
        rows=rows,
        path_pieces=paths,
    )
    state._path_low = count
    return Saving(state.run_id, at, state.last_digest, _ENCODE(head), pieces, rows, paths, low)


def _texts(piece: tuple[bytes, array[int], array[int]]) -> _Texts:
    data, ends, index = piece
    return _Texts(data, ends.typecode, ends.tobytes(), index.tobytes())


def _row_piece(state: RunState, i: int, entries: int) -> tuple[bytes, int]:
    a, b = i * EVERY, (i + 1) * EVERY
    is_entry = bytes(state._is_entry[a:b])
    end = entries + is_entry.count(1)
    piece = _RowPiece(
        keys=_texts(state._keys.piece(a, b)),
        digests=bytes(state._digests[a * 16 : b * 16]),
        is_entry=is_entry,
        kinds=bytes(state._kind[entries:end]),
        pid_type=state._pid.typecode,
        pids=state._pid[entries:end].tobytes(),
        attempts=state._attempt[entries:end].tobytes(),
    )
    return _ENCODE(piece), end


def _path_piece(state: RunState, j: int) -> bytes:
    a = j * PATHS_PER_PIECE
    b = min(a + PATHS_PER_PIECE, len(state._paths))
    piece = _PathPiece(
        paths=_texts(state._paths.piece(a, b)),
        status=bytes(state._status[a:b]),
        begun=state._begun[a:b].tobytes(),
        max_attempt=state._max_attempt[a:b].tobytes(),
    )
    return _ENCODE(piece)


# -- loading ------------------------------------------------------------------------------


def _array(typecode: str, data: bytes) -> array[int]:
    out = array(typecode)
    if len(data) % out.itemsize:
        raise Mismatch(f"a column of {len(data)} bytes is not a whole number of {typecode!r} items")
    out.frombytes(data)
    return out


def _joined(default: str, parts: Sequence[tuple[str, bytes]]) -> array[int]:
    """Columns saved in pieces as one array (widened when one piece was)."""
    types = {t for t, _ in parts} or {default}
    if len(types) == 1:
        return _array(types.pop(), b"".join(data for _, data in parts))
    wide = array("q" if default.islower() else "Q")
    for t, data in parts:
        wide.extend(_array(t, data))
    return wide


def _texts_parts(parts: Sequence[_Texts]) -> list[tuple[bytes, array[int], array[int]]]:
    return [(p.data, _array(p.ends_type, p.ends), _array("Q", p.index)) for p in parts]


def load(cur: Cursor, run_id: str, state: RunState) -> bool:
    """Fill the empty ``state`` from the run's checkpoint: False when there is none;
    ``Mismatch`` when the one stored cannot stand for the log (``cur`` reads the log and
    the checkpoint in one snapshot)."""
    found = cur.execute(
        "SELECT seq, digest, format, head FROM run_checkpoint WHERE run_id = ?", (run_id,)
    ).fetchall()
    if not found:
        return False
    seq, digest, fmt, blob = found[0]
    if fmt != FORMAT:
        raise Mismatch(f"checkpoint format {fmt}, this build reads {FORMAT}")
    row = cur.execute("SELECT digest FROM log WHERE run_id = ? AND seq = ?", (run_id, seq)).fetchall()
    if not row or row[0][0] != digest:
        raise Mismatch(f"the log's row {seq} is not the one the checkpoint stands for")
    try:
        _fill(cur, run_id, int(seq), str(digest), _HEAD.decode(bytes(blob)), state)
    except (msgspec.DecodeError, ValueError, IndexError, OverflowError, TypeError) as e:
        raise Mismatch(f"the checkpoint does not decode: {e}") from None
    return True


def _fill(cur: Cursor, run_id: str, seq: int, digest: str, head: _Head, state: RunState) -> None:
    from forkline_es.recording.state import ENTRY_CODES

    if head.byteorder != sys.byteorder:
        raise Mismatch(f"checkpoint written on a {head.byteorder}-endian machine")
    if head.every < 1 or head.per_piece < 1:
        raise Mismatch("the checkpoint's piece sizes are not positive")
    n_rows, n_paths = seq // head.every, -(-head.paths // head.per_piece)
    if seq % head.every or len(head.rows) != n_rows or len(head.path_pieces) != n_paths:
        raise Mismatch("the checkpoint's pieces do not cover its seq and paths")
    stored = {
        int(n): bytes(data)
        for n, data in cur.execute("SELECT piece, data FROM run_checkpoint_piece WHERE run_id = ?", (run_id,))
    }
    wanted = [(i, d) for i, (_, d) in enumerate(head.rows)] + [
        (-1 - j, d) for j, d in enumerate(head.path_pieces)
    ]
    for n, d in wanted:
        if n not in stored or _digest(stored[n]) != d:
            raise Mismatch(f"checkpoint piece {n} is missing or not the one its head lists")
    rows = [_ROWS.decode(stored[i]) for i in range(n_rows)]
    paths = [_PATHS.decode(stored[-1 - j]) for j in range(n_paths)]
    state.workflow, state.dry_run, state.seq, state.entries = head.workflow, head.dry_run, seq, head.entries
    state.generation, state.status, state.last_digest = head.generation, head.status, digest
    state.concluded, state.manifest = head.concluded, head.manifest
    state._keys.load(_texts_parts([p.keys for p in rows]), head.keys_indexed)
    state._digests = bytearray(b"".join(p.digests for p in rows))
    state._is_entry = bytearray(b"".join(p.is_entry for p in rows))
    state._kind = bytearray(b"".join(p.kinds for p in rows))
    state._pid = _joined("i", [(p.pid_type, p.pids) for p in rows])
    state._attempt = _joined("q", [("q", p.attempts) for p in rows])
    state._gen_from, state._gen = _array("Q", head.gen_from), _array("q", head.gen)
    state._superseded = bytearray(head.entries)
    for i in _array("Q", head.superseded):
        state._superseded[i] = 1
    state._paths.load(_texts_parts([p.paths for p in paths]), head.paths)
    state._status = bytearray(b"".join(p.status for p in paths))
    state._begun = _joined("q", [("q", p.begun) for p in paths])
    state._max_attempt = _joined("q", [("q", p.max_attempt) for p in paths])
    state.open_invokes = {(path, attempt) for path, attempt in head.open_invokes}
    state.children, state.artifacts = set(head.children), dict(head.artifacts)
    entries = head.entries
    if (
        len(state._keys) != seq
        or len(state._digests) != 16 * seq
        or len(state._is_entry) != seq
        or state._is_entry.count(1) != entries
        or state._is_entry.count(0) != seq - entries
        or not len(state._kind) == len(state._pid) == len(state._attempt) == entries
        or (entries and max(state._kind) >= ENTRY_CODES)
        or (entries and not -1 <= min(state._pid) <= max(state._pid) < head.paths)
        or len(state._paths) != head.paths
        or not len(state._status) == len(state._begun) == len(state._max_attempt) == head.paths
        or (state._status and max(state._status) > 2)
        or len(state._gen_from) != len(state._gen)
        or (entries and (not state._gen or state._gen_from[0] != 0))
        or [e for e, _ in head.rows] != _running(rows)
    ):
        raise Mismatch("the checkpoint's columns do not fit together")
    state._saved_rows, state._saved_paths, state._path_low = (
        list(head.rows),
        list(head.path_pieces),
        head.paths,
    )


def _running(rows: Sequence[_RowPiece]) -> list[int]:
    """Entries through the end of each row piece."""
    out, total = [], 0
    for p in rows:
        total += p.is_entry.count(1)
        out.append(total)
    return out
