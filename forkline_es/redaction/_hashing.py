"""The ``hash`` action: a digest of the canonical JSON of a value.

The bytes come from ``forkline_es.values.canonical_json`` (the one encoder), whose sorted
keys make a digest independent of the order a map was built in, and which refuses NaN, the
infinities and non-JSON objects instead of hashing a lossy stand-in.
"""

from __future__ import annotations

import hashlib
import hmac
import re

from forkline_es.errors import InvalidValue
from forkline_es.redaction._paths import Located
from forkline_es.values import canonical_json, is_digest, sha256_digest

__all__ = ["hash_value", "is_hash_output"]

_HMAC_DIGEST = re.compile(r"hmac-sha256:[0-9a-f]{64}\Z")


def hash_value(value: object, salt: bytes | None, location: tuple[object, ...]) -> str:
    """``sha256:<hex>``, or ``hmac-sha256:<hex>`` keyed by ``salt``.

    The salted form has its own prefix so that no reader mistakes it for a content digest
    anyone could recompute. A refusal (``Located``) carries the location from the payload
    root, for the policy to render.
    """
    try:
        data = canonical_json(value)
    except InvalidValue as exc:
        raise _located(exc, location) from None
    if salt is None:
        return sha256_digest(data)
    return "hmac-sha256:" + hmac.new(salt, data, hashlib.sha256).hexdigest()


def is_hash_output(text: str, salt: bytes | None) -> bool:
    """Whether ``text`` has the form ``hash_value`` gives with this salt (or without one)."""
    if salt is None:
        return is_digest(text)
    return _HMAC_DIGEST.match(text) is not None


def _located(exc: InvalidValue, location: tuple[object, ...]) -> Located:
    """The same refusal, at ``location`` and then its path inside the hashed value."""
    return Located(
        f"cannot hash this value ({exc.reason}); use a mask or drop rule for this location",
        location,
        exc.path.removeprefix("$"),
    )
