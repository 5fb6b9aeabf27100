"""Checkpoint engine: store, capture, timeline, restore. Knows nothing of LSP or the model.

The names below are resolved on first use (PEP 562): importing one light module of the engine
(``retrace.engine.errors``, ``retrace.engine.store.layout``) must not import all of it, so a
command that needs only those starts fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrace.lazy import lazy_attributes

if TYPE_CHECKING:
    from retrace.engine.config import EngineConfig, RetentionPolicy
    from retrace.engine.engine import Engine
    from retrace.engine.errors import RetraceError, UnknownCheckpoint

__all__ = ["Engine", "EngineConfig", "RetentionPolicy", "RetraceError", "UnknownCheckpoint"]

_HOME = {
    "Engine": "retrace.engine.engine",
    "EngineConfig": "retrace.engine.config",
    "RetentionPolicy": "retrace.engine.config",
    "RetraceError": "retrace.engine.errors",
    "UnknownCheckpoint": "retrace.engine.errors",
}


__getattr__ = lazy_attributes(__name__, _HOME)
