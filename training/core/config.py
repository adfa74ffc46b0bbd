"""Training configuration: dataclasses loaded from YAML and validated.

A config file is a YAML mapping whose sections match the dataclasses below
(``game``, ``ppo``, ``model``, ``opponents``, ``schedule``, ``evaluation``, ``warm_start``), the section of each
registered algorithm that has its own settings (``psro``, ``cfr``, ``nfsp``: ``training.core.registry``; the
dataclass lives beside the algorithm) plus a few top-level keys (``name``, ``algorithm``, ``seed``, ``device``,
``output_dir``, ``torch_threads``).
Every key is checked: an unknown key is an error that names it and lists the allowed
keys, and a bad value is an error that names the value and what is allowed. Anything
left out takes the default shown by ``cockroach-train --help``.

``--set key=value`` overrides one entry with a dotted key (``--set ppo.learning_rate=1e-3``,
``--set game.num_players=3``); the value is read as YAML, so ``1e-3``, ``true`` and
``[256, 256]`` work as expected.

The field docstrings below are the option documentation: ``cockroach-train --help``
prints them. The strict building from plain data (and ``ConfigError``) is ``training.core.schema``.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields, is_dataclass
from pathlib import Path
from typing import Any

from cockroach_env.config import GameConfig
from training.core import distributed_config, registry
from training.core.schema import MAX_LEARNING_RATE as MAX_LEARNING_RATE
from training.core.schema import (
    ConfigError,
    build_dataclass,
    cut,
    quoted,
    type_hints,
    yaml_load,
)
from training.core.schema import require as _require
from training.core.schema import require_learning_rate as _require_learning_rate


def baseline_names() -> list[str]:
    """Agents a config may name: the ``baselines`` registry (``baselines.register`` adds more)."""
    import baselines

    return baselines.names()


MAX_TORCH_THREADS = 256
"""Most torch threads a config or ``--torch-threads`` may ask for (torch crashes on far larger counts)."""
MAX_NUM_ENVS = 2**20
"""Most games a rollout may play in parallel (``ppo.num_envs``, ``warm_start.num_envs``)."""
MAX_ROLLOUT_DECISIONS = 2**24
"""Most decisions one rollout may hold (``ppo.num_envs * ppo.num_steps``): its buffers are a few hundred bytes each."""
MAX_GAMES = 10**8
"""Most games one evaluation may play (``evaluation.games``, ``cockroach-eval --games``)."""
MAX_COEFFICIENT = 100.0
"""Largest weight of a loss term (``ppo.ent_coef``, ``vf_coef``, ``magnet_coef``, ``kl_coef``), ratio clip and
gradient-norm clip: a weight of 1e30 turns the loss into inf, and no run trains there."""
MAX_CONFIG_BYTES = 2**20
"""A config file is a few kilobytes; a larger one is not a config of this project."""


@dataclass
class PPOConfig:
    """Masked PPO hyperparameters (one update per rollout)."""

    num_envs: int = 512
    """Games played in parallel (the ``BatchedGames`` batch size)."""
    num_steps: int = 32
    """Environment decisions per game in one rollout (all seats); a rollout is ``num_envs * num_steps`` decisions."""
    learning_rate: float = 3e-4
    """Adam learning rate."""
    anneal_lr: bool = True
    """Decay the learning rate linearly to zero over ``schedule.total_decisions``."""
    gamma: float = 1.0
    """Discount per learner decision (the only reward is at the end of the game)."""
    gae_lambda: float = 0.95
    """GAE lambda."""
    num_minibatches: int = 4
    """Minibatches per epoch over the learner's decisions of one rollout."""
    update_epochs: int = 4
    """Passes over the rollout per update."""
    clip_coef: float = 0.2
    """PPO ratio clip."""
    clip_vloss: bool = True
    """Clip the value loss as in the PPO paper's implementation."""
    ent_coef: float = 0.01
    """Entropy bonus weight."""
    vf_coef: float = 0.5
    """Value loss weight."""
    max_grad_norm: float = 0.5
    """Gradient norm clip."""
    norm_adv: bool = True
    """Normalize advantages per minibatch."""
    magnet_coef: float = 0.0
    """Weight of the KL divergence from the policy to its magnet, a past copy of itself refreshed every
    ``magnet_every`` updates (regularized Nash dynamics, as in R-NaD and magnetic mirror descent): it damps the cycling
    of self-play in bluffing games (0: off).
    """
    magnet_every: int = 100
    """Updates between two refreshes of a ``copy`` magnet (it becomes the current policy)."""
    magnet: str = "copy"
    """What ``magnet_coef`` pulls the policy towards: ``copy``, a frozen copy of itself refreshed every ``magnet_every``
    updates (R-NaD's regularization); ``ema``, an exponential moving average of its weights (rate ``magnet_ema`` per
    update); ``uniform``, the uniform policy over the legal actions (magnetic mirror descent's uniform magnet).
    """
    magnet_ema: float = 0.05
    """With ``magnet: ema``: the share of the current weights mixed into the magnet's after every update."""
    magnet_reward: bool = False
    """Put the magnet's pull in the rewards instead of the loss: every decision of the policy earns
    ``-magnet_coef * log(pi(a|s) / magnet(a|s))`` (R-NaD's reward transformation), so its returns count the
    regularization of the decisions after it (the regularized game of magnetic mirror descent over sequences).
    """
    kl_coef: float = 0.0
    """Weight of the KL divergence from the policy to the policy at the start of its update, over the legal actions:
    the proximal term of a mirror-descent step (magnetic mirror descent's ``1/eta``), on top of PPO's clip (0: off).
    """
    anneal_regularization: float = 1.0
    """The factor that ``ent_coef`` and ``magnet_coef`` reach at the end of ``schedule.total_decisions``; they decay
    geometrically from their values at the start (1: constant; magnetic mirror descent anneals its temperature).
    """
    anneal_step: bool = False
    """Tie the step to the temperature, as magnetic mirror descent does: the policy's learning rate follows the factor
    of ``anneal_regularization`` and ``kl_coef`` its inverse (the proximal weight is ``1/eta``), so the step shrinks
    with ``ent_coef`` and ``magnet_coef`` (needs ``anneal_regularization`` < 1).
    """
    reward_units: bool = False
    """With ``norm_adv``: divide the regularization (entropy bonus, magnet and proximal KL) by each minibatch's
    advantage standard deviation too, so ``ent_coef``, ``magnet_coef`` and ``kl_coef`` weigh against the advantages in
    reward units (magnetic mirror descent's alpha), while the step keeps the normalized size (needs ``norm_adv``).
    """
    target_kl: float | None = None
    """Stop the epochs of an update early once the approximate KL exceeds this (``null``: never)."""
    overlap: bool = False
    """Collect the next rollout while the update runs in a second process (``training.core.update_process``; both cores
    at work, POSIX only): the rollout plays the weights from before the update, one update behind (as in asynchronous
    PPO), and the ratio and clip correct for it. Each checkpoint segment's first rollout waits for nothing, so a
    segment's results depend only on its seed, as without overlap.
    """

    def validate(self, where: str) -> None:
        for name in ("num_envs", "num_steps", "num_minibatches", "update_epochs", "magnet_every"):
            _require(where, name, getattr(self, name), getattr(self, name) >= 1, "an integer >= 1")
        _require(
            where,
            "num_envs",
            self.num_envs,
            self.num_envs <= MAX_NUM_ENVS,
            f"at most MAX_NUM_ENVS={MAX_NUM_ENVS} games in parallel",
        )
        _require(
            where,
            "num_steps",
            self.num_steps,
            self.num_envs * self.num_steps <= MAX_ROLLOUT_DECISIONS,
            f"num_envs * num_steps ({self.num_envs} * {self.num_steps}) at most MAX_ROLLOUT_DECISIONS="
            f"{MAX_ROLLOUT_DECISIONS} decisions per rollout",
        )
        _require_learning_rate(where, "learning_rate", self.learning_rate)
        for name in ("gamma", "gae_lambda"):
            _require(where, name, getattr(self, name), 0 <= getattr(self, name) <= 1, "a number from 0 to 1")
        for name in ("clip_coef", "max_grad_norm"):
            _require(
                where,
                name,
                getattr(self, name),
                0 < getattr(self, name) <= MAX_COEFFICIENT,
                f"a number > 0 and at most MAX_COEFFICIENT={MAX_COEFFICIENT:g}",
            )
        for name in ("ent_coef", "vf_coef", "magnet_coef", "kl_coef"):
            _require(
                where,
                name,
                getattr(self, name),
                0 <= getattr(self, name) <= MAX_COEFFICIENT,
                f"a number from 0 to MAX_COEFFICIENT={MAX_COEFFICIENT:g} (larger weights overflow the loss)",
            )
        _require(where, "magnet", self.magnet, self.magnet in MAGNETS, f"one of {list(MAGNETS)}")
        for name in ("magnet_ema", "anneal_regularization"):
            _require(where, name, getattr(self, name), 0 < getattr(self, name) <= 1, "a number > 0 and at most 1")
        if self.target_kl is not None:
            _require(where, "target_kl", self.target_kl, self.target_kl > 0, "null or a number > 0")
        if self.anneal_step:
            ok = self.anneal_regularization < 1
            _require(where, "anneal_step", True, ok, "false with anneal_regularization 1 (nothing to follow)")
        if self.reward_units:
            _require(where, "reward_units", True, self.norm_adv, "false with norm_adv false (advantages in rewards)")

    @property
    def magnet_network(self) -> bool:
        """Whether the run keeps a magnet network (``copy`` or ``ema`` with a ``magnet_coef``)."""
        return bool(self.magnet_coef) and self.magnet != "uniform"

    def regularization_scale(self, progress: float) -> float:
        """The factor of ``ent_coef`` and ``magnet_coef`` at ``progress`` (0 to 1) of the run."""
        return self.anneal_regularization ** min(max(progress, 0.0), 1.0)

    def step_scale(self, progress: float) -> float:
        """The factor of the policy's learning rate at ``progress`` (``kl_coef``'s is its inverse): with
        ``anneal_step``, ``regularization_scale``; 1 otherwise.
        """
        return self.regularization_scale(progress) if self.anneal_step else 1.0


