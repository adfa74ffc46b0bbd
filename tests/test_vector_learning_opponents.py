"""Opponents that learn: a callable on batches, an agent whose weights the caller refreshes, a table swapped between
steps, on the three vector envs.
"""

from __future__ import annotations

import numpy as np
import pytest

import baselines
from baselines.agent import LogitsAgent
from cockroach_env import GameConfig
from cockroach_env.vector import SelfPlayVectorEnv
from tests.test_vector import Recorder, random_actions

CONFIG = GameConfig(num_players=4)
CONFIG_ACTIONS = SelfPlayVectorEnv(1, "random", config=CONFIG).single_action_space.n


class Weighted(LogitsAgent):
    """A greedy agent whose logits are one weight per action: the caller changes ``weights`` in place."""

    name = "weighted"
    greedy = True

    def __init__(self, config: GameConfig):
        super().__init__(config, seed=0)
        self.weights = np.zeros(self.encoding.num_actions)

    def logits(self, observations, masks):
        return np.broadcast_to(self.weights, masks.shape).copy()


def _routes(opponents, num_envs=8, **options):
    """The three vector envs over ``opponents``, each as ``(reset() -> masks, step(actions) -> masks)``."""
    gym = SelfPlayVectorEnv(num_envs, opponents, seed=0, config=CONFIG, **options)

    def gym_step(actions):
        obs, *_ = gym.step(actions)
        return obs["action_mask"]

    routes = {"gymnasium": (gym, lambda: gym.reset()[0]["action_mask"], gym_step)}
    try:
        from cockroach_env.integrations.sb3 import MaskedSelfPlayVecEnv

        sb3 = MaskedSelfPlayVecEnv(num_envs, opponents, seed=0, config=CONFIG, **options)
        routes["sb3"] = (
            sb3,
            lambda: (sb3.reset(), sb3.action_masks())[1],
            lambda a: (sb3.step(a), sb3.action_masks())[1],
        )
    except ImportError:
        pass
    try:
        import torch
        from tensordict import TensorDict

        from cockroach_env.integrations.torchrl import BatchedCockroachEnv

        rl = BatchedCockroachEnv(batch_size=[num_envs], opponents=opponents, seed=0, config=CONFIG, **options)

        def rl_step(actions):
            td = rl.step(TensorDict({"action": torch.as_tensor(actions)}, batch_size=[num_envs]))
            return rl.reset(td["next"].exclude("reward").set("_reset", td["next", "done"]))["action_mask"].numpy()

        routes["torchrl"] = (rl, lambda: rl.reset()["action_mask"].numpy(), rl_step)
    except ImportError:
        pass
    return routes


def _play(reset, step, steps: int, seed: int = 0) -> None:
    masks, rng = reset(), np.random.default_rng(seed)
    for _ in range(steps):
        masks = step(random_actions(masks, rng))


def test_a_callable_on_batches_plays_every_opponent_seat_on_every_route():
    calls: list[tuple[tuple, tuple, np.dtype]] = []

    def lowest_legal(observations, masks):
        calls.append((observations.shape, masks.shape, observations.dtype))
        return np.argmax(masks, axis=1)

    for route, (env, reset, step) in _routes(lowest_legal).items():
        calls.clear()
        _play(reset, step, 30)
        size = env.games.encoding.observation.size
        assert calls and all(o[1:] == (size,) and m[1:] == (CONFIG_ACTIONS,) and d == np.float32 for o, m, d in calls)
        assert max(o[0] for o, _, _ in calls) > 1, f"{route}: the callable was called one row at a time"
        assert env.games.opponents.names == ["'lowest_legal'"]


