"""Run folders and their machinery, shared by every algorithm (PPO, NFSP, PSRO, CFR, cockroach-exploit).

A run writes ``runs/<name>/``: the run checkpoint ``CHECKPOINT_NAME`` (for ``--resume``), the agent
``AGENT_NAME`` (written last: it marks the run finished), kept agents under ``KEPT_AGENTS``, CSV logs
(``prepare_csv`` on start or resume, ``append_csv`` per row) and a learning-curve plot. ``StopSignals``
turns the first SIGINT/SIGTERM into a stop after the current step, which the algorithm ends by raising
``Interrupted`` with its run checkpoint saved (a PPO run: the latest checkpoint segment's start, so that the resumed run
plays exactly as one that never stopped); ``config_diff`` names the entries in which a resumed run's config differs
from the saved one. ``run_metadata`` is what every checkpoint of a run records, and ``finished_run_agent`` tells a
finished run from one killed before its end. A PPO run (NFSP's too) counts its progress in ``Progress`` and writes
``metrics.csv``, ``eval.csv`` and TensorBoard through ``RunLogs``.
"""

from __future__ import annotations

import contextlib
import csv
import math
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from training.core.checkpoint import CheckpointError, read_metadata
from training.core.checkpoint.files import new_file_mode
from training.core.config import TrainConfig
from training.core.opponents import EXPLOITER, POPULATION, SNAPSHOT, checkpoint_kind

CHECKPOINT_NAME = "checkpoint"
"""The run's latest full checkpoint (for ``--resume``): ``runs/<name>/checkpoint.{json,safetensors}``."""
KEPT_AGENTS = "agents"
"""The agents kept every ``schedule.keep_agent_every`` updates: ``runs/<name>/agents/update_<U>.{json,safetensors}``."""
AGENT_NAME = "final"
"""The run's final weights-only checkpoint (for ``load_agent`` and the arena):
``runs/<name>/final.{json,safetensors}``.
"""
BEST_RESPONSE_NAME = "best_response"
"""An NFSP run's best response at the end (``training.algorithms.nfsp``; its ``final`` is the average policy):
``runs/<name>/best_response.{json,safetensors}``."""


class Interrupted(Exception):
    """SIGINT or SIGTERM stopped training after the current update (a CFR run: iteration); the run checkpoint holds
    it.
    """

    def __init__(
        self,
        signum: int,
        checkpoint: Path,
        step: int,
        unit: str = "update",
        saved_step: int | None = None,
        saved: bool = True,
    ):
        # ``step`` counts ``unit``s: PPO updates, or CFR iterations; ``saved_step``: the checkpoint's, if earlier (a
        # PPO stop inside a checkpoint segment, which --resume plays again to continue exactly); ``saved``: False
        # when the stop came before the run's first checkpoint (during a warm start): there is nothing to resume
        self.signum, self.checkpoint, self.step, self.unit, self.saved = signum, checkpoint, step, unit, saved
        self.saved_step = step if saved_step is None else saved_step
        where = f"the run is saved in {checkpoint}"
        if not saved:
            where = f"it stopped before the run's first checkpoint ({checkpoint} was not written): nothing to resume"
        elif self.saved_step != step:
            where = (
                f"the run checkpoint {checkpoint} is at {unit} {self.saved_step}, the start of this checkpoint "
                f"segment: --resume plays {unit}s {self.saved_step + 1}-{step} again (the games in flight are not "
                f"saved), with the same result as a run that never stopped"
            )
        super().__init__(f"{signal.Signals(signum).name} at {unit} {step}; {where}")

    @property
    def exit_code(self) -> int:
        """The shell's convention: 130 for SIGINT, 143 for SIGTERM."""
        return 128 + self.signum


