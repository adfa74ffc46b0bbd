"""Neural fictitious self-play (NFSP) on the PPO learner, read top to bottom.

``algorithm: nfsp`` in a training config. Two networks of the config's ``model`` shape:

* the **best response** β: the PPO policy of ``training.algorithms.ppo``, trained on the config's
  tables. At ``opponents.population`` of them it takes ``opponents.learner_seats`` seats
  and the average policy takes all the others: β learns to beat Π. The rest of its
  tables follow the config's mix (self-play, snapshots, baselines, checkpoints), which
  keeps β (and so Π) a good player against what Π does not do.
* the **average policy** Π: after every PPO update, β's decisions of that rollout (the
  ones PPO trains on, at every table) enter a reservoir, a uniform sample of at most
  ``nfsp.reservoir_size`` of all β's decisions since the run began (Vitter's algorithm R),
  and Π takes ``nfsp.sl_steps`` Adam steps of cross-entropy on minibatches drawn from it.
  Π is then the average of β's strategies over the run, fictitious play's answer, the
  strategy that approaches an equilibrium where the best responses themselves cycle.

This is Heinrich and Silver's NFSP (2016) with PPO in place of DQN as the best response
and no anticipatory mixing inside a table: each table seats β or Π per seat, by the
table draw. Π starts from the same weights as β (random, or ``--init-from``).

The run directory holds what a PPO run holds (``training.algorithms.ppo``), with:

* ``final``: Π, the agent (``training.load_agent``, ``cockroach-eval``,
  ``cockroach-exploit``); its evaluations (``eval.csv``, the metadata) are Π's;
* ``best_response``: β at the end (an agent checkpoint too);
* ``checkpoint``: also Π's weights and Adam state, the reservoir and its generator, so
  ``--resume`` continues exactly as the uninterrupted run would have (as PPO runs do,
  with ``ppo.overlap`` too; a ``schedule.time_limit_minutes`` stop depends on the
  machine). The reservoir is saved with every checkpoint, in the same atomic switch, so
  ``schedule.checkpoint_every`` should leave a few minutes between checkpoints for a large one;
* ``metrics.csv``: also ``sl_loss`` (Π's cross-entropy on its last minibatch) and
  ``reservoir`` (decisions held); ``train_loss_rate_vs_population`` is β's loss rate
  at its tables against Π.

Memory: a reservoir decision takes the observation as bytes (its entries are small
counts; an observation that is not is kept as float32, four times as large), the
legal-action mask as bits and the action as 16 bits: 162 bytes on 4 players, so
486 MB for the default 3 M decisions, in memory and in each checkpoint.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from cockroach_env.encoding import encoding_for
from training.algorithms import ppo
from training.algorithms.nfsp_config import NFSPConfig
from training.core import checkpoint as ckpt
from training.core.checkpoint.run_state import save_agent_checkpoint
from training.core.config import TrainConfig
from training.core.learner import NonFiniteUpdate, check_finite_weights
from training.core.model import ActorCritic, mask_bias
from training.core.opponents import FixedOpponents, Population
from training.core.runs import BEST_RESPONSE_NAME, Progress

AVERAGE = ckpt.NFSP_AVERAGE
"""Prefix of the average policy's tensors and metadata in a run checkpoint."""


