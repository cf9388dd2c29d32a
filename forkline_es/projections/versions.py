"""Which projector versions may fold into a store: the decisions of a rolling upgrade.

Every handle that writes folds its appends with its own projector code, so two versions
must never fold into one store at once. The stored versions (the ``projector`` table) say
which code built the tables: a handle whose versions are newer refolds them (unless a
handle of other versions still folds, which the backend's ``ProjectorFence`` knows); one
whose versions are older is refused, at open or at its next fold, rather than folding
with old code or refolding the store back. The backend makes these checks hold across
processes and hosts; this module only decides.
"""

from __future__ import annotations

import zlib
from collections.abc import Mapping
from typing import NoReturn

from forkline_es.errors import StoreError
from forkline_es.log.backend import Cursor

__all__ = ["key_of", "refuse_changed", "refuse_older", "refuse_others", "stored_versions"]


def key_of(versions: Mapping[str, int]) -> int:
    """A non-negative int4 naming the whole version set (the same in every process)."""
    text = ",".join(f"{name}={version}" for name, version in sorted(versions.items()))
    return zlib.crc32(text.encode()) & 0x7FFFFFFF


def stored_versions(cur: Cursor) -> dict[str, int]:
    return {str(n): int(v) for n, v in cur.execute("SELECT name, version FROM projector").fetchall()}


def _shown(versions: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {version}" for name, version in sorted(versions.items())) or "none"


def refuse_older(stored: Mapping[str, int], ours: Mapping[str, int]) -> None:
    """Refuse a refold that would take a projector back to an older version."""
    newer = {n: v for n, v in stored.items() if n in ours and v > ours[n]}
    if newer:
        raise StoreError(
            f"the projections were built by a newer forkline_es (projector versions {_shown(stored)}); "
            f"this process folds {_shown(ours)} and will not take them back: upgrade it"
        )


def refuse_others(stored: Mapping[str, int], ours: Mapping[str, int]) -> NoReturn:
    raise StoreError(
        f"cannot refold the projections to versions {_shown(ours)}: a process of another "
        f"forkline_es (projector versions {_shown(stored)}) still has the store open and folds "
        "into them; stop the processes of the old version, then open the store again"
    )


def refuse_changed(stored: Mapping[str, int], ours: Mapping[str, int]) -> NoReturn:
    raise StoreError(
        f"the projections were rebuilt by a forkline_es with projector versions {_shown(stored)}; "
        f"this process folds {_shown(ours)}: restart it on the same version (nothing was written)"
    )
