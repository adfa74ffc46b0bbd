"""Mixture agents: a population of networks and their weights, one member drawn per game.

PSRO's result is a mixed strategy over its population. A mixture checkpoint is one
safetensors + JSON pair (kind ``"mixture"``) holding every member's weights
(``member.<k>.model.*``) and, in the metadata's ``mixture`` entry, each member's name
and weight, the meta-solver and the meta-game it solved. All members share the
network shape of the metadata's ``model``; ``training.core.checkpoint`` writes and reads it
(``save_mixture_checkpoint``, ``member_models``, ``mixture_weights``), and
``training.load_agent`` loads it as a ``MixtureAgent``; so do the arena,
``cockroach-eval`` and ``cockroach-exploit``.

A mixture draws one member per game and seat, and that member plays every decision
of the seat in that game. The arena does the drawing itself (from the match seed, the
game and the seat, so results do not depend on batching or on the engine). Outside
the arena, call ``agent.new_game()`` when a game starts; ``act`` and ``act_batch``
play the member drawn last.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from cockroach_env.config import GameConfig


class MixtureAgent:
    """An agent of the ``baselines`` protocol that plays one member of a weighted population per game."""

    supports_batch = True

    def __init__(
        self,
        members: Sequence[Any],
        weights: Sequence[float],
        config: GameConfig,
        seed: int | None = None,
        name: str = "mixture",
    ):
        weights = np.asarray(weights, np.float64)
        if len(members) == 0 or len(weights) != len(members):
            raise ValueError(
                f"a mixture needs one weight per member; got {len(members)} members and {len(weights)} weights"
            )
        if (weights < 0).any() or not weights.sum() > 0 or not np.isfinite(weights).all():
            raise ValueError(
                f"mixture weights {weights.tolist()} are not allowed; expected finite weights >= 0 with a positive sum"
            )
        self.members = list(members)
        self.weights = weights / weights.sum()
        self.config = config
        self.name = name
        self._rng = np.random.default_rng(seed)  # (the members keep their own generators)
        self.current = self.draw_member(self._rng)

    @property
    def rng(self) -> np.random.Generator:
        """The generator of the member draws. Setting it (as ``MaskedSelfPlayEnv.reset(seed=...)`` does to reseed an
        agent) also reseeds every member that samples with its own ``rng``, from it, so that a reseeded mixture replays.
        """
        return self._rng

    @rng.setter
    def rng(self, generator: np.random.Generator) -> None:
        self._rng = generator
        for member in self.members:
            if isinstance(getattr(member, "rng", None), np.random.Generator):
                member.rng = np.random.default_rng(generator.integers(2**63))

    def draw_member(self, rng: np.random.Generator) -> int:
        """Index of a member drawn with the mixture's weights."""
        return int(rng.choice(len(self.members), p=self.weights))

    def new_game(self) -> int:
        """Draw the member that plays the next game; returns its index."""
        self.current = self.draw_member(self.rng)
        return self.current

    @property
    def components(self) -> list[tuple[float, Any]]:
        """``(weight, member)`` pairs: the mixture interface of exact evaluation (``training.evaluation.exact``), which
        weights each member by reach.
        """
        return [(float(w), m) for w, m in zip(self.weights, self.members)]

    def act(self, observation: dict) -> int:
        return int(self.members[self.current].act(observation))

    def act_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        return self.members[self.current].act_batch(observations, masks)

    def __repr__(self) -> str:
        return (
            f"MixtureAgent(name={self.name!r}, {len(self.members)} members, "
            f"weights={np.round(self.weights, 3).tolist()})"
        )


def is_mixture(agent: Any) -> bool:
    """Whether the arena should draw ``agent``'s member per game (it has ``members`` and ``weights``)."""
    return isinstance(getattr(agent, "members", None), list) and getattr(agent, "weights", None) is not None
