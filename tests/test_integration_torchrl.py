"""TorchRL with the real library: PettingZooWrapper(cockroach_env.env(), use_mask=True) as it is."""

from __future__ import annotations

import pytest

pytest.importorskip("torchrl")

import torch  # noqa: E402
from torchrl.envs import PettingZooWrapper  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

import cockroach_env  # noqa: E402
from cockroach_env.env import INFO_DEFAULTS  # noqa: E402


@pytest.mark.parametrize("options", [{"num_players": 4}, {"num_players": 2}, {"preset": "royal", "num_players": 4}])
def test_check_env_specs_passes(options):
    env = PettingZooWrapper(cockroach_env.env(**options), use_mask=True, seed=0)
    check_env_specs(env, seed=0)


def test_a_masked_rollout_plays_a_whole_game_legally_and_rewards_every_seat():
    env = PettingZooWrapper(cockroach_env.env(num_players=4), use_mask=True, seed=0)
    assert env.group_map == {f"player_{s}": [f"player_{s}"] for s in range(4)}
    for seed in range(3):
        env.set_seed(seed)
        rollout = env.rollout(5_000, break_when_any_done=True)  # the spec's random actions respect the mask
        total = 0.0
        for group in env.group_map:
            acted = rollout[group, "mask"].squeeze(-1)
            chosen = rollout[group, "action"].reshape(-1, 1)
            legal = rollout[group, "action_mask"].squeeze(1).gather(-1, chosen).squeeze(-1)
            assert acted.any() and legal[acted].all()
            assert rollout["next", group, "done"][-1].all()
            reward = rollout["next", group, "reward"].sum().item()
            loser = int(rollout["next", group, "info", "loser"][-1].item())
            assert reward == pytest.approx(-1.0 if group == f"player_{loser}" else 1 / 3)
            total += reward
        assert total == pytest.approx(0.0, abs=1e-6)
        assert rollout["next", "done"][-1].all() and not rollout["next", "done"][:-1].any()


def test_infos_become_tensors():
    env = PettingZooWrapper(cockroach_env.env(num_players=3), use_mask=True, seed=0)
    reset = env.reset()
    info = reset["player_0", "info"]
    assert set(info.keys()) == set(INFO_DEFAULTS)
    assert torch.all(info["loser"] == -1)
