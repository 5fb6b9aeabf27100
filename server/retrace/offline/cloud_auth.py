"""How the fake cloud endpoints authenticate a request, as Amazon Bedrock and Google do.

* Bedrock: a request is signed with AWS Signature Version 4 (``Authorization: AWS4-HMAC-SHA256
  Credential=<key id>/<date>/<region>/bedrock/aws4_request, SignedHeaders=..., Signature=...``,
  ``X-Amz-Date``) or carries a Bedrock API key (``Authorization: Bearer <key>``). A signature made
  with the test credentials (:data:`TEST_AWS_ACCESS_KEY_ID` / :data:`TEST_AWS_SECRET_ACCESS_KEY`)
  is verified byte for byte with botocore (the signer the SDK uses): a changed body, path or
  signed header is refused. Any other key id is unknown to this "account" and refused as AWS does
  (403 ``UnrecognizedClientException``).
* Google: :meth:`GoogleTokens.grant` answers the OAuth 2.0 JWT-bearer grant a service account's
  credentials make at their ``token_uri`` (the real google-auth chain runs against it); the JWT is
  checked (RS256, audience, scope, expiry, and its signature when the account's public key was
  registered with :meth:`GoogleTokens.trust`); a Vertex call must then carry one of the access
  tokens issued here.

Each check returns ``None`` when the request is accepted, else the refusal's one-line reason.
"""

from __future__ import annotations

import base64
import hmac
import json
import re
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs

TEST_AWS_ACCESS_KEY_ID = "AKIARETRACEFAKE00001"
"""The access key id the fake Bedrock knows (tests export it with the secret below)."""
TEST_AWS_SECRET_ACCESS_KEY = "retrace/fake/bedrock/secret/key/for/tests/only"
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
GOOGLE_TOKEN_AUDIENCE = "https://oauth2.googleapis.com/token"
"""The audience google-auth puts in a service account's JWT whatever its ``token_uri``."""
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
_SIGV4 = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=(?P<key>[^/,\s]+)/(?P<date>\d{8})/(?P<region>[^/,\s]+)/"
    r"(?P<service>[^/,\s]+)/aws4_request,\s*SignedHeaders=(?P<signed>[a-z0-9;._-]+),\s*Signature=(?P<sig>[0-9a-f]{64})$"
)


def check_bedrock(method: str, url: str, headers: Mapping[str, str], body: bytes) -> str | None:
    """``None`` when a Bedrock call is authenticated (``headers``: lower-case names)."""
    auth = headers.get("authorization", "")
    if auth.startswith("Bearer "):
        return None if auth.removeprefix("Bearer ").strip() else "the Bedrock API key is empty"
    found = _SIGV4.match(auth)
    if found is None:
        return "Missing Authentication Token (neither a SigV4 signature nor a Bedrock API key)"
    signed = found["signed"].split(";")
    missing = [name for name in signed if name not in headers]
    problems = (
        (found["service"] != "bedrock", f"Credential should be scoped to bedrock, not {found['service']!r}"),
        (
            not headers.get("x-amz-date", "").startswith(found["date"]),
            "the X-Amz-Date header is missing or does not match the credential scope's date",
        ),
        ("host" not in signed or "x-amz-date" not in signed, "the signature must cover host and x-amz-date"),
        (found["key"] != TEST_AWS_ACCESS_KEY_ID, "The security token included in the request is invalid."),
        (bool(missing), f"signed headers missing from the request: {', '.join(missing)}"),
        (
            _skewed(headers.get("x-amz-date", "")),
            "Signature expired: the X-Amz-Date is more than 15 minutes away",
        ),
    )
    problem = next((message for bad, message in problems if bad), None)
    if problem is not None:
        return problem
    expected = _sigv4_signature(method, url, {n: headers[n] for n in signed}, body, found["region"])
    if expected is not None and not hmac.compare_digest(expected, found["sig"]):
        return (
            "The request signature we calculated does not match the signature you provided. "
            "Check your AWS Secret Access Key and signing method."
        )
    return None


def _skewed(amz_date: str, now: float | None = None) -> bool:
    """Whether a SigV4 timestamp (``20250101T120000Z``) is unreadable or over 15 minutes away."""
    try:
        at = datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=UTC).timestamp()
    except ValueError:
        return True
    return abs((time.time() if now is None else now) - at) > 15 * 60


