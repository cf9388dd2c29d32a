"""Redaction at the storage boundary: no masked secret reaches a byte of the database or WAL."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import forkline_es as fe

# Unique markers: a hit in the file bytes can only come from the value itself.
API_KEY = "sk-live-9f8e7d6c5b4a39281706f5e4"
BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N"
PASSWORD = "correct-horse-battery-staple-4417"
COOKIE = "sessid=cookie-value-6a1b2c3d"
AWS = "AKIAIOSFODNN7EXAMPLE"
SECRETS = (API_KEY, BEARER.split()[1], PASSWORD, COOKIE, AWS)


def _bytes_on_disk(path: Path) -> bytes:
    """The database file and its WAL and shared-memory files, as they are right now."""
    out = b""
    for suffix in ("", "-wal", "-shm", "-journal"):
        f = Path(f"{path}{suffix}")
        if f.exists():
            out += f.read_bytes()
    return out


def _secret_payload() -> dict[str, Any]:
    return {
        "api_key": API_KEY,
        "headers": {"Authorization": BEARER, "Cookie": COOKIE},
        "user": {"password": PASSWORD},
        "note": f"deploy with {AWS} please",
        "prompt": "visible-prompt-marker",
        "max_tokens": 4096,
    }


def _assert_no_secret(path: Path) -> None:
    data = _bytes_on_disk(path)
    for secret in SECRETS:
        assert secret.encode() not in data, secret


def test_the_recorder_masks_secrets_before_they_reach_the_disk(db_path: Path) -> None:
    payload = _secret_payload()
    with fe.RunRecorder(db_path) as r:  # default: RedactionPolicy.default()
        run_id = r.start_run("agent.py")
        r.log_event(run_id, "tool_call", payload)
        assert b"visible-prompt-marker" in _bytes_on_disk(db_path)  # the grep sees what is stored
        _assert_no_secret(db_path)  # while the WAL holds the commit
        (event,) = r.get_events(run_id)
    _assert_no_secret(db_path)  # after the checkpoint at close
    assert event["payload"] == {
        "api_key": "[REDACTED]",
        "headers": {"Authorization": "[REDACTED]", "Cookie": "[REDACTED]"},
        "user": {"password": "[REDACTED]"},
        "note": "[REDACTED]",
        "prompt": "visible-prompt-marker",
        "max_tokens": 4096,
    }
    assert payload == _secret_payload()  # the caller's payload is not mutated


def test_without_redaction_the_same_grep_finds_the_secret(db_path: Path) -> None:
    """The control: the grep above would see a secret that was stored."""
    with fe.RunRecorder(db_path, redaction_policy=fe.RedactionPolicy.none()) as r:
        r.log_event(r.start_run("agent.py"), "tool_call", _secret_payload())
        assert API_KEY.encode() in _bytes_on_disk(db_path)


MASKED = [
    "api_key", "apiKey", "X-API-Key", "openai_api_key", "access_token", "refresh_token", "token",
    "password", "db_password", "passwd", "secret", "client_secret", "authorization",
    "Proxy-Authorization", "cookie", "set-cookie", "private_key", "privateKey", "session_id",
    "sessionId", "credentials", "aws_secret_access_key",
]  # fmt: skip
KEPT = [
    "keyboard", "author", "monkey", "primary_key", "max_tokens", "prompt_tokens", "tokenizer",
    "session", "key", "keys", "authority", "passage", "secretary", "cookbook", "sort_key",
]  # fmt: skip


@pytest.mark.parametrize("key", MASKED)
def test_the_default_policy_masks_secret_keys(key: str) -> None:
    with fe.RunRecorder(":memory:") as r:
        run_id = r.start_run("x.py")
        r.log_event(run_id, "input", {key: "value-1234"})
        assert r.get_events(run_id)[0]["payload"] == {key: "[REDACTED]"}


@pytest.mark.parametrize("key", KEPT)
def test_the_default_policy_keeps_words_that_only_contain_a_secret_word(key: str) -> None:
    """Forkline's substring rules mask all of these; whole-word matching keeps them."""
    with fe.RunRecorder(":memory:") as r:
        run_id = r.start_run("x.py")
        r.log_event(run_id, "input", {key: "value-1234"})
        assert r.get_events(run_id)[0]["payload"] == {key: "value-1234"}


