"""Honest numbers for the arena: Wilson score intervals and OpenSkill (Plackett-Luce) ratings."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054
"""Two-sided 95% quantile of the standard normal distribution."""


def wilson_interval(successes: int, trials: int, z: float = Z95) -> tuple[float, float]:
    """Wilson score interval of a binomial proportion (default 95%).

    Unlike the normal approximation it stays inside [0, 1] and is sensible for rates
    near 0 or 1 and small samples. ``trials == 0`` gives the uninformative ``(0, 1)``.
    """
    if trials < 0 or not 0 <= successes <= trials:
        raise ValueError(
            f"wilson_interval({successes!r}, {trials!r}) is not allowed; expected 0 <= successes <= trials"
        )
    if trials == 0:
        return 0.0, 1.0
    p = successes / trials
    z2 = z * z
    centre = (p + z2 / (2 * trials)) / (1 + z2 / trials)
    half = z * math.sqrt(p * (1 - p) / trials + z2 / (4 * trials * trials)) / (1 + z2 / trials)
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == trials else min(1.0, centre + half)
    return low, high


def games_for_width(rate: float, width: float = 0.02, z: float = Z95) -> int:
    """The fewest games whose Wilson interval (default 95%) around a loss rate of ``rate`` is narrower than ``width``.

    The interval is widest at 0.5; at parity ``1/N`` this is the number of games that pins an agent's loss rate
    against ``N - 1`` copies to within ``width`` (9,600 games for 2 points at parity 0.5, 7,201 at 0.25).
    """
    if not 0 < rate < 1 or not 0 < width < 1:
        raise ValueError(f"games_for_width({rate!r}, {width!r}) is not allowed; expected a rate and a width in (0, 1)")

    def narrow(games: int) -> bool:
        low, high = wilson_interval(round(rate * games), games, z)
        return high - low < width

    high = max(1, math.ceil(z * z * rate * (1 - rate) / (width / 2) ** 2))
    while not narrow(high):
        high *= 2
    low = 0
    while high - low > 1:  # narrow(high) holds; the width shrinks as the games grow
        middle = (low + high) // 2
        low, high = (low, middle) if narrow(middle) else (middle, high)
    return high


@dataclass
class Rating:
    """An agent's OpenSkill rating: mean skill ``mu``, uncertainty ``sigma`` and the
    conservative ``ordinal`` (``mu - 3 sigma``) used to rank.
    """

    name: str
    mu: float
    sigma: float
    games: int

    @property
    def ordinal(self) -> float:
        return self.mu - 3.0 * self.sigma

    def to_dict(self) -> dict:
        return {"name": self.name, "mu": self.mu, "sigma": self.sigma, "ordinal": self.ordinal, "games": self.games}


def plackett_luce_ratings(names: Sequence[str], games: Iterable[tuple[Sequence[str], str | None]]) -> list[Rating]:
    """Rate agents from game results with OpenSkill's Plackett-Luce model.

    Each game is ``(participants, loser)``: the distinct agents at the table and the
    one who lost (``None`` for a game without a loser, which is skipped). The loser
    ranks last, everyone else shares first place. Games are rated in order. Returns
    the ratings sorted best first (by ordinal).
    """
    from openskill.models import PlackettLuce

    model = PlackettLuce()
    ratings = {name: model.rating(name=name) for name in names}
    counts = {name: 0 for name in names}
    for participants, loser in games:
        if loser is None:
            continue
        if len(set(participants)) != len(participants):
            raise ValueError(f"a rated game needs distinct participants, got {list(participants)}")
        teams = [[ratings[p]] for p in participants]
        ranks = [2 if p == loser else 1 for p in participants]
        for p, (new,) in zip(participants, model.rate(teams, ranks=ranks)):
            ratings[p] = new
            counts[p] += 1
    out = [Rating(name, float(r.mu), float(r.sigma), counts[name]) for name, r in ratings.items()]
    return sorted(out, key=lambda r: -r.ordinal)
