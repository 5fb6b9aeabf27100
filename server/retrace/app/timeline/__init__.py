"""The timeline as a story: checkpoints plus journal facts → sessions → turns → described rows.

:func:`facts_from_events` folds a session journal into the facts the story needs,
:func:`build_stories` builds the tree the client renders, :mod:`.describe` words each row,
:mod:`.pages` pages and filters a built story (all pure); :mod:`.cache` keeps the build between
requests and :mod:`.persist` between server runs (the two that read or write files).

The names below are resolved on first use (PEP 562): ``retrace restore`` needs only
:mod:`.agents` (is another agent's turn running?), and importing the package must not build the
story's and the protocol's models (~0.1 s of the command's start-up).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

# Imported now: the function has its module's name, and a submodule imported later would
# otherwise take that name in the package (``from retrace.app.timeline import describe`` would
# give the module). Light: the facts and the engine's models only.
from retrace.app.timeline.describe import describe
from retrace.lazy import lazy_attributes

if TYPE_CHECKING:
    from retrace.app.timeline.cache import TimelineCache, ToolLookup
    from retrace.app.timeline.facts import SessionFacts, ToolFact, TurnFact, facts_from_events
    from retrace.app.timeline.pages import StoryPages, UnknownCursorError, matcher, select
    from retrace.app.timeline.story import build_stories, timeline_change

__all__ = [
    "SessionFacts",
    "StoryPages",
    "TimelineCache",
    "ToolFact",
    "ToolLookup",
    "TurnFact",
    "UnknownCursorError",
    "build_stories",
    "describe",
    "facts_from_events",
    "matcher",
    "select",
    "timeline_change",
]

_HOME = {
    "TimelineCache": "retrace.app.timeline.cache",
    "ToolLookup": "retrace.app.timeline.cache",
    "SessionFacts": "retrace.app.timeline.facts",
    "ToolFact": "retrace.app.timeline.facts",
    "TurnFact": "retrace.app.timeline.facts",
    "facts_from_events": "retrace.app.timeline.facts",
    "StoryPages": "retrace.app.timeline.pages",
    "UnknownCursorError": "retrace.app.timeline.pages",
    "matcher": "retrace.app.timeline.pages",
    "select": "retrace.app.timeline.pages",
    "build_stories": "retrace.app.timeline.story",
    "timeline_change": "retrace.app.timeline.story",
}

__getattr__ = lazy_attributes(__name__, _HOME)
