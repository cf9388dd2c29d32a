"""Hand-built log rows for tests that exercise the log below the Store API."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from forkline_es.log.events import StepBegun, encode_body, kind_of
from forkline_es.log.rows import NewRow, row_digest

AT = "2026-01-01T00:00:00Z"


#: ``new_row``'s default ``prev``: the digest ``chain`` gives the run's row at seq - 1, so
#: that the row follows the rows ``chain`` appended before it, as the log requires.
FOLLOWS: Final = "follows the chain"


def new_row(
    run_id: str,
    seq: int,
    payloads: Sequence[tuple[str, bytes]] = (),
    prev: str | None = FOLLOWS,
) -> NewRow:
    """A chained step-begun row of ``run_id`` at ``seq`` (its seq names its path)."""
    if prev == FOLLOWS:
        prev = _chain_digest(run_id, seq - 1)
    event = StepBegun(path=f"s{seq}")
    body = encode_body(event)
    kind = kind_of(event)
    key = f"begin:0:s{seq}"
    digest = row_digest(run_id, seq, seq, 0, kind, AT, key, prev, body)
    return NewRow(run_id, seq, seq, 0, kind, AT, key, body, digest, prev, tuple(payloads))


def _chain_digest(run_id: str, seq: int) -> str | None:
    """The digest of ``chain(run_id, seq)``'s last row (None before seq 1)."""
    return chain(run_id, seq)[-1].digest if seq >= 1 else None


def chain(run_id: str, n: int, first: int = 1) -> list[NewRow]:
    """``n`` rows of one run with consecutive seqs and a valid hash chain, following the
    rows a ``chain`` of the same run gave before ``first``."""
    out: list[NewRow] = []
    prev = _chain_digest(run_id, first - 1)
    for seq in range(first, first + n):
        row = new_row(run_id, seq, prev=prev)
        out.append(row)
        prev = row.digest
    return out
