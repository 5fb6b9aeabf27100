"""Fault seam of capture's file reads (:class:`~retrace.engine.fault_seam.FaultSeam`): tests
install a hook that runs at fixed points of every read of a workspace file (a writer rewriting it
in place mid-read, the path turning into a FIFO just before it is opened). Production never
installs one.

``hook(step, path)``: ``step`` is ``"open"`` (about to open the file), ``"read"`` (opened and
identified, about to take the read lease and read it; a hook may write the file here) or
``"verify"`` (read, about to read a file that is too recent or open for writing a second time
to compare); ``path`` is what is opened (absolute, or a name relative to a
directory fd for very long paths)."""

from __future__ import annotations

from retrace.engine.fault_seam import FaultSeam, Hook

__all__ = ["Hook", "fire", "injected"]

_SEAM = FaultSeam()
fire = _SEAM.fire
injected = _SEAM.injected
