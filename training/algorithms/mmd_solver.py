"""Magnetic mirror descent over the exact game tree of a small rule set: the reference for regularized self-play.

Magnetic mirror descent (MMD; Sokota et al. 2023, "A Unified Approach to Reinforcement
Learning, Quantal Response Equilibria, and Two-Player Zero-Sum Games") in its behavioural
form: at every key (information state, or observation as in ``TreeSolver``) the policy
takes the closed-form step

    pi_{t+1}(a) ∝ pi_t(a)^(1/(1+eta alpha)) · rho(a)^(eta alpha/(1+eta alpha)) · exp(eta q_t(a) / (1+eta alpha))

with temperature ``alpha``, step ``eta``, magnet ``rho`` and ``q_t`` the action values of
the regularized game: the acting seat's expected return after the action, where each
decision of a seat costs that seat ``alpha · KL(pi(I) || rho(I))``, conditioned on
reaching the key (the counterfactual values divided by the counterfactual reach, which is
what a sampled learner's advantages estimate; rewards are in the game's units, -1 for the
loser). Its fixed point is the agent quantal response equilibrium of the magnet-regularized
game, ``pi(a) ∝ rho(a) exp(q(a) / alpha)`` (``fixed_point_residual``); as ``alpha`` falls
that equilibrium approaches a Nash equilibrium.

The magnet (``magnet``): ``uniform``; ``fixed``, a given table (``magnet_table``); or
``stage``, the uniform policy (or ``magnet_table``) replaced by the current policy every
``magnet_period`` iterations, so the regularized game itself moves towards an
equilibrium of the unregularized one in stages. ``anneal`` > 0 shrinks ``alpha`` and
``eta`` together, both by ``anneal / (anneal + t)`` at iteration ``t`` (the step stays
tied to the temperature, as the convergence bound ``eta <= alpha / L^2`` asks).

One iteration updates every seat from the same profile: a top-down pass for the reach
probabilities and a bottom-up pass for the regularized values, level by level with numpy
over the ``GameTree``'s node arrays (``TreeSolver``'s passes). Besides the last iterate
(the policy that MMD's guarantees are about) it keeps the reach-weighted average of the
iterates, as CFR's average strategy.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from training.algorithms.cfr_solver import KEYS, TreeSolver, others_reach
from training.evaluation.exact import GameTree, InformationSetPolicy, evaluate

MAGNETS = ("uniform", "fixed", "stage")


@dataclass
class MMDState:
    """What the solver carries between iterations."""

    iteration: int
    policy: np.ndarray
    """(K, A) float64 the last iterate (0 on illegal actions)."""
    magnet: np.ndarray
    """(K, A) float64 the magnet rho."""
    policy_sum: np.ndarray
    """(K, A) float64 cumulative own-reach-weighted policy (the average policy, unnormalized)."""


class MMDSolver:
    """Magnetic mirror descent over a ``GameTree`` with policies keyed by information state or by observation."""

    def __init__(
        self,
        tree: GameTree,
        keys: str = "information_state",
        alpha: float = 0.05,
        eta: float = 0.1,
        magnet: str = "uniform",
        magnet_period: int = 0,
        anneal: float = 0.0,
        magnet_table: np.ndarray | None = None,
    ):
        if keys not in KEYS:
            raise ValueError(f"keys={keys!r} is not allowed; expected one of {list(KEYS)}")
        if magnet not in MAGNETS:
            raise ValueError(f"magnet={magnet!r} is not allowed; expected one of {list(MAGNETS)}")
        for name, value in (("alpha", alpha), ("eta", eta), ("anneal", anneal)):
            if not np.isfinite(value) or value < 0:
                raise ValueError(f"{name}={value!r} is not allowed; expected a finite number >= 0")
        if eta <= 0:
            raise ValueError(f"eta={eta!r} is not allowed; expected a step > 0")
        if magnet == "stage" and (not isinstance(magnet_period, int) or magnet_period < 1):
            raise ValueError(
                f"magnet_period={magnet_period!r} is not allowed with magnet='stage'; expected an integer >= 1 "
                "(iterations between two replacements of the magnet)"
            )
        if magnet != "stage" and magnet_period:
            raise ValueError(f"magnet_period={magnet_period!r} is only allowed with magnet='stage'; expected 0")
        self.passes = TreeSolver(tree, keys=keys)
        self.tree, self.keys = tree, keys
        self.alpha, self.eta, self.magnet, self.magnet_period, self.anneal = alpha, eta, magnet, magnet_period, anneal
        self.legal = self.passes.legal
        self.uniform = self.legal / self.legal.sum(1, keepdims=True).clip(min=1)
        if magnet == "fixed" and magnet_table is None:
            raise ValueError("magnet='fixed' needs a magnet_table; expected a (keys, actions) policy table")
        if magnet_table is not None:
            magnet_table = np.asarray(magnet_table, np.float64)
            if magnet_table.shape != self.legal.shape:
                raise ValueError(
                    f"magnet_table of shape {magnet_table.shape} is not allowed; expected {self.legal.shape}"
                )
            if (magnet_table[self.legal] <= 0).any() or not np.allclose(magnet_table.sum(1), 1.0):
                raise ValueError(
                    "magnet_table is not allowed; expected positive probabilities on every legal action summing to 1"
                )
            if magnet == "uniform":
                raise ValueError("magnet_table is not allowed with magnet='uniform'; expected 'fixed' or 'stage'")
        self.magnet_table = magnet_table
        decision = tree.player >= 0
        self.decision_nodes = np.flatnonzero(decision)
        self.decision_seat = tree.player[self.decision_nodes]
        self.decision_key = self.passes.node_key[self.decision_nodes]

    # ------------------------------------------------------------------ state

    def initial_state(self) -> MMDState:
        """The uniform policy, and the magnet it starts with."""
        magnet = self.uniform if self.magnet_table is None else self.magnet_table
        return MMDState(
            iteration=0, policy=self.uniform.copy(), magnet=magnet.copy(), policy_sum=np.zeros(self.legal.shape)
        )

    def schedule(self, iteration: int) -> tuple[float, float]:
        """``(alpha, eta)`` of iteration ``iteration`` (1-based): both shrink by ``anneal / (anneal + t - 1)``."""
        scale = 1.0 if self.anneal == 0 else self.anneal / (self.anneal + iteration - 1)
        return self.alpha * scale, self.eta * scale

    def average_policy(self, state: MMDState) -> np.ndarray:
        """(K, A) the own-reach-weighted average of the iterates (the last iterate where nothing was accumulated)."""
        total = state.policy_sum.sum(1, keepdims=True)
        return np.where(total > 0, state.policy_sum / np.where(total > 0, total, 1.0), state.policy)

    # ------------------------------------------------------------------ passes

    def q_values(self, policy: np.ndarray, magnet: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        """``(q, own)``: (K, A) the regularized action values of each key's acting seat, conditioned on reaching it
        (0 where the key is never reached), and (K, A) the acting seat's own reach summed over each key's nodes.
        """
        tree, passes = self.tree, self.passes
        m, size = tree.num_nodes, policy.size
        reach = passes.reach(policy)
        rows = policy[self.decision_key]
        logs = np.log(np.where(rows > 0, rows, 1.0)) - np.log(np.where(rows > 0, magnet[self.decision_key], 1.0))
        value = passes.terminal_values.copy()
        value[self.decision_seat, self.decision_nodes] -= alpha * (rows * logs).sum(1)
        flat = policy.reshape(-1)
        for nodes, up, _seat, cell in reversed(passes.levels):
            weighted = value[:, nodes] * flat[cell]
            for row in range(tree.num_players):
                value[row] += np.bincount(up, weights=weighted[row], minlength=m)
        total, weight, own = np.zeros(size), np.zeros(size), np.zeros(size)
        for nodes, up, seat, cell in passes.levels:
            counterfactual = tree.chance[up] * others_reach(reach, seat, up)
            total += np.bincount(cell, weights=counterfactual * value[seat, nodes], minlength=size)
            weight += np.bincount(cell, weights=counterfactual, minlength=size)
            own += np.bincount(cell, weights=reach[seat, up], minlength=size)
        q = np.where(weight > 0, total / np.where(weight > 0, weight, 1.0), 0.0)
        return q.reshape(policy.shape), own.reshape(policy.shape)

    def iterate(self, state: MMDState) -> MMDState:
        """One MMD step of every seat from the same profile; returns the new state (the old one is not modified)."""
        t = state.iteration + 1
        alpha, eta = self.schedule(t)
        q, own = self.q_values(state.policy, state.magnet, alpha)
        policy_sum = state.policy_sum + own * state.policy
        logits = (
            np.log(np.where(self.legal, state.policy, 1.0))
            + eta * alpha * np.log(np.where(self.legal, state.magnet, 1.0))
            + eta * q
        ) / (1.0 + eta * alpha)
        logits = np.where(self.legal, logits, -np.inf)
        logits -= logits.max(1, keepdims=True)
        policy = np.exp(logits)
        policy /= policy.sum(1, keepdims=True)
        magnet = state.magnet
        if self.magnet == "stage" and t % self.magnet_period == 0:
            magnet = policy.copy()
        return MMDState(iteration=t, policy=policy, magnet=magnet, policy_sum=policy_sum)

    def fixed_point_residual(self, state: MMDState) -> float:
        """The largest gap between the policy and the quantal response ``rho · exp(q / alpha)`` to itself (0 at the
        agent QRE of the regularized game; needs ``alpha`` > 0 and is taken at the schedule's current temperature).
        """
        alpha, _ = self.schedule(state.iteration + 1)
        if alpha <= 0:
            raise ValueError("the fixed point of alpha=0 is not a quantal response; expected alpha > 0")
        q, _ = self.q_values(state.policy, state.magnet, alpha)
        logits = np.where(self.legal, np.log(np.where(self.legal, state.magnet, 1.0)) + q / alpha, -np.inf)
        logits -= logits.max(1, keepdims=True)
        response = np.exp(logits)
        response /= response.sum(1, keepdims=True)
        return float(np.abs(response - state.policy).max())

    # ------------------------------------------------------------------ evaluation

    def profile(self, table: np.ndarray, name: str = "mmd") -> Any:
        """A (K, A) table of this solver's keys as a profile seat for ``training.evaluation.exact``."""
        if self.keys == "observation":
            from training.algorithms.cfr import ObservationTablePolicy

            return ObservationTablePolicy(self.tree, table, name)
        return InformationSetPolicy(dict(zip(self.tree.infoset_strings, table)), name)

    def nash_conv(self, table: np.ndarray) -> float:
        """The exact NashConv of every seat playing ``table`` (the last iterate or ``average_policy``)."""
        return evaluate(self.profile(table), self.tree.config, self.tree).nash_conv
