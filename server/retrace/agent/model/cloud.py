"""Claude on Amazon Bedrock and Google Vertex AI, through the Anthropic SDK's own clients
(``AsyncAnthropicBedrock``, ``AsyncAnthropicVertex``) wrapped in :class:`AnthropicFamilyClient`:
the request body is the agent's own (prompt-cache breakpoints included: both honour them for
Claude); the SDK moves the model id into the path and adds the provider's ``anthropic_version``.

Credentials are never settings and never reach tool commands:

* Bedrock: the standard AWS chain (``retrace.model.bedrock.profile`` or the default profile, SSO,
  the user's environment, instance roles), signing each request with SigV4 (boto3/botocore: the
  ``bedrock`` extra); or a Bedrock API key (``AWS_BEARER_TOKEN_BEDROCK``), handed off like the
  Anthropic key (:mod:`retrace.credentials`) and sent as a bearer token.
* Vertex: Google's Application Default Credentials (``gcloud auth application-default login``,
  ``GOOGLE_APPLICATION_CREDENTIALS``, the metadata server) via google-auth (the ``vertex`` extra).
  The project: ``retrace.model.vertex.projectId``, else ``ANTHROPIC_VERTEX_PROJECT_ID``, else
  the one the credentials name.

The SDK client is built on the first call, in a worker thread (importing boto3 or google-auth
and reading profiles take time; nothing blocks the server's loop). Failures of the credential
chains become one line naming what to check (:func:`explain_aws`, :func:`explain_google`), not
a traceback; a missing optional package is named with the command that installs it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from collections.abc import Callable
from pathlib import Path

from retrace import credentials
from retrace.agent.model.anthropic_family import AnthropicFamilyClient, pricing_id
from retrace.agent.model.interface import ModelError, ModelReply, ModelRequest, ReplyUsage, TextSink
from retrace.agent.model.pricing import cost_usd
from retrace.agent.model.sdk_http import anthropic_http_client
from retrace.agent.model.settings import BedrockSettings, VertexSettings

BEDROCK_API_KEY = "AWS_BEARER_TOKEN_BEDROCK"
"""The Bedrock API key's variable (the SDK's name), handed off like the Anthropic key."""
CLOUD_PLATFORM_SCOPE = "https://www.googleapis.com/auth/cloud-platform"
_NEEDS = {"bedrock": ("boto3", "botocore"), "vertex": ("google.auth", "requests")}
EXTRAS: tuple[str, ...] = tuple(_NEEDS)
"""The providers that need optional packages: each one's pyproject extra has its name."""
_WHAT = {"bedrock": "the AWS SDK for Python", "vertex": "Google's auth library"}
_CHECK = {
    "bedrock": "retrace.model.bedrock.region / profile and your AWS credentials",
    "vertex": "retrace.model.vertex.projectId / region and your Google credentials",
}
_AWS_SIGN_IN = (
    "sign in with 'aws sso login' or 'aws configure', set retrace.model.bedrock.profile, "
    "or store a Bedrock API key"
)
_GOOGLE_SIGN_IN = (
    "run 'gcloud auth application-default login', "
    "or set GOOGLE_APPLICATION_CREDENTIALS to a service-account key file"
)

_SETTINGS_AT_FAULT = (401, 403, 404)
"""Statuses whose cause is in the settings or credentials: named with the answer."""

Explain = Callable[[BaseException], ModelError | None]


MANAGED_ENV_MARKER = "retrace-env.json"
"""Written by the VS Code extension into the server environment it builds (serverEnv.ts
``ENV_MARKER``): its presence under ``sys.prefix`` says the extension installs what is missing."""
CHOOSE_PROVIDER_COMMAND = "Retrace: Choose Model Provider"
REBUILD_ENV_COMMAND = "Retrace: Rebuild Server Environment"


def install_hint(provider: str) -> str:
    """The command that installs what ``provider`` needs into Retrace's Python."""
    return f"pip install 'retrace-checkpoints[{provider}]'"


def _absent(provider: str) -> str | None:
    """The first module ``provider`` needs that this Python cannot import, else ``None``."""
    for module in _NEEDS.get(provider, ()):
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return module
    return None


def missing_extra(provider: str) -> str | None:
    """The pyproject extra (named like the provider) that ``provider`` needs and this Python
    lacks, else ``None`` (for every other provider name too). The extension's environment step
    asks this through its probe and installs ``server/requirements-<extra>.lock``: the one place
    that knows which provider needs which packages is ``_NEEDS``."""
    return provider if provider in _NEEDS and _absent(provider) is not None else None


