"""Other agents' hooks (Claude Code, Gemini CLI): what Retrace writes into their settings
(``install.py``, ``settings_file.py``) and how their hook events become checkpoints.

``adapter.py`` names the interface (:class:`~retrace.app.hooks.adapter.AgentAdapter`: pure,
one agent's documented hook JSON → a :class:`~retrace.app.hooks.model.HookEvent`); one module
per agent (``claude_code.py``, ``gemini_cli.py``) and one line in ``registry.py`` each;
``service.py`` applies an event to the engine (session, turns, checkpoints). The command line
(``retrace hook <agent>``) and the server's relay method ``hook`` are its two callers.
"""
