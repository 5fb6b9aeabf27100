"""Helpers for the greeter."""


def format_greeting(name: str, punctuation: str = "!") -> str:
    """Return a friendly greeting for ``name``."""
    cleaned = name.strip() or "stranger"
    return f"Hello, {cleaned}{punctuation}"


def count_vowels(text: str) -> int:
    """Count the vowels in ``text`` (ASCII only)."""
    return sum(1 for ch in text.lower() if ch in "aeiou")