def in_managed_env() -> bool:
    """Whether this Python is the environment the VS Code extension built and maintains."""
    return Path(sys.prefix, MANAGED_ENV_MARKER).is_file()


def missing_package(provider: str) -> str | None:
    """Why ``provider`` (``bedrock`` / ``vertex``) cannot run in this Python, else ``None``: what
    a VS Code user does in the extension's environment, what anyone else installs where."""
    module = _absent(provider)
    if module is None:
        return None
    needs = f"the {provider} provider needs {_WHAT[provider]} ({module})"
    if in_managed_env():
        return (
            f"{needs}, which Retrace's server environment does not have yet: run '{CHOOSE_PROVIDER_COMMAND}' "
            f"and choose it again, or '{REBUILD_ENV_COMMAND}'; Retrace then installs it (this needs the "
            "network) and restarts its server"
        )
    return (
        f"{needs}, which the Python Retrace runs on ({sys.executable}) does not have: "
        f"{install_hint(provider)} there, or set retrace.pythonPath to a Python that has it"
    )


class CloudClient:
    """A :class:`~retrace.agent.model.interface.ModelClient` for Bedrock or Vertex: builds its
    :class:`AnthropicFamilyClient` on the first call and explains credential failures."""

    def __init__(self, provider: str, build: Callable[[], AnthropicFamilyClient], explain: Explain) -> None:
        self._provider = provider
        self._build = build
        self._explain = explain
        self._family: AnthropicFamilyClient | None = None
        self._lock = asyncio.Lock()

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def caching(self) -> bool:
        return True

    async def family(self) -> AnthropicFamilyClient:
        """The SDK-backed client (built once; a failed build is tried again on the next call)."""
        async with self._lock:
            if self._family is None:
                try:
                    self._family = await asyncio.to_thread(self._build)
                except ModelError:
                    raise
                except Exception as e:
                    raise self._explained(e) from e
            return self._family

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelReply:
        family = await self.family()
        try:
            return await family.stream(request, on_text)
        except ModelError as e:
            raise self._reclassified(e) from e.__cause__

    async def complete(self, request: ModelRequest) -> ModelReply:
        family = await self.family()
        try:
            return await family.complete(request)
        except ModelError as e:
            raise self._reclassified(e) from e.__cause__

    def cost_usd(self, model: str, usage: ReplyUsage) -> float | None:
        """Anthropic's list price for the Claude model the id names; ``None`` (unknown) for an id
        that names none (an application inference profile's ARN, a custom model)."""
        name = pricing_id(model)
        if not name.startswith("claude"):
            return None
        return cost_usd(
            name,
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_creation_input_tokens,
            usage.cache_read_input_tokens,
        )

    def _explained(self, error: Exception) -> ModelError:
        explained = self._explain(error)
        if explained is not None:
            return explained
        first = (str(error).strip().splitlines() or [""])[0]
        return ModelError(
            f"the {self._provider} client could not start: {type(error).__name__}: {first}"[:300]
            + f"; check {_CHECK[self._provider]}",
            detail=str(error),
        )

    def _reclassified(self, error: ModelError) -> ModelError:
        cause = error.__cause__
        explained = self._explain(cause) if cause is not None else None
        if explained is not None:
            return explained
        status = getattr(cause, "status_code", None)
        if status in _SETTINGS_AT_FAULT:  # the service refused who we are or what we asked for
            check = _CHECK[self._provider] if status != 404 else "retrace.model.id (enabled in your account?)"
            return ModelError(f"{error}; check {check}", detail=error.detail)
        return error


def _first_line(error: BaseException) -> str:
    return (str(error).strip().splitlines() or [type(error).__name__])[0][:200]


# --------------------------------------------------------------------------- Amazon Bedrock


def bedrock_client(settings: BedrockSettings) -> CloudClient:
    """The Bedrock client for ``retrace.model.bedrock`` (the ``bedrock`` extra is installed)."""
    return CloudClient("bedrock", lambda: _bedrock_family(settings), lambda e: explain_aws(e, settings))


