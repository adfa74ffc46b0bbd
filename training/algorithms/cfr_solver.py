"""A vectorized CFR-family solver over the exact game tree of a small rule set.

``training.evaluation.exact.game_tree(config)`` flattens every history of a small game (the
``mini`` presets) into node arrays. ``TreeSolver`` runs counterfactual regret
minimisation on those arrays: one iteration is a top-down pass for the reach
probabilities and a bottom-up pass for the values, level by level, with numpy over all
the nodes of a level (no Python per node). Regrets and the average strategy are kept
per **key** and action:

* ``keys="observation"``: one key per distinct (observation, action mask) the env
  shows the acting seat. That is exactly what an agent over observations (a network,
  ``training.core.model.PolicyAgent``) can condition on, so the solution is representable by
  one. The env's observation forgets the order of past events, so several perfect-recall
  information states share one observation: this is CFR on an imperfect-recall
  abstraction (Lanctot et al. 2012), without the perfect-recall guarantee, measured
  instead (``training.evaluation.exact`` computes the NashConv of the result against a
  perfect-recall best response).
* ``keys="information_state"``: one key per perfect-recall information set (textbook CFR;
  its average policy converges to a Nash equilibrium in 2-player zero-sum games).

Variants (``variant``): ``cfr+`` (regrets floored at zero, average weighted by the
iteration), ``dcfr`` (discounted CFR, Brown & Sandholm 2019, alpha 1.5, beta 0, gamma 2),
``linear`` (linear CFR: regrets and average both weighted by the iteration) and
``cfr`` (vanilla); each variant's average strategy is OpenSpiel's (``CFRPlusSolver``,
``CFRSolver``, ``LCFRSolver``, ``DCFRSolver``) iterate for iterate (``tests/test_cfr.py``).
Updates alternate by default (``alternating``: each seat regrets against the strategy the
seats before it just updated, as CFR+ prescribes); ``alternating=False`` updates every
seat from the same profile, one pair of passes per iteration however many players there are.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from training.evaluation.exact import GameTree

KEYS = ("observation", "information_state")
VARIANTS = ("cfr+", "dcfr", "linear", "cfr")


@dataclass
class SolverState:
    """What a solver carries between iterations (the checkpointed state)."""

    iteration: int
    regrets: np.ndarray
    """(K, A) float64 cumulative (discounted) regrets."""
    strategy_sum: np.ndarray
    """(K, A) float64 cumulative weighted own-reach strategy (the average strategy, unnormalized)."""


class TreeSolver:
    """CFR over a ``GameTree`` with regrets keyed by observation or by information state."""

    def __init__(self, tree: GameTree, keys: str = "observation", variant: str = "cfr+", alternating: bool = True):
        if keys not in KEYS:
            raise ValueError(f"keys={keys!r} is not allowed; expected one of {list(KEYS)}")
        if variant not in VARIANTS:
            raise ValueError(f"variant={variant!r} is not allowed; expected one of {list(VARIANTS)}")
        self.tree, self.keys, self.variant, self.alternating = tree, keys, variant, alternating
        decision = tree.player >= 0
        key = tree.observation if keys == "observation" else tree.infoset
        self.num_keys = int(len(tree.observations) if keys == "observation" else len(tree.infoset_seat))
        self.num_actions = int(tree.masks.shape[1])
        self.node_key = np.where(decision, key, -1)
        if keys == "observation":
            self.legal = tree.masks.astype(bool)
        else:
            self.legal = np.zeros((self.num_keys, self.num_actions), bool)
            first = np.full(self.num_keys, -1)
            nodes = np.flatnonzero(decision)
            first[tree.infoset[nodes[::-1]]] = nodes[::-1]
            self.legal = tree.masks[tree.observation[first]].astype(bool)
        self.num_players = tree.num_players
        # per level d >= 1: the children, their parents, the acting seat at the parent, the (key, action) cell
        self.levels = []
        for nodes in tree.levels[1:]:
            up = tree.parent[nodes]
            seat = tree.player[up]
            cell = self.node_key[up] * self.num_actions + tree.action[nodes]
            self.levels.append((nodes, up, seat, cell))
        self.terminal_values = np.where(decision[:, None], 0.0, tree.returns).T.copy()  # (N, M)
        self.decision_nodes = np.flatnonzero(decision)

    # ------------------------------------------------------------------ state

    def initial_state(self) -> SolverState:
        shape = (self.num_keys, self.num_actions)
        return SolverState(iteration=0, regrets=np.zeros(shape), strategy_sum=np.zeros(shape))

    def current_strategy(self, regrets: np.ndarray) -> np.ndarray:
        """Regret matching: the positive regrets normalized over the legal actions (uniform where none is positive)."""
        positive = np.where(self.legal, np.maximum(regrets, 0.0), 0.0)
        total = positive.sum(1, keepdims=True)
        uniform = self.legal / self.legal.sum(1, keepdims=True).clip(min=1)
        return np.where(total > 0, positive / np.where(total > 0, total, 1.0), uniform)

    def average_strategy(self, state: SolverState) -> np.ndarray:
        """(K, A) the average strategy (uniform over the legal actions of keys never reached)."""
        total = state.strategy_sum.sum(1, keepdims=True)
        uniform = self.legal / self.legal.sum(1, keepdims=True).clip(min=1)
        return np.where(total > 0, state.strategy_sum / np.where(total > 0, total, 1.0), uniform)

    # ------------------------------------------------------------------ passes

    def reach(self, strategy: np.ndarray) -> np.ndarray:
        """(N, M) each seat's own contribution to the probability of reaching every node."""
        reach = np.ones((self.num_players, self.tree.num_nodes))
        flat = strategy.reshape(-1)
        for nodes, up, seat, cell in self.levels:
            reach[:, nodes] = reach[:, up]
            reach[seat, nodes] *= flat[cell]
        return reach

    def values(self, strategy: np.ndarray, seats: list[int] | None = None) -> np.ndarray:
        """(len(seats), M) expected reward of each of ``seats`` (default all) from every node on, chance excluded."""
        seats = list(range(self.num_players)) if seats is None else list(seats)
        value = self.terminal_values[seats].copy()
        flat = strategy.reshape(-1)
        m = self.tree.num_nodes
        for nodes, up, _seat, cell in reversed(self.levels):
            weighted = value[:, nodes] * flat[cell]
            for row in range(len(seats)):
                value[row] += np.bincount(up, weights=weighted[row], minlength=m)
        return value

    def iterate(self, state: SolverState) -> SolverState:
        """One CFR iteration; returns the new state (the old one is not modified).

        Alternating updates (``alternating=True``, as in CFR+): seat 0's regrets are updated
        first, and seat 1 then regrets against the updated strategy, and so on; otherwise
        every seat regrets against the same profile (simultaneous updates, one pass).
        """
        t = state.iteration + 1
        regrets, strategy_sum = state.regrets, state.strategy_sum
        groups = [[s] for s in range(self.num_players)] if self.alternating else [list(range(self.num_players))]
        size = self.num_keys * self.num_actions
        for seats in groups:
            strategy = self.current_strategy(regrets)
            reach = self.reach(strategy)
            value = self.values(strategy, seats)
            row_of = np.full(self.num_players, -1)
            row_of[seats] = np.arange(len(seats))
            flat = strategy.reshape(-1)
            instant = np.zeros(size)
            contribution = np.zeros(size)
            touched = np.zeros(size, bool)
            for nodes, up, seat, cell in self.levels:
                mine = row_of[seat] >= 0
                if not mine.all():
                    nodes, up, seat, cell = nodes[mine], up[mine], seat[mine], cell[mine]
                if not len(nodes):
                    continue
                own = reach[seat, up]
                rows = row_of[seat]
                advantage = value[rows, nodes] - value[rows, up]
                instant += np.bincount(
                    cell, weights=self.tree.chance[up] * others_reach(reach, seat, up) * advantage, minlength=size
                )
                contribution += np.bincount(cell, weights=own * flat[cell], minlength=size)
                touched[cell] = True
            regrets, strategy_sum = self._update(
                t,
                regrets,
                strategy_sum,
                instant.reshape(regrets.shape),
                contribution.reshape(regrets.shape),
                touched.reshape(regrets.shape),
            )
        return SolverState(iteration=t, regrets=regrets, strategy_sum=strategy_sum)

    def _update(
        self,
        t: int,
        regrets: np.ndarray,
        strategy_sum: np.ndarray,
        instant: np.ndarray,
        contribution: np.ndarray,
        touched: np.ndarray,
    ):
        """The variant's regret and average-strategy update at iteration ``t`` (only the ``touched`` cells change)."""
        if self.variant == "cfr+":
            new_regrets = np.maximum(regrets + instant, 0.0)
            new_sum = strategy_sum + t * contribution
        elif self.variant == "dcfr":
            # the regrets accumulated up to iteration t - 1 carry that iteration's discount (as OpenSpiel's DCFRSolver)
            positive = (t - 1) ** 1.5 / ((t - 1) ** 1.5 + 1.0)
            new_regrets = np.where(regrets > 0, regrets * positive, regrets * 0.5) + instant
            new_sum = strategy_sum * ((t - 1) / t) ** 2 + contribution
        elif self.variant == "linear":
            new_regrets = regrets + t * instant
            new_sum = strategy_sum + t * contribution
        else:
            new_regrets = regrets + instant
            new_sum = strategy_sum + contribution
        return np.where(touched, new_regrets, regrets), np.where(touched, new_sum, strategy_sum)


def others_reach(reach: np.ndarray, seat: np.ndarray, up: np.ndarray) -> np.ndarray:
    """Product of the other seats' reach at ``up`` (the counterfactual reach of the acting seat, chance excluded)."""
    product = np.ones(len(up))
    for s in range(reach.shape[0]):
        product *= np.where(seat == s, 1.0, reach[s, up])
    return product
