"""The fake Messages API's prompt cache: which input tokens a request writes to the cache, reads
from it, or pays in full, accounted the way the API documents it.

* The cache key is the exact prefix of the request in the order tools → system → messages (and
  the model): a request is cut into blocks (each tool, each system text block, each content block
  of each message, a string content being one text block), and the key of the prefix ending at a
  block is a hash chained over every block up to it (its ``cache_control`` left out, so a
  breakpoint that moved on does not change the prefix it was on).
* A breakpoint (``cache_control``) writes an entry for the prefix ending at its block, if that
  prefix holds at least the model's minimum cacheable tokens (below it the request simply is
  not cached). An entry lives 5 minutes (``ttl: "1h"``: an hour) from its last write or read.
* A request reads the longest prefix that has a live entry among the block boundaries at each of
  its breakpoints and the 19 before it (the 20-block lookback); an entry further back than that
  is not found. The entry read, and every breakpoint's own entry within the prefix read, count
  as used (their lifetime starts again).
* ``usage``: ``cache_read_input_tokens`` = the prefix read; ``cache_creation_input_tokens`` = from
  there up to the last breakpoint written; ``input_tokens`` = the rest (after the last breakpoint,
  or everything when nothing is cached). The three add up to the request's input tokens.

Tokens are estimated deterministically: a block costs ``ceil(bytes / 4)`` of its canonical JSON.
Pure apart from the clock, which the caller passes in (tests and the benchmark pass their own).
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from retrace.offline.validation import cache_ttl

LOOKBACK_BLOCKS = 20
TTL_SECONDS = {"5m": 300.0, "1h": 3600.0}

# Minimum cacheable prompt length (tokens) by model-name prefix; the first match wins.
_MINIMUM_TOKENS: tuple[tuple[str, int], ...] = (
    ("claude-opus-4-5", 4096),
    ("claude-opus-4-6", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-sonnet-4-6", 2048),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
    ("claude-haiku-3", 2048),
    ("claude", 1024),
)


def minimum_cacheable_tokens(model: str) -> int:
    """The shortest prefix (tokens) the model caches; 1024 for a model the table does not name."""
    return next((tokens for prefix, tokens in _MINIMUM_TOKENS if model.startswith(prefix)), 1024)


def estimate_tokens(value: object) -> int:
    """A deterministic token estimate: a quarter of the canonical JSON's bytes, rounded up."""
    return (len(_canonical(value)) + 3) // 4


def _canonical(value: object) -> bytes:
    return json.dumps(_without_markers(value), sort_keys=True, separators=(",", ":")).encode()


def _without_markers(value: object) -> object:
    if isinstance(value, Mapping):
        return {k: _without_markers(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without_markers(v) for v in value]
    return value


def _marker(block: object) -> str | None:
    """The TTL of a block's breakpoint (one on a tool result's own content counts for the block)."""
    if not isinstance(block, Mapping):
        return None
    marker = block.get("cache_control")
    if isinstance(marker, Mapping):
        return cache_ttl(marker)
    inner = block.get("content")
    ttls = [_marker(sub) for sub in inner] if isinstance(inner, list) else []
    return next((t for t in reversed(ttls) if t is not None), None)


@dataclass(frozen=True)
class Block:
    key: str
    """The cache key of the prefix ending with this block."""
    tokens: int
    """Input tokens of the prefix ending with this block."""
    ttl: str | None
    """The block's breakpoint TTL, ``None``: no breakpoint."""


def prefix_blocks(body: Mapping[str, Any]) -> list[Block]:
    """The request cut into blocks in cache order, each with its prefix key and size."""
    raw: list[tuple[object, object]] = []
    for tool in body.get("tools") or []:
        raw.append(("tool", tool))
    system = body.get("system")
    if isinstance(system, str) and system:
        raw.append(("system", {"type": "text", "text": system}))
    elif isinstance(system, list):
        raw.extend(("system", block) for block in system)
    for i, message in enumerate(body.get("messages") or []):
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        raw.extend(((i, message.get("role")), block) for block in blocks)
    digest = hashlib.sha256(_canonical(body.get("model")))
    total = 0
    out: list[Block] = []
    for where, block in raw:
        digest.update(_canonical([where, block]))
        total += estimate_tokens(block)
        out.append(Block(digest.copy().hexdigest(), total, _marker(block)))
    return out


@dataclass(frozen=True)
class CacheUsage:
    input_tokens: int
    cache_creation_input_tokens: int
    cache_read_input_tokens: int
    ephemeral_5m_input_tokens: int = 0
    ephemeral_1h_input_tokens: int = 0

    def usage(self, output_tokens: int) -> dict[str, Any]:
        """The ``usage`` object of a reply, in the API's shape."""
        return {
            "input_tokens": self.input_tokens,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "cache_read_input_tokens": self.cache_read_input_tokens,
            "cache_creation": {
                "ephemeral_5m_input_tokens": self.ephemeral_5m_input_tokens,
                "ephemeral_1h_input_tokens": self.ephemeral_1h_input_tokens,
            },
            "output_tokens": output_tokens,
            "service_tier": "standard",
        }


class PromptCache:
    """The cache entries of one fake API (thread-safe): key → expiry time and TTL."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self._clock = clock
        self._entries: dict[str, tuple[float, str]] = {}
        self._lock = threading.Lock()

    def account(self, body: Mapping[str, Any]) -> CacheUsage:
        """Read and write the cache for one request; the input tokens it is billed for."""
        blocks = prefix_blocks(body)
        total = blocks[-1].tokens if blocks else 0
        marks = [i for i, b in enumerate(blocks) if b.ttl is not None]
        minimum = minimum_cacheable_tokens(str(body.get("model") or ""))
        with self._lock:
            now = self._clock()
            read = self._longest_hit(blocks, marks, now)
            used = [i for i in [*marks, read] if 0 <= i <= read and self._live(blocks[i].key, now)]
            for i in used:
                ttl = self._entries[blocks[i].key][1]
                self._entries[blocks[i].key] = (now + TTL_SECONDS[ttl], ttl)
            written = [i for i in marks if i > read and blocks[i].tokens >= minimum]
            for i in written:
                ttl = blocks[i].ttl or "5m"
                self._entries[blocks[i].key] = (now + TTL_SECONDS[ttl], ttl)
        read_tokens = blocks[read].tokens if read >= 0 else 0
        by_ttl = {"5m": 0, "1h": 0}
        start = read_tokens
        for i in written:
            by_ttl[blocks[i].ttl or "5m"] += blocks[i].tokens - start
            start = blocks[i].tokens
        return CacheUsage(
            input_tokens=total - start,
            cache_creation_input_tokens=start - read_tokens,
            cache_read_input_tokens=read_tokens,
            ephemeral_5m_input_tokens=by_ttl["5m"],
            ephemeral_1h_input_tokens=by_ttl["1h"],
        )

    def _longest_hit(self, blocks: list[Block], marks: list[int], now: float) -> int:
        """The last block of the longest live cached prefix within the lookback, else -1."""
        candidates = {k for m in marks for k in range(max(0, m - LOOKBACK_BLOCKS + 1), m + 1)}
        return next((i for i in sorted(candidates, reverse=True) if self._live(blocks[i].key, now)), -1)

    def _live(self, key: str, now: float) -> bool:
        entry = self._entries.get(key)
        return entry is not None and entry[0] > now
