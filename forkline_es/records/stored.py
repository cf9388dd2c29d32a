"""Stored run record texts: a concluded run's finished document kept beside the log.

Why: building a 10,000-step document joins thousands of fragments and resolves every
payload reference (about 0.7x a decode of the result, issue 22), and a concluded run's
document only changes when a row is appended to it. The first ``get_run_record`` or
``export_run_record`` of a concluded run on a writable store keeps the finished text in
``record_text``; a later read in any process takes it instead of building when the run's
last row is still the one it was built at (same seq, same log digest, whose hash chain
vouches for every row before) and the projector versions are the same (``format``).
Anything else (a later row: payloads removed, an artifact, a Forkline event; another
digest; another build's projectors) builds as before and stores the new text.

Derived data, never the truth: not a projection (``rebuild_projections`` and
``check_projections`` leave it), never copied. The text is zlib level 1 (about 35 bytes
per event of a 10,000-step run instead of 630 plain; inflating it costs what reading the
plain text from SQLite's overflow pages does, docs/benchmarks.md), whose Adler-32 check
turns a damaged blob into a build, never a served text. Written in its own short
transaction, only while the row it names is still the run's last (PostgreSQL's insert
trigger checks so after waiting for the run's appends in flight), so a text built before
a payload removal is never written after it. A read-only store, or a role without INSERT
on the table, reads and builds without writing.
Eviction and payload removal delete the run's texts; ``gc`` deletes the stale ones.
"""

from __future__ import annotations

import zlib
from typing import Final

from forkline_es._logging import get_logger
from forkline_es.errors import ForklineError
from forkline_es.log.backend import Cursor
from forkline_es.log.eventlog import EventLog

__all__ = ["LEVEL", "Last", "load", "save"]

#: zlib level: 1 compresses a 10,000-step document 18x in ~23 ms; higher levels gain ~15%
#: more for twice the time, and inflating costs the same.
LEVEL: Final = 1

_log = get_logger("forkline_es.records")

#: The run's last row: seq, digest, position.
Last = tuple[int, str, int]

_LOAD: Final = "SELECT digest, size, text FROM record_text WHERE run_id = ? AND seq = ? AND format = ?"
_SAVE: Final = (
    "INSERT INTO record_text (run_id, seq, digest, format, size, text) SELECT ?, ?, ?, ?, ?, ? "
    "WHERE EXISTS (SELECT 1 FROM log WHERE run_id = ? AND seq = ? AND digest = ?) "
    "AND NOT EXISTS (SELECT 1 FROM log WHERE run_id = ? AND seq > ?) "
    "ON CONFLICT (run_id, seq, format) DO NOTHING"
)
_DROP: Final = "DELETE FROM record_text WHERE run_id = ? AND seq = ? AND format = ?"


def load(cur: Cursor, run_id: str, last: Last, format: int) -> tuple[bytes | None, bool]:
    """The stored text (UTF-8) for the run as of ``last``, or None; True when a stored row was
    unusable (another digest, a blob that does not inflate to its size): its save replaces it."""
    seq, digest, _ = last
    rows = cur.execute(_LOAD, (run_id, seq, format)).fetchall()
    if not rows:
        return None, False
    stored_digest, size, blob = rows[0]
    if stored_digest != digest:
        _log.warning("record_text_not_used", run_id=run_id, seq=seq, why="the log's digest differs")
        return None, True
    try:  # told the size, zlib inflates into one buffer: 8.5 ms instead of 20 for 12 MB
        data = zlib.decompress(blob, bufsize=max(int(size), 1))
        if len(data) != size:
            raise zlib.error(f"{len(data)} bytes inflated, {size} stored")
        return data, False
    except zlib.error as e:
        _log.warning("record_text_not_used", run_id=run_id, seq=seq, why=str(e))
        return None, True


def save(log: EventLog, run_id: str, last: Last, format: int, data: bytes, replace: bool) -> None:
    """Store ``data`` (the document's UTF-8) in its own transaction if the log's row ``last``
    is still the run's last with its digest (else nothing is written). Any refusal (a role
    without the privilege, a lock held too long) leaves the read as it is: derived data."""
    if log.read_only:
        return
    seq, digest, _ = last
    blob = zlib.compress(data, LEVEL)
    try:
        with log.transaction("store a run record text") as cur:
            if replace:
                cur.execute(_DROP, (run_id, seq, format))
            row = (run_id, seq, digest, format, len(data), blob)
            cur.execute(_SAVE, (*row, run_id, seq, digest, run_id, seq))
    except ForklineError as e:
        _log.debug("record_text_not_stored", run_id=run_id, seq=seq, error=str(e))
