"""The default policy masks credentials and nothing that merely looks like them."""

from __future__ import annotations

import pytest

from forkline_es.redaction import DEFAULT_MASK, RedactionPolicy

DEFAULT = RedactionPolicy.default()

MASKED_KEYS = [
    "api_key",
    "apiKey",
    "APIKey",
    "apikey",
    "X-API-Key",
    "x-api-key",
    "openai_api_key",
    "OPENAI_API_KEY",
    "aws_secret_access_key",
    "access_key",
    "secret_key",
    "access_token",
    "accessToken",
    "refresh_token",
    "refreshToken",
    "id_token",
    "IDToken",
    "auth_token",
    "X-Auth-Token",
    "OAuthToken",
    "csrf_token",
    "token",
    "Token",
    "bearer",
    "Authorization",
    "authorization",
    "Proxy-Authorization",
    "auth",
    "basic_auth",
    "password",
    "Password",
    "db_password",
    "password2",
    "passwd",
    "pwd",
    "passphrase",
    "secret",
    "client_secret",
    "clientSecret",
    "webhook_secret",
    "credentials",
    "cookie",
    "Cookie",
    "Set-Cookie",
    "cookies",
    "private_key",
    "privateKey",
    "ssh_private_key",
    "session_id",
    "sessionId",
    "sessionid",
    "SESSION_ID",
    "session_token",
    "api.key",
    "api key",
    # written as one word, plural, or with a trailing qualifier
    "authtoken",
    "accesstoken",
    "refreshtoken",
    "idtoken",
    "clientsecret",
    "secretkey",
    "api_keys",
    "apiKeys",
    "API_KEYS",
    "csrf",
    "_csrf",
    "X-CSRF",
    "xsrf",
    "csrftoken",
    "XSRF-TOKEN",
    "csrfmiddlewaretoken",
    "JSESSIONID",
    "jsessionid",
    "PHPSESSID",
    "auth_header",
    "AuthHeader",
    "proxy_auth_header",
    "authorization_header",
    "private_key_pem",
    "privateKeyPem",
    "private_keys",
    # camelCase and PascalCase split into words; a trailing word naming a form is looked past
    "passwordHash",
    "PasswordHash",
    "password_hash",
    "passwordhash",
    "password_digest",
    "passwordSha256",
    "hashed_password",
    "apiKey",
    "apiKeyHash",
    "api_key_b64",
    "accessToken",
    "accessTokenEncrypted",
    "clientSecret",
    "clientSecretValue",
    "secretAccessKey",
    "SecretAccessKey",
    "AWS_SECRET_ACCESS_KEY",
]

KEPT_KEYS = [
    "keyboard",
    "author",
    "authors",
    "authority",
    "authorized",
    "monkey",
    "key",
    "primary_key",
    "primaryKey",
    "public_key",
    "cache_key",
    "idempotency_key",
    "sort_key",
    "max_tokens",
    "maxTokens",
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "tokens",
    "token_count",
    "token_type",
    "tokenizer",
    "passenger",
    "password_min_length",
    "secretary",
    "session",
    "session_start",
    "cookie_policy",
    "oauth",
    "name",
    "prompt",
    "foreign_key",
    "keys",
    "session_timeout",
    "sessions",
    "password_hint",  # a hint is not the password
    "csrf_enabled",
    "header",
    "auth_header_name",
    "public_key_pem",
    "hash",
    "value",
    "digest",
    "content_hash",
    "cache_key_hash",
    "maxTokens",
    "tokenCount",
    "passwordPolicy",
    "password_reset_url",
    "Author",
]


@pytest.mark.parametrize("key", MASKED_KEYS)
def test_default_masks_credential_keys(key: str) -> None:
    assert DEFAULT.redact({key: "s3cr3t-value"}) == {key: DEFAULT_MASK}
    assert DEFAULT.sensitive_paths({"outer": {key: 1}}) != []


@pytest.mark.parametrize("key", KEPT_KEYS)
def test_default_keeps_keys_that_only_look_like_credentials(key: str) -> None:
    payload = {key: "plain value", "nested": [{key: 42}]}
    assert DEFAULT.redact(payload) == payload
    assert not DEFAULT.is_sensitive(payload)


def test_a_matched_key_masks_its_whole_subtree() -> None:
    payload = {"auth": {"user": "ann", "scopes": ["read"]}, "n": 1}
    assert DEFAULT.redact(payload) == {"auth": DEFAULT_MASK, "n": 1}


