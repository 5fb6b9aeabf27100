"""The server's features, one module each, every one a :class:`retrace.lsp.feature_lifecycle.Feature`.

A feature adapts a service (``lsp/services/``) to the server's lifecycle: what it starts, which
agent events and settings it follows, what it stops. The composition root
(:func:`retrace.lsp.main.create_server`) builds them once, in the order documented there. Nothing
in the server (host, settings, start-up, shutdown) names a feature: add one with a module here
and one line in that list.
"""
