"""``GameConfig.history``: a fixed window of the last decisions, newest first.

The window reuses the recall segments with ``history`` slots. The AEC env's window is
held to its own recall observation of the same game (the last slots, reversed); the
batched engine's is held to the AEC env's step by step; on ``mini`` a window that holds
every decision tells information states apart as recall does. The no-leak reshuffle runs
with a window in ``tests/test_no_leak.py`` (``HISTORY_RULE_SETS``).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace

import numpy as np
import pytest

from cockroach_env import env as make_env
from cockroach_env import raw_env
from cockroach_env.batched import BatchedGames
from cockroach_env.config import MAX_HISTORY, GameConfig
from cockroach_env.encoding import (
    RECALL_SEGMENTS,
    encoding_for,
    keeps_moves,
    max_decisions,
    move_slots,
    public_moves,
)
from cockroach_env.engine import Deal
from cockroach_env.observation import decode_observation
from training.evaluation.exact import build_tree

from .conftest import legal_actions
from .test_batched import BACKENDS, config_id, differential
from .test_no_leak import play_to_a_random_moment, resampled_replay
from .test_recall_batched import deal_of

MOVE_SEGMENTS = ("move_actor", "move_public", "move_revealed", "move_top")


# ---------------------------------------------------------------------------- the option
def test_history_is_off_by_default_and_leaves_the_layout_and_the_config_dict_alone():
    plain, window = GameConfig(), GameConfig(history=32)
    assert plain.history == 0 and not keeps_moves(plain) and move_slots(plain) == 0
    assert "history" not in plain.to_dict()  # the dicts recorded before the option existed still compare equal
    assert window.to_dict()["history"] == 32 and GameConfig(**window.to_dict()) == window
    assert keeps_moves(window) and move_slots(window) == 32
    assert move_slots(GameConfig(recall=True)) == max_decisions(GameConfig(recall=True))
    plain_enc, window_enc = encoding_for(plain), encoding_for(window)
    assert list(window_enc.observation.segments)[: len(plain_enc.observation.segments)] == list(
        plain_enc.observation.segments
    )
    size = plain_enc.observation.size
    assert window_enc.observation.segments["dealt_hand"].start == size
    assert window_enc.observation.size == size + 8 + 4 + 32 * (4 + public_moves(window) + 8)
    assert window_enc.observation.size < encoding_for(GameConfig(recall=True)).observation.size
    assert set(window_enc.state.segments) - set(plain_enc.state.segments) <= set(RECALL_SEGMENTS)


@pytest.mark.parametrize(
    "options, match",
    [
        ({"history": True}, "history=True is not allowed; expected an integer"),
        ({"history": 1.5}, "history=1.5 is not allowed; expected an integer"),
        ({"history": "8"}, "history='8' is not allowed; expected an integer"),
        ({"history": -1}, f"history=-1 is not allowed; expected an integer from 0 .* to {MAX_HISTORY}"),
        ({"history": MAX_HISTORY + 1}, f"history={MAX_HISTORY + 1} is not allowed"),
        ({"history": 4, "recall": True}, "history=4 is not allowed with recall=True; expected one of them"),
    ],
)
def test_bad_history_values_are_refused_by_name(options, match):
    with pytest.raises(ValueError, match=match):
        GameConfig(**options)
    with pytest.raises(ValueError, match=match):
        GameConfig.from_options("mini", **options)
    with pytest.raises(ValueError, match=match):
        raw_env(**options)
    config = GameConfig(num_players=3)
    with pytest.raises(ValueError, match=match):
        raw_env(config=config, **options)
    assert config == GameConfig(num_players=3)  # nothing changed


def test_the_env_takes_history_as_an_option():
    env = make_env(history=32)
    env.reset(seed=0)
    assert env.unwrapped.config.history == 32
    observation = env.observe(env.agent_selection)["observation"]
    assert observation.shape == (encoding_for(GameConfig(history=32)).observation.size,)
    assert env.observation_space(env.agent_selection)["observation"].contains(observation)
    # a config's window survives a preset applied over it, and numpy integers are stored as ints
    config = raw_env(config=GameConfig(history=np.int64(5)), preset="rainbow").config
    assert config.history == 5 and type(config.history) is int and config.rainbow_loses


# ---------------------------------------------------------------------------- the AEC env
@pytest.mark.parametrize(
    "preset, num_players, window",
    [("classic", 4, 1), ("classic", 2, 16), ("creature-to-start", 3, 7), ("royal", 4, 12), ("mini", None, 100)],
)
def test_the_window_is_the_recall_log_newest_first(preset, num_players, window):
    """The same game with recall and with a window: the window's slot k is recall's slot ``decisions - 1 - k``."""
    players = {"num_players": num_players} if num_players else {}
    history = GameConfig.from_options(preset, history=window, **players)
    recall = replace(history, history=0, recall=True)
    enc, recall_enc = encoding_for(history), encoding_for(recall)
    rng = np.random.default_rng(window)
    windowed, full = raw_env(config=history), raw_env(config=recall)
    windowed.reset(seed=3)
    full.reset(seed=3)
    decisions = 0
    while not windowed.game.over and not any(windowed.truncations.values()):
        for viewer in range(history.num_players):
            seg = enc.observation.unpack(windowed.observe(f"player_{viewer}")["observation"])
            full_seg = recall_enc.observation.unpack(full.observe(f"player_{viewer}")["observation"])
            for name in ("dealt_hand", "starter", "opening_collections"):
                if name in seg:
                    np.testing.assert_array_equal(seg[name], full_seg[name])
            kept = min(decisions, window)
            for name in MOVE_SEGMENTS:
                if name not in seg:
                    continue
                assert seg[name].shape[0] == window
                np.testing.assert_array_equal(
                    seg[name][:kept], full_seg[name][decisions - kept : decisions][::-1], err_msg=name
                )
                assert not seg[name][kept:].any(), f"{name}: slots past the game's {decisions} decisions"
            assert np.flatnonzero(seg["move_actor"].any(axis=1)).tolist() == list(range(kept))
        action = int(rng.choice(legal_actions(windowed)))
        windowed.step(action)
        full.step(action)
        decisions += 1
    assert decisions > window or preset == "mini"
    moves = decode_observation(windowed.observe("player_0")["observation"], history)["moves"]
    full_moves = decode_observation(full.observe("player_0")["observation"], recall)["moves"]
    assert len(moves) == min(decisions, window) and moves == full_moves[::-1][:window]


# ---------------------------------------------------------------------------- the batched engine
HISTORY_CONFIGS = [
    GameConfig.from_options("mini", history=1),
    GameConfig.from_options("mini", history=200),
    GameConfig.from_options("mini-3p", history=4),
    GameConfig(num_players=2, history=16),
    GameConfig(num_players=4, history=1),
    GameConfig(num_players=4, history=32),
    GameConfig(num_players=4, history=MAX_HISTORY),
    GameConfig.from_options("creature-to-start", num_players=4, history=6),
    GameConfig(num_players=4, edition="royal", history=8),
    GameConfig(num_players=4, max_steps=25, history=30),
]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("config", HISTORY_CONFIGS, ids=config_id)
def test_history_plays_like_the_env(config, backend):
    """Observation, mask, state and outcome of every game at every step, across re-deals within a step."""
    seen = differential(config, backend, batch_size=4, finished_games=8, seed=config.num_players + config.history)
    assert seen["games"] >= 8
    if config.max_steps is not None:
        assert seen["truncated"] > 0


def test_history_costs_nothing_when_off_and_runs_the_kernels_of_the_plain_rules():
    plain = BatchedGames(GameConfig(num_players=4), 2, seed=0)
    window = BatchedGames(GameConfig(num_players=4, history=16), 2, seed=0)
    assert plain._recall is None and window._recall is not None
    assert plain.rules.dims == window.rules.dims  # the same compiled kernels
    assert window.rules.recall_slots == 16 and window.rules.recall_length == max_decisions(window.config)
    assert window.observation_size == window.encoding.observation.size > plain.observation_size
    a, b = plain.reset(), window.reset()
    assert np.array_equal(a.observation, b.observation[:, : plain.observation_size])


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_batched_window_is_unchanged_when_everything_the_viewer_cannot_see_is_reshuffled(backend):
    rng = np.random.default_rng(0)
    compared = 0
    for seed in range(8):
        e, actions = play_to_a_random_moment("royal", 3, {"history": 4}, seed)
        viewer = e.game.current
        replay = resampled_replay(e, actions, viewer, rng)
        if replay is None:
            continue
        games = BatchedGames(e.config, 2, seed=0, backend=backend)
        step = games.reset(deals=[deal_of(e), deal_of(replay)])
        for pair in zip(actions, replay.replayed_actions):
            step = games.step(np.array(pair))
        assert (step.to_act == viewer).all()
        np.testing.assert_array_equal(step.observation[1], step.observation[0])
        np.testing.assert_array_equal(step.observation[0], e.observe(f"player_{viewer}")["observation"])
        compared += 1
    assert compared >= 5, compared


def test_an_explicit_deal_with_more_cards_than_the_move_log_holds_is_refused_on_both_engines():
    config = GameConfig.from_options("duel", history=8)
    deal = Deal(0, [[4] * 8, [4] * 8], [[0] * 8, [0] * 8], [0] * 8, [])
    with pytest.raises(ValueError, match=r"deals\[0\] puts 64 cards in hands.*54.*history=8"):
        BatchedGames(config, batch_size=1).reset(deals=[deal])
    every_card = dict.fromkeys(config.cards.identities, 4)
    env = raw_env(config=config)
    with pytest.raises(ValueError, match="64 cards in hands.*54.*history=8"):
        env.reset(options={"starter": "player_0", "hands": {"player_0": every_card, "player_1": every_card}})


# ---------------------------------------------------------------------------- information
def test_a_window_as_long_as_the_game_tells_information_states_apart_like_recall():
    """On mini's whole tree with ``history >= max_decisions``: one observation per information set, and one
    information set per (seat, observation); a short window aliases some of them.
    """
    config = GameConfig.from_options("mini")
    full = replace(config, history=max_decisions(config))
    tree = build_tree(full)
    decision = tree.infoset >= 0
    observations_of, infosets_of = defaultdict(set), defaultdict(set)
    for infoset, row, seat in zip(tree.infoset[decision], tree.observation[decision], tree.player[decision]):
        observations_of[infoset].add(row)
        infosets_of[(seat, row)].add(infoset)
    assert max(map(len, observations_of.values())) == 1
    assert max(map(len, infosets_of.values())) == 1
    short = build_tree(replace(config, history=1))
    short_decision = short.infoset >= 0
    aliased = defaultdict(set)
    for infoset, row, seat in zip(
        short.infoset[short_decision], short.observation[short_decision], short.player[short_decision]
    ):
        aliased[(seat, row)].add(infoset)
    assert max(map(len, aliased.values())) > 1


# ---------------------------------------------------------------------------- agents
@pytest.mark.parametrize("engine", ["batched", "aec"])
def test_baselines_play_the_same_games_at_a_history_table(engine):
    """Baselines read the observation by segment name: a window changes none of their moves."""
    from training.evaluation.arena import play_match

    config = GameConfig(num_players=3, history=8)
    lineup = ["heuristic", "bluffer", "random"]
    windowed = play_match(lineup, config, games=16, seed=3, engine=engine, batch_size=8)
    plain = play_match(lineup, replace(config, history=0), games=16, seed=3, engine=engine, batch_size=8)
    assert windowed.to_json()["config"]["history"] == 8
    assert windowed.to_json()["agents"] == plain.to_json()["agents"]


def test_openspiel_takes_history_and_its_observation_tensor_is_the_env_observation():
    pyspiel = pytest.importorskip("pyspiel")
    import cockroach_env.openspiel as cos
    from cockroach_env.record import deal_of as deal_of_env
    from cockroach_env.record import env_from_deal

    config = GameConfig.from_options("mini-3p", history=3)
    game = pyspiel.load_game(cos.SHORT_NAME, {"preset": "mini-3p", "history": 3})
    assert game.observation_tensor_size() == encoding_for(config).observation.size
    with pytest.raises(ValueError, match="history=-2 is not allowed"):
        cos.config_from_params({"history": -2})
    rng = np.random.default_rng(5)
    for _ in range(3):
        state = game.new_initial_state()
        while state.is_chance_node():
            outcomes, probs = zip(*state.chance_outcomes())
            state.apply_action(int(rng.choice(outcomes, p=probs)))
        probe = raw_env(config=config)
        probe.game = state.p.game.copy()  # only to name the deal
        env = env_from_deal(config, deal_of_env(probe))
        while not state.is_terminal():
            seat = state.current_player()
            np.testing.assert_array_equal(
                np.asarray(state.observation_tensor(seat), np.float32), env.observe(f"player_{seat}")["observation"]
            )
            action = int(rng.choice(state.legal_actions()))
            state.apply_action(action)
            env.step(action)


def _save_agent(path, config: GameConfig):
    pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    from training.core import checkpoint as ckpt
    from training.core.model import ActorCritic

    model = ActorCritic(config, [8], "tanh", seed=0)
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    spec = {"hidden_sizes": [8], "activation": "tanh", "card_counting": False}
    return ckpt.save_checkpoint(
        path, tensors, {"kind": "agent", "name": path.name, "game_config": config.to_dict(), "model": spec}
    )


def test_checkpoints_of_a_history_table_load_play_and_evaluate(tmp_path):
    """A history agent plays its window (its rules named in the refusal otherwise); an agent without one plays a
    history table through the observation prefix; ``cockroach-eval <checkpoint> heuristic`` takes the window.
    """
    from training.cli.eval import main as evaluate
    from training.core import checkpoint as ckpt
    from training.evaluation.arena import play_match

    plain = GameConfig.from_options("mini")
    window = replace(plain, history=4)
    windowed_path = _save_agent(tmp_path / "windowed", window)
    plain_path = _save_agent(tmp_path / "plain", plain)
    with pytest.raises(ckpt.CheckpointError, match=r"play it with history=4 \(--option history=4"):
        ckpt.load_agent(windowed_path, config=plain)
    windowed = ckpt.load_agent(windowed_path, seed=0, config=window)
    prefixed = ckpt.load_agent(plain_path, seed=0, config=window)
    assert type(prefixed).__name__ == "RecallPrefixAgent" and prefixed.config == window
    for engine in ("batched", "aec"):
        result = play_match([windowed, prefixed], window, games=8, seed=0, engine=engine)
        assert result.report(windowed.name).games == 8
    assert evaluate([str(windowed_path), "heuristic", "--games", "4", "--quiet"]) == 0


def test_the_play_server_seats_a_history_agent_at_its_window_and_refuses_mixed_observations():
    pytest.importorskip("fastapi")
    from fastapi import HTTPException

    from play.server import _table_config

    plain = GameConfig(num_players=3)
    checkpoints = {
        "windowed": replace(plain, history=16).to_dict(),
        "recalling": replace(plain, recall=True).to_dict(),
        "plain": plain.to_dict(),
    }
    assert _table_config(plain, ["windowed", "heuristic", "plain"], checkpoints) == replace(plain, history=16)
    assert _table_config(plain, ["plain", "heuristic", "random"], checkpoints) == plain
    with pytest.raises(HTTPException) as refusal:
        _table_config(plain, ["windowed", "recalling", "random"], checkpoints)
    assert refusal.value.status_code == 422
    assert (
        "'windowed' needs history=16" in refusal.value.detail
        and "'recalling' needs recall=True" in refusal.value.detail
    )
