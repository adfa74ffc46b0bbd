"""The move window as indices (``cockroach_env.window``): the same information as the one-hot move slots.

The batched engine hands each observation's move slots as a few integers (``BatchStep.window``),
which training carries instead of the one-hot rows. These tests hold the mapping to the
engine's one-hot observation (itself held to the AEC env by ``test_history.py`` and
``test_recall_batched.py``) on random games of every rule set with a window and with recall,
and to the no-leak property: what the viewer cannot see leaves the indices alone.
"""

from __future__ import annotations

import numpy as np
import pytest

from cockroach_env.batched import BatchedGames, random_legal_actions
from cockroach_env.config import GameConfig
from cockroach_env.window import EMPTY, WINDOW_FIELDS, window_from_observation, window_layout, window_one_hot

from .conftest import rule_sets
from .test_no_leak import play_to_a_random_moment, resampled_replay
from .test_recall_batched import deal_of


def check_window(step, layout) -> int:
    """The step's window rebuilds its observation's move slots and is read back from them; returns the filled slots."""
    assert step.window.shape == (len(step.observation), *layout.shape) and step.window.dtype == np.int16
    np.testing.assert_array_equal(window_one_hot(step.window, layout), step.observation[:, layout.prefix :])
    np.testing.assert_array_equal(window_from_observation(step.observation, layout), step.window)
    return int((step.window[:, :, 0] != EMPTY).sum())


@pytest.mark.parametrize("preset, num_players", rule_sets())
def test_the_window_indices_are_the_engines_one_hot_slots_in_every_rule_set(preset, num_players):
    """Random games of every rule set with a window (its length drawn), every step, both ways of the mapping."""
    rng = np.random.default_rng(num_players)
    config = GameConfig.from_options(preset, num_players=num_players, history=int(rng.integers(1, 24)))
    layout = window_layout(config)
    assert layout.fields == tuple(WINDOW_FIELDS)[: 4 if config.edition == "royal" else 3]
    games = BatchedGames(config, 16, seed=num_players, backend="numpy")
    step = games.reset()
    filled = finished = 0
    for _ in range(30 * num_players):  # long enough for games to end and be dealt again
        filled += check_window(step, layout)
        step = games.step(random_legal_actions(step.action_mask, rng))
        finished += int(step.done.sum())
    check_window(step, layout)
    assert filled > 16 * config.history and finished > 0
    if config.edition == "royal":
        assert (step.window[:, :, 3] != EMPTY).any()  # the face-up penalty card is carried
    assert (step.window[:, :, 2] != EMPTY).any()  # calls reveal cards


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize(
    "config",
    [
        GameConfig.from_options("mini", recall=True),
        GameConfig(num_players=4, recall=True),
        GameConfig(num_players=3, edition="royal", recall=True),
        GameConfig.from_options("creature-to-start", num_players=4, recall=True),
        GameConfig(num_players=4, max_steps=25, history=30),
        GameConfig(num_players=4, edition="royal", history=8),
    ],
    ids=[
        "mini-recall",
        "classic-4p-recall",
        "royal-3p-recall",
        "creature-to-start-4p-recall",
        "truncated-4p",
        "royal-4p",
    ],
)
def test_the_window_indices_cover_recall_and_truncated_games_on_both_backends(config, backend):
    """The numba backend writes the slots and their indices in one compiled pass, the numpy backend with index
    arrays: the same arrays.
    """
    rng = np.random.default_rng(1)
    layout = window_layout(config)
    games = BatchedGames(config, 8, seed=1, backend=backend)
    step = games.reset()
    for _ in range(40):
        check_window(step, layout)
        step = games.step(random_legal_actions(step.action_mask, rng))
    check_window(step, layout)


def test_rules_without_move_slots_have_no_window():
    config = GameConfig(num_players=4)
    assert window_layout(config) is None
    assert BatchedGames(config, 2, seed=0).reset().window is None


@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("preset, num_players, flags", [("royal", 3, {"history": 5}), ("classic", 4, {"recall": True})])
def test_the_window_indices_are_unchanged_when_everything_the_viewer_cannot_see_is_reshuffled(
    preset, num_players, flags, backend
):
    """Two games that differ only in what the seat to act cannot see (hands, the card in play it did not see) give it
    the same indices.
    """
    rng = np.random.default_rng(0)
    compared = 0
    for seed in range(8):
        e, actions = play_to_a_random_moment(preset, num_players, flags, seed)
        viewer = e.game.current
        replay = resampled_replay(e, actions, viewer, rng)
        if replay is None:
            continue
        games = BatchedGames(e.config, 2, seed=0, backend=backend)
        step = games.reset(deals=[deal_of(e), deal_of(replay)])
        for pair in zip(actions, replay.replayed_actions):
            step = games.step(np.array(pair))
        assert (step.to_act == viewer).all()
        np.testing.assert_array_equal(step.window[1], step.window[0])
        layout = window_layout(e.config)
        expected = window_from_observation(e.observe(f"player_{viewer}")["observation"][None], layout)
        np.testing.assert_array_equal(step.window[:1], expected)
        compared += 1
    assert compared >= 5, compared
