"""A lineup's agents for the arena (``training.evaluation.arena``, whose docstring describes the entries): each
entry resolved to an agent (a baseline, ``module:Class``, a checkpoint, a Stable-Baselines3 model or an object),
checked against the agent protocol, and equal entries gathered into one ``Entrant``.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from cockroach_env.config import MAX_PLAYERS, GameConfig
from training.core.checkpoint.format import SHIPPED_DIR
from training.core.config import quoted


class ArenaError(ValueError):
    """Bad arena input or a misbehaving agent; the message names the agent and the problem."""


_REPEAT = re.compile(r"^(?P<spec>.+)\*(?P<count>\d+)$")


def expand_lineup(entries: Sequence[Any]) -> list[Any]:
    """Expand ``"NAME*K"`` entries into ``K`` copies; other entries are kept as they are."""
    out: list[Any] = []
    for entry in entries:
        match = _REPEAT.match(entry) if isinstance(entry, str) else None
        if match:
            count = int(match["count"])
            if not 1 <= count <= MAX_PLAYERS:
                raise ArenaError(
                    f"agent {quoted(entry)}: the repeat count must be from 1 to {MAX_PLAYERS} (MAX_PLAYERS, the "
                    f"largest table)"
                )
            out.extend([match["spec"]] * count)
        elif isinstance(entry, str) and "*" in entry and not os.path.exists(entry):
            raise ArenaError(
                f"agent {entry!r}: expected NAME*K with K a whole number of seats (e.g. 'random*3'), got "
                f"{entry.rpartition('*')[2]!r} after '*'"
            )
        else:
            out.append(entry)
    return out


def resolve_agent(spec: Any, config: GameConfig, seed: int | None = None) -> Any:
    """Build the agent an arena entry names (see the module docstring); ``ArenaError`` if impossible."""
    if not isinstance(spec, str):
        _check_agent(spec, label_of(spec), config)
        return spec
    import baselines

    if spec in baselines.names():
        return baselines.make(spec, config, seed=seed)
    if _looks_like_class(spec):
        return _agent_from_class(spec, config, seed)
    if spec.endswith(".zip"):
        return _agent_from_sb3(spec, config, seed)
    if _looks_like_path(spec) or os.path.exists(spec + ".json") or _is_shipped_checkpoint(spec):
        return _agent_from_checkpoint(spec, config, seed)
    raise ArenaError(
        f"unknown agent {spec!r}: not a baseline (expected one of {baselines.names()}), "
        f"not an importable 'module:Class', and no checkpoint file or shipped checkpoint of that name"
    )


def _looks_like_class(spec: str) -> bool:
    module, sep, attr = spec.partition(":")
    return (
        bool(sep)
        and bool(module)
        and bool(attr)
        and not os.path.exists(spec)
        and re.fullmatch(r"[\w.]+", module) is not None
    )


def _agent_from_class(spec: str, config: GameConfig, seed: int | None) -> Any:
    module_name, _, attr = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # noqa: BLE001 - any import failure is reported with the spec
        raise ArenaError(
            f"agent {spec!r}: cannot import module {module_name!r} ({type(error).__name__}: {error})"
        ) from error
    target: Any = module
    for part in attr.split("."):
        if not hasattr(target, part):
            raise ArenaError(f"agent {spec!r}: module {module_name!r} has no attribute {attr!r}")
        target = getattr(target, part)
    try:
        agent = target(config, seed=seed) if callable(target) else target
    except Exception as error:  # noqa: BLE001
        raise ArenaError(
            f"agent {spec!r}: {attr}(config, seed=...) failed ({type(error).__name__}: {error})"
        ) from error
    _check_agent(agent, spec, config)
    return agent


def _looks_like_path(spec: str) -> bool:
    return (
        os.path.exists(spec)
        or "/" in spec
        or os.sep in spec
        or spec.endswith((".json", ".safetensors"))
        or spec.startswith(("~", "."))
    )


def _is_shipped_checkpoint(spec: str) -> bool:
    if "/" in spec or os.sep in spec:
        return False
    try:
        from importlib import resources

        folder = resources.files("training") / SHIPPED_DIR
        return (folder / f"{spec}.json").is_file()
    except Exception:  # noqa: BLE001 - no shipped checkpoints
        return False


def _agent_from_checkpoint(spec: str, config: GameConfig, seed: int | None) -> Any:
    try:
        from training.core.checkpoint import load_agent
    except ImportError as error:
        raise ArenaError(f"agent {spec!r}: checkpoints need training.core.checkpoint and torch ({error})") from error
    try:
        agent = load_agent(spec, seed=seed, config=config)
    except Exception as error:  # noqa: BLE001 - unreadable or incompatible checkpoint
        raise ArenaError(f"agent {spec!r}: cannot load the checkpoint ({type(error).__name__}: {error})") from error
    _check_agent(agent, spec, config)
    return agent


def _agent_from_sb3(spec: str, config: GameConfig, seed: int | None) -> Any:
    """A Stable-Baselines3 ``.zip`` model (see ``training.evaluation.sb3_agent``)."""
    try:
        from training.evaluation.sb3_agent import load_sb3_agent

        agent = load_sb3_agent(spec, config, seed=seed)
    except Exception as error:  # noqa: BLE001 - missing library, unreadable or mismatched model
        raise ArenaError(
            f"agent {spec!r}: cannot load the Stable-Baselines3 model ({type(error).__name__}: {error})"
        ) from error
    _check_agent(agent, spec, config)
    return agent


def _check_agent(agent: Any, label: str, config: GameConfig) -> None:
    if not callable(getattr(agent, "act", None)):
        raise ArenaError(f"agent {label!r}: {type(agent).__name__} has no act(observation) method; see baselines.Agent")
    built_for = getattr(agent, "config", None)
    if isinstance(built_for, GameConfig) and built_for != config:
        raise ArenaError(
            f"agent {label!r} was built for {built_for} but the games here are {config}; build it for the "
            f"arena's GameConfig"
        )
    if getattr(agent, "supports_batch", False) and not callable(getattr(agent, "act_batch", None)):
        raise ArenaError(
            f"agent {label!r}: supports_batch is set but there is no act_batch(observations, masks) method"
        )


def label_of(agent: Any) -> str:
    """An agent's label in reports: its ``name``, else its class's name."""
    return str(getattr(agent, "name", None) or type(agent).__name__)


@dataclass
class Entrant:
    """One distinct agent of a lineup and the lineup entries (seats) it plays."""

    name: str
    spec: str
    agent: Any
    entries: list[int]

    @property
    def supports_batch(self) -> bool:
        return bool(getattr(self.agent, "supports_batch", False)) and callable(getattr(self.agent, "act_batch", None))


def _agent_seed(seed: int, index: int) -> int:
    return int(np.random.SeedSequence([seed, 7919, index]).generate_state(1)[0])


def build_entrants(lineup: Sequence[Any], config: GameConfig, seed: int) -> tuple[list[Entrant], list[int]]:
    """Resolve a lineup (already expanded) into entrants; returns them and the entrant of each entry."""
    if len(lineup) != config.num_players:
        raise ArenaError(
            f"the lineup has {len(lineup)} agent(s) for {config.num_players} seats; list one agent per seat "
            f"(repeat one with NAME*K, e.g. 'heuristic random*{config.num_players - 1}')"
        )
    entrants: list[Entrant] = []
    key_of: dict[Any, int] = {}
    of_entry: list[int] = []
    for entry_index, entry in enumerate(lineup):
        key = entry if isinstance(entry, str) else ("object", id(entry))
        if key not in key_of:
            key_of[key] = len(entrants)
            agent = resolve_agent(entry, config, seed=_agent_seed(seed, len(entrants)))
            spec = entry if isinstance(entry, str) else f"<{type(entry).__name__}>"
            entrants.append(Entrant(label_of(agent), spec, agent, []))
        of_entry.append(key_of[key])
        entrants[key_of[key]].entries.append(entry_index)
    taken: dict[str, int] = {}
    for entrant in entrants:  # unique names for the report
        count = taken.get(entrant.name, 0)
        taken[entrant.name] = count + 1
        if count:
            entrant.name = f"{entrant.name}#{count + 1}"
    return entrants, of_entry
