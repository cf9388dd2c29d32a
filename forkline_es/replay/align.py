"""Pairing two runs' active entries by key, with a bounded realignment window.

The rule (docs/replay-diff.md): walk both sequences; equal keys pair up. At the first
pair of unequal keys, look up to ``window`` entries ahead on each side for the other
side's current key:

- found only ahead in A at distance ``d``: the ``d`` entries of A before it are *missing*
  from B;
- found only ahead in B at distance ``d``: the ``d`` entries of B before it are *extra*;
- found on both sides: the smaller skip wins, a tie skips A (missing);
- found on neither side: a substitution, A's entry missing and B's entry extra.

Then the walk continues, so one inserted step costs one skip, never a cascade. Keys are
unique per run (``entries.keys_of``), so each look-ahead is one dictionary lookup and the
whole alignment is linear in the number of entries.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal

from forkline_es.replay.entries import Key

__all__ = ["DEFAULT_WINDOW", "Op", "align"]

#: Entries looked ahead on each side before a mismatch is declared a substitution.
DEFAULT_WINDOW: Final = 64

#: ("match", i, j), ("missing", i, None) or ("extra", None, j)
Op = tuple[Literal["match", "missing", "extra"], int | None, int | None]


def _ahead(pos: dict[Key, int], key: Key, start: int, window: int) -> int | None:
    at = pos.get(key)
    if at is None or at <= start or at - start > window:
        return None
    return at - start


def align(keys_a: Sequence[Key], keys_b: Sequence[Key], window: int = DEFAULT_WINDOW) -> list[Op]:
    """The deterministic pairing of two key sequences (see the module docstring)."""
    pos_a = {k: i for i, k in enumerate(keys_a)}
    pos_b = {k: j for j, k in enumerate(keys_b)}
    ops: list[Op] = []
    i = j = 0
    na, nb = len(keys_a), len(keys_b)
    while i < na and j < nb:
        if keys_a[i] == keys_b[j]:
            ops.append(("match", i, j))
            i += 1
            j += 1
            continue
        skip_a = _ahead(pos_a, keys_b[j], i, window)
        skip_b = _ahead(pos_b, keys_a[i], j, window)
        if skip_a is None and skip_b is None:
            ops.append(("missing", i, None))
            ops.append(("extra", None, j))
            i += 1
            j += 1
        elif skip_b is None or (skip_a is not None and skip_a <= skip_b):
            assert skip_a is not None
            ops.extend(("missing", k, None) for k in range(i, i + skip_a))
            i += skip_a
        else:
            ops.extend(("extra", None, k) for k in range(j, j + skip_b))
            j += skip_b
    ops.extend(("missing", k, None) for k in range(i, na))
    ops.extend(("extra", None, k) for k in range(j, nb))
    return ops
