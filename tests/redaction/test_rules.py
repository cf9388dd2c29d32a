"""Rule construction, matchers, first-match-wins ordering and the three actions."""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac

import msgspec
import pytest

from forkline_es.errors import InvalidRequest, InvalidValue
from forkline_es.redaction import DEFAULT_MASK, RedactionPolicy, RedactionRule


def policy(*rules: RedactionRule, **options: object) -> RedactionPolicy:
    return RedactionPolicy(rules, **options)  # type: ignore[arg-type]


# -- construction ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kwargs",
    [
        {"action": "erase", "key": "token"},
        {"action": "mask"},
        {"action": "mask", "key": "token", "path": "a.b"},
        {"action": "mask", "key": "token", "pattern": "x"},
        {"action": "mask", "key": ""},
        {"action": "mask", "key": "__"},
        {"action": "mask", "key": "123"},
        {"action": "mask", "path": ""},
        {"action": "mask", "path": "a..b"},
        {"action": "mask", "path": ".a"},
        {"action": "mask", "pattern": "("},
        {"action": "mask", "pattern": ""},
        {"action": "mask", "pattern": "a*"},
    ],
)
def test_bad_rules_are_refused_at_construction(kwargs: dict[str, str]) -> None:
    with pytest.raises(InvalidRequest) as info:
        RedactionRule(**kwargs)  # type: ignore[arg-type]
    assert info.value.code == "invalid-request"


def test_bad_policy_arguments_are_refused() -> None:
    rule = RedactionRule(action="mask", key="token")
    with pytest.raises(InvalidRequest):
        RedactionPolicy(rule)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest):
        RedactionPolicy([rule, "password"])  # type: ignore[list-item]
    with pytest.raises(InvalidRequest):
        RedactionPolicy([rule], mask=None)  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest):
        RedactionPolicy([rule], hash_salt=b"")


def test_rules_load_from_configuration() -> None:
    config = [{"action": "hash", "key": "email"}, {"action": "drop", "path": "debug"}]
    rules = msgspec.convert(config, list[RedactionRule])
    assert rules == [
        RedactionRule(action="hash", key="email"),
        RedactionRule(action="drop", path="debug"),
    ]
    with pytest.raises(msgspec.ValidationError):
        msgspec.convert([{"action": "mask"}], list[RedactionRule])


# -- matchers ----------------------------------------------------------------------------------


def test_key_rule_matches_trailing_whole_words_in_any_case() -> None:
    p = policy(RedactionRule(action="mask", key="user_email"))
    payload = {"userEmail": 1, "primary-User-Email": 2, "email": 3, "user_email_verified": 4}
    assert p.redact(payload) == {
        "userEmail": DEFAULT_MASK,
        "primary-User-Email": DEFAULT_MASK,
        "email": 3,
        "user_email_verified": 4,
    }


def test_key_rules_ignore_list_positions_and_non_string_keys() -> None:
    p = policy(RedactionRule(action="mask", key="token"))
    assert p.redact({1: "a", "l": ["token"]}) == {1: "a", "l": ["token"]}


def test_path_rule_matches_one_exact_location() -> None:
    p = policy(RedactionRule(action="mask", path="headers.authorization"))
    payload = {
        "headers": {"authorization": "a", "Authorization": "b"},
        "authorization": "c",
        "outer": {"headers": {"authorization": "d"}},
    }
    assert p.redact(payload) == {
        "headers": {"authorization": DEFAULT_MASK, "Authorization": "b"},
        "authorization": "c",
        "outer": {"headers": {"authorization": "d"}},
    }
    assert p.sensitive_paths(payload) == ["$.headers.authorization"]


def test_path_wildcards_match_map_keys_and_list_indices() -> None:
    p = policy(RedactionRule(action="mask", path="calls.*.args.*"))
    payload = {"calls": [{"args": {"q": 1, "k": 2}, "name": "s"}, {"args": ["x", "y"]}]}
    assert p.redact(payload) == {
        "calls": [
            {"args": {"q": DEFAULT_MASK, "k": DEFAULT_MASK}, "name": "s"},
            {"args": [DEFAULT_MASK, DEFAULT_MASK]},
        ]
    }
    assert p.sensitive_paths(payload) == [
        "$.calls[0].args.q",
        "$.calls[0].args.k",
        "$.calls[1].args[0]",
        "$.calls[1].args[1]",
    ]


def test_path_number_matches_a_list_index_or_a_map_key() -> None:
    p = policy(RedactionRule(action="mask", path="rows.1"))
    assert p.redact({"rows": ["a", "b"]}) == {"rows": ["a", DEFAULT_MASK]}
    assert p.redact({"rows": {"1": "a", "2": "b"}}) == {"rows": {"1": DEFAULT_MASK, "2": "b"}}


def test_pattern_rule_replaces_the_whole_string_and_only_strings() -> None:
    p = policy(RedactionRule(action="mask", pattern=r"\d{3}-\d{4}"))
    payload = {"note": "call 555-1234 now", "n": 5551234, "k": ["555-1234"]}
    assert p.redact(payload) == {"note": DEFAULT_MASK, "n": 5551234, "k": [DEFAULT_MASK]}


def test_paths_of_odd_keys_are_bracketed() -> None:
    p = policy(RedactionRule(action="mask", key="token"))
    assert p.sensitive_paths({"a b": {"x-token": 1}, "ok": [{"token": 2}]}) == [
        '$["a b"]["x-token"]',
        "$.ok[0].token",
    ]


