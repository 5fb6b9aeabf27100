"""What a call to an Anthropic model costs (USD), by model name; the table is kept by hand from
the published prices. Other providers' prices are unknown here (their clients say ``None``)."""

from __future__ import annotations

# USD per million tokens (input, output), by model-name prefix; the first match wins.
_PRICES: tuple[tuple[str, float, float], ...] = (
    ("claude-opus-4-1", 15.0, 75.0),
    ("claude-opus-4-0", 15.0, 75.0),
    ("claude-opus-4", 5.0, 25.0),
    ("claude-haiku", 1.0, 5.0),
    ("claude-3-5-haiku", 0.8, 4.0),
    ("claude", 3.0, 15.0),
)


CACHE_WRITE_FACTOR = 1.25
"""A prompt-cache write (5-minute entry) costs this times the input price."""
CACHE_READ_FACTOR = 0.1
"""A prompt-cache read costs this times the input price."""


def prices(model: str) -> tuple[float, float]:
    """(input, output) USD per million tokens."""
    return next(((i, o) for prefix, i, o in _PRICES if model.startswith(prefix)), (3.0, 15.0))


def cost_usd(
    model: str, input_tokens: int, output_tokens: int, cache_write_tokens: int = 0, cache_read_tokens: int = 0
) -> float:
    """The cost of one call; ``input_tokens`` are the uncached ones (the API's ``input_tokens``)."""
    price_in, price_out = prices(model)
    billed_in = input_tokens + CACHE_WRITE_FACTOR * cache_write_tokens + CACHE_READ_FACTOR * cache_read_tokens
    return (billed_in * price_in + output_tokens * price_out) / 1_000_000
