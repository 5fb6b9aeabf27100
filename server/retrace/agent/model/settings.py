"""``retrace.model.*``: which provider answers the agent, and that provider's own settings.

One setting chooses the provider (``retrace.model.provider``); each provider has its own
section. Credentials are never settings: the Anthropic key (and a Bedrock API key or an
OpenAI-compatible endpoint's key) arrive on the hand-off pipe (:mod:`retrace.credentials`);
AWS and Google credentials come from their standard chains (profiles, SSO, metadata servers,
``GOOGLE_APPLICATION_CREDENTIALS``); ``vscode-lm`` needs none at all (the editor answers).

:meth:`ModelSettings.problem` is THE check of a provider's settings: it names the setting at
fault in one line; the agent refuses a turn with that line before any request is made.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from retrace.camel import CamelModel

Provider = Literal["anthropic", "bedrock", "vertex", "vscode-lm", "openai-compatible"]
PROVIDERS: tuple[Provider, ...] = ("anthropic", "bedrock", "vertex", "vscode-lm", "openai-compatible")

DEFAULT_MODEL = "claude-sonnet-5-5"
"""The Anthropic API's default model (the other providers name their own: see :meth:`problem`)."""


class BedrockSettings(CamelModel):
    """``retrace.model.bedrock``: where Amazon Bedrock is reached (credentials: the AWS chain)."""

    region: str = ""
    """AWS region (empty: ``AWS_REGION`` / the profile's region)."""
    profile: str = ""
    """AWS profile name from ``~/.aws`` (empty: the default credential chain)."""


class VertexSettings(CamelModel):
    """``retrace.model.vertex``: where Google Vertex AI is reached (credentials: Application
    Default Credentials)."""

    project_id: str = ""
    """Google Cloud project (empty: ``ANTHROPIC_VERTEX_PROJECT_ID`` / the credentials' project)."""
    region: str = "global"


class OpenAiCompatibleSettings(CamelModel):
    """``retrace.model.openaiCompatible``: a chat-completions endpoint (Ollama, vLLM, LM Studio)."""

    base_url: str = ""
    """E.g. ``http://localhost:11434/v1`` (machine-scoped, like ``retrace.baseUrl``)."""


class VscodeLmSettings(CamelModel):
    """``retrace.model.vscodeLm``: which of the editor's language models answers."""

    vendor: str = "copilot"
    """The models' vendor (``copilot`` for a GitHub Copilot subscription)."""


class ModelSettings(CamelModel):
    """The ``retrace.model`` section. A plain string (the setting before providers existed) is
    the Anthropic model id."""

    provider: Provider = "anthropic"
    id: str = ""
    """The model id in the provider's own naming (empty: the provider's default, where it has one)."""
    context_window: int | None = Field(default=None, ge=1000)
    """The model's context window in tokens (``None``: the known table's, else 200k): what
    automatic compaction measures against; a local model's is often a few thousand."""
    bedrock: BedrockSettings = Field(default_factory=BedrockSettings)
    vertex: VertexSettings = Field(default_factory=VertexSettings)
    openai_compatible: OpenAiCompatibleSettings = Field(default_factory=OpenAiCompatibleSettings)
    vscode_lm: VscodeLmSettings = Field(default_factory=VscodeLmSettings)

    @model_validator(mode="before")
    @classmethod
    def _legacy_string(cls, raw: Any) -> Any:
        return {"id": raw} if isinstance(raw, str) else raw

    def model_id(self) -> str:
        """The model requests name: the configured id, else the provider's default ("" where
        the provider has none: :meth:`problem` then says so; ``vscode-lm`` lets the editor pick)."""
        if self.id.strip():
            return self.id.strip()
        return DEFAULT_MODEL if self.provider == "anthropic" else ""

    def problem(self) -> str | None:
        """Why no request can be made with these settings (one line naming the setting), else ``None``."""
        if self.provider in ("bedrock", "vertex", "openai-compatible") and not self.model_id():
            examples = {
                "bedrock": "an inference profile such as us.anthropic.claude-sonnet-4-5-20250929-v1:0",
                "vertex": "a Vertex model id such as claude-sonnet-4-5@20250929",
                "openai-compatible": "the endpoint's model name, such as qwen2.5-coder:14b",
            }
            return f"retrace.model.id is empty: {self.provider} needs {examples[self.provider]}"
        if self.provider == "vertex" and not self.vertex.region.strip():
            return (
                "retrace.model.vertex.region is empty: set the Vertex AI region that serves the model "
                "(global, us-east5, europe-west1, ...)"
            )
        if self.provider == "openai-compatible" and not self.openai_compatible.base_url.strip():
            return (
                "retrace.model.openaiCompatible.baseUrl is empty: set the endpoint's URL "
                "(e.g. http://localhost:11434/v1 for Ollama)"
            )
        return None
