"""The training algorithms by name: what ``algorithm:`` in a config selects.

Each algorithm declares one ``Algorithm``: its name, its config section (a dataclass that lives beside the
algorithm, with the section key it takes in a config), its entry point and what ``cockroach-train`` may pass it.
``register`` adds it; the config loader (``training.core.config``) asks this registry which sections a config may
hold and checks a config against its algorithm's rules, and ``cockroach-train`` calls the entry point. Nothing else
branches on an algorithm's name.

How the registry is filled. ``core`` imports nothing above it, so this module cannot import the algorithms. Instead,
as Gymnasium's package imports ``gymnasium.envs`` (whose ``__init__`` registers every built-in environment), the
``training`` package imports ``training.algorithms``, whose ``__init__`` imports one declaration module per
algorithm (``training.algorithms.psro_config``, ...), and each of those registers its algorithm. Any import of a
``training`` module runs the package first, so a config is never read before the built-in algorithms are known.
A declaration module is light: its section, its checks and the entry point as a ``"module:function"`` string, which
is imported when a run starts. Reading a config therefore needs neither torch nor the algorithms' code, and the
declarations import only this module and ``training.core.schema``: ``import training`` stays light.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable
from dataclasses import dataclass, is_dataclass
from typing import Any

_NAME = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True)
class Algorithm:
    """One training algorithm, as a config selects it (``algorithm: <name>``)."""

    name: str
    """The value of ``algorithm`` in a config (and in every checkpoint's metadata: never renamed)."""
    train: Callable[..., Any] | str
    """The entry point, or its ``"module:function"`` path (imported on first use). It is called as
    ``train(config, resume=, command=, progress_bar=, initial_weights=, base_run=)`` (plus ``ray_address`` and
    ``initial_population`` where declared below) and returns the path of the run's agent checkpoint.
    """
    summary: str
    """What the algorithm does, in a line (``cockroach-train --help`` lists it)."""
    section: type | None = None
    """The dataclass of the algorithm's own settings (``None``: it reads the shared sections only)."""
    section_key: str | None = None
    """The config key of ``section`` (default: the algorithm's name)."""
    check: Callable[[Any, str], None] | None = None
    """``check(config, where)``: what a config of this algorithm needs of the other sections; raises
    ``ConfigError`` (called after every section is valid on its own).
    """
    problem: Callable[[Any], str | None] | None = None
    """``problem(config)``: what ``cockroach-train`` cannot run of a valid config of this algorithm (a sentence that
    names the value and what is expected), or None.
    """
    ray: bool = False
    """``train`` takes ``ray_address`` (``cockroach-train --ray``)."""
    rollout_workers: bool = False
    """``train`` plays its rollouts on the workers of the config's ``distributed`` section (``cockroach-train --ray``
    and ``--workers`` set it); other algorithms refuse a ``distributed`` section that asks for workers.
    """
    population_start: bool = False
    """``train`` takes ``initial_population``: ``--init-from`` a mixture starts from all its members (anything else
    starts from the mixture's heaviest member).
    """

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or _NAME.fullmatch(self.name) is None:
            raise ValueError(f"algorithm name {self.name!r} is not allowed; expected lower-case letters, digits and _")
        if self.section is None and self.section_key is not None:
            raise ValueError(f"algorithm {self.name!r}: section_key={self.section_key!r} without a section")
        if self.section is not None:
            if not (isinstance(self.section, type) and is_dataclass(self.section)):
                raise ValueError(
                    f"algorithm {self.name!r}: section={self.section!r} is not allowed; expected a dataclass"
                )
            if self.section_key is None:
                object.__setattr__(self, "section_key", self.name)
            if _NAME.fullmatch(self.section_key or "") is None:
                raise ValueError(
                    f"algorithm {self.name!r}: section_key={self.section_key!r} is not allowed; expected lower-case "
                    "letters, digits and _"
                )
        if isinstance(self.train, str) and ":" not in self.train:
            raise ValueError(
                f"algorithm {self.name!r}: train={self.train!r} is not allowed; expected 'module:function'"
            )

    def trainer(self) -> Callable[..., Any]:
        """The entry point (imported from its ``"module:function"`` path the first time)."""
        if callable(self.train):
            return self.train
        module, _, function = self.train.partition(":")
        return getattr(importlib.import_module(module), function)


_ALGORITHMS: dict[str, Algorithm] = {}
_RESERVED: set[str] = set()


def reserve_keys(keys: list[str]) -> None:
    """Mark the config's shared keys (``name``, ``ppo``, ...), which no algorithm's section may take."""
    taken = sorted(set(keys) & set(sections()))
    if taken:
        raise ValueError(f"algorithm {owner(taken[0])!r}: section key {taken[0]!r} is a key shared by every algorithm")
    _RESERVED.update(keys)


def register(algorithm: Algorithm) -> Algorithm:
    """Add ``algorithm`` (its name and section key must be new); return it."""
    if algorithm.name in _ALGORITHMS:
        raise ValueError(f"algorithm {algorithm.name!r} is already registered; expected a new name")
    key = algorithm.section_key
    if key is not None:
        owner = next((a.name for a in _ALGORITHMS.values() if a.section_key == key), None)
        if key in _RESERVED or owner is not None:
            taken = f"algorithm {owner!r}'s section" if owner else "a key shared by every algorithm"
            raise ValueError(f"algorithm {algorithm.name!r}: section key {key!r} is {taken}; expected a new key")
    _ALGORITHMS[algorithm.name] = algorithm
    return algorithm


def unregister(name: str) -> None:
    """Remove the algorithm ``name`` (a test's, or a plugin's that is unloaded)."""
    if name not in _ALGORITHMS:
        raise KeyError(f"algorithm {name!r} is not registered; registered: {names()}")
    del _ALGORITHMS[name]


def names() -> list[str]:
    """The registered algorithms' names, in the order they were registered."""
    return list(_ALGORITHMS)


def get(name: str) -> Algorithm:
    """The algorithm registered as ``name`` (``KeyError`` naming the registered ones otherwise)."""
    try:
        return _ALGORITHMS[name]
    except KeyError:
        raise KeyError(f"algorithm {name!r} is not registered; registered: {names()}") from None


def sections() -> dict[str, type]:
    """``{section key: dataclass}`` of every registered algorithm that has its own settings."""
    return {a.section_key: a.section for a in _ALGORITHMS.values() if a.section is not None and a.section_key}


def owner(section_key: str) -> str:
    """The name of the algorithm whose section is ``section_key``."""
    return next(a.name for a in _ALGORITHMS.values() if a.section_key == section_key)
