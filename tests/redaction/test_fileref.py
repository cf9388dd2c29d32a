"""A FileRef is one value whose text is stored, so the value patterns search that text too."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forkline_es as fe
from forkline_es.redaction import DEFAULT_MASK, RedactionPolicy, RedactionRule

from .guarantees import redacted_keeping_guarantees

DEFAULT = RedactionPolicy.default()
URL = "https://alice:HUNTER2SECRET@files.example.com/report.pdf"
AWS = "AKIAIOSFODNN7EXAMPLE"

SECRET_REFS = {
    "reference": fe.FileRef(URL),
    "name": fe.FileRef("s3://bucket/k", name=AWS),
    "media_type": fe.FileRef("s3://bucket/k", media_type=f"text/plain; key={AWS}"),
}
PLAIN_REFS = [
    fe.FileRef("s3://bucket/report.pdf"),
    fe.FileRef(
        "https://files.example.com/report.pdf",
        name="report.pdf",
        media_type="application/pdf",
        size=10,
        digest="sha256:" + "a" * 64,
    ),
    fe.FileRef("s3://bucket/k", name=DEFAULT_MASK),
]


def _bytes_on_disk(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.parent.iterdir() if p.name.startswith(path.name))


@pytest.mark.parametrize("ref", list(SECRET_REFS.values()), ids=list(SECRET_REFS))
def test_a_secret_in_any_text_member_makes_the_file_sensitive(ref: fe.FileRef) -> None:
    payload = {"doc": ref, "files": [ref], "n": 1}
    assert DEFAULT.is_sensitive(payload)
    assert DEFAULT.sensitive_paths(payload) == ["$.doc", "$.files[0]"]
    assert DEFAULT.is_sensitive(ref)
    assert DEFAULT.sensitive_paths(ref) == ["$"]


@pytest.mark.parametrize("ref", PLAIN_REFS)
def test_a_file_without_secrets_is_kept_as_it_is(ref: fe.FileRef) -> None:
    payload = {"doc": ref, "files": [ref]}
    assert not DEFAULT.is_sensitive(payload)
    assert DEFAULT.redact(payload)["doc"] is ref
    assert DEFAULT.redact(ref) is ref


def test_a_match_masks_or_drops_the_whole_file() -> None:
    """A FileRef cannot be half masked, as a string cannot: the rule applies to all of it."""
    ref = SECRET_REFS["reference"]
    assert DEFAULT.redact({"doc": ref, "files": [ref]}) == {"doc": DEFAULT_MASK, "files": [DEFAULT_MASK]}
    assert DEFAULT.redact(ref) == DEFAULT_MASK
    drop = RedactionPolicy([RedactionRule(action="drop", pattern="HUNTER2")])
    assert drop.redact({"doc": ref, "files": [ref], "n": 1}) == {"files": [DEFAULT_MASK], "n": 1}
    assert drop.redact(ref) == DEFAULT_MASK


def test_the_first_matching_rule_wins_across_members() -> None:
    p = RedactionPolicy(
        [
            RedactionRule(action="drop", pattern="^report"),
            RedactionRule(action="mask", pattern="^s3:"),
        ]
    )
    assert p.redact({"f": fe.FileRef("s3://b/k", name="report.pdf")}) == {}
    assert p.redact({"f": fe.FileRef("s3://b/k", name="x.pdf")}) == {"f": DEFAULT_MASK}


def test_key_and_path_rules_match_where_the_file_sits() -> None:
    ref = PLAIN_REFS[1]
    assert DEFAULT.redact({"private_key": ref}) == {"private_key": DEFAULT_MASK}
    by_path = RedactionPolicy([RedactionRule(action="mask", path="docs.*")])
    assert by_path.sensitive_paths({"docs": [ref], "other": ref}) == ["$.docs[0]"]
    # Its members are not map entries: a rule for the key `name` leaves the file alone.
    assert RedactionPolicy([RedactionRule(action="mask", key="name")]).redact({"f": ref}) == {"f": ref}


def test_hashing_a_file_is_refused_with_its_location() -> None:
    p = RedactionPolicy([RedactionRule(action="hash", pattern="HUNTER2")])
    with pytest.raises(fe.InvalidValue) as info:
        p.redact({"doc": SECRET_REFS["reference"]})
    assert info.value.path == "$<key 0>"


TEXT = st.one_of(st.sampled_from([URL, AWS, "report.pdf", DEFAULT_MASK, "secret-42"]), st.text(max_size=8))
FILES = st.builds(
    fe.FileRef,
    reference=TEXT.filter(bool),
    name=st.none() | TEXT,
    media_type=st.none() | TEXT,
    size=st.none() | st.integers(min_value=0),
    digest=st.none() | st.just("sha256:" + "0" * 64),
)
VALUES = st.recursive(
    st.one_of(FILES, TEXT, st.integers()),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(TEXT, children, max_size=3),
    max_leaves=8,
)
POLICIES = st.one_of(
    st.just(DEFAULT),
    st.builds(
        RedactionPolicy,
        st.lists(
            st.builds(
                RedactionRule,
                action=st.sampled_from(["mask", "drop"]),
                pattern=st.sampled_from(["secret", "HUNTER2", r"\.pdf", r"^\[", "sha256"]),
            ),
            max_size=3,
        ),
        mask=st.sampled_from([DEFAULT_MASK, "secret"]),
    ),
)


@settings(max_examples=200, deadline=None)
@given(policy=POLICIES, value=VALUES)
def test_files_keep_the_policy_guarantees(policy: RedactionPolicy, value: object) -> None:
    once = redacted_keeping_guarantees(policy, value)
    paths = policy.sensitive_paths(value)
    assert (once != value) == bool(paths) == policy.is_sensitive(value)


# -- at the storage boundary -----------------------------------------------------------------------


def test_the_executor_withholds_a_slot_holding_a_secret_file(db_path: Path) -> None:
    with fe.Store.open(db_path, redaction=fe.RedactionPolicy.default()) as store:
        run = store.start_run(workflow="w", inputs={"doc": SECRET_REFS["reference"]})
        run.begin_step("a", arguments={"doc": SECRET_REFS["name"]})
        run.begin_step("b", arguments={"doc": SECRET_REFS["media_type"]})
        run.begin_step("c", arguments={"doc": fe.FileRef("s3://bucket/visible-marker-31")})
        record = store.get_run_record(run.id)
        data = _bytes_on_disk(db_path)
    assert record["payloads"]["inputs"] == {"class": "inputs", "state": "withheld"}
    for step in ("a", "b"):
        assert record["steps"][step]["payloads"]["arguments"] == {"class": "arguments", "state": "withheld"}
    assert record["steps"]["c"]["payloads"]["arguments"]["state"] == "present"
    assert b"visible-marker-31" in data  # the grep sees what is stored
    assert b"HUNTER2SECRET" not in data
    assert AWS.encode() not in data


def test_the_recorder_refuses_a_file_as_it_refuses_any_non_json_object() -> None:
    """So RunRecorder payloads never store a FileRef: only the executor path needs the check."""
    with fe.RunRecorder(":memory:") as r:
        run_id = r.start_run("x.py")
        with pytest.raises(fe.InvalidValue) as info:
            r.log_event(run_id, "input", {"doc": PLAIN_REFS[0]})
        assert info.value.path == "$<key 0>"
        assert r.get_events(run_id) == []
