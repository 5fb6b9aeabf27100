"""The local relay: a running Retrace server takes command-line work over a Unix domain socket.

While a server (the editor) holds a store's writer lock, ``retrace checkpoint`` (and the hook
commands after it) cannot open the store; it hands the call to that server instead. This package
is the STANDARD LIBRARY ONLY bottom layer of that hand-off, imported by the command line on its
fast path (no pydantic, no engine):

* :mod:`~retrace.relay.wire` — where the socket lives, who may use it, the framing and the cap;
* :mod:`~retrace.relay.client` — :func:`~retrace.relay.client.forward`, the command line's call;
* :mod:`~retrace.relay.server` — :class:`~retrace.relay.server.RelayServer`, the listener with a
  method table. What a method does to the engine is the server's (``retrace.lsp.services.relay``).
"""
