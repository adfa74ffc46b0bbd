"""A PPO run's save and restore: the run checkpoint that ``--resume`` continues from, and the agents it writes.

A run checkpoint (kind ``run``, ``RUN_SCHEMA``) holds the policy's and the exploiter's weights and Adam states, the
magnet, the pool's snapshots, the generators' states and the counters (``Progress``); what an algorithm built on the
loop adds comes through its hooks (``RunStateHooks``: NFSP's average policy). ``restore_run`` checks all of it
(config, shapes, counters) before it loads anything, so a refused resume changes nothing. The package does not
import this module (it needs torch and the run's machinery); import it by its path.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from training.core import checkpoint as ckpt
from training.core.config import ConfigError, TrainConfig, config_from_dict
from training.core.learner import Learner
from training.core.model import ActorCritic
from training.core.opponents import Snapshot
from training.core.runs import CHECKPOINT_NAME, Progress, config_diff, finished_run_agent, run_metadata


class RunStateHooks(Protocol):
    """What an algorithm built on PPO's loop adds to a run checkpoint (``training.algorithms.ppo.PPOHooks``)."""

    def checkpoint_state(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """Tensors and top-level metadata entries to add to a run checkpoint."""

    def restore(self, checkpoint: ckpt.Checkpoint) -> None:
        """Load its part of a run checkpoint (check it first: a refused resume changes nothing)."""


def progress_metadata(config: TrainConfig, state: Progress, command: str, kind: str) -> dict[str, Any]:
    """The metadata of a PPO run's checkpoint (``kind``: ``run`` or ``agent``), with its counters and latest
    evaluation.
    """
    step = {
        "update": state.update,
        "decisions": state.decisions,
        "samples": state.samples,
        "games": state.games,
        "wall_seconds": round(state.wall_seconds, 1),
    }
    return run_metadata(
        config,
        command,
        state.commands,
        step,
        kind=kind,
        base_run=state.base_run,
        warm_start=state.warm_start,
        evaluation=state.evaluations[-1] if state.evaluations else None,
    )


def save_run_checkpoint(
    path: Path,
    config,
    policy: Learner,
    exploiter: Learner | None,
    sampler,
    rng,
    pool: list[Snapshot],
    state: Progress,
    command: str,
    hooks: RunStateHooks | None = None,
) -> Path:
    """Everything ``--resume`` needs: weights, Adam state (of the policy and the exploiter), magnet, pool, RNG states,
    counters; and what ``hooks`` adds (NFSP: the average policy's weights, Adam state, reservoir and generator).
    """
    tensors, optimizers = {}, {}
    for prefix, learner in _prefixed(policy, exploiter):
        tensors.update({f"{prefix}model.{k}": v for k, v in learner.model.state_dict().items()})
        optimizer_tensors, optimizers[f"{prefix}optimizer"] = ckpt.optimizer_state(
            learner.optimizer, prefix=f"{prefix}optimizer"
        )
        tensors.update(optimizer_tensors)
    if policy.magnet is not None:
        tensors.update({f"magnet.{k}": v for k, v in policy.magnet.state_dict().items()})
    for snapshot in pool:
        tensors.update({f"pool.{snapshot.id}.{k}": v for k, v in snapshot.model.state_dict().items()})
    tensors["rng.sampler"] = sampler.get_state()
    metadata = progress_metadata(config, state, command, "run")
    metadata.update(
        optimizers,
        pool=[{"id": s.id, "update": s.update, "source": s.source} for s in pool],
        progress={k: v for k, v in state.__dict__.items()},
        rng={"numpy": ckpt.numpy_rng_state(rng)},
    )
    if hooks is not None:
        hook_tensors, hook_metadata = hooks.checkpoint_state()
        tensors.update(hook_tensors)
        metadata.update(hook_metadata)
    return ckpt.save_checkpoint(path, tensors, metadata)


def prune_kept_agents(directory: Path, update: int) -> None:
    """Remove the kept agents (``schedule.keep_agent_every``) after ``update``: on resume those of the continuation
    that the checkpoint does not hold (the resumed run writes its own at those updates), on a fresh start
    (``update=-1``, with ``--overwrite``) all of the replaced run's; tidy the others' stale files.
    """
    if not directory.is_dir():
        return
    for meta in sorted(directory.glob("update_*.json")):
        stem = meta.with_suffix("")
        kept = stem.name[len("update_") :]
        if kept.isdigit() and int(kept) > update:
            for path in [meta, *directory.glob(f"{stem.name}.*.safetensors")]:
                path.unlink(missing_ok=True)
        else:
            ckpt.remove_stale(stem)


def save_agent_checkpoint(
    path: Path, config: TrainConfig, model: ActorCritic, state: Progress, command: str, network: str | None = None
) -> Path:
    """The weights only (small), with the metadata users and the arena need. ``network``: which of an NFSP run's
    networks it is, if not the evaluated one (``best response``: recorded, without the evaluations, which are the
    average policy's).
    """
    tensors = {f"model.{k}": v for k, v in model.state_dict().items()}
    metadata = progress_metadata(config, state, command, "agent")
    metadata["evaluations"] = state.evaluations
    if network is not None:
        metadata.update(network=network, evaluation=None, evaluations=[])
    return ckpt.save_checkpoint(path, tensors, metadata)


def _prefixed(policy: Learner, exploiter: Learner | None) -> list[tuple[str, Learner]]:
    """The learners with the prefix of their tensors and optimizer state in a run checkpoint."""
    return [("", policy)] + ([("exploiter.", exploiter)] if exploiter else [])


RESUMABLE_CHANGES = (
    "schedule.total_decisions",
    "schedule.time_limit_minutes",
    "schedule.keep_agent_every",
    "evaluation",
    "device",
    "torch_threads",
    "output_dir",
    "distributed.address",
    "distributed.max_restarts",
    "nfsp.sl_learning_rate",
    "nfsp.sl_steps",
    "nfsp.sl_batch_size",
)
"""Config entries that may differ between a run and its resumption (where the rollout workers run, which changes no
result; NFSP's supervised steps: an average policy that should settle, e.g. a lower ``nfsp.sl_learning_rate`` late in
a run; the reservoir's size may not change)."""


def restore_run(
    run_dir: Path,
    config: TrainConfig,
    policy: Learner,
    exploiter: Learner | None,
    sampler,
    pool: list[Snapshot],
    device,
    hooks: RunStateHooks,
) -> tuple[Progress, np.random.Generator]:
    """Load the run checkpoint of ``run_dir`` into the learners, the sampler and the pool, checked first against
    ``config`` (only ``RESUMABLE_CHANGES`` may differ); the counters and the table generator.
    """
    checkpoint = ckpt.load_checkpoint(
        run_dir / CHECKPOINT_NAME, game=config.game_config(), kind="run", schema=ckpt.RUN_SCHEMA
    )
    try:
        return _restore_from(checkpoint, config, policy, exploiter, sampler, pool, device, hooks)
    except ckpt.CheckpointError:
        raise
    except ConfigError as error:
        raise ckpt.CheckpointError(f"{checkpoint.path}: its training config is not valid here: {error}") from None
    except (KeyError, TypeError, ValueError, RuntimeError, IndexError, AttributeError) as error:
        # Everything was validated against RUN_SCHEMA; what is left is a checkpoint altered in a way the schema cannot
        # see.
        raise ckpt.CheckpointError(
            f"{checkpoint.path}: the run state cannot be restored ({type(error).__name__}: {error}); the "
            f"checkpoint is inconsistent"
        ) from None


def _restore_from(
    checkpoint,
    config: TrainConfig,
    policy: Learner,
    exploiter: Learner | None,
    sampler,
    pool: list[Snapshot],
    device,
    hooks: RunStateHooks,
) -> tuple[Progress, np.random.Generator]:
    meta = checkpoint.metadata
    saved = config_from_dict(meta["training_config"], where=str(checkpoint.path))
    differences = [
        key for key in config_diff(saved.to_dict(), config.to_dict()) if not key.startswith(RESUMABLE_CHANGES)
    ]
    if differences:
        raise ckpt.CheckpointError(
            f"{checkpoint.path}: cannot resume with a different config; changed: {differences} (only "
            f"{list(RESUMABLE_CHANGES)} may change)"
        )
    for prefix in (
        [f"{p}model" for p, _ in _prefixed(policy, exploiter)]
        + (["magnet"] if config.ppo.magnet_network else [])
        + [f"pool.{e['id']}" for e in meta["pool"]]
    ):
        ckpt.check_shapes(checkpoint, prefix)  # before anything is loaded: a refused resume changes nothing
    progress_keys = {f.name for f in dataclasses.fields(Progress)}
    if set(meta["progress"]) - progress_keys:
        raise ckpt.CheckpointError(
            f"{checkpoint.path}: metadata field 'progress' has unknown entries "
            f"{sorted(set(meta['progress']) - progress_keys)}; expected some of {sorted(progress_keys)}"
        )
    hooks.restore(checkpoint)  # (checks its part of the checkpoint before it loads it)
    for prefix, learner in _prefixed(policy, exploiter):
        learner.model.load_state_dict(checkpoint.group(f"{prefix}model"))
        ckpt.restore_optimizer(learner.optimizer, checkpoint, prefix=f"{prefix}optimizer")
    if config.ppo.magnet_network:
        policy.refresh_magnet()
        policy.magnet.load_state_dict(checkpoint.group("magnet"))
    sampler.set_state(checkpoint.tensors["rng.sampler"])
    game = config.game_config()
    for entry in meta["pool"]:
        frozen = ActorCritic.from_spec(game, config.model).to(device)
        frozen.load_state_dict(checkpoint.group(f"pool.{entry['id']}"))
        pool.append(
            Snapshot(entry["id"], entry["update"], frozen.eval().requires_grad_(False), entry.get("source", "policy"))
        )
    state = Progress(**meta["progress"])
    return state, ckpt.restore_numpy_rng(meta["rng"]["numpy"])


def finished_agent(run_dir: Path, state: Progress, config: TrainConfig) -> Path | None:
    """The agent checkpoint of a run that finished at ``state.update`` (final evaluation included), else None."""

    def ends_this_run(meta: dict[str, Any]) -> bool:
        step = meta.get("step") or {}
        evaluated = not config.evaluation.final_games or bool((meta.get("evaluation") or {}).get("final"))
        return step.get("update") == state.update and step.get("decisions") == state.decisions and evaluated

    return finished_run_agent(run_dir, ends_this_run)
