"""Metrics of a store, kept for the server and the CLI alike (Prometheus conventions).

``facts`` folds the journals (pure), ``storage`` measures the store against its budget (alert
levels, crossings, the time series), ``collect`` builds the one :class:`Collected` and its
structured snapshot, ``exposition`` the Prometheus text through ``prometheus_client``, ``http``
the opt-in scrape endpoint on 127.0.0.1.
"""
