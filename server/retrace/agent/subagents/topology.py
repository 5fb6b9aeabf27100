"""Pure: a parent session's children as its journal tells them.

Every child writes a ``task`` event when it starts (``running``) and one when it ends; the last
event of a ``task_id`` is its state. A child still ``running`` in a journal nobody is writing
was cut off by a crash: crash resume journals it ``interrupted`` (its parent's ``task`` call is
interrupted too, never re-run), and its own timeline stays for the user to apply or discard.
"""

from __future__ import annotations

from collections.abc import Iterable

from retrace.engine.store.events import JournalEvent, TaskEvent


def fold(events: Iterable[JournalEvent]) -> dict[str, TaskEvent]:
    """Each child's latest ``task`` event by task id, in the order the children started (a
    resumed child's ``running`` follows its earlier end; a damaged line never reaches here:
    that child's state is its previous event's)."""
    tasks: dict[str, TaskEvent] = {}
    for event in events:
        if isinstance(event, TaskEvent):
            tasks[event.task_id] = event
    return tasks


def cut_off(tasks: dict[str, TaskEvent]) -> list[TaskEvent]:
    """The children a crash left ``running``."""
    return [t for t in tasks.values() if t.status == "running"]