MAGNETS = ("copy", "ema", "uniform")
"""The kinds of ``ppo.magnet``."""

ACTIVATIONS = ("tanh", "relu")


@dataclass
class ModelConfig:
    """The shared actor-critic network."""

    hidden_sizes: list[int] = field(default_factory=lambda: [256, 256])
    """Widths of the MLP trunk shared by the policy and value heads."""
    activation: str = "tanh"
    """Activation of the trunk: ``tanh`` or ``relu``."""
    card_counting: bool = True
    """Add card-counting inputs derived from the observation (chance that a claim is true, danger of the card in play
    per seat); see ``training.core.model.CardCounting``.
    """
    event_embedding: int = 0
    """With move slots in the observation (``game.history`` or ``game.recall``): the width of the event embedding, one
    linear layer shared by every slot (``training.core.model.ActorCritic``); 0: the slots enter the trunk as they are.
    """
    event_pooling: bool = False
    """With ``event_embedding``: sum the embedded moves with a learned weight per slot and feature, so the trunk reads
    ``event_embedding`` inputs for the whole window (each move embedded by lookup, cheaper than a layer over its one-hot
    entries); false: the trunk reads every embedded move.
    """
    separate_critic: bool = False
    """Give the value head a trunk of its own (the same ``hidden_sizes``, over the same inputs): separate actor and
    critic networks, as the IIG-RL-Benchmark's; false: one trunk shared by the policy and value heads.
    """

    def entry(self) -> dict[str, Any]:
        """The ``model`` entry of a checkpoint's metadata (``ActorCritic.from_spec`` builds the network from it)."""
        return {
            "hidden_sizes": list(self.hidden_sizes),
            "activation": self.activation,
            "card_counting": self.card_counting,
            **({"event_embedding": self.event_embedding} if self.event_embedding else {}),
            **({"event_pooling": True} if self.event_pooling else {}),
            **({"separate_critic": True} if self.separate_critic else {}),
        }

    def validate(self, where: str) -> None:
        ok = len(self.hidden_sizes) >= 1 and all(h >= 1 for h in self.hidden_sizes)
        _require(where, "hidden_sizes", self.hidden_sizes, ok, "a non-empty list of positive integers")
        _require(where, "activation", self.activation, self.activation in ACTIVATIONS, f"one of {list(ACTIVATIONS)}")
        _require(where, "event_embedding", self.event_embedding, 0 <= self.event_embedding <= 4096, "0 to 4096")
        if self.event_pooling:
            _require(
                where, "event_pooling", self.event_pooling, self.event_embedding > 0, "false with event_embedding 0"
            )


