"""NFSP's settings (the ``nfsp`` section of a training config) and its entry in the algorithm registry
(``training.core.registry``): ``algorithm: nfsp``, trained by ``training.algorithms.nfsp``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from training.core.registry import Algorithm, register
from training.core.schema import require, require_learning_rate

if TYPE_CHECKING:
    from training.core.config import TrainConfig


@dataclass
class NFSPConfig:
    """Neural fictitious self-play (``algorithm: nfsp``, ``training.algorithms.nfsp``): the PPO policy is the best
    response, and an average policy is fitted to all its past decisions; ``opponents.population`` is the weight of the
    tables against the average policy.
    """

    reservoir_size: int = 3_000_000
    """Decisions of the best response kept for the average policy's supervised learning: a uniform sample of all its
    decisions since the run began (reservoir sampling). About 160 bytes each on 4 players, in memory and in the run
    checkpoint.
    """
    sl_steps: int = 4
    """Supervised steps (cross-entropy on the reservoir) of the average policy per PPO update."""
    sl_batch_size: int = 4096
    """Reservoir decisions per supervised step (drawn with replacement); no step runs before the reservoir holds this
    many.
    """
    sl_learning_rate: float = 3e-4
    """Adam learning rate of the average policy."""

    def validate(self, where: str) -> None:
        for name in ("reservoir_size", "sl_batch_size"):
            require(where, name, getattr(self, name), getattr(self, name) >= 1, "an integer >= 1")
        require(where, "sl_steps", self.sl_steps, self.sl_steps >= 0, "an integer >= 0")
        require_learning_rate(where, "sl_learning_rate", self.sl_learning_rate)
        require(
            where,
            "sl_batch_size",
            self.sl_batch_size,
            self.sl_batch_size <= self.reservoir_size,
            f"an integer <= reservoir_size ({self.reservoir_size})",
        )


def check(config: TrainConfig, where: str) -> None:
    """The best response plays the average policy at ``opponents.population``'s tables, so that weight is needed."""
    require(
        f"{where}: opponents",
        "population",
        config.opponents.population,
        config.opponents.population > 0,
        "a weight > 0 with algorithm: nfsp (the share of the best response's tables against the average policy)",
    )


ALGORITHM = register(
    Algorithm(
        name="nfsp",
        train="training.algorithms.nfsp:train",
        summary="neural fictitious self-play: PPO's best response and an average policy (training.algorithms.nfsp)",
        section=NFSPConfig,
        check=check,
        rollout_workers=True,
    )
)
