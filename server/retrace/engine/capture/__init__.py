"""Capture: what belongs to the workspace and what changed in it, never missing a change.

Rooms: :mod:`.ignore` (rules, tool folders), :mod:`.scan` (the stat walk, reading one path),
:mod:`.fs` (paths of any depth), :mod:`.statcache` (what needs no re-hash), :mod:`.watch` (the
inotify dirty set) and :mod:`.capturer` (the orchestration the engine delegates to).
"""

from retrace.engine.capture.capturer import Capturer
from retrace.engine.capture.ignore import Ignorer, kept_by_rules

__all__ = ["Capturer", "Ignorer", "kept_by_rules"]
