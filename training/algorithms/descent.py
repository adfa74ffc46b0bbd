"""Exploitability descent over a policy table keyed by observation (the policies a network over observations can play).

The env's observation aliases many perfect-recall information states (on ``mini``, 11 on
average), and CFR keyed by observation (imperfect recall) does not converge there
(docs/cfr.md). This minimises the exact NashConv of one observation-keyed policy ``pi``
played by every seat directly, by gradient descent (exploitability descent, Lockhart et
al. 2019, on the exact tree):

    NashConv(pi) = sum_s BR_s(pi) - sum_s V_s(pi),   and sum_s V_s(pi) = 0 here
    (every reward vector of the game sums to 0: loser -1, the others 1/(N-1))

By Danskin's theorem the gradient of ``BR_s`` with respect to ``pi(u, a)`` is, with seat
``s`` playing its best response ``b_s`` fixed, the sum over the other seats' nodes ``h``
that show observation ``u`` of (chance x every seat's reach to ``h``) x (the value to ``s``
of the child reached by ``a``). Each step: per seat, one bottom-up pass for the best
response, one top-down pass for the reach and one bottom-up pass for the values, level
by level with numpy. ``pi`` is a masked softmax of logits updated with Adam; the best
table seen is kept (the objective is not smooth).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from training.evaluation.exact import GameTree


@dataclass
class DescentResult:
    """What a descent returns: its best table and that table's NashConv."""

    table: np.ndarray
    """(U, A) the lowest-NashConv table seen."""
    nash_conv: float
    """Its exact NashConv."""
    history: list[tuple[int, float, float]]
    """(step, seconds, NashConv) of every step."""


