"""Where a summary cuts a conversation: its API messages grouped with the stored messages merged
into each, the cut around the chosen message (never between a tool call and its result), and the
history rebuilt around the summary note. Pure; used by :meth:`AgentService.summarize`."""

from __future__ import annotations

from typing import Any, Literal

from retrace.agent.conversation import Conversation, StoredMessage, api_messages, tool_uses

SummaryDirection = Literal["from", "upTo"]


def api_groups(chain: list[StoredMessage], conv: Conversation) -> list[tuple[dict[str, Any], list[str]]]:
    """The API messages of a chain, each with the ids of the stored messages merged into it."""
    messages = api_messages(chain, conv)
    groups: list[tuple[dict[str, Any], list[str]]] = []
    position = 0
    for message in messages:
        ids: list[str] = []
        while position < len(chain) and chain[position].role == message["role"]:
            ids.append(chain[position].id)
            position += 1
        groups.append((message, ids))
    return groups


Group = tuple[dict[str, Any], list[str]]


def split_for_summary(
    groups: list[Group], index: int, direction: SummaryDirection
) -> tuple[list[Group], list[Group], list[Group]]:
    """(kept before, summarized, kept after) around the API message at ``index``, cut where the
    history stays valid: never between a tool call and its result."""
    if direction == "upTo":
        end = next(
            (j for j in range(index + 1, len(groups)) if groups[j][0]["role"] == "assistant"), len(groups)
        )
        return [], groups[:end], groups[end:]
    keep = index + 1
    if (
        groups[index][0]["role"] == "assistant"
        and tool_uses(groups[index][0]["content"])
        and keep < len(groups)
    ):
        keep += 1  # the results of the cursor's batch stay with it
    return groups[:keep], groups[keep:], []


def assemble_summary(
    before: list[Group], note: str, after: list[Group]
) -> list[tuple[str, list[dict[str, Any]]]]:
    out: list[tuple[str, list[dict[str, Any]]]] = [(m["role"], list(m["content"])) for m, _ in before]
    summary_block = {"type": "text", "text": note}
    if out and out[-1][0] == "user":
        out[-1][1].append(summary_block)
    else:
        out.append(("user", [summary_block]))
    out.extend((m["role"], list(m["content"])) for m, _ in after)
    return out
