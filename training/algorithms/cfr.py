"""CFR over the exact game tree of a small rule set, distilled into an agent (``algorithm: cfr``), read top to bottom.

For rule sets whose whole tree fits the exact evaluator (presets ``mini`` and
``mini-3p``), ``training.algorithms.cfr_solver.TreeSolver`` minimises counterfactual regret on the
tree's node arrays with numpy (``cfr.variant``, ``cfr.keys``; see that module). Every
``cfr.evaluate_every`` iterations the average strategy's exact NashConv
(``training.evaluation.exact``) is appended to ``cfr.csv``; every ``cfr.checkpoint_every``
iterations the regrets and the average strategy are saved. At the end the average
strategy is distilled into the config's ``model`` network (``training.algorithms.distill``) and
saved as an ordinary agent checkpoint, whose own exact NashConv is measured and
recorded in its metadata (``exact``).

Run directory ``output_dir/name``: ``checkpoint`` (kind ``solver``: tensors
``cfr.regrets`` and ``cfr.strategy_sum``, shape (keys, actions), float64; for
``--resume``), ``final`` (the distilled agent: ``training.load_agent``,
``cockroach-eval``, ``cockroach-exploit --exact``; not written with
``cfr.distill_steps: 0``) and ``cfr.csv``. ``load_policy(checkpoint)`` gives the solver's
own table (a ``training.evaluation.exact`` profile seat).

With ``cfr.keys: information_state`` the solver's average strategy is over perfect-recall
information states, which a network over the env's observations cannot see; the network is
then fitted to its projection onto observations (each observation's information sets,
weighted by chance and own reach). ``metadata.exact`` records the NashConv of the solver's
table, of the table over observations the network was fitted to, and of the network.

With ``game: {recall: true}`` (``GameConfig.recall``) the observation is the information
state up to the seat rotation, so that projection loses nothing but the difference between
the seats' strategies (on ``mini`` its NashConv is below the solver's own): the network
can play the solution, and exploitability descent is not needed (``cfr.descent_steps: 0``).

The solver is deterministic: ``--resume`` (also with more ``cfr.iterations``) continues
from the checkpoint's regrets exactly as the uninterrupted run would. SIGINT/SIGTERM
finish the current iteration, save and exit 130/143.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from cockroach_env.config import GameConfig
from training.algorithms.cfr_solver import SolverState, TreeSolver
from training.core import checkpoint as ckpt
from training.core.config import TrainConfig, config_from_dict
from training.core.runs import (
    AGENT_NAME,
    CHECKPOINT_NAME,
    Interrupted,
    StopSignals,
    append_csv,
    config_diff,
    finished_run_agent,
    prepare_csv,
)
from training.evaluation.against_baselines import final_evaluation
from training.evaluation.exact import DEFAULT_MAX_NODES, GameTree, InformationSetPolicy, build_tree, evaluate, game_tree

CFR_RESUMABLE_CHANGES = (
    "cfr.iterations",
    "cfr.evaluate_every",
    "cfr.checkpoint_every",
    "cfr.distill_steps",
    "cfr.distill_learning_rate",
    "cfr.descent",
    "schedule.time_limit_minutes",
    "evaluation",
    "device",
    "torch_threads",
    "output_dir",
    "model",
)
"""Config entries that may differ between a CFR run and its resumption (none of them changes the regrets)."""
LOG_COLUMNS = ["iteration", "wall_seconds", "solver_seconds", "nash_conv", "exploitability"]
SOLVER_SCHEMA: tuple[ckpt.Field, ...] = (
    ckpt.Field("training_config", lambda v: isinstance(v, dict), "a mapping (the run's training config)"),
    ckpt.Field(
        "step.iteration", lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0, "an integer >= 0"
    ),
    ckpt.Field(
        "step.wall_seconds",
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0,
        "a number >= 0",
    ),
    ckpt.Field(
        "step.solver_seconds",
        lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and v >= 0,
        "a number >= 0",
    ),
    ckpt.Field("cfr.keys", lambda v: v in ("observation", "information_state"), "'observation' or 'information_state'"),
    ckpt.Field(
        "cfr.shape",
        lambda v: isinstance(v, list) and len(v) == 2 and all(isinstance(k, int) and k >= 1 for k in v),
        "[keys, actions]",
    ),
    ckpt.Field("commands", lambda v: isinstance(v, list) and all(isinstance(c, str) for c in v), "a list of strings"),
)
"""What a solver checkpoint's metadata holds besides ``checkpoint.SCHEMA`` (checked before its tensors are used)."""


