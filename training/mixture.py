"""Mixture agents: a population of networks and their weights, one member drawn per game.

PSRO's result is a mixed strategy over its population. A mixture checkpoint is one
safetensors + JSON pair (kind ``"mixture"``) holding every member's weights
(``member.<k>.model.*``) and, in the metadata's ``mixture`` entry, each member's name
and weight, the meta-solver and the meta-game it solved. All members share the
network shape of the metadata's ``model``. ``training.load_agent`` loads it as a
``MixtureAgent``; so do the arena, ``cockroach-eval`` and ``cockroach-exploit``.

A mixture draws one member per game and seat, and that member plays every decision
of the seat in that game. The arena does the drawing itself (from the match seed, the
game and the seat, so results do not depend on batching or on the engine). Outside
the arena, call ``agent.new_game()`` when a game starts; ``act`` and ``act_batch``
play the member drawn last.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Sequence

import numpy as np

from cockroach_env.config import GameConfig

MEMBER_PREFIX = "member"


class MixtureAgent:
    """An agent of the ``baselines`` protocol that plays one member of a weighted population per game."""

    supports_batch = True

    def __init__(self, members: Sequence[Any], weights: Sequence[float], config: GameConfig, seed: int | None = None, name: str = "mixture"):
        weights = np.asarray(weights, np.float64)
        if len(members) == 0 or len(weights) != len(members):
            raise ValueError(f"a mixture needs one weight per member; got {len(members)} members and {len(weights)} weights")
        if (weights < 0).any() or not weights.sum() > 0 or not np.isfinite(weights).all():
            raise ValueError(f"mixture weights {weights.tolist()} are not allowed; expected finite weights >= 0 with a positive sum")
        self.members = list(members)
        self.weights = weights / weights.sum()
        self.config = config
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.current = self.draw_member(self.rng)

    def draw_member(self, rng: np.random.Generator) -> int:
        """Index of a member drawn with the mixture's weights."""
        return int(rng.choice(len(self.members), p=self.weights))

    def new_game(self) -> int:
        """Draw the member that plays the next game; returns its index."""
        self.current = self.draw_member(self.rng)
        return self.current

    @property
    def components(self) -> list[tuple[float, Any]]:
        """``(weight, member)`` pairs: the mixture interface of exact evaluation (``training.exact``), which weights each member by reach."""
        return [(float(w), m) for w, m in zip(self.weights, self.members)]

    def act(self, observation: dict) -> int:
        return int(self.members[self.current].act(observation))

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return self.members[self.current].act_batch(observations, masks)

    def __repr__(self) -> str:
        return f"MixtureAgent(name={self.name!r}, {len(self.members)} members, weights={np.round(self.weights, 3).tolist()})"


def is_mixture(agent: Any) -> bool:
    """Whether the arena should draw ``agent``'s member per game (it has ``members`` and ``weights``)."""
    return isinstance(getattr(agent, "members", None), list) and getattr(agent, "weights", None) is not None


def save_mixture_checkpoint(path: str | Path, models: Sequence[Any], weights: Sequence[float], names: Sequence[str], metadata: dict[str, Any]) -> Path:
    """Write a mixture checkpoint: every member's weights and ``metadata`` (``game_config``, ``model``, ...) plus the ``mixture`` entry."""
    from training.checkpoint import save_checkpoint

    weights = [float(w) for w in weights]
    if not (len(models) == len(weights) == len(names)) or not models:
        raise ValueError(f"a mixture checkpoint needs one weight and one name per member; got {len(models)} models, {len(weights)} weights, {len(names)} names")
    tensors = {f"{MEMBER_PREFIX}.{k}.model.{name}": value for k, model in enumerate(models) for name, value in model.state_dict().items()}
    mixture = {**metadata.get("mixture", {}), "members": [{"name": n, "weight": w} for n, w in zip(names, weights)]}
    return save_checkpoint(path, tensors, {**metadata, "kind": "mixture", "mixture": mixture})


def member_models(checkpoint, device: str = "cpu") -> list[Any]:
    """The ``ActorCritic`` of every member of a loaded mixture checkpoint."""
    from training.checkpoint import CheckpointError, build_model_from

    members = _members_entry(checkpoint)
    models = []
    for k in range(len(members)):
        prefix = f"{MEMBER_PREFIX}.{k}.model"
        if not checkpoint.group(prefix):
            raise CheckpointError(f"{checkpoint.path}: member {k} of {len(members)} has no weights ({prefix}.*) in the tensor file")
        models.append(build_model_from(checkpoint, prefix, device))
    return models


def mixture_weights(checkpoint) -> tuple[list[str], np.ndarray]:
    """Names and weights of a loaded mixture checkpoint's members."""
    members = _members_entry(checkpoint)
    return [m["name"] for m in members], np.array([m["weight"] for m in members], np.float64)


def load_mixture_agent(checkpoint, seed: int | None = None, greedy: bool = False, device: str = "cpu") -> MixtureAgent:
    from training.model import PolicyAgent

    names, weights = mixture_weights(checkpoint)
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, 2**63 - 1, size=len(names) + 1)
    game = checkpoint.game_config
    members = [PolicyAgent(model, game, seed=int(s), name=n, greedy=greedy) for model, n, s in zip(member_models(checkpoint, device), names, seeds)]
    name = checkpoint.metadata.get("name") or checkpoint.path.stem
    return MixtureAgent(members, weights, game, seed=int(seeds[-1]), name=name)


def _members_entry(checkpoint) -> list[dict[str, Any]]:
    from training.checkpoint import CheckpointError

    entry = checkpoint.metadata.get("mixture")
    members = entry.get("members") if isinstance(entry, dict) else None
    ok = isinstance(members, list) and members and all(isinstance(m, dict) and isinstance(m.get("name"), str) and isinstance(m.get("weight"), (int, float)) and m["weight"] >= 0 for m in members)
    if not ok or not sum(m["weight"] for m in members) > 0:
        raise CheckpointError(f"{checkpoint.path}: a mixture checkpoint needs mixture.members, a list of {{name, weight >= 0}} with a positive total weight; got {members!r}")
    return members