def _bedrock_family(settings: BedrockSettings) -> AnthropicFamilyClient:
    from anthropic import AsyncAnthropicBedrock

    key = credentials.get(BEDROCK_API_KEY)
    profile = settings.profile.strip() or None
    if key and profile:
        raise ModelError(
            f"a Bedrock API key is stored and retrace.model.bedrock.profile is set ({profile!r}): "
            "clear the profile to use the key, or remove the key to use the profile"
        )
    sdk = AsyncAnthropicBedrock(
        aws_region=settings.region.strip() or None,
        aws_profile=profile,
        api_key=key or None,
        max_retries=0,
        http_client=anthropic_http_client(),
    )
    return AnthropicFamilyClient(sdk, "bedrock", where=str(sdk.base_url), check=_CHECK["bedrock"])


def explain_aws(error: BaseException, settings: BedrockSettings) -> ModelError | None:
    """One line for a failure of the AWS credential chain or region lookup (``None``: not one)."""
    from botocore import exceptions as aws

    text = str(error)
    if isinstance(error, aws.ProfileNotFound):
        return ModelError(
            f"the AWS profile {settings.profile.strip()!r} was not found in your AWS config: "
            "check retrace.model.bedrock.profile (or AWS_PROFILE)",
            detail=text,
        )
    if isinstance(error, aws.NoRegionError) or (isinstance(error, ValueError) and "AWS region" in text):
        return ModelError(
            "no AWS region for Amazon Bedrock: set retrace.model.bedrock.region "
            "(or AWS_REGION, or a region in your AWS profile)",
            detail=text,
        )
    if isinstance(error, aws.NoCredentialsError | aws.PartialCredentialsError) or (
        isinstance(error, RuntimeError) and "AWS credentials" in text
    ):
        return ModelError(f"no AWS credentials found for Amazon Bedrock: {_AWS_SIGN_IN}", detail=text)
    if isinstance(error, aws.SSOError | aws.TokenRetrievalError | aws.UnauthorizedSSOTokenError):
        return ModelError(
            f"your AWS sign-in could not be used ({_first_line(error)}): run 'aws sso login' "
            "for the profile in retrace.model.bedrock.profile",
            detail=text,
        )
    if isinstance(error, aws.BotoCoreError):
        return ModelError(
            f"the AWS credentials could not be used ({_first_line(error)}): check {_CHECK['bedrock']}",
            retryable=isinstance(error, aws.ConnectionError | aws.HTTPClientError),
            detail=text,
        )
    return None


# --------------------------------------------------------------------------- Google Vertex AI


def vertex_client(settings: VertexSettings) -> CloudClient:
    """The Vertex client for ``retrace.model.vertex`` (the ``vertex`` extra is installed)."""
    return CloudClient("vertex", lambda: _vertex_family(settings), explain_google)


def _vertex_family(settings: VertexSettings) -> AnthropicFamilyClient:
    from anthropic import AsyncAnthropicVertex

    project = settings.project_id.strip() or os.environ.get("ANTHROPIC_VERTEX_PROJECT_ID", "").strip()
    found = None
    if not project:  # the credentials may name one (a service account's project)
        import google.auth

        found, named = google.auth.default(scopes=[CLOUD_PLATFORM_SCOPE])
        project = (named or "").strip()
    if not project:
        raise ModelError(
            "no Google Cloud project for Vertex AI: set retrace.model.vertex.projectId "
            "(your Google credentials name none)"
        )
    sdk = AsyncAnthropicVertex(
        region=settings.region.strip(),
        project_id=project,
        credentials=found,
        max_retries=0,
        http_client=anthropic_http_client(),
    )
    return AnthropicFamilyClient(sdk, "vertex", where=str(sdk.base_url), check=_CHECK["vertex"])


def explain_google(error: BaseException) -> ModelError | None:
    """One line for a failure of Application Default Credentials (``None``: not one)."""
    from google.auth import exceptions as google

    text = str(error)
    if isinstance(error, google.DefaultCredentialsError):
        return ModelError(f"no Google credentials found for Vertex AI: {_GOOGLE_SIGN_IN}", detail=text)
    if isinstance(error, google.RefreshError):
        return ModelError(
            f"Google refused the credentials ({_first_line(error)}): {_GOOGLE_SIGN_IN}",
            retryable=bool(getattr(error, "retryable", False)),
            detail=text,
        )
    if isinstance(error, google.TransportError):
        return ModelError(
            f"cannot reach Google's sign-in service ({_first_line(error)}): check the network",
            retryable=True,
            detail=text,
        )
    if isinstance(error, google.GoogleAuthError):
        return ModelError(f"the Google credentials could not be used ({_first_line(error)})", detail=text)
    return None
