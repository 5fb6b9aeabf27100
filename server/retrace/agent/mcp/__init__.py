"""MCP tools: the tools of configured MCP servers, offered to the model next to the built-in ones.

:mod:`.config` validates the ``servers`` map (the shape VS Code's ``mcp.json`` uses) and names
the tools; :mod:`.connection` runs one server through the official MCP Python SDK (stdio or
streamable HTTP); :mod:`.toolset` starts the servers lazily, turns their tools into
:class:`~retrace.agent.tools.ToolSpec` entries (category ``mcp``) and stops them at shutdown;
:mod:`.results` maps a tool's result to ``tool_result`` text.
"""
