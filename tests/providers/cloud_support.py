"""Credentials for the fake cloud endpoints, made the way a user's machine has them.

* AWS: the test access key the fake Bedrock verifies signatures with, exported in the
  environment (the standard chain's first link); the user's ``~/.aws`` files and the instance
  metadata service are out of reach, so nothing of the machine running the tests leaks in.
* Google: a real service-account key file (a fresh RSA key) whose ``token_uri`` is the fake's
  ``/token``; ``GOOGLE_APPLICATION_CREDENTIALS`` names it, so the real google-auth chain signs a
  JWT, exchanges it at the fake and sends the access token the fake issued. Its public key is
  registered with the fake, which verifies the JWT's signature.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from retrace.offline import FakeModel
from retrace.offline.cloud_auth import TEST_AWS_ACCESS_KEY_ID, TEST_AWS_SECRET_ACCESS_KEY
from retrace.offline.cloud_wire import TOKEN_PATH, cloud_state

PROJECT = "retrace-test-project"
REGION = "us-east-1"
BEDROCK_MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
VERTEX_MODEL = "claude-sonnet-4-5@20250929"
_CLOUD_VARS = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_REGION",
    "AWS_DEFAULT_REGION",
    "AWS_BEARER_TOKEN_BEDROCK",
    "ANTHROPIC_BEDROCK_BASE_URL",
    "ANTHROPIC_VERTEX_BASE_URL",
    "ANTHROPIC_VERTEX_PROJECT_ID",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "GOOGLE_CLOUD_PROJECT",
    "CLOUD_ML_REGION",
)


def no_cloud_credentials(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """No AWS or Google credentials anywhere: the environment's removed, the config files
    pointed at an empty folder, the metadata servers unreachable (and not waited for)."""
    for name in _CLOUD_VARS:
        monkeypatch.delenv(name, raising=False)
    forget_aws_sessions()
    empty = home / "no-cloud-config"
    empty.mkdir(parents=True, exist_ok=True)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty / "aws-config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty / "aws-credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(empty / "gcloud"))
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    from google.auth.compute_engine import _metadata  # it read the variable on import

    monkeypatch.setattr(_metadata, "_NO_GCE_CHECK", True)


def forget_aws_sessions() -> None:
    """The SDK keeps one boto3 session per set of explicit arguments for the process (it
    resolved the chain once); a test that changes the chain starts from none."""
    from anthropic.lib.aws import _auth

    _auth._get_session.cache_clear()


def aws_credentials(monkeypatch: pytest.MonkeyPatch, home: Path, fake: FakeModel) -> None:
    """The test access key in the environment (the AWS chain finds it) and the fake as endpoint."""
    no_cloud_credentials(monkeypatch, home)
    forget_aws_sessions()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", TEST_AWS_ACCESS_KEY_ID)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", TEST_AWS_SECRET_ACCESS_KEY)
    monkeypatch.setenv("ANTHROPIC_BEDROCK_BASE_URL", fake.base_url)


def service_account(fake: FakeModel, home: Path, *, trusted: bool = True) -> Path:
    """A service-account key file whose token endpoint is ``fake``'s (its public key trusted by
    the fake unless ``trusted`` is false: then the fake checks the JWT's claims only)."""
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    key_id = uuid.uuid4().hex
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    if trusted:
        public = key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        cloud_state(fake).google.trust(key_id, public)
    info = {
        "type": "service_account",
        "project_id": PROJECT,
        "private_key_id": key_id,
        "private_key": pem,
        "client_email": f"retrace-tests@{PROJECT}.iam.gserviceaccount.com",
        "client_id": "100000000000000000001",
        "auth_uri": "https://accounts.google.com/o/oauth2/auth",
        "token_uri": fake.base_url + TOKEN_PATH,
    }
    path = home / f"service-account-{key_id[:8]}.json"
    path.write_text(json.dumps(info))
    return path


def google_credentials(monkeypatch: pytest.MonkeyPatch, home: Path, fake: FakeModel) -> Path:
    """Application Default Credentials: a service account whose token endpoint is the fake; the
    fake as the Vertex endpoint."""
    no_cloud_credentials(monkeypatch, home)
    path = service_account(fake, home)
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", str(path))
    monkeypatch.setenv("ANTHROPIC_VERTEX_BASE_URL", fake.base_url + "/v1")
    return path
