"""Remote sync (package docstring kept by the sync core)."""
