"""Checkpoint engine: store, capture, timeline, restore. Knows nothing of LSP or the model."""

from retrace.engine.config import EngineConfig, RetentionPolicy
from retrace.engine.engine import Engine
from retrace.engine.errors import RetraceError, UnknownCheckpoint

__all__ = ["Engine", "EngineConfig", "RetentionPolicy", "RetraceError", "UnknownCheckpoint"]