def train(
    config: TrainConfig,
    resume: bool = False,
    command: str | None = None,
    progress_bar: bool = True,
    initial_weights: dict | None = None,
    base_run: dict | None = None,
) -> Path:
    """Run (or resume) CFR for ``config``; return the final agent checkpoint (the solver checkpoint with
    ``cfr.distill_steps: 0`` or when stopped early).

    ``initial_weights`` is not used (a solver starts from zero regrets); ``progress_bar`` is accepted for the CLI's
    sake. SIGINT or SIGTERM (in the main thread) stops after the current iteration with a checkpoint and raises
    ``Interrupted``.
    """
    if initial_weights is not None:
        raise ckpt.CheckpointError(
            "--init-from is not allowed with algorithm: cfr; a solver starts from zero regrets (resume a CFR "
            "run with --resume)"
        )
    with StopSignals() as signals:
        return _train(config, resume, command, signals)


def _train(config: TrainConfig, resume: bool, command: str | None, signals: StopSignals) -> Path:
    game = config.game_config()
    settings = config.cfr
    run_dir = config.run_dir
    command = command or " ".join(["cockroach-train", *sys.argv[1:]])
    # TreeTooLarge (a ValueError naming the rule set) before anything is written
    tree = solver_tree(game, settings.max_nodes)
    run_dir.mkdir(parents=True, exist_ok=True)
    ckpt.remove_stale(run_dir / CHECKPOINT_NAME)
    solver = TreeSolver(tree, settings.keys, settings.variant, settings.alternating)
    if resume:
        state, progress = _restore(run_dir, config, solver)
        finished = _finished_result(run_dir, config, state)
        if finished is not None:
            print(
                f"{run_dir} is already finished at CFR iteration {state.iteration}; its result is {finished} "
                "(raise cfr.iterations to solve on, or change the distillation or descent settings to distil again)",
                file=sys.stderr,
            )
            return finished
        print(f"resuming {run_dir} at CFR iteration {state.iteration}", file=sys.stderr)
    else:
        state, progress = solver.initial_state(), {"wall_seconds": 0.0, "solver_seconds": 0.0, "commands": []}
    progress["commands"].append(command)
    # started again (--overwrite): a stop before the first save leaves none of the replaced run's checkpoints to resume
    # or load
    if not resume:
        for name in (CHECKPOINT_NAME, AGENT_NAME):
            ckpt.remove_checkpoint(run_dir / name)
    prepare_csv(run_dir / "cfr.csv", LOG_COLUMNS, state.iteration if resume else None, key="iteration")
    started = time.perf_counter() - progress["wall_seconds"]
    limit = config.schedule.time_limit_minutes
    stop_reason = None
    if not resume:
        _log(run_dir, solver, state, progress, game, tree)

    while state.iteration < settings.iterations:
        t0 = time.perf_counter()
        state = solver.iterate(state)
        progress["solver_seconds"] += time.perf_counter() - t0
        progress["wall_seconds"] = time.perf_counter() - started
        done = state.iteration == settings.iterations
        if (settings.evaluate_every and state.iteration % settings.evaluate_every == 0) or done:
            _log(run_dir, solver, state, progress, game, tree)
        interrupted = signals.received is not None
        over_time = limit is not None and progress["wall_seconds"] > 60 * limit and not done
        if state.iteration % settings.checkpoint_every == 0 or done or interrupted or over_time:
            _save_solver(run_dir / CHECKPOINT_NAME, config, state, progress)
        if interrupted:
            raise Interrupted(signals.received, run_dir / CHECKPOINT_NAME, state.iteration, "iteration")
        if over_time:
            stop_reason = f"time limit of {limit} minutes reached at iteration {state.iteration}"
            break
    if stop_reason:
        print(f"stopped early: {stop_reason}; continue with --resume", file=sys.stderr)
        return run_dir / CHECKPOINT_NAME
    if not settings.distill_steps:
        return run_dir / CHECKPOINT_NAME
    return _distill_and_save(run_dir / AGENT_NAME, config, solver, state, progress, game, tree, signals)


