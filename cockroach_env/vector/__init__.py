"""Vector environments over the batched engine: one learner seat per game, the other seats played inside.

| library | entry point |
|---|---|
| Gymnasium (``VectorEnv``) | ``SelfPlayVectorEnv(num_envs, opponents, *, seed=None, learner_seat=None, **options)`` |
| Stable-Baselines3 (``VecEnv``) | ``cockroach_env.integrations.sb3.MaskedSelfPlayVecEnv(num_envs, opponents, ...)`` |
| TorchRL (``EnvBase``) | ``cockroach_env.integrations.torchrl.BatchedCockroachEnv(batch_size=[B], opponents=...)`` |

The three share the keyword arguments ``seed``, ``learner_seat``, ``illegal_action``
(``"raise"`` or ``"penalize"``) and the game options (``config=GameConfig(...)`` or
``num_players``, ``preset``, ...), and play the same games from the same seed. At most
``MAX_NUM_ENVS`` games; ``step`` and ``reset`` after ``close()`` raise ``RuntimeError``.

All three drive ``SeatedGames`` (``seated.py``): sub-environment ``i`` is one learner seat
in game ``i`` of a ``BatchedGames``; the other seats are played inside ``step`` until the
learner is to act again in every game, each opponent agent moving in one batch call
over every game where one of its seats is to act; a game that ends is dealt again.

``opponents`` (``opponents.py``):

- a baseline name (``"random"``, ``"heuristic"``, ...), a checkpoint path or shipped
  checkpoint name (``"classic-4p"``, ``"classic-4p-mixture"``), resolved by the agent
  plugins (entry points ``cockroach_poker.agents``);
- an agent object of the agent protocol (``baselines.agent``), built for the same rules;
- a callable ``policy(observations, masks) -> actions`` on batches (``BatchPolicy``), e.g.
  a network being trained or a frozen snapshot of one;
- a list of these: each seat of each new game draws one uniformly (a mixture checkpoint
  draws its member per game and seat too).

Agents and callables are used as given, never copied, so one whose weights the caller
updates plays its current weights from the next step on. ``set_opponents(opponents)``
swaps the whole table between steps (a snapshot pool refreshed during training),
validated as the constructor validates it.

Every seat a learner: ``EverySeatGames`` (``every_seat.py``) steps the move of the seat to
act in every game and gives every seat's observation and terminal reward; TorchRL's
multi-agent form over it is ``cockroach_env.integrations.torchrl_marl``.

The agent moves with ``act_batch`` where ``supports_batch`` is set, else by sampling
``action_probabilities_batch``; only an agent with neither is asked one row at a time.
The learner's seat is ``learner_seat`` in every game, or drawn per game (None).
Observations are the env's: the learner's own seat's observation only.
"""

from cockroach_env.vector.env import SelfPlayVectorEnv
from cockroach_env.vector.every_seat import EverySeatGames, EverySeatStep
from cockroach_env.vector.opponents import GROUP, BatchPolicy, Opponents, agent_sources, resolve_agent
from cockroach_env.vector.seated import INFO_KEYS, MAX_NUM_ENVS, SeatedGames, SeatStep

__all__ = [
    "GROUP",
    "INFO_KEYS",
    "MAX_NUM_ENVS",
    "BatchPolicy",
    "EverySeatGames",
    "EverySeatStep",
    "Opponents",
    "SeatStep",
    "SeatedGames",
    "SelfPlayVectorEnv",
    "agent_sources",
    "resolve_agent",
]
