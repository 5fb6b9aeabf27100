"""Other agents' hooks (Claude Code, Gemini CLI): what Retrace writes into their settings
(``install.py``, ``settings_file.py``) and, elsewhere in this package, how their hook events are read."""
