"""Workspace files on the wire (``retrace/workspace/files``): the chat input's ``@`` completion.
Built by :mod:`retrace.app.workspace_files`; the client only shows the ranked paths."""

from __future__ import annotations

from pydantic import Field

from retrace.camel import CamelModel

MAX_WORKSPACE_FILES_LIMIT = 200


class WorkspaceFilesParams(CamelModel):
    query: str = Field(default="", max_length=1000)
    """What the user typed after ``@`` (empty: any file)."""
    limit: int = Field(default=50, ge=1, le=MAX_WORKSPACE_FILES_LIMIT)


class WorkspaceFilesResult(CamelModel):
    paths: list[str]
    """Workspace-relative POSIX paths of recorded (not ignored) files, best match first."""
