"""argparse types of the command lines: each refuses a bad value with a message that names it and what was expected."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from training.core.config import MAX_GAMES, MAX_TORCH_THREADS, cut, quoted


def _parsed(text: str, kind: Callable, noun: str, ok: Callable, expected: str):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{quoted(text)} is not {noun}; expected {expected}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"{cut(value)} is not allowed; expected {expected}")
    return value


def positive_integer(text: str) -> int:
    """An integer >= 1."""
    return _parsed(text, int, "an integer", lambda v: v >= 1, "an integer >= 1")


def unit_weight(text: str) -> float:
    """A number in [0, 1]."""
    return _parsed(text, float, "a number", lambda v: 0.0 <= v <= 1.0, "a weight in [0, 1]")


def thread_count(text: str) -> int:
    """``--torch-threads``: 0 (torch's default) or a positive count up to ``MAX_TORCH_THREADS``."""
    return _parsed(
        text,
        int,
        "a whole number",
        lambda v: 0 <= v <= MAX_TORCH_THREADS,
        f"0 (torch's default) or a positive thread count up to MAX_TORCH_THREADS={MAX_TORCH_THREADS}",
    )


def game_count(text: str) -> int:
    """A number of games: an integer from 1 to ``MAX_GAMES``."""
    return _parsed(text, int, "an integer", lambda v: 1 <= v <= MAX_GAMES, f"an integer from 1 to {MAX_GAMES:,}")


def seed(text: str) -> int:
    """A seed: an integer from 0 to 2**64 - 1 (what ``numpy.random.default_rng`` and ``SeedSequence`` take)."""
    return _parsed(text, int, "an integer", lambda v: 0 <= v < 2**64, "an integer from 0 to 2**64 - 1")
