"""``ppo.overlap``: the PPO updates run in a process of their own, while the main process collects the next rollout.

With two threads in one process, the rollout (Python and numpy over small arrays,
mostly the ``heuristic`` opponents) and the update (torch) took turns at the
interpreter lock, and each ran about 45% slower than alone; two processes share
nothing but the cores. The update process holds the learners' authoritative
networks, Adam states and magnets; the main process keeps a copy of the weights
(loaded after every update) for its rollouts, snapshots, evaluations and checkpoints.

The process is a fresh interpreter (``python -c``, with the parent's ``sys.path``), not
a ``multiprocessing`` child: those re-import the parent's main module, which breaks a
user's script that calls ``train`` without an ``if __name__ == "__main__"`` guard; and
it inherits no CUDA or thread state. It needs a POSIX system (the connection is a
socket pair passed as a file descriptor). The protocol, over that connection:

* ``push(code, learner)``: the learner's weights, Adam state and magnet, at the start of
  a run or a resume and whenever the main process changes them (magnet refresh,
  exploiter reset);
* ``submit(jobs, shuffle_seed)``, then ``result()``: one update of each learner on its
  training rows with ``training.core.learner.ppo_update`` (the same code as without overlap, so a
  run depends only on its seed); the result is the new weights and the statistics;
* ``pull(code)``: the Adam state, before the main process writes a checkpoint.

The update process ignores SIGINT and SIGTERM (the main process handles them and
stops after the current update), and exits when the main process closes the pipe,
exits or dies. Its errors come back as ``UpdateProcessError`` with their traceback; a ``NonFiniteUpdate`` (a loss or
weight that is not finite) comes back as itself.
"""

from __future__ import annotations

import json
import os
import pickle
import signal
import socket
import subprocess
import sys
import traceback
from multiprocessing.connection import Connection
from types import SimpleNamespace
from typing import Any

import numpy as np

JOB_FIELDS = ("obs", "window", "mask", "action", "logprob", "value")
"""The rollout arrays an update reads, at its training rows (``window`` is None without move slots)."""


class UpdateProcessError(RuntimeError):
    """The update process failed (its traceback is in the message) or is gone."""


class UpdateProcess:
    """A process of its own that runs the PPO updates of a run's learners (see the module docstring)."""

    def __init__(self, config, codes: list[int]):
        if os.name != "posix":
            raise UpdateProcessError(
                f"ppo.overlap runs the updates in a second process, which needs a POSIX system (this one is "
                f"{os.name!r}); set ppo.overlap=false"
            )
        parent, child = socket.socketpair()
        bootstrap = (
            "import sys, json; sys.path[:0] = json.loads(sys.argv[1]); from "
            "training.core.update_process import _main; _main(int(sys.argv[2]))"
        )
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-c", bootstrap, json.dumps([p for p in sys.path if p]), str(child.fileno())],
                pass_fds=[child.fileno()],
                stdin=subprocess.DEVNULL,
            )
        finally:
            child.close()
        self._conn = Connection(parent.detach())
        self._waiting = False
        self._send("start", config, codes)

    # ------------------------------------------------------------------ calls
    def push(self, code: int, learner, optimizer: bool = True) -> None:
        """The update process takes ``learner``'s weights and magnet, and its Adam state unless ``optimizer=False``
        (the main process's copy of the Adam state is only current after ``pull``).
        """
        magnet = None if learner.magnet is None else learner.magnet.state_dict()
        self._call(
            "push", code, learner.model.state_dict(), learner.optimizer.state_dict() if optimizer else None, magnet
        )

    def pull(self, code: int, learner) -> None:
        """``learner``'s optimizer takes the update process's Adam state (before a checkpoint)."""
        learner.optimizer.load_state_dict(self._call("pull", code))

    def submit(self, jobs: dict[int, dict[str, Any]], shuffle_seed: list[int]) -> None:
        """Start one update of each learner in ``jobs``: ``{code: {"lr", "advantages", "returns", *JOB_FIELDS}}``
        (arrays at the training rows).
        """
        self._send("update", jobs, shuffle_seed)
        self._waiting = True

    def result(self) -> dict[int, tuple[dict, dict[str, float]]]:
        """Wait for the submitted update: ``{code: (new weights, statistics)}``."""
        self._waiting = False
        return self._receive()

    def close(self) -> None:
        """Stop the process (after the update in flight, if any); idempotent."""
        if self._process is None:
            return
        try:
            if self._waiting and self._conn.poll(60):  # the update in flight (a second Ctrl-C, an error in the rollout)
                _get(self._conn)
            _put(self._conn, ("stop",))
        except (OSError, EOFError, pickle.UnpicklingError):
            pass
        self._conn.close()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        self._process = None

    def __enter__(self) -> UpdateProcess:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # ------------------------------------------------------------------ plumbing
    def _call(self, *message):
        self._send(*message)
        return self._receive()

    def _send(self, *message) -> None:
        try:
            _put(self._conn, message)
        except (OSError, EOFError) as error:
            raise UpdateProcessError(
                f"the PPO update process is gone (exit code {self._process.poll()}): {error}"
            ) from None

    def _receive(self):
        try:
            status, payload = _get(self._conn)
        except (OSError, EOFError):
            try:
                code = self._process.wait(timeout=5)
            except subprocess.TimeoutExpired:
                code = None
            raise UpdateProcessError(f"the PPO update process is gone (exit code {code})") from None
        if status == "non-finite":  # a NonFiniteUpdate: the run stops with the same message as without overlap
            raise payload
        if status == "error":
            raise UpdateProcessError(f"the PPO update process failed:\n{payload}")
        return payload


