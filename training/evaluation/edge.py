"""Where a best response's edge comes from: its seat plays the best response for some decisions and the checkpoint for
the rest.

A best response (``cockroach-exploit``) beats ``N - 1`` copies of a checkpoint by some
points; this module splits that edge by decision. A *partial* agent sits in the best
response's seat and plays the checkpoint's own policy everywhere except one part of the
game, where the best response decides:

* a decision kind: ``offer`` (card, target and claim), ``respond`` (call true, call
  false or peek), ``pass`` (target and claim after a peek) and, in Royal, ``place``;
* one factor of a kind: the best response picks that factor with its own marginal
  probabilities, and the checkpoint picks the rest given it. Offers split into
  ``offer.card``, ``offer.target`` and ``offer.claim``; responses into ``respond.peek``
  (whether to peek) and ``respond.call`` (which call, when calling); passes into
  ``pass.target`` and ``pass.claim``.

Each partial agent plays ``games`` games against ``N - 1`` copies of the checkpoint in
the batched arena (duplicate deals, seat rotation; a mixture draws its member per game
and seat, and so does the partial agent built over it), and so do the checkpoint itself
(the baseline: near parity) and the best response whole. The points of a part are the
baseline's loss rate less the partial agent's: what the best response gains by that
part alone. Parts interact, so the points of the kinds need not add up to the whole.
A partial agent may take several parts, one per kind (``("offer", "respond.call")``),
and play another network than the checkpoint where the best response does not decide
(``base``: the network a best response started from, as in
``benchmarks/bench_edge_by_decision.py``).

    from training.evaluation.edge import edge_sources
    edge_sources("classic-4p", "runs/exploit_classic-4p/final", games=4000)

``cockroach-exploit --edge`` adds this table to its report (``docs/exploitability.md``,
*Where the edge comes from*).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

from baselines.agent import LogitsAgent
from cockroach_env.config import GameConfig
from cockroach_env.encoding import encoding_for


def part_names() -> list[str]:
    """The names of every part a rule set may have (a Royal game's, which has them all), in ``partitions`` order."""
    return list(partitions(GameConfig(num_players=3, edition="royal")))


class Part(NamedTuple):
    """A part of the game the best response decides: over the action ``slice`` of its kind, the ``group`` of each
    action.

    ``within`` False: the best response picks the group (with its marginal probability) and the checkpoint the action
    given the group. ``within`` True: the checkpoint picks the group and the best response the action given it.
    """

    slice: slice
    groups: np.ndarray
    within: bool = False


def partitions(config: GameConfig) -> dict[str, Part]:
    """Every part, by name (``Part``). A kind's own part groups each action alone (the best response decides
    everything); ``respond.call`` leaves whether to peek to the checkpoint and which call to the best response.
    Built from ``Encoding.action_slices`` and ``Encoding.decoded_actions``, the one definition of the action layout.
    """
    enc = encoding_for(config)
    decoded = enc.decoded_actions
    # the fields of each decoded action that a factor groups by: offer (card, target offset, claim), pass (offset,
    # claim)
    factors = {"offer": {"card": 1, "target": 2, "claim": 3}, "pass": {"target": 1, "claim": 2}}
    parts = {}
    for kind, s in enc.action_slices().items():
        if s.stop <= s.start:
            continue
        actions = decoded[s]
        parts[kind] = Part(s, np.arange(s.stop - s.start))
        if kind == "respond":
            peek_or_call = np.array([a[0] == "peek" for a in actions], np.int64)
            # the best response: peek, or call; the checkpoint: which call
            parts["respond.peek"] = Part(s, peek_or_call)
            # the checkpoint: peek, or call; the best response: which call
            parts["respond.call"] = Part(s, peek_or_call, within=True)
        for factor, field in factors.get(kind, {}).items():
            _, groups = np.unique([a[field] for a in actions], return_inverse=True)
            parts[f"{kind}.{factor}"] = Part(s, groups.astype(np.int64))
    return parts


def combine(base: np.ndarray, expert: np.ndarray, masks: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Probabilities over a kind's actions (rows, K): the group from ``expert``'s marginal, the action within it from
    ``base``'s conditional.

    ``base`` and ``expert`` are policies over the K actions (zero where illegal); a group ``base`` gives no probability
    (underflow) is played uniformly over its legal actions.
    """
    n_groups = int(groups.max()) + 1
    member = np.eye(n_groups)[groups]  # (K, G)
    expert_group = expert @ member  # (rows, G)
    base_group = base @ member
    legal_in_group = masks.astype(np.float64) @ member
    fallback = masks / np.maximum(legal_in_group, 1)[:, groups]
    conditional = np.where(
        base_group[:, groups] > 0, base / np.where(base_group > 0, base_group, 1)[:, groups], fallback
    )
    return expert_group[:, groups] * conditional


def _parts_problem(parts: tuple[str, ...], table: dict) -> str | None:
    """Why ``parts`` cannot be one partial agent's (unknown, or two parts of one decision kind), or None."""
    unknown = [p for p in parts if p not in table]
    if unknown:
        return f"parts {unknown} are not allowed; expected some of {list(table)}"
    kinds = [p.split(".")[0] for p in parts]
    if len(set(kinds)) < len(kinds):
        return f"parts {list(parts)} are not allowed together; expected at most one part of each decision kind"
    return None


class PartialAgent(LogitsAgent):
    """An agent of the ``baselines`` protocol (batched): ``base``'s policy, except in ``parts`` (``partitions``), where
    ``expert`` decides.

    ``base`` and ``expert`` are ``LogitsAgent``s (trained networks); ``parts`` holds at most one part of each decision
    kind (``("offer", "respond.call")``: the expert's offers and its choice of call). Its logits are the logarithms of
    the combined policy, which ``LogitsAgent`` samples with the partial agent's own generator.
    """

    def __init__(
        self,
        base: Any,
        expert: Any,
        parts: tuple[str, ...],
        config: GameConfig,
        seed: int | None = None,
        name: str = "partial",
    ):
        for role, agent in (("base", base), ("expert", expert)):
            if not callable(getattr(agent, "logits", None)):
                raise ValueError(
                    f"the {role} agent {agent!r} has no logits(); expected a trained network's agent "
                    f"(training.load_agent of a checkpoint)"
                )
        table = partitions(config)
        problem = _parts_problem(tuple(parts), table)
        if problem:
            raise ValueError(problem)
        super().__init__(config, seed)
        self.base, self.expert, self.parts, self.name = base, expert, tuple(parts), name
        self._tables = [table[p] for p in self.parts]

    def policy(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        """(B, A) probabilities of the combined policy."""
        masks = np.asarray(masks).astype(bool)
        observations = np.asarray(observations, np.float32)
        out = self.base.action_probabilities_batch(observations, masks)
        for s, groups, within in self._tables:
            rows = masks[:, s].any(axis=1)
            if rows.any():
                expert = self.expert.action_probabilities_batch(observations[rows], masks[rows])
                base, best = out[rows, s], expert[:, s]
                if within:  # the base picks the group, the expert the action within it
                    base, best = best, base
                out[np.ix_(rows, np.arange(s.start, s.stop))] = combine(base, best, masks[rows, s], groups)
        return out

    def logits(self, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore"):  # illegal actions: probability 0, logit -inf
            return np.log(self.policy(observations, masks))

    def __repr__(self) -> str:
        return f"PartialAgent(name={self.name!r}, parts={list(self.parts)})"


def partial_agent(base: Any, expert: Any, parts: tuple[str, ...], config: GameConfig, seed: int, name: str):
    """``PartialAgent`` over ``base``; over a mixture, a mixture of partial agents over its members (the same
    weights).
    """
    from training.core.mixture import MixtureAgent, is_mixture

    if is_mixture(base):
        members = [
            PartialAgent(m, expert, parts, config, seed=seed + 7 * k, name=f"{name}.{k}")
            for k, m in enumerate(base.members)
        ]
        return MixtureAgent(members, base.weights, config, seed=seed, name=name)
    return PartialAgent(base, expert, parts, config, seed=seed, name=name)


def edge_sources(
    checkpoint: str,
    best_response: str,
    games: int = 4000,
    seed: int = 0,
    base: str | None = None,
    variants: list[tuple[str, ...]] | None = None,
) -> dict[str, Any]:
    """The loss rate of the seat that plays ``base`` (default: the checkpoint) except in each variant's parts, where
    the best response decides, against ``N - 1`` copies of ``checkpoint``.

    ``variants`` defaults to every part alone. Returns ``{"games", "parity", "baseline", "whole", "rows"}``:
    ``baseline``
    the seat playing ``base`` alone, ``whole`` the best response alone, ``rows`` one entry per variant (``parts``); each
    with the seat's ``loss_rate``, ``ci95`` and ``points`` (the baseline's loss rate less its own: what the parts gain).
    Every row plays the same deals (duplicate deals, seat rotation, one seed).
    """
    from training.core.checkpoint import load_agent, load_checkpoint
    from training.evaluation.arena import play_match

    config = load_checkpoint(checkpoint).game_config
    table = partitions(config)
    variants = [(p,) for p in table] if variants is None else [tuple(v) for v in variants]
    for variant in variants:
        problem = _parts_problem(variant, table)
        if problem:
            raise ValueError(problem)
    if games < 1:
        raise ValueError(f"games={games} is not allowed; expected at least 1")
    for role, path in (("best response", best_response), ("base", base)):
        kind = None if path is None else load_checkpoint(path, game=config).metadata["kind"]
        if kind not in (None, "agent", "run"):
            raise ValueError(
                f"{role} {path!r} is a {kind!r} checkpoint; expected an agent or run checkpoint of one network"
            )
    expert = load_agent(best_response, seed=seed + 1, config=config)

    def play(parts: tuple[str, ...] | None) -> dict[str, Any]:
        copies = [load_agent(checkpoint, seed=seed + 100 + k, config=config) for k in range(config.num_players - 1)]
        for k, agent in enumerate(copies):
            agent.name = f"copy_{k}"
        if parts is None:  # the best response whole
            seat = load_agent(best_response, seed=seed + 2, config=config)
            seat.name = "seat"
        else:
            seat = partial_agent(
                load_agent(base or checkpoint, seed=seed + 3, config=config),
                expert,
                parts,
                config,
                seed=seed + 4,
                name="seat",
            )
        report = play_match([seat, *copies], config, games=games, seed=seed, duplicate=True, engine="batched").report(
            "seat"
        )
        return {"games": report.games, "loss_rate": report.loss_rate, "ci95": list(report.loss_rate_ci95)}

    baseline, whole = play(()), play(None)
    rows = [{"parts": list(v), **play(v)} for v in variants]
    for entry in (baseline, whole, *rows):
        entry["points"] = baseline["loss_rate"] - entry["loss_rate"]
    return {
        "games": games,
        "parity": 1 / config.num_players,
        "checkpoint": checkpoint,
        "base": base or checkpoint,
        "baseline": baseline,
        "whole": whole,
        "rows": rows,
    }


def edge_lines(edge: dict[str, Any]) -> list[str]:
    """The table ``cockroach-exploit --edge`` prints."""
    pct = lambda v: f"{100 * v:.1f}%"  # noqa: E731
    lines = [
        f"where the edge comes from ({edge['games']} games per row, against the checkpoint's copies): the seat plays "
        f"{'the checkpoint' if edge['base'] == edge['checkpoint'] else edge['base']} except where the best "
        f"response decides",
        f"  {'the best response decides':<28} {'loss rate':>9} {'95% CI':>14} {'points':>7}",
    ]
    nothing = "nothing (the checkpoint)" if edge["base"] == edge["checkpoint"] else "nothing (the base)"
    rows = [
        (nothing, edge["baseline"]),
        *(("+".join(r["parts"]), r) for r in edge["rows"]),
        ("everything (the best response)", edge["whole"]),
    ]
    for name, e in rows:
        low, high = e["ci95"]
        lines.append(
            f"  {name:<28} {pct(e['loss_rate']):>9} {'[' + pct(low) + ', ' + pct(high) + ']':>14} "
            f"{100 * e['points']:>+7.1f}"
        )
    return lines
