"""The ``retrace`` command line: the checkpoint engine (and the agent) driven headless.

``main.py`` parses arguments and dispatches, ``commands.py`` calls the engine, ``format.py``
turns engine models into text. JSON output (``--json``) is always the engine's camelCase models
dumped with :func:`retrace.camel.dump`, so scripts see the same shapes as the JSON-RPC protocol.
"""
