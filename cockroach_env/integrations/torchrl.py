"""TorchRL: ``BatchedCockroachEnv``, learner seats of batched games as one ``EnvBase`` with a batch dimension.

::

    from torchrl.envs.utils import check_env_specs
    from cockroach_env.integrations.torchrl import BatchedCockroachEnv

    env = BatchedCockroachEnv(batch_size=[1024], opponents="random", seed=0, num_players=4)
    check_env_specs(env)
    rollout = env.rollout(100, break_when_any_done=False)   # (1024, 100) learner decisions

Entry ``b`` of the batch is one learner seat in game ``b`` of a ``BatchedGames``; the
other seats are played inside ``step`` by ``opponents`` (see ``cockroach_env.vector``).

| key | spec |
|---|---|
| ``observation`` | ``Bounded(0, high, (B, O), float32)``: the learner's own observation |
| ``action_mask`` | ``Binary((B, A), bool)``: its legal actions (TorchRL's masked-action key) |
| ``action`` | ``Categorical(A, (B,), int64)``, its mask kept equal to ``action_mask`` |
| ``reward`` | ``(B, 1)`` float32: the learner's terminal reward |
| ``done``/``terminated``/``truncated`` | ``(B, 1)`` bool |
| ``learner_seat``, ``loser``, ``loss_reason``, ``offender``, ``truncated_at_step`` | ``(B,)`` int64 (-1 while unset) |
| ``illegal_move`` | ``(B,)`` bool |

The masked-action conventions hold: ``rand_action`` draws legal actions (the env
updates its action spec's mask), ``ActionMask()`` works on it, and a policy reads
``action_mask`` into ``MaskedCategorical(logits, mask=...)``.

Autoreset as TorchRL defines it: a step that ends a game returns the learner's
observation of the final state and ``done``; the next ``reset`` with ``"_reset"`` (what
``rollout`` and collectors call) returns the new game's first decision, which the engine
has already dealt. The ``action_mask`` of a step is always the legal actions of the
entry's next decision (the new game's where ``done``): what ``rand_action`` and
``ActionMask`` read right after the step, before the reset. ``set_seed(s)`` seeds the
next full reset as ``SelfPlayVectorEnv.reset(seed=s)`` does: the same games, for the
same seeds (None or an integer from 0 to 2**64 - 1; anything else is refused by name).
``set_opponents(opponents)`` seats another table from the next step on; ``reset`` and
``step`` after ``close()`` raise ``RuntimeError``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from tensordict import TensorDict, TensorDictBase
from torchrl.data import Binary, Bounded, Categorical, Composite, Unbounded
from torchrl.envs import EnvBase

from cockroach_env.config import check_seed
from cockroach_env.vector.seated import INFO_KEYS, MAX_NUM_ENVS, SeatedGames, SeatStep


class BatchedCockroachEnv(EnvBase):
    """``batch_size=[B]`` learner seats against ``opponents`` (see the module docstring)."""

    def __init__(
        self,
        batch_size: Any = None,
        opponents: Any = "random",
        *,
        seed: int | None = None,
        learner_seat: int | None = None,
        illegal_action: str = "raise",
        device: Any = None,
        **game_options: Any,
    ):
        shape = _batch_shape(batch_size)
        self.games = SeatedGames(
            shape[0], opponents, seed=seed, learner_seat=learner_seat, illegal_action=illegal_action, **game_options
        )
        self.config = self.games.config
        super().__init__(batch_size=shape, device=device)
        b, enc = shape[0], self.games.encoding
        high = torch.tensor(np.array(enc.observation_high), dtype=torch.float32).expand(b, enc.observation.size)
        info = {key: Unbounded((b,), dtype=torch.bool if key == "illegal_move" else torch.int64) for key in INFO_KEYS}
        self.observation_spec = Composite(
            observation=Bounded(torch.zeros_like(high), high.clone(), (b, enc.observation.size), dtype=torch.float32),
            action_mask=Binary(n=enc.num_actions, shape=(b, enc.num_actions), dtype=torch.bool),
            **info,
            shape=shape,
        )
        self.action_spec = Categorical(enc.num_actions, shape=(b,), dtype=torch.int64)
        self.reward_spec = Unbounded((b, 1), dtype=torch.float32)
        self.done_spec = Composite(
            done=Categorical(2, (b, 1), dtype=torch.bool),
            terminated=Categorical(2, (b, 1), dtype=torch.bool),
            truncated=Categorical(2, (b, 1), dtype=torch.bool),
            shape=shape,
        )
        self._next_seed = self.games.seed
        self._rng = np.random.default_rng(self._next_seed)

    def _reset(self, tensordict: TensorDictBase | None = None, **kwargs: Any) -> TensorDictBase:
        self.games.check_open("reset")
        partial = tensordict is not None and "_reset" in tensordict.keys()
        if partial and self.games._started:  # the ended games were dealt again within the step that ended them
            out = self._outputs(self.games.observation, self.games.action_mask, self._running_info())
        else:
            seed = self._next_seed if self._next_seed is not None else int(self._rng.integers(2**63))
            self._next_seed = None
            step = self.games.reset(seed=seed)
            out = self._outputs(step.observation, step.action_mask, step.info)
        self.action_spec.update_mask(out["action_mask"].clone())
        done = torch.zeros(*self.batch_size, 1, dtype=torch.bool, device=self.device)
        out.update({"done": done, "terminated": done.clone(), "truncated": done.clone()})
        return out

    def _step(self, tensordict: TensorDictBase) -> TensorDictBase:
        action = tensordict.get("action")
        step: SeatStep = self.games.step(action.detach().cpu().numpy())
        done = step.done
        observation = np.where(done[:, None], step.final_observation, step.observation)
        out = self._outputs(observation, step.action_mask, step.info)
        self.action_spec.update_mask(torch.as_tensor(step.action_mask, dtype=torch.bool, device=self.device))
        out.update(
            {
                "reward": torch.as_tensor(step.reward, device=self.device).unsqueeze(-1),
                "done": torch.as_tensor(done, device=self.device).unsqueeze(-1),
                "terminated": torch.as_tensor(step.terminated, device=self.device).unsqueeze(-1),
                "truncated": torch.as_tensor(step.truncated, device=self.device).unsqueeze(-1),
            }
        )
        return out

    def _set_seed(self, seed: int | None) -> None:
        """Seed the next full reset (``SelfPlayVectorEnv.reset(seed=seed)``'s games); a seed that is not None or an
        integer from 0 to 2**64 - 1 is refused by name, before anything changes.
        """
        self._next_seed = check_seed("seed", seed)
        self._rng = np.random.default_rng(self._next_seed)

    def set_opponents(self, opponents: Any) -> None:
        """Seat ``opponents`` from the next step on (``SeatedGames.set_opponents``)."""
        self.games.set_opponents(opponents)

    def close(self, *, raise_if_closed: bool = True) -> None:
        """Refuse every later ``reset`` and ``step``."""
        self.games.close()
        super().close(raise_if_closed=raise_if_closed)

    def _running_info(self) -> dict[str, np.ndarray]:
        b = self.games.num_envs
        info = {key: np.full(b, -1, np.int64) for key in INFO_KEYS}
        info["illegal_move"] = np.zeros(b, bool)
        info["learner_seat"] = self.games.learner
        return info

    def _outputs(self, observation: np.ndarray, mask: np.ndarray, info: dict[str, np.ndarray]) -> TensorDict:
        values = {
            "observation": torch.as_tensor(observation, dtype=torch.float32),
            "action_mask": torch.as_tensor(mask).to(torch.bool),
            **{key: torch.as_tensor(info[key]) for key in INFO_KEYS},
        }
        return TensorDict(values, batch_size=self.batch_size, device=self.device)

    def describe_action(self, env: int, action: int) -> str:
        """The move ``action`` means for the learner of batch entry ``env`` now, in words."""
        return self.games.describe_action(env, action)


def _batch_shape(batch_size: Any) -> torch.Size:
    """``batch_size`` as a one-dimensional ``torch.Size``; ``ValueError`` naming it otherwise."""
    try:
        shape = torch.Size([batch_size] if isinstance(batch_size, (int, np.integer)) else batch_size)
    except (TypeError, ValueError):
        shape = None
    if (
        shape is None
        or isinstance(batch_size, bool)
        or len(shape) != 1
        or not 1 <= shape[0] <= MAX_NUM_ENVS
        or any(isinstance(d, bool) for d in (batch_size if isinstance(batch_size, (list, tuple)) else []))
    ):
        raise ValueError(
            f"batch_size={batch_size!r} is not allowed; "
            f"expected one dimension with a positive number of games of at most {MAX_NUM_ENVS:,} (MAX_NUM_ENVS), "
            "e.g. [1024]"
        )
    return shape


__all__ = ["BatchedCockroachEnv"]
