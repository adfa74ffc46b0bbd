"""Where independent pieces of training run: in this process, or as Ray tasks on a cluster.

``executor(address)`` gives an object with one method, ``map(function, argument_tuples)``,
returning the results in order. ``address=None`` runs them one after another here;
any other address runs each call as a Ray task (``ray.init(address=...)``; ``"local"``
starts a local cluster on this machine's cores). The functions are module-level and
every input they need travels in their arguments (weights as tensors, configs as
dicts), so a task runs the same code with the same seeds on any node and gives the
same result as the call here, wherever the computation is deterministic.

Ray is imported only here and only for an address (the ``[ray]`` extra). See
docs/scaling.md.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from training.core import arguments


class LocalExecutor:
    """Runs every call in this process, in order."""

    workers = 1

    def map(self, function: Callable, arguments: Iterable[Sequence[Any]]) -> list[Any]:
        return [function(*args) for args in arguments]

    def close(self) -> None:
        pass


def connect(address: str, num_cpus: int | None = None) -> tuple[Any, bool]:
    """Ray, connected to the cluster at ``address`` (``"local"``: a local cluster of ``num_cpus`` CPUs, default all)
    unless this process already is; and whether this call connected (then its caller shuts Ray down when done).

    The project's directory travels in the workers' ``PYTHONPATH``, so that a local cluster's workers import this tree.
    """
    try:
        import ray
    except ImportError as error:
        raise RuntimeError(f"--ray needs Ray: pip install 'cockroach-poker-rl[ray]' ({error})") from None
    started = not ray.is_initialized()
    if started:
        project = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = {"env_vars": {"PYTHONPATH": os.pathsep.join(p for p in (project, os.environ.get("PYTHONPATH", "")) if p)}}
        if address == "local":
            ray.init(num_cpus=num_cpus, runtime_env=env, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, runtime_env=env, log_to_driver=False)
    return ray, started


@contextlib.contextmanager
def cluster(address: str | None, num_cpus: int | None = None) -> Iterator[None]:
    """Connected to the cluster at ``address`` (None: nothing; ``"local"``: of ``num_cpus`` CPUs) while inside; Ray
    shuts down at the end if this connected it (a run's warm start and rollout workers share the connection).
    """
    if address is None:
        yield
        return
    ray, started = connect(address, num_cpus)
    try:
        yield
    finally:
        if started:
            ray.shutdown()


class RayExecutor:
    """Runs every call as a Ray task (one CPU each) and gathers the results in order."""

    def __init__(self, address: str, num_cpus: int | None = None):
        self.ray, self.started = connect(address, num_cpus)
        self.workers = int(self.ray.cluster_resources().get("CPU", 1))
        self._remote: dict[Callable, Any] = {}

    def map(self, function: Callable, arguments: Iterable[Sequence[Any]]) -> list[Any]:
        remote = self._remote.get(function)
        if remote is None:
            remote = self._remote[function] = self.ray.remote(num_cpus=1)(function)
        return self.ray.get([remote.remote(*args) for args in arguments])

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()


def add_ray_option(parser, what: str) -> None:
    """The ``--ray [ADDRESS]`` option of a command line (``cockroach-train``, ``-eval``, ``-exploit``, ``-mixture``):
    ``what``
    runs as Ray tasks on the cluster at ADDRESS, or on a local cluster of this machine's cores without one (None: no
    Ray).
    """
    parser.add_argument(
        "--ray",
        nargs="?",
        const="local",
        default=None,
        metavar="ADDRESS",
        help=f"{what} as Ray tasks at ADDRESS (e.g. auto) or on a local cluster (docs/scaling.md)",
    )


def add_torch_threads_option(parser, default: int) -> None:
    """The ``--torch-threads N`` option of a command line that plays networks here (``cockroach-eval``,
    ``-mixture``).
    """
    parser.add_argument(
        "--torch-threads",
        type=arguments.thread_count,
        default=default,
        metavar="N",
        help=f"torch threads for the networks' games (default {default}; 0: torch's default, one per core)",
    )


def use_torch_threads(threads: int) -> None:
    """``torch.set_num_threads(threads)``; 0, or no torch installed (then no network plays), leaves torch as it is."""
    from training.core.config import MAX_TORCH_THREADS

    if isinstance(threads, bool) or not isinstance(threads, int) or not 0 <= threads <= MAX_TORCH_THREADS:
        raise ValueError(
            f"torch threads {threads!r} is not allowed; expected 0 (torch's default) to "
            f"MAX_TORCH_THREADS={MAX_TORCH_THREADS}"
        )
    if threads:
        try:
            import torch
        except ImportError:
            return
        torch.set_num_threads(threads)


def executor(address: str | None, num_cpus: int | None = None) -> LocalExecutor | RayExecutor:
    """This process (``address=None``), a local Ray cluster (``"local"``), or the Ray cluster at ``address``."""
    return LocalExecutor() if address is None else RayExecutor(address, num_cpus)
