"""The secret-format rule (:mod:`retrace.redact`), table-tested: each format is found and its
secret part never survives; ordinary text (code, logs, ``git log``, usage figures) is left as is."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrace.redact import has_secret, redact, redact_json

SECRETS = [
    # (text, the secret part that must not survive)
    ("REDIS_URL=redis://:p4ssw0rd-1@cache.internal:6379/0", "p4ssw0rd-1"),
    ("postgres://app:hunter2@db.example.com/app", "hunter2"),
    ("amqp://guest:s3cr3t%21@mq:5672", "s3cr3t%21"),
    (
        "https://hooks.slack.com/services/T01234567/B01234567/abcdefghijklmnopqrstuvwx",
        "abcdefghijklmnopqrstuvwx",
    ),
    ("https://discord.com/api/webhooks/123456789012345678/AbCdEf_ghIJ-klmn", "AbCdEf_ghIJ-klmn"),
    ("STRIPE_KEY=sk_live_51HxYzAbCdEfGhIjKlMnOp", "sk_live_51HxYzAbCdEfGhIjKlMnOp"),
    ("key sk_test_4eC39HqLyjWDarjtT1zdp7dc here", "sk_test_4eC39HqLyjWDarjtT1zdp7dc"),
    ("whsec_abcdefghijklmnop", "whsec_abcdefghijklmnop"),
    ("export OPENAI=sk-proj-abcdefghijklmnopqrstuvwx", "sk-proj-abcdefghijklmnopqrstuvwx"),
    ("ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
    ("github_pat_11ABCDEFG0abcdefghijklmnop", "github_pat_11ABCDEFG0abcdefghijklmnop"),
    ("glpat-abcdefghijklmnopqrst", "glpat-abcdefghijklmnopqrst"),
    ("SLACK=xoxb-123456789012-abcdefghijkl", "xoxb-123456789012-abcdefghijkl"),
    ("aws_access_key_id AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("AIzaSyA-abcdefghijklmnopqrstuvwxyz01234", "AIzaSyA-abcdefghijklmnopqrstuvwxyz01234"),
    ("npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_abcdefghijklmnopqrstuvwxyz0123456789"),
    (
        "token: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    ),
    (
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEA\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEA",
    ),
    ("-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\n(cut)", "MIIEvQIBADANBgkqhkiG9w0B"),
    (
        "K='-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0Bq1\\n-----END PRIVATE KEY-----'",
        "MIIEvQIBADANBgkqhkiG9w0Bq1",
    ),
    (
        "-----END RSA PRIVATE KEY-----\nLANG=C\nMIIEvQIBADANBgkqhkiG9w0Bdfc1145d814247d64b15887e\nX=1",
        "w0Bdfc1145d8",
    ),
    ("password=correct-horse", "correct-horse"),
    ("DB_PASSWORD: 'two words'", "two words"),
    ('{"api_key": "abc123xyz"}', "abc123xyz"),
    ("PGPASSWORD=pgsecret", "pgsecret"),
    ("MYSQL_PWD=mysqlsecret", "mysqlsecret"),
    ("SERVICE_API_KEY=plainvalue42", "plainvalue42"),
    (
        "SENTRY_DSN=https://0123456789abcdef0123456789abcdef@o1.ingest.sentry.io/2",
        "0123456789abcdef0123456789abcdef",
    ),
    ("curl -H 'Authorization: Bearer abcdefghijklmnop' x", "abcdefghijklmnop"),
    ("https://api.example.com/v1/items?api_key=k3y-v4lue&q=1", "k3y-v4lue"),
    ("https://x-access-token:ghs_abcdefghijklmnopqrstuvwx@github.com/o/r", "ghs_abcdefghijklmnopqrstuvwx"),
]

PLAIN = [
    "Author: Jane Doe <jane@example.com>",
    "max_tokens=100 input_tokens: 5 output_tokens=7",
    "def check(password):\n    return hash(password)",
    "bypass=1 key=value monkey=2",
    "https://example.com/path?q=1&page=2",
    "git@github.com:org/repo.git",
    "postgres://db.example.com/app",
    "sk-short",
    "PATH=/usr/local/bin:/usr/bin",
    "passed 12 tests in 0.3s",
    "commit 0123456789abcdef0123456789abcdef01234567",
    "[terminal: value not recorded (only known harmless variables' values are): API_TOKEN, DB_PASSWORD; "
    "left unset (set it again if it is needed)]",
    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855  file.tar",
]


@pytest.mark.parametrize(("text", "secret"), SECRETS)
def test_each_secret_format_is_redacted(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out, out
    assert "[redacted: " in out
    assert has_secret(text)
    assert redact(out) == out, "redacting twice changes nothing"


@pytest.mark.parametrize("text", PLAIN)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


@given(
    st.sampled_from(SECRETS),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40),
    st.sampled_from([" ", "\n", "\t", "; ", " | ", "\n\n"]),
)
def test_a_secret_in_any_surrounding_text_is_redacted(case: tuple[str, str], noise: str, sep: str) -> None:
    text, secret = case
    for combined in (noise + sep + text, text + sep + noise, noise + sep + text + sep + noise):
        assert secret not in redact(combined)


def test_a_key_block_takes_only_its_own_lines() -> None:
    text = "A=1\nTLS=-----BEGIN RSA PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0B\nZ=1\nPATH=/bin"
    assert redact(text) == "A=1\nTLS=[redacted: private key]\nZ=1\nPATH=/bin"


def test_json_values_are_redacted_and_keys_kept() -> None:
    value = {"command": "export T=ghp_abcdefghijklmnopqrstuvwxyz01", "n": 3, "list": ["password=x1"]}
    assert redact_json(value) == {
        "command": "export T=[redacted: token]",
        "n": 3,
        "list": ["password=[redacted: secret]"],
    }