def _put(conn: Connection, message) -> None:
    """Plain pickle, not ``Connection.send``'s: with torch imported, that one shares tensors through file descriptors
    and a resource server.
    """
    conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))


def _get(conn: Connection):
    return pickle.loads(conn.recv_bytes())


def training_rows(
    rollout,
    advantages: np.ndarray,
    returns: np.ndarray,
    train_rows: np.ndarray,
    lr: float,
    scale: float = 1.0,
    regularize: bool = True,
) -> dict[str, Any]:
    """One learner's job for ``UpdateProcess.submit``: what ``training.core.learner.ppo_update`` reads, at
    ``train_rows`` only.
    """
    job = {name: _rows(getattr(rollout, name), train_rows) for name in JOB_FIELDS}
    job.update(
        advantages=advantages[train_rows], returns=returns[train_rows], lr=lr, scale=scale, regularize=regularize
    )
    return job


def _rows(column: np.ndarray | None, rows: np.ndarray) -> np.ndarray | None:
    return None if column is None else column[rows]


def _main(fd: int) -> None:  # pragma: no cover - runs in the update process (covered by the overlap tests)
    """The update process's entry point: serve the connection on file descriptor ``fd``."""
    for signum in (signal.SIGINT, signal.SIGTERM):
        # the main process stops the run; this one follows when the connection closes
        signal.signal(signum, signal.SIG_IGN)
    conn = Connection(fd)
    try:
        command, config, codes = _get(conn)
    except (EOFError, OSError):
        return
    assert command == "start", command
    _serve(conn, config, codes)


def _serve(conn, config, codes: list[int]) -> None:  # pragma: no cover - runs in the update process
    """The learners' networks and optimizers, serving the main process's calls until ``stop`` or EOF."""
    import torch

    from training.core.learner import Learner, NonFiniteUpdate, frozen_copy, ppo_update
    from training.core.model import ActorCritic

    if config.torch_threads:
        torch.set_num_threads(config.torch_threads)
    device = torch.device(config.device)
    game = config.game_config()
    learners = {}
    for code in codes:
        model = ActorCritic.from_spec(game, config.model).to(device)
        learners[code] = Learner(
            model, config.ppo.learning_rate, 0, 0, game.num_players, model.observation_size, model.num_actions
        )
    while True:
        try:
            message = _get(conn)
        except (EOFError, OSError):
            return
        command, args = message[0], message[1:]
        if command == "stop":
            return
        try:
            if command == "push":
                code, weights, optimizer, magnet = args
                learner = learners[code]
                learner.model.load_state_dict(weights)
                if optimizer is not None:
                    learner.reset_optimizer()
                    learner.optimizer.load_state_dict(optimizer)
                if magnet is None:
                    learner.magnet = None
                else:
                    learner.magnet = frozen_copy(learner.model)
                    learner.magnet.load_state_dict(magnet)
                reply = None
            elif command == "pull":
                reply = learners[args[0]].optimizer.state_dict()
            elif command == "update":
                jobs, shuffle_seed = args
                shuffle = np.random.default_rng(shuffle_seed)
                reply = {}
                for code, job in jobs.items():  # in the order given (the policy first), as without overlap
                    learner = learners[code]
                    learner.optimizer.param_groups[0]["lr"] = job["lr"]
                    rows = SimpleNamespace(**{name: job[name] for name in JOB_FIELDS})
                    stats = ppo_update(
                        learner,
                        rows,
                        job["advantages"],
                        job["returns"],
                        np.arange(len(job["action"])),
                        config.ppo,
                        shuffle,
                        device,
                        scale=job["scale"],
                        regularize=job["regularize"],
                    )
                    reply[code] = ({k: v.detach().clone() for k, v in learner.model.state_dict().items()}, stats)
            else:
                raise ValueError(f"unknown command {command!r}")
            _put(conn, ("ok", reply))
        except NonFiniteUpdate as error:
            try:
                _put(conn, ("non-finite", error))
            except (OSError, EOFError):
                return
        except Exception:
            try:
                _put(conn, ("error", traceback.format_exc()))
            except (OSError, EOFError):
                return
