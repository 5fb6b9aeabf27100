"""THE rule for "is this text a secret?" in what Retrace stores: known secret formats found in
text and replaced by ``[redacted: <kind>]`` before the text is journaled.

It is applied wherever the journal stores text the user did not type (tool outputs and inputs,
the model's replies, background commands' news, checkpoint labels, terminal values); never to the
user's own prompts, and never to workspace files (their content is the checkpoint). The live
session is not affected: a command still runs with the real values.

Formats (high confidence, so ordinary text is left alone; table-tested in
``tests/agent/test_redact.py``):

* a URL's password (``scheme://user:password@host`` → ``scheme://user:[redacted: password]@host``)
  and a token used as a URL's user name (``https://ghp_…@github.com``);
* a webhook URL's secret path (Slack, Discord, Microsoft Teams / Office 365 connectors) and a
  URL query parameter named like a credential (``?token=``, ``&sig=``, ``api_key=``…);
* well-known token prefixes: Stripe ``sk_live_``/``sk_test_``/``rk_…``/``whsec_``, OpenAI and
  Anthropic ``sk-…``, GitHub ``ghp_``/``gho_``/``ghs_``/``ghu_``/``ghr_``/``github_pat_``,
  GitLab ``glpat-``, Slack ``xox[abposr]-``, AWS access key ids ``AKIA``/``ASIA``, Google ``AIza``,
  npm ``npm_``, SendGrid ``SG.``, Twilio ``SK``+32 hex;
* JSON Web Tokens (three base64url parts, the first two starting ``eyJ``);
* PEM private key blocks (``-----BEGIN … PRIVATE KEY-----``, its base64 lines, ``END``; also
  when the lines were escaped into one string) and a line that is nothing but 40+ characters of
  base64 mixing upper case, lower case and digits (a key's body cut from its header, e.g. by
  ``env | sort``; hex digests and commit ids are not base64-mixed and stay);
* a long token used as a URL's user name (a Sentry DSN ``https://<key>@o1.ingest.sentry.io/2``),
  an ``Authorization:`` header's credentials;
* assignments to a credential-named key: a name ending in ``password``, ``passwd``,
  ``passphrase``, ``secret``, ``token``, or in ``_pass``, ``_pwd``, ``_credentials``, ``_dsn``,
  ``_key``, ``_cookie``, ``_signature`` (``DB_PASSWORD=…``, ``"api_key": "…"``, ``SENTRY_DSN=…``,
  ``GITHUB_TOKEN=…``): the value replaced, the name kept (``env`` output, ``.env`` files, JSON).
"""

from __future__ import annotations

import re

MARK = "[redacted: {}]"


def _mark(kind: str) -> str:
    return MARK.format(kind)