class Reservoir:
    """A uniform sample of at most ``capacity`` of all the decisions added (Vitter's algorithm R, a batch at a time),
    stored compactly.
    """

    def __init__(self, capacity: int, obs_size: int, num_actions: int):
        self.capacity, self.obs_size, self.num_actions = capacity, obs_size, num_actions
        # Observations as bytes while every entry added is an integer from 0 to 255; float32 from the first that is not.
        self.obs = np.zeros((capacity, obs_size), np.uint8)
        # Legal-action masks, 8 actions to a byte (``np.packbits``).
        self.mask = np.zeros((capacity, (num_actions + 7) // 8), np.uint8)
        self.action = np.zeros(capacity, np.int16 if num_actions <= 2**15 else np.int32)
        # Decisions held (at most ``capacity``).
        self.size = 0
        # Decisions added since the start.
        self.seen = 0

    def add(self, obs: np.ndarray, mask: np.ndarray, action: np.ndarray, rng: np.random.Generator) -> None:
        """Add decisions (rows of ``obs``, ``mask``, ``action``): decision ``t`` (counting from 0 over all ever added)
        takes a free slot while there is one, and afterwards slot ``j``, uniform in ``[0, t]``, if ``j < capacity``
        (else it is not kept).
        """
        n = len(action)
        if n == 0:
            return
        if self.obs.dtype == np.uint8 and not np.array_equal(obs.astype(np.uint8), obs):
            self.obs = self.obs.astype(np.float32)  # (once, for rule sets whose observations are not all small counts)
        free = min(n, self.capacity - self.size)
        t = self.seen + np.arange(free, n)
        slots = np.concatenate([np.arange(self.size, self.size + free), rng.integers(0, t + 1)])
        items = np.flatnonzero(slots < self.capacity)
        slots = slots[items]
        # two items of one batch on a slot: the later one stays
        last = len(slots) - 1 - np.unique(slots[::-1], return_index=True)[1]
        slots, items = slots[last], items[last]
        self.obs[slots] = obs[items]
        self.mask[slots] = np.packbits(np.asarray(mask[items], bool), axis=1)
        self.action[slots] = action[items]
        self.size += free
        self.seen += n

    def sample(self, rows: np.ndarray) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """Observations (float32), masks (bool) and actions (int64) of ``rows``, as tensors."""
        obs = torch.from_numpy(self.obs[rows].astype(np.float32))
        mask = torch.from_numpy(np.unpackbits(self.mask[rows], axis=1, count=self.num_actions).astype(bool))
        return obs, mask, torch.from_numpy(self.action[rows].astype(np.int64))

    def tensors(self, prefix: str) -> dict[str, torch.Tensor]:
        """The decisions held, for a checkpoint (``prefix.obs``, ``prefix.mask``, ``prefix.action``)."""
        held = slice(0, self.size)
        return {
            f"{prefix}.{name}": torch.from_numpy(getattr(self, name)[held].copy()) for name in ("obs", "mask", "action")
        }

    def restore(self, tensors: dict[str, torch.Tensor], size: int, seen: int, where: str) -> None:
        """Hold what ``tensors`` (from ``tensors()``, without the prefix) held; ``CheckpointError`` if it does not fit
        this reservoir.
        """
        expected = {"obs": (size, self.obs_size), "mask": (size, self.mask.shape[1]), "action": (size,)}
        problems = [
            f"{name}: {tuple(tensors[name].shape) if name in tensors else 'missing'}, expected {shape}"
            for name, shape in expected.items()
            if name not in tensors or tuple(tensors[name].shape) != shape
        ]
        if not 0 <= size <= min(seen, self.capacity):
            problems.append(f"size {size} with {seen} decisions seen and capacity {self.capacity}")
        if problems:
            raise ckpt.CheckpointError(
                f"{where}: the average policy's reservoir does not fit nfsp.reservoir_size={self.capacity}: "
                f"{'; '.join(problems)}"
            )
        obs = tensors["obs"].numpy()
        if obs.dtype != np.uint8:
            self.obs = self.obs.astype(np.float32)
        self.obs[:size] = obs
        self.mask[:size] = tensors["mask"].numpy()
        self.action[:size] = tensors["action"].numpy()
        self.size, self.seen = size, seen


class AveragePolicy:
    """NFSP's average policy: a network, its Adam state and its reservoir of best-response decisions (what
    ``training.algorithms.ppo`` trains
    beside its policy when ``train`` is given one).
    """

    def __init__(self, model: ActorCritic, settings: NFSPConfig, obs_size: int, num_actions: int, seed: int):
        self.model = model.train()
        self.settings = settings
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=settings.sl_learning_rate, eps=1e-5)
        self.reservoir = Reservoir(settings.reservoir_size, obs_size, num_actions)
        # Reservoir slots and minibatch rows.
        self.rng = np.random.default_rng(np.random.SeedSequence([seed, 0x4E465350]))
        # Cross-entropy of the last minibatch.
        self.loss = math.nan
        # Wall time of the supervised steps in this process.
        self.seconds = 0.0

    def observe(self, rollout, rows: np.ndarray) -> None:
        """The best response's decisions ``rows`` of ``rollout`` (a ``training.core.learner.Rollout``) enter the
        reservoir.
        """
        self.reservoir.add(rollout.observations(rows), rollout.mask[rows], rollout.action[rows], self.rng)

    def update(self) -> dict[str, float]:
        """``nfsp.sl_steps`` supervised steps on the reservoir (none until it holds a minibatch); the statistics to
        log.
        """
        started = time.perf_counter()
        device = next(self.model.parameters()).device
        if self.reservoir.size >= self.settings.sl_batch_size:
            for _ in range(self.settings.sl_steps):
                obs, mask, action = (
                    t.to(device)
                    for t in self.reservoir.sample(
                        self.rng.integers(0, self.reservoir.size, self.settings.sl_batch_size)
                    )
                )
                logits = self.model.heads(self.model.network_inputs(obs))[0] + mask_bias(mask)
                loss = torch.nn.functional.cross_entropy(logits, action)
                if not bool(torch.isfinite(loss)):
                    raise NonFiniteUpdate(
                        f"the average policy's loss (sl_loss {loss.item()})", ["nfsp.sl_learning_rate"]
                    )
                self.optimizer.zero_grad()
                loss.backward()
                self.optimizer.step()
                self.loss = loss.item()
            check_finite_weights(self.model, ["nfsp.sl_learning_rate"], "a weight of the average policy")
        self.seconds += time.perf_counter() - started
        return {"sl_loss": self.loss, "reservoir": self.reservoir.size}

    def state(self) -> tuple[dict[str, torch.Tensor], dict[str, Any]]:
        """Tensors and top-level metadata entries for a run checkpoint (``AVERAGE`` and ``AVERAGE.optimizer``)."""
        tensors = {f"{AVERAGE}.model.{k}": v for k, v in self.model.state_dict().items()}
        optimizer_tensors, optimizer = ckpt.optimizer_state(self.optimizer, prefix=f"{AVERAGE}.optimizer")
        tensors.update(optimizer_tensors)
        tensors.update(self.reservoir.tensors(f"{AVERAGE}.reservoir"))
        record = {
            "reservoir": {
                "size": self.reservoir.size,
                "seen": self.reservoir.seen,
                "capacity": self.reservoir.capacity,
            },
            "rng": ckpt.numpy_rng_state(self.rng),
            "loss": None if math.isnan(self.loss) else self.loss,
        }
        return tensors, {AVERAGE: record, f"{AVERAGE}.optimizer": optimizer}

    def restore(self, checkpoint: ckpt.Checkpoint) -> None:
        """Load what ``state`` saved in ``checkpoint`` (everything is checked before anything is loaded)."""
        record = checkpoint.metadata.get(AVERAGE)
        if (
            not isinstance(record, dict)
            or not all(isinstance(record.get(k), dict) for k in ("reservoir", "rng"))
            or f"{AVERAGE}.optimizer" not in checkpoint.metadata
        ):
            raise ckpt.CheckpointError(
                f"{checkpoint.path}: no average policy (metadata {AVERAGE!r} with reservoir and rng, and "
                f"{AVERAGE + '.optimizer'!r}); not a run checkpoint of algorithm: nfsp"
            )
        ckpt.check_shapes(checkpoint, f"{AVERAGE}.model")
        held = record["reservoir"]
        size, seen = held.get("size"), held.get("seen")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (size, seen)):
            raise ckpt.CheckpointError(
                f"{checkpoint.path}: metadata {AVERAGE}.reservoir is {held!r}; expected integer size and seen"
            )
        rng = ckpt.restore_numpy_rng(record["rng"])
        self.reservoir.restore(checkpoint.group(f"{AVERAGE}.reservoir"), size, seen, str(checkpoint.path))
        self.model.load_state_dict(checkpoint.group(f"{AVERAGE}.model"))
        ckpt.restore_optimizer(self.optimizer, checkpoint, prefix=f"{AVERAGE}.optimizer")
        # the config's rate: it may change on resume (training.core.checkpoint.run_state.RESUMABLE_CHANGES)
        for group in self.optimizer.param_groups:
            group["lr"] = self.settings.sl_learning_rate
        self.rng = rng
        self.loss = math.nan if record.get("loss") is None else float(record["loss"])


