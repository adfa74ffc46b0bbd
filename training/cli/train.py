"""``cockroach-train``: train a self-play PPO agent (or, with ``algorithm: psro``, a PSRO mixture; with ``algorithm:
cfr``, CFR on a small rule set's exact tree, distilled into a network; with ``algorithm: nfsp``, NFSP's average policy)
from a YAML config. The config's ``algorithm`` names the entry point in ``training.core.registry``.

cockroach-train --config configs/research/ppo_4p.yaml
cockroach-train --config configs/research/ppo_4p.yaml --set ppo.learning_rate=1e-3 --set seed=2
cockroach-train --config configs/research/ppo_4p.yaml --resume      # continue runs/ppo_4p
cockroach-train --config configs/research/psro_2p.yaml --ray     # PSRO, its iterations' pieces on a local Ray cluster
cockroach-train --config configs/classic-4p.yaml --ray auto --workers 8   # PPO, its rollouts on 8 workers of a cluster
cockroach-train --config configs/research/cfr_mini.yaml          # CFR on mini's exact tree -> runs/cfr_mini/final
cockroach-train --config configs/research/nfsp_4p.yaml --init-from classic-4p-mixture   # NFSP: runs/nfsp_4p/final
is the average policy
"""

from __future__ import annotations

import argparse
import shlex
import sys
from dataclasses import MISSING, fields, is_dataclass
from pathlib import Path

from cockroach_env.config import GameConfig
from training.core import arguments, registry
from training.core.config import ConfigError, TrainConfig, load_config, unused_options
from training.core.distributed import add_ray_option
from training.core.output_paths import run_dir_problem
from training.core.schema import dotted_key, field_docs, type_hints


def build_parser() -> argparse.ArgumentParser:
    """The command line of ``cockroach-train``."""
    parser = argparse.ArgumentParser(
        prog="cockroach-train",
        description="Self-play masked PPO for Cockroach Poker. Writes runs/<name>/: checkpoint.json + "
        "checkpoint.<G>.safetensors (for --resume), "
        "final.json + final.<G>.safetensors (the trained weights, for load_agent and cockroach-eval), "
        "metrics.csv, eval.csv, tensorboard/ and learning_curves.png. "
        "SIGINT/SIGTERM: finish the current update (CFR: iteration), save, exit 130/143 (continue with --resume).",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="config options (YAML keys, or --set dotted.key=value):\n" + "\n".join(describe_options()),
    )
    parser.add_argument(
        "--config", metavar="YAML", help="config file (e.g. configs/classic-4p.yaml); defaults are used without one"
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config entry (repeatable)",
    )
    parser.add_argument("--resume", action="store_true", help="continue the run in output_dir/name from its checkpoint")
    parser.add_argument(
        "--init-from",
        metavar="CHECKPOINT",
        help="start a fresh run from a checkpoint's weights (same rules and network) instead of a random network",
    )
    parser.add_argument(
        "--overwrite", action="store_true", help="start afresh even if output_dir/name already holds a run"
    )
    parser.add_argument("--print-config", action="store_true", help="print the resolved config as YAML and exit")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (for logs)")
    add_ray_option(
        parser,
        "ppo, nfsp: play the rollouts on workers (distributed.address); psro: run each iteration's best responses and "
        "payoff tables",
    )
    parser.add_argument(
        "--workers",
        type=arguments.positive_integer,
        metavar="N",
        help="ppo, nfsp: play each rollout on N workers, each with num_envs/N games (distributed.workers)",
    )
    return parser


