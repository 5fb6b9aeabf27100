"""Metrics of a store, kept for the server and the CLI alike (Prometheus conventions).

The journals' fold, their incremental reader and the storage figure live below, in
:mod:`retrace.engine.store_stats` (shared with ``retrace stats``); here ``storage`` holds the store
against its budget (alert levels, crossings, the time series), ``status_figures`` the status
bar's answer, ``collect`` builds the one :class:`Collected` and its
structured snapshot, ``exposition`` the Prometheus text through ``prometheus_client``, ``http``
the opt-in scrape endpoint on 127.0.0.1.
"""
