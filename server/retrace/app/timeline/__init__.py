"""The timeline as a story: checkpoints plus journal facts → sessions → turns → described rows.

:func:`facts_from_events` folds a session journal into the facts the story needs,
:func:`build_stories` builds the tree the client renders, :mod:`.describe` words each row,
:mod:`.pages` pages and filters a built story (all pure); :mod:`.cache` keeps the build between
requests and :mod:`.persist` between server runs (the two that read or write files).
"""

from retrace.app.timeline.cache import TimelineCache, ToolLookup
from retrace.app.timeline.describe import describe
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
