"""``BatchedCockroachMultiAgentEnv`` with the real TorchRL: every seat a learner, one move per game per step.

Pinned here: TorchRL's spec checks; the same seed and moves play ``BatchedGames``'s games
(constructor seed, ``set_seed`` and ``reset(seed=...)``); every seat's observation is what
the AEC env shows that seat, final observations included, and stays the same when
everything that seat cannot see is reshuffled (every seat, not only the one to act);
every seat's terminal reward; the refusals.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

pytest.importorskip("torchrl")

import torch  # noqa: E402
from tensordict import TensorDict  # noqa: E402
from torchrl.envs.utils import check_env_specs  # noqa: E402

from cockroach_env import GameConfig, IllegalActionError, raw_env  # noqa: E402
from cockroach_env.batched import BatchedGames  # noqa: E402
from cockroach_env.integrations.torchrl_marl import GROUP, BatchedCockroachMultiAgentEnv  # noqa: E402

from .test_no_leak import resampled_replay  # noqa: E402
from .test_vector import _reset_options  # noqa: E402

RULE_SETS = [
    pytest.param({"num_players": 4}, id="classic-4p"),
    pytest.param({"preset": "mini"}, id="mini-2p"),
    pytest.param({"preset": "royal", "num_players": 3}, id="royal-3p"),
    pytest.param({"num_players": 3, "history": 4}, id="classic-3p-history4"),
]


def _acting(data: TensorDict) -> tuple[torch.Tensor, torch.Tensor]:
    """``(games, seat to act)`` index pairs of every game of ``data``."""
    return torch.arange(data.batch_size[0]), data["current_player"]


@pytest.mark.parametrize("options", RULE_SETS)
def test_check_env_specs_passes(options):
    env = BatchedCockroachMultiAgentEnv(batch_size=[8], seed=0, **options)
    check_env_specs(env, seed=0)
    assert env.group_map == {GROUP: [f"player_{s}" for s in range(env.config.num_players)]}


SEEDINGS = [pytest.param(rules.values[0], "constructor", id=f"{rules.id}-constructor") for rules in RULE_SETS] + [
    pytest.param({"preset": "mini"}, seeding, id=f"mini-2p-{seeding}") for seeding in ("set_seed", "reset")
]
"""Every rule set seeded by the constructor; ``set_seed`` and ``reset(seed=...)`` on one."""


@pytest.mark.parametrize("options, seeding", SEEDINGS)
def test_the_same_seed_and_moves_play_the_games_of_batched_games(options, seeding):
    b, seed = 16, 7
    torch.manual_seed(0)  # rand_action draws from torch's global generator
    env = BatchedCockroachMultiAgentEnv(batch_size=[b], seed=seed if seeding == "constructor" else 99, **options)
    reference = BatchedGames(env.config, b, seed=seed)
    step = reference.reset()
    if seeding == "set_seed":
        env.set_seed(seed)
    data = env.reset(seed=seed) if seeding == "reset" else env.reset()
    assert env.games.last_deals == reference.last_deals
    n, rng, ended = env.config.num_players, np.random.default_rng(0), 0
    for _ in range(80):
        games, seat = _acting(data)
        assert torch.equal(seat, torch.as_tensor(step.to_act))
        assert torch.equal(data[GROUP, "mask"], torch.nn.functional.one_hot(seat, n).bool())
        np.testing.assert_array_equal(data[GROUP, "observation"][games, seat].numpy(), step.observation)
        np.testing.assert_array_equal(data[GROUP, "action_mask"][games, seat].numpy(), step.action_mask > 0)
        waiting = ~data[GROUP, "mask"]
        assert data[GROUP, "action_mask"][waiting][:, 0].all() and data[GROUP, "action_mask"][waiting][:, 1:].sum() == 0
        data = env.rand_action(data)
        actions = data[GROUP, "action"][games, seat].clone()
        noise = torch.as_tensor(rng.integers(-5, 10_000, size=(b, n)))  # the waiting seats' entries: ignored
        data[GROUP, "action"] = torch.where(waiting, noise, data[GROUP, "action"])
        data, following = env.step_and_maybe_reset(data)
        step = reference.step(actions.numpy())
        done = data["next", "done"].squeeze(-1).numpy()
        np.testing.assert_array_equal(done, step.done)
        assert data["next", GROUP, "done"].squeeze(-1).numpy().tolist() == [[d] * n for d in done]
        rewards = data["next", GROUP, "reward"].squeeze(-1).numpy()
        np.testing.assert_array_equal(rewards, np.where(step.done[:, None], step.rewards, 0.0))
        np.testing.assert_array_equal(data["next", "loser"].numpy(), step.loser)
        if done.any():
            assert env.games.last_deals == reference.last_deals
        ended += int(done.sum())
        data = following
    assert ended > 0


@pytest.mark.parametrize("options", RULE_SETS)
def test_every_seat_sees_what_the_aec_env_shows_it_and_nothing_it_cannot_see(options):
    """Each game is replayed on the AEC env: every seat's observation at every step (the final one included) is the
    AEC env's for that seat, and, with everything that seat cannot see reshuffled (``test_no_leak``), still is.
    """
    config = GameConfig.from_options(**options)
    torch.manual_seed(0)
    env = BatchedCockroachMultiAgentEnv(batch_size=[2], seed=5, config=config)
    data = env.reset()

    def table(game: int):
        aec = raw_env(config=config, render_mode="ansi")
        aec.reset(options=_reset_options(env.games.last_deals[game], config, aec.possible_agents))
        return aec

    aecs, played = [table(0), table(1)], [[], []]
    agents = aecs[0].possible_agents
    rng = np.random.default_rng(2)
    finished = reshuffled = 0
    while finished < 3:
        for game, aec in enumerate(aecs):
            assert int(data["current_player"][game]) == aec.game.current
            for seat, agent in enumerate(agents):
                view = aec.observe(agent)
                np.testing.assert_array_equal(data[GROUP, "observation"][game, seat].numpy(), view["observation"])
                if seat == aec.game.current:
                    np.testing.assert_array_equal(data[GROUP, "action_mask"][game, seat].numpy(), view["action_mask"])
            if played[game] and rng.random() < 0.3:
                for viewer, agent in enumerate(agents):
                    replay = resampled_replay(aec, played[game], viewer, rng)
                    if replay is not None:
                        other = replay.observe(agent)["observation"]
                        ours = data[GROUP, "observation"][game, viewer].numpy()
                        np.testing.assert_array_equal(ours, other)
                        reshuffled += 1
        data = env.rand_action(data)
        games, seat = _acting(data)
        actions = data[GROUP, "action"][games, seat].tolist()
        data, following = env.step_and_maybe_reset(data)
        for game, aec in enumerate(aecs):
            aec.step(actions[game])
            played[game].append(actions[game])
            if bool(data["next", "done"][game]):
                assert aec.game.over
                for seat, agent in enumerate(agents):
                    final = data["next", GROUP, "observation"][game, seat].numpy()
                    np.testing.assert_array_equal(final, aec.observe(agent)["observation"])
                    reward = float(data["next", GROUP, "reward"][game, seat])
                    assert reward == pytest.approx(aec._cumulative_rewards[agent])
                aecs[game], played[game] = table(game), []
                finished += 1
            else:
                assert not aec.game.over
        data = following
    assert reshuffled >= 5, reshuffled


def test_every_seat_gets_its_reward_when_the_game_ends_whoever_moved_last():
    torch.manual_seed(0)
    env = BatchedCockroachMultiAgentEnv(batch_size=[32], seed=1, num_players=4)
    rollout = env.rollout(150, break_when_any_done=False)
    done = rollout["next", "done"].squeeze(-1)
    reward = rollout["next", GROUP, "reward"].squeeze(-1)
    loser = rollout["next", "loser"]
    assert done.sum() > 10 and (reward[~done] == 0).all()
    expected = torch.full((int(done.sum()), 4), 1 / 3)
    expected[torch.arange(len(expected)), loser[done]] = -1.0
    assert torch.allclose(reward[done], expected)
    last_mover = rollout["current_player"][done]
    assert (last_mover != loser[done]).any() and (last_mover == loser[done]).any()


def _refused_step(env, data, action, expected, match):
    """``env.step`` with ``action`` raises ``expected`` matching ``match``, and the games stay as they were."""
    data = data.clone()
    data[GROUP, "action"] = action
    before = env.games.observation
    with pytest.raises(expected, match=match):
        env.step(data)
    np.testing.assert_array_equal(env.games.observation, before)


def test_the_seat_to_act_may_play_only_a_legal_action_and_the_refusal_names_it():
    env = BatchedCockroachMultiAgentEnv(batch_size=[4], seed=0, num_players=3)
    data = env.reset()
    games, seat = _acting(data)
    illegal = int(torch.nonzero(~data[GROUP, "action_mask"][2, seat[2]])[0])
    action = env.rand_action(data)[GROUP, "action"].clone()
    action[2, seat[2]] = illegal
    move = re.escape(env.describe_action(2, illegal))
    _refused_step(
        env, data, action, IllegalActionError, rf"sub-environment 2 \(seat {int(seat[2])}.* {illegal} \({move}\)"
    )
    action[2, seat[2]] = 10_000
    _refused_step(env, data, action, IllegalActionError, r"10000.*out of range; expected an integer in \[0, \d+\)")


@pytest.mark.parametrize(
    "action, match",
    [
        (torch.zeros(4, dtype=torch.int64), r"shape \(4,\) are not allowed; expected \(4, 3\)"),
        (torch.zeros(4, 3, 1, dtype=torch.int64), r"shape \(4, 3, 1\) are not allowed; expected \(4, 3\)"),
        (torch.zeros(4, 3, dtype=torch.float32), "dtype torch.float32 are not allowed; expected integers"),
    ],
)
def test_malformed_actions_are_refused_by_shape_and_dtype(action, match):
    env = BatchedCockroachMultiAgentEnv(batch_size=[4], seed=0, num_players=3)
    data = env.reset()
    given = TensorDict({GROUP: TensorDict({"action": action}, batch_size=[4])}, batch_size=[4])
    before = env.games.observation
    with pytest.raises(ValueError, match=match):
        env.step(given)
    np.testing.assert_array_equal(env.games.observation, before)
    assert int(data["current_player"].max()) < 3


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda env: env.set_seed(-1), r"seed=-1 is not allowed"),
        (lambda env: env.reset(seed="7"), r"seed='7' is not allowed"),
        (lambda env: env.reset(sed=7), r"unexpected keyword arguments \['sed'\]; expected only \['seed'"),
    ],
)
def test_bad_seeds_and_reset_options_are_refused_by_name(call, match):
    env = BatchedCockroachMultiAgentEnv(batch_size=[2], seed=0)
    with pytest.raises((ValueError, TypeError), match=match):
        call(env)


@pytest.mark.parametrize(
    "options, match",
    [
        ({"batch_size": [0]}, r"batch_size=\[0\] is not allowed"),
        ({"batch_size": [2, 2]}, r"batch_size=\[2, 2\] is not allowed"),
        ({"batch_size": [2], "recall": True}, "recall=True is not supported by the multi-agent batched env"),
    ],
)
def test_bad_construction_is_refused_by_name(options, match):
    with pytest.raises(ValueError, match=match):
        BatchedCockroachMultiAgentEnv(**options)


def test_reset_and_step_after_close_raise():
    env = BatchedCockroachMultiAgentEnv(batch_size=[2], seed=0)
    data = env.rand_action(env.reset())
    env.close()
    with pytest.raises(RuntimeError, match=r"step\(\) called after close\(\)"):
        env.step(data)
    with pytest.raises(RuntimeError, match=r"reset\(\) called after close\(\)"):
        env.reset()
