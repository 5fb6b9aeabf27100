"""The ``retrace`` command line: the checkpoint engine (and the agent) driven headless.

``parser.py`` declares every command (argparse alone: ``--version`` and ``--help`` import nothing
else), ``main.py`` dispatches to the command's module, imported only then, and owns the error
policy, ``commands.py`` calls the engine, ``format.py`` turns engine models into text. JSON
output (``--json``) is always the engine's camelCase models dumped with
:func:`retrace.camel.dump`, so scripts see the same shapes as the JSON-RPC protocol.
"""
