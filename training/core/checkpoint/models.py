"""Networks and agents from checkpoints: ``build_model``, ``load_agent``, mixtures' members and weights."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from cockroach_env.config import GameConfig
from cockroach_env.encoding import keeps_moves, without_moves
from training.core.checkpoint.files import save_checkpoint
from training.core.checkpoint.format import MEMBER_PREFIX, NFSP_AVERAGE, SHIPPED_DIR, Checkpoint, CheckpointError
from training.core.checkpoint.loading import load_checkpoint, read_metadata, shipped_checkpoints
from training.core.config import cut, quoted


def build_model(checkpoint: Checkpoint, device: str = "cpu"):
    """The ``ActorCritic`` of a checkpoint, with its weights (of an NFSP run checkpoint: the average policy, the run's
    agent).
    """
    if checkpoint.metadata["kind"] == "mixture":
        raise CheckpointError(
            f"{checkpoint.path}: a mixture checkpoint holds several networks; load it with load_agent, or its "
            f"members with training.core.mixture.member_models"
        )
    if checkpoint.metadata["kind"] == "solver":
        raise CheckpointError(
            f"{checkpoint.path}: a CFR solver checkpoint holds regrets over a game tree, not a network; its "
            f"agent is the run's final checkpoint (runs/<name>/final), its table "
            f"training.algorithms.cfr.load_policy"
        )
    # the run's agent is its average policy
    nfsp = checkpoint.metadata["kind"] == "run" and NFSP_AVERAGE in checkpoint.metadata
    return build_model_from(checkpoint, f"{NFSP_AVERAGE}.model" if nfsp else "model", device)


def build_model_from(checkpoint: Checkpoint, prefix: str, device: str = "cpu"):
    """An ``ActorCritic`` of the checkpoint's recorded network holding its ``prefix.*`` tensors
    (``model``, or a mixture member's ``member.<k>.model``), their shapes checked first.
    """
    from training.core.model import ActorCritic

    spec = checkpoint.metadata["model"]
    check_shapes(checkpoint, prefix)
    weights = checkpoint.group(prefix)
    model = ActorCritic.from_spec(checkpoint.game_config, spec)
    try:
        model.load_state_dict(weights)
    except RuntimeError as error:
        raise CheckpointError(
            f"{checkpoint.path}: the weights do not fit the recorded network {spec}: {error}"
        ) from None
    return model.to(device)


def check_shapes(checkpoint: Checkpoint, prefix: str = "model") -> None:
    """The tensors under ``prefix`` must be exactly those of the recorded network: checked on
    torch's meta device, so a bogus ``hidden_sizes`` costs nothing before it is refused.
    """
    import torch

    from training.core.model import ActorCritic

    spec = checkpoint.metadata["model"]
    found = {k: tuple(v.shape) for k, v in checkpoint.group(prefix).items()}
    # Every hidden layer of h units has tensors with a dimension h: a width larger than all the tensors' dimensions
    # is refused before any network (even on the meta device) is built.
    largest = max((size for shape in found.values() for size in shape), default=0)
    too_wide = [h for h in spec["hidden_sizes"] if h > largest]
    if too_wide:
        raise CheckpointError(
            f"{checkpoint.path}: the {prefix!r} tensors do not fit the recorded network: model.hidden_sizes has "
            f"width {quoted(too_wide[0])}, but no tensor has a dimension above {largest}"
        )
    try:
        with torch.device("meta"):
            network = ActorCritic.from_spec(checkpoint.game_config, spec)
    except (RuntimeError, ValueError, OverflowError) as error:
        raise CheckpointError(
            f"{checkpoint.path}: the recorded network {quoted(spec)} cannot be built ({cut(error)})"
        ) from None
    expected = {k: tuple(v.shape) for k, v in network.state_dict().items()}
    if found != expected:
        wrong = sorted(set(found) ^ set(expected)) or [k for k in expected if found[k] != expected[k]]
        detail = ", ".join(
            f"{prefix}.{k}: {found.get(k, 'absent')} (expected {expected.get(k, 'absent')})" for k in wrong[:3]
        )
        raise CheckpointError(
            f"{checkpoint.path}: the {prefix!r} tensors do not fit the recorded network {quoted(spec)}: {detail}"
        )


def load_agent(
    path_or_name: str | os.PathLike,
    seed: int | None = None,
    config: GameConfig | None = None,
    greedy: bool = False,
    device: str = "cpu",
):
    """An agent of the ``baselines`` protocol playing a checkpoint.

    ``path_or_name`` is a checkpoint path (``runs/ppo_4p/final``, with or without
    ``.json``) or a shipped name (``classic-4p``, ``classic-2p``, ...). ``config``, if
    given, must be the rule set the checkpoint was trained for, or that rule set with
    ``recall=True`` or a ``history`` window (the agent then reads the observation without the moves, a
    ``baselines.agent.RecallPrefixAgent``). A mixture checkpoint
    (PSRO's result) gives a ``training.core.mixture.MixtureAgent``.

    The agent's ``name`` (its label in arena tables, reports and game records) is the
    shipped name when loaded by one (``classic-4p``), else the name the checkpoint
    records (its run's) or the file's stem.
    """
    from baselines.agent import RecallPrefixAgent
    from training.core.model import PolicyAgent

    table = config
    # an agent trained without recall or history also plays the same rules with them (the observation's prefix)
    if config is not None and keeps_moves(config):
        trained = GameConfig(**read_metadata(path_or_name)["game_config"])
        if not keeps_moves(trained) and without_moves(config) == trained:
            config = trained
    checkpoint = load_checkpoint(path_or_name, game=config)
    if checkpoint.metadata["kind"] == "mixture":  # one member per game, drawn with the mixture's weights
        agent = load_mixture_agent(
            checkpoint, seed=seed, greedy=greedy, device=device, name=agent_name(checkpoint, path_or_name)
        )
        if table is not config:
            agent.members = [RecallPrefixAgent(member, table) for member in agent.members]
            agent.config = table
        return agent
    model = build_model(checkpoint, device)
    name = agent_name(checkpoint, path_or_name)
    agent = PolicyAgent(model, checkpoint.game_config, seed=seed, name=name, greedy=greedy)
    return RecallPrefixAgent(agent, table) if table is not config else agent


def agent_name(checkpoint: Checkpoint, path_or_name: str | os.PathLike | None = None) -> str:
    """The label of ``checkpoint``'s agent: the shipped name if ``path_or_name`` is one and named the shipped
    checkpoint (``classic-4p``, not the run that made it), else the recorded ``name`` or the file's stem.
    """
    if path_or_name is not None and str(path_or_name) in shipped_checkpoints():
        from importlib import resources

        shipped = Path(str(resources.files("training") / SHIPPED_DIR / f"{path_or_name}.json"))
        if checkpoint.path == shipped:  # (a file of that name in the working directory is loaded by path)
            return str(path_or_name)
    return checkpoint.metadata.get("name") or checkpoint.path.stem


# ---------------------------------------------------------------------------- mixtures (PSRO)


def save_mixture_checkpoint(
    path: str | Path, models: Sequence[Any], weights: Sequence[float], names: Sequence[str], metadata: dict[str, Any]
) -> Path:
    """Write a mixture checkpoint: every member's weights and ``metadata`` (``game_config``, ``model``, ...) plus the
    ``mixture`` entry.
    """
    weights = [float(w) for w in weights]
    if not (len(models) == len(weights) == len(names)) or not models:
        raise ValueError(
            f"a mixture checkpoint needs one weight and one name per member; got {len(models)} models, "
            f"{len(weights)} weights, {len(names)} names"
        )
    tensors = {
        f"{MEMBER_PREFIX}.{k}.model.{name}": value
        for k, model in enumerate(models)
        for name, value in model.state_dict().items()
    }
    mixture = {**metadata.get("mixture", {}), "members": [{"name": n, "weight": w} for n, w in zip(names, weights)]}
    return save_checkpoint(path, tensors, {**metadata, "kind": "mixture", "mixture": mixture})


def member_models(checkpoint, device: str = "cpu") -> list[Any]:
    """The ``ActorCritic`` of every member of a loaded mixture checkpoint."""
    members = _members_entry(checkpoint)
    models = []
    for k in range(len(members)):
        prefix = f"{MEMBER_PREFIX}.{k}.model"
        if not checkpoint.group(prefix):
            raise CheckpointError(
                f"{checkpoint.path}: member {k} of {len(members)} has no weights ({prefix}.*) in the tensor file"
            )
        models.append(build_model_from(checkpoint, prefix, device))
    return models


def mixture_weights(checkpoint) -> tuple[list[str], np.ndarray]:
    """Names and weights of a loaded mixture checkpoint's members."""
    members = _members_entry(checkpoint)
    return [m["name"] for m in members], np.array([m["weight"] for m in members], np.float64)


def load_mixture_agent(
    checkpoint, seed: int | None = None, greedy: bool = False, device: str = "cpu", name: str | None = None
):
    """A ``training.core.mixture.MixtureAgent`` of PolicyAgents, one per member, seeded from ``seed``; ``name``
    (default: the recorded name or the file's stem) labels it.
    """
    from training.core.mixture import MixtureAgent
    from training.core.model import PolicyAgent

    names, weights = mixture_weights(checkpoint)
    rng = np.random.default_rng(seed)
    seeds = rng.integers(0, 2**63 - 1, size=len(names) + 1)
    game = checkpoint.game_config
    members = [
        PolicyAgent(model, game, seed=int(s), name=n, greedy=greedy)
        for model, n, s in zip(member_models(checkpoint, device), names, seeds)
    ]
    name = name or agent_name(checkpoint)
    return MixtureAgent(members, weights, game, seed=int(seeds[-1]), name=name)


def _members_entry(checkpoint) -> list[dict[str, Any]]:
    entry = checkpoint.metadata.get("mixture")
    members = entry.get("members") if isinstance(entry, dict) else None
    ok = (
        isinstance(members, list)
        and members
        and all(
            isinstance(m, dict)
            and isinstance(m.get("name"), str)
            and isinstance(m.get("weight"), (int, float))
            and m["weight"] >= 0
            for m in members
        )
    )
    if not ok or not sum(m["weight"] for m in members) > 0:
        raise CheckpointError(
            f"{checkpoint.path}: a mixture checkpoint needs mixture.members, a list of {{name, weight >= 0}} "
            f"with a positive total weight; got {members!r}"
        )
    return members


# ---------------------------------------------------------------------------- optimizer and RNG state