def describe_options(cls: type = TrainConfig, prefix: str = "") -> list[str]:
    """One line per option: dotted key, default and documentation (for ``--help``); for the whole config, the
    registered algorithms and their sections too.
    """
    lines = []
    docs = field_docs(cls)
    hints = type_hints(cls)
    for f in fields(cls):
        if cls is TrainConfig and f.name == "sections":  # (listed after the shared sections, by key)
            continue
        key = dotted_key(prefix, f.name)
        kind = hints[f.name]
        if isinstance(kind, type) and is_dataclass(kind):
            lines.append(f"{key}:  {(kind.__doc__ or '').strip()}")
            lines.extend(describe_options(kind, key))
            continue
        default = f.default if f.default is not MISSING else f.default_factory()  # type: ignore[misc]
        lines.append(f"  {key} = {default!r}  {docs.get(f.name, '')}")
        if key == "game":
            game_docs = field_docs(GameConfig)
            for g in fields(GameConfig):
                lines.append(f"      game.{g.name} (default {g.default!r})  {game_docs.get(g.name, '')}")
            lines.append("      game.preset  named rule set(s), e.g. 'royal' or 'rainbow+even-deal'")
        if key == "algorithm":
            for name in registry.names():
                lines.append(f"      algorithm: {name}  {registry.get(name).summary}")
    if cls is TrainConfig and not prefix:
        for key, section in registry.sections().items():
            lines.append(f"{key}:  {(section.__doc__ or '').strip()}")
            lines.extend(describe_options(section, key))
    return lines


def main(argv: list[str] | None = None) -> int:
    """``cockroach-train``: check the config and the run directory, train, and print where the agent is."""
    args = build_parser().parse_args(argv)
    if args.resume and args.overwrite:
        print(
            "cockroach-train: error: --resume (continue the run) is not allowed with --overwrite (start it again, "
            "replacing its files); give one of them",
            file=sys.stderr,
        )
        return 2
    try:
        config = load_config(args.config, args.overrides)
        if _distributed_shortcuts(args, config):
            config = load_config(args.config, args.overrides)
    except ConfigError as error:
        print(f"cockroach-train: error: {error}", file=sys.stderr)
        return 2
    for note in _unused(args, config):
        print(f"cockroach-train: warning: {note}", file=sys.stderr)
    if args.print_config:
        import yaml

        print(yaml.safe_dump(config.to_dict(), sort_keys=False), end="")
        return 0
    # (creates the run directory: after every other check)
    try:
        problem = _config_problem(args, config) or run_dir_problem(
            config.run_dir, resume=args.resume, overwrite=args.overwrite
        )
    except ConfigError as error:
        problem = str(error)
    if problem:
        print(f"cockroach-train: error: {problem}", file=sys.stderr)
        return 2
    from training.core.runs import CHECKPOINT_NAME

    given = sys.argv[1:] if argv is None else list(argv)
    command = "cockroach-train " + " ".join(shlex.quote(a) for a in given)
    resume_command = _resume_command(args)
    agent = _train(args, config, command, resume_command, given)
    if isinstance(agent, int):
        return agent
    if agent.with_suffix("").name == CHECKPOINT_NAME:  # a CFR run without a network, or stopped by its time limit
        print(
            f"solver checkpoint: {agent}  (its table: training.algorithms.cfr.load_policy("
            f"{str(agent.with_suffix(''))!r}); continue with {resume_command})"
        )
        return 0
    print(
        f"agent checkpoint: {agent}  (load with training.load_agent({str(agent.with_suffix(''))!r}) or cockroach-eval)"
    )
    return 0


def _distributed_shortcuts(args: argparse.Namespace, config) -> bool:
    """``--ray ADDRESS`` and ``--workers N`` of an algorithm whose rollouts run on workers become the overrides
    ``distributed.address`` and ``distributed.workers`` (so that the resume command keeps them); whether any did.
    ``--workers`` of another algorithm is refused by the config's check; its ``--ray`` stays its own.
    """
    if not registry.get(config.algorithm).rollout_workers and args.workers is None:
        return False
    if args.ray is not None and registry.get(config.algorithm).rollout_workers:
        args.overrides.append(f"distributed.address={args.ray}")
        args.ray = None
    if args.workers is not None:
        args.overrides.append(f"distributed.workers={args.workers}")
    return True


