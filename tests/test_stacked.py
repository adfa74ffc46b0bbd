"""The opponent pool's snapshots decide in one batched pass (``training.core.stacked.PoolSampler``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from cockroach_env import GameConfig
from cockroach_env.batched import BatchedGames
from training.core.model import ActorCritic, sample_logits
from training.core.stacked import PoolSampler

SPEC = {"hidden_sizes": [32, 32], "activation": "tanh"}
CASES = {
    "plain": (GameConfig(num_players=4), SPEC),
    "history-pooled": (
        GameConfig(num_players=4, history=4),
        {**SPEC, "event_embedding": 8, "event_pooling": True},
    ),
    "history-separate-critic": (
        GameConfig(num_players=3, history=2),
        {**SPEC, "separate_critic": True, "card_counting": True},
    ),
}


def _step(config: GameConfig, games: int = 96):
    batch = BatchedGames(config, games, seed=3)
    batch.reset()
    rng = np.random.default_rng(0)
    step = batch.reset()
    for _ in range(7):  # into the game, so that the windows hold moves
        legal = step.action_mask.astype(bool)
        step = batch.step(np.array([rng.choice(np.flatnonzero(row)) for row in legal]))
    return step


def _groups(games: int, count: int, seed: int = 0) -> list[np.ndarray]:
    owner = np.random.default_rng(seed).integers(0, count, games)
    return [np.flatnonzero(owner == k) for k in range(count)]


def _reference(models, groups, step, seed: int) -> np.ndarray:
    """Each network alone on its rows, then one draw over the rows in the groups' order."""
    logits = []
    for model, rows in zip(models, groups):
        window = torch.from_numpy(step.window[rows]) if step.window is not None else None
        logits.append(model.heads(model.network_inputs(torch.from_numpy(step.observation[rows]), window))[0])
    order = np.concatenate(groups)
    mask = torch.from_numpy(step.action_mask[order].astype(bool))
    return sample_logits(torch.cat(logits), mask, torch.Generator().manual_seed(seed))[0].numpy()


def _sharp(model: ActorCritic) -> ActorCritic:
    """``model`` with a policy far from uniform (a fresh network's is nearly uniform)."""
    with torch.no_grad():
        model.policy_head.weight.mul_(300.0)
    return model.eval()


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_network_samples_its_own_rows_from_the_same_uniforms_as_alone(case):
    config, spec = CASES[case]
    step = _step(config)
    models = [_sharp(ActorCritic.from_spec(config, spec, seed=k)) for k in range(5)]
    groups = _groups(len(step.to_act), len(models))
    chosen = PoolSampler().sample(
        models, groups, step.observation, step.action_mask, step.window, torch.Generator().manual_seed(9)
    )
    assert [len(c) for c in chosen] == [len(g) for g in groups]
    np.testing.assert_array_equal(np.concatenate(chosen), _reference(models, groups, step, 9))
    for rows, actions in zip(groups, chosen):
        assert step.action_mask[rows, actions].all()


def test_the_stacked_weights_follow_the_pool_and_other_shapes_decide_alone():
    config, spec = CASES["plain"]
    step = _step(config)
    sampler = PoolSampler()
    models = [_sharp(ActorCritic.from_spec(config, spec, seed=k)) for k in range(3)]
    groups = _groups(len(step.to_act), 3, seed=1)

    def run(members, pool=sampler):
        seed = torch.Generator().manual_seed(4)
        return np.concatenate(pool.sample(members, groups, step.observation, step.action_mask, None, seed))

    first = run(models)
    np.testing.assert_array_equal(first, _reference(models, groups, step, 4))
    replaced = [models[0], _sharp(ActorCritic.from_spec(config, spec, seed=11)), models[2]]
    second = run(replaced)  # a snapshot replaced: stacked again, its rows play the new network
    np.testing.assert_array_equal(second, _reference(replaced, groups, step, 4))
    assert not np.array_equal(first[len(groups[0]) :], second[len(groups[0]) :])
    np.testing.assert_array_equal(run(models), first)
    wider = [models[0], _sharp(ActorCritic.from_spec(config, {**SPEC, "hidden_sizes": [48]}, seed=2)), models[2]]
    np.testing.assert_array_equal(run(wider, PoolSampler()), _reference(wider, groups, step, 4))


def test_a_group_per_network_is_required():
    config, spec = CASES["plain"]
    step = _step(config)
    model = ActorCritic.from_spec(config, spec, seed=0)
    with pytest.raises(ValueError, match="2 networks and 1 groups of rows; expected one group per network"):
        PoolSampler().sample([model, model], [np.arange(3)], step.observation, step.action_mask, None, None)
