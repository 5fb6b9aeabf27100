"""The order of checkpoints: their creation order, never their ids or their timestamps.

Ids and ``createdAt`` come from clocks (another machine's, or ours when it was wrong) and from
journals (untrusted): neither may decide what is newer. The order is:

* parents before children, always (replay rebuilds a manifest from its parent's);
* other machines' checkpoints first (by id: their own order as far as it can be known), then
  this store's, by local creation number (:mod:`.origin`). Retention drops from the front, so
  a session opened from a bucket (which the bucket still holds) goes before local work, and
  the newest local checkpoints are the last to go.

A parent chain that loops (only a forged or damaged journal can make one) is cut: its members
are returned apart, as damage, so every walk up an ancestry ends.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping


def order_key(seqs: Mapping[str, int]) -> Callable[[str], tuple[int, int, str]]:
    """Sort key: foreign (by id), then local (by creation number)."""

    def key(cid: str) -> tuple[int, int, str]:
        seq = seqs.get(cid)
        return (0, 0, cid) if seq is None else (1, seq, cid)

    return key


def creation_order(
    ids: Iterable[str], parent_of: Callable[[str], str | None], seqs: Mapping[str, int]
) -> tuple[list[str], set[str]]:
    """(``ids`` in creation order, the ids caught in a parent loop). ``parent_of``: a
    checkpoint's parent id (possibly one not among ``ids``); ``seqs``: local creation numbers."""
    todo = set(ids)
    key = order_key(seqs)
    ranked = sorted(todo, key=key)
    # The common case (every store this engine wrote): the ranking already puts parents first.
    seen: set[str] = set()
    for cid in ranked:
        parent = parent_of(cid)
        if parent is not None and parent in todo and parent not in seen:
            break
        seen.add(cid)
    else:
        return ranked, set()
    return _placed(ranked, todo, parent_of)


def _placed(
    ranked: list[str], todo: set[str], parent_of: Callable[[str], str | None]
) -> tuple[list[str], set[str]]:
    """:func:`creation_order` when some parent ranks after its child: each checkpoint in rank
    order, its missing ancestors placed first (an explicit stack: chains can be long)."""
    done: set[str] = set()
    on_path: set[str] = set()
    out: list[str] = []
    looped: set[str] = set()
    for start in ranked:
        stack = [start]
        while stack:
            cid = stack[-1]
            if cid in done:
                stack.pop()
                continue
            on_path.add(cid)
            parent = parent_of(cid)
            if parent is not None and parent in todo and parent not in done:
                if parent not in on_path:
                    stack.append(parent)  # place the parent first
                    continue
                looped.update(stack[stack.index(parent) :])
            stack.pop()
            on_path.discard(cid)
            done.add(cid)
            out.append(cid)
    return [c for c in out if c not in looped], looped
