"""Forkline's redaction API on the engine's policy.

Expectations are Forkline 0.5.0's behaviour (observed by running it) except where
docs/forkline.md says otherwise: hash digests are ``sha256:`` (Forkline ``hash:``, same hex
for plain JSON), a regex match replaces the whole string, and the default policy matches
whole words.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.forkline import (
    RedactionAction,
    RedactionConfig,
    RedactionPolicy,
    RedactionRule,
    RegexRedactionRule,
    RunRecorder,
    create_default_policy,
    load_redaction_config,
)

MASK, HASH, DROP = RedactionAction.MASK, RedactionAction.HASH, RedactionAction.DROP


def test_actions_are_forklines_string_enum() -> None:
    assert [a.value for a in RedactionAction] == ["mask", "hash", "drop"]
    assert RedactionAction.MASK == "mask"
    assert RedactionRule("drop", key_pattern="x").action is DROP


def test_key_patterns_are_case_insensitive_substrings_and_the_first_rule_wins() -> None:
    policy = RedactionPolicy(
        [RedactionRule(MASK, key_pattern="KEY"), RedactionRule(DROP, key_pattern="debug")]
    )
    payload = {"monkey": 1, "Api_Key": "s", "debug_info": "v", "keyed_debug": 2, "note": "n"}
    assert policy.redact("input", payload) == {
        "monkey": "[REDACTED]",
        "Api_Key": "[REDACTED]",
        "keyed_debug": "[REDACTED]",
        "note": "n",
    }


def test_path_patterns_match_dotted_paths_without_list_positions() -> None:
    policy = RedactionPolicy([RedactionRule(MASK, path_pattern="items.token")])
    payload = {"items": [{"token": "a", "x": 1}, {"token": "b"}], "token": "top"}
    assert policy.redact("e", payload) == {
        "items": [{"token": "[REDACTED]", "x": 1}, {"token": "[REDACTED]"}],
        "token": "top",
    }


def test_with_both_patterns_both_must_match() -> None:
    policy = RedactionPolicy([RedactionRule(MASK, key_pattern="authorization", path_pattern="headers")])
    payload = {"headers": {"Authorization": "x"}, "authorization": "kept"}
    assert policy.redact("e", payload) == {
        "headers": {"Authorization": "[REDACTED]"},
        "authorization": "kept",
    }


def test_a_rule_masks_a_whole_container_with_its_own_replacement() -> None:
    policy = RedactionPolicy([RedactionRule(MASK, key_pattern="secret", replacement="***")])
    assert policy.redact("e", {"secrets": {"a": [1, 2]}, "n": 1}) == {"secrets": "***", "n": 1}


def test_hash_gives_forklines_hex_as_a_sha256_digest() -> None:
    policy = RedactionPolicy([RedactionRule(HASH, key_pattern="email")])
    first = policy.redact("e", {"email": "user@example.com", "m": 1})
    second = policy.redact("e", {"email": "user@example.com", "m": 2})
    # Forkline 0.5.0: "hash:9907cf59...b4df" for the same value.
    assert first["email"] == "sha256:9907cf595181af63b69142a04d288800a411c238531e0985a7b9738820d1b4df"
    assert first["email"] == second["email"]


def test_a_regex_match_replaces_the_whole_string() -> None:
    jwt = RegexRedactionRule.from_config("jwt", r"eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+", "[JWT]")
    policy = RedactionPolicy([], [jwt])
    assert policy.redact("e", {"note": "tok eyJa.b.c end", "ok": "plain", "l": ["eyJx.y.z"]}) == {
        "note": "[JWT]",
        "ok": "plain",
        "l": ["[JWT]"],
    }
    assert policy.regex_rules == [jwt]


def test_a_compiled_pattern_keeps_its_flags() -> None:
    rule = RegexRedactionRule(name="b", pattern=re.compile(r"bearer \w+", re.IGNORECASE), replacement="[B]")
    assert RedactionPolicy([], [rule]).redact("e", {"h": "BEARER abc"}) == {"h": "[B]"}


def test_redact_never_mutates_and_takes_one_or_two_arguments() -> None:
    policy = RedactionPolicy([RedactionRule(MASK, key_pattern="password")])
    payload = {"db": {"password": "p"}, "rows": [1]}
    before = copy.deepcopy(payload)
    assert (
        policy.redact("input", payload)
        == policy.redact(payload)
        == {"db": {"password": "[REDACTED]"}, "rows": [1]}
    )
    assert payload == before


def test_the_default_policy_masks_secrets_by_whole_words_and_value_shapes() -> None:
    policy = create_default_policy()
    payload = {
        "api_key": "sk-secret123456789",
        "headers": {"Authorization": "Bearer token123", "Content-Type": "application/json"},
        "author": "Ada",
        "max_tokens": 100,
        "note": "Bearer tok3n-abc123",
    }
    assert policy.redact("tool_call", payload) == {
        "api_key": "[REDACTED]",
        "headers": {"Authorization": "[REDACTED]", "Content-Type": "application/json"},
        "author": "Ada",  # Forkline 0.5.0 masks these two (substring "auth", "token")
        "max_tokens": 100,
        "note": "[REDACTED]",
    }
    assert policy.rules == [] and policy.regex_rules == []


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((MASK,), {}, "at least one pattern"),
        (("erase",), {"key_pattern": "x"}, "unknown"),
        ((MASK,), {"key_pattern": 3}, "key_pattern must be a string"),
        ((MASK,), {"key_pattern": "x", "replacement": None}, "replacement"),
    ],
)
def test_a_bad_rule_is_a_coded_value_error(
    args: tuple[Any, ...], kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(fe.InvalidRequest, match=message) as caught:
        RedactionRule(*args, **kwargs)
    assert isinstance(caught.value, ValueError)


def test_a_policy_takes_only_forkline_rules() -> None:
    with pytest.raises(fe.InvalidRequest, match="rules\\[0\\]"):
        RedactionPolicy([fe.RedactionRule(action="mask", key="x")])  # type: ignore[list-item]
    with pytest.raises(fe.InvalidRequest, match="regex_rules\\[0\\]"):
        RedactionPolicy([], [RedactionRule(MASK, key_pattern="x")])  # type: ignore[list-item]


def test_a_config_file_becomes_a_policy(tmp_path: Path) -> None:
    path = tmp_path / "redact.json"
    path.write_text(
        json.dumps(
            {
                "fields": {
                    "redact_keys": ["ssn"],
                    "redact_paths": ["user.phone"],
                    "redact_regex": [{"name": "card", "pattern": "\\d{4}-\\d{4}"}],
                }
            }
        )
    )
    config = load_redaction_config(path)
    assert config == RedactionConfig(["ssn"], ["user.phone"], [{"name": "card", "pattern": "\\d{4}-\\d{4}"}])
    policy = config.to_policy()
    assert policy.redact("e", {"ssn_last": 1, "user": {"phone": "p"}, "c": "pay 1234-5678"}) == {
        "ssn_last": "[REDACTED]",
        "user": {"phone": "[REDACTED]"},
        "c": "[REDACTED:card]",
    }


def test_a_bad_config_file_is_refused_when_loaded(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        load_redaction_config(tmp_path / "none.json")
    wrong = tmp_path / "r.toml"
    wrong.write_text("")
    with pytest.raises(ValueError, match="Unsupported"):
        load_redaction_config(wrong)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"redact_regex": [{"name": "x", "pattern": "("}]}))
    with pytest.raises(fe.InvalidRequest, match="does not compile"):
        load_redaction_config(bad)


def test_a_forkline_policy_is_an_engine_policy_that_never_lets_a_secret_reach_the_disk(
    tmp_path: Path,
) -> None:
    policy = RedactionPolicy([RedactionRule(MASK, key_pattern="pin")])
    db = tmp_path / "runs.db"
    with RunRecorder(db, redaction_policy=policy) as recorder:
        run_id = recorder.start_run("x.py")
        recorder.log_event(run_id, "input", {"card_pin": "SECRET-4711", "amount": 3})
        assert recorder.get_events(run_id)[0]["payload"] == {"card_pin": "[REDACTED]", "amount": 3}
    for file in tmp_path.iterdir():
        assert b"SECRET-4711" not in file.read_bytes()
    # The executor API takes it too: a payload it finds sensitive is withheld.
    with fe.Store.open(tmp_path / "exec.db", redaction=policy) as store:
        run = store.start_run(workflow="w", inputs={"pin": 1})
        assert store.get_run_record(run.id)["payloads"]["inputs"]["state"] == "withheld"


keys = st.sampled_from(["password", "user_password", "note", "token", "x", "Key", "item"])
payloads = st.recursive(
    st.none() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(keys, inner, max_size=3),
    max_leaves=12,
)


@given(payloads)
def test_redaction_is_idempotent_and_masks_every_matching_key(payload: Any) -> None:
    policy = RedactionPolicy(
        [RedactionRule(MASK, key_pattern="pass"), RedactionRule(HASH, key_pattern="token")]
    )
    once = policy.redact("e", payload)
    assert policy.redact("e", once) == once

    def check(value: Any) -> None:
        if isinstance(value, dict):
            for k, v in value.items():
                if "pass" in k.lower():
                    assert v == "[REDACTED]"
                elif "token" in k.lower():
                    assert isinstance(v, str) and v.startswith("sha256:")
                else:
                    check(v)
        elif isinstance(value, list):
            for v in value:
                check(v)

    check(once)


def test_regex_replacements_are_fixed_points_without_structural_rules() -> None:
    """A policy of regex rules only takes the engine's plain walk; a replacement that another
    rule's pattern would match is still left alone the second time."""
    policy = RedactionPolicy(
        [],
        [
            RegexRedactionRule.from_config("key", r"sk-\w+", "[KEY removed]"),
            RegexRedactionRule.from_config("word", r"KEY", "[K]"),
        ],
    )
    once = policy.redact("e", {"a": ["sk-abc123"], "b": {"c": "sk-zzz"}})
    assert once == {"a": ["[KEY removed]"], "b": {"c": "[KEY removed]"}}
    assert policy.redact("e", once) == once
