"""Agent read models the protocol embeds, re-exported from the agent package (declared there once):
the conversation view (``retrace/conversation/get``), the replay-buffer record
(``retrace/toolCalls/search``) and the permission policy settings."""

from __future__ import annotations

from retrace.agent.conversation import ConversationView, MessageView, UsageTotals
from retrace.agent.permissions import PermissionSettings
from retrace.agent.recent_calls import ToolCallView

__all__ = ["ConversationView", "MessageView", "PermissionSettings", "ToolCallView", "UsageTotals"]
