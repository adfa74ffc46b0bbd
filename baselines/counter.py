"""``counter``: a card counter of another style, kept out of every training table.

It decides with ``heuristic``'s machinery (``baselines.heuristic``: every option valued by
the player's own resulting chance of losing, compiled by default) under another model:

* **No reading of players.** A claim received is judged by card counting alone: the
  chance that an unseen card fits it. The claimant's revealed honesty and the
  recipients' revealed rates of right calls, wrong calls and peeks never move from their
  priors (``heuristic`` updates both by Bayes from the public history counters), so a
  habitual bluffer is believed as readily as an honest player.
* **Another danger model.** Danger grows more gently with a seat's sets (``set_power``
  2 against 4, the share ``exp(1.5 * hazard)`` against ``exp(3 * hazard)``), and a
  short hand weighs more (hazard 1.0, 0.8, 0.4 and 0.1 for 0 to 3 cards).
* **It peeks less.** Peeking costs it an added 0.05 of loss probability, so it calls a
  claim where ``heuristic`` would look and pass it on.

Training configs never seat it (``tests/test_baselines.py`` checks every config in
``configs/``), so an agent measured against it meets a style it never trained with: the
unseen-style yardstick of the shipped agents' protocol (docs/shipped.md).
"""

from __future__ import annotations

from baselines.heuristic import HeuristicAgent, HeuristicParams
from cockroach_env.config import GameConfig

FIXED_PRIOR = 1e9
"""Weight of the honesty and response priors: revealed history moves neither (the Bayes step left out)."""

COUNTER_PARAMS = HeuristicParams(
    kappa=1.5,
    set_power=2.0,
    hand_risk=(1.0, 0.8, 0.4, 0.1),
    honesty_strength=FIXED_PRIOR,
    response_strength=FIXED_PRIOR,
    peek_cost=0.05,
)
"""The counter's model: ``heuristic``'s defaults, changed where the module docstring says."""


class CounterAgent(HeuristicAgent):
    """Card counting without reading players, under a gentler danger model (see the module docstring)."""

    name = "counter"

    def __init__(self, config: GameConfig, seed: int | None = None, backend: str = "auto"):
        super().__init__(config, seed, params=COUNTER_PARAMS, backend=backend)
