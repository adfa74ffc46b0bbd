"""``GameConfig.recall`` on the batched engine: the same observations, masks and states as the AEC env.

The batched engine writes the recall segments (dealt hand, starter, opening collections,
one slot per decision) from a move log per game in numpy, after the kernels
(``cockroach_env/batched/recall.py``). These tests hold it to the AEC env, which reads
them from ``Game.events`` (``encoding.recall_moves``), step by step with both backends,
across re-deals within a step, explicit and queued deals, refused steps, and to the
no-leak property: reshuffling what the viewer cannot see leaves its observation alone.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
import pytest

from cockroach_env import raw_env
from cockroach_env.batched import BatchedGames, BatchStep, random_legal_actions
from cockroach_env.config import GameConfig
from cockroach_env.engine import Deal, random_deal

from .test_batched import BACKENDS, compare, config_id, crafted_royal_deals, differential, reset_env
from .test_no_leak import play_to_a_random_moment, resampled_replay

RECALL_CONFIGS = [
    GameConfig.from_options("mini", recall=True),
    GameConfig.from_options("mini-3p", recall=True),
    GameConfig(num_players=4, recall=True),
    GameConfig.from_options("creature-to-start", num_players=4, recall=True),
    GameConfig(num_players=4, edition="royal", recall=True),
    GameConfig(num_players=4, max_steps=25, recall=True),
]


def recall_part(games: BatchedGames, vector: str) -> slice:
    """Where the recall segments are in the observation or state vectors."""
    layout = getattr(games.encoding, vector)
    first = "dealt_hand" if vector == "observation" else "dealt_hands"
    return slice(layout.segments[first].start, layout.size)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("config", RECALL_CONFIGS, ids=config_id)
def test_recall_plays_like_the_env(config, backend):
    """Observation, mask, state and outcome of every game at every step, across re-deals within a step."""
    seen = differential(config, backend, batch_size=4, finished_games=12, seed=config.num_players)
    assert seen["games"] >= 12
    if config.max_steps is not None:
        assert seen["truncated"] > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_recall_with_explicit_and_queued_deals_plays_like_the_env(backend):
    """``reset(deals=...)`` with more deals than games: the re-deals take the queued ones (rare Royal paths: draws,
    specials to hand).
    """
    config = GameConfig(num_players=3, edition="royal", recall=True)
    deals = crafted_royal_deals(config, 60, np.random.default_rng(7))
    seen = differential(config, backend, batch_size=4, finished_games=30, seed=7, deals=deals)
    assert seen["penalty_draw"] > 0 and seen["special_drawn_to_hand"] > 0 and seen["chained_penalty_draw"] > 0


@pytest.mark.parametrize("backend", BACKENDS)
def test_recall_restarts_with_every_reset(backend):
    """A second ``reset`` mid-game forgets the old moves: the first decision of the new deals, as the env has it."""
    config = GameConfig(num_players=3, recall=True)
    games = BatchedGames(config, 3, seed=1, backend=backend)
    step = games.reset()
    rng = np.random.default_rng(2)
    for _ in range(30):
        step = games.step(random_legal_actions(step.action_mask, rng))
    assert step.observation[:, recall_part(games, "observation")].any()
    deals = [random_deal(config, np.random.default_rng(k)) for k in range(3)]
    for restart in (lambda: games.reset(deals=deals), lambda: games.reset(seed=5)):
        step = restart()
        envs = [raw_env(config=config) for _ in range(3)]
        for b, deal in games.last_deals.items():
            reset_env(envs[b], deal)
        states = games.state()
        for b in range(3):
            compare(step, states, envs, b, f"{backend} game {b} after a reset")
        moves = games.encoding.state.segments["move_actor"]
        assert not states[:, moves.start :].any()  # no decision yet


def log_snapshot(games: BatchedGames) -> list[np.ndarray]:
    return [array.copy() for array in games._state.arrays() + games._recall.arrays()]


@pytest.mark.parametrize("backend", BACKENDS)
def test_refused_steps_and_resets_leave_the_move_log_alone(backend):
    config = GameConfig(num_players=3, edition="royal", recall=True)
    games, twin = (BatchedGames(config, 8, seed=2, backend=backend) for _ in range(2))
    step, _ = games.reset(), twin.reset()
    rng = np.random.default_rng(3)
    for _ in range(25):
        actions = random_legal_actions(step.action_mask, rng)
        step, _ = games.step(actions), twin.step(actions)
    actions = random_legal_actions(step.action_mask, rng)
    bad = actions.copy()
    bad[5] = np.flatnonzero(step.action_mask[5] == 0)[0]
    before = log_snapshot(games)
    with pytest.raises(ValueError, match="game 5: action .* is illegal"):
        games.step(bad)
    with pytest.raises(ValueError, match="out of range"):
        games.step(np.full(8, games.num_actions))
    with pytest.raises(ValueError, match="at least batch_size=8"):
        games.reset(deals=[random_deal(config, np.random.default_rng(0))])
    assert all(np.array_equal(x, y) for x, y in zip(before, log_snapshot(games)))
    after, twin_after = games.step(actions), twin.step(actions)
    for field in fields(BatchStep):
        assert np.array_equal(getattr(after, field.name), getattr(twin_after, field.name)), field.name
    assert np.array_equal(games.state(), twin.state())


def test_recall_costs_nothing_when_off():
    """Without recall there is no move log, and the layout and sizes are those of the kernels."""
    plain, recalling = (
        BatchedGames(GameConfig(num_players=4), 2, seed=0),
        BatchedGames(GameConfig(num_players=4, recall=True), 2, seed=0),
    )
    assert plain._recall is None and recalling._recall is not None
    assert plain.rules.observation_size == plain.observation_size == recalling.rules.observation_size
    assert plain.rules.dims == recalling.rules.dims  # the same compiled kernels
    assert recalling.observation_size == recalling.encoding.observation.size > plain.observation_size
    assert recalling.bytes_per_game > plain.bytes_per_game
    a, b = plain.reset(), recalling.reset()
    assert np.array_equal(a.observation, b.observation[:, : plain.observation_size])
    assert b.observation.flags.c_contiguous and b.observation.shape == (2, recalling.observation_size)


def deal_of(env) -> Deal:
    """The deal an AEC env's game started from: the penalty cards drawn so far go back on top of the deck."""
    game, cards = env.game, env.config.cards
    drawn = [
        cards.index(event["card"])
        for event in game.events
        if event["type"] == "penalty_to_hand" or (event["type"] == "place" and event["source"] == "penalty")
    ]
    return Deal(
        game.starter,
        [list(row) for row in game.dealt_hands],
        [list(row) for row in game.opening_collections],
        list(game.removed),
        drawn + list(game.penalty_deck),
    )


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("preset, num_players", [("mini", 2), ("mini-3p", 3), ("creature-to-start", 4), ("royal", 3)])
def test_recall_observation_is_unchanged_when_everything_the_viewer_cannot_see_is_reshuffled(
    preset, num_players, backend
):
    """tests/test_no_leak.py's reshuffle, played on the batched engine: the seat to act sees the same observation in
    both games.
    """
    rng = np.random.default_rng(num_players)
    compared = recall_changed = 0
    for seed in range(10):
        e, actions = play_to_a_random_moment(preset, num_players, {"recall": True}, seed)
        viewer = e.game.current
        for _ in range(2):
            replay = resampled_replay(e, actions, viewer, rng)
            if replay is None:
                continue
            games = BatchedGames(e.config, 2, seed=0, backend=backend)
            step = games.reset(deals=[deal_of(e), deal_of(replay)])
            assert games.last_deals == {0: deal_of(e), 1: deal_of(replay)}
            for pair in zip(actions, replay.replayed_actions):
                step = games.step(np.array(pair))
            assert not step.done.any() and (step.to_act == viewer).all()
            np.testing.assert_array_equal(
                step.observation[1], step.observation[0], err_msg=f"seat {viewer} sees a hidden difference"
            )
            np.testing.assert_array_equal(step.observation[0], e.observe(f"player_{viewer}")["observation"])
            np.testing.assert_array_equal(step.action_mask[1], step.action_mask[0])
            states = games.state()
            recall_changed += not np.array_equal(
                states[0, recall_part(games, "state")], states[1, recall_part(games, "state")]
            )
            compared += 1
    assert compared >= 8, compared
    assert recall_changed >= compared // 3, "the reshuffle should usually change the other seats' dealt hands"


