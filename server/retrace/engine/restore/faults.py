"""Fault seam of the disk applier (:class:`~retrace.engine.fault_seam.FaultSeam`): tests install
a hook that runs just before each rename or unlink the applier performs (a concurrent writer, a
parent swapped for a symlink, a crash). Production never installs one.

``hook(step, path)``: ``step`` is ``"replace"``, ``"create"``, ``"delete"``, ``"chmod"``,
``"rollback"``, ``"prune"`` or ``"write"`` (a temporary file about to be written, possibly on a
writer thread); ``path`` is workspace-relative."""

from __future__ import annotations

from retrace.engine.fault_seam import FaultSeam, Hook

__all__ = ["Hook", "fire", "injected"]

_SEAM = FaultSeam()
fire = _SEAM.fire
injected = _SEAM.injected