DISTILLATION_KEYS = ("cfr.distill_steps", "cfr.distill_learning_rate", "cfr.descent", "model")
"""Config entries that make the agent ``final`` from the solved strategy: a change on resume distils again."""


def _finished_result(run_dir: Path, config: TrainConfig, state: SolverState) -> Path | None:
    """The result of a run that is finished at ``state.iteration`` with the config's distillation: the agent ``final``
    (the solver checkpoint without distillation); else None.
    """
    if state.iteration < config.cfr.iterations:
        return None
    if not config.cfr.distill_steps:
        return run_dir / CHECKPOINT_NAME

    def distilled_here(meta: dict[str, Any]) -> bool:
        step, distilled_with = meta.get("step") or {}, meta.get("training_config")
        if (
            meta.get("kind") != "agent"
            or step.get("iteration") != state.iteration
            or not isinstance(distilled_with, dict)
        ):
            return False
        return not any(key.startswith(DISTILLATION_KEYS) for key in config_diff(distilled_with, config.to_dict()))

    return finished_run_agent(run_dir, distilled_here)  # (none when killed before it was written: distilled on resume)


def solver_tree(game: GameConfig, max_nodes: int = DEFAULT_MAX_NODES) -> GameTree:
    """The exact tree of ``game`` (cached at the default budget); ``TreeTooLarge`` above ``max_nodes``."""
    return game_tree(game) if max_nodes == DEFAULT_MAX_NODES else build_tree(game, max_nodes=max_nodes)


# ---------------------------------------------------------------------------- policies of a solver


