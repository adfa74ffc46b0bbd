"""Stable-Baselines3 models as agents of the baselines protocol, and frozen-copy self-play opponents.

::

    from training.evaluation.sb3_agent import SB3Agent, SelfPlayOpponents, load_sb3_agent

    agent = SB3Agent(model, config, seed=0)                 # a MaskablePPO / PPO model or its policy
    agent = load_sb3_agent("runs/sb3/model.zip", config)      # what cockroach-eval does for a .zip entry

``cockroach-eval runs/sb3/model.zip heuristic*3`` ranks a saved model: entries ending in
``.zip`` load through ``load_sb3_agent``. SB3's zip format holds cloudpickled objects,
so load only files you trust (the project's own checkpoints never unpickle).

``SelfPlayOpponents`` is the callable ``opponents`` of
``cockroach_env.integrations.sb3.MaskedSelfPlayEnv`` for self-play: a frozen copy of
the learning model, refreshed every ``refresh_every`` episodes.

The agent samples from the policy's action probabilities with its own seeded
``numpy.random.Generator`` (not torch's global generator), restricted to the legal
actions, so it always returns a legal action and is reproducible from its seed.
"""

from __future__ import annotations

import copy
import os
from typing import Any

import numpy as np

from baselines.agent import LogitsAgent
from cockroach_env.config import GameConfig

ALGORITHMS = ("MaskablePPO", "PPO", "A2C", "DQN")


class SB3Agent(LogitsAgent):
    """An agent of the baselines protocol playing an SB3 policy (``act``, vectorized ``act_batch``,
    ``action_probabilities``).
    """

    def __init__(
        self, model: Any, config: GameConfig, seed: int | None = None, name: str = "sb3", deterministic: bool = False
    ):
        import torch

        super().__init__(config, seed)
        policy = getattr(model, "policy", model)
        if (
            not isinstance(policy, torch.nn.Module)
            or not callable(getattr(policy, "get_distribution", None))
            and not callable(getattr(policy, "q_net", None))
        ):
            raise ValueError(
                f"model={model!r} is not allowed; expected a Stable-Baselines3 model or policy (PPO, "
                f"MaskablePPO, A2C, DQN)"
            )
        enc = self.encoding
        obs_shape = getattr(policy.observation_space, "shape", None)
        n_actions = getattr(policy.action_space, "n", None)
        if obs_shape != (enc.observation.size,) or n_actions != enc.num_actions:
            raise ValueError(
                f"the SB3 policy takes observations of shape {obs_shape} and {n_actions} actions, but {config} has "
                f"observations of shape ({enc.observation.size},) and {enc.num_actions} actions; load it for "
                f"the rule set it was trained on"
            )
        self.policy = policy
        self.name = name
        self.greedy = self.deterministic = deterministic

    def logits(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        import torch

        with torch.no_grad():
            obs, _ = self.policy.obs_to_tensor(observations)
            if hasattr(self.policy, "get_distribution"):
                logits = self.policy.get_distribution(obs).distribution.logits
            else:  # DQN: act greedily or sample by Q-values
                logits = self.policy.q_net(obs)
            return logits.cpu().numpy().astype(np.float64)

    def __repr__(self) -> str:
        return (
            f"SB3Agent(name={self.name!r}, {self.config.num_players}p {self.config.edition}, "
            f"deterministic={self.deterministic})"
        )


def load_sb3_agent(
    path: str | os.PathLike,
    config: GameConfig,
    seed: int | None = None,
    algorithm: str | None = None,
    deterministic: bool = False,
) -> SB3Agent:
    """Load an SB3 ``.zip`` model as an agent; ``algorithm`` defaults to trying each of ``ALGORITHMS``."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise ValueError(f"SB3 model {path!r} does not exist; expected the .zip file written by model.save()")
    if algorithm is not None and algorithm not in ALGORITHMS:
        raise ValueError(f"algorithm={algorithm!r} is not allowed; expected one of {list(ALGORITHMS)}")
    errors = []
    for name in [algorithm] if algorithm else ALGORITHMS:
        cls = _algorithm_class(name)
        try:
            model = cls.load(path, device="cpu")
        except Exception as error:  # noqa: BLE001 - try the next algorithm, report all
            errors.append(f"{name}: {type(error).__name__}: {error}")
            continue
        stem = os.path.splitext(os.path.basename(path))[0]
        return SB3Agent(model, config, seed=seed, name=stem, deterministic=deterministic)
    raise ValueError(
        f"cannot load SB3 model {path!r} as any of {[algorithm] if algorithm else list(ALGORITHMS)}: "
        + "; ".join(errors)
    )


def _algorithm_class(name: str):
    if name == "MaskablePPO":
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    import stable_baselines3

    return getattr(stable_baselines3, name)


class SelfPlayOpponents:
    """``opponents`` for ``MaskedSelfPlayEnv``: frozen copies of ``model``, refreshed every ``refresh_every`` episodes.

    ::

        opponents = SelfPlayOpponents(config, refresh_every=200, seed=0, first=baselines.make("random", config))
        env = MaskedSelfPlayEnv(opponents, seed=0, config=config)
        model = MaskablePPO("MlpPolicy", env)
        opponents.attach(model)                # before learn(): the copies are taken from it
        model.learn(100_000)

    Until a model is attached the ``first`` agent plays; from then on a copy taken at the
    first episode after attaching and again at every episode number divisible by
    ``refresh_every`` (the env's episode count). The copy lives in the env's process:
    use it with SB3's ``DummyVecEnv`` (the default), not ``SubprocVecEnv``.
    """

    def __init__(self, config: GameConfig, refresh_every: int = 100, seed: int | None = None, first: Any = None):
        if not isinstance(refresh_every, int) or isinstance(refresh_every, bool) or refresh_every < 1:
            raise ValueError(f"refresh_every={refresh_every!r} is not allowed; expected a positive integer (episodes)")
        if first is not None and not callable(getattr(first, "act", None)):
            raise ValueError(f"first={first!r} is not an agent; expected an object with act(observation_dict) -> int")
        self.config = config
        self.refresh_every = refresh_every
        self.first = first
        self.model: Any = None
        self.frozen: SB3Agent | None = None
        self.refreshes = 0
        self._rng = np.random.default_rng(seed)

    def attach(self, model: Any) -> SelfPlayOpponents:
        self.model = model
        return self

    def __call__(self, episode: int) -> Any:
        if self.model is None:
            if self.first is None:
                raise ValueError(
                    "SelfPlayOpponents has no model yet and no first agent; call attach(model) before model.learn()"
                )
            return self.first
        if self.frozen is None or episode % self.refresh_every == 0:
            policy = copy.deepcopy(self.model.policy).eval()
            self.frozen = SB3Agent(
                policy, self.config, seed=int(self._rng.integers(2**63)), name=f"frozen-{self.refreshes}"
            )
            self.refreshes += 1
        return self.frozen
