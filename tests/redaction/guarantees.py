"""The guarantees every policy keeps on every value, checked by the property tests."""

from __future__ import annotations

import copy

from forkline_es.redaction import RedactionPolicy


def redacted_keeping_guarantees(policy: RedactionPolicy, value: object) -> object:
    """``policy.redact(value)``, asserting the input is untouched, redacting again changes
    nothing, and the output holds nothing the policy finds sensitive."""
    before = copy.deepcopy(value)
    once = policy.redact(value)
    assert value == before
    assert policy.redact(once) == once
    assert policy.sensitive_paths(once) == []
    assert not policy.is_sensitive(once)
    return once
