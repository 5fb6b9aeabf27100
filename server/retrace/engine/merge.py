"""Three-way text merge with diff-match-patch: the changes base→theirs applied onto ours.

Clean only when every patch applies exactly (no fuzzy placement is accepted as clean), and only
for UTF-8 text; otherwise ``None`` and the caller reports a conflict without a merge.
"""

from __future__ import annotations

from diff_match_patch import diff_match_patch

from retrace.text import decode_text

MERGE_TIMEOUT_S = 2.0
"""Budget of one file's base→theirs diff. A diff cut by it is still correct, only coarser, so the
merge can then only fail (a conflict for the user), never place a change wrongly."""


def merge3(base: bytes, ours: bytes, theirs: bytes, *, timeout_s: float = MERGE_TIMEOUT_S) -> str | None:
    """Merged text, or ``None`` when the merge is not clean or an input is not text."""
    b, o, t = decode_text(base), decode_text(ours), decode_text(theirs)
    if b is None or o is None or t is None:
        return None
    if o == b:
        return t
    if t in (b, o):
        return o
    dmp = diff_match_patch()
    dmp.Diff_Timeout = max(timeout_s, 1e-6)  # never 0: dmp reads 0 as "no limit"
    # Exact context only (a fuzzy placement is not a clean merge), found anywhere in ``ours``:
    # the huge distance makes the position penalty vanish, the tiny threshold rejects any error.
    dmp.Match_Threshold = 1e-6
    dmp.Match_Distance = 10**12
    dmp.Patch_DeleteThreshold = 0.0
    patches = dmp.patch_make(b, t)
    merged, results = dmp.patch_apply(patches, o)
    if not all(results):
        return None
    return str(merged)
