"""Run folders and their machinery, shared by every algorithm (PPO, NFSP, PSRO, CFR, cockroach-exploit).

A run writes ``runs/<name>/``: the run checkpoint ``CHECKPOINT_NAME`` (for ``--resume``), the agent
``AGENT_NAME`` (written last: it marks the run finished), kept agents under ``KEPT_AGENTS``, CSV logs
(``prepare_csv`` on start or resume, ``append_csv`` per row) and a learning-curve plot. ``StopSignals``
turns the first SIGINT/SIGTERM into a stop after the current step, which the algorithm ends by raising
``Interrupted`` with its run checkpoint saved (a PPO run: the latest checkpoint segment's start, so that the resumed run
plays exactly as one that never stopped); ``config_diff`` names the entries in which a resumed run's config differs
from the saved one.
"""

from __future__ import annotations

import contextlib
import csv
import os
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from training.core.checkpoint.files import new_file_mode

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