@dataclass
class OpponentConfig:
    """Who the learner plays against. Each game draws its table when it starts."""

    self_play: float = 0.5
    """Weight of games where every seat is the current policy (every seat's decisions are training samples)."""
    snapshots: float = 0.3
    """Weight of games against a past snapshot of the policy (drawn uniformly from the pool; self-play while the pool
    is empty).
    """
    baselines: dict[str, float] = field(default_factory=lambda: {"heuristic": 0.15, "random": 0.05})
    """Weight of games against each baseline agent, by name."""
    checkpoints: dict[str, float] = field(default_factory=dict)
    """Weight of games against each frozen checkpoint, by path or shipped name (an agent, a run, or a mixture, whose
    seats
    each draw their own member per game with its weights): a league of saved agents, e.g. best responses that beat an
    earlier version of the policy. Trained for the same rules, any network shape. Loaded (and checked) when training
    starts; a resume refuses a checkpoint whose weights changed."""
    exploiter: float = 0.0
    """Weight of games against the exploiter: a second network, trained at the same time, in one seat and the policy in
    all the others. It learns to beat the current policy, and the policy learns from the same games to close the
    weaknesses it finds (0: no exploiter).
    """
    population: float = 0.0
    """Weight of games against a fixed population given by the caller (a PSRO best response's opponents,
    ``cockroach-exploit`` against a mixture): the learner takes ``learner_seats`` seats and every other seat draws its
    own member for the game, with the population's weights. With ``algorithm: nfsp``: the weight of games against the
    average policy (required > 0).
    """
    exploiter_reset_every: int = 0
    """Updates between exploiter resets: its weights enter the snapshot pool, and it starts again from the current
    policy (0: never reset).
    """
    exploiter_learning_rate: float | None = None
    """The exploiter's Adam learning rate (annealed like the policy's with ``ppo.anneal_lr``); None:
    ``ppo.learning_rate``. A fine-tune often gives the policy a small rate, which also holds back an exploiter that
    should find its weaknesses as fast as a best response would.
    """
    learner_seats: list[int] = field(default_factory=lambda: [1])
    """Seats the learner takes in games against snapshots and baselines (the other seats are the opponent); each game
    draws one of these counts.
    """
    shared_reward: bool = False
    """At a table with any other agent (an exploiter, snapshot, baseline, population or checkpoint seat), the policy's
    seats share their rewards: each gets their mean, so together they gain exactly what the other agents lose (the
    terminal rewards are zero-sum). The policy then learns to make any one deviating seat lose, the quantity a best
    response against N-1 copies measures (exploitability), instead of only its own seat's result. Self-play tables keep
    each seat's own reward (their shared reward is always 0). With one policy seat nothing changes."""
    checkpoint_seats: int | None = None
    """Seats a checkpoint of ``checkpoints`` takes at its tables, the policy all the others (1: the shape of an
    exploiter's
    tables, for checkpoints that are best responses; null: the policy takes ``learner_seats`` seats, as against
    baselines).
    """
    snapshot_every: int = 20
    """Updates between two snapshots entering the pool (0: only when the policy beats the pool)."""
    beat_pool_loss_rate: float = 0.8
    """A snapshot also enters the pool when the learner's loss rate against the pool falls below this fraction of
    parity (0 disables).
    """
    beat_pool_games: int = 2000
    """Games against the pool needed before ``beat_pool_loss_rate`` is judged."""
    max_snapshots: int = 20
    """Pool size; the oldest snapshot leaves when a new one enters."""

    def validate(self, where: str) -> None:
        for name in ("self_play", "snapshots", "exploiter", "population"):
            _require(where, name, getattr(self, name), getattr(self, name) >= 0, "a weight >= 0")
        for name, weight in self.baselines.items():
            if name not in baseline_names():
                raise ConfigError(
                    f"{where}: baselines: unknown baseline {quoted(name)}; expected names from {baseline_names()}"
                )
            _require(f"{where}.baselines", name, weight, weight >= 0, "a weight >= 0")
        for name, weight in self.checkpoints.items():
            _require(
                f"{where}.checkpoints", "checkpoint", name, name.strip() != "", "a checkpoint path or shipped name"
            )
            _require(f"{where}.checkpoints", name, weight, weight >= 0, "a weight >= 0")
        total = (
            self.self_play
            + self.snapshots
            + self.exploiter
            + self.population
            + sum(self.baselines.values())
            + sum(self.checkpoints.values())
        )
        _require(
            where,
            "self_play",
            self.self_play,
            total > 0,
            "weights (self_play, snapshots, exploiter, population, baselines, checkpoints) with a positive sum",
        )
        _require(
            where,
            "exploiter_reset_every",
            self.exploiter_reset_every,
            self.exploiter_reset_every >= 0,
            "an integer >= 0",
        )
        if self.exploiter_learning_rate is not None:
            _require_learning_rate(where, "exploiter_learning_rate", self.exploiter_learning_rate, ", or null")
        _require(where, "snapshot_every", self.snapshot_every, self.snapshot_every >= 0, "an integer >= 0")
        _require(
            where,
            "beat_pool_loss_rate",
            self.beat_pool_loss_rate,
            0 <= self.beat_pool_loss_rate <= 1,
            "a number from 0 to 1",
        )
        _require(where, "beat_pool_games", self.beat_pool_games, self.beat_pool_games >= 1, "an integer >= 1")
        _require(where, "max_snapshots", self.max_snapshots, self.max_snapshots >= 1, "an integer >= 1")


