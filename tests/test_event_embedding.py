"""The history-aware network: event tokens of the observation's move slots through one shared embedding."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cockroach_env import GameConfig
from cockroach_env.batched import BatchedGames, random_legal_actions
from cockroach_env.encoding import encoding_for
from training.core.config import ConfigError, load_config
from training.core.model import MOVE_SEGMENTS, ActorCritic, move_slot_order

CONFIGS = [
    GameConfig(num_players=4, history=8),
    GameConfig(num_players=4, edition="royal", history=4),
    GameConfig.from_options("mini", history=9),
    GameConfig.from_options("mini", recall=True),
]


def _step_after(config: GameConfig, games: int, moves: int):
    """The batched engine's step of ``games`` games after ``moves`` random legal moves."""
    batch = BatchedGames(config, games, seed=3)
    step = batch.reset()
    for _ in range(moves):
        step = batch.step(random_legal_actions(step.action_mask, np.random.default_rng(0)))
    return step


@pytest.mark.parametrize("config", CONFIGS, ids=str)
def test_the_slot_order_reads_every_entry_once_with_each_slots_features_together(config):
    index, slots, features = move_slot_order(config)
    segments = encoding_for(config).observation.segments
    assert sorted(index.tolist()) == list(range(encoding_for(config).observation.size))
    moves = [segments[name] for name in MOVE_SEGMENTS if name in segments]
    assert slots == moves[0].shape[0] and features == sum(seg.shape[1] for seg in moves)
    tail = index[len(index) - slots * features :].reshape(slots, features)
    for k in range(slots):  # slot k: its actor, move, revealed card (and top), in segment order
        assert tail[k].tolist() == [
            i for seg in moves for i in range(seg.start + k * seg.shape[1], seg.start + (k + 1) * seg.shape[1])
        ]


@pytest.mark.parametrize("card_counting", [False, True])
@pytest.mark.parametrize("config", CONFIGS[:3], ids=str)
def test_every_slot_is_embedded_with_the_same_weights(config, card_counting):
    """The same event in slot 0 or in slot 1 gets the same embedding: moving it changes only where the trunk reads
    it, and zeroed slots all embed to the same vector.
    """
    model = ActorCritic(config, [16], card_counting=card_counting, seed=0, event_embedding=6)
    step = _step_after(config, games=32, moves=3)
    obs = torch.from_numpy(step.observation)
    inputs = model.network_inputs(obs)
    index, slots_, features = move_slot_order(config)
    slots = obs[:, index[len(index) - slots_ * features :]].reshape(len(obs), model.slots, model.slot_features)
    assert slots[:, 0].abs().sum() > 0  # the latest decision is in slot 0
    # the inputs name each slot's entries that are 1 (the slot's width for an empty field)
    rows = inputs[:, model.base_width :].reshape(len(obs), model.slots, -1).long()
    hot = torch.zeros(len(obs), model.slots, model.slot_features + 1).scatter_(2, rows, 1.0)[:, :, :-1]
    assert torch.equal(hot, slots)
    embedded = model.events(slots)
    same = model.events(slots[:, :1].expand(-1, model.slots, -1))
    assert torch.allclose(same[:, 0], same[:, 1]) and torch.allclose(embedded[:, 0], same[:, 1])
    base = inputs[:, : model.base_width]
    scaled = (obs * model.obs_scale).numpy()
    outside = index[: model.base_width - (model.card_counting.size if card_counting else 0)]
    assert np.array_equal(base[:, : len(outside)].numpy(), scaled[:, outside])
    hidden = model.trunk(torch.cat([base, embedded.flatten(1)], dim=1))  # the slots' one-hot rows times the weights
    logits, value = model.heads(inputs)
    assert torch.allclose(logits, model.policy_head(hidden), atol=1e-6)
    assert torch.allclose(value, model.value_head(hidden).squeeze(-1), atol=1e-6)
    logits, value = model(obs, torch.from_numpy(step.action_mask.astype(bool)))
    assert logits.shape == (32, model.num_actions) and torch.isfinite(value).all()
    assert model.spec["event_embedding"] == 6 and ActorCritic.from_spec(config, model.spec).spec == model.spec


def test_an_event_embedding_without_move_slots_is_refused_by_name():
    with pytest.raises(ValueError, match="event_embedding=4 needs move slots"):
        ActorCritic(GameConfig(num_players=4), [8], event_embedding=4)
    with pytest.raises(ConfigError, match=r"model: event_embedding=4 is not allowed; expected 0 with this game"):
        load_config(None, ["model.event_embedding=4"])
    with pytest.raises(ConfigError, match=r"event_embedding=-1 is not allowed; expected 0 to 4096"):
        load_config(None, ["model.event_embedding=-1", "game.history=4"])
    assert load_config(None, ["model.event_embedding=4", "game.history=4"]).model.entry()["event_embedding"] == 4
    assert "event_embedding" not in load_config(None, []).model.entry()  # older checkpoints' entries stay as they were