class StopSignals:
    """While training: the first SIGINT/SIGTERM asks the loop to stop after the current update;
    a second one interrupts at once (``KeyboardInterrupt``; the last checkpoint on disk is intact).
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self):
        self.received: int | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopSignals:
        if threading.current_thread() is threading.main_thread():  # handlers can only be set there
            for signum in self.SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def _handle(self, signum: int, frame) -> None:
        if self.received is not None:
            raise KeyboardInterrupt(f"second {signal.Signals(signum).name}")
        self.received = signum
        print(
            f"\n{signal.Signals(signum).name} received: finishing the current step, then stopping "
            "(send it again to stop at once)",
            file=sys.stderr,
        )

    def __exit__(self, *exc) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


RUN_LOGS = ("metrics.csv", "eval.csv", "learning_curves.png")
"""The logs a PPO-family run writes beside its checkpoints (and TensorBoard's event files under ``tensorboard/``)."""


def time_limit_reason(schedule, wall_seconds: float, last: bool, segment_seconds: float | None) -> str | None:
    """Why a run stops for its time limit after this update (``schedule.time_limit_minutes``), or None.

    A stop inside a checkpoint segment saves nothing (the games in flight are in no checkpoint: ``--resume`` plays the
    segment again), so the limit is met at the last segment end before it: at a segment end (``segment_seconds``, the
    length of the segment just done; None inside a segment), the run stops there, with its checkpoint, when a next
    segment as long would end past the limit. Past the limit inside a segment all the same, it stops at once.
    """
    limit = schedule.time_limit_minutes
    if limit is None or last:
        return None
    if wall_seconds > 60 * limit:
        return f"time limit of {limit} minutes reached"
    if segment_seconds is not None and wall_seconds + segment_seconds > 60 * limit:
        return (
            f"time limit of {limit} minutes: stopped at this checkpoint, since the next segment "
            f"({schedule.checkpoint_every} updates, {segment_seconds / 60:.1f} minutes for the last) would end past it"
        )
    return None


def remove_run_logs(run_dir: Path) -> None:
    """Remove the logs of a run that is started again (``--overwrite``), before the new run writes anything: a stop
    before its first checkpoint then leaves no file of the replaced run to block a plain start. Only the files a run
    writes go (``RUN_LOGS`` and TensorBoard's ``events.out.tfevents.*``); anything else the user put there stays.
    """
    for name in RUN_LOGS:
        (run_dir / name).unlink(missing_ok=True)
    board = run_dir / "tensorboard"
    if board.is_dir() and not board.is_symlink():
        for events in board.glob("events.out.tfevents.*"):
            events.unlink(missing_ok=True)
        with contextlib.suppress(OSError):  # (not empty: the user's files stay, and the folder with them)
            board.rmdir()


def config_diff(a: Any, b: Any, prefix: str = "") -> list[str]:
    """The dotted keys at which two nested dicts (configs as ``to_dict()``) differ."""
    if isinstance(a, dict) and isinstance(b, dict):
        keys = sorted(set(a) | set(b))
        return [d for k in keys for d in config_diff(a.get(k), b.get(k), f"{prefix}.{k}" if prefix else k)]
    return [] if a == b else [prefix]


def run_metadata(
    config: TrainConfig,
    command: str,
    commands: list[str],
    step: dict[str, Any],
    *,
    kind: str | None = None,
    base_run: dict[str, Any] | None = None,
    warm_start: dict[str, Any] | None = None,
    evaluation: dict[str, Any] | None = None,
    **entries: Any,
) -> dict[str, Any]:
    """The metadata every checkpoint of a training run carries: its ``kind`` (unless the writer sets it, as a
    mixture's does), name, rules, network, training config and commands, the checkpoint a fresh run started from
    (``base_run``) and its warm start, the counters (``step``), the latest ``evaluation``, then the algorithm's own
    ``entries`` and the time it was written.
    """
    return {
        **({"kind": kind} if kind else {}),
        "name": config.name,
        "game_config": config.game_config().to_dict(),
        "model": config.model.entry(),
        "training_config": config.to_dict(),
        "command": command,
        "commands": commands,
        **({"base_run": base_run} if base_run else {}),
        **({"warm_start": warm_start} if warm_start else {}),
        "step": step,
        "evaluation": evaluation,
        **entries,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


def finished_run_agent(run_dir: Path, matches: Callable[[dict[str, Any]], bool]) -> Path | None:
    """The checkpoint ``AGENT_NAME`` of a run that is finished, else None: ``final`` is written last, so a run killed
    before it has none (and finishes on ``--resume``), and ``matches(metadata)`` says whether the one on disk is this
    run's end (its step, its evaluation, its settings) rather than an earlier end's.
    """
    try:
        meta = read_metadata(run_dir / AGENT_NAME)
    except CheckpointError:
        return None
    return Path(meta["_path"]) if matches(meta) else None


# ---------------------------------------------------------------------------- logs and plots


class NoWriter:
    """A TensorBoard writer that writes nothing (tensorboard is optional: the CSV files hold the same numbers)."""

    def add_scalar(self, *args, **kwargs) -> None:
        """Nothing."""

    flush = close = add_scalar


def tensorboard_writer(run_dir: Path, purge_step: int | None):
    """A TensorBoard ``SummaryWriter`` on ``run_dir/tensorboard``, or a ``NoWriter`` without tensorboard."""
    try:
        from torch.utils.tensorboard import SummaryWriter
    except ImportError:
        print("tensorboard is not installed; writing CSV logs only (pip install tensorboard)", file=sys.stderr)
        return NoWriter()
    return SummaryWriter(str(run_dir / "tensorboard"), purge_step=purge_step)


def prepare_csv(path: Path, columns: list[str], resume_update: int | None, key: str = "update") -> None:
    """Start a fresh CSV, or on resume keep the rows up to the checkpoint (by the ``key`` column; final evaluations
    are dropped: they come after the checkpoint and are made again). Written to a temporary
    file and renamed, so a kill never leaves a half-written log.
    """
    for stale in path.parent.glob(f".{path.name}.*.tmp"):  # left by a killed rewrite
        stale.unlink(missing_ok=True)
    rows = []
    if resume_update is not None and path.exists():
        with path.open(newline="") as handle:
            rows = [
                r
                for r in csv.DictReader(handle)
                if _row_update(r, key) <= resume_update and r.get("final") not in ("1", "True")
            ]
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, new_file_mode())  # as the checkpoints beside it, not mkstemp's 0600
        with os.fdopen(fd, "w", newline="") as handle:
            writer = csv.DictWriter(handle, columns, extrasaction="ignore")
            writer.writeheader()
            writer.writerows(rows)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _row_update(row: dict, key: str = "update") -> int:
    try:
        return int(row[key])
    except (KeyError, TypeError, ValueError):
        return 2**62  # an unreadable row (a torn last line) is dropped


def append_csv(path: Path, columns: list[str], row: dict) -> None:
    """Append one row to a CSV log that ``prepare_csv`` started."""
    with path.open("a", newline="") as handle:
        csv.DictWriter(handle, columns).writerow(row)


def plot_learning_curves(eval_csv: Path, out: Path, title: str = "") -> Path | None:
    """PNG of the loss rate against each baseline over training (with 95% intervals and parity)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if not eval_csv.exists():
        return None
    with eval_csv.open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(7, 4))
    for opponent in dict.fromkeys(r["opponent"] for r in rows):
        mine = [r for r in rows if r["opponent"] == opponent]
        x = [int(r["decisions"]) / 1e6 for r in mine]
        y = [100 * float(r["loss_rate"]) for r in mine]
        low = [100 * float(r["ci95_low"]) for r in mine]
        high = [100 * float(r["ci95_high"]) for r in mine]
        (line,) = ax.plot(x, y, marker="o", markersize=3, label=f"vs {opponent}")
        ax.fill_between(x, low, high, color=line.get_color(), alpha=0.2)
    parity = 100 * float(rows[0].get("parity") or 0)
    if parity:
        ax.axhline(parity, color="grey", linestyle="--", label="parity")
    ax.set_xlabel("environment decisions (millions)")
    ax.set_ylabel("loss rate of the trained agent (%)")
    ax.set_title(title)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


@contextlib.contextmanager
def announce_when_slow(message: str, after: float = 1.0, stream=None):
    """Say ``message`` (on stderr) if the block is still running after ``after`` seconds, and how long it took.

    For work that is instant most times and slow the first (numba compiling a rule set's kernels): a run that
    sits at 0% for half a minute says why, and one that loads its kernels from the cache says nothing.
    """
    stream = stream if stream is not None else sys.stderr
    started = time.perf_counter()
    said = threading.Event()

    def announce() -> None:
        said.set()
        print(f"{message} ...", file=stream, flush=True)

    timer = threading.Timer(after, announce)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        if said.is_set():
            print(f"... done in {time.perf_counter() - started:.0f} s", file=stream, flush=True)


@dataclass
class Progress:
    """Counters that a checkpoint carries (JSON-able)."""

    update: int = 0
    decisions: int = 0
    samples: int = 0
    games: int = 0
    wall_seconds: float = 0.0
    next_snapshot_id: int = 0
    pool_games: int = 0
    """Learner seat-games against snapshots since the last snapshot entered (for the beat-the-pool rule)."""
    pool_losses: int = 0
    evaluations: list[dict[str, Any]] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    """Every command that trained this run (the first, then each ``--resume``)."""
    base_run: dict[str, Any] | None = None
    """The checkpoint a fresh run started from (``--init-from``): path, commands, step, and its own ``base_run``."""
    population: dict[str, Any] | None = None
    """The fixed population of ``opponents.population`` (``Population.record``), checked on resume."""
    checkpoints: dict[str, Any] | None = None
    """The frozen opponents of ``opponents.checkpoints`` (their records from ``load_checkpoint_opponents``), checked on
    resume.
    """
    warm_start: dict[str, Any] | None = None
    """What the warm start by imitation did (``training.algorithms.imitation``): teacher, decisions, final losses."""


class RunLogs:
    """``metrics.csv`` (one row per update), ``eval.csv`` (one row per opponent per evaluation) and TensorBoard."""

    def __init__(
        self, run_dir: Path, config: TrainConfig, resume_update: int | None, extra_columns: tuple[str, ...] = ()
    ):
        self.run_dir = run_dir
        exploiter = [EXPLOITER] if config.opponents.exploiter else []
        members = [POPULATION] if config.opponents.population else []
        self.opponent_kinds = [
            SNAPSHOT,
            *exploiter,
            *members,
            *config.opponents.baselines,
            *map(checkpoint_kind, config.opponents.checkpoints),
        ]
        stats = ["pg_loss", "v_loss", "entropy", "approx_kl", "clipfrac", "explained_variance"]
        self.metrics_columns = [
            "update",
            "decisions",
            "samples",
            "games",
            "wall_seconds",
            "decisions_per_second",
            "learning_rate",
            *stats,
            *(["magnet_kl"] if config.ppo.magnet_coef and not config.ppo.magnet_reward else []),
            *(["start_kl"] if config.ppo.kl_coef else []),
            *extra_columns,
            "pool_size",
            *[f"train_loss_rate_vs_{k}" for k in self.opponent_kinds],
            *[f"exploiter_{k}" for s in exploiter for k in ("loss_rate", *stats)],
        ]
        self.eval_columns = [
            "update",
            "decisions",
            "wall_seconds",
            "final",
            "opponent",
            "games",
            "loss_rate",
            "ci95_low",
            "ci95_high",
            "parity",
            "false_offer_rate",
            "false_pass_rate",
            "call_accuracy",
        ]
        for name, columns in (("metrics.csv", self.metrics_columns), ("eval.csv", self.eval_columns)):
            prepare_csv(run_dir / name, columns, resume_update)
        self.writer = tensorboard_writer(run_dir, resume_update)

    def train_row(self, state: Progress, lr: float, sps: float, stats: dict, outcomes: dict, pool_size: int) -> None:
        row = {
            "update": state.update,
            "decisions": state.decisions,
            "samples": state.samples,
            "games": state.games,
            "wall_seconds": round(state.wall_seconds, 2),
            "decisions_per_second": round(sps),
            "learning_rate": lr,
            # a statistic with no value yet (no return variance, an empty reservoir) is an empty cell
            **{k: "" if isinstance(v, float) and math.isnan(v) else round(v, 6) for k, v in stats.items()},
            "pool_size": pool_size,
        }
        for kind in self.opponent_kinds:
            _, seat_games, losses = outcomes.get(kind, (0, 0, 0))
            # per learner seat; parity 1/N
            row[f"train_loss_rate_vs_{kind}"] = round(losses / seat_games, 4) if seat_games else ""
        # the exploiter loses the games that the policy's seats do not: an online exploitability estimate
        if EXPLOITER in outcomes:
            games, _, policy_losses = outcomes[EXPLOITER]
            row["exploiter_loss_rate"] = round(1 - policy_losses / games, 4) if games else ""
        append_csv(self.run_dir / "metrics.csv", self.metrics_columns, row)
        for key, value in row.items():
            if (
                key not in ("update", "decisions")
                and value != ""
                and not (isinstance(value, float) and math.isnan(value))
            ):
                self.writer.add_scalar(f"train/{key}", value, state.update)

    def eval_rows(self, entry: dict) -> None:
        for result in entry["results"]:
            row = {
                "update": entry["update"],
                "decisions": entry["decisions"],
                "wall_seconds": entry["wall_seconds"],
                "final": int(entry["final"]),
                "opponent": result["opponent"],
                "games": result["games"],
                "loss_rate": round(result["loss_rate"], 4),
                "ci95_low": round(result["ci95"][0], 4),
                "ci95_high": round(result["ci95"][1], 4),
                "parity": round(result["parity"], 4),
                **{
                    k: ("" if result.get(k) is None else round(result[k], 4))
                    for k in ("false_offer_rate", "false_pass_rate", "call_accuracy")
                },
            }
            append_csv(self.run_dir / "eval.csv", self.eval_columns, row)
            self.writer.add_scalar(f"eval/loss_rate_vs_{result['opponent']}", result["loss_rate"], entry["update"])
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()
