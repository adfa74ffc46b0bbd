"""An agent against the baselines in the arena: the evaluation that training runs during and after training.

The evaluation sits below the algorithms: ``training.algorithms`` imports it (PPO's scheduled and final evaluations,
CFR's and PSRO's final ones), and nothing in ``training.evaluation`` imports an algorithm.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

from cockroach_env.config import GameConfig
from training.core.config import TrainConfig
from training.core.model import ActorCritic, PolicyAgent


def evaluate_model(
    model: ActorCritic, game: GameConfig, opponents: list[str], num_games: int, seed: int
) -> list[dict[str, Any]]:
    """The policy in one seat against each baseline in all the others, in the arena (seat rotation, duplicate deals)."""
    results = evaluate_agent(
        lambda i: PolicyAgent(model, game, seed=seed + 7919 * i, name="policy"), game, opponents, num_games, seed
    )
    model.train()
    return results


def evaluate_agent(
    make_agent, game: GameConfig, opponents: list[str], num_games: int, seed: int
) -> list[dict[str, Any]]:
    """``make_agent(i)`` (an agent named ``policy``) in one seat against baseline ``opponents[i]`` in all the others,
    in the arena.

    Each result holds the policy's loss rate and its behaviour (``false_offer_rate``,
    ``false_pass_rate``, ``call_accuracy``), and the same three of the opponents' seats
    together (``opponent_*``): what a best response exploits shows in both.
    ``opponent_call_accuracy_on_policy`` is the opponents' accuracy on the policy's claims
    alone (their ``call_accuracy`` also counts their calls on each other's).
    """
    from training.evaluation.arena import behaviour_summary, play_match

    results = []
    for i, name in enumerate(opponents):
        policy = make_agent(i)
        match = play_match([policy, f"{name}*{game.num_players - 1}"], game, games=num_games, seed=seed + 7919 * i + 1)
        report = match.report("policy")
        behaviour = report.behaviour
        others = [agent for agent in match.agents if agent is not report]
        theirs = behaviour_summary(
            {k: sum(a.counts[k] for a in others) for k in report.counts}, sum(a.games for a in others)
        )
        results.append(
            {
                "opponent": name,
                "games": report.games,
                "losses": report.losses,
                "loss_rate": report.loss_rate,
                "ci95": list(report.loss_rate_ci95),
                "parity": 1 / game.num_players,
                "false_offer_rate": behaviour.get("false_offer_rate"),
                "false_pass_rate": behaviour.get("false_pass_rate"),
                "call_accuracy": behaviour.get("call_accuracy"),
                **{f"opponent_{k}": theirs.get(k) for k in ("false_offer_rate", "false_pass_rate", "call_accuracy")},
                "opponent_call_accuracy_on_policy": theirs.get("call_accuracy_on_others"),
            }
        )
    return results


def final_evaluation(
    config: TrainConfig, game: GameConfig, make_agent: Callable[[int], Any], step: dict[str, Any]
) -> dict[str, Any] | None:
    """The evaluation a run ends with: ``make_agent(i)`` against each of ``evaluation.opponents`` for
    ``evaluation.final_games`` games (``evaluate_agent``), printed; the entry ``{**step, "final": True, "results"}``
    for the checkpoint's metadata, or None when the config asks for none.
    """
    if not (config.evaluation.final_games and config.evaluation.opponents):
        return None
    results = evaluate_agent(
        make_agent, game, config.evaluation.opponents, config.evaluation.final_games, seed=config.seed + 10**6
    )
    print(
        "final evaluation: " + ", ".join(f"vs {r['opponent']} {100 * r['loss_rate']:.1f}%" for r in results),
        file=sys.stderr,
    )
    return {**step, "final": True, "results": results}