def _sigv4_signature(
    method: str, url: str, signed: Mapping[str, str], body: bytes, region: str
) -> str | None:
    """The signature botocore computes for this request with the test credentials (``None``
    without botocore: then only the header's form was checked)."""
    try:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest
        from botocore.credentials import Credentials
    except ImportError:
        return None
    request = AWSRequest(method=method, url=url, headers=dict(signed), data=body)
    request.context["timestamp"] = signed["x-amz-date"]
    token = signed.get("x-amz-security-token")
    credentials = Credentials(TEST_AWS_ACCESS_KEY_ID, TEST_AWS_SECRET_ACCESS_KEY, token)
    signer = SigV4Auth(credentials, "bedrock", region)
    canonical = signer.canonical_request(request)
    return str(signer.signature(signer.string_to_sign(request, canonical), request))


def _b64url(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


@dataclass
class GoogleTokens:
    """The fake Google token endpoint's state: trusted service-account keys, issued tokens."""

    public_keys: dict[str, bytes] = field(default_factory=dict)
    """``private_key_id`` → PEM public key: the JWT of such an account must be signed by it."""
    issued: dict[str, float] = field(default_factory=dict)
    """Access token → when it expires (``time.time()``)."""
    grants: int = 0
    """How many tokens were granted (a test sees the chain ran)."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    def trust(self, key_id: str, public_pem: bytes) -> None:
        """Register a service account's public key (a test generated the pair)."""
        with self.lock:
            self.public_keys[key_id] = public_pem

    def grant(self, form: bytes, token_url: str) -> tuple[int, dict[str, Any]]:
        """Answer a token request (``application/x-www-form-urlencoded``): (status, JSON body)."""
        fields = {k: v[0] for k, v in parse_qs(form.decode("utf-8", "replace")).items()}
        if fields.get("grant_type") != JWT_BEARER:
            return 400, {"error": "unsupported_grant_type", "error_description": "expected JWT-bearer"}
        problem = self._check_jwt(fields.get("assertion", ""), token_url)
        if problem is not None:
            return 400, {"error": "invalid_grant", "error_description": problem}
        token = f"ya29.fake-{uuid.uuid4().hex}"
        with self.lock:
            self.issued[token] = time.time() + 3600
            self.grants += 1
        return 200, {"access_token": token, "expires_in": 3599, "token_type": "Bearer"}

    def check_bearer(self, authorization: str) -> str | None:
        """``None`` when the header carries a live token issued here."""
        token = authorization.removeprefix("Bearer ").strip() if authorization.startswith("Bearer ") else ""
        with self.lock:
            expires = self.issued.get(token)
        if expires is None or expires < time.time():
            return (
                "Request had invalid authentication credentials. Expected OAuth 2 access token, "
                "login cookie or other valid authentication credential."
            )
        return None

    def _check_jwt(self, assertion: str, token_url: str) -> str | None:
        decoded = _decode_jwt(assertion)
        if isinstance(decoded, str):
            return decoded
        header, claims, signed, signature = decoded
        exp = claims.get("exp")
        problems = (
            (header.get("alg") != "RS256", "the assertion must be an RS256 JWT"),
            (
                claims.get("aud") not in (token_url, GOOGLE_TOKEN_AUDIENCE),
                f"the audience {claims.get('aud')!r} is not this endpoint",
            ),
            (
                CLOUD_PLATFORM_SCOPE not in str(claims.get("scope", "")).split(),
                "the assertion asks for no cloud-platform scope",
            ),
            (
                not isinstance(exp, int | float) or exp < time.time() or not claims.get("iss"),
                "the assertion is expired or names no issuer",
            ),
        )
        problem = next((message for bad, message in problems if bad), None)
        if problem is not None:
            return problem
        with self.lock:
            public = self.public_keys.get(str(header.get("kid")))
        if public is not None and not _rs256_ok(public, signed, signature):
            return "Invalid JWT Signature."
        return None


def _decode_jwt(assertion: str) -> tuple[dict[str, Any], dict[str, Any], bytes, bytes] | str:
    """(header, claims, the signed bytes, the signature), or why it is no JWT."""
    parts = assertion.split(".")
    if len(parts) != 3:
        return "the assertion is not a JWT"
    try:
        header = json.loads(_b64url(parts[0]))
        claims = json.loads(_b64url(parts[1]))
        signature = _b64url(parts[2])
    except ValueError:
        return "the assertion's parts are not base64url JSON"
    if not isinstance(header, dict) or not isinstance(claims, dict):
        return "the assertion's header and claims must be JSON objects"
    return header, claims, f"{parts[0]}.{parts[1]}".encode(), signature


def _rs256_ok(public_pem: bytes, signed: bytes, signature: bytes) -> bool:
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import padding, rsa
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    key = load_pem_public_key(public_pem)
    if not isinstance(key, rsa.RSAPublicKey):
        return False
    try:
        key.verify(signature, signed, padding.PKCS1v15(), hashes.SHA256())
    except InvalidSignature:
        return False
    return True
