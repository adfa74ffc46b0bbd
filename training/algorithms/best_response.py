"""One best response trained by PPO against a frozen checkpoint: the training part of ``cockroach-exploit``
(``training.cli.exploit``; its names and checks are ``training.evaluation.exploitability``).
"""

from __future__ import annotations

import json

from training.evaluation.exploitability import FROZEN


def train_start(
    checkpoint: str,
    config_data: dict,
    start_name: str | None,
    initial,
    population,
    command: str,
    progress: bool = False,
    from_scratch: bool = False,
    edge_games: int | None = None,
    resume: bool = False,
) -> dict:
    """Train one best response against ``checkpoint`` (frozen; ``population``: its members as a
    ``training.core.opponents.Population``, or a portable one, ``{"networks": [ActorCritic.portable()...], "weights",
    "names", "reads_prefix"}``, for a mixture) from ``initial`` weights, with the training config ``config_data``, and
    return its report; with ``edge_games``, its ``edge`` too
    (``training.evaluation.edge.edge_sources``, that many games per row). With ``resume``, the run in the config's
    directory continues from its checkpoint (``initial`` is then unused). Module-level, every input plain data, tensors
    or a path: ``--ray`` runs it as a task (where the best response's files are), with the result of the same call here.
    """
    import baselines
    from training.algorithms.ppo import train
    from training.core.checkpoint import load_agent
    from training.core.config import config_from_dict
    from training.core.model import ActorCritic
    from training.core.opponents import Population

    registered = FROZEN in baselines.names()  # the evaluation's opponent (and a single checkpoint's training opponent)
    if not registered:
        baselines.register(FROZEN, lambda config, seed=None: load_agent(checkpoint, seed=seed, config=config))
    try:
        config = config_from_dict(config_data, where="best-response config")
        if isinstance(population, dict):
            population = Population(
                [ActorCritic.from_portable(d) for d in population["networks"]],
                population["weights"],
                population["names"],
                population.get("reads_prefix", False),
            )
        agent_path = train(
            config,
            resume=resume,
            command=command,
            progress_bar=progress,
            initial_weights=None if resume else initial,
            population=population,
        )
    finally:
        if not registered:
            baselines.unregister(FROZEN)
    return _report(checkpoint, config, agent_path, population, start_name, from_scratch, edge_games)


def _report(checkpoint: str, config, agent_path, population, start_name, from_scratch: bool, edge_games) -> dict:
    """The report of a best response trained against ``checkpoint``: its final evaluation against it, as the
    exploitability and both sides' behaviour, and its ``edge`` with ``edge_games``.
    """
    game = config.game_config()
    final = json.loads(agent_path.read_text())["evaluation"]["results"][0]
    parity = 1 / game.num_players
    edge = None
    if edge_games:
        from training.evaluation.edge import edge_sources

        edge = edge_sources(checkpoint, str(agent_path.with_suffix("")), games=edge_games, seed=config.seed)
    return {
        "checkpoint": checkpoint,
        "game_config": game.to_dict(),
        "best_response_decisions": config.schedule.total_decisions,
        "from_scratch": from_scratch,
        "mixture_members": len(population.models) if population is not None else None,
        "start_member": start_name,
        "games": final["games"],
        "best_response_loss_rate": final["loss_rate"],
        "ci95": final["ci95"],
        "parity": parity,
        "exploitability": parity - final["loss_rate"],
        "behaviour": {
            "best_response": {k: final.get(k) for k in ("false_offer_rate", "false_pass_rate", "call_accuracy")},
            # the checkpoint's seats judge the best response's claims (call_accuracy_on_best_response) and each other's
            # (in call_accuracy too)
            "checkpoint": {
                **{k: final.get("opponent_" + k) for k in ("false_offer_rate", "false_pass_rate", "call_accuracy")},
                "call_accuracy_on_best_response": final.get("opponent_call_accuracy_on_policy"),
            },
        },
        "best_response_checkpoint": str(agent_path.with_suffix("")),
        **({"edge": edge} if edge is not None else {}),
    }
