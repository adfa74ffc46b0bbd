"""Exact evaluation by full traversal of the game tree: best-response values and NashConv.

For rule sets small enough to enumerate (the ``mini`` and ``mini-3p`` presets), every
deal (``engine.deal_distribution``, with its exact probability) and every sequence of
legal moves is expanded once into a ``GameTree``. A policy profile is then evaluated
without sampling:

* each seat's policy gives its action probabilities at every decision
  (``action_probabilities_batch`` on the tree's distinct observations, one call per agent);
* a seat may be a **mixture** of agents, weighted by reach: the seat draws one component
  at the start of the game and plays it throughout, so the probability that the seat's
  own moves lead to a node is ``sum_k weight_k * prod(pi_k(a) for its moves on the path)``,
  not a per-decision blend;
* the best response of seat ``i`` is computed over its **information sets** with perfect
  recall (its dealt hand, the public events so far, and the card in play if it saw it):
  bottom-up, each information set takes the action of highest counterfactual value.

NashConv is ``sum_i (best response value_i - policy value_i)`` (OpenSpiel's definition);
exploitability is NashConv / N. Both are 0 exactly at a Nash equilibrium.

Seats of a profile, as accepted by every function here:

* one agent (any object with ``action_probabilities_batch(obs, masks)`` or
  ``action_probabilities(observation)``): the same agent in every seat;
* a mixture: a sequence of ``(weight, agent)`` pairs, or any object with a ``components``
  attribute holding one (weights >= 0 summing to 1): the same mixture in every seat;
* a list of N of those, one per seat.

An agent may also be an ``InformationSetPolicy`` (probabilities by information state, such
as OpenSpiel's CFR average policy), which perfect-recall solvers produce.

    from training.evaluation.exact import nash_conv, best_response_values
    nash_conv(baselines.make("heuristic", config), config)       # config = GameConfig.from_options(preset="mini")
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import numpy as np

from cockroach_env.config import GameConfig
from cockroach_env.encoding import apply_action, encoding_for, has_private_view, legal_actions, write_state
from cockroach_env.engine import Game, deal_distribution
from cockroach_env.information import information_state_string

DEFAULT_MAX_NODES = 3_000_000
"""Refuse trees larger than this (memory and time grow with it; the mini presets have ~1e5)."""


class TreeTooLarge(ValueError):
    """The game tree of the config exceeds the node budget of exact evaluation."""


@dataclass(eq=False)
class GameTree:
    """Every history of a small game, flattened in depth-first order (a parent precedes its children).

    Node arrays have one entry per node; ``-1`` marks "none". Roots are the deals
    (depth 0), with their chance probability in ``chance``.
    """

    config: GameConfig
    parent: np.ndarray
    """(M,) index of the parent node, -1 for the deals."""
    action: np.ndarray
    """(M,) action index that led here from the parent, -1 for the deals."""
    depth: np.ndarray
    """(M,) moves from the deal."""
    player: np.ndarray
    """(M,) seat to act, -1 at terminal nodes."""
    chance: np.ndarray
    """(M,) probability of the node's deal."""
    infoset: np.ndarray
    """(M,) information set of the seat to act (perfect recall), -1 at terminal nodes; ids are global over seats."""
    observation: np.ndarray
    """(M,) row in ``observations`` of the acting seat's observation, -1 at terminal nodes."""
    returns: np.ndarray
    """(M, N) float64 rewards by seat at terminal nodes (0 elsewhere and at truncation)."""
    observations: np.ndarray
    """(U, O) float32 distinct (observation, mask) pairs at decision nodes ..."""
    masks: np.ndarray
    """(U, A) int8 ... with their masks."""
    infoset_seat: np.ndarray
    """(I,) seat of each information set."""
    infoset_strings: list[str]
    """``information.information_state_string`` of each information set (OpenSpiel's ``information_state_string``)."""
    build_seconds: float = 0.0

    @cached_property
    def levels(self) -> list[np.ndarray]:
        """Node indices grouped by depth (for the vectorized passes)."""
        order = np.argsort(self.depth, kind="stable")
        bounds = np.searchsorted(self.depth[order], np.arange(self.depth.max() + 2))
        return [order[bounds[d] : bounds[d + 1]] for d in range(len(bounds) - 1)]

    @property
    def num_nodes(self) -> int:
        return len(self.parent)

    @property
    def num_players(self) -> int:
        return self.config.num_players

    def sizes(self) -> dict[str, Any]:
        """Counts for the docs: deals, histories (all nodes), terminal and decision nodes, information sets per seat."""
        terminal = self.player < 0
        return {
            "deals": int((self.parent < 0).sum()),
            "histories": self.num_nodes,
            "terminal_histories": int(terminal.sum()),
            "decision_histories": int((~terminal).sum()),
            "information_sets": int(len(self.infoset_seat)),
            "information_sets_per_seat": np.bincount(self.infoset_seat, minlength=self.num_players).tolist(),
            "distinct_observations": int(len(self.observations)),
            "max_depth": int(self.depth.max()),
        }


