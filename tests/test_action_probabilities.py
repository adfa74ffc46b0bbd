"""``action_probabilities``: a distribution over the legal actions that ``act`` actually samples from."""

from __future__ import annotations

import numpy as np
import pytest

import baselines
from baselines.heuristic import TIE_JITTER, _least_with_jitter
from cockroach_env import GameConfig, raw_env

CONFIGS = {
    "mini": GameConfig.from_options(preset="mini"),
    "mini-3p": GameConfig.from_options(preset="mini-3p"),
    "classic-4p": GameConfig(num_players=4),
    "royal-3p": GameConfig(num_players=3, edition="royal"),
}


def observations(config: GameConfig, count: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Observations and masks of the seat to act, from games of random play."""
    rng = np.random.default_rng(seed)
    env = raw_env(config=config)
    obs, masks = [], []
    game = 0
    while len(obs) < count:
        env.reset(seed=seed + game)
        game += 1
        for _agent in env.agent_iter():
            observation, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                env.step(None)
                continue
            obs.append(observation["observation"])
            masks.append(observation["action_mask"])
            env.step(int(rng.choice(np.flatnonzero(observation["action_mask"]))))
    return np.array(obs[:count]), np.array(masks[:count])


def check_distribution(probs: np.ndarray, masks: np.ndarray) -> None:
    assert probs.dtype == np.float64 and probs.shape == masks.shape
    assert np.all(probs[masks == 0] == 0.0)
    assert np.all(probs >= 0.0)
    np.testing.assert_allclose(probs.sum(1), 1.0, atol=1e-12)


def check_sampling(agent, obs: np.ndarray, masks: np.ndarray, probs: np.ndarray, draws: int) -> None:
    """``act_batch`` on each row repeated ``draws`` times picks every action at its probability (5 sigma)."""
    k = len(obs)
    actions = agent.act_batch(np.repeat(obs, draws, axis=0), np.repeat(masks, draws, axis=0)).reshape(k, draws)
    counts = np.stack([np.bincount(row, minlength=masks.shape[1]) for row in actions]) / draws
    assert np.all(counts[probs == 0] == 0), "an action of probability 0 was played"
    tolerance = 5 * np.sqrt(probs * (1 - probs) / draws) + 1.5 / draws
    worst = np.unravel_index(np.argmax(np.abs(counts - probs) - tolerance), probs.shape)
    assert np.all(np.abs(counts - probs) <= tolerance), (
        f"row {worst[0]} action {worst[1]}: sampled {counts[worst]:.4f}, probability {probs[worst]:.4f}"
    )


@pytest.mark.parametrize("config_name", sorted(CONFIGS))
@pytest.mark.parametrize("name", ["random", "honest", "bluffer", "heuristic", "counter"])
def test_baseline_probabilities_are_what_act_samples(name, config_name):
    config = CONFIGS[config_name]
    obs, masks = observations(config, 24, seed=5)
    agent = baselines.make(name, config, seed=0)
    probs = agent.action_probabilities_batch(obs, masks)
    check_distribution(probs, masks)
    single = np.array(
        [agent.action_probabilities({"observation": o, "action_mask": m}) for o, m in zip(obs[:4], masks[:4])]
    )
    np.testing.assert_array_equal(single, probs[:4])
    check_sampling(agent, obs, masks, probs, draws=1500)
    # act (one row at a time) samples the same way as act_batch
    row = 0
    sampled = (
        np.bincount(
            [agent.act({"observation": obs[row], "action_mask": masks[row]}) for _ in range(600)],
            minlength=masks.shape[1],
        )
        / 600
    )
    assert np.all(np.abs(sampled - probs[row]) <= 5 * np.sqrt(probs[row] * (1 - probs[row]) / 600) + 2.5 / 600)


def test_scripted_baselines_mix_as_their_rates_say():
    config = CONFIGS["mini-3p"]
    obs, masks = observations(config, 200, seed=2)
    agent = baselines.make("bluffer", config)
    bluffer, enc = agent.action_probabilities_batch(obs, masks), agent.encoding
    peekable = masks[:, enc.respond_start + 2] == 1
    assert peekable.any()
    np.testing.assert_allclose(bluffer[peekable, enc.respond_start + 2], 0.25)
    honest = baselines.make("honest", config).action_probabilities_batch(obs, masks)
    assert np.all(honest[:, enc.respond_start + 2] == 0.0)


def test_near_ties_of_the_heuristic_follow_the_jitter_exactly():
    loss = np.array([0.5, 0.5 + 0.3 * TIE_JITTER, np.inf, 0.5 + 0.9 * TIE_JITTER, 0.5 + 2 * TIE_JITTER, 0.5])
    probs = _least_with_jitter(loss)
    rng = np.random.default_rng(0)
    draws = 400_000
    wins = (
        np.bincount(np.argmin(loss + TIE_JITTER * rng.random((draws, len(loss))), axis=1), minlength=len(loss)) / draws
    )
    np.testing.assert_allclose(probs, wins, atol=5 * np.sqrt(0.25 / draws))
    assert probs[2] == probs[4] == 0.0 and probs[0] == pytest.approx(probs[5])
    np.testing.assert_allclose(_least_with_jitter(np.array([0.2, np.inf, 0.2, 0.3])), [0.5, 0, 0.5, 0])


@pytest.mark.parametrize("greedy", [False, True])
def test_checkpoint_agent_probabilities_are_the_masked_softmax(greedy):
    torch = pytest.importorskip("torch")
    from training.core.model import ActorCritic, PolicyAgent

    config = CONFIGS["mini-3p"]
    model = ActorCritic(config, [32], "tanh", card_counting=True, seed=3)
    agent = PolicyAgent(model, config, seed=1, greedy=greedy)
    obs, masks = observations(config, 16, seed=4)
    probs = agent.action_probabilities_batch(obs, masks)
    check_distribution(probs, masks)
    with torch.no_grad():
        logits, _ = model(torch.as_tensor(obs), torch.as_tensor(masks > 0))
    expected = torch.softmax(logits.double(), dim=1).numpy()
    if greedy:
        expected = np.eye(masks.shape[1])[expected.argmax(1)]
    np.testing.assert_allclose(probs, expected, atol=1e-9)
    check_sampling(agent, obs, masks, probs, draws=1500)