# -- ordering ----------------------------------------------------------------------------------


def test_first_matching_rule_wins() -> None:
    payload = {"token": "t", "user": {"token": "u"}}
    hash_first = policy(
        RedactionRule(action="hash", path="user.token"), RedactionRule(action="drop", key="token")
    )
    assert hash_first.redact(payload) == {"user": {"token": _sha256('"u"')}}
    drop_first = policy(
        RedactionRule(action="drop", key="token"), RedactionRule(action="hash", path="user.token")
    )
    assert drop_first.redact(payload) == {"user": {}}


def test_an_earlier_key_rule_wins_over_a_later_pattern_rule() -> None:
    p = policy(RedactionRule(action="hash", key="token"), RedactionRule(action="mask", pattern="secret"))
    assert p.redact({"token": "secret-123", "note": "secret"}) == {
        "token": _sha256('"secret-123"'),
        "note": DEFAULT_MASK,
    }


def test_an_earlier_pattern_rule_wins_over_a_later_key_rule_and_the_result_is_stable() -> None:
    p = policy(RedactionRule(action="mask", pattern="^secret"), RedactionRule(action="drop", key="x"))
    once = p.redact({"x": "secret!", "y": "secret?"})
    assert once == {"x": DEFAULT_MASK, "y": DEFAULT_MASK}
    assert p.redact(once) == once


# -- actions -----------------------------------------------------------------------------------


def _sha256(canonical: str) -> str:
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def test_hash_is_sha256_of_canonical_json() -> None:
    p = policy(RedactionRule(action="hash", key="v"))
    assert p.redact({"v": "é"}) == {"v": _sha256('"é"')}
    assert p.redact({"v": 1}) == {"v": _sha256("1")}
    assert p.redact({"v": 1.0}) == {"v": _sha256("1.0")}
    assert p.redact({"v": 2**70}) == {"v": _sha256(str(2**70))}
    assert p.redact({"v": {"b": [1, None, True], "a": "x"}}) == {"v": _sha256('{"a":"x","b":[1,null,true]}')}
    assert p.redact({"v": ("x", 2)}) == p.redact({"v": ["x", 2]})


def test_hash_does_not_depend_on_map_order() -> None:
    p = policy(RedactionRule(action="hash", key="v"))
    a = {"v": {"x": 1, "y": {"p": [1, 2], "q": None}}}
    b = {"v": {"y": {"q": None, "p": [1, 2]}, "x": 1}}
    assert p.redact(a) == p.redact(b)


def test_salted_hash_is_an_hmac_with_its_own_prefix() -> None:
    p = policy(RedactionRule(action="hash", key="v"), hash_salt=b"pepper")
    expected = "hmac-sha256:" + hmac.new(b"pepper", b'"x"', hashlib.sha256).hexdigest()
    assert p.redact({"v": "x"}) == {"v": expected}
    assert p.redact(p.redact({"v": "x"})) == {"v": expected}


def test_hash_keeps_its_own_output_so_redaction_is_idempotent() -> None:
    p = policy(RedactionRule(action="hash", key="v"))
    once = p.redact({"v": "x"})
    assert p.redact(once) == once
    assert p.sensitive_paths(once) == []


@pytest.mark.parametrize(
    ("value", "where"),
    [
        (float("nan"), "$<key 0>"),
        (float("inf"), "$<key 0>"),
        ({"a": [1, float("nan")]}, "$<key 0><key 0>[1]"),
        (dt.datetime(2024, 1, 1, tzinfo=dt.UTC), "$<key 0>"),
        ({1: "a"}, "$<key 0><key 0>"),
        ("\ud800", "$<key 0>"),
    ],
)
def test_hash_refuses_values_without_canonical_json(value: object, where: str) -> None:
    p = policy(RedactionRule(action="hash", key="v"))
    with pytest.raises(InvalidValue) as info:
        p.redact({"v": value})
    assert info.value.path == where


def test_mask_and_drop_accept_any_object() -> None:
    when = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    p = policy(RedactionRule(action="mask", key="a"), RedactionRule(action="drop", key="b"))
    assert p.redact({"a": when, "b": when, "c": when}) == {"a": DEFAULT_MASK, "c": when}


def test_drop_removes_map_entries_and_masks_list_elements_to_keep_positions() -> None:
    p = policy(RedactionRule(action="drop", pattern="^secret"))
    payload = {"keep": "x", "gone": "secret 1", "list": ["a", "secret 2", "b"]}
    assert p.redact(payload) == {"keep": "x", "list": ["a", DEFAULT_MASK, "b"]}
    assert p.redact("secret root") == DEFAULT_MASK


def test_redaction_outputs_are_never_redacted_again() -> None:
    p = policy(RedactionRule(action="drop", key="token"), mask="<gone>")
    assert p.redact({"token": "<gone>", "other_token": "x"}) == {"token": "<gone>"}


def test_containers_are_rebuilt_and_types_kept() -> None:
    inner = {"n": 1}
    payload = {"l": [inner], "t": (inner, "x")}
    out = RedactionPolicy.default().redact(payload)
    assert out == payload
    assert out is not payload
    assert out["l"] is not payload["l"]
    assert out["l"][0] is not inner
    assert isinstance(out["t"], tuple)


def test_other_objects_are_leaves_returned_as_they_are() -> None:
    when = dt.datetime(2024, 1, 1, tzinfo=dt.UTC)
    assert RedactionPolicy.default().redact({"at": when})["at"] is when