class AveragePolicyHooks(ppo.PPOHooks):
    """NFSP inside PPO's loop: the average policy plays the ``opponents.population`` tables, learns from the policy's
    decisions after every update, is evaluated, checkpointed and saved as ``final`` (the policy, the best response, as
    ``best_response``).
    """

    run_files = (BEST_RESPONSE_NAME,)
    log_columns = ("sl_loss", "reservoir")

    def __init__(self, average: AveragePolicy):
        self.average = average

    def population(self) -> Population:
        """The average policy alone (its weights follow the average policy's after each update)."""
        return Population([self.average.model], np.ones(1), ["average policy"])

    def restore(self, checkpoint: ckpt.Checkpoint) -> None:
        """The average policy's weights, Adam state, reservoir and generator."""
        self.average.restore(checkpoint)

    def start(self, fixed: FixedOpponents | None) -> None:
        """The seats that play the average policy take its weights (restored on resume)."""
        fixed.models[0].load_state_dict(self.average.model.state_dict())

    def evaluated_model(self, policy: ActorCritic) -> ActorCritic:
        """The average policy, the run's agent."""
        return self.average.model

    def after_update(self, batch: tuple, fixed: FixedOpponents | None) -> dict[str, float]:
        """The policy's decisions that this update trained on enter the average policy's reservoir, the average policy
        takes its supervised steps, and the seats that play it take its new weights (from the next rollout on).
        """
        rollout, _, _, train_rows = batch
        self.average.observe(rollout, train_rows)
        stats = self.average.update()
        fixed.models[0].load_state_dict(self.average.model.state_dict())
        return stats

    def checkpoint_state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The average policy's part of a run checkpoint (``AveragePolicy.state``)."""
        return self.average.state()

    def before_final(
        self, run_dir: Path, config: TrainConfig, policy: ActorCritic, state: Progress, command: str
    ) -> None:
        """The best response, saved beside the run's agent."""
        save_agent_checkpoint(run_dir / BEST_RESPONSE_NAME, config, policy, state, command, network="best response")


