"""Baselines by name: ``make(name, config, seed=...)``."""

from __future__ import annotations

from collections.abc import Callable

from baselines.agent import Agent
from baselines.counter import CounterAgent
from baselines.heuristic import HeuristicAgent
from baselines.scripted import BlufferAgent, HonestAgent, RandomAgent
from cockroach_env.config import GameConfig

_REGISTRY: dict[str, Callable[..., Agent]] = {
    "random": RandomAgent,
    "honest": HonestAgent,
    "bluffer": BlufferAgent,
    "heuristic": HeuristicAgent,
    "counter": CounterAgent,
}
BUILT_IN = frozenset(_REGISTRY)


def names() -> list[str]:
    """The registered baseline names."""
    return sorted(_REGISTRY)


def register(name: str, factory: Callable[..., Agent]) -> None:
    """Add a baseline: ``factory(config, seed=...)`` must return an agent."""
    if not isinstance(name, str) or not name or ":" in name or "*" in name:
        raise ValueError(f"baseline name {name!r} is not allowed; expected a non-empty string without ':' or '*'")
    _REGISTRY[name] = factory


def unregister(name: str) -> None:
    """Remove a baseline added with ``register`` (the built-in ones stay)."""
    if name in BUILT_IN:
        raise ValueError(f"baseline {name!r} is built in and cannot be removed; expected one added with register()")
    if name not in _REGISTRY:
        raise ValueError(f"unknown baseline {name!r}; expected one of {names()}")
    del _REGISTRY[name]


def make(name: str, config: GameConfig | None = None, seed: int | None = None) -> Agent:
    """Build the baseline ``name`` for ``config`` (default: 4-player classic) with its own seeded generator."""
    if name not in _REGISTRY:
        raise ValueError(f"unknown baseline {name!r}; expected one of {names()}")
    return _REGISTRY[name](config if config is not None else GameConfig(), seed=seed)
