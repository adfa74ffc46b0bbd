"""TorchRL: ``BatchedCockroachMultiAgentEnv``, batched games with every seat a learner, as a multi-agent ``EnvBase``.

::

    from torchrl.envs.utils import check_env_specs
    from cockroach_env.integrations.torchrl_marl import BatchedCockroachMultiAgentEnv

    env = BatchedCockroachMultiAgentEnv(batch_size=[256], seed=0, num_players=4)
    check_env_specs(env)
    rollout = env.rollout(100, break_when_any_done=False)   # (256, 100): one move per game per step

Entry ``b`` of the batch is game ``b`` of a ``BatchedGames``; every step is one move, by
the seat to act, in every game. The seats form one group, ``"agents"``
(``group_map == {"agents": ["player_0", ..., "player_{N-1}"]}``, TorchRL's
``MarlGroupMapType.ALL_IN_ONE_GROUP``), entry ``i`` of the group being absolute seat ``i``,
with the keys of TorchRL's wrappers of turn-based games (``PettingZooWrapper(...,
use_mask=True)`` over an AEC env, ``OpenSpielWrapper``). With ``B`` games, ``N`` seats,
``O`` observation entries and ``A`` actions:

| key | spec |
|---|---|
| ``("agents", "observation")`` | ``Bounded(0, high, (B, N, O), float32)``: each seat's own observation |
| ``("agents", "action_mask")`` | ``Binary((B, N, A), bool)``: the seat to act's legal actions; others: action 0 |
| ``("agents", "mask")`` | ``(B, N)`` bool: True for the seat to act (PettingZoo's ``mask``) |
| ``("agents", "action")`` | ``Categorical(A, (B, N), int64)``, its mask kept equal to ``action_mask`` |
| ``("agents", "reward")`` | ``(B, N, 1)`` float32: each seat's terminal reward, in the step that ends its game |
| ``("agents", "done"/"terminated"/"truncated")`` | ``(B, N, 1)`` bool: the game ended (every seat at once) |
| ``"done"``/``"terminated"``/``"truncated"`` | ``(B, 1)`` bool |
| ``"current_player"`` | ``Categorical(N, (B,), int64)``: the seat to act (OpenSpiel's key) |
| ``"loser"``, ``"loss_reason"`` | ``(B,)`` int64: of the game that ended in the step, -1 elsewhere |

Turns: only the seat to act moves. Its entry of ``("agents", "action")`` is its move;
the entries of the other seats are ignored, whatever they hold (as both wrappers do).
Their ``action_mask`` allows action 0 only, as ``OpenSpielWrapper`` marks its players
not to move: ``rand_action`` and a ``MaskedCategorical`` policy then give them action 0
with log-probability 0 (no gradient, no entropy), so even a policy loss without the turn
mask gets no gradient from the seats that did not move. An action of the seat to act that its
mask does not allow raises ``IllegalActionError`` naming the sub-environment, the seat,
the action and its move, and changes nothing; an action of another shape than ``(B, N)``
or not of integers raises ``ValueError`` naming the shape or dtype and the one expected.

Rewards: the step that ends a game gives every seat its reward of that game, the
engine's (``BatchStep.rewards``: -1 for the loser, +1/(N-1) for the others, 0 for a
game cut by ``max_steps``), whichever seat made the last move; every other step gives 0.
So the seats that did not move in the last step still see their terminal reward, and
an advantage estimated per seat over every step (``GAE`` on ``("agents", ...)`` keys,
as TorchRL's multi-agent PPO does) carries it back to each seat's decisions through the
steps where it waited. The policy loss should count only the steps where a seat moved:
``loss.loss_mask_key = ("agents", "mask")`` on ``ClipPPOLoss`` (``docs/integrations.md``
has the recipe).

Autoreset, as ``BatchedCockroachEnv``: a step that ends a game returns every seat's
observation of the final state and ``done``; the next ``reset`` with ``"_reset"``
(``rollout`` and the collectors) returns the new game's first decision, already dealt by
the engine. ``action_mask``, ``mask`` and ``current_player`` of a step are always those of
the entry's next decision (the new game's where ``done``). Seeds: ``seed=s``,
``set_seed(s)`` and ``reset(seed=s)`` deal the games of ``BatchedGames(config, B,
seed=s).reset()``, and the same moves play the same games (None or an integer from 0 to
2**64 - 1; anything else is refused by name). ``reset`` and ``step`` after ``close()``
raise ``RuntimeError``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Binary, Bounded, Categorical, Composite, Unbounded
from torchrl.envs import EnvBase

from cockroach_env.config import check_seed
from cockroach_env.integrations.torchrl import _batch_shape
from cockroach_env.vector.every_seat import EverySeatGames, EverySeatStep

GROUP = "agents"
"""The one group of seats (TorchRL's name for ``MarlGroupMapType.ALL_IN_ONE_GROUP``)."""

_RESET_OPTIONS = ("seed", "set_state")
"""Keyword arguments ``_reset`` accepts: ``seed``, and TorchRL's own ``set_state`` (ignored: no state to set)."""


class BatchedCockroachMultiAgentEnv(EnvBase):
    """``batch_size=[B]`` games, every seat a learner, as one group of seats (see the module docstring)."""

    def __init__(self, batch_size: Any = None, *, seed: int | None = None, device: Any = None, **game_options: Any):
        shape = _batch_shape(batch_size)
        self.games = EverySeatGames(shape[0], seed=seed, **game_options)
        self.config = self.games.config
        super().__init__(batch_size=shape, device=device)
        b, n, enc = shape[0], self.games.num_seats, self.games.encoding
        o, a = enc.observation.size, enc.num_actions
        self.agent_names = [f"player_{seat}" for seat in range(n)]
        self.group_map = {GROUP: list(self.agent_names)}
        high = torch.tensor(np.array(enc.observation_high), dtype=torch.float32).expand(b, n, o)
        seats = (b, n)
        self.observation_spec = Composite(
            {
                GROUP: Composite(
                    observation=Bounded(torch.zeros_like(high), high.clone(), (b, n, o), dtype=torch.float32),
                    action_mask=Binary(n=a, shape=(b, n, a), dtype=torch.bool),
                    mask=Categorical(2, seats, dtype=torch.bool),
                    shape=seats,
                ),
                "current_player": Categorical(n, (b,), dtype=torch.int64),
                "loser": Unbounded((b,), dtype=torch.int64),
                "loss_reason": Unbounded((b,), dtype=torch.int64),
            },
            shape=shape,
        )
        self.action_spec = Composite(
            {GROUP: Composite(action=Categorical(a, seats, dtype=torch.int64), shape=seats)}, shape=shape
        )
        self.reward_spec = Composite(
            {GROUP: Composite(reward=Unbounded((b, n, 1), dtype=torch.float32), shape=seats)}, shape=shape
        )
        flags = ("done", "terminated", "truncated")
        self.done_spec = Composite(
            {
                **{flag: Categorical(2, (b, 1), dtype=torch.bool) for flag in flags},
                GROUP: Composite({flag: Categorical(2, (b, n, 1), dtype=torch.bool) for flag in flags}, shape=seats),
            },
            shape=shape,
        )
        self._next_seed = self.games.seed
        self._rng = np.random.default_rng(self._next_seed)

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        self.games.check_open("reset")
        unknown = sorted(set(kwargs) - set(_RESET_OPTIONS))
        if unknown:
            raise TypeError(f"reset got unexpected keyword arguments {unknown}; expected only {list(_RESET_OPTIONS)}")
        if "seed" in kwargs:
            self._set_seed(kwargs["seed"])
        partial = tensordict is not None and "_reset" in tensordict.keys() and "seed" not in kwargs
        if partial and self.games.started:  # the ended games were dealt again within the step that ended them
            observation, zero = self.games.observation, np.full(self.games.num_envs, -1, np.int64)
            out = self._outputs(observation, self.games.to_act, self.games.action_mask, zero, zero)
        else:
            seed = self._next_seed if self._next_seed is not None else int(self._rng.integers(2**63))
            self._next_seed = None
            step = self.games.reset(seed=seed)
            out = self._outputs(step.observation, step.to_act, step.action_mask, step.loser, step.loss_reason)
        out.update(self._flags(np.zeros(self.games.num_envs, bool), np.zeros(self.games.num_envs, bool)))
        return out

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get((GROUP, "action"))
        b, n = self.games.num_envs, self.games.num_seats
        if tuple(action.shape) != (b, n):
            raise ValueError(
                f"{GROUP!r} actions of shape {tuple(action.shape)} are not allowed; expected ({b}, {n}), one "
                "categorical action per game and seat (only the seat to act's is played)"
            )
        if action.dtype.is_floating_point or action.dtype.is_complex or action.dtype == torch.bool:
            raise ValueError(f"{GROUP!r} actions of dtype {action.dtype} are not allowed; expected integers")
        acting = action.detach().cpu().numpy()[np.arange(b), self.games.to_act]
        step: EverySeatStep = self.games.step(acting)
        done = step.done
        observation = np.where(done[:, None, None], step.final_observation, step.observation)
        out = self._outputs(observation, step.to_act, step.action_mask, step.loser, step.loss_reason)
        out.set((GROUP, "reward"), torch.as_tensor(step.rewards, device=self.device).unsqueeze(-1))
        out.update(self._flags(step.terminated, step.truncated))
        return out

    def _set_seed(self, seed: int | None) -> None:
        """Seed the next full reset (``BatchedGames(config, B, seed).reset()``'s games); a seed that is not None or
        an integer from 0 to 2**64 - 1 is refused by name, before anything changes.
        """
        self._next_seed = check_seed("seed", seed)
        self._rng = np.random.default_rng(self._next_seed)

    def close(self, *, raise_if_closed: bool = True) -> None:
        """Refuse every later ``reset`` and ``step``."""
        self.games.close()
        super().close(raise_if_closed=raise_if_closed)

    def describe_action(self, env: int, action: int) -> str:
        """The move ``action`` means for the seat to act in batch entry ``env`` now, in words."""
        return self.games.describe_action(env, action)

    def _outputs(
        self, observation: np.ndarray, to_act: np.ndarray, legal: np.ndarray, loser: np.ndarray, reason: np.ndarray
    ) -> TensorDict:
        """The observation keys; the action spec's mask is set to the new ``action_mask``."""
        b, n = self.games.num_envs, self.games.num_seats
        turn = np.zeros((b, n), bool)
        turn[np.arange(b), to_act] = True
        mask = np.zeros((b, n, legal.shape[1]), bool)
        mask[:, :, 0] = True  # the placeholder of the seats not to act
        mask[np.arange(b), to_act] = legal > 0
        action_mask = torch.as_tensor(mask, device=self.device)
        self.action_spec[GROUP, "action"].update_mask(action_mask.clone())
        seats = TensorDict(
            {
                "observation": torch.as_tensor(observation, device=self.device),
                "action_mask": action_mask,
                "mask": torch.as_tensor(turn, device=self.device),
            },
            batch_size=(b, n),
            device=self.device,
        )
        values = {
            GROUP: seats,
            "current_player": torch.as_tensor(to_act, device=self.device),
            "loser": torch.as_tensor(loser, device=self.device),
            "loss_reason": torch.as_tensor(reason, device=self.device),
        }
        return TensorDict(values, batch_size=self.batch_size, device=self.device)

    def _flags(self, terminated: np.ndarray, truncated: np.ndarray) -> dict[Any, torch.Tensor]:
        """``done``/``terminated``/``truncated`` at the root (B, 1) and for every seat (B, N, 1)."""
        n = self.games.num_seats
        out: dict[Any, torch.Tensor] = {}
        for flag, value in (("done", terminated | truncated), ("terminated", terminated), ("truncated", truncated)):
            root = torch.as_tensor(value, device=self.device).unsqueeze(-1)
            out[flag] = root
            out[(GROUP, flag)] = root.unsqueeze(-2).expand(-1, n, -1).clone()
        return out


__all__ = ["GROUP", "BatchedCockroachMultiAgentEnv"]
