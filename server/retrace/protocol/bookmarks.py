"""Bookmarks on the wire: ``retrace/bookmark/create`` (a named checkpoint of the state now) and
``retrace/bookmark/name`` (name an existing checkpoint; an empty name removes it). Names are
checked by the server (``engine/bookmark_name.py``); the client only asks for them."""

from __future__ import annotations

from pydantic import Field

from retrace.camel import CamelModel
from retrace.engine.models import Checkpoint


class Bookmark(CamelModel):
    """A named checkpoint."""

    checkpoint_id: str
    name: str


class BookmarkCreateParams(CamelModel):
    name: str = Field(max_length=1000)
    """As typed (checked by the server: not empty, at most 100 characters, one line)."""


class BookmarkCreateResult(CamelModel):
    checkpoint: Checkpoint
    """The ``manual`` checkpoint recorded (no file captured while an agent's turn runs: it names
    the state the turn's last checkpoint recorded, ``meta.duringTurn``)."""
    name: str


class BookmarkNameParams(CamelModel):
    checkpoint_id: str = Field(min_length=1, max_length=200)
    """A checkpoint id or a unique prefix of one."""
    name: str = Field(max_length=1000)
    """The new name; empty removes the name (the checkpoint is no bookmark any more)."""


class BookmarkNameResult(CamelModel):
    checkpoint_id: str
    name: str | None
    """The bookmark name now (``None``: none)."""