class ObservationDescent:
    """The exact NashConv of an observation-keyed table and its gradient, on one game tree."""

    def __init__(self, tree: GameTree):
        self.tree = tree
        self.num_rows, self.num_actions = tree.masks.shape
        self.legal = tree.masks.astype(bool)
        self.levels = []
        for nodes in tree.levels[1:]:
            up = tree.parent[nodes]
            self.levels.append(
                (
                    nodes,
                    up,
                    tree.player[up],
                    tree.observation[up] * self.num_actions + tree.action[nodes],
                    tree.infoset[up],
                    tree.action[nodes],
                )
            )
        self.roots = tree.levels[0]
        self.terminal = tree.player < 0

    def nash_conv_and_gradient(self, table: np.ndarray) -> tuple[float, np.ndarray]:
        """``sum_s BR_s(table)`` (the NashConv, as the policy values sum to 0) and its (U, A) gradient."""
        tree, a = self.tree, self.num_actions
        flat = table.reshape(-1)
        total = 0.0
        gradient = np.zeros(self.num_rows * a)
        for s in range(tree.num_players):
            chosen = self._best_response(flat, s)
            reach, value = self._reach_and_value(
                s, [np.where(seat == s, chosen[nodes], flat[cell]) for nodes, _, seat, cell, _, _ in self.levels]
            )
            total += float((tree.chance[self.roots] * value[self.roots]).sum())
            for nodes, up, seat, cell, _, _ in self.levels:
                theirs = seat != s
                gradient += np.bincount(
                    cell[theirs], weights=reach[up[theirs]] * value[nodes[theirs]], minlength=len(gradient)
                )
        return total, gradient.reshape(self.num_rows, a)

    def value_against_and_gradient(self, table: np.ndarray, fixed: np.ndarray) -> tuple[float, np.ndarray]:
        """The mean over seats ``s`` of ``s``'s value when it plays ``table`` and every other seat plays ``fixed``
        (both (U, A)), and its (U, A) gradient in ``table``.
        """
        tree, flat, other = self.tree, table.reshape(-1), fixed.reshape(-1)
        total, gradient = 0.0, np.zeros(self.num_rows * self.num_actions)
        for s in range(tree.num_players):
            reach, value = self._reach_and_value(
                s, [np.where(seat == s, flat[cell], other[cell]) for _, _, seat, cell, _, _ in self.levels]
            )
            total += float((tree.chance[self.roots] * value[self.roots]).sum())
            for nodes, up, seat, cell, _, _ in self.levels:
                mine = seat == s
                gradient += np.bincount(
                    cell[mine], weights=reach[up[mine]] * value[nodes[mine]], minlength=len(gradient)
                )
        n = tree.num_players
        return total / n, (gradient / n).reshape(self.num_rows, self.num_actions)

    def _reach_and_value(self, s: int, factors: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
        """(M,) reach (chance x every factor above) and (M,) value to seat ``s``, given each level's edge factors."""
        tree, m = self.tree, self.tree.num_nodes
        reach = np.zeros(m)
        reach[self.roots] = tree.chance[self.roots]
        for (nodes, up, *_), factor in zip(self.levels, factors):
            reach[nodes] = reach[up] * factor
        value = np.where(self.terminal, tree.returns[:, s], 0.0)
        for (nodes, up, *_), factor in zip(reversed(self.levels), reversed(factors)):
            value += np.bincount(up, weights=factor * value[nodes], minlength=m)
        return reach, value

    def _best_response(self, flat: np.ndarray, s: int) -> np.ndarray:
        """(M,) 1.0 at the children that seat ``s``'s best response chooses (and at every other seat's children)."""
        tree, m, a = self.tree, self.tree.num_nodes, self.num_actions
        others = np.zeros(m)
        others[self.roots] = tree.chance[self.roots]
        for nodes, up, seat, cell, _, _ in self.levels:
            others[nodes] = others[up] * np.where(seat == s, 1.0, flat[cell])
        value = np.where(self.terminal, others * tree.returns[:, s], 0.0)
        chosen = np.ones(m)
        for nodes, up, seat, _, infoset, action in reversed(self.levels):
            mine = seat == s
            value += np.bincount(up[~mine], weights=value[nodes[~mine]], minlength=m)
            if not mine.any():
                continue
            kids, sets, acts = nodes[mine], infoset[mine], action[mine]
            local, inverse = np.unique(sets, return_inverse=True)
            q = np.full(len(local) * a, -np.inf)
            totals = np.bincount(inverse * a + acts, weights=value[kids], minlength=len(local) * a)
            q[inverse * a + acts] = totals[inverse * a + acts]
            picked = acts == q.reshape(len(local), a).argmax(1)[inverse]
            chosen[kids] = picked
            value += np.bincount(up[mine][picked], weights=value[kids[picked]], minlength=m)
        return chosen

    def softmax(self, logits: np.ndarray) -> np.ndarray:
        z = np.where(self.legal, logits, -np.inf)
        z = z - z.max(1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(1, keepdims=True)

    def run(
        self, table: np.ndarray, steps: int, learning_rate: float = 0.05, floor: float = 1e-6, stop=None
    ) -> DescentResult:
        """``steps`` Adam steps on the logits of ``table`` (probabilities below ``floor`` start at ``floor``);
        ``stop()`` true ends it early.
        """
        logits = np.where(self.legal, np.log(np.clip(table, floor, None)), 0.0)
        first, second = np.zeros_like(logits), np.zeros_like(logits)
        beta1, beta2 = 0.9, 0.999
        started = time.perf_counter()
        best_value, best_table, history = np.inf, table, []
        for step in range(steps + 1):
            policy = self.softmax(logits)
            value, gradient = self.nash_conv_and_gradient(policy)
            history.append((step, time.perf_counter() - started, value))
            if value < best_value:
                best_value, best_table = value, policy
            if step == steps or (stop is not None and stop()):
                break
            through_softmax = policy * (gradient - (policy * gradient).sum(1, keepdims=True))
            first = beta1 * first + (1 - beta1) * through_softmax
            second = beta2 * second + (1 - beta2) * through_softmax**2
            k = step + 1
            logits = logits - learning_rate * (first / (1 - beta1**k)) / (np.sqrt(second / (1 - beta2**k)) + 1e-12)
        return DescentResult(table=best_table, nash_conv=float(best_value), history=history)
