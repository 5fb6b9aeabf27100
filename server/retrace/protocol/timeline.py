"""The timeline as the client renders it: sessions → turns → checkpoint rows (``retrace/timeline/tree``).

The server decides everything a row says (title, change summary, tool status, branch marks); the
client only lays it out and formats times relative to "now". Built by :mod:`retrace.app.timeline`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import Field

from retrace.camel import CamelModel
from retrace.engine.models import Checkpoint
from retrace.protocol.tasks import TaskRef

TurnState = Literal["running", "ended", "interrupted"]
"""An external agent's turn: ``running`` (no ``turnEnd`` yet, the latest turn, life within the
idle limit), ``ended`` (its agent's stop hook came), ``interrupted`` (no stop hook came: a later
prompt did, or nothing happened for the idle limit). See ``retrace.app.timeline.agents``."""


class SessionInfo(CamelModel):
    """One session as lists show it (the chat's session picker, the timeline's session rows)."""

    id: str
    title: str
    """The session's first prompt (empty when it has none yet)."""
    created_at: datetime | None
    running: bool
    """Retrace's own session: its agent runs a turn; another agent's: its latest turn is running."""
    checkpoint_count: int
    agent: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """The agent whose hooks recorded this session (``claude-code``, ``gemini-cli``); ``None``
    for Retrace's own sessions and the workspace story."""
    agent_title: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """That agent's display name ("Claude Code", "Gemini CLI")."""
    last_activity_at: datetime | None = Field(default=None, exclude_if=lambda v: v is None)
    """Another agent's session: its newest journal event or checkpoint (``running`` turns idle
    past the limit count as interrupted)."""


class ConversationRestore(CamelModel):
    """Whether a checkpoint's conversation can be restored (modes ``conversation`` and ``both``)."""

    available: bool
    reason: str | None = None
    """Why not, in words for people ("Claude Code keeps its own conversation; Retrace restores
    only the code")."""


class RunningAgentTurn(CamelModel):
    """Another agent's turn running now: a code restore would race its tools, so it asks first."""

    agent: str
    agent_title: str
    session_id: str
    turn_id: str
    prompt: str
    """The turn's prompt, first line, at most 200 characters."""
    since: datetime | None
    """When the turn began."""
    last_activity_at: datetime | None


class StoryRow(CamelModel):
    """One checkpoint, described."""

    kind: Literal["row"] = "row"
    checkpoint: Checkpoint
    """The checkpoint without its ``editorState`` (``null`` here; ``retrace/checkpoint/get`` has it):
    a long story must stay small on the wire."""
    title: str
    """What happened, one line: "edit_file: scale.txt", "Restored code to ‘write_file: hello.txt’"."""
    summary: str
    """A short gist of the change: "‘x = 1’ → ‘x = 2’", "+3 −1", "2 files +10 −2" (may be empty)."""
    tool_status: str | None
    """The tool call's final status (ok, error, denied, interrupted…) from the journal; ``None`` for
    checkpoints that are not tool calls or whose result was never recorded."""
    is_head: bool
    branch: bool
    """A restore: later work continues on a new branch from the restored checkpoint."""
    terminal: str | None = None
    """The agent's terminal state after this checkpoint, when it differs from the default, e.g.
    "Terminal: cwd `src`, NODE_ENV=test, API_TOKEN=(not recorded)" (only allowlisted variables'
    values are recorded)."""
    conversation_restore: ConversationRestore | None = Field(default=None, exclude_if=lambda v: v is None)
    """Set when the checkpoint's conversation cannot be restored (another agent's session: its
    conversation is that agent's): clients offer code restores only and say why. ``None``: the
    usual modes are offered."""
    git_change: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """What git did during this checkpoint's call: "switched to branch feature", "committed
    abc1234", "reset to abc1234" (``app/timeline/git_rows.py``)."""
    bookmark: str | None = Field(default=None, exclude_if=lambda v: v is None)
    """The checkpoint's bookmark name (a person named it, or a mark's label): clients show the
    bookmark icon and the name (``engine/bookmarks.py``); ``None``: not a bookmark."""
    side_effects: list[str] = Field(default_factory=list, exclude_if=lambda v: not v)
    """What the call's shell command evidently did outside the workspace, which no restore
    undoes: "installs packages outside the workspace", "network write", … (``agent/side_effects.py``)."""


class StoryTurn(CamelModel):
    """One user prompt and the checkpoints its tool calls made, in commit order."""

    kind: Literal["turn"] = "turn"
    turn_id: str
    number: int
    """1-based position among the session's turns."""
    prompt: str
    """The user's prompt (full text; empty when the journal has none)."""
    created_at: datetime | None
    abandoned: bool
    """Not on the conversation's current branch any more (a conversation restore went back past it)."""
    forked_from: str | None
    """Id of the checkpoint the conversation was restored to just before this turn (a new branch)."""
    rows: list[StoryRow]
    state: TurnState | None = Field(default=None, exclude_if=lambda v: v is None)
    """Another agent's turn: running, ended or interrupted; ``None`` for Retrace's own turns
    (their session's ``running`` says it)."""


StoryItem = Annotated[StoryTurn | StoryRow, Field(discriminator="kind")]


class SessionStory(CamelModel):
    """One session's chronological story: turns, and external changes / restores in place."""

    session: SessionInfo
    workspace: bool
    """Checkpoints recorded when no agent session was active (baseline, early external changes)."""
    turn_count: int
    row_count: int
    """Every checkpoint row of the story, including those left out by paging."""
    rows_omitted: int
    """The oldest rows not sent (paging); ask for them with this session and ``before: nextBefore``."""
    items: list[StoryItem]
    next_before: str | None = None
    """The cursor for the next older page (``None``: nothing older, or an outline)."""
    outline: bool = False
    """Only the session and its counts were sent (``outline`` request): ask for its newest page with
    ``sessionId``."""


class TimelineFilter(CamelModel):
    """Rows matching every given criterion (an empty filter matches every row)."""

    tool: str | None = None
    """The tool name, exactly ("edit_file")."""
    path: str | None = None
    """A substring of a path the checkpoint changed."""
    text: str | None = None
    """A case-insensitive substring of the row's title or summary or of its turn's prompt."""
    bookmarks: bool = False
    """Only bookmarks (named checkpoints)."""


class TimelineTreeParams(CamelModel):
    session_id: str | None = None
    """Only this session's story; every session's when absent."""
    max_rows: int = Field(default=1000, ge=1, le=1_000_000)
    """At most this many rows per session (the newest are kept)."""
    before: str | None = Field(default=None, max_length=200)
    """Paging cursor (a story's ``nextBefore``: a checkpoint or turn id): only rows older than it.
    Needs ``sessionId``."""
    outline: bool = False
    """The first answer of a long history: every session's story without items (``outline: true``)
    except the newest agent session's (or ``focus``'s), which carries its newest page, and the
    workspace story while it is small (the baseline stays in sight)."""
    focus: str | None = None
    """With ``outline``: the session whose page is sent (default: the running or newest agent
    session)."""
    filter: TimelineFilter | None = None
    """Only matching rows, paged the same way; stories without a match are left out."""
    task: TaskRef | None = None
    """A subagent's own timeline instead of the workspace's (its one session's story)."""


class TimelineTreeResult(CamelModel):
    sessions: list[SessionStory]
    """Oldest first."""
    head: str | None
    head_session_id: str | None = None
    """The session whose story holds the head (load its newest page to show the head)."""
