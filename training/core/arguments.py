"""argparse types of the command lines: each refuses a bad value with a message that names it and what was expected."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def _parsed(text: str, kind: Callable, noun: str, ok: Callable, expected: str):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {noun}; expected {expected}") from None
    if not ok(value):
        raise argparse.ArgumentTypeError(f"{value} is not allowed; expected {expected}")
    return value


def positive_integer(text: str) -> int:
    """An integer >= 1."""
    return _parsed(text, int, "an integer", lambda v: v >= 1, "an integer >= 1")


def unit_weight(text: str) -> float:
    """A number in [0, 1]."""
    return _parsed(text, float, "a number", lambda v: 0.0 <= v <= 1.0, "a weight in [0, 1]")


def thread_count(text: str) -> int:
    """``--torch-threads``: 0 (torch's default) or a positive count."""
    return _parsed(text, int, "a whole number", lambda v: v >= 0, "0 (torch's default) or a positive thread count")


def seed(text: str) -> int:
    """A seed: an integer from 0 to 2**64 - 1 (what ``numpy.random.default_rng`` and ``SeedSequence`` take)."""
    return _parsed(text, int, "an integer", lambda v: 0 <= v < 2**64, "an integer from 0 to 2**64 - 1")
