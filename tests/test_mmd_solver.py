"""``training.algorithms.mmd_solver``: magnetic mirror descent over the exact tree against OpenSpiel's MMD and a
node-by-node reference, its fixed point, its magnets and schedule, bad settings.
"""

from __future__ import annotations

import numpy as np
import pytest

from cockroach_env import GameConfig
from training.algorithms.mmd_solver import MMDSolver
from training.evaluation.exact import GameTree, game_tree

MICRO = {"num_players": 2, "num_types": 2, "copies_per_type": 2, "discard": 2, "loss_count": 2}
MICRO_3 = {**MICRO, "num_types": 3, "discard": 4}
"""A 6-card deck, 4 removed: 666 histories, 132 information sets."""

PAYOFFS = np.array([[0.3, -1.0, 0.8], [-0.2, 0.5, -0.6], [1.0, -0.4, 0.1]])
"""Seat 0's payoff of a one-shot 3x3 zero-sum game (seat 1 gets its negative)."""


def one_shot_tree() -> GameTree:
    """Seat 0 picks a row, seat 1 a column without seeing it: one information set each, three actions."""
    parent = [-1, 0, 0, 0] + [1 + k // 3 for k in range(9)]
    action = [-1, 0, 1, 2] + [k % 3 for k in range(9)]
    player = [0, 1, 1, 1] + [-1] * 9
    returns = np.zeros((13, 2))
    for k in range(9):
        returns[4 + k] = PAYOFFS[k // 3, k % 3], -PAYOFFS[k // 3, k % 3]
    return GameTree(
        config=GameConfig(**MICRO),
        parent=np.array(parent),
        action=np.array(action),
        depth=np.array([0, 1, 1, 1] + [2] * 9),
        player=np.array(player),
        chance=np.ones(13),
        infoset=np.array([0, 1, 1, 1] + [-1] * 9),
        observation=np.array([0, 1, 1, 1] + [-1] * 9),
        returns=returns,
        observations=np.eye(2, dtype=np.float32),
        masks=np.ones((2, 3), np.int8),
        infoset_seat=np.array([0, 1]),
        infoset_strings=["row", "column"],
    )


def run(solver: MMDSolver, iterations: int):
    state = solver.initial_state()
    for _ in range(iterations):
        state = solver.iterate(state)
    return state


def test_a_one_shot_game_is_openspiels_dilated_mmd_iterate_for_iterate():
    """With one decision per seat the behavioural form is OpenSpiel's ``MMDDilatedEnt`` (sequence form, dilated
    entropy), so the two agree to rounding after every iteration.
    """
    pyspiel = pytest.importorskip("pyspiel")
    from open_spiel.python.algorithms.mmd_dilated import MMDDilatedEnt

    from training.evaluation.exact import efg_string

    tree = one_shot_tree()
    theirs = MMDDilatedEnt(pyspiel.load_efg_game(efg_string(tree)), alpha=0.2, stepsize=0.7)
    solver = MMDSolver(tree, alpha=0.2, eta=0.7)
    state = solver.initial_state()
    for _ in range(15):
        theirs.update_sequences()
        state = solver.iterate(state)
        for seat in range(2):
            assert theirs.current_sequences()[seat][1:] == pytest.approx(state.policy[seat], abs=1e-12)
    assert abs(state.policy[0] - 1 / 3).max() > 0.05  # it moved away from the uniform start


def reference_iterate(tree: GameTree, policy: np.ndarray, magnet: np.ndarray, alpha: float, eta: float) -> np.ndarray:
    """One MMD step written node by node from the definition (dicts and recursion, no level arrays)."""
    n = tree.num_players
    children: dict[int, list[int]] = {}
    for node, up in enumerate(tree.parent.tolist()):
        children.setdefault(up, []).append(node)

    def kl(row: int) -> float:
        legal = policy[row] > 0
        return float((policy[row][legal] * np.log(policy[row][legal] / magnet[row][legal])).sum())

    def value(node: int) -> np.ndarray:
        seat = tree.player[node]
        if seat < 0:
            return tree.returns[node].copy()
        out = sum(policy[tree.infoset[node], tree.action[c]] * value(c) for c in children[node])
        out[seat] -= alpha * kl(tree.infoset[node])
        return out

    def reach(node: int) -> np.ndarray:
        out = np.ones(n)
        while tree.parent[node] >= 0:
            up = tree.parent[node]
            out[tree.player[up]] *= policy[tree.infoset[up], tree.action[node]]
            node = up
        return out

    total, weight = np.zeros_like(policy), np.zeros_like(policy)
    for node in np.flatnonzero(tree.player >= 0):
        seat, row = tree.player[node], tree.infoset[node]
        own = reach(node)
        counterfactual = tree.chance[node] * np.prod(np.delete(own, seat))
        for child in children[node]:
            total[row, tree.action[child]] += counterfactual * value(child)[seat]
            weight[row, tree.action[child]] += counterfactual
    q = np.where(weight > 0, total / np.where(weight > 0, weight, 1), 0)
    legal = policy > 0
    logits = np.where(
        legal,
        (np.log(np.where(legal, policy, 1)) + eta * alpha * np.log(np.where(legal, magnet, 1)) + eta * q),
        -np.inf,
    )
    logits = logits / (1 + eta * alpha)
    new = np.exp(logits - logits.max(1, keepdims=True))
    return new / new.sum(1, keepdims=True)


def test_each_iteration_is_the_node_by_node_definition_on_a_real_game():
    """Three steps on a 2-player micro deck, from a random start and a random magnet: the vectorized passes give the
    policy that the recursive definition gives.
    """
    tree = game_tree(GameConfig(**MICRO_3))
    rng = np.random.default_rng(3)
    legal = MMDSolver(tree).legal
    start, magnet = (np.where(legal, rng.random(legal.shape) + 0.05, 0) for _ in range(2))
    start, magnet = start / start.sum(1, keepdims=True), magnet / magnet.sum(1, keepdims=True)
    solver = MMDSolver(tree, alpha=0.3, eta=0.8, magnet="fixed", magnet_table=magnet)
    state = solver.initial_state()
    state.policy = start
    expected = start
    for _ in range(3):
        state = solver.iterate(state)
        expected = reference_iterate(tree, expected, magnet, 0.3, 0.8)
        np.testing.assert_allclose(state.policy, expected, atol=1e-12)
    assert np.abs(state.policy - start).max() > 0.05


def test_the_fixed_point_is_the_quantal_response_of_the_regularized_game():
    """With a temperature and a step that converge, the last iterate becomes the magnet's quantal response to itself
    (``pi ∝ rho exp(q / alpha)``), with a NashConv between the uniform policy's and zero.
    """
    tree = game_tree(GameConfig(**MICRO_3))
    solver = MMDSolver(tree, alpha=0.5, eta=0.5)
    start = solver.initial_state()
    assert solver.fixed_point_residual(start) > 0.1
    state = run(solver, 300)
    assert solver.fixed_point_residual(state) < 1e-9  # measured 2e-13 after 300 iterations
    assert 0.05 < solver.nash_conv(state.policy) < solver.nash_conv(start.policy)
    assert not start.policy_sum.any() and start.iteration == 0  # states are not mutated


def test_a_small_step_converges_where_a_large_one_cycles():
    """At temperature 0.05, step 5 keeps the last iterate near the game's worst (the cycling regime of the sampled
    runs); step 0.1 with the magnet replaced every 50 iterations brings it and the average far lower.
    """
    tree = game_tree(GameConfig(**MICRO_3))
    large = MMDSolver(tree, alpha=0.05, eta=5.0)
    staged = MMDSolver(tree, alpha=0.05, eta=0.1, magnet="stage", magnet_period=50)
    cycling, converging = run(large, 400), run(staged, 400)
    assert large.nash_conv(cycling.policy) > 1.5  # measured 1.87
    assert staged.nash_conv(converging.policy) < 0.2  # measured 0.149
    assert staged.nash_conv(staged.average_policy(converging)) < 0.04  # measured 0.027


def test_the_staged_magnet_is_the_policy_of_the_last_stage_and_annealing_shrinks_both_terms():
    tree = game_tree(GameConfig(**MICRO))
    solver = MMDSolver(tree, alpha=0.1, eta=0.5, magnet="stage", magnet_period=3)
    state = run(solver, 2)
    np.testing.assert_array_equal(state.magnet, solver.uniform)
    state = solver.iterate(state)
    np.testing.assert_array_equal(state.magnet, state.policy)
    kept = state.magnet
    state = solver.iterate(state)
    assert state.magnet is kept and not np.array_equal(state.policy, kept)
    annealed = MMDSolver(tree, alpha=0.1, eta=0.5, anneal=10)
    assert annealed.schedule(1) == (0.1, 0.5)
    assert annealed.schedule(11) == pytest.approx((0.05, 0.25))
    assert MMDSolver(tree, alpha=0.1, eta=0.5).schedule(1000) == (0.1, 0.5)
    # the annealed run differs from the constant one from its second iteration on
    constant = MMDSolver(tree, alpha=0.1, eta=0.5)
    assert np.array_equal(run(annealed, 1).policy, run(constant, 1).policy)
    assert not np.allclose(run(annealed, 2).policy, run(constant, 2).policy)


def test_observation_keys_give_a_table_over_the_trees_observations_at_its_own_fixed_point():
    """Keyed by observation (what a network over observations can play), q averages the aliased information states by
    their reach; the table still reaches its quantal-response fixed point and is a profile seat.
    """
    from training.algorithms.cfr import ObservationTablePolicy

    tree = game_tree(GameConfig(**MICRO_3))
    solver = MMDSolver(tree, keys="observation", alpha=0.5, eta=0.5)
    state = run(solver, 300)
    assert state.policy.shape == tree.masks.shape
    assert solver.fixed_point_residual(state) < 1e-9
    assert isinstance(solver.profile(state.policy), ObservationTablePolicy)
    assert 0 < solver.nash_conv(state.policy) < 2


@pytest.mark.parametrize(
    "options, message",
    [
        ({"keys": "seat"}, "keys='seat'"),
        ({"magnet": "ema"}, "magnet='ema'"),
        ({"alpha": -0.1}, "alpha=-0.1"),
        ({"eta": 0.0}, "eta=0.0"),
        ({"anneal": float("nan")}, "anneal=nan"),
        ({"magnet": "stage"}, "magnet_period=0"),
        ({"magnet": "stage", "magnet_period": 2.5}, "magnet_period=2.5"),
        ({"magnet_period": 10}, "magnet_period=10 is only allowed"),
        ({"magnet": "fixed"}, "magnet_table"),
        ({"magnet": "fixed", "magnet_table": np.ones((2, 2))}, r"shape \(2, 2\)"),
    ],
)
def test_bad_settings_are_refused_naming_the_value(options, message):
    with pytest.raises(ValueError, match=message):
        MMDSolver(game_tree(GameConfig(**MICRO)), **options)


def test_the_fixed_point_of_alpha_zero_is_refused():
    solver = MMDSolver(game_tree(GameConfig(**MICRO)), alpha=0.0, eta=0.5)
    with pytest.raises(ValueError, match="alpha=0"):
        solver.fixed_point_residual(solver.initial_state())
