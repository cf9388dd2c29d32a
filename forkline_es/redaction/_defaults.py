"""The default rules: mask credentials by key and by the shape of well-known secret values.

Key rules match whole trailing words (see ``RedactionRule``), so ``primary_key``,
``max_tokens``, ``prompt_tokens``, ``keyboard`` and ``author`` stay visible, while a word that
only names a form (``passwordHash``, ``api_key_b64``: ``redaction._words.QUALIFIERS``) is
looked past. A name written as one word (``authtoken``, ``JSESSIONID``) has no boundary to
split on, so the common ones are listed whole instead of matching inside words, which is what
makes substring rules mask ``monkey`` and ``tokenizer``.
"""

from __future__ import annotations

from forkline_es.redaction._rules import RedactionRule

__all__ = ["DEFAULT_KEYS", "DEFAULT_PATTERNS", "default_rules"]

DEFAULT_KEYS: tuple[str, ...] = (
    # API keys and other static keys (x-api-key, openai_api_key, aws_secret_access_key, ...)
    "api_key",
    "apikey",
    "api_keys",
    "apikeys",
    "access_key",
    "secret_key",
    "secretkey",
    "private_key",
    "privatekey",
    "private_keys",
    "private_key_pem",
    "signing_key",
    "encryption_key",
    # tokens: access_token, refresh_token, id_token, auth_token, session_token, csrf_token, ...
    "token",
    "bearer",
    # ... and the same written as one word, which has no word boundary to split on
    "accesstoken",
    "refreshtoken",
    "idtoken",
    "authtoken",
    "apitoken",
    "sessiontoken",
    # CSRF/XSRF tokens: a bare `csrf` field, Django's `csrftoken` cookie and form field
    "csrf",
    "xsrf",
    "csrftoken",
    "xsrftoken",
    "csrfmiddlewaretoken",
    # passwords
    "password",
    "passwords",
    "passwd",
    "pwd",
    "passphrase",
    "passcode",
    "passwordhash",  # one word: passwordHash and password_hash are `password` + a qualifier
    # secrets and credentials: client_secret, webhook_secret, ...
    "secret",
    "secrets",
    "clientsecret",
    "credential",
    "credentials",
    # HTTP: authorization, proxy-authorization, cookie, set-cookie, and headers named for it
    "authorization",
    "auth",
    "auth_header",
    "auth_headers",
    "authorization_header",
    "cookie",
    "cookies",
    # session ids (not `session` alone: that is often a whole object, or a count)
    "session_id",
    "sessionid",
    "session_key",
    "jsessionid",  # Java servlet session cookie
    "phpsessid",  # PHP session cookie
)

# Each pattern starts on a literal, so re's search skips ahead with a fast scan for it; a
# word boundary before that literal is checked by a lookbehind behind it (`sk-(?<=\bsk-)`)
# rather than by a leading `\b`, which disables the scan (about 25 times slower on a
# kilobyte of prose). tests/redaction/test_pattern_forms.py checks each against its plain
# `\b...` form.
DEFAULT_PATTERNS: tuple[str, ...] = (
    # `Bearer <token>`: the token holds a digit or is long, so prose ("a Bearer token") is kept.
    r"[Bb](?<=\b[Bb])(?i:earer)\s+(?:(?=[A-Za-z._~+/-]*[0-9])[A-Za-z0-9._~+/-]{8,}|[A-Za-z0-9._~+/-]{20,})",
    # JWT: base64url JSON header (`{"` encodes as eyJ), payload and signature.
    r"eyJ(?<=\beyJ)[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*",
    # AWS access key ids: long-term (AKIA) and temporary (ASIA).
    r"A[KS]IA(?<=\bA[KS]IA)[A-Z0-9]{16}\b",
    # PEM private key blocks (RSA, EC, OPENSSH, ENCRYPTED, PGP ... PRIVATE KEY).
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY[A-Z ]*-----",
    # Credentials inside a URL: scheme://user:password@host.
    r"://[^\s/:@]+:[^\s/@]+@",
    # Provider keys with a fixed prefix: OpenAI/Anthropic, GitHub, Slack, Google.
    r"sk-(?<=\bsk-)(?:proj-|ant-)?[A-Za-z0-9_-]{20,}",
    r"g(?<=\bg)(?:h[pousr]_[A-Za-z0-9]{36,}|ithub_pat_[A-Za-z0-9_]{22,})",
    r"xox(?<=\bxox)[abposr]-[A-Za-z0-9-]{10,}",
    r"AIza(?<=\bAIza)[0-9A-Za-z_-]{35}",
    # Stripe secret and restricted keys, live and test.
    r"sk_(?<=\bsk_)(?:live|test)_[0-9A-Za-z]{10,}",
    r"rk_(?<=\brk_)(?:live|test)_[0-9A-Za-z]{10,}",
    # A bare AWS secret access key: the whole string (spaces around it aside) is 40 characters
    # of base64's alphabet with a lower-case letter, an upper-case letter and a digit. The key
    # has no prefix to find it by inside longer text, where this shape also fits paths and
    # base64 runs; there its name (aws_secret_access_key, SecretAccessKey) is what masks it.
    # A 40-character git or SHA-1 id (lower-case hex) is kept. `\A` makes it one cheap test.
    r"\A(?=\s*[A-Za-z0-9/+]{40}\s*\Z)(?=[^a-z]*[a-z])(?=[^A-Z]*[A-Z])(?=[^0-9]*[0-9])\s*[A-Za-z0-9/+]{40}",
)


def default_rules() -> tuple[RedactionRule, ...]:
    """Key rules first, then value patterns; every rule masks."""
    return (
        *(RedactionRule(action="mask", key=key) for key in DEFAULT_KEYS),
        *(RedactionRule(action="mask", pattern=pattern) for pattern in DEFAULT_PATTERNS),
    )