@dataclass
class ScheduleConfig:
    """How long to train and when to write checkpoints."""

    total_decisions: int = 20_000_000
    """Environment decisions (all seats, all games) to train for."""
    checkpoint_every: int = 50
    """Updates between checkpoints; the games restart at each checkpoint so that ``--resume`` repeats the run
    exactly.
    """
    time_limit_minutes: float | None = None
    """Stop early after this many minutes of wall time (``null``: no limit): at the last checkpoint before the limit,
    when the next segment (as long as the last) would end past it (``training.core.runs.time_limit_reason``). A time
    limit makes the stopping point depend on the machine.
    """
    keep_agent_every: int = 0
    """Updates between kept agent checkpoints, ``runs/<name>/agents/update_<U>`` (the evaluated network's weights only,
    as ``final``;
    an NFSP run's average policy), so that a point of the run can be chosen by measurement later (0: none kept)."""
    average_last: int = 0
    """Also write ``runs/<name>/final-average``, the uniform mixture of the last ``average_last`` kept agents (the
    policy average, ``training.core.policy_average``), beside ``final``, the last iterate (0: none; needs
    ``keep_agent_every``)."""

    def validate(self, where: str) -> None:
        _require(where, "total_decisions", self.total_decisions, self.total_decisions >= 1, "an integer >= 1")
        _require(where, "checkpoint_every", self.checkpoint_every, self.checkpoint_every >= 1, "an integer >= 1")
        _require(
            where,
            "keep_agent_every",
            self.keep_agent_every,
            self.keep_agent_every >= 0,
            "an integer >= 0 (0: keep none)",
        )
        ok = self.average_last >= 0 and (self.average_last == 0 or self.keep_agent_every > 0)
        _require(where, "average_last", self.average_last, ok, "an integer >= 0, and 0 with keep_agent_every 0")
        if self.time_limit_minutes is not None:
            _require(
                where,
                "time_limit_minutes",
                self.time_limit_minutes,
                self.time_limit_minutes > 0,
                "null or a number > 0",
            )