def test_a_custom_policy_hashes_and_drops(db_path: Path) -> None:
    policy = fe.RedactionPolicy(
        [
            fe.RedactionRule(action="hash", key="email"),
            fe.RedactionRule(action="drop", path="request.debug"),
        ]
    )
    with fe.RunRecorder(db_path, redaction_policy=policy) as r:
        run_id = r.start_run("x.py")
        r.log_event(run_id, "input", {"email": "a@example.org", "request": {"debug": "x", "q": 1}})
        (event,) = r.get_events(run_id)
    assert event["payload"]["request"] == {"q": 1}
    assert event["payload"]["email"].startswith("sha256:")
    assert b"a@example.org" not in _bytes_on_disk(db_path)


# -- the executor API: a sensitive field withholds the whole slot ----------------------------------


def test_a_sensitive_field_withholds_the_whole_slot(db_path: Path) -> None:
    with fe.Store.open(db_path, redaction=fe.RedactionPolicy.default()) as store:
        run = store.start_run(workflow="w", inputs={"api_key": API_KEY, "region": "eu-marker-77"})
        run.begin_step("call", arguments={"headers": {"authorization": BEARER}, "q": "q-marker-88"})
        run.end_step("call", "succeeded", result={"rows": "result-marker-99"})
        run.conclude("succeeded", outputs={"password": PASSWORD})
        document = store.get_run_record(run.id)
        data = _bytes_on_disk(db_path)
    assert document["payloads"]["inputs"] == {"class": "inputs", "state": "withheld"}
    assert document["payloads"]["outputs"] == {"class": "outputs", "state": "withheld"}
    step = document["steps"]["call"]["payloads"]
    assert step["arguments"] == {"class": "arguments", "state": "withheld"}
    assert step["result"]["state"] == "present"
    # Nothing of a withheld slot is kept, not even its harmless fields; a present slot is.
    assert b"result-marker-99" in data
    for marker in (*SECRETS, "eu-marker-77", "q-marker-88"):
        assert marker.encode() not in data, marker
    _assert_no_secret(db_path)


def test_without_a_policy_the_executor_stores_the_slot(db_path: Path) -> None:
    with fe.Store.open(db_path) as store:
        run = store.start_run(workflow="w", inputs={"api_key": API_KEY})
        assert store.get_run_record(run.id)["payloads"]["inputs"]["state"] == "present"
        assert API_KEY.encode() in _bytes_on_disk(db_path)


# -- issue 20, item 13: secrets as map keys, Stripe keys, bare AWS secret keys, passwordHash ------

STRIPE = "sk_live_51H8xQ2eZvKYlo2C0abcdef"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
HASHED = "$2b$12$saltsaltsaltsaltsaltsuHashOfThePassword"


def _new_shapes() -> dict[str, Any]:
    return {
        "cache": {STRIPE: {"hits": 3}},  # a secret used as a map key
        "charge": {"key": STRIPE},
        "creds": [AWS_SECRET],
        "user": {"passwordHash": HASHED, "name": "ann-marker-31"},
    }


def test_the_new_shapes_never_reach_the_disk(db_path: Path) -> None:
    with fe.RunRecorder(db_path) as r:
        run_id = r.start_run("agent.py")
        r.log_event(run_id, "tool_call", _new_shapes())
        r.log_event(run_id, "tool_call", {STRIPE: 1})  # the whole payload is the map: masked
        payloads = [e["payload"] for e in r.get_events(run_id)]
    assert payloads == [
        {
            "cache": "[REDACTED]",
            "charge": {"key": "[REDACTED]"},
            "creds": ["[REDACTED]"],
            "user": {"passwordHash": "[REDACTED]", "name": "ann-marker-31"},
        },
        "[REDACTED]",
    ]
    with fe.Store.open(db_path, redaction=fe.RedactionPolicy.default()) as store:
        run = store.start_run(workflow="w", inputs={"cache": {STRIPE: 1}})
        assert store.get_run_record(run.id)["payloads"]["inputs"]["state"] == "withheld"
    data = _bytes_on_disk(db_path)
    assert b"ann-marker-31" in data
    for secret in (STRIPE, STRIPE[:16], AWS_SECRET, HASHED):
        assert secret.encode() not in data, secret
