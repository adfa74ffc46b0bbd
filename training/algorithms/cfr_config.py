"""CFR's settings (the ``cfr`` section of a training config) and its entry in the algorithm registry
(``training.core.registry``): ``algorithm: cfr``, trained by ``training.algorithms.cfr``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from training.core.registry import Algorithm, register
from training.core.schema import require, require_learning_rate

if TYPE_CHECKING:
    from training.core.config import TrainConfig

CFR_VARIANTS = ("cfr+", "dcfr", "linear", "cfr")
CFR_KEYS = ("observation", "information_state")


@dataclass
class CFRConfig:
    """Counterfactual regret minimisation over the exact game tree of a small rule set (``algorithm: cfr``,
    ``training.algorithms.cfr``), then distilled into the ``model`` network.
    """

    iterations: int = 2000
    """CFR iterations (may grow on ``--resume``)."""
    variant: str = "dcfr"
    """``dcfr`` (discounted CFR; measured best on ``mini``, docs/cfr.md), ``cfr+``, ``linear`` or ``cfr`` (vanilla)."""
    keys: str = "information_state"
    """What the regrets are keyed by: ``information_state`` (perfect recall: textbook CFR; the network is fitted to its
    projection onto observations) or ``observation`` (what a network over the env's observations sees; CFR with
    imperfect recall, measured not to converge on ``mini``, docs/cfr.md).
    """
    alternating: bool = True
    """Alternating updates (each seat regrets against the strategy the seats before it just updated), else
    simultaneous.
    """
    evaluate_every: int = 50
    """Iterations between two exact NashConv evaluations of the average strategy, logged to ``cfr.csv`` (0: only at the
    end).
    """
    checkpoint_every: int = 100
    """Iterations between two checkpoints of the regrets and the average strategy."""
    max_nodes: int = 3_000_000
    """Refuse rule sets whose game tree has more nodes than this (``training.evaluation.exact.TreeTooLarge``)."""
    descent_steps: int = 0
    """Exploitability-descent steps on the table over observations before it is distilled
    (``training.algorithms.descent``: gradient steps on its exact NashConv; 0: none). Measured to help where
    observations alias information states (docs/cfr.md).
    """
    descent_learning_rate: float = 0.05
    """Adam learning rate of the exploitability descent (on the table's logits)."""
    distill_steps: int = 3000
    """Full-batch Adam steps fitting the ``model`` network to the average strategy (0: no network; ``final`` is then
    not written).
    """
    distill_learning_rate: float = 3e-3
    """Adam learning rate of the distillation."""

    def validate(self, where: str) -> None:
        for name in ("iterations", "checkpoint_every", "max_nodes"):
            require(where, name, getattr(self, name), getattr(self, name) >= 1, "an integer >= 1")
        for name in ("evaluate_every", "distill_steps", "descent_steps"):
            require(where, name, getattr(self, name), getattr(self, name) >= 0, "an integer >= 0")
        require(where, "variant", self.variant, self.variant in CFR_VARIANTS, f"one of {list(CFR_VARIANTS)}")
        require(where, "keys", self.keys, self.keys in CFR_KEYS, f"one of {list(CFR_KEYS)}")
        for name in ("distill_learning_rate", "descent_learning_rate"):
            require_learning_rate(where, name, getattr(self, name))


def check(config: TrainConfig, where: str) -> None:
    """CFR solves the game tree: it trains no network from play, so nothing warms one up."""
    require(
        where,
        "algorithm",
        config.algorithm,
        config.warm_start.teacher is None,
        "ppo, psro or nfsp with warm_start (cfr solves the game tree and trains no network from play)",
    )


ALGORITHM = register(
    Algorithm(
        name="cfr",
        train="training.algorithms.cfr:train",
        summary="regret minimisation over a small rule set's exact tree, distilled into a network "
        "(training.algorithms.cfr)",
        section=CFRConfig,
        check=check,
    )
)