@dataclass
class EvalConfig:
    """Periodic evaluation in the arena against baselines (the learner in one seat, the baseline in all others)."""

    every: int = 25
    """Updates between evaluations (0: only at the end)."""
    games: int = 1000
    """Games per opponent in a periodic evaluation."""
    final_games: int = 4000
    """Games per opponent in the evaluation at the end of training."""
    opponents: list[str] = field(default_factory=lambda: ["random", "heuristic"])
    """Baselines to evaluate against."""

    def validate(self, where: str) -> None:
        _require(where, "every", self.every, self.every >= 0, "an integer >= 0")
        _require(where, "games", self.games, 1 <= self.games <= MAX_GAMES, f"an integer from 1 to {MAX_GAMES:,}")
        _require(
            where,
            "final_games",
            self.final_games,
            0 <= self.final_games <= MAX_GAMES,
            f"an integer from 0 to {MAX_GAMES:,}",
        )
        for name in self.opponents:
            if name not in baseline_names():
                raise ConfigError(
                    f"{where}: opponents: unknown baseline {quoted(name)}; expected names from {baseline_names()}"
                )


@dataclass
class WarmStartConfig:
    """A warm start by imitation before the run trains (``training.algorithms.imitation``): behaviour cloning of a
    teacher's decisions, then optional DAgger rounds.
    """

    teacher: str | None = None
    """Who to imitate: a baseline name (``heuristic``), a checkpoint path or a shipped agent's name (null: none)."""
    decisions: int = 200_000
    """Teacher-labelled decisions to collect, over all rounds (every seat of the teacher's games)."""
    rounds: int = 1
    """1: behaviour cloning; more: DAgger, where each later round the fitted network plays and the teacher labels."""
    epochs: int = 4
    """Passes over the labelled decisions after each round."""
    batch_size: int = 1024
    """Decisions per Adam step."""
    learning_rate: float = 1e-3
    """Adam learning rate of the fit."""
    num_envs: int = 512
    """Games played in parallel while collecting."""

    def validate(self, where: str) -> None:
        if self.teacher is not None:
            _require(where, "teacher", self.teacher, isinstance(self.teacher, str) and self.teacher.strip() != "",
                     "null, a baseline name, a checkpoint path or a shipped agent's name")  # fmt: skip
        for name in ("decisions", "rounds", "epochs", "batch_size", "num_envs"):
            _require(where, name, getattr(self, name), getattr(self, name) >= 1, "an integer >= 1")
        _require(
            where,
            "num_envs",
            self.num_envs,
            self.num_envs <= MAX_NUM_ENVS,
            f"at most MAX_NUM_ENVS={MAX_NUM_ENVS} games in parallel",
        )
        _require_learning_rate(where, "learning_rate", self.learning_rate)


