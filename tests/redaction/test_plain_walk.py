"""The walk of a policy without path rules (``_plain_map``) answers exactly as the general
walk (``_walk``) does: the same result, or the same refusal at the same place."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.redaction import RedactionPolicy, RedactionRule

from .test_properties import JSON, KEYS, SECRETS

ACTIONS = st.sampled_from(["mask", "hash", "drop"])
RULES = st.one_of(
    st.builds(
        lambda a, k: RedactionRule(action=a, key=k),
        ACTIONS,
        st.sampled_from(["token", "password", "a", "auth"]),
    ),
    st.builds(
        lambda a, p: RedactionRule(action=a, pattern=p),
        ACTIONS,
        st.sampled_from([r"sk_live_\w+", r"AKIA[A-Z0-9]{16}", r"secret", r"^b$", r"Bearer \w+", r"\d{3}"]),
    ),
)
POLICIES = st.builds(
    lambda rules, salt: RedactionPolicy(rules, hash_salt=salt),
    st.lists(RULES, max_size=6),
    st.sampled_from([None, b"pepper"]),
) | st.just(RedactionPolicy.default())
ODD = st.one_of(  # what only the general path handles: subclasses, FileRefs, unhashable leaves
    st.builds(lambda s: type("Text", (str,), {})(s), st.sampled_from(SECRETS)),
    st.builds(lambda r: fe.FileRef(r), st.sampled_from(["s3://b/k", "https://u:pw@host/x"])),
    st.just(float("nan")),
    st.just({1: "int key"}),
)
VALUES = st.recursive(
    JSON | ODD,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(KEYS, children, max_size=4),
    ),
    max_leaves=20,
)


def outcome(policy: RedactionPolicy, value: object, *, plain: bool) -> tuple[str, Any]:
    general = RedactionPolicy(policy.rules, mask=policy.mask, hash_salt=policy.hash_salt)
    general._plain = plain
    try:
        return "value", general.redact(value)
    except fe.InvalidValue as refused:
        return "refused", (refused.path, refused.reason)


@given(POLICIES, VALUES)
@example(  # a pattern rule listed before a key rule wins over it
    RedactionPolicy(
        [RedactionRule(action="hash", pattern="secret"), RedactionRule(action="mask", key="token")]
    ),
    {"token": "secret-42", "a": {"token": {"secret": 1}}},
)
def test_the_plain_walk_is_the_general_walk(policy: RedactionPolicy, value: object) -> None:
    assert outcome(policy, value, plain=True) == outcome(policy, value, plain=False)


def test_the_default_policy_takes_the_plain_walk() -> None:
    assert RedactionPolicy.default()._plain
    assert not RedactionPolicy([RedactionRule(action="mask", path="a.b")])._plain
