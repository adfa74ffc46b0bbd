"""The ``distributed`` section of a training config: where a PPO-family run (``ppo``, ``nfsp``) plays its rollouts.

One learner trains; ``workers`` rollout workers each own ``ppo.num_envs / workers`` of the games on their own batched
engine and play their share of every rollout (``training.core.rollout_workers``). ``address`` says where the workers
run: ``null`` in this process (one shard after another: the cluster's result, no faster), ``local`` a Ray cluster
started on this machine's cores, ``auto`` the running cluster (``ray start``; ``RAY_ADDRESS``), ``HOST:PORT`` or
``ray://HOST:PORT`` a given one. The default (one worker, ``null``) is the in-process run, without any of this.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Any

from training.core.schema import require

MAX_WORKERS = 4096
"""Most rollout workers of one run."""
MAX_RESTARTS = 100
"""Most restarts Ray may give one rollout worker (``distributed.max_restarts``)."""
_ADDRESS = re.compile(r"local|auto|(ray://)?[A-Za-z0-9._-]+(:\d{1,5})?")


@dataclass
class DistributedConfig:
    """Rollout workers: ``workers`` shards of ``ppo.num_envs`` games at ``address`` (docs/scaling.md)."""

    workers: int = 1
    """Rollout workers (Ray actors), each with ``ppo.num_envs / workers`` games: a divisor of ``ppo.num_envs``. Each
    count of workers gives its own result, bit for bit on any cluster; 1 on a cluster is the in-process run's.
    """
    address: str | None = None
    """Where the workers run: null (in this process), ``local`` (a local Ray cluster), ``auto`` (the running cluster,
    ``RAY_ADDRESS``), ``HOST:PORT`` or ``ray://HOST:PORT``.
    """
    max_restarts: int = 3
    """Restarts Ray gives a worker that dies; its shard replays the segment from its seeds, so the result is unchanged.
    """

    def validate(self, where: str, num_envs: int, algorithm: Any) -> None:
        """Check the section against ``ppo.num_envs`` and the config's ``algorithm`` (a ``registry.Algorithm``)."""
        require(where, "workers", self.workers, 1 <= self.workers <= MAX_WORKERS, f"an integer from 1 to {MAX_WORKERS}")
        require(
            where,
            "workers",
            self.workers,
            self.workers <= num_envs and num_envs % self.workers == 0,
            f"a divisor of ppo.num_envs={num_envs} (every worker owns the same number of games)",
        )
        if self.address is not None:
            require(
                where,
                "address",
                self.address,
                _ADDRESS.fullmatch(self.address) is not None,
                "null (in this process), 'local', 'auto', 'HOST:PORT' or 'ray://HOST:PORT'",
            )
        require(
            where,
            "max_restarts",
            self.max_restarts,
            0 <= self.max_restarts <= MAX_RESTARTS,
            f"an integer from 0 to {MAX_RESTARTS}",
        )

        if self.active:
            require(
                where,
                "workers" if self.workers > 1 else "address",
                self.workers if self.workers > 1 else self.address,
                algorithm.rollout_workers,
                f"1 worker and address null with algorithm: {algorithm.name} (its rollouts do not run on workers; "
                f"PPO and NFSP's do)",
            )

    @property
    def local_cpus(self) -> int:
        """CPUs of a ``local`` cluster: this machine's cores, or one per worker where there are more workers."""
        return max(os.cpu_count() or 1, self.workers)

    @property
    def active(self) -> bool:
        """Whether the rollouts run on workers (anything but one worker in this process)."""
        return self.workers > 1 or self.address is not None
