"""Properties over nested JSON values and generated policies."""

from __future__ import annotations

import random
import re
from collections.abc import Iterator

from hypothesis import given, settings
from hypothesis import strategies as st

from forkline_es.redaction import DEFAULT_PATTERNS, RedactionPolicy, RedactionRule

from .guarantees import redacted_keeping_guarantees

DEFAULT = RedactionPolicy.default()

KEYS = st.one_of(
    st.sampled_from(
        [
            "token",
            "api_key",
            "password",
            "passwordHash",
            "apiKey",
            "max_tokens",
            "author",
            "a",
            "b",
            "headers",
            "x-auth",
            "sk_live_" + "a1" * 8,  # secrets used as keys
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
            "AKIAIOSFODNN7EXAMPLE",
        ]
    ),
    st.text(max_size=8),
)
SECRETS = [
    "Bearer 9f8a7b6c5d4e3f2a1b0c",
    "AKIAIOSFODNN7EXAMPLE",
    "eyJhbGciOi.eyJzdWIiOi.sig",
    "-----BEGIN PRIVATE KEY-----",
    "[REDACTED]",
    "sha256:" + "0" * 64,
    "secret-42",
    "sk_live_" + "a1" * 8,
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
]
STRINGS = st.one_of(st.sampled_from(SECRETS), st.text(max_size=12))
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    STRINGS,
)
JSON = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(KEYS, children, max_size=4),
    ),
    max_leaves=20,
)

RULES = (
    st.builds(
        RedactionRule,
        action=st.sampled_from(["mask", "hash", "drop"]),
        key=st.sampled_from(["token", "api_key", "a", "headers"]),
    )
    | st.builds(
        RedactionRule,
        action=st.sampled_from(["mask", "hash", "drop"]),
        path=st.sampled_from(["a", "a.*", "*.b", "headers.token", "*", "0.*", "*.*.a"]),
    )
    | st.builds(
        RedactionRule,
        action=st.sampled_from(["mask", "hash", "drop"]),
        pattern=st.sampled_from([r"secret", r"^\[", r"\d{3}", "sha256", "AKIA"]),
    )
)
POLICIES = st.one_of(
    st.just(DEFAULT),
    st.builds(
        RedactionPolicy,
        st.lists(RULES, max_size=5),
        mask=st.sampled_from(["[REDACTED]", "", "secret", "***"]),
        hash_salt=st.sampled_from([None, b"salt"]),
    ),
)


def strings_in(value: object) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_in(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from strings_in(item)


@settings(max_examples=300, deadline=None)
@given(policy=POLICIES, value=JSON)
def test_redaction_is_idempotent_and_leaves_the_input_alone(policy: RedactionPolicy, value: object) -> None:
    redacted_keeping_guarantees(policy, value)


@settings(max_examples=300, deadline=None)
@given(policy=POLICIES, value=JSON)
def test_sensitive_exactly_when_redaction_changes_something(policy: RedactionPolicy, value: object) -> None:
    paths = policy.sensitive_paths(value)
    assert (policy.redact(value) != value) == bool(paths)
    assert policy.is_sensitive(value) == bool(paths)
    assert len(set(paths)) == len(paths)


@settings(max_examples=300, deadline=None)
@given(value=JSON)
def test_default_output_holds_no_string_a_default_pattern_matches(value: object) -> None:
    patterns = [re.compile(p) for p in DEFAULT_PATTERNS]
    for text in strings_in(DEFAULT.redact(value)):
        assert not any(p.search(text) for p in patterns), text


@settings(max_examples=100, deadline=None)
@given(value=st.dictionaries(st.text(max_size=5), JSON, max_size=6), seed=st.integers())
def test_hash_does_not_depend_on_insertion_order(value: dict[str, object], seed: int) -> None:
    def shuffled(v: object, rng: random.Random) -> object:
        if isinstance(v, dict):
            items = list(v.items())
            rng.shuffle(items)
            return {k: shuffled(x, rng) for k, x in items}
        if isinstance(v, list | tuple):
            return type(v)(shuffled(x, rng) for x in v)
        return v

    p = RedactionPolicy([RedactionRule(action="hash", key="v")])
    assert p.redact({"v": value}) == p.redact({"v": shuffled(value, random.Random(seed))})
