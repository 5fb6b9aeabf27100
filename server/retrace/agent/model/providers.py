"""Which client answers for ``retrace.model.provider``: the one dispatch over the providers.

Building a client never raises: settings a provider cannot use (:meth:`ModelSettings.problem`)
or a provider that cannot start here (a missing optional package, no editor for ``vscode-lm``)
give an :class:`UnavailableClient`, whose every call fails with that one line, reported like
any failed model call (the turn ends with it; nothing is journaled of a reply).
"""

from __future__ import annotations

from collections.abc import Callable

from retrace.agent.model import cloud
from retrace.agent.model.interface import (
    EditorModels,
    ModelClient,
    ModelError,
    ModelReply,
    ModelRequest,
    ReplyUsage,
    TextSink,
)
from retrace.agent.model.settings import ModelSettings

__all__ = ["NO_EDITOR", "EditorModels", "UnavailableClient", "make_client"]

NO_EDITOR = (
    "retrace.model.provider is vscode-lm, whose models only VS Code can reach: run the prompt in "
    "the Retrace extension, or choose another provider for the command line"
)


class UnavailableClient:
    """A provider that cannot answer here; every call fails with ``message`` (not retried)."""

    def __init__(self, provider: str, message: str) -> None:
        self._provider = provider
        self.message = message

    @property
    def provider(self) -> str:
        return self._provider

    @property
    def caching(self) -> bool:
        return False

    async def stream(self, request: ModelRequest, on_text: TextSink) -> ModelReply:
        raise ModelError(self.message)

    async def complete(self, request: ModelRequest) -> ModelReply:
        raise ModelError(self.message)

    def cost_usd(self, model: str, usage: ReplyUsage) -> float | None:
        return None


def _cloud_client(access: ModelSettings) -> ModelClient:
    missing = cloud.missing_package(access.provider)
    if missing is not None:
        return UnavailableClient(access.provider, missing)
    if access.provider == "bedrock":
        return cloud.bedrock_client(access.bedrock)
    return cloud.vertex_client(access.vertex)


def _openai_compatible_client(access: ModelSettings) -> ModelClient:
    from retrace.agent.model.openai_compatible import openai_compatible_client

    try:
        return openai_compatible_client(access)
    except ModelError as e:
        return UnavailableClient(access.provider, str(e))


_BUILDERS: dict[str, Callable[[ModelSettings], ModelClient]] = {
    "bedrock": _cloud_client,
    "vertex": _cloud_client,
    "openai-compatible": _openai_compatible_client,
}
"""The providers built from their settings alone (the Anthropic API's and the editor's clients
need the composition root's parts: :func:`make_client` builds those)."""


def _vscode_lm(access: ModelSettings, editor_models: EditorModels | None) -> ModelClient:
    if editor_models is None:
        return UnavailableClient(access.provider, NO_EDITOR)
    from retrace.agent.model.vscode_lm import VscodeLmClient

    return VscodeLmClient(editor_models, access.vscode_lm.vendor)


def make_client(
    access: ModelSettings,
    *,
    anthropic: Callable[[], ModelClient],
    editor_models: EditorModels | None,
) -> ModelClient:
    """The client for ``access.provider``. ``anthropic``: makes the Anthropic API client (it
    knows the process's endpoint and key: the composition root's)."""
    problem = access.problem()
    if problem is not None:
        return UnavailableClient(access.provider, problem)
    if access.provider == "anthropic":
        return anthropic()
    if access.provider == "vscode-lm":
        return _vscode_lm(access, editor_models)
    builder = _BUILDERS.get(access.provider)
    if builder is None:
        return UnavailableClient(
            access.provider, f"the {access.provider} provider is not available in this build"
        )
    return builder(access)