def _unused(args: argparse.Namespace, config) -> list[str]:
    """The settings that change nothing in this command (``unused_options``, and a teacher with ``--init-from``)."""
    notes = unused_options(config)
    if config.distributed.workers > 1 and config.distributed.address is None:
        notes.append(
            f"distributed.workers={config.distributed.workers} with distributed.address null plays the shards in this "
            "process one after another (the result a cluster gives, not faster); give --ray [ADDRESS] for a cluster"
        )
    if config.warm_start.teacher is not None and args.init_from and not args.resume:
        notes.append(
            f"warm_start.teacher={config.warm_start.teacher!r} does nothing with --init-from (the run starts from "
            "those weights, without a warm start)"
        )
    return notes


def _config_problem(args: argparse.Namespace, config) -> str | None:
    """What the command line cannot run of a valid config, or None; a ``warm_start.teacher`` that cannot teach raises
    ``ConfigError`` (it is loaded here, before the run directory is made).
    """
    algorithm = registry.get(config.algorithm)
    if args.ray is not None and not algorithm.ray:
        takes = [name for name in registry.names() if registry.get(name).ray]
        return (
            f"--ray is not allowed with algorithm: {config.algorithm} (it does not run on Ray); expected an algorithm "
            f"that does: {takes}"
        )
    problem = algorithm.problem(config) if algorithm.problem is not None else None
    if problem:
        return problem
    if config.warm_start.teacher is not None and not args.resume and not args.init_from:
        from training.algorithms.imitation import resolve_teacher

        resolve_teacher(config)
    return None


def _trainer(args: argparse.Namespace, config):
    """The entry point of the config's algorithm (``training.core.registry``), with ``--ray`` where it takes it."""
    algorithm = registry.get(config.algorithm)
    train = algorithm.trainer()
    if algorithm.ray:
        from functools import partial

        return partial(train, ray_address=args.ray)
    return train


