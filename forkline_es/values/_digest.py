"""Content digests: ``sha256:`` followed by 64 lower-case hex digits (decisions.md, Digests)."""

from __future__ import annotations

import hashlib
import re

__all__ = ["is_digest", "sha256_digest"]

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}\Z")


def sha256_digest(data: bytes | bytearray | memoryview) -> str:
    """The one spelling of a digest in forkline_es, so digests compare as plain strings."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def is_digest(s: object) -> bool:
    """True when ``s`` is a digest in the canonical spelling (upper-case hex is not)."""
    return type(s) is str and _DIGEST.match(s) is not None