class ObservationTablePolicy:
    """Action probabilities by (observation, action mask): the average strategy of observation-keyed CFR.

    A seat of a ``training.evaluation.exact`` profile; it knows the rows of its tree and refuses any other observation.
    """

    def __init__(self, tree: GameTree, probabilities: np.ndarray, name: str = "cfr-table"):
        self.observations, self.masks = tree.observations, tree.masks
        self.probabilities = probabilities
        self.name = name
        self._rows = {o.tobytes() + m.tobytes(): k for k, (o, m) in enumerate(zip(tree.observations, tree.masks))}

    def action_probabilities_batch(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        if observations is self.observations and masks is self.masks:
            return self.probabilities
        rows = []
        for k, (o, m) in enumerate(zip(np.asarray(observations, np.float32), np.asarray(masks, np.int8))):
            row = self._rows.get(o.tobytes() + m.tobytes())
            if row is None:
                raise ValueError(
                    f"{self.name}: observation row {k} is not one of the {len(self._rows)} of its game tree"
                )
            rows.append(row)
        return self.probabilities[rows]

    def __repr__(self) -> str:
        return f"ObservationTablePolicy({self.name!r}, {len(self._rows)} observations)"


def average_policy(solver: TreeSolver, state: SolverState, name: str = "cfr") -> Any:
    """The average strategy as a profile seat for ``training.evaluation.exact`` (by observation or by information
    state).
    """
    average = solver.average_strategy(state)
    if solver.keys == "observation":
        return ObservationTablePolicy(solver.tree, average, name)
    return InformationSetPolicy(dict(zip(solver.tree.infoset_strings, average)), name)


def load_policy(path: str | Path) -> Any:
    """The average strategy of a solver checkpoint, on its own rule set (``ObservationTablePolicy`` or
    ``InformationSetPolicy``).
    """
    checkpoint = ckpt.load_checkpoint(path)
    if checkpoint.metadata["kind"] != "solver":
        raise ckpt.CheckpointError(
            f"{checkpoint.path}: a {checkpoint.metadata['kind']!r} checkpoint; expected a CFR solver "
            f"checkpoint (runs/<name>/checkpoint of algorithm: cfr)"
        )
    config = config_from_dict(checkpoint.metadata["training_config"], where=str(checkpoint.path))
    solver = TreeSolver(
        solver_tree(checkpoint.game_config, config.cfr.max_nodes),
        config.cfr.keys,
        config.cfr.variant,
        config.cfr.alternating,
    )
    state = _state_from(checkpoint, solver)
    return average_policy(solver, state, checkpoint.metadata.get("name") or "cfr")


def observation_table(solver: TreeSolver, state: SolverState) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The average strategy over observations, with each row's weights: ``(table, own reach, total reach, value)``,
    each (U, ...).

    With information-state keys the table is the projection of the strategy onto observations: each observation's
    information sets weighted by chance x the acting seat's own reach (what the average strategy itself is weighted by).
    ``own reach`` and ``total reach`` (chance x every seat) are summed per row; ``value`` is the acting seat's expected
    reward there.
    """
    tree = solver.tree
    average = solver.average_strategy(state)
    reach = solver.reach(average)
    decision = solver.decision_nodes
    seat = tree.player[decision]
    rows = tree.observation[decision]
    own = tree.chance[decision] * reach[seat, decision]
    total = tree.chance[decision] * reach.prod(0)[decision]
    values = solver.values(average)[seat, decision]
    u, a = tree.masks.shape
    row_own = np.bincount(rows, weights=own, minlength=u)
    row_total = np.bincount(rows, weights=total, minlength=u)
    row_value = np.bincount(rows, weights=total * values, minlength=u) / np.where(row_total > 0, row_total, 1.0)
    if solver.keys == "observation":
        return average, row_own, row_total, row_value
    cells = (rows[:, None] * a + np.arange(a)).reshape(-1)
    table = np.bincount(
        cells, weights=(own[:, None] * average[solver.node_key[decision]]).reshape(-1), minlength=u * a
    ).reshape(u, a)
    mass = table.sum(1, keepdims=True)
    uniform = tree.masks / tree.masks.sum(1, keepdims=True)
    return np.where(mass > 0, table / np.where(mass > 0, mass, 1.0), uniform), row_own, row_total, row_value


# ---------------------------------------------------------------------------- logs


def _log(
    run_dir: Path, solver: TreeSolver, state: SolverState, progress: dict, game: GameConfig, tree: GameTree
) -> None:
    result = evaluate(average_policy(solver, state), game, tree)
    row = {
        "iteration": state.iteration,
        "wall_seconds": round(progress["wall_seconds"], 2),
        "solver_seconds": round(progress["solver_seconds"], 2),
        "nash_conv": f"{result.nash_conv:.6g}",
        "exploitability": f"{result.exploitability:.6g}",
    }
    append_csv(run_dir / "cfr.csv", LOG_COLUMNS, row)
    print(
        f"cfr iteration {state.iteration}: NashConv {result.nash_conv:.5f} ({progress['solver_seconds']:.1f} "
        f"s solving)",
        file=sys.stderr,
    )


def _write_descent_log(path: Path, history: list[tuple[int, float, float]]) -> None:
    """``descent.csv``: step, seconds, exact NashConv of the table over observations (rewritten whole: the descent
    reruns on resume).
    """
    prepare_csv(path, ["step", "seconds", "nash_conv"], None, key="step")
    with path.open("a", newline="") as handle:
        handle.writelines(f"{step},{seconds:.3f},{value:.6g}\n" for step, seconds, value in history)


# ---------------------------------------------------------------------------- checkpoints


def _model_entry(config: TrainConfig) -> dict[str, Any]:
    return config.model.entry()


def _recipe(kind: str, config: TrainConfig, progress: dict) -> dict:
    """The metadata entries every checkpoint of a CFR run shares: its kind, rules, network, config and commands."""
    return {
        "kind": kind,
        "name": config.name,
        "game_config": config.game_config().to_dict(),
        "model": _model_entry(config),
        "training_config": config.to_dict(),
        "command": progress["commands"][-1],
        "commands": progress["commands"],
    }


def _save_solver(path: Path, config: TrainConfig, state: SolverState, progress: dict) -> Path:
    import torch

    metadata = {
        **_recipe("solver", config, progress),
        "step": {
            "iteration": state.iteration,
            "wall_seconds": round(progress["wall_seconds"], 3),
            "solver_seconds": round(progress["solver_seconds"], 3),
        },
        "cfr": {
            "keys": config.cfr.keys,
            "variant": config.cfr.variant,
            "alternating": config.cfr.alternating,
            "shape": list(state.regrets.shape),
        },
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    tensors = {"cfr.regrets": torch.from_numpy(state.regrets), "cfr.strategy_sum": torch.from_numpy(state.strategy_sum)}
    return ckpt.save_checkpoint(path, tensors, metadata)


def _state_from(checkpoint: ckpt.Checkpoint, solver: TreeSolver) -> SolverState:
    ckpt.validate_metadata(checkpoint.metadata, SOLVER_SCHEMA, checkpoint.path)
    shape = (solver.num_keys, solver.num_actions)
    arrays = {}
    for name in ("regrets", "strategy_sum"):
        tensor = checkpoint.tensors.get(f"cfr.{name}")
        if tensor is None or tuple(tensor.shape) != shape or str(tensor.dtype) != "torch.float64":
            found = "absent" if tensor is None else f"{tuple(tensor.shape)} {tensor.dtype}"
            raise ckpt.CheckpointError(
                f"{checkpoint.path}: tensor 'cfr.{name}' is {found}; expected float64 of shape {shape} (the "
                f"{solver.keys} keys of this rule set's tree)"
            )
        arrays[name] = tensor.numpy().copy()
    if (arrays["strategy_sum"] < 0).any():
        raise ckpt.CheckpointError(
            f"{checkpoint.path}: tensor 'cfr.strategy_sum' holds negative values; expected a sum of "
            f"probabilities weighted by reach"
        )
    return SolverState(
        iteration=checkpoint.metadata["step"]["iteration"],
        regrets=arrays["regrets"],
        strategy_sum=arrays["strategy_sum"],
    )


def _restore(run_dir: Path, config: TrainConfig, solver: TreeSolver) -> tuple[SolverState, dict]:
    checkpoint = ckpt.load_checkpoint(run_dir / CHECKPOINT_NAME, game=config.game_config())
    meta = checkpoint.metadata
    if meta["kind"] != "solver":
        raise ckpt.CheckpointError(
            f"{checkpoint.path}: a {meta['kind']!r} checkpoint, not a CFR run's; cannot resume it with algorithm: cfr"
        )
    ckpt.validate_metadata(meta, SOLVER_SCHEMA, checkpoint.path)
    saved = config_from_dict(meta["training_config"], where=str(checkpoint.path))
    differences = [
        key for key in config_diff(saved.to_dict(), config.to_dict()) if not key.startswith(CFR_RESUMABLE_CHANGES)
    ]
    if differences:
        raise ckpt.CheckpointError(
            f"{checkpoint.path}: cannot resume with a different config; changed: {differences} (only "
            f"{list(CFR_RESUMABLE_CHANGES)} may change)"
        )
    state = _state_from(checkpoint, solver)
    if state.iteration > config.cfr.iterations:
        raise ckpt.CheckpointError(
            f"{checkpoint.path}: the run is at iteration {state.iteration}, beyond "
            f"cfr.iterations={config.cfr.iterations}; raise cfr.iterations to continue it"
        )
    step = meta["step"]
    return state, {
        "wall_seconds": float(step["wall_seconds"]),
        "solver_seconds": float(step["solver_seconds"]),
        "commands": list(meta["commands"]),
    }


# ---------------------------------------------------------------------------- the agent


def _descend(path: Path, config: TrainConfig, targets, tree: GameTree, table_result, state: SolverState, signals):
    """Exploitability descent (``cfr.descent_steps``) on the table over observations, logged in ``descent.csv``."""
    from training.algorithms.descent import ObservationDescent

    descent = ObservationDescent(tree).run(
        targets,
        config.cfr.descent_steps,
        config.cfr.descent_learning_rate,
        stop=lambda: signals.received is not None,
    )
    _write_descent_log(path.parent / "descent.csv", descent.history)
    if signals.received is not None:
        raise Interrupted(signals.received, path.parent / CHECKPOINT_NAME, state.iteration, "iteration")
    print(
        f"exploitability descent: {len(descent.history) - 1} steps in {descent.history[-1][1]:.1f} s, "
        f"NashConv of the table over observations {table_result.nash_conv:.5f} -> {descent.nash_conv:.5f}",
        file=sys.stderr,
    )
    return descent


def _final_evaluation(config: TrainConfig, model, game: GameConfig, state: SolverState) -> dict | None:
    """The distilled network against the baselines (``evaluation.final_games``), or None."""
    from training.core.model import PolicyAgent

    def make(i: int) -> PolicyAgent:
        return PolicyAgent(model, game, seed=config.seed + 7919 * i, name="policy")

    return final_evaluation(config, game, make, {"iteration": state.iteration})


def _distill_and_save(
    path: Path,
    config: TrainConfig,
    solver: TreeSolver,
    state: SolverState,
    progress: dict,
    game: GameConfig,
    tree: GameTree,
    signals: StopSignals,
) -> Path:
    """The average strategy as a table over observations, refined by exploitability descent (``cfr.descent_steps``),
    fitted by the ``model`` network; each measured exactly; the agent checkpoint saved.
    """
    import torch

    from training.algorithms.distill import distill, row_weights
    from training.core.model import ActorCritic, PolicyAgent

    if config.torch_threads:
        torch.set_num_threads(config.torch_threads)
    solved = evaluate(average_policy(solver, state), game, tree)
    targets, row_own, row_total, row_value = observation_table(solver, state)
    table_result = evaluate(ObservationTablePolicy(tree, targets), game, tree)
    descent = _descend(path, config, targets, tree, table_result, state, signals) if config.cfr.descent_steps else None
    if descent is not None:
        targets = descent.table
    torch.manual_seed(config.seed)
    model = ActorCritic.from_spec(game, config.model, seed=config.seed)
    fit = distill(
        model,
        tree.observations,
        tree.masks,
        targets,
        row_weights(row_own),
        row_value,
        row_weights(row_total),
        steps=config.cfr.distill_steps,
        learning_rate=config.cfr.distill_learning_rate,
    )
    if signals.received is not None:
        raise Interrupted(signals.received, path.parent / CHECKPOINT_NAME, state.iteration, "iteration")
    agent = PolicyAgent(model, game, seed=config.seed, name="policy")
    network_result = evaluate(agent, game, tree)
    print(
        f"distilled into {config.model.hidden_sizes} in {fit.seconds:.1f} s: weighted KL {fit.kl:.2e}, "
        f"largest probability error {fit.max_error:.3f}; "
        f"exact NashConv: solver {solved.nash_conv:.5f}, its table over observations {table_result.nash_conv:.5f}"
        + (f", after descent {descent.nash_conv:.5f}" if descent else "")
        + f", network {network_result.nash_conv:.5f}",
        file=sys.stderr,
    )
    evaluation = _final_evaluation(config, model, game, state)
    metadata = {
        **_recipe("agent", config, progress),
        "step": {
            "iteration": state.iteration,
            "wall_seconds": round(progress["wall_seconds"], 1),
            "solver_seconds": round(progress["solver_seconds"], 1),
            "distill_seconds": round(fit.seconds, 1),
        },
        "evaluation": evaluation,
        "exact": _exact_record(config, state, solved, table_result, descent, network_result, fit),
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    return ckpt.save_checkpoint(path, {f"model.{k}": v for k, v in model.state_dict().items()}, metadata)


def _exact_record(config: TrainConfig, state: SolverState, solved, table_result, descent, network_result, fit) -> dict:
    """The agent's ``exact`` metadata: the exact NashConv of the network and of each step before it (the solver, its
    table over observations, the descent), and the distillation's fit.
    """
    return {
        "nash_conv": network_result.nash_conv,
        "exploitability": network_result.exploitability,
        "solver_nash_conv": solved.nash_conv,
        "table_nash_conv": table_result.nash_conv,
        "descent_nash_conv": descent.nash_conv if descent else None,
        "descent_steps": len(descent.history) - 1 if descent else 0,
        "descent_seconds": round(descent.history[-1][1], 1) if descent else 0.0,
        "distill_kl": fit.kl,
        "distill_max_error": fit.max_error,
        "solver": {
            "keys": config.cfr.keys,
            "variant": config.cfr.variant,
            "alternating": config.cfr.alternating,
            "iterations": state.iteration,
        },
    }
