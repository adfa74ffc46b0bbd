"""Rendering: text and pictures show a seat's view, and nothing hidden unless asked by keyword.

RLlib's ``PettingZooEnv.render()`` calls ``env.render(self.render_mode)``; on ``raw_env``
that positional argument must not land in ``full_information`` (it would print every
hand). The leak tests reuse ``test_no_leak``'s reshuffle: everything the viewer
cannot see is dealt differently, and each public rendering must stay identical.
"""

from __future__ import annotations

import numpy as np
import pytest

from cockroach_env import raw_env
from cockroach_env.view import seat_view

from .conftest import legal_actions
from .test_no_leak import play_to_a_random_moment, resampled_replay

pytest.importorskip("PIL")


def mid_game(render_mode="rgb_array", seed=0, steps=15, **options):
    env = raw_env(render_mode=render_mode, **options)
    env.reset(seed=seed)
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        env.step(int(rng.choice(legal_actions(env))))
    return env


def test_rgb_array_is_an_image_of_the_table():
    env = mid_game()
    picture = env.render()
    assert picture.dtype == np.uint8 and picture.ndim == 3 and picture.shape[2] == 3
    assert picture.shape[:2] == (700, 1000)
    assert len(np.unique(picture.reshape(-1, 3), axis=0)) > 50, "a drawn table, not a blank canvas"
    assert "rgb_array" in raw_env.metadata["render_modes"]


def test_pettingzoo_render_test_passes_for_every_render_mode(capsys):
    from pettingzoo.test import render_test

    import cockroach_env

    render_test(cockroach_env.env)
    capsys.readouterr()


def test_a_positional_render_mode_as_rllib_passes_it_shows_nothing_hidden():
    for mode in ("ansi", "rgb_array"):
        env = mid_game(mode)
        np.testing.assert_array_equal(np.asarray(env.render(env.render_mode)), np.asarray(env.render()))
        with pytest.raises(ValueError, match="keyword-only"):
            env.render(True)
        with pytest.raises(ValueError, match="positional argument"):
            env.render("human")
    text = mid_game("ansi").render()
    assert "hand:" not in text and "card in play" not in text


def test_the_wrapped_env_takes_the_raw_envs_render_arguments():
    import cockroach_env

    wrapped = cockroach_env.env(num_players=3, render_mode="ansi")
    wrapped.reset(seed=0)
    raw = wrapped.unwrapped
    assert wrapped.render() == raw.render()
    assert wrapped.render("ansi") == raw.render()  # the mode passed positionally, as RLlib's PettingZooEnv does
    assert wrapped.render(viewer="player_1") == raw.render(viewer="player_1") != raw.render()
    assert wrapped.render(full_information=True) == raw.render(full_information=True)


def test_rllib_pettingzoo_env_render_shows_only_public_information():
    pytest.importorskip("ray.rllib")
    from ray.rllib.env.wrappers.pettingzoo_env import PettingZooEnv

    env = mid_game("ansi")
    wrapped = PettingZooEnv.__new__(PettingZooEnv)  # its __init__ resets the env; we keep the mid-game state
    wrapped.env, wrapped.render_mode = env, env.render_mode
    assert wrapped.render() == env.render() == env.render(full_information=False)
    assert wrapped.render() != env.render(full_information=True)


def test_full_information_is_only_given_on_request():
    env = mid_game("rgb_array")
    public, full = env.render(), env.render(full_information=True)
    assert not np.array_equal(public, full)
    with pytest.raises(ValueError, match="full_information"):
        env.render(full_information="yes")
    for not_a_bool in (
        "false",
        1,
        np.bool_(True),
    ):  # seat_view is the one source of every view: only True shows the hidden cards
        with pytest.raises(ValueError, match="full_information"):
            seat_view(env, "player_0", not_a_bool)


@pytest.mark.parametrize("preset", ["classic", "royal"])
def test_the_text_table_heads_every_card_column_with_a_different_name(preset):
    env = mid_game("ansi", preset=preset, steps=0)
    header = env.render().splitlines()[1].split()
    assert header[:2] == ["player", "hand"]
    assert len(set(header[2:])) == len(header[2:]) == len(env.cards.identities), (
        header
    )  # Royal: seven columns were all "royal"


def test_render_viewer_is_checked():
    with pytest.raises(ValueError, match="render_viewer='player_9'"):
        raw_env(render_mode="rgb_array", render_viewer="player_9")
    env = mid_game("ansi")
    with pytest.raises(ValueError, match="player_7"):
        env.render(viewer="player_7")


def test_a_seat_sees_its_own_hand_and_the_card_it_has_seen():
    env = mid_game("ansi", steps=1)  # an offer: the offerer has seen the card, the holder has not
    offerer = env.possible_agents[env.game.chain.offerer]
    holder = env.agent_selection
    card = env.cards.identities[env.game.chain.card]
    assert seat_view(env, offerer)["chain"]["card"] == card
    assert seat_view(env, holder)["chain"]["card"] is None
    assert seat_view(env, None)["chain"]["card"] is None
    assert f"card in play: {card}" in env.render(viewer=offerer)
    assert "card in play" not in env.render(viewer=holder)
    assert "hands" not in seat_view(env, holder) and seat_view(env, None, full_information=True)["hands"]


@pytest.mark.parametrize("preset, num_players", [("classic", 4), ("royal", 3), ("creature-to-start", 5), ("duel", 2)])
def test_no_public_rendering_changes_when_the_hidden_cards_are_reshuffled(preset, num_players, capsys):
    rng = np.random.default_rng(num_players)
    compared = differs = 0
    for seed in range(3):
        e, actions = play_to_a_random_moment(preset, num_players, {}, seed)
        e.render_mode = "rgb_array"
        for viewer in {e.game.current, int(rng.integers(num_players))}:
            replay = resampled_replay(e, actions, viewer, rng)
            if replay is None:
                continue
            agent = e.possible_agents[viewer]
            replay.render_mode = "rgb_array"
            assert seat_view(replay, agent) == seat_view(e, agent)
            np.testing.assert_array_equal(replay.render(viewer=agent), e.render(viewer=agent))
            np.testing.assert_array_equal(replay.render(), e.render())
            differs += not np.array_equal(replay.render(full_information=True), e.render(full_information=True))
            e.render_mode = replay.render_mode = "ansi"
            assert replay.render(viewer=agent) == e.render(viewer=agent)
            e.render_mode = replay.render_mode = "human"
            capsys.readouterr()
            e.render(viewer=agent)
            printed = capsys.readouterr().out
            replay.render(viewer=agent)
            assert capsys.readouterr().out == printed and f"hand of {agent}" in printed
            e.render_mode = "rgb_array"
            compared += 1
    assert compared >= 2
    assert differs >= 1, "the full-information picture shows the reshuffle, so the public one could have too"


def test_the_env_imports_no_drawing_or_web_library_until_a_picture_is_drawn():
    import subprocess
    import sys

    code = (
        "import sys, cockroach_env\n"
        "e = cockroach_env.raw_env(render_mode='ansi'); e.reset(seed=0); e.render()\n"
        "heavy = [m for m in ('PIL', 'fastapi', 'starlette', 'uvicorn', 'torch', 'ray') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "e = cockroach_env.raw_env(render_mode='rgb_array'); e.reset(seed=0); e.render()\n"
        "assert 'PIL' in sys.modules and 'fastapi' not in sys.modules\n"
    )
    subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        env={"PYTHONPATH": "."},
        cwd=str(__import__("pathlib").Path(__file__).parents[1]),
    )
