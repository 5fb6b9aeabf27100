"""Retrace's benchmark: the same deterministic agent trace through Retrace, shadow git and a floor.

Not part of the test run. ``python -m bench.run`` generates workspaces (``workspace.py``), a trace
of tool calls (``trace.py``), runs each strategy (``retrace_engine.py``, ``shadow_git.py``,
``floor.py``, all behind ``strategy.Strategy``) in its own process and writes ``RESULTS.md``.
"""