def train(
    config: TrainConfig,
    resume: bool = False,
    command: str | None = None,
    progress_bar: bool = True,
    initial_weights: dict | None = None,
    base_run: dict | None = None,
) -> Path:
    """Run (or resume) NFSP for ``config``; return the path of the final agent checkpoint (the average policy).

    ``initial_weights`` start both networks (``--init-from``). The PPO loop (``training.algorithms.ppo.train``) runs
    the best response, with the average policy at its ``opponents.population`` tables, and trains the average policy
    after each of its updates (``AveragePolicyHooks``).
    """
    if config.algorithm != "nfsp":
        raise ValueError(f"config.algorithm={config.algorithm!r}; training.algorithms.nfsp.train runs algorithm: nfsp")
    game = config.game_config()
    enc = encoding_for(game)
    model = ActorCritic.from_spec(game, config.model, seed=config.seed)  # β's initial weights
    if initial_weights is not None:
        model.load_state_dict(initial_weights)
    average = AveragePolicy(
        model.to(torch.device(config.device)), config.nfsp, enc.observation.size, enc.num_actions, config.seed
    )
    path = ppo.train(
        config,
        resume=resume,
        command=command,
        progress_bar=progress_bar,
        initial_weights=initial_weights,
        base_run=base_run,
        hooks=AveragePolicyHooks(average),
    )
    print(
        f"average policy: {average.reservoir.seen:,} best-response decisions seen, {average.reservoir.size:,} "
        f"in the reservoir, {average.seconds:.0f} s of supervised steps",
        file=sys.stderr,
    )
    return path