def _train(args: argparse.Namespace, config, command: str, resume_command: str, given: list[str]) -> Path | int:
    """Train (or resume) the run; the agent's path, or the exit status after a stop or an error (printed)."""
    from training.core.checkpoint import CheckpointError
    from training.core.learner import NonFiniteUpdate
    from training.core.runs import CHECKPOINT_NAME, Interrupted
    from training.core.update_process import UpdateProcessError
    from training.evaluation.exact import TreeTooLarge

    train = _trainer(args, config)
    try:
        initial, population, base_run = (
            _initial_weights(args.init_from, config) if args.init_from and not args.resume else (None, None, None)
        )
        more = {"initial_population": population} if population else {}
        return train(
            config,
            resume=args.resume,
            command=command,
            progress_bar=not args.no_progress,
            initial_weights=initial,
            base_run=base_run,
            **more,
        )
    except (CheckpointError, ConfigError, TreeTooLarge) as error:
        print(f"cockroach-train: error: {error}", file=sys.stderr)
        return 2
    except Interrupted as stop:
        if not stop.saved:
            print(
                f"cockroach-train: stopped by {stop}. Start it again with:\n  {_start_command(given, config.run_dir)}",
                file=sys.stderr,
            )
        else:
            print(f"cockroach-train: stopped by {stop}. Continue with:\n  {resume_command}", file=sys.stderr)
        return stop.exit_code
    except NonFiniteUpdate as error:
        print(f"cockroach-train: error: {error}\n{non_finite_advice(config.run_dir)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        if not (config.run_dir / f"{CHECKPOINT_NAME}.json").exists():
            # stopped before the run's first checkpoint: nothing to resume
            print(
                f"cockroach-train: interrupted before the first checkpoint of {config.run_dir}; "
                "start it again with --overwrite",
                file=sys.stderr,
            )
            return 130
        print(
            f"cockroach-train: interrupted; the last checkpoint written in {config.run_dir} is intact. "
            f"Continue with:\n  {resume_command}",
            file=sys.stderr,
        )
        return 130
    except UpdateProcessError as error:  # ppo.overlap's update process died (killed, out of memory) or failed
        print(
            f"cockroach-train: error: {error}\nThe last checkpoint written in {config.run_dir} (if any) is intact. "
            f"Continue with:\n  {resume_command}",
            file=sys.stderr,
        )
        return 1
    except OSError as error:  # a full disk, a directory made read-only meanwhile: the previous checkpoint is kept
        where = f" ({error.filename})" if error.filename else ""
        print(
            f"cockroach-train: error: cannot write the run{where}: {error.strerror or error}; the previous checkpoint "
            f"in {config.run_dir} (if any) is kept. Free space or fix the permissions, then continue with:\n"
            f"  {resume_command}",
            file=sys.stderr,
        )
        return 1


def non_finite_advice(run_dir: Path) -> str:
    """What to do after a ``NonFiniteUpdate``: the run's last checkpoint is intact, but the same settings meet the same
    values again.
    """
    from training.core.runs import CHECKPOINT_NAME

    kept = (
        f"The last checkpoint in {run_dir} is intact"
        if (run_dir / f"{CHECKPOINT_NAME}.json").exists()
        else f"No checkpoint of {run_dir} was written"
    )
    return f"{kept}; with the same settings the run meets the same values again: lower that option and start it again"


def _start_command(given: list[str], run_dir: Path) -> str:
    """The command that starts a run again that stopped before its first checkpoint: the given one without
    ``--resume``, with ``--overwrite`` only if the run directory still holds files.
    """
    argv = [a for a in given if a not in ("--resume", "--overwrite")]
    try:
        held = any(run_dir.iterdir())
    except OSError:
        held = True
    return " ".join(shlex.quote(a) for a in ["cockroach-train", *argv, *(["--overwrite"] if held else [])])


def _resume_command(args) -> str:
    argv = ["cockroach-train"]
    if args.config:
        argv += ["--config", args.config]
    for item in args.overrides:
        argv += ["--set", item]
    return " ".join(shlex.quote(a) for a in argv + ["--resume"])


def _initial_weights(path: str, config) -> tuple[dict | None, list[tuple[str, dict]] | None, dict]:
    """``(weights, population, base_run)`` of ``path``, checked against the rules and network of ``config``: the
    weights to start from and the record of where they came from. A mixture starts PSRO's population from all its
    members (``population``: name and weights of each) and anything else from its heaviest member.
    """
    from training.core.checkpoint import CheckpointError, build_model, load_checkpoint, member_models, mixture_weights

    checkpoint = load_checkpoint(path, game=config.game_config())
    spec = checkpoint.metadata["model"]
    wanted = {
        "hidden_sizes": list(config.model.hidden_sizes),
        "activation": config.model.activation,
        "card_counting": config.model.card_counting,
    }
    if {**wanted, **spec} != wanted:
        raise CheckpointError(
            f"{checkpoint.path}: --init-from needs the network of the config {wanted}, the checkpoint has {spec}"
        )
    meta = checkpoint.metadata
    base_run = {
        "path": str(checkpoint.path.with_suffix("")),
        "commands": meta.get("commands") or [meta.get("command")],
        "step": meta.get("step"),
    }
    if meta.get("base_run"):
        base_run["base_run"] = meta["base_run"]
    if meta["kind"] != "mixture":
        return build_model(checkpoint).state_dict(), None, base_run
    names, weights = mixture_weights(checkpoint)
    models = member_models(checkpoint)
    if meta["mixture"].get("recipes"):  # a cockroach-mixture checkpoint: how each member was made
        base_run["recipes"] = meta["mixture"]["recipes"]
    if registry.get(config.algorithm).population_start:
        base_run["members"] = names
        return None, [(name, model.state_dict()) for name, model in zip(names, models)], base_run
    heaviest = int(weights.argmax())
    base_run["member"] = names[heaviest]
    print(
        f"--init-from {path}: a mixture of {len(names)}; starting from its heaviest member "
        f"{names[heaviest]!r} (weight {weights[heaviest] / weights.sum():.3f})",
        file=sys.stderr,
    )
    return models[heaviest].state_dict(), None, base_run


if __name__ == "__main__":
    sys.exit(main())