@pytest.mark.parametrize(
    "config",
    [GameConfig(num_players=3, recall=True), GameConfig(num_players=3, edition="royal", recall=True)],
    ids=config_id,
)
def test_the_arena_plays_recall_configs_on_both_engines(config):
    """Baselines read the observation by segment name: with recall they play the very same games, on either engine."""
    from dataclasses import replace

    from training.evaluation.arena import play_match

    lineup = ["heuristic", "bluffer", "random"]
    batched = play_match(lineup, config, games=24, seed=3, engine="batched", batch_size=8)
    aec = play_match(lineup, config, games=24, seed=3, engine="aec", batch_size=8)
    plain = play_match(lineup, replace(config, recall=False), games=24, seed=3, engine="batched", batch_size=8)
    assert batched.engine == "batched" and batched.to_json()["config"]["recall"] is True
    assert batched.to_json()["agents"] == aec.to_json()["agents"] == plain.to_json()["agents"]
    assert sum(agent["losses"] for agent in batched.to_json()["agents"]) == 24


def test_recall_layouts_the_engine_does_not_write_are_refused():
    """The recall segments must come last, in the encoding's order and shapes; anything else is refused, naming it."""
    from cockroach_env.batched.layout import _Rules
    from cockroach_env.encoding import Encoding, Layout, _state_specs

    config = GameConfig(num_players=3, recall=True)
    specs = _state_specs(config)
    names = [spec[0] for spec in specs]
    swapped = list(specs)
    a, b = names.index("move_actor"), names.index("move_public")
    swapped[a], swapped[b] = swapped[b], swapped[a]
    longer = [
        (name, (shape[0] + 1, *shape[1:]), *rest) if name == "move_revealed" else (name, shape, *rest)
        for name, shape, *rest in specs
    ]
    for bad, match in ((swapped, "ends with .*move_public.*move_actor"), (longer, "'move_revealed' is")):
        encoding = Encoding(config)
        encoding.state = Layout(bad)
        encoding.observation = Layout(encoding._observation_specs())
        with pytest.raises(ValueError, match=match):
            _Rules(config, encoding)


