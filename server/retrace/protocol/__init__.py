"""The JSON-RPC contract between the Retrace server and its clients.

``models`` declares every payload (reusing engine and agent models), ``methods`` declares every
method once, ``export`` writes ``shared-schema/`` from both.
"""