@dataclass
class TrainConfig:
    """One training run: the shared sections as fields, each registered algorithm's own section in ``sections``."""

    name: str = "ppo"
    """Run name; the run directory is ``output_dir/name``."""
    algorithm: str = "ppo"
    """The algorithm that trains the run, by its registered name (``training.core.registry``; the list below): ``ppo``
    (self-play PPO, ``training.algorithms.ppo``), or another that reads its own section of the same name.
    """
    seed: int = 1
    """Seed of everything random in the run (games, sampling, opponents, evaluation)."""
    device: str = "cpu"
    """Torch device for the network (``cpu`` or ``cuda``)."""
    torch_threads: int = 1
    """Torch intra-op threads (0: torch's default). One thread is fastest on a small, busy CPU: the network is small."""
    output_dir: str = "runs"
    """Directory that holds the run directories."""
    game: dict[str, Any] = field(default_factory=lambda: {"num_players": 4})
    """Rule options of ``cockroach_env.GameConfig`` (``num_players``, ``edition``, ``loss_count``, ...) and optionally
    ``preset``.
    """
    ppo: PPOConfig = field(default_factory=PPOConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    opponents: OpponentConfig = field(default_factory=OpponentConfig)
    schedule: ScheduleConfig = field(default_factory=ScheduleConfig)
    evaluation: EvalConfig = field(default_factory=EvalConfig)
    warm_start: WarmStartConfig = field(default_factory=WarmStartConfig)
    distributed: distributed_config.DistributedConfig = field(default_factory=distributed_config.DistributedConfig)

    sections: dict[str, Any] = field(default_factory=lambda: {k: s() for k, s in registry.sections().items()})
    """The registered algorithms' own sections by key (``psro``, ...), each also an attribute (``config.psro``); in a
    config file, top-level sections like the others.
    """

    def __getattr__(self, name: str) -> Any:
        sections = self.__dict__.get("sections")
        if sections is not None and name in sections:
            return sections[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def validate(self, where: str = "config") -> None:
        _require(
            where,
            "name",
            self.name,
            _RUN_NAME.fullmatch(self.name) is not None and self.name not in (".", ".."),
            "a directory name of letters, digits, '.', '_' and '-' (not '.' or '..'), so that the run stays "
            "inside output_dir",
        )
        _require(
            where,
            "output_dir",
            self.output_dir,
            bool(self.output_dir.strip()) and "\0" not in self.output_dir,
            "a directory path",
        )
        _require(where, "seed", self.seed, 0 <= self.seed < 2**32, "an integer from 0 to 2**32 - 1")
        _require(where, "device", self.device, _DEVICE.fullmatch(self.device) is not None, "'cpu', 'cuda' or 'cuda:N'")
        if self.device != "cpu":
            _check_cuda(where, self.device)
        _require(
            where,
            "torch_threads",
            self.torch_threads,
            0 <= self.torch_threads <= MAX_TORCH_THREADS,
            f"an integer from 0 (torch's default) to MAX_TORCH_THREADS={MAX_TORCH_THREADS}",
        )
        game = self.game_config(where)
        self.ppo.validate(f"{where}: ppo")
        self.model.validate(f"{where}: model")
        if self.model.event_embedding:
            _require(
                f"{where}: model",
                "event_embedding",
                self.model.event_embedding,
                game.history > 0 or game.recall,
                "0 with this game (its observation has no move slots), or game.history > 0 or game.recall: true",
            )
        self.opponents.validate(f"{where}: opponents")
        seats = self.opponents.learner_seats
        _require(
            f"{where}: opponents",
            "learner_seats",
            seats,
            len(seats) >= 1 and all(1 <= k < game.num_players for k in seats),
            f"a non-empty list of seat counts from 1 to {game.num_players - 1} (game.num_players={game.num_players})",
        )
        if self.opponents.checkpoint_seats is not None:
            _require(
                f"{where}: opponents",
                "checkpoint_seats",
                self.opponents.checkpoint_seats,
                1 <= self.opponents.checkpoint_seats < game.num_players,
                f"null or a seat count from 1 to {game.num_players - 1} (game.num_players={game.num_players})",
            )
        self.schedule.validate(f"{where}: schedule")
        self.evaluation.validate(f"{where}: evaluation")
        _require(where, "algorithm", self.algorithm, self.algorithm in registry.names(), f"one of {registry.names()}")
        self.distributed.validate(f"{where}: distributed", self.ppo.num_envs, registry.get(self.algorithm))
        for key, section in self.sections.items():
            section.validate(f"{where}: {key}")
        self.warm_start.validate(f"{where}: warm_start")
        check = registry.get(self.algorithm).check
        if check is not None:
            check(self, where)

    def game_config(self, where: str = "config") -> GameConfig:
        """The ``GameConfig`` named by the ``game`` section."""
        options = dict(self.game)
        preset = options.pop("preset", None)
        try:
            return GameConfig.from_options(preset=preset, **options)
        except ValueError as error:
            raise ConfigError(f"{where}: game: {cut(error, 1000)}") from None

    def to_dict(self) -> dict[str, Any]:
        """The config as plain data: the shared sections, then each algorithm's (a checkpoint's metadata)."""
        data = asdict(self)
        sections = data.pop("sections")
        return {**data, **sections}

    @property
    def run_dir(self) -> Path:
        return Path(self.output_dir) / self.name


def unused_options(config: TrainConfig) -> list[str]:
    """The settings of a valid ``config`` that change nothing in their combination (a value changed from its default
    whose option is off), one sentence each; the commands print them as warnings.
    """
    ppo, default = config.ppo, PPOConfig()
    notes = []

    def changed(section: Any, name: str) -> bool:
        return getattr(section, name) != getattr(type(section)(), name)

    if ppo.magnet_reward and not ppo.magnet_coef:
        notes.append("ppo.magnet_reward: true does nothing with ppo.magnet_coef: 0 (the reward bonus has weight 0)")
    if not ppo.magnet_coef:
        for name in ("magnet", "magnet_every", "magnet_ema"):
            if changed(ppo, name):
                notes.append(f"ppo.{name}={getattr(ppo, name)!r} does nothing with ppo.magnet_coef: 0 (no magnet)")
    else:
        if ppo.magnet != "ema" and changed(ppo, "magnet_ema"):
            notes.append(
                f"ppo.magnet_ema={ppo.magnet_ema!r} does nothing with ppo.magnet: {ppo.magnet} (only ema uses it)"
            )
        if ppo.magnet != "copy" and changed(ppo, "magnet_every"):
            notes.append(
                f"ppo.magnet_every={ppo.magnet_every!r} does nothing with ppo.magnet: {ppo.magnet} (only copy uses it)"
            )
    if ppo.anneal_regularization != default.anneal_regularization and not (ppo.ent_coef or ppo.magnet_coef):
        notes.append(
            f"ppo.anneal_regularization={ppo.anneal_regularization!r} does nothing with ppo.ent_coef: 0 and "
            "ppo.magnet_coef: 0 (it scales those two)"
        )
    mix = config.opponents
    if not mix.exploiter:
        for name in ("exploiter_reset_every", "exploiter_learning_rate"):
            if changed(mix, name):
                notes.append(
                    f"opponents.{name}={getattr(mix, name)!r} does nothing with opponents.exploiter: 0 (no exploiter)"
                )
    if not mix.beat_pool_loss_rate and changed(mix, "beat_pool_games"):
        notes.append(
            f"opponents.beat_pool_games={mix.beat_pool_games!r} does nothing with opponents.beat_pool_loss_rate: 0"
        )
    if mix.checkpoint_seats is not None and not mix.checkpoints:
        notes.append(f"opponents.checkpoint_seats={mix.checkpoint_seats!r} does nothing without opponents.checkpoints")
    if config.warm_start.teacher is None:
        for f in fields(WarmStartConfig):
            if f.name != "teacher" and changed(config.warm_start, f.name):
                notes.append(
                    f"warm_start.{f.name}={getattr(config.warm_start, f.name)!r} does nothing with warm_start.teacher: "
                    "null (no warm start)"
                )
    for key, section in config.sections.items():
        algorithm = registry.owner(key)
        if config.algorithm != algorithm:
            for f in fields(section):
                if changed(section, f.name):
                    notes.append(
                        f"{key}.{f.name}={getattr(section, f.name)!r} does nothing with algorithm: {config.algorithm} "
                        f"(only algorithm: {algorithm} reads it)"
                    )
    return notes


registry.reserve_keys([f.name for f in fields(TrainConfig)])
_RUN_NAME = re.compile(r"[A-Za-z0-9._-]+")
_DEVICE = re.compile(r"cpu|cuda(:\d+)?")


def _check_cuda(where: str, device: str) -> None:
    """``cuda[:N]`` must exist here (checked when the config is read, not at the first tensor)."""
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    index = int(device.partition(":")[2] or 0)
    if index >= count:
        found = f"{count} CUDA device(s)" if count else "no CUDA device (or a torch build without CUDA)"
        raise ConfigError(
            f"{where}: device={quoted(device)} is not allowed; this machine has {found}; expected 'cpu'"
            + (f" or 'cuda:0' to 'cuda:{count - 1}'" if count else "")
        )


# ---------------------------------------------------------------------------- loading


def load_config(path: str | Path | None = None, overrides: list[str] | None = None) -> TrainConfig:
    """Read a YAML config (or start from the defaults), apply ``key=value`` overrides, validate."""
    data: dict[str, Any] = {}
    where = "config"
    if path is not None:
        import yaml

        where = str(path)
        text = _read_config_text(Path(path))
        try:
            data = yaml_load(text) or {}
        except yaml.YAMLError as error:
            raise ConfigError(f"{path} is not valid YAML: {cut(error, 1000)}") from None
        if not isinstance(data, dict):
            raise ConfigError(f"{path}: expected a mapping of config keys at the top level, got {type(data).__name__}")
    for item in overrides or []:
        apply_override(data, item)
    return config_from_dict(data, where)


def _read_config_text(path: Path) -> str:
    """The text of a config file: a regular file of at most ``MAX_CONFIG_BYTES``, in UTF-8."""
    import stat

    try:
        info = path.stat()
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"config file {path} is not a regular file; expected a YAML file")
        if info.st_size > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"config file {path} has {info.st_size} bytes; expected a YAML file of at most MAX_CONFIG_BYTES="
                f"{MAX_CONFIG_BYTES}"
            )
        data = path.read_bytes()
    except OSError as error:
        raise ConfigError(f"cannot read config file {path}: {error.strerror or error}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(
            f"config file {path} is not UTF-8 text (byte {error.start} is {data[error.start]:#04x}); expected a "
            f"YAML file in UTF-8"
        ) from None