_NL = r"(?:\r?\n|\\(?:r\\)?n)"  # a line break, or one escaped inside a string (``repr``, JSON)
_PEM = re.compile(
    r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----"
    rf"(?:{_NL}[ \t]*(?:[A-Za-z0-9+/]+={{0,2}}(?=[ \t]*(?:\r|\n|\\|$))|[A-Za-z-]+: [^\n\\]*))*"
    rf"(?:{_NL}?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----)?"
)
_BASE64_LINE = re.compile(
    r"(?m)^[ \t]*(?=[A-Za-z0-9+/]*[A-Z])(?=[A-Za-z0-9+/]*[a-z])(?=[A-Za-z0-9+/]*[0-9])"
    r"[A-Za-z0-9+/]{40,}={0,2}[ \t]*$"
)
_URL_PASSWORD = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://[^/\s:@\"'<>]*):(?P<pw>[^/\s@\"'<>]+)@")
_WEBHOOK = re.compile(
    r"(?P<head>https?://(?:hooks\.slack\.com/(?:services|workflows|triggers)"
    r"|(?:[a-z0-9-]+\.)?discord(?:app)?\.com/api/webhooks"
    r"|[a-z0-9-]+\.webhook\.office\.com/webhookb2"
    r"|outlook\.office\.com/webhook)/)(?!\[redacted)(?P<secret>[^\s\"'<>]+)",
    re.I,
)
_QUERY_SECRET = re.compile(
    r"(?P<head>[?&](?:[A-Za-z0-9_.-]*(?:token|secret|password|passwd|api[_-]?key|apikey|access[_-]?key"
    r"|signature|sig|auth|key|code))=)(?!\[redacted)(?P<value>[^&\s\"'<>#]+)",
    re.I,
)
_TOKENS = re.compile(
    r"(?<![A-Za-z0-9_-])(?:"
    r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{8,}"
    r"|whsec_[A-Za-z0-9]{8,}"
    r"|sk-[A-Za-z0-9_-]{16,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}"
    r"|github_pat_[A-Za-z0-9_]{20,}"
    r"|glpat-[A-Za-z0-9_-]{16,}"
    r"|xox[abposr]-[A-Za-z0-9-]{8,}"
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}"
    r"|AIza[A-Za-z0-9_-]{30,}"
    r"|npm_[A-Za-z0-9]{30,}"
    r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"
    r"|SK[0-9a-f]{32}"
    r")"
)
_JWT = re.compile(r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]{8,}")
_URL_USER = re.compile(r"(?P<head>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[A-Za-z0-9_-]{20,})@")
_BEARER = re.compile(
    r"(?P<head>authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:bearer|basic|token|bot)?[ \t]*)"
    r"(?P<value>[A-Za-z0-9._~+/=-]{8,})",
    re.I,
)
_ASSIGNMENT = re.compile(
    r"(?P<head>(?<![A-Za-z0-9_.-])[\"']?"
    r"(?:[A-Za-z0-9_.-]*(?:password|passwd|passphrase|secret|token)"
    r"|(?:[A-Za-z0-9_.-]*[_.-])?(?:pass|pwd|credentials?|dsn|apikey|cookie|signature)"
    r"|[A-Za-z0-9_.-]*[_.-]key)"
    r"[\"']?[ \t]*[:=][ \t]*)"
    r"(?P<value>\"[^\"\n]*\"|'[^'\n]*'|[^\s,;}\]\"'][^\s,;}\]]*)",
    re.I,
)


def _assignment(match: re.Match[str]) -> str:
    value = match.group("value")
    if "[redacted" in value or value in ('""', "''"):
        return match.group(0)
    quote = value[0] if value[0] in "\"'" else ""
    return f"{match.group('head')}{quote}{_mark('secret')}{quote}"


def redact(text: str) -> str:
    """``text`` with every known secret format replaced (see the module documentation)."""
    if not text:
        return text
    text = _PEM.sub(_mark("private key"), text)
    text = _BASE64_LINE.sub(_mark("base64"), text)
    text = _URL_PASSWORD.sub(lambda m: f"{m.group('head')}:{_mark('password')}@", text)
    text = _WEBHOOK.sub(lambda m: f"{m.group('head')}{_mark('webhook')}", text)
    text = _QUERY_SECRET.sub(lambda m: f"{m.group('head')}{_mark('secret')}", text)
    text = _JWT.sub(_mark("jwt"), text)
    text = _TOKENS.sub(_mark("token"), text)
    text = _URL_USER.sub(lambda m: f"{m.group('head')}{_mark('user')}@", text)
    text = _BEARER.sub(lambda m: f"{m.group('head')}{_mark('token')}", text)
    return _ASSIGNMENT.sub(_assignment, text)


def redact_json(value: object) -> object:
    """Every string inside a JSON value (dict keys kept) redacted."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, list):
        return [redact_json(v) for v in value]
    if isinstance(value, dict):
        return {k: redact_json(v) for k, v in value.items()}
    return value


def has_secret(text: str) -> bool:
    """Whether :func:`redact` would change ``text``."""
    return redact(text) != text