def test_an_agent_trained_on_recall_observations_plays_in_the_arena(tmp_path):
    """``cockroach-train`` with ``game.recall`` (PPO on the batched engine), then the agent in the arena on both
    engines and in ``cockroach-eval``.
    """
    pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    pytest.importorskip("yaml")
    from pathlib import Path

    from training.cli.eval import main as evaluate
    from training.cli.train import main as train
    from training.core import checkpoint as ckpt
    from training.evaluation.arena import play_match

    sets = [
        "game.recall=true",
        "ppo.num_envs=8",
        "ppo.num_steps=8",
        "ppo.num_minibatches=2",
        "ppo.update_epochs=1",
        "model.hidden_sizes=[16]",
        "opponents.snapshot_every=1",
        "schedule.checkpoint_every=2",
        f"schedule.total_decisions={2 * 8 * 8}",
        "evaluation.every=0",
        "evaluation.final_games=8",
        "name=recall",
        f"output_dir={tmp_path}",
    ]
    config_path = Path(__file__).resolve().parents[1] / "configs" / "research" / "ppo_mini.yaml"
    assert train(["--config", str(config_path), "--no-progress", *[a for s in sets for a in ("--set", s)]]) == 0
    config = GameConfig.from_options("mini", recall=True)
    agent = ckpt.load_agent(tmp_path / "recall" / "final", seed=0, config=config)
    for engine in ("batched", "aec"):
        result = play_match([agent, "heuristic"], config, games=20, seed=0, engine=engine)
        assert result.engine == engine and result.report("recall").games == 20
    assert (
        evaluate(
            [
                str(tmp_path / "recall" / "final"),
                "heuristic",
                "--preset",
                "mini",
                "--option",
                "recall=true",
                "--games",
                "8",
                "--quiet",
            ]
        )
        == 0
    )


def test_an_explicit_deal_with_more_cards_in_hand_than_the_recall_slots_allow_is_refused_as_by_the_env():
    """The batched engine refuses the deal the env refuses (``cockroach_env.encoding.check_recall_deal``): a duel dealt
    64
    cards where it deals 54 could outrun the observation's move slots (it raised 'made more than max_decisions'
    mid-game).
    """
    config = GameConfig.from_options("duel", recall=True)
    deal = Deal(0, [[4] * 8, [4] * 8], [[0] * 8, [0] * 8], [0] * 8, [])
    games = BatchedGames(config, batch_size=1)
    with pytest.raises(ValueError, match=r"deals\[0\] puts 64 cards in hands.*54.*recall"):
        games.reset(deals=[deal])
    BatchedGames(GameConfig.from_options("duel"), batch_size=1).reset(deals=[deal])  # without recall it plays
