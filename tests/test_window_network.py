"""The network reads the move window as indices: the same outputs as the product of its weights with the one-hot slots.

A layer that reads the one-hot move slots (the trunk's first layer, or the event layer with
``event_embedding``) sums the weight columns of the entries that are 1; the network looks
them up from the window's indices instead. The weights are the same, so checkpoints keep
loading and playing as before: these tests hold the network to the one-hot product, in every
form of the network, with the observation as the env gives it and as a rollout keeps it.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cockroach_env import GameConfig
from cockroach_env.batched import BatchedGames, random_legal_actions
from cockroach_env.window import window_layout
from training.core.checkpoint import load_agent
from training.core.learner import Rollout
from training.core.model import ActorCritic, mask_bias, move_slot_order

NETWORKS = {
    "mlp": {},
    "mlp, card counting, separate critic": {"card_counting": True, "separate_critic": True},
    "event embedding": {"event_embedding": 8},
    "event embedding, card counting": {"event_embedding": 5, "card_counting": True, "separate_critic": True},
}
CONFIGS = [
    GameConfig(num_players=4, history=8),
    GameConfig(num_players=3, edition="royal", history=5),
    GameConfig.from_options("mini", recall=True),
]


def one_hot_heads(model: ActorCritic, obs: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits and values as the product of the weights with the one-hot observation (the network before it took
    indices).
    """
    scaled = obs * model.obs_scale
    extra = [model.card_counting.tensor_forward(obs)] if model.card_counting is not None else []
    if model.events is None:
        inputs = torch.cat([scaled, *extra], dim=1)
    else:
        index, slots, features = move_slot_order(model.game_config)
        outside, moves = index[: len(index) - slots * features], index[len(index) - slots * features :]
        events = model.events(scaled[:, moves].reshape(len(obs), slots, features)).flatten(1)
        inputs = torch.cat([scaled[:, outside], *extra, events], dim=1)
    hidden = model.trunk(inputs)
    critic = hidden if model.critic_trunk is None else model.critic_trunk(inputs)
    return model.policy_head(hidden), model.value_head(critic).squeeze(-1)


def played_steps(config: GameConfig, games: int, steps: int, seed: int) -> list:
    batch = BatchedGames(config, games, seed=seed, backend="numpy")
    rng = np.random.default_rng(seed)
    step = batch.reset()
    played = [step]
    for _ in range(steps):
        step = batch.step(random_legal_actions(step.action_mask, rng))
        played.append(step)
    return played


@pytest.mark.parametrize("network", list(NETWORKS))
@pytest.mark.parametrize("config", CONFIGS, ids=["classic-4p-history8", "royal-3p-history5", "mini-recall"])
def test_the_network_over_indices_is_the_product_with_the_one_hot_slots(config, network):
    model = ActorCritic(config, [24, 12], seed=3, **NETWORKS[network])
    layout = window_layout(config)
    for step in played_steps(config, games=24, steps=30, seed=1)[::6]:
        obs, window = torch.from_numpy(step.observation), torch.from_numpy(step.window)
        with torch.no_grad():
            expected_logits, expected_value = one_hot_heads(model, obs)
            from_one_hot = model.network_inputs(obs)
            from_indices = model.network_inputs(obs[:, : layout.prefix].clone(), window)
            logits, value = model.heads(from_indices)
        assert torch.equal(from_one_hot, from_indices)  # the window read back from the one-hot slots, or handed over
        assert from_indices.shape[1] == model.base_width + layout.slots * len(layout.fields)
        torch.testing.assert_close(logits, expected_logits, rtol=0, atol=1e-5)
        torch.testing.assert_close(value, expected_value, rtol=0, atol=1e-5)


@pytest.mark.parametrize("network", ["mlp", "event embedding"])
def test_the_gradient_reaches_the_same_weights_as_through_the_one_hot_slots(network):
    config = CONFIGS[0]
    model = ActorCritic(config, [16], seed=0, **NETWORKS[network])
    step = played_steps(config, games=16, steps=12, seed=2)[-1]
    obs = torch.from_numpy(step.observation)
    grads = []
    for heads in (lambda: model.heads(model.network_inputs(obs)), lambda: one_hot_heads(model, obs)):
        model.zero_grad()
        logits, value = heads()
        (logits.square().mean() + value.square().mean()).backward()
        grads.append({name: p.grad.clone() for name, p in model.named_parameters()})
    for name in grads[0]:
        torch.testing.assert_close(grads[0][name], grads[1][name], rtol=1e-4, atol=1e-6, msg=name)


def test_a_shipped_recall_agent_plays_as_it_did_over_the_one_hot_observation():
    agent = load_agent("mini-recall", seed=0)
    model = agent.model
    compared = 0
    for step in played_steps(agent.config, games=32, steps=40, seed=5)[::4]:
        obs = torch.from_numpy(step.observation)
        with torch.no_grad():
            expected, _ = one_hot_heads(model, obs)
        legal = step.action_mask.astype(bool)
        np.testing.assert_allclose(
            agent.action_probabilities_batch(step.observation, step.action_mask),
            torch.softmax(expected + mask_bias(torch.from_numpy(legal)), dim=1).numpy(),
            rtol=0,
            atol=1e-5,
        )
        greedy = np.where(legal, agent.logits(step.observation, step.action_mask), -np.inf).argmax(1)
        np.testing.assert_array_equal(greedy, np.where(legal, expected.numpy(), -np.inf).argmax(1))
        compared += len(obs)
    assert compared >= 300


def test_a_rollout_keeps_the_window_as_indices_and_gives_back_the_observations():
    config = CONFIGS[1]
    layout = window_layout(config)
    step = played_steps(config, games=12, steps=9, seed=4)[-1]
    rollout = Rollout(40, 0, step.action_mask.shape[1], layout)
    rows = np.arange(12)
    rollout.append(
        step.observation[:, : layout.prefix], step.action_mask, rows, np.zeros(12), np.zeros(12), step.window
    )
    assert rollout.obs.shape == (40, layout.prefix) and rollout.window.dtype == np.int16
    assert rollout.obs.nbytes + rollout.window.nbytes < 0.4 * 40 * layout.size * 4
    np.testing.assert_array_equal(rollout.observations(rows), step.observation)


def test_a_history_run_with_its_window_as_indices_resumes_exactly_with_the_update_in_its_own_process(tmp_path):
    """Rollouts, the overlapped update process, the magnet's reward bonus and the snapshots all read the window as
    indices; a run stopped and resumed ends where the uninterrupted run does.
    """
    from training.core import checkpoint as ckpt

    from .test_training import _metrics, _train

    sets = [
        "game.history=6",
        "model.event_embedding=4",
        "ppo.overlap=true",
        "ppo.magnet_coef=0.5",
        "ppo.magnet_reward=true",
    ]
    extra = [a for s in sets for a in ("--set", s)]
    assert _train(tmp_path, "whole", 4, *extra) == 0
    assert _train(tmp_path, "split", 2, *extra) == 0
    assert _train(tmp_path, "split", 4, "--resume", *extra) == 0
    runs = {name: ckpt.load_checkpoint(tmp_path / name / "checkpoint", kind="run") for name in ("whole", "split")}
    assert runs["whole"].metadata["game_config"]["history"] == 6
    assert runs["split"].tensors.keys() == runs["whole"].tensors.keys()
    for key, value in runs["whole"].tensors.items():
        assert torch.equal(value, runs["split"].tensors[key]), key
    assert _metrics(tmp_path / "whole" / "metrics.csv") == _metrics(tmp_path / "split" / "metrics.csv")
