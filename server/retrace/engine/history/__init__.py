"""The checkpoint history: the tree of checkpoints replayed from the journals, their deltas and
manifest snapshots, and every question about it (ancestry, a checkpoint's manifest, which paths
differ between two checkpoints). Damage stays local: a checkpoint whose data is damaged is
marked (``Checkpoint.damage``), everything else stays readable."""

from retrace.engine.history.graph import History
from retrace.engine.history.replay import replay

__all__ = ["History", "replay"]
