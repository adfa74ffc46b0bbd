"""The meta-game of a population and the solvers that give its meta-strategy (for PSRO).

A population of ``K`` policies plays a symmetric ``N``-player game: any ``N`` members
(repeats allowed) can sit at a table, and a member's payoff depends only on the
multiset of the others, not on their seats (seat rotation averages the seats out).
``MetaGame`` holds the estimated payoff of every member at every table (a multiset of
member indices) as seat-game counts and losses, so that payoffs carry their sample
size and a 95% interval. A member's payoff is minus its loss rate, the quantity the
arena measures; the game is constant-sum (one loser per game), so an equal agent's
payoff is ``-1/N``.

Against a mixed strategy ``x`` of the population (each opponent seat draws its member
independently from ``x``), member ``i`` expects

    u(i | x) = sum over multisets R of N-1 opponents of  P(R | x) * u_i(R + {i}),

with ``P(R | x)`` multinomial. ``nash_conv(x) = max_i u(i | x) - sum_i x_i u(i | x)`` is
the most a single deviating seat gains against the mixture in the meta-game: in loss
rate points, parity minus the best member's loss rate.

Solvers (``SOLVERS``), each ``solve(game) -> x``:

* ``regret_matching`` (the default): symmetric self-play of regret matching, its average
  strategy (Hart and Mas-Colell); a coarse-correlated-equilibrium learner;
* ``prd``: projected replicator dynamics (Lanctot et al. 2017, the PSRO paper): the
  replicator flow with every weight kept above ``floor / K``, averaged over the second
  half of its iterates (the flow cycles around the equilibria of cyclic games, so its
  last iterate can be far from one);
* ``alpharank``: single-population alpha-rank (Omidshafiei et al. 2019), the
  stationary distribution of a mutation-selection chain over the members;
* ``uniform``: every member equally (fictitious play over the population, PSRO's
  simplest meta-solver).

``python benchmarks/bench_psro.py --solvers CHECKPOINT`` measures them on a PSRO run's
meta-game. On the 4-player classic meta-game of ``configs/research/psro_4p.yaml`` after three
iterations (4 members, strongly cyclic: the random first member never loses at a table
of three copies of the third best response), the NashConv of their strategies was:
regret matching 0.013, uniform 0.093, PRD 0.081 (0.249 for its last iterate, the
textbook version), alpha-rank 0.113; so ``regret_matching`` is the default.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from training.algorithms.psro_config import META_SOLVERS
from training.evaluation.ratings import wilson_interval


@dataclass
class MetaGame:
    """Estimated payoffs of a symmetric ``num_players`` game between ``size`` population members."""

    num_players: int
    size: int = 0
    seat_games: dict[tuple[int, ...], dict[int, int]] = field(default_factory=dict)
    """Table (sorted member indices) -> member -> seat-games played there."""
    losses: dict[tuple[int, ...], dict[int, int]] = field(default_factory=dict)
    """Table -> member -> losses there."""

    # ------------------------------------------------------------------ tables

    def tables(self, size: int | None = None) -> list[tuple[int, ...]]:
        """Every table of ``size`` members (default: the current size)."""
        size = self.size if size is None else size
        return list(itertools.combinations_with_replacement(range(size), self.num_players))

    def missing_tables(self, size: int | None = None) -> list[tuple[int, ...]]:
        """The tables of ``size`` members without an estimate yet (after adding member ``size - 1``: those that seat
        it).
        """
        return [t for t in self.tables(size) if t not in self.seat_games]

    def record(self, table: tuple[int, ...], seat_games: dict[int, int], losses: dict[int, int]) -> None:
        """Add the results of games at ``table`` (per member: seat-games and losses)."""
        table = tuple(sorted(table))
        if len(table) != self.num_players or any(not 0 <= m < self.size for m in table):
            raise ValueError(
                f"table {table} is not allowed; expected {self.num_players} member indices from 0 to {self.size - 1}"
            )
        if set(seat_games) != set(table) or set(losses) != set(table):
            raise ValueError(f"results for members {sorted(seat_games)} do not match table {table}")
        games = self.seat_games.setdefault(table, {m: 0 for m in set(table)})
        lost = self.losses.setdefault(table, {m: 0 for m in set(table)})
        for m in set(table):
            games[m] += int(seat_games[m])
            lost[m] += int(losses[m])
        self._revision = getattr(self, "_revision", 0) + 1  # (the cached payoffs of _opponent_terms are stale now)

    def payoff(self, table: tuple[int, ...], member: int) -> float:
        """Minus the loss rate of ``member`` at ``table``."""
        games = self.seat_games[table][member]
        return -self.losses[table][member] / games if games else -1.0 / self.num_players

    def payoff_ci95(self, table: tuple[int, ...], member: int) -> tuple[float, float]:
        low, high = wilson_interval(self.losses[table][member], self.seat_games[table][member])
        return -high, -low

    # ------------------------------------------------------------------ expected payoffs

    def expected_payoffs(self, x: np.ndarray) -> np.ndarray:
        """``u(i | x)`` for every member ``i``: its payoff when each other seat draws a member from ``x``."""
        utilities, counts, coefficients = self._opponent_terms()
        probability = coefficients * np.prod(np.asarray(x, np.float64)[None, :] ** counts, axis=1)
        return utilities @ probability

    def nash_conv(self, x: np.ndarray) -> float:
        """Gain of the best pure deviation against ``x``: ``max_i u(i | x) - x . u(x)`` (0 at a symmetric Nash
        equilibrium).
        """
        u = self.expected_payoffs(x)
        return float(u.max() - np.dot(x, u))

    def _opponent_terms(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``U[i, R]`` (payoff of ``i`` against opponents ``R``), the member counts of each ``R`` and its multinomial
        coefficient.
        """
        # (not the number of tables: record may add games to a table already played)
        key = (
            self.size,
            getattr(self, "_revision", 0),
        )
        if getattr(self, "_cache_key", None) != key:
            missing = self.missing_tables()
            if missing:
                raise ValueError(
                    f"the meta-game of {self.size} members lacks the payoffs of tables "
                    f"{missing[:5]}{' ...' if len(missing) > 5 else ''}"
                )
            opponents, counts, coefficients = opponent_multisets(self.size, self.num_players - 1)
            utilities = np.array(
                [[self.payoff(tuple(sorted(rest + (i,))), i) for rest in opponents] for i in range(self.size)]
            )
            self._cache = (utilities, counts, coefficients)
            self._cache_key = key
        return self._cache

    # ------------------------------------------------------------------ JSON

    def to_dict(self) -> dict[str, Any]:
        return {
            "num_players": self.num_players,
            "size": self.size,
            "tables": [
                {
                    "members": list(t),
                    "seat_games": [self.seat_games[t][m] for m in sorted(set(t))],
                    "losses": [self.losses[t][m] for m in sorted(set(t))],
                }
                for t in sorted(self.seat_games)
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MetaGame:
        game = cls(int(data["num_players"]), int(data["size"]))
        for entry in data["tables"]:
            table = tuple(entry["members"])
            members = sorted(set(table))
            game.record(table, dict(zip(members, entry["seat_games"])), dict(zip(members, entry["losses"])))
        return game


@functools.lru_cache(maxsize=32)
def opponent_multisets(size: int, seats: int) -> tuple[list[tuple[int, ...]], np.ndarray, np.ndarray]:
    """The multisets ``R`` of ``seats`` members out of ``size`` (in a fixed order), each one's member counts and its
    multinomial coefficient: ``P(R | x) = coefficient * prod_i x_i ** counts_i`` when each seat draws from ``x``.
    """
    multisets = list(itertools.combinations_with_replacement(range(size), seats))
    counts = np.zeros((len(multisets), size), np.float64)
    for r, rest in enumerate(multisets):
        np.add.at(counts[r], list(rest), 1)
    coefficients = np.array([math.factorial(seats) / np.prod([math.factorial(int(c)) for c in row]) for row in counts])
    counts.flags.writeable = coefficients.flags.writeable = False  # (shared by every caller)
    return multisets, counts, coefficients


# ---------------------------------------------------------------------------- solvers


def projected_replicator_dynamics(
    game: MetaGame, iterations: int = 20_000, step: float = 0.5, floor: float = 1e-3
) -> np.ndarray:
    """Replicator flow ``x_i += step * x_i (u(i|x) - x.u)``, projected onto ``{x >= floor/K, sum x = 1}``; the mean of
    the second half of the iterates.

    ``step`` is in payoff units of loss rate (payoffs lie in [-1, 0]).
    """
    k = game.size
    x = np.full(k, 1.0 / k)
    lowest = floor / k
    total = np.zeros(k)
    for t in range(iterations):
        u = game.expected_payoffs(x)
        x = _project_simplex(x + step * x * (u - np.dot(x, u)), lowest)
        if t >= iterations // 2:
            total += x
    return total / total.sum()


def regret_matching(game: MetaGame, iterations: int = 20_000) -> np.ndarray:
    """The average strategy of regret matching in symmetric self-play (every seat plays the current ``x``)."""
    k = game.size
    x = np.full(k, 1.0 / k)
    regrets = np.zeros(k)
    total = np.zeros(k)
    for _ in range(iterations):
        total += x
        u = game.expected_payoffs(x)
        regrets += u - np.dot(x, u)
        positive = np.maximum(regrets, 0.0)
        x = positive / positive.sum() if positive.sum() > 0 else np.full(k, 1.0 / k)
    return total / total.sum()


def alpharank(game: MetaGame, alpha: float = 100.0, population_size: int = 50) -> np.ndarray:
    """Single-population alpha-rank: the stationary distribution over members of the mutation-selection chain.

    In a population of ``population_size`` players all playing ``s``, a mutant ``r``
    with ``k`` copies earns ``u(r | population less itself)`` and fixates with the Fermi
    probability of the classic Moran process at selection intensity ``alpha``.
    """
    k, m = game.size, population_size
    if k == 1:
        return np.ones(1)
    transition = np.zeros((k, k))
    for s in range(k):
        for r in range(k):
            if r == s:
                continue
            gaps = []
            for mutants in range(1, m):
                mutant_view = np.zeros(k)
                mutant_view[r], mutant_view[s] = (mutants - 1) / (m - 1), (m - mutants) / (m - 1)
                resident_view = np.zeros(k)
                resident_view[r], resident_view[s] = mutants / (m - 1), (m - mutants - 1) / (m - 1)
                gaps.append(game.expected_payoffs(mutant_view)[r] - game.expected_payoffs(resident_view)[s])
            exponents = np.cumsum(-alpha * np.asarray(gaps))
            fixation = 1.0 / (1.0 + np.exp(np.clip(exponents, -700, 700)).sum())
            transition[s, r] = fixation / (k - 1)
        transition[s, s] = 1.0 - transition[s].sum()
    values, vectors = np.linalg.eig(transition.T)
    pi = np.abs(np.real(vectors[:, np.argmin(np.abs(values - 1.0))]))
    return pi / pi.sum()


def uniform(game: MetaGame) -> np.ndarray:
    """An equal weight per member."""
    return np.full(game.size, 1.0 / game.size)


SOLVERS: dict[str, Callable[[MetaGame], np.ndarray]] = {
    "prd": projected_replicator_dynamics,
    "regret_matching": regret_matching,
    "alpharank": alpharank,
    "uniform": uniform,
}
if sorted(SOLVERS) != sorted(META_SOLVERS):  # the config accepts exactly the solvers there are
    raise ImportError(f"meta-solvers {sorted(SOLVERS)} differ from the names a config accepts, {sorted(META_SOLVERS)}")


def solve(name: str, game: MetaGame) -> np.ndarray:
    """The meta-strategy of ``game`` by solver ``name`` (one of ``SOLVERS``)."""
    if name not in SOLVERS:
        raise ValueError(f"meta_solver={name!r} is not allowed; expected one of {sorted(SOLVERS)}")
    return SOLVERS[name](game)


def _project_simplex(v: np.ndarray, lowest: float) -> np.ndarray:
    """Euclidean projection onto ``{x >= lowest, sum x = 1}``."""
    k = len(v)
    mass = 1.0 - k * lowest
    w = v - lowest
    u = np.sort(w)[::-1]
    cumulative = np.cumsum(u) - mass
    index = np.arange(1, k + 1)
    rho = np.nonzero(u - cumulative / index > 0)[0][-1]
    theta = cumulative[rho] / (rho + 1)
    return np.maximum(w - theta, 0.0) + lowest


# ---------------------------------------------------------------------------- weights against known exploiters


@dataclass
class ExploiterGame:
    """What known exploiters do against a population: exploiter ``j`` in one seat, ``N - 1`` members drawn from a
    mixture in the others.

    ``seat_games[j][R]`` and ``losses[j][R]`` count exploiter ``j``'s games and losses at the table of the multiset
    ``R``
    of ``N - 1`` member indices. Against a mixture ``x`` (each seat drawing its member from ``x``), exploiter ``j``
    loses ``sum_R P(R | x) L_j(R)``: the loss rate a best response reaches against that mixture, if ``j`` is one.
    """

    num_players: int
    size: int
    exploiters: int
    seat_games: list[dict[tuple[int, ...], int]] = field(default_factory=list)
    losses: list[dict[tuple[int, ...], int]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.seat_games = self.seat_games or [{} for _ in range(self.exploiters)]
        self.losses = self.losses or [{} for _ in range(self.exploiters)]

    def rests(self) -> list[tuple[int, ...]]:
        """Every multiset of ``N - 1`` members, in a fixed order."""
        return opponent_multisets(self.size, self.num_players - 1)[0]

    def record(self, exploiter: int, rest: tuple[int, ...], seat_games: int, losses: int) -> None:
        rest = tuple(sorted(rest))
        self.seat_games[exploiter][rest] = self.seat_games[exploiter].get(rest, 0) + int(seat_games)
        self.losses[exploiter][rest] = self.losses[exploiter].get(rest, 0) + int(losses)

    def loss_table(self) -> np.ndarray:
        """``L[j, R]``: exploiter ``j``'s loss rate at each table of ``rests()``."""
        missing = [(j, r) for j in range(self.exploiters) for r in self.rests() if not self.seat_games[j].get(r)]
        if missing:
            raise ValueError(f"the exploiter game lacks the tables {missing[:5]}{' ...' if len(missing) > 5 else ''}")
        return np.array(
            [[self.losses[j][r] / self.seat_games[j][r] for r in self.rests()] for j in range(self.exploiters)]
        )

    def draw_probabilities(self, x: np.ndarray) -> np.ndarray:
        """``P(R | x)`` for every ``R`` of ``rests()``, for each row of ``x`` (shape ``(..., K)``)."""
        _, counts, coefficients = opponent_multisets(self.size, self.num_players - 1)
        x = np.asarray(x, np.float64)
        return coefficients * np.prod(x[..., None, :] ** counts, axis=-1)

    def exploiter_loss_rates(self, x: np.ndarray) -> np.ndarray:
        """Each exploiter's loss rate against the mixture ``x`` (rows of ``x`` give rows of the result)."""
        return self.draw_probabilities(x) @ self.loss_table().T

    def to_dict(self) -> dict[str, Any]:
        return {
            "num_players": self.num_players,
            "size": self.size,
            "exploiters": self.exploiters,
            "tables": [
                {"exploiter": j, "members": list(r), "seat_games": self.seat_games[j][r], "losses": self.losses[j][r]}
                for j in range(self.exploiters)
                for r in sorted(self.seat_games[j])
            ],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ExploiterGame:
        game = cls(int(data["num_players"]), int(data["size"]), int(data["exploiters"]))
        for entry in data["tables"]:
            game.record(int(entry["exploiter"]), tuple(entry["members"]), entry["seat_games"], entry["losses"])
        return game


def cap_weights(x: np.ndarray, max_weight: float) -> np.ndarray:
    """Each row of ``x`` (non-negative, summing to 1) moved onto ``{w : sum w = 1, 0 <= w <= max_weight}``.

    Entries above the cap are set to it, and the mass they give up goes to the others in
    proportion to their weights (equally where they are all 0), until none is above the
    cap. Rows already inside are unchanged. Needs ``max_weight * K >= 1``.
    """
    x = np.array(x, np.float64, copy=True, ndmin=2)
    k = x.shape[-1]
    fixed = np.zeros(x.shape, bool)
    for _ in range(k):
        over = x > max_weight * (1 + 1e-12)
        if not over.any():
            break
        fixed |= over
        free_mass = 1.0 - max_weight * fixed.sum(-1, keepdims=True)
        free = np.where(fixed, 0.0, x)
        total = free.sum(-1, keepdims=True)
        even = np.where(fixed, 0.0, 1.0) / np.maximum((~fixed).sum(-1, keepdims=True), 1)
        share = np.where(total > 0, free / np.where(total > 0, total, 1.0), even)
        x = np.where(fixed, max_weight, share * free_mass)
    return x


def minimax_weights(
    game: ExploiterGame,
    costs: dict[str, np.ndarray] | None = None,
    limits: dict[str, float] | None = None,
    samples: int = 100_000,
    seed: int = 0,
    max_weight: float | None = None,
) -> np.ndarray:
    """The mixture ``x`` that maximises the smallest exploiter loss rate, ``max_x min_j L_j(x)``, with ``costs[b] . x
    <= limits[b]`` and, with ``max_weight``, no member's weight above it.

    ``costs[b]`` holds each member's loss rate in some match (one seat against N-1 copies of baseline ``b``): a
    mixture's loss rate there is linear in ``x``, so the limits keep the mixture as strong as asked against the
    baselines. ``L_j`` is a polynomial of degree ``N - 1``: the maximum is searched by ``samples`` Dirichlet draws over
    the simplex (and its vertices and centre), then refined by shrinking random perturbations of the best point.
    ``ValueError`` if no point meets the limits, naming the best each limit allows. With ``max_weight`` every candidate
    is moved inside the cap by ``cap_weights`` (it spreads a mixture over at least ``1 / max_weight`` members);
    ``ValueError`` unless ``0 < max_weight <= 1`` and ``max_weight * K >= 1``.
    """
    costs, limits = costs or {}, limits or {}
    k = game.size
    if max_weight is not None and not (0 < max_weight <= 1 and max_weight * k >= 1 - 1e-12):
        raise ValueError(
            f"a largest member weight of {max_weight} is not allowed for {k} members; expected a value in "
            f"[1/{k}, 1] = [{1 / k:.4g}, 1]"
        )
    capped = (lambda y: cap_weights(y, max_weight)) if max_weight is not None else (lambda y: y)
    rng = np.random.default_rng(seed)
    names = sorted(limits)
    cost = np.array([costs[b] for b in names]).reshape(len(names), k)
    bound = np.array([limits[b] for b in names])

    def score(x: np.ndarray) -> np.ndarray:
        worst = game.exploiter_loss_rates(x).min(axis=-1)
        feasible = (x @ cost.T <= bound + 1e-12).all(axis=-1) if names else np.ones(len(x), bool)
        return np.where(feasible, worst, -np.inf)

    candidates = capped(np.vstack([np.eye(k), np.full((1, k), 1.0 / k), rng.dirichlet(np.full(k, 0.7), size=samples)]))
    scores = np.concatenate([score(chunk) for chunk in np.array_split(candidates, max(1, len(candidates) // 20_000))])
    if not np.isfinite(scores).any():
        best = {b: float(np.min(costs[b])) for b in names}
        cap = f" with no weight above {max_weight}" if max_weight is not None else ""
        raise ValueError(
            f"no mixture of these members{cap} meets the limits {limits}; the lowest loss rate each allows is "
            f"{best} (one member alone)"
        )
    x, best = candidates[int(np.argmax(scores))], float(np.max(scores))
    for scale in np.geomspace(0.3, 0.003, 12):
        trial = np.abs(x + rng.normal(0.0, scale, size=(2000, k)))
        trial = capped(trial / trial.sum(axis=1, keepdims=True))
        trial_scores = score(trial)
        if trial_scores.max() > best:
            x, best = trial[int(np.argmax(trial_scores))], float(trial_scores.max())
    return x
