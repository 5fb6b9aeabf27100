"""Subagents: the ``task`` tool's child agents.

* :mod:`.layout` — where a child's workspace copy and store live (inside the parent's store).
* :mod:`.isolation` — the child's workspace: a copy of the parent checkpoint it starts from.
* :mod:`.merge` — pure: what to do with one path given base, ours (parent disk), theirs (child).
* :mod:`.apply` — the child's net change merged into the parent's workspace (I/O).
* :mod:`.child` — one child agent run: its engine, conversation and host.
* :mod:`.runner` — the tool calls of one reply: children started together, run in parallel
  (bounded), merged in call order, each as its own ``task`` call's checkpoint.
* :mod:`.topology` — the parent's children as its journal tells them (``task`` events).
"""
