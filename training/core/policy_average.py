"""The policy average a run ships beside its last iterate: the uniform mixture of its last kept agents.

Self-play's last iterate cycles around an equilibrium; the average of its policies is what no-regret dynamics bring
near one. A mixture that draws one of the last ``K`` kept agents (``schedule.keep_agent_every``) per game and seat is
that average over the sequence form (each agent plays a whole game, so its moves keep their reach), and a mixture
checkpoint plays everywhere a checkpoint plays (``training.core.mixture``). With ``schedule.average_last: K`` a run
writes it as ``runs/<name>/final-average`` just before its ``final`` agent (which marks the run finished), from the
kept agents on disk, so a resumed run writes the same mixture.
"""

from __future__ import annotations

import time
from pathlib import Path

from training.core import checkpoint as ckpt
from training.core.runs import KEPT_AGENTS

AVERAGE_NAME = "final-average"
"""The run's policy average, beside ``final`` (its last iterate)."""


def kept_agents(run_dir: Path) -> list[Path]:
    """The run's kept agents (``agents/update_<U>``), oldest first."""
    found = (run_dir / KEPT_AGENTS).glob("update_*.json")
    return sorted((p.with_suffix("") for p in found), key=lambda p: int(p.name.split("_")[1]))


def save_kept_average(run_dir: Path, last: int, metadata: dict) -> Path:
    """Write the uniform mixture of the run's last ``last`` kept agents (fewer if fewer were kept) to
    ``run_dir/final-average`` with ``metadata`` (the run's, as its ``final`` agent's); returns its path.
    """
    members = kept_agents(run_dir)[-last:]
    if not members:
        raise ValueError(
            f"schedule.average_last={last} found no kept agent in {run_dir / KEPT_AGENTS}; expected "
            "schedule.keep_agent_every > 0 and at most schedule.total_decisions / (ppo.num_envs * ppo.num_steps)"
        )
    models = [ckpt.build_model(ckpt.load_checkpoint(path)) for path in members]
    metadata = {
        **metadata,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "mixture": {"meta_solver": "uniform", "average_of": f"the last {len(members)} kept agents"},
    }
    weights = [1.0 / len(members)] * len(members)
    return ckpt.save_mixture_checkpoint(
        run_dir / AVERAGE_NAME, models, weights, [path.name for path in members], metadata
    )
