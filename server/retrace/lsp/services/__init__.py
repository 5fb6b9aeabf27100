"""What the handlers call: read-side queries (``timeline``) and restore orchestration (``restore``)."""
