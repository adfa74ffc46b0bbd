"""PSRO's settings (the ``psro`` section of a training config) and its entry in the algorithm registry
(``training.core.registry``): ``algorithm: psro``, trained by ``training.algorithms.psro``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from training.core.registry import Algorithm, register
from training.core.schema import require

if TYPE_CHECKING:
    from training.core.config import TrainConfig

META_SOLVERS = ("alpharank", "prd", "regret_matching", "uniform")
"""The meta-solvers of PSRO's meta-game, by name (``training.algorithms.meta_solvers.SOLVERS`` implements them)."""


@dataclass
class PSROConfig:
    """Policy-space response oracles (``algorithm: psro``): a population, its meta-game and a best response per
    iteration (``training.algorithms.psro``).
    """

    iterations: int = 10
    """PSRO iterations; each adds ``best_responses_per_iteration`` members to the population."""
    best_responses_per_iteration: int = 1
    """Best responses trained per iteration against the same meta-strategy, with different seeds (in parallel with
    ``--ray``).
    """
    best_response_decisions: int = 2_000_000
    """Environment decisions of each best response (a PPO run with the ``ppo`` settings, against the meta-strategy in
    every other seat).
    """
    warm_start: bool = True
    """Start each best response from the newest member's weights (else from a fresh network)."""
    payoff_games: int = 400
    """Games per new table of the meta-game (duplicate deals, seat rotation; rounded up to whole rotations)."""
    population_share: float = 1.0
    """Share of each best response's tables against the meta-strategy (1: PSRO's pure best responses). Below 1, the
    rest of its
    tables follow the config's ``opponents`` mix (self-play, snapshots, exploiter, baselines), scaled to ``1 -
    population_share``:
    a robust best response, which stays a good player against what the population does not cover (AlphaStar's main
    agents).
    """
    meta_solver: str = "regret_matching"
    """Meta-solver of the meta-game: ``regret_matching`` (measured best, see ``training.algorithms.meta_solvers``),
    ``prd`` (projected replicator dynamics), ``alpharank`` or ``uniform``. May change on ``--resume`` (the saved
    meta-game is solved again).
    """

    def validate(self, where: str) -> None:
        for name in ("iterations", "best_responses_per_iteration", "best_response_decisions", "payoff_games"):
            require(where, name, getattr(self, name), getattr(self, name) >= 1, "an integer >= 1")
        require(
            where, "meta_solver", self.meta_solver, self.meta_solver in META_SOLVERS, f"one of {sorted(META_SOLVERS)}"
        )
        require(where, "population_share", self.population_share, 0 < self.population_share <= 1, "a number in (0, 1]")


def check(config: TrainConfig, where: str) -> None:
    """A robust best response (``population_share`` below 1) needs an opponents mix for the rest of its tables."""
    if config.psro.population_share < 1:
        mix = config.opponents
        rest = (
            mix.self_play + mix.snapshots + mix.exploiter + sum(mix.baselines.values()) + sum(mix.checkpoints.values())
        )
        require(
            f"{where}: psro",
            "population_share",
            config.psro.population_share,
            rest > 0,
            "1, or opponents weights (self_play, snapshots, exploiter, baselines, checkpoints) with a "
            "positive sum for the rest of a best response's tables",
        )


ALGORITHM = register(
    Algorithm(
        name="psro",
        train="training.algorithms.psro:train",
        summary="a population, its solved meta-game and PPO best responses (training.algorithms.psro)",
        section=PSROConfig,
        check=check,
        ray=True,
        population_start=True,
    )
)