SECRET_VALUES = {
    "bearer": "curl -H 'Authorization: Bearer 9f8a7b6c5d4e3f2a1b0c'",
    "bearer-long-letters": "bearer abcdefghijklmnopqrstuvwxyzABCD",
    "jwt": (
        "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    ),
    "jwt-unsigned": "eyJhbGciOiJub25lIn0.eyJzdWIiOiIxMjM0NTY3ODkwIn0.",  # alg none: no signature
    "aws-akia": "key AKIAIOSFODNN7EXAMPLE in a log line",
    "aws-asia": "ASIAY34FZKBOKMUTVV7A",
    "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIEow...\n-----END RSA PRIVATE KEY-----",
    "pem-openssh": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn...",
    "url-credentials": "postgres://app:hunter2@db.internal:5432/prod",
    "openai": "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
    "github": "ghp_" + "a1" * 18,
    "slack": "xoxb-1234567890-abcdefghij",
    "google": "AIza" + "B" * 35,
    "stripe-live": "sk_live_" + "51H8abcDEF" * 3,
    "stripe-test": "STRIPE_SECRET_KEY=sk_test_4eC39HqLyjWDarjtT1zdp7dc",
    "stripe-restricted": "rk_live_" + "a1B2c3D4e5" * 2,
    "aws-secret-bare": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    "aws-secret-plain-alphabet": "Je7MtGbClwBF7c2sW9hOiF6ljUXR0m8nX4kq1Y3z",
    "aws-secret-line": "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY\n",
}

PUBLIC_VALUES = [
    "use a Bearer token in the Authorization header",
    "Bearer authentication",
    "the JWT header starts with eyJ",
    "AKIA is the prefix of AWS access key ids",
    "-----BEGIN PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----",
    "https://example.com/path?q=1",
    "mailto:ann@example.com",
    "task-1234567890abcdefghij",
    "[REDACTED]",
    "Stripe secret keys start with sk_live_ or sk_test_",
    "desk_live_feed",
    # The AWS secret rule is whole-string only: these 40-character shapes are kept.
    "0123456789abcdef0123456789abcdef01234567",  # a git commit id: no upper case
    "ABCDEFGHIJKLMNOPQRSTUVWXYZABCDEFGHIJKLMN",  # no lower case, no digit
    "src/Forkline2/moduleName/fileName3/Thing.py",  # a path with a 40-character run
    "see wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY in the docs",  # inside text: by name only
    "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY0",  # 41 characters
    "dGhpcyBpcyBhIGxvbmdlciBiYXNlNjQgc3RyaW5nIG9mIHRleHQ=",  # base64 of prose, padded
]


@pytest.mark.parametrize("secret", list(SECRET_VALUES.values()), ids=list(SECRET_VALUES))
def test_default_masks_secret_values_anywhere(secret: str) -> None:
    payload = {"messages": [{"content": ["ok", secret]}], "top": secret}
    redacted = DEFAULT.redact(payload)
    assert redacted == {"messages": [{"content": ["ok", DEFAULT_MASK]}], "top": DEFAULT_MASK}
    assert DEFAULT.sensitive_paths(payload) == ["$.messages[0].content[1]", "$.top"]
    assert DEFAULT.redact(secret) == DEFAULT_MASK


@pytest.mark.parametrize("text", PUBLIC_VALUES)
def test_default_keeps_text_that_only_mentions_secrets(text: str) -> None:
    assert DEFAULT.redact({"content": [text]}) == {"content": [text]}


def test_none_policy_redacts_nothing() -> None:
    payload = {"password": "x", "v": SECRET_VALUES["jwt"]}
    assert RedactionPolicy.none().redact(payload) == payload
    assert RedactionPolicy.none().sensitive_paths(payload) == []


def test_default_accepts_a_custom_mask() -> None:
    assert RedactionPolicy.default(mask="***").redact({"token": "t"}) == {"token": "***"}


@pytest.mark.parametrize("secret", list(SECRET_VALUES.values()), ids=list(SECRET_VALUES))
def test_a_secret_used_as_a_map_key_masks_its_map(secret: str) -> None:
    """A key is stored like a value; it cannot be masked apart from its map, so the map goes."""
    payload = {"cache": {"n": 1, secret: {"hits": 3}}, "kept": {"n": 2}}
    assert DEFAULT.redact(payload) == {"cache": DEFAULT_MASK, "kept": {"n": 2}}
    assert DEFAULT.sensitive_paths(payload) == ["$.cache"]
    assert DEFAULT.redact([{secret: 1}]) == [DEFAULT_MASK]
    assert DEFAULT.redact({secret: 1}) == DEFAULT_MASK  # the whole value: nothing else holds it
    assert DEFAULT.sensitive_paths({secret: 1}) == ["$"]
    assert DEFAULT.is_sensitive({"a": [{"b": {secret: None}}]})


def test_a_secret_key_is_found_under_a_key_rule_s_precedence() -> None:
    """First matching rule wins: a map under a masked key is masked by that key's rule."""
    payload = {"token": {"sk_live_" + "a1" * 10: 1}, "x": 1}
    assert DEFAULT.redact(payload) == {"token": DEFAULT_MASK, "x": 1}
