"""The guarantees every policy keeps on every value, checked by the property tests."""

from __future__ import annotations

import copy
from collections.abc import Iterator

from forkline_es.redaction import RedactionPolicy


def redacted_keeping_guarantees(policy: RedactionPolicy, value: object) -> object:
    """``policy.redact(value)``, asserting the input is untouched, redacting again changes
    nothing, and the output holds nothing the policy finds sensitive, map keys included."""
    before = copy.deepcopy(value)
    once = policy.redact(value)
    assert value == before
    assert policy.redact(once) == once
    assert policy.sensitive_paths(once) == []
    assert not policy.is_sensitive(once)
    for key in keys_in(once):
        # A payload that is a map of only this key and an already-redacted value is
        # sensitive only when a pattern rule matches the key itself.
        assert not policy.is_sensitive({key: policy.mask}), key
    return once


def keys_in(value: object) -> Iterator[object]:
    """Every map key anywhere in ``value``."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from keys_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from keys_in(item)