def build_tree(config: GameConfig, max_nodes: int = DEFAULT_MAX_NODES) -> GameTree:
    """Expand every deal and every legal move sequence of ``config`` (cached per config by ``game_tree``)."""
    if not isinstance(config, GameConfig):
        raise ValueError(f"config={config!r} is not allowed; expected a GameConfig")
    started = time.perf_counter()
    builder = _TreeBuilder(config, max_nodes)
    try:
        # refuse huge decks before enumerating their deals
        deals = deal_distribution(config, limit=max(1, max_nodes // 20))
    except ValueError as error:
        raise TreeTooLarge(
            f"{error}; exact evaluation allows max_nodes // 20 = {max(1, max_nodes // 20)} deals "
            f"(max_nodes={max_nodes})"
        ) from None
    for p, deal in deals:
        game = Game(config, deal)
        opening = builder.public.setdefault((-1, repr(game.events[0])), len(builder.public))
        builder.expand(game, -1, -1, 0, p, tuple(tuple(h) for h in deal.hands), opening)
    return builder.tree(time.perf_counter() - started)


class _TreeBuilder:
    """The growing arrays of a ``GameTree``, one entry per node in depth-first order (``expand``)."""

    def __init__(self, config: GameConfig, max_nodes: int):
        self.config, self.max_nodes = config, max_nodes
        self.enc = enc = encoding_for(config)
        n = config.num_players
        self.buffer = np.zeros(enc.state.size + 1, np.float32)
        self.indices = [[enc.observation_index(s, seen) for seen in (False, True)] for s in range(n)]
        self.parent: list[int] = []
        self.action: list[int] = []
        self.depth: list[int] = []
        self.player: list[int] = []
        self.chance: list[float] = []
        self.infoset: list[int] = []
        self.observation: list[int] = []
        self.returns: dict[int, list[float]] = {}
        self.obs_rows: dict[bytes, int] = {}
        self.obs_list: list[np.ndarray] = []
        self.mask_list: list[np.ndarray] = []
        self.infosets: dict[tuple, int] = {}
        self.infoset_seat: list[int] = []
        self.infoset_strings: list[str] = []
        # ``(parent's public id, new public events) -> public id``: nodes that every seat tells apart.
        self.public: dict[tuple, int] = {}
        self.win = 1.0 / (n - 1)

    def expand(self, game: Game, up: int, via: int, level: int, p: float, hands: tuple, public_id: int) -> None:
        """Add ``game``'s node (reached from node ``up`` by action ``via``, with chance ``p``) and all below it."""
        config, n = self.config, self.config.num_players
        node = len(self.parent)
        if node >= self.max_nodes:
            raise TreeTooLarge(
                f"the game tree of {config} has more than max_nodes={self.max_nodes} nodes; exact evaluation is for "
                "small decks (presets mini and mini-3p), or raise max_nodes"
            )
        self.parent.append(up)
        self.action.append(via)
        self.depth.append(level)
        self.chance.append(p)
        truncated = config.max_steps is not None and game.steps >= config.max_steps
        if game.over or truncated:
            self.player.append(-1)
            self.infoset.append(-1)
            self.observation.append(-1)
            if game.over:
                self.returns[node] = [-1.0 if s == game.loser else self.win for s in range(n)]
            return
        legal = self._decision(game, hands, public_id)
        events = len(game.events)
        for a in legal:
            child = game.copy()
            apply_action(child, self.enc, a)
            new_events = tuple(tuple(event.values()) for event in child.events[events:])
            child_public = self.public.setdefault((public_id, new_events), len(self.public))
            self.expand(child, node, a, level + 1, p, hands, child_public)

    def _decision(self, game: Game, hands: tuple, public_id: int) -> list[int]:
        """Record a decision node's seat, information set and observation row; its legal actions."""
        enc, seat, chain = self.enc, game.current, game.chain
        seen = chain is not None and seat in chain.seen
        self.player.append(seat)
        key = (seat, hands[seat], public_id, chain.card if seen else -1)
        private = has_private_view(game, seat)  # the card in play, or the placer's replacement
        self.infoset.append(self.infosets.setdefault(key, len(self.infosets)))
        if len(self.infoset_seat) < len(self.infosets):
            self.infoset_seat.append(seat)
            self.infoset_strings.append(information_state_string(game, seat, hands[seat]))
        legal = legal_actions(game, enc)
        write_state(enc, game, self.buffer)
        obs = self.buffer[self.indices[seat][private]]
        mask = np.zeros(enc.num_actions, np.int8)
        mask[legal] = 1
        row_key = obs.tobytes() + mask.tobytes()
        row = self.obs_rows.get(row_key)
        if row is None:
            row = self.obs_rows[row_key] = len(self.obs_list)
            self.obs_list.append(obs)
            self.mask_list.append(mask)
        self.observation.append(row)
        return legal

    def tree(self, build_seconds: float) -> GameTree:
        """The arrays as a ``GameTree``."""
        enc, m = self.enc, len(self.parent)
        returns_array = np.zeros((m, self.config.num_players))
        for node, values in self.returns.items():
            returns_array[node] = values
        return GameTree(
            config=self.config,
            parent=np.array(self.parent, np.int64),
            action=np.array(self.action, np.int64),
            depth=np.array(self.depth, np.int64),
            player=np.array(self.player, np.int64),
            chance=np.array(self.chance),
            infoset=np.array(self.infoset, np.int64),
            observation=np.array(self.observation, np.int64),
            returns=returns_array,
            observations=np.array(self.obs_list, np.float32).reshape(len(self.obs_list), enc.observation.size),
            masks=np.array(self.mask_list, np.int8).reshape(len(self.mask_list), enc.num_actions),
            infoset_seat=np.array(self.infoset_seat, np.int64),
            infoset_strings=self.infoset_strings,
            build_seconds=build_seconds,
        )


@lru_cache(maxsize=4)
def game_tree(config: GameConfig) -> GameTree:
    """The ``GameTree`` of ``config``, kept in memory and on disk (``training.evaluation.tree_cache``)."""
    from training.evaluation.tree_cache import load_or_build

    return load_or_build(config, build_tree)


# ---------------------------------------------------------------------------- profiles


def mixture_components(seat_policy: Any) -> list[tuple[float, Any]] | None:
    """The ``(weight, agent)`` pairs of a mixture, or ``None`` if ``seat_policy`` is a single agent."""
    components = getattr(seat_policy, "components", None)
    if components is None:
        if isinstance(seat_policy, (str, bytes)) or not isinstance(seat_policy, Sequence):
            return None
        if not seat_policy or not all(isinstance(c, tuple) and len(c) == 2 for c in seat_policy):
            return None
        components = seat_policy
    pairs = [(float(w), agent) for w, agent in components]
    weights = np.array([w for w, _ in pairs])
    if not len(pairs) or np.any(~np.isfinite(weights)) or np.any(weights < 0) or abs(weights.sum() - 1.0) > 1e-9:
        raise ValueError(
            f"mixture weights {weights.tolist()} are not allowed; expected non-negative weights summing to 1"
        )
    return pairs


def _seat_policies(profile: Any, config: GameConfig) -> list[list[tuple[float, Any]]]:
    """Normalize a profile (see the module docstring) to a ``(weight, agent)`` list per seat."""
    n = config.num_players
    if mixture_components(profile) is None and isinstance(profile, Sequence) and not isinstance(profile, (str, bytes)):
        if len(profile) != n:
            raise ValueError(
                f"a profile of {len(profile)} seats is not allowed for {n} players; expected one agent or "
                f"mixture, or a list of {n}"
            )
        seats = list(profile)
    else:
        seats = [profile] * n
    out = []
    for seat, policy in enumerate(seats):
        pairs = mixture_components(policy) or [(1.0, policy)]
        for _, agent in pairs:
            if isinstance(agent, InformationSetPolicy):
                continue
            if not (hasattr(agent, "action_probabilities_batch") or hasattr(agent, "action_probabilities")):
                raise ValueError(
                    f"seat {seat}: {agent!r} is not allowed; expected an agent with action_probabilities (or "
                    f"a mixture of such agents)"
                )
            agent_config = getattr(agent, "config", None)
            if agent_config is not None and agent_config != config:
                raise ValueError(f"seat {seat}: {agent!r} was built for {agent_config}, not for the evaluated {config}")
        out.append(pairs)
    return out


class InformationSetPolicy:
    """A policy over information states rather than observations (e.g. a CFR average policy).

    ``table`` maps ``information.information_state_string`` (OpenSpiel's
    ``information_state_string``) to ``(A,)`` action probabilities. It may be a seat of a
    profile like an agent. ``from_openspiel(tabular_policy)`` reads an OpenSpiel ``TabularPolicy``.
    """

    def __init__(self, table: dict[str, np.ndarray], name: str = "tabular"):
        self.table = table
        self.name = name

    @classmethod
    def from_openspiel(cls, tabular_policy: Any, name: str = "tabular") -> InformationSetPolicy:
        probs = tabular_policy.action_probability_array
        return cls({key: probs[row] for key, row in tabular_policy.state_lookup.items()}, name)

    def probabilities(self, tree: GameTree) -> np.ndarray:
        """(I, A) probabilities of each information set of the tree."""
        missing = [key for key in tree.infoset_strings if key not in self.table]
        if missing:
            raise ValueError(
                f"{self.name}: no probabilities for {len(missing)} information states of the tree, e.g. "
                f"{missing[0][:200]}"
            )
        probs = np.array([self.table[key] for key in tree.infoset_strings], np.float64)
        return probs

    def __repr__(self) -> str:
        return f"InformationSetPolicy({self.name!r}, {len(self.table)} information states)"


def _probabilities(agent: Any, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    if hasattr(agent, "action_probabilities_batch"):
        probs = np.asarray(agent.action_probabilities_batch(observations, masks), np.float64)
    else:
        probs = np.array(
            [agent.action_probabilities({"observation": o, "action_mask": m}) for o, m in zip(observations, masks)],
            np.float64,
        )
    if probs.shape != masks.shape:
        raise ValueError(f"{agent!r} returned action probabilities of shape {probs.shape}; expected {masks.shape}")
    bad = ~np.isclose(probs.sum(1), 1.0, atol=1e-6) | (probs < 0).any(1) | ((probs > 0) & (masks == 0)).any(1)
    if bad.any():
        raise ValueError(
            f"{agent!r} returned an invalid distribution for observation row {int(np.flatnonzero(bad)[0])}; "
            f"expected non-negative probabilities on legal actions summing to 1"
        )
    return probs


# ---------------------------------------------------------------------------- evaluation


@dataclass(frozen=True)
class ExactEvaluation:
    """Exact values of a policy profile (by absolute seat)."""

    policy_values: np.ndarray
    """(N,) expected reward of each seat under the profile."""
    best_response_values: np.ndarray
    """(N,) expected reward of a best response in each seat against the others."""
    seconds: float
    """Wall time of the evaluation (the tree build is excluded when it was cached)."""

    @property
    def nash_conv(self) -> float:
        return float((self.best_response_values - self.policy_values).sum())

    @property
    def exploitability(self) -> float:
        """NashConv / N (OpenSpiel's ``exploitability``)."""
        return self.nash_conv / len(self.policy_values)


def evaluate(profile: Any, config: GameConfig, tree: GameTree | None = None) -> ExactEvaluation:
    """Policy values and best-response values of every seat, by full traversal."""
    started = time.perf_counter()
    tree = tree if tree is not None else game_tree(config)
    if tree.config != config:
        raise ValueError(f"the tree was built for {tree.config}, not for {config}")
    seats = _seat_policies(profile, config)
    levels = tree.levels
    n = config.num_players
    decision = tree.player >= 0
    reach = np.empty((n, tree.num_nodes))
    probability_cache: dict[int, np.ndarray] = {}
    edge = tree.parent >= 0
    parent_obs = np.where(edge, tree.observation[np.maximum(tree.parent, 0)], 0)
    parent_player = np.where(edge, tree.player[np.maximum(tree.parent, 0)], -1)
    for seat, pairs in enumerate(seats):
        reach[seat] = 0.0
        mine = parent_player == seat
        for weight, agent in pairs:
            if weight == 0.0:
                continue
            key = id(agent)
            factor = np.ones(tree.num_nodes)
            if isinstance(agent, InformationSetPolicy):
                factor[mine] = agent.probabilities(tree)[tree.infoset[tree.parent[mine]], tree.action[mine]]
            else:
                if key not in probability_cache:
                    probability_cache[key] = _probabilities(agent, tree.observations, tree.masks)
                factor[mine] = probability_cache[key][parent_obs[mine], tree.action[mine]]
            component = np.ones(tree.num_nodes)
            for nodes in levels[1:]:
                component[nodes] = component[tree.parent[nodes]] * factor[nodes]
            reach[seat] += weight * component
    terminal = ~decision
    joint = tree.chance * reach.prod(0)
    policy_values = (joint[terminal, None] * tree.returns[terminal]).sum(0)
    best = np.array(
        [
            _best_response_value(tree, levels, seat, tree.chance * np.prod(np.delete(reach, seat, 0), axis=0))
            for seat in range(n)
        ]
    )
    return ExactEvaluation(
        policy_values=policy_values, best_response_values=best, seconds=time.perf_counter() - started
    )


def _best_response_value(tree: GameTree, levels: list[np.ndarray], seat: int, others: np.ndarray) -> float:
    """Value of the best response of ``seat``: counterfactual values bottom-up, a max over each of its information
    sets.
    """
    m = tree.num_nodes
    value = np.where(tree.player < 0, others * tree.returns[:, seat], 0.0)
    num_actions = tree.masks.shape[1]
    for d in range(len(levels) - 1, 0, -1):
        nodes = levels[d]
        up = tree.parent[nodes]
        from_me = tree.player[up] == seat
        # other seats' nodes: sum of the children (the others' probabilities are inside the weights)
        theirs = nodes[~from_me]
        value += np.bincount(tree.parent[theirs], weights=value[theirs], minlength=m)
        mine = nodes[from_me]
        if not len(mine):
            continue
        sets = tree.infoset[tree.parent[mine]]
        local, inverse = np.unique(sets, return_inverse=True)
        q = np.full((len(local), num_actions), -np.inf)
        totals = np.bincount(
            inverse * num_actions + tree.action[mine], weights=value[mine], minlength=len(local) * num_actions
        )
        present = np.zeros(len(local) * num_actions, bool)
        present[inverse * num_actions + tree.action[mine]] = True
        q.reshape(-1)[present] = totals[present]
        chosen = q.argmax(1)
        taken = mine[tree.action[mine] == chosen[inverse]]
        value[tree.parent[taken]] += value[taken]
    return float(value[levels[0]].sum())


def efg_string(tree: GameTree) -> str:
    """The tree in Gambit's extensive-form format, for ``pyspiel.load_efg_game``.

    OpenSpiel's C++ solvers (``pyspiel.CFRSolver``, ``CFRPlusSolver``, ``nash_conv``) then run
    on the game as a C++ tree, far faster than through the Python game. The root is a chance
    node over the deals; action ``"a<k>"`` is env action index ``k``; information set
    ``"I<k>"`` is the tree's information set ``k`` (numbered per player in the file).
    """
    n = tree.num_players
    children: list[list[int]] = [[] for _ in range(tree.num_nodes)]
    for node, up in enumerate(tree.parent.tolist()):
        if up >= 0:
            children[up].append(node)
    local = np.zeros(len(tree.infoset_seat), np.int64)
    for seat in range(n):
        mine = np.flatnonzero(tree.infoset_seat == seat)
        local[mine] = np.arange(1, len(mine) + 1)
    players = " ".join(f'"player_{s}"' for s in range(n))
    roots = np.flatnonzero(tree.parent < 0)
    lines = [
        f'EFG 2 R "cockroach poker" {{ {players} }} ""',
        'c "deal" 1 "" { ' + " ".join(f'"d{k}" {float(tree.chance[r])!r}' for k, r in enumerate(roots)) + " } 0",
    ]
    outcome = 0
    stack = list(reversed(roots.tolist()))
    player, infoset, action, returns = tree.player.tolist(), tree.infoset.tolist(), tree.action.tolist(), tree.returns
    while stack:
        node = stack.pop()
        if player[node] < 0:
            outcome += 1
            lines.append(f't "" {outcome} "" {{ ' + " ".join(repr(float(v)) for v in returns[node]) + " }")
            continue
        kids = children[node]
        names = " ".join(f'"a{action[c]}"' for c in kids)
        lines.append(f'p "" {player[node] + 1} {local[infoset[node]]} "I{infoset[node]}" {{ {names} }} 0')
        stack.extend(reversed(kids))
    return "\n".join(lines) + "\n"


def best_response_values(profile: Any, config: GameConfig) -> np.ndarray:
    """(N,) float64: the best-response value of each seat against the profile's other seats (exact)."""
    return evaluate(profile, config).best_response_values


def nash_conv(profile: Any, config: GameConfig) -> float:
    """``sum_i (best response value_i - policy value_i)`` of the profile (exact; 0 at a Nash equilibrium)."""
    return evaluate(profile, config).nash_conv