def test_a_callable_returning_an_illegal_action_or_a_bad_shape_is_named():
    envs = SelfPlayVectorEnv(4, lambda o, m: np.zeros(len(m), np.int64), seed=0, config=CONFIG)
    with pytest.raises(ValueError, match=r"opponent '<lambda>' \(sub-environment \d, seat \d\) returned action 0"):
        _play(lambda: envs.reset()[0]["action_mask"], lambda a: envs.step(a)[0]["action_mask"], 30)
    envs = SelfPlayVectorEnv(4, lambda o, m: np.zeros(1), seed=0, config=CONFIG)
    with pytest.raises(ValueError, match=r"opponent '<lambda>' returned array\(\[0.\]\) for \d+ observations"):
        envs.reset()


def test_an_agent_whose_weights_the_caller_changes_plays_its_current_weights():
    """The env keeps the agent, not a copy: after the caller moves the weights, the opponents' moves follow them."""
    agent = Weighted(CONFIG)
    moves: list[np.ndarray] = []
    original = agent.act_batch

    def recorded(observations, masks):
        actions = original(observations, masks)
        moves.append(actions)
        return actions

    agent.act_batch = recorded
    envs = SelfPlayVectorEnv(16, agent, seed=0, config=CONFIG)
    obs, _ = envs.reset()
    rng = np.random.default_rng(0)
    favourite = []
    for weights in (np.arange(CONFIG_ACTIONS, dtype=float), -np.arange(CONFIG_ACTIONS, dtype=float)):
        agent.weights[:] = weights  # in place, as an optimizer step changes a network's weights
        moves.clear()
        for _ in range(10):
            obs, *_ = envs.step(random_actions(obs["action_mask"], rng))
        favourite.append(np.concatenate(moves))
    # Higher actions preferred first, then lower ones: the mean move falls.
    assert favourite[0].mean() > favourite[1].mean() + 1


# ---------------------------------------------------------------------------- swapping the table
def test_set_opponents_swaps_the_table_between_steps_on_every_route():
    for route, (env, reset, step) in _routes("random").items():
        log: list[int] = []
        recorder = Recorder(CONFIG, log)
        masks = reset()
        masks = step(random_actions(masks, np.random.default_rng(0)))
        env.set_opponents([recorder])
        assert env.games.opponents.names == ["'recorder'"] and not log
        step(random_actions(masks, np.random.default_rng(1)))
        assert log, f"{route}: the new table did not play"


@pytest.mark.parametrize(
    ("opponents", "message"),
    [
        ([], r"opponents=\[\] is not allowed"),
        ("nobody", "opponent 'nobody' is not a known agent"),
        (baselines.make("random", GameConfig(num_players=2)), r"opponents\[0\].*was built for"),
        (42, r"opponents\[0\] \(42\) is not an agent"),
        (baselines.agent.Agent, "is a class, not an agent"),
    ],
)
def test_set_opponents_refuses_what_the_constructor_refuses_and_changes_nothing(opponents, message):
    swapped = SelfPlayVectorEnv(6, ["random", "heuristic"], seed=3, config=CONFIG)
    kept = SelfPlayVectorEnv(6, ["random", "heuristic"], seed=3, config=CONFIG)
    with pytest.raises(ValueError, match=message):
        SelfPlayVectorEnv(6, opponents, seed=3, config=CONFIG)
    a, _ = swapped.reset()
    b, _ = kept.reset()
    with pytest.raises(ValueError, match=message):
        swapped.set_opponents(opponents)
    rng_a, rng_b = np.random.default_rng(0), np.random.default_rng(0)
    for _ in range(20):
        a, *_ = swapped.step(random_actions(a["action_mask"], rng_a))
        b, *_ = kept.step(random_actions(b["action_mask"], rng_b))
        assert np.array_equal(a["observation"], b["observation"])


def test_set_opponents_before_the_first_reset_seats_the_new_table_from_the_start():
    log: list[int] = []
    envs = SelfPlayVectorEnv(4, "random", seed=0, config=CONFIG)
    envs.set_opponents(Recorder(CONFIG, log))
    envs.reset()
    assert log
