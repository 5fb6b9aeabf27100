"""How big an object read from a bucket may be, one named limit per kind of object.

Whoever can write the bucket chooses what it holds, so nothing is trusted for size: each read
names its kind's limit, :meth:`~retrace.sync.objects.Bucket.get` refuses an object the server
says is bigger before reading its body and stops reading one that grows past it, and the callers
check the sizes a LIST or an index declares before any download. Each limit is far above what
Retrace itself writes (the comments say why), so a refusal means a foreign or damaged object.
"""

from __future__ import annotations

SEGMENT_CUT_BYTES = 8 << 20
"""A pusher cuts a journal into segments of at most this many bytes (at newlines)."""
SEGMENT_BYTES = 64 << 20
"""A segment's journal bytes: a single journal line longer than the cut is one segment, and no
line Retrace writes comes near this."""
JOURNAL_BYTES = 2 << 30
"""One session's journal as opened or pulled from a bucket (the sum of its segments)."""
INDEX_BYTES = 64 << 20
"""A pack index: 52 bytes an entry, over a million blobs in one pack."""
INDEX_ENTRIES = INDEX_BYTES // 52
PACK_BYTES = 1 << 30
"""A pack object read whole (packs are built up to 64 MiB; a single bigger blob is a pack of
its own, and is read one entry at a time where the server honours ``Range``)."""
CARD_BYTES = 64 << 10
"""A store card (``stores/<id>.json``: machine, workspace name and path)."""
MARK_BYTES = 64 << 10
"""A condemned mark or the GC clock object."""
SNAPSHOT_BYTES = 1 << 30
"""A manifest snapshot the remote GC reads (decompressed): a path, a hash and a few fields per
file, so millions of files."""
