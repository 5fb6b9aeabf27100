"""A store's statistics, ONE pipeline for the CLI's ``retrace stats``, the server's status bar
(``retrace/stats``), ``retrace metrics`` and the Health panel.

Below ``app/`` so that the one-shot CLI reads them without importing the application, the
protocol or the agent. Read from files only (no engine, no lock):

* ``journal_fold`` — pure: what the journals say happened (checkpoints, restores, subagents, tool
  calls), folded into :class:`~retrace.engine.store_stats.journal_fold.Facts`;
* ``journal_reader`` — each journal's wanted typed events, read on incrementally through a
  journal cursor (a long-lived reader parses only what was appended);
* ``storage_usage`` — THE storage figure: bytes by kind, subagent stores included;
* ``store_figures`` — the store's figures (:class:`~retrace.engine.models.StoreStats`) built from
  the three above and the blob store's count.
"""
