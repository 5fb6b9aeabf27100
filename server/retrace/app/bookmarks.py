"""Bookmarks on the timeline's rows: each row sent carries its bookmark name (the rules are
:mod:`retrace.engine.bookmarks`: which checkpoint is a bookmark, its name, the pick order)."""

from __future__ import annotations

from collections.abc import Mapping

from retrace.protocol.timeline import SessionStory, StoryRow, StoryTurn


def _named_row(row: StoryRow, named: Mapping[str, str]) -> StoryRow:
    name = named.get(row.checkpoint.id)
    return row if row.bookmark == name else row.model_copy(update={"bookmark": name})


def stamp_bookmarks(story: SessionStory, named: Mapping[str, str]) -> SessionStory:
    """``story`` with each row's ``bookmark`` as ``named`` says (O(rows sent); the built rows are
    never changed, so a name given later needs no rebuild)."""
    if not any((isinstance(i, StoryTurn) and i.rows) or isinstance(i, StoryRow) for i in story.items):
        return story
    items: list[StoryTurn | StoryRow] = [
        _named_row(i, named)
        if isinstance(i, StoryRow)
        else i.model_copy(update={"rows": [_named_row(r, named) for r in i.rows]})
        for i in story.items
    ]
    return story.model_copy(update={"items": items})
