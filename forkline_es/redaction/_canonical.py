"""Canonical JSON and digests for the ``hash`` action.

The bytes follow decisions.md (Canonical JSON Value Serialization): UTF-8, sorted keys, no
whitespace, exact integers, shortest round-trip floats, NaN and infinities refused. Sorting the
keys is what makes a digest independent of the order a map was built in.

TODO(values/): once ``forkline_es.values`` exposes the project's one canonical encoder, hash
with it and delete this module.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math

from forkline_es.errors import InvalidValue
from forkline_es.redaction._paths import child_path

__all__ = ["canonical_json", "digest"]


def _check(value: object, path: str) -> None:
    """Refuse anything canonical JSON cannot represent, naming where it is."""
    if value is None or isinstance(value, bool | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidValue(
                f"cannot hash the non-finite float {value!r}: NaN and the infinities are not "
                "values of the domain",
                path,
            )
        return
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            raise InvalidValue(
                "cannot hash a string with a lone surrogate: it has no UTF-8 encoding", path
            ) from None
        return
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check(item, child_path(path, index))
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidValue(
                    f"cannot hash a map with the non-string key {key!r}: JSON keys are strings",
                    path,
                )
            _check(key, path)
            _check(item, child_path(path, key))
        return
    raise InvalidValue(
        f"cannot hash a {type(value).__name__}: only JSON values (null, bool, int, float, str, "
        "list, map) have a canonical form; use a mask or drop rule for this location",
        path,
    )


def canonical_json(value: object, path: str = "$") -> bytes:
    """The canonical JSON bytes of a plain JSON value; ``path`` locates errors."""
    _check(value, path)
    text = json.dumps(
        value, ensure_ascii=False, separators=(",", ":"), sort_keys=True, allow_nan=False
    )
    return text.encode("utf-8")


def digest(value: object, salt: bytes | None, path: str = "$") -> str:
    """``sha256:<hex>`` of the canonical bytes, or ``hmac-sha256:<hex>`` keyed by ``salt``.

    The salted form has its own prefix so that no reader mistakes it for a plain content digest
    that anyone could recompute.
    """
    data = canonical_json(value, path)
    if salt is None:
        return "sha256:" + hashlib.sha256(data).hexdigest()
    return "hmac-sha256:" + hmac.new(salt, data, hashlib.sha256).hexdigest()