def config_from_dict(data: dict[str, Any], where: str = "config") -> TrainConfig:
    """Build and validate a ``TrainConfig`` from plain data (YAML, or a checkpoint's metadata)."""
    own = registry.sections()
    if isinstance(data, dict):
        allowed = allowed_keys()
        unknown = [key for key in data if key not in allowed]
        if unknown:
            raise ConfigError(f"{where}: unknown key {quoted(unknown[0])}; allowed keys: {allowed}")
        shared = {key: value for key, value in data.items() if key not in own}
    else:
        shared = data  # refused by build_dataclass, which names what it got
    config = build_dataclass(TrainConfig, shared, where, "")
    for key, section in own.items():
        if key in data:
            config.sections[key] = build_dataclass(section, data[key], where, key)
    config.validate(where)
    return config


def allowed_keys() -> list[str]:
    """The top-level keys of a config: the shared ones, then the registered algorithms' sections."""
    return [f.name for f in fields(TrainConfig) if f.name != "sections"] + list(registry.sections())


def apply_override(data: dict[str, Any], item: str) -> None:
    """Apply one ``dotted.key=value`` override to raw config data (the value is parsed as YAML)."""
    import yaml

    key, sep, raw = item.partition("=")
    if not sep or not key.strip():
        raise ConfigError(f"--set {quoted(item)} is not allowed; expected key=value, e.g. ppo.learning_rate=1e-3")
    parts = key.strip().split(".")
    _check_key_path(parts)
    try:
        value = yaml_load(raw) if raw.strip() else None
    except yaml.YAMLError:
        value = raw
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"--set {quoted(item)}: {quoted(part)} is not a section")
    node[parts[-1]] = value


def _check_key_path(parts: list[str]) -> None:
    """Unknown dotted keys are refused up front, naming the allowed keys."""
    cls: Any = None
    for depth, part in enumerate(parts):
        if depth and not (isinstance(cls, type) and is_dataclass(cls)):
            return  # inside a free-form mapping (game options, baseline weights): checked later
        allowed = [f.name for f in fields(cls)] if depth else allowed_keys()
        if part not in allowed:
            prefix = ".".join(parts[:depth])
            section = f" in section {prefix!r}" if prefix else ""
            raise ConfigError(f"unknown key {quoted('.'.join(parts))}{section}; allowed keys: {allowed}")
        cls = type_hints(cls)[part] if depth else registry.sections().get(part) or type_hints(TrainConfig)[part]
