"""Redaction at the storage boundary: mask, hash or drop secrets before they are recorded."""

from forkline_es.redaction._defaults import DEFAULT_KEYS, DEFAULT_PATTERNS
from forkline_es.redaction._policy import DEFAULT_MASK, RedactionPolicy, checked_policy
from forkline_es.redaction._rules import Action, RedactionRule

__all__ = [
    "DEFAULT_KEYS",
    "DEFAULT_MASK",
    "DEFAULT_PATTERNS",
    "Action",
    "RedactionPolicy",
    "RedactionRule",
    "checked_policy",
]
