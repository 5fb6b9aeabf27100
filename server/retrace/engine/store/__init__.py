"""On-disk store of the checkpoint engine: layout, lock, content-addressed blobs, journals."""
