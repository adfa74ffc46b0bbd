"""TorchRL on the batched route: ``BatchedCockroachEnv`` with the real library's checks and masked-action tools."""

from __future__ import annotations

import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

pytest.importorskip("torchrl")

import torch  # noqa: E402
from tensordict.nn import TensorDictModule  # noqa: E402
from torchrl.envs import ActionMask, TransformedEnv  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402
from torchrl.modules import MaskedCategorical, ProbabilisticActor  # noqa: E402

from cockroach_env import IllegalActionError  # noqa: E402
from cockroach_env.integrations.torchrl import BatchedCockroachEnv  # noqa: E402
from cockroach_env.vector import INFO_KEYS, SelfPlayVectorEnv  # noqa: E402


@pytest.mark.parametrize(
    "options",
    [
        {"num_players": 4},
        {"num_players": 2},
        {"preset": "royal", "num_players": 4},
        {"num_players": 4, "history": 8},
        {"preset": "royal", "num_players": 4, "history": 4},
        {"preset": "mini", "history": 16},
    ],
)
def test_check_env_specs_passes(options):
    env = BatchedCockroachEnv(batch_size=[4], opponents="random", seed=0, **options)
    check_env_specs(env, seed=0)
    assert (
        env.observation_spec["observation"].shape[-1]
        == SelfPlayVectorEnv(1, "random", **options).games.encoding.observation.size
    )
    assert env.batch_size == torch.Size([4])
    assert set(INFO_KEYS) < set(env.observation_spec.keys())
    assert env.observation_spec["action_mask"].dtype == torch.bool


def test_random_actions_respect_the_mask_and_games_are_dealt_again():
    env = BatchedCockroachEnv(batch_size=[16], opponents="random", seed=0, num_players=4)
    rollout = env.rollout(60, break_when_any_done=False)
    assert rollout.batch_size == torch.Size([16, 60])
    chosen = rollout["action"].unsqueeze(-1)
    assert rollout["action_mask"].gather(-1, chosen).all()
    done = rollout["next", "done"].squeeze(-1)
    assert done.sum() > 5
    reward = rollout["next", "reward"].squeeze(-1)
    assert (reward[~done] == 0).all()
    assert torch.isclose(reward[done].unsqueeze(-1), torch.tensor([-1.0, 1 / 3])).any(-1).all()
    assert rollout["next", "action_mask"].any(-1).all()  # the next decision's, the new game's where done


def test_a_masked_categorical_policy_with_the_action_mask_transform_plays_legally():
    env = TransformedEnv(
        BatchedCockroachEnv(batch_size=[8], opponents="heuristic", seed=0, num_players=4), ActionMask()
    )
    size, actions = env.observation_spec["observation"].shape[-1], env.action_spec.space.n
    net = torch.nn.Linear(size, actions)
    policy = ProbabilisticActor(
        TensorDictModule(net, in_keys=["observation"], out_keys=["logits"]),
        in_keys={"logits": "logits", "mask": "action_mask"},
        distribution_class=MaskedCategorical,
        return_log_prob=True,
    )
    with torch.no_grad():
        rollout = env.rollout(40, policy, break_when_any_done=False)
    assert rollout["action_mask"].gather(-1, rollout["action"].unsqueeze(-1)).all()


def test_it_plays_the_same_games_as_the_gymnasium_route_from_the_same_seed():
    env = BatchedCockroachEnv(batch_size=[4], opponents=["random", "heuristic"], num_players=4)
    env.set_seed(9)
    gym = SelfPlayVectorEnv(4, ["random", "heuristic"], num_players=4, autoreset_mode=AutoresetMode.SAME_STEP)
    td = env.reset()
    reference, _ = gym.reset(seed=9)
    for _ in range(60):
        assert np.array_equal(td["observation"].numpy(), reference["observation"])
        td["action"] = td["action_mask"].int().argmax(-1)
        td = env.step(td)
        reference, reward, terminated, truncated, info = gym.step(td["action"].numpy())
        done = terminated | truncated
        assert np.array_equal(td["next", "reward"].squeeze(-1).numpy(), reward)
        assert np.array_equal(td["next", "done"].squeeze(-1).numpy(), done)
        for i in np.flatnonzero(done):
            assert np.array_equal(td["next", "observation"][i].numpy(), info["final_obs"][i]["observation"])
        td = env.step_mdp(td)
        if done.any():
            td["_reset"] = torch.as_tensor(done).unsqueeze(-1)
            td = env.reset(td)


@pytest.mark.parametrize("batch_size", [[2, 3], [], [0], 0, -2, "4", None])
def test_a_batch_size_that_is_not_one_positive_dimension_is_refused(batch_size):
    with pytest.raises(ValueError, match=r"batch_size=.* is not allowed; expected one dimension"):
        BatchedCockroachEnv(batch_size=batch_size, opponents="random")


def test_an_illegal_action_is_refused_naming_the_batch_entry():
    env = BatchedCockroachEnv(batch_size=[2], opponents="random", seed=0)
    td = env.reset()
    action = td["action_mask"].int().argmax(-1)
    action[0] = int(torch.nonzero(~td["action_mask"][0])[0])
    td["action"] = action
    with pytest.raises(IllegalActionError, match="sub-environment 0"):
        env.step(td)
