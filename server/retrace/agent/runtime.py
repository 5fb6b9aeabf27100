"""What an agent turn runs on: the :class:`Runtime` (gate, host, settings, policy, client) and
the journal writes every part of a turn shares (messages, closing an unanswered tool batch).

Every journal write goes through :func:`journal`: appended through the engine gate and folded
into the in-memory conversation in the same step, so the two never disagree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from retrace.agent.background import BackgroundTasks
from retrace.agent.conversation import Conversation, new_id, now_iso, results_for_batch
from retrace.agent.model.anthropic_family import AnthropicFamilyClient
from retrace.agent.model.interface import ModelClient
from retrace.agent.model.sdk_http import anthropic_sdk, tls_context
from retrace.agent.notifications import AgentHost
from retrace.agent.permissions import PermissionPolicy
from retrace.agent.recent_calls import ReplayBuffer
from retrace.agent.settings import AgentSettings
from retrace.agent.tools import ToolSpec, spec_of
from retrace.engine.engine import Engine
from retrace.engine.gate import EngineGate
from retrace.engine.store.events import JournalEvent, MessageEvent

if TYPE_CHECKING:
    from retrace.agent.folders import FolderAccess
    from retrace.engine.folders import Folder

ClientFactory = Callable[[AgentSettings], ModelClient]
"""Builds the model client for the current settings (the composition root supplies the one
that knows the configured provider, endpoint and credentials)."""


def default_client_factory(settings: AgentSettings) -> ModelClient:
    """An Anthropic API client for ``settings.base_url``; retries are ours (they are reported as
    events), so the SDK's are off. A local endpoint needs no real key."""
    base_url = settings.base_url
    sdk = anthropic_sdk(base_url, "retrace-offline" if base_url else None)
    check = "the retrace.baseUrl setting"
    return AnthropicFamilyClient(sdk, "anthropic", where=str(sdk.base_url), check=check)


def warm_sdk() -> None:
    """Import the model SDK and its HTTP transport (seconds of CPU: its types are built on
    import) and build the process's TLS context (:func:`sdk_http.tls_context`). Both happen on
    first use so that a start-up does not wait for them; a server calls this in the background
    once it has started, so a first turn does not wait for them either."""
    import anthropic  # noqa: F401
    import httpcore2  # noqa: F401  (the transport imports it when its first client is made)

    tls_context()


@dataclass
class Runtime:
    """What a turn needs from the service that owns it."""

    gate: EngineGate
    host: AgentHost
    settings: AgentSettings
    policy: PermissionPolicy
    replay: ReplayBuffer
    client_of: Callable[[], ModelClient]
    """Gives the model client; asked on first use (a runtime that only writes journal
    lines, as a crash resume does, makes none), then kept for this runtime's turn."""
    tools: frozenset[str] | None = None
    """The tools this agent may use (``None``: all); a subagent's set never holds ``task``."""
    background: BackgroundTasks | None = None
    """The service's background commands (``None``: a runtime that starts none)."""
    extra_tools: Mapping[str, ToolSpec] = field(default_factory=dict)
    """Tools beyond the built-in ones for this turn (the MCP servers' tools)."""
    folders: FolderAccess | None = None
    """The other folders of a multi-root workspace (``None``: a single folder)."""
    _client: ModelClient | None = field(default=None, init=False, repr=False)

    @property
    def client(self) -> ModelClient:
        if self._client is None:
            self._client = self.client_of()
        return self._client

    def spec(self, tool: str) -> ToolSpec | None:
        """The tool called ``tool`` for this runtime (built-in or extra)."""
        return spec_of(tool, self.extra_tools)

    @property
    def may_delegate(self) -> bool:
        """Whether this agent may start subagents (a subagent may not)."""
        return self.tools is None or "task" in self.tools

    @property
    def engine(self) -> Engine:
        return self.gate.engine

    def workspace_folders(self) -> tuple[Folder, ...]:
        """Every folder of the workspace, this agent's first (``()``: a single folder, which then
        works exactly as a workspace of one folder always did)."""
        folders = self.folders.folders() if self.folders is not None else ()
        return folders if len(folders) > 1 else ()


async def journal(rt: Runtime, conv: Conversation, event: JournalEvent) -> None:
    """Append to the session journal and fold into the in-memory state, atomically (the
    conversation folds the event's validated wire form, exactly what a replay reads back)."""

    def write() -> None:
        rt.engine.append_event(event, session_id=conv.session_id)
        conv.apply_written(event)

    await rt.gate.call(write)


async def append_message(
    rt: Runtime,
    conv: Conversation,
    role: str,
    content: list[dict[str, Any]],
    *,
    turn_id: str | None,
    kind: str,
    attachments: list[str] | None = None,
) -> str:
    message_id = new_id("msg")
    await journal(
        rt,
        conv,
        MessageEvent(
            id=message_id,
            parent=conv.head,
            role=role,
            content=content,
            turn_id=turn_id,
            kind=kind,
            created_at=now_iso(),
            attachments=attachments or None,
        ),
    )
    return message_id


async def close_open_batch(rt: Runtime, conv: Conversation, turn_id: str | None, missing_text: str) -> None:
    """If the head is an assistant message with unanswered tool calls, answer them (journaled
    results where they exist, ``missing_text`` otherwise) so the history stays valid."""
    assistant = conv.open_batch()
    if assistant is None:
        return
    blocks = results_for_batch(conv, assistant, upto=None, after_text=missing_text)
    await append_message(rt, conv, "user", blocks, turn_id=turn_id, kind="toolResults")
