"""Hostile inputs to the batched engine: a bad constructor
argument, seed or deal is a named ``ValueError``, and a refused ``reset`` changes nothing
(the games, the queued deals and the stream of re-deals). Hypothesis fuzzes the deals.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cockroach_env import GameConfig
from cockroach_env.batched import BatchedGames, random_legal_actions
from cockroach_env.batched.numba_kernels import numba
from cockroach_env.config import MAX_STEPS
from cockroach_env.engine import Deal, explicit_deal, random_deal

from .hostile import refused

CONFIG = GameConfig(num_players=4)
B = 4
NEEDS_NUMBA = pytest.mark.skipif(numba is None, reason="the numba backend needs numba (the [fast] extra)")


def _deals(count: int, seed: int = 0, config: GameConfig = CONFIG) -> list[Deal]:
    rng = np.random.default_rng(seed)
    return [random_deal(config, rng) for _ in range(count)]


def _run(games: BatchedGames, steps: int, seed: int) -> list:
    """Play ``steps`` random steps; what a refused call must not change: every output and the re-deals."""
    rng = np.random.default_rng(seed)
    step, record = None, []
    for _ in range(steps):
        step = games.step(random_legal_actions(games._last_mask, rng))
        games._last_mask = step.action_mask
        record.append(
            (
                step.to_act,
                step.observation,
                step.done,
                step.loser,
                {k: dataclasses.astuple(v) for k, v in games.last_deals.items()},
            )
        )
    record.append((games.state(), step.action_mask, step.rewards, step.loss_reason, {}))
    return record


def _started(seed: int = 0) -> BatchedGames:
    games = BatchedGames(CONFIG, B, seed=seed)
    step = games.reset(deals=_deals(B + 3, seed))  # three queued explicit deals, then random ones
    games._last_mask = step.action_mask
    return games


def _same(a: list, b: list) -> bool:
    return len(a) == len(b) and all(
        np.array_equal(x[0], y[0])
        and np.array_equal(x[1], y[1])
        and np.array_equal(x[2], y[2])
        and np.array_equal(x[3], y[3])
        and x[4] == y[4]
        for x, y in zip(a, b)
    )


def _with(deal: Deal, **changes) -> Deal:
    return dataclasses.replace(deal, **changes)


GOOD = _deals(1, seed=5)[0]
SHORT = explicit_deal(CONFIG, 0, {0: {"fly": 2}, 1: {"bat": 1}, 2: {"rat": 1}, 3: {"toad": 1}})
BAD_DEALS = [
    ("no deals", [], ["0 deals", "batch_size=4"]),
    ("not a Deal", ["deal"], ["deals[0]='deal'", "engine.Deal"]),
    ("float counts", [_with(GOOD, hands=np.asarray(GOOD.hands, float) + 0.5)], ["deals[0]", "hands", "integer"]),
    ("string counts", [_with(GOOD, hands=[["1"] * 8] * 4)], ["deals[0]", "hands", "integer"]),
    ("bool counts", [_with(GOOD, removed=[True] * 8)], ["deals[0]", "removed", "integer"]),
    ("starter True", [_with(GOOD, starter=True)], ["deals[0].starter=True"]),
    ("starter 1.0", [_with(GOOD, starter=1.0)], ["deals[0].starter=1.0"]),
    ("starter out of range", [_with(GOOD, starter=4)], ["deals[0].starter=4"]),
    ("cards missing from the deck", [_with(SHORT, removed=[0] * 8)], ["deals[0]", "64"]),
    ("too many cards", [_with(GOOD, removed=[9] * 8)], ["deals[0]", "holds 8"]),
    ("negative count", [_with(GOOD, hands=[[-1] + row[1:] for row in GOOD.hands])], ["deals[0]", "negative"]),
    ("ragged hands", [_with(GOOD, hands=[[1, 2], [3]])], ["deals[0]"]),
    ("wrong shape", [_with(GOOD, hands=GOOD.hands[:3])], ["deals[0]", "(4, 8)"]),
    ("penalty deck in classic", [_with(GOOD, penalty_deck=[0])], ["deals[0]"]),
    ("no cards dealt", [explicit_deal(CONFIG, 2, {})], ["deals[0]", "seat 2", "empty hand"]),
    ("starter dealt no card", [explicit_deal(CONFIG, 1, {0: {"fly": 2}, 2: {"bat": 1}})], ["seat 1", "empty hand"]),
]


@pytest.mark.parametrize("deals, fragments", [pytest.param(d, f, id=i) for i, d, f in BAD_DEALS])
def test_refused_reset_names_the_deal_and_changes_nothing(deals, fragments):
    games, twin = _started(), _started()
    _run(games, 3, seed=1), _run(twin, 3, seed=1)
    assert not _same(_run(_started(), 150, seed=2), _run(_started(seed=1), 150, seed=2))  # the comparison can fail
    padded = deals + _deals(B, seed=9) if deals else deals
    refused(lambda: games.reset(seed=123, deals=padded), *fragments)
    assert _same(_run(games, 150, seed=2), _run(twin, 150, seed=2))


@pytest.mark.parametrize("seed", ["x", 1.5, -1, True, 2**64, [1]])
def test_refused_reset_seed_changes_nothing(seed):
    games, twin = _started(), _started()
    refused(lambda: games.reset(seed=seed), f"seed={seed!r}")
    assert _same(_run(games, 150, seed=2), _run(twin, 150, seed=2))


CONSTRUCTOR_CASES = [
    ("parallel='yes'", dict(parallel="yes"), ["parallel='yes'", "True or False"]),
    ("parallel=1", dict(parallel=1), ["parallel=1"]),
    ("seed='x'", dict(seed="x"), ["seed='x'"]),
    ("seed=-3", dict(seed=-3), ["seed=-3"]),
    ("seed=0.5", dict(seed=0.5), ["seed=0.5"]),
    ("batch_size=0", dict(batch_size=0), ["batch_size=0"]),
    ("batch_size=2.0", dict(batch_size=2.0), ["batch_size=2.0"]),
    ("backend='gpu'", dict(backend="gpu"), ["backend='gpu'"]),
    ("config a dict", dict(config={"num_players": 4}), ["config={'num_players': 4}"]),
]


@pytest.mark.parametrize("kwargs, fragments", [pytest.param(k, f, id=i) for i, k, f in CONSTRUCTOR_CASES])
def test_bad_constructor_arguments_are_named_errors(kwargs, fragments):
    refused(lambda: BatchedGames(**{"config": CONFIG, "batch_size": B, **kwargs}), *fragments)


@pytest.mark.parametrize("backend", ["numpy", pytest.param("numba", marks=NEEDS_NUMBA)])
def test_the_largest_max_steps_plays_as_no_limit_and_cuts_a_game_at_that_step(backend):
    """``max_steps=MAX_STEPS``, the largest value the batched engine's step counter holds: whole games
    play exactly as without a limit, and a game whose counter reaches ``MAX_STEPS`` is cut there (no
    game is that long, so the counter is set just below it).
    """
    limited = BatchedGames(GameConfig(num_players=4, max_steps=MAX_STEPS), B, seed=0, backend=backend)
    free = BatchedGames(CONFIG, B, seed=0, backend=backend)
    steps, rng, ended = (limited.reset(), free.reset()), np.random.default_rng(0), 0
    for _ in range(300):
        assert all(np.array_equal(a, b) for a, b in zip(dataclasses.astuple(steps[0]), dataclasses.astuple(steps[1])))
        assert not steps[0].truncated.any()
        actions = random_legal_actions(steps[0].action_mask, rng)
        steps = limited.step(actions), free.step(actions)
        ended += int(steps[0].done.sum())
    assert ended >= B  # whole games were played to their loss
    limited._state.steps[:] = MAX_STEPS - 1
    limited._state.steps[1] = MAX_STEPS - 2
    step = limited.step(random_legal_actions(steps[0].action_mask, rng))
    assert step.truncated.tolist() == step.done.tolist() == [True, False, True, True]
    assert step.loser.tolist() == [-1] * B and not step.rewards.any()


def test_state_before_reset_is_refused():
    refused(lambda: BatchedGames(CONFIG, B, seed=0).state(), "state() called before reset()", "call reset() first")


@pytest.mark.parametrize("game, action, fragments", [
    (B, 0, [f"game={B}", f"expected a game from 0 to {B - 1}"]),
    (-1, 0, ["game=-1"]),
    (0, 10**6, ["action=1000000", "expected an integer in [0, 219)"]),
    (0, 1.5, ["action=1.5"]),
])  # fmt: skip
def test_describe_action_names_a_bad_game_or_action(game, action, fragments):
    refused(lambda: _started().describe_action(game, action), *fragments)


MASKS = [
    ("one game's mask, not a batch", np.ones(219, np.int8), ["mask of shape (219,)", "expected (B, A)"]),
    ("NaN entries", np.full((2, 5), np.nan), ["mask holds NaN", "game 0"]),
    ("strings", np.array([["1", "0"]]), ["mask of dtype <U1", "expected 0/1 integers or bools"]),
]


@pytest.mark.parametrize("mask, fragments", [pytest.param(m, f, id=i) for i, m, f in MASKS])
def test_random_legal_actions_names_a_bad_mask(mask, fragments):
    refused(lambda: random_legal_actions(mask, np.random.default_rng(0)), *fragments)


def test_random_legal_actions_names_a_seed_given_for_a_generator():
    refused(lambda: random_legal_actions(np.ones((2, 3), np.int8), 0), "rng=0", "numpy.random.Generator")


# ---------------------------------------------------------------------------- fuzzing

counts = st.one_of(st.integers(-2, 9), st.floats(-1, 9), st.booleans(), st.text(max_size=1), st.none())
rows = st.lists(counts, min_size=7, max_size=9)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    starter=st.one_of(st.integers(-1, 5), st.booleans(), st.floats(0, 4), st.none()),
    hands=st.one_of(st.lists(rows, min_size=3, max_size=5), st.just(GOOD.hands)),
    removed=st.one_of(rows, st.just(GOOD.removed)),
    mutate=st.integers(0, 7),
)
def test_any_deal_starts_a_valid_game_or_is_refused_changing_nothing(starter, hands, removed, mutate):
    games, twin = _started(), _started()
    deal = Deal(starter=starter, hands=hands, collections=GOOD.collections, removed=removed)
    try:
        step = games.reset(deals=[deal] + _deals(B - 1, seed=4))
    except ValueError:
        assert _same(_run(games, 60, seed=3), _run(twin, 60, seed=3))
        return
    # Accepted: it is a whole deck dealt by integers, and the game it starts is playable.
    used = np.sum(hands, axis=0) + np.sum(GOOD.collections, axis=0) + np.asarray(removed)
    assert used.tolist() == list(CONFIG.cards.copies)
    assert step.action_mask[0].any()
