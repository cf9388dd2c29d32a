"""The default value patterns start on a literal (for re's fast scan); each must match exactly
where its plain form, with a leading word boundary, does. Short strings are first tried
against all patterns at once; that must decide exactly as the patterns one by one."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forkline_es.redaction import DEFAULT_PATTERNS, RedactionPolicy, RedactionRule

# The readable forms, in DEFAULT_PATTERNS' order.
PLAIN = (
    r"(?i:\bbearer)\s+(?:(?=[A-Za-z._~+/-]*[0-9])[A-Za-z0-9._~+/-]{8,}|[A-Za-z0-9._~+/-]{20,})",
    r"\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*",
    r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b",
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----",
    r"://[^\s/:@]+:[^\s/@]+@",
    r"\bsk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}",
    r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})",
    r"\bxox[abposr]-[A-Za-z0-9-]{10,}",
    r"\bAIza[0-9A-Za-z_-]{35}",
    r"\bsk_(?:live|test)_[0-9A-Za-z]{10,}",
    r"\brk_(?:live|test)_[0-9A-Za-z]{10,}",
    r"\A\s*(?=[A-Za-z0-9/+]*[a-z])(?=[A-Za-z0-9/+]*[A-Z])(?=[A-Za-z0-9/+]*[0-9])[A-Za-z0-9/+]{40}(?=\s*\Z)",
)

# Pieces that build near-misses and matches: prefixes glued to words, boundaries of every
# kind (punctuation, non-ASCII letters, digits, underscores), runs long enough for {n,}.
PIECES = st.sampled_from(
    [
        "Bearer",
        "bearer",
        "BEARER",
        "xbearer",
        "eyJ",
        "xeyJ",
        "AKIA",
        "ASIA",
        "_AKIA",
        "sk-",
        "proj-",
        "ant-",
        "ghp_",
        "gho_",
        "github_pat_",
        "xoxb-",
        "AIza",
        "sk_live_",
        "rk_test_",
        "sk_test",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI+K7MDENG",
        "/",
        "-----BEGIN ",
        "PRIVATE KEY",
        "RSA ",
        "-----",
        "://",
        "user",
        ":",
        "@",
        " ",
        "\t",
        ".",
        "_",
        "-",
        "é",
        "ß",
        "0",
        "7",
        "A" * 16,
        "aB3" * 8,
        "Z9" * 20,
        "x" * 40,
    ]
)
TEXTS = st.lists(st.one_of(PIECES, st.text(max_size=3)), max_size=12).map("".join)


def spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [m.span() for m in pattern.finditer(text)]


def test_each_default_pattern_has_its_plain_form() -> None:
    assert len(PLAIN) == len(DEFAULT_PATTERNS)


@settings(max_examples=1500, deadline=None)
@given(text=TEXTS)
def test_fast_and_plain_forms_match_the_same_spans(text: str) -> None:
    for fast, plain in zip(DEFAULT_PATTERNS, PLAIN, strict=True):
        assert spans(re.compile(fast), text) == spans(re.compile(plain), text), (fast, text)


def test_the_generated_texts_reach_every_pattern() -> None:
    """The property above means something only if matches occur; one sample of each."""
    samples = [
        "auth: Bearer abc123def456",
        "t=eyJhbGciOi.eyJzdWIiOi.sig",
        "key AKIAIOSFODNN7EXAMPLE.",
        "-----BEGIN RSA PRIVATE KEY-----",
        "https://user:pw@host",
        "sk-proj-" + "aB3" * 8,
        "ghp_" + "x" * 40,
        "xoxb-" + "aB3" * 4,
        "AIza" + "Z9" * 20,
        "STRIPE=sk_live_" + "aB3" * 8,
        "rk_test_" + "aB3" * 8,
        " wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n",
    ]
    for fast, plain, sample in zip(DEFAULT_PATTERNS, PLAIN, samples, strict=True):
        assert spans(re.compile(fast), sample) == spans(re.compile(plain), sample) != [], sample


def without_alternation(policy: RedactionPolicy) -> RedactionPolicy:
    plain = RedactionPolicy(policy.rules, mask=policy.mask)
    plain._any_pattern = None  # every string tried against each pattern in turn
    return plain


@settings(max_examples=1000, deadline=None)
@given(text=TEXTS)
def test_the_short_string_alternation_decides_as_the_patterns_do(text: str) -> None:
    policy = RedactionPolicy.default()
    assert policy._any_pattern is not None
    plain = without_alternation(policy)
    for value in (text, {"v": text}, [text, text[:5]]):
        assert policy.redact(value) == plain.redact(value)
        assert policy.sensitive_paths(value) == plain.sensitive_paths(value)


@pytest.mark.parametrize(
    "patterns",
    [
        [r"(a)\1"],  # a backreference means something else once the groups are renumbered
        [r"secret", r"(?P<x>tok)en"],
        [r"(?i)secret"],  # global flags cannot sit inside an alternation
    ],
)
def test_no_alternation_where_it_could_decide_differently(patterns: list[str]) -> None:
    policy = RedactionPolicy([RedactionRule(action="mask", pattern=p) for p in patterns])
    assert policy._any_pattern is None
    assert policy.redact({"a": "aa", "b": "SECRET", "c": "token"})["b"] == (
        "[REDACTED]" if patterns == [r"(?i)secret"] else "SECRET"
    )
