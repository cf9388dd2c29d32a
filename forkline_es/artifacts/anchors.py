"""External anchors: each retained run's last chain position and digest, to keep elsewhere.

The hash chain proves that a run's rows agree with each other; anyone who can write the
file can edit a row and recompute every digest after it, and the chain agrees again. A
digest kept outside the file (a signed export, another system) pins the row it names and,
through ``prev``, every row before it: ``verify`` with the anchors (``anchor-mismatch``)
sees any rewrite at or before an anchored seq. docs/verify.md says what that proves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, cast

import msgspec

from forkline_es.errors import InvalidRequest, shown
from forkline_es.log.backend import Cursor, Dialect
from forkline_es.values import is_digest, is_text

__all__ = ["Anchor", "checked_anchors", "parse_anchors", "read_anchors"]

#: One run's anchor: the seq of its last row when the anchors were taken, and that row's digest.
Anchor = tuple[int, str]

_SHAPE: Final = (
    'a JSON object of run id -> {"seq": int >= 1, "digest": "sha256:<64 hex>"}, '
    "as `forkline-es anchors` prints and store.anchors() returns"
)


def read_anchors(cur: Cursor, dialect: Dialect) -> dict[str, dict[str, int | str]]:
    """``{run_id: {"seq": int, "digest": str}}`` of every run with rows, in ``cur``'s snapshot."""
    return {
        str(run_id): {"seq": int(seq), "digest": str(digest)}
        for run_id, seq, digest in cur.execute(dialect.last_rows)
    }


def checked_anchors(anchors: object) -> dict[str, Anchor]:
    """``anchors`` as run id -> (seq, digest), or ``invalid-request`` naming what is wrong."""
    if not isinstance(anchors, Mapping):
        raise InvalidRequest(f"anchors must be {_SHAPE}, not {type(anchors).__name__}")
    out: dict[str, Anchor] = {}
    for run_id, anchor in anchors.items():
        if not is_text(run_id) or "\x00" in run_id:
            raise InvalidRequest(f"anchors: {shown(run_id)} is not a run id; anchors must be {_SHAPE}")
        if not isinstance(anchor, Mapping) or set(anchor) != {"seq", "digest"}:
            raise InvalidRequest(
                f"anchors: run {shown(run_id)} has {shown(anchor)}; each run's anchor must be exactly "
                '{"seq": int >= 1, "digest": "sha256:<64 hex>"}'
            )
        seq, digest = anchor["seq"], anchor["digest"]
        if type(seq) is not int or seq < 1:
            raise InvalidRequest(
                f"anchors: run {shown(run_id)} has seq {shown(seq)}; a seq is an integer >= 1"
            )
        if not is_digest(digest):
            raise InvalidRequest(
                f"anchors: run {shown(run_id)} has digest {shown(digest)}; "
                "a digest is sha256: and 64 lower-case hex digits"
            )
        out[run_id] = (seq, digest)
    return out


def parse_anchors(data: bytes, source: str) -> dict[str, dict[str, Any]]:
    """Anchors from the JSON text ``data`` (read from ``source``), as ``store.anchors()``
    returns them; ``invalid-request`` when it is not JSON or malformed (``checked_anchors``)."""
    try:
        decoded = msgspec.json.decode(data)
    except (msgspec.DecodeError, RecursionError) as e:
        raise InvalidRequest(f"{source} is not anchors JSON ({e}); it must be {_SHAPE}") from None
    checked_anchors(decoded)
    return cast(dict[str, dict[str, Any]], decoded)