def test_a_history_aware_agent_trains_saves_and_plays_everywhere_a_checkpoint_plays(tmp_path):
    """A short run on ``mini`` with a history window and the event embedding: its checkpoint loads, plays the AEC env
    and the arena, and is evaluated exactly.
    """
    import cockroach_env
    from training.algorithms.ppo import train
    from training.core.checkpoint import load_agent, read_metadata
    from training.evaluation.arena import play_match
    from training.evaluation.exact import nash_conv

    sets = [
        "game.preset=mini", "game.history=9", "model.event_embedding=4", "model.hidden_sizes=[16]",
        "ppo.num_envs=16", "ppo.num_steps=8", "schedule.total_decisions=512", "schedule.checkpoint_every=2",
        "evaluation.every=0", "evaluation.final_games=8", "evaluation.opponents=[random]", f"output_dir={tmp_path}",
        "name=hist", "opponents.learner_seats=[1]",
    ]  # fmt: skip
    final = train(load_config(None, sets), progress_bar=False)
    meta = read_metadata(final)
    assert meta["model"]["event_embedding"] == 4 and meta["game_config"]["history"] == 9
    game = GameConfig.from_options("mini", history=9)
    agent = load_agent(final, config=game)
    env = cockroach_env.env(preset="mini", history=9)
    env.reset(seed=1)
    for _name in env.agent_iter():
        obs, _, done, truncated, _ = env.last()
        env.step(None if done or truncated else agent.act(obs))
    by_engine = {
        engine: play_match([str(final), "random"], games=20, config=game, seed=0, engine=engine)
        for engine in ("batched", "aec")
    }
    assert [r.losses for r in by_engine["batched"].agents] == [r.losses for r in by_engine["aec"].agents]
    assert by_engine["aec"].games == 20
    assert 0 <= nash_conv(agent, game) < 10


def test_the_best_response_to_a_history_aware_agent_is_history_aware(tmp_path):
    """``cockroach-exploit`` trains its best response on the agent's own rules and network: the same window of moves
    and the same event embedding, so it is as informed as the agent it plays.
    """
    import json

    from training.cli.exploit import main
    from training.core.checkpoint import read_metadata, save_checkpoint

    game = GameConfig.from_options("mini", history=9)
    model = ActorCritic(game, [8], seed=0, event_embedding=4)
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    save_checkpoint(
        tmp_path / "agent", tensors, {"kind": "agent", "name": "a", "game_config": game.to_dict(), "model": model.spec}
    )
    sets = ["ppo.num_envs=16", "ppo.num_steps=8", "evaluation.every=0"]
    argv = [str(tmp_path / "agent"), "--decisions", "256", "--games", "20", "--output-dir", str(tmp_path)]
    argv += ["--json", str(tmp_path / "report.json"), "--no-progress", *[a for s in sets for a in ("--set", s)]]
    assert main(argv) == 0
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["game_config"]["history"] == 9
    best_response = read_metadata(next(tmp_path.glob("exploit_*")) / "final")
    assert best_response["game_config"]["history"] == 9 and best_response["model"]["event_embedding"] == 4


@pytest.mark.parametrize("config", CONFIGS[:3], ids=str)
def test_pooled_events_are_lookups_of_each_moves_parts_summed_with_a_weight_per_slot(config):
    """``event_pooling``: a move's embedding is the sum of its actor's, public move's and revealed card's table rows
    (an empty part has a row of its own), and the trunk reads the slots' activations summed with per-slot weights.
    """
    from training.core.model import move_segment_widths

    model = ActorCritic(config, [16], card_counting=True, seed=0, event_embedding=6, event_pooling=True)
    with torch.no_grad():
        model.slot_weights.copy_(torch.randn(model.slot_weights.shape, generator=torch.Generator().manual_seed(1)))
    obs = torch.from_numpy(_step_after(config, games=16, moves=4).observation)
    inputs = model.network_inputs(obs)
    index, slots, features = move_slot_order(config)
    widths = move_segment_widths(config)
    expected_rows = []
    for row in range(len(obs)):
        moves = obs[row, index[len(index) - slots * features :]].reshape(slots, features)
        pooled = torch.zeros(6)
        for k in range(slots):
            start, offset, embedded = 0, 0, model.event_bias.clone()
            for width in widths:
                part = moves[k, start : start + width]
                entry = int(part.argmax()) if part.max() > 0 else width
                embedded = embedded + model.event_table.weight[offset + entry]
                start, offset = start + width, offset + width + 1
            pooled = pooled + torch.tanh(embedded) * model.slot_weights[k]
        expected_rows.append(pooled)
    expected = torch.stack(expected_rows).detach()
    base = inputs[:, : model.base_width]
    trunk_input = torch.cat([base, expected], dim=1)
    logits, value = model.heads(inputs)
    hidden = model.trunk(trunk_input)
    assert torch.allclose(logits, model.policy_head(hidden), atol=1e-5)
    assert torch.allclose(value, model.value_head(hidden).squeeze(-1), atol=1e-5)
    assert model.trunk[0].in_features == model.base_width + 6  # the window costs the trunk 6 inputs, whatever K
    assert ActorCritic.from_spec(config, model.spec).spec == model.spec and model.spec["event_pooling"] is True


def test_event_pooling_without_an_embedding_is_refused_by_name():
    with pytest.raises(ValueError, match="event_pooling=True needs an event_embedding > 0"):
        ActorCritic(GameConfig(num_players=4, history=4), [8], event_pooling=True)
    with pytest.raises(ConfigError, match=r"event_pooling=True is not allowed; expected false with event_embedding 0"):
        load_config(None, ["model.event_pooling=true", "game.history=4"])
    entry = load_config(None, ["model.event_pooling=true", "model.event_embedding=4", "game.history=4"]).model.entry()
    assert entry["event_pooling"] is True and "event_pooling" not in load_config(None, []).model.entry()
