"""The arena: play many games between agents and report numbers you can trust.

```python
from cockroach_env import GameConfig
from training.evaluation.arena import play_match, play_league

result = play_match(["heuristic", "random*3"], GameConfig(num_players=4), games=1000, seed=0)
print(result.table())
result.to_json()       # the schema below
```

Agents
------
A lineup lists one agent per seat. Each entry is a baseline name (``random``,
``honest``, ``bluffer``, ``heuristic``), an importable ``module:Class`` (built as
``Class(config, seed=seed)``), a checkpoint path or shipped checkpoint name (loaded
through ``training.core.checkpoint.load_agent``, which imports torch only then), a
Stable-Baselines3 model ``path.zip`` (``training.evaluation.sb3_agent.load_sb3_agent``), or an
agent object. ``NAME*K`` repeats an entry ``K`` times. Equal entries are one
*entrant*: one agent object playing all of its seats, reported as one row.

Fairness
--------
* **Seat rotation.** Games come in sets of ``N`` (the player count): in rotation ``r``
  lineup entry ``i`` sits at seat ``(i + r) % N``, so every entry plays every seat
  equally often; ``games`` is rounded up to a multiple of ``N``.
* **Duplicate deals** (default). The ``N`` games of a set replay the same shuffled
  deal (``engine.random_deal`` drawn from ``numpy.random.default_rng([seed, d])`` for
  deal ``d``), so luck of the cards cancels between entries. ``duplicate=False``
  deals every game afresh (still rotating seats).
* **Reproducible.** Deals and the agents' generators derive from ``seed`` alone.
* **Mixtures** (``training.core.mixture.MixtureAgent``, e.g. a PSRO checkpoint) draw one
  member per game and lineup entry, with the mixture's weights, from a generator of
  ``(seed, game, entry)``; that member plays the entry's every decision in the game.

Engines
-------
``engine="batched"`` steps up to ``batch_size`` games at once on
``cockroach_env.batched.BatchedGames`` and calls ``act_batch`` once per entrant and
step; ``engine="aec"`` plays the same games on the PettingZoo AEC env, calling
``act`` for one decision at a time; ``"auto"`` (default) takes the batched engine when
every entrant has ``supports_batch`` and the module exists. Both advance the games of
a batch in lock step, one decision per game per step, so an agent whose
``act_batch`` equals ``act`` row by row sees the same observations in the same order
and the two engines give identical results.

Statistics
----------
Per entrant: seat-games played, losses, loss rate with a 95% Wilson interval, loss
reasons, and behaviour read from the moves and the cards they reveal: the share of
false claims when offering and when passing (a claim is judged against the card
revealed at the end of its round), call accuracy, peek rate (peeks per card
received), and cards collected per game (cards taken at the end of a round).
A game cut by ``config.max_steps`` has no loser: the loss rate and its interval are
over the seat-games of the games that had one (``decided``), so that the loss rates
of the seats average to parity, ``1 / num_players``, as in a match without cuts.

JSON schema (``MatchResult.to_json()``)
---------------------------------------
```
{
  "schema": "cockroach-eval/1",
  "mode": "match" | "league",
  "config": {GameConfig fields},
  "seed": int, "engine": "batched" | "aec", "duplicate": bool,
  "games": int,                      # games played (a multiple of the player count)
  "truncated": int,                  # games ended by max_steps without a loser
  "parity": float,                   # 1 / num_players, the loss rate of an equal agent
  "seconds": float,
  "lineup": [str, ...],              # entrant name of each lineup entry
  "agents": [{
      "name": str, "spec": str, "seats": int,   # seats: lineup entries of this entrant
      "games": int,                  # seat-games (games x seats)
      "decided": int,                # seat-games of the games with a loser (not cut by max_steps)
      "losses": int, "loss_rate": float | null,   # losses / decided (null if decided is 0)
      "loss_rate_ci95": [float, float],           # Wilson, over the decided seat-games
      "loss_reasons": {"same_type": int, "empty_hand": int, "rainbow": int},
      "behaviour": {
          "offers": int, "false_offer_rate": float | null,
          "passes": int, "false_pass_rate": float | null,
          "calls": int, "call_accuracy": float | null,
          "calls_on_others": int,    # calls on claims by another entrant (not its own other seats)
          "call_accuracy_on_others": float | null,
          "peeks": int, "peek_rate": float | null,
          "cards_collected_per_game": float | null
      }
  }, ...],
  "league": {                        # league mode only
      "tables": [[str, ...], ...],   # the lineups played
      "ratings": [{"name", "mu", "sigma", "ordinal", "games"}, ...]   # best first
  }
}
```
"""

from __future__ import annotations

import copy
import importlib
import itertools
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from cockroach_env.config import GameConfig
from cockroach_env.encoding import encoding_for
from cockroach_env.engine import LOSS_REASONS, Deal, random_deal
from training.core.config import MAX_GAMES
from training.evaluation.lineup import ArenaError, Entrant, build_entrants, expand_lineup, label_of
from training.evaluation.lineup import resolve_agent as resolve_agent  # (part of the arena's public API)
from training.evaluation.ratings import Rating, plackett_luce_ratings, wilson_interval
from training.evaluation.report import format_result

SCHEMA = "cockroach-eval/1"
ENGINES = ("auto", "batched", "aec")


# ---------------------------------------------------------------------------- schedule
@dataclass(frozen=True)
class ScheduledGame:
    """Game ``index``: deal ``deal`` with lineup entry ``i`` at seat ``(i + rotation) % N``."""

    index: int
    deal: int
    rotation: int


def schedule(num_players: int, games: int, duplicate: bool = True) -> list[ScheduledGame]:
    """The games of a match: ``games`` rounded up to whole rotations; game ``g`` has rotation ``g % N``."""
    if isinstance(games, bool) or not isinstance(games, (int, np.integer)) or not 1 <= games <= MAX_GAMES:
        raise ArenaError(f"games={games!r} is not allowed; expected an integer from 1 to {MAX_GAMES:,}")
    total = math.ceil(games / num_players) * num_players
    return [ScheduledGame(g, g // num_players if duplicate else g, g % num_players) for g in range(total)]


def deal_for(config: GameConfig, seed: int, deal: int) -> Deal:
    """Deal number ``deal`` of a match seeded ``seed``."""
    return random_deal(config, np.random.default_rng([seed, deal]))


def seat_entries(num_players: int, rotation: int) -> list[int]:
    """The lineup entry sitting at each seat under ``rotation``."""
    return [(seat - rotation) % num_players for seat in range(num_players)]


# ---------------------------------------------------------------------------- statistics
@dataclass
class GameRecord:
    """One game: its schedule entry, the losing seat (``None`` if truncated) and the decisions taken."""

    index: int
    deal: int
    rotation: int
    loser_seat: int | None
    loss_reason: str | None
    steps: int
    table: int = 0
    """League: index of the table (lineup) the game was played at."""


class Behaviour:
    """Per-entrant move counts, fed with the actions of a batch of games step by step.

    The card in play is known from the offer that started its round, so each claim
    is judged right away: the verdict the public reveal gives at the end of the round.
    """

    FIELDS = (
        "offers",
        "false_offers",
        "passes",
        "false_passes",
        "calls",
        "right_calls",
        "calls_on_others",
        "right_calls_on_others",
        "peeks",
        "collected",
    )

    def __init__(self, config: GameConfig, games: int, entrants: int):
        self.enc = encoding_for(config)
        self.truth = np.array(config.cards.truth, dtype=bool)
        self.card = np.zeros(games, np.int64)
        self.claim = np.zeros(games, np.int64)
        # Entrant of the latest passer of each game's card in play.
        self.passer = np.zeros(games, np.int64)
        self.counts = {name: np.zeros(entrants, np.int64) for name in self.FIELDS}
        # Callables ``(games, actions)`` told of every decision, in game order (``training.evaluation.game_saving``).
        self.listeners: list = []

    def update(self, games: np.ndarray, entrants: np.ndarray, actions: np.ndarray) -> None:
        """One decision in each of ``games``, taken by ``entrants`` (all arrays of one length)."""
        for listener in self.listeners:
            listener(games, actions)
        enc, counts = self.enc, self.counts
        offer = actions < enc.respond_start
        respond = (actions >= enc.respond_start) & (actions < enc.pass_start)
        passing = (actions >= enc.pass_start) & (actions < enc.place_start)
        if offer.any():
            g, a, who = games[offer], actions[offer], entrants[offer]
            self.card[g] = a // (enc.num_targets * enc.num_claims)
            self.claim[g] = a % enc.num_claims
            self.passer[g] = who
            np.add.at(counts["offers"], who, 1)
            np.add.at(counts["false_offers"], who, ~self.truth[self.card[g], self.claim[g]])
        if passing.any():
            g, who = games[passing], entrants[passing]
            self.claim[g] = (actions[passing] - enc.pass_start) % enc.num_claims
            self.passer[g] = who
            np.add.at(counts["passes"], who, 1)
            np.add.at(counts["false_passes"], who, ~self.truth[self.card[g], self.claim[g]])
        if respond.any():
            kind = actions - enc.respond_start
            np.add.at(counts["peeks"], entrants[respond & (kind == 2)], 1)
            call = respond & (kind < 2)
            if call.any():
                g, who = games[call], entrants[call]
                right = (kind[call] == 0) == self.truth[self.card[g], self.claim[g]]
                np.add.at(counts["calls"], who, 1)
                np.add.at(counts["right_calls"], who, right)
                # the claim of another entrant (at a table of copies most calls judge a copy)
                other = self.passer[g] != who
                np.add.at(counts["calls_on_others"], who[other], 1)
                np.add.at(counts["right_calls_on_others"], who[other], right[other])
                # a right call gives the card to the latest passer, a wrong one to the caller
                np.add.at(counts["collected"], np.where(right, self.passer[g], who), 1)

    def counts_of(self, entrant: int) -> dict[str, int]:
        return {name: int(values[entrant]) for name, values in self.counts.items()}


def behaviour_summary(counts: dict[str, int], seat_games: int) -> dict[str, Any]:
    """The behaviour statistics of raw ``Behaviour`` counts (rates are ``None`` without data)."""
    rate = lambda num, den: (num / den) if den else None  # noqa: E731
    return {
        "offers": counts["offers"],
        "false_offer_rate": rate(counts["false_offers"], counts["offers"]),
        "passes": counts["passes"],
        "false_pass_rate": rate(counts["false_passes"], counts["passes"]),
        "calls": counts["calls"],
        "call_accuracy": rate(counts["right_calls"], counts["calls"]),
        "calls_on_others": counts["calls_on_others"],
        "call_accuracy_on_others": rate(counts["right_calls_on_others"], counts["calls_on_others"]),
        "peeks": counts["peeks"],
        "peek_rate": rate(counts["peeks"], counts["calls"] + counts["peeks"]),
        "cards_collected_per_game": rate(counts["collected"], seat_games),
    }


@dataclass
class AgentReport:
    """One entrant's results: ``games`` counts seat-games (games x seats held), ``decided`` those of
    the games that had a loser (not cut by ``max_steps``): the loss rate's trials.
    """

    name: str
    spec: str
    seats: int
    games: int
    decided: int
    losses: int
    loss_reasons: dict[str, int]
    counts: dict[str, int]
    """Raw ``Behaviour`` counts."""

    @property
    def loss_rate(self) -> float:
        """Losses per decided seat-game (NaN when every game was cut by ``max_steps``)."""
        return self.losses / self.decided if self.decided else float("nan")

    @property
    def loss_rate_ci95(self) -> tuple[float, float]:
        return wilson_interval(self.losses, self.decided)

    @property
    def behaviour(self) -> dict[str, Any]:
        return behaviour_summary(self.counts, self.games)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "spec": self.spec,
            "seats": self.seats,
            "games": self.games,
            "decided": self.decided,
            "losses": self.losses,
            "loss_rate": self.loss_rate if self.decided else None,
            "loss_rate_ci95": list(self.loss_rate_ci95),
            "loss_reasons": dict(self.loss_reasons),
            "behaviour": self.behaviour,
        }


@dataclass
class MatchResult:
    """Outcome of a match (or of a league, ``league`` set): per-entrant reports and every game."""

    config: GameConfig
    seed: int
    engine: str
    duplicate: bool
    lineup: list[str]
    agents: list[AgentReport]
    records: list[GameRecord]
    seconds: float
    league: dict[str, Any] | None = None
    ratings: list[Rating] = field(default_factory=list)

    @property
    def games(self) -> int:
        return len(self.records)

    @property
    def truncated(self) -> int:
        return sum(r.loser_seat is None for r in self.records)

    def report(self, name: str) -> AgentReport:
        for agent in self.agents:
            if agent.name == name:
                return agent
        raise KeyError(f"no agent named {name!r} in this result; agents: {[a.name for a in self.agents]}")

    def to_json(self) -> dict[str, Any]:
        out = {
            "schema": SCHEMA,
            "mode": "league" if self.league is not None else "match",
            "config": self.config.to_dict(),
            "seed": self.seed,
            "engine": self.engine,
            "duplicate": self.duplicate,
            "games": self.games,
            "truncated": self.truncated,
            "parity": 1.0 / self.config.num_players,
            "seconds": self.seconds,
            "lineup": list(self.lineup),
            "agents": [a.to_json() for a in self.agents],
        }
        if self.league is not None:
            out["league"] = dict(self.league, ratings=[r.to_dict() for r in self.ratings])
        return out

    def table(self) -> str:
        """A readable terminal table."""
        return format_result(self)


# ---------------------------------------------------------------------------- playing
def batched_available() -> bool:
    """Whether the batched engine (``cockroach_env.batched``) imports here."""
    try:
        importlib.import_module("cockroach_env.batched")
    except ImportError:
        return False
    return True


def play_match(
    lineup: Sequence[Any],
    config: GameConfig | None = None,
    games: int = 1000,
    seed: int = 0,
    duplicate: bool = True,
    engine: str = "auto",
    batch_size: int = 1024,
    progress: bool | None = False,
    on_decisions: Any = None,
) -> MatchResult:
    """Play ``games`` (rounded up to whole seat rotations) between the agents of ``lineup``.

    ``lineup`` holds one entry per seat (``NAME*K`` repeats); see the module docstring
    for entries, fairness, engines and the statistics reported. ``on_decisions``, if
    given, is called with ``(games, actions)`` arrays for every decision taken (game
    indices of the schedule and their action indices, in order within each game).
    """
    config = config if config is not None else GameConfig()
    seed = _check_arguments(config, seed, duplicate)
    if engine not in ENGINES:
        raise ArenaError(f"engine={engine!r} is not allowed; expected one of {list(ENGINES)}")
    if isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
        raise ArenaError(f"batch_size={batch_size!r} is not allowed; expected a positive integer")
    lineup = expand_lineup(list(lineup))
    entrants, of_entry = build_entrants(lineup, config, seed)
    plan = schedule(config.num_players, games, duplicate)
    all_batch = all(e.supports_batch for e in entrants)
    if engine == "auto":
        engine = "batched" if all_batch and batched_available() else "aec"
    if engine == "batched":
        if not batched_available():
            raise ArenaError("engine='batched' needs cockroach_env.batched, which is not available")
        missing = [e.name for e in entrants if not e.supports_batch]
        if missing:
            raise ArenaError(f"engine='batched' needs agents with a vectorized act_batch; not supported by {missing}")
    started = time.perf_counter()
    behaviour = Behaviour(config, len(plan), len(entrants))
    if on_decisions is not None:
        behaviour.listeners.append(on_decisions)
    records: list[GameRecord] = []
    bar = _progress_bar(len(plan), progress)
    runner = _run_batched if engine == "batched" else _run_aec
    for start in range(0, len(plan), batch_size):
        chunk = plan[start : start + batch_size]
        records += runner(config, seed, chunk, entrants, np.array(of_entry), behaviour, bar)
    if bar is not None:
        bar.close()
    seconds = time.perf_counter() - started
    return MatchResult(
        config,
        seed,
        engine,
        duplicate,
        [entrants[k].name for k in of_entry],
        _reports(config, entrants, of_entry, records, behaviour),
        records,
        seconds,
    )


def _check_arguments(config: Any, seed: Any, duplicate: Any) -> int:
    """The arguments every game of a match or league derives from, checked before anything is built or played; the seed
    as an int.
    """
    if not isinstance(config, GameConfig):
        raise ArenaError(f"config={config!r} is not allowed; expected a GameConfig")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2**64:
        raise ArenaError(
            f"seed={seed!r} is not allowed; expected an integer from 0 to 2**64 - 1 (the deals and the "
            f"agents' generators derive from it)"
        )
    if not isinstance(duplicate, (bool, np.bool_)):
        raise ArenaError(f"duplicate={duplicate!r} is not allowed; expected True or False")
    return int(seed)


def _progress_bar(total: int, progress: bool | None):
    if progress is False:
        return None
    from training.core.progress import progress_bar

    if progress is None:  # (tqdm's own choice: a bar on a terminal only)
        from tqdm import tqdm

        return tqdm(total=total, unit="game", disable=None, leave=False)
    return progress_bar(total, "game", progress, leave=False)


def _reports(
    config: GameConfig, entrants: list[Entrant], of_entry: list[int], records: list[GameRecord], behaviour: Behaviour
) -> list[AgentReport]:
    n = config.num_players
    losses = [0] * len(entrants)
    reasons = [{r: 0 for r in LOSS_REASONS} for _ in entrants]
    decided = sum(record.loser_seat is not None for record in records)
    for record in records:
        if record.loser_seat is None:
            continue
        entrant = of_entry[seat_entries(n, record.rotation)[record.loser_seat]]
        losses[entrant] += 1
        reasons[entrant][record.loss_reason] += 1
    out = []
    for k, entrant in enumerate(entrants):
        seat_games = len(records) * len(entrant.entries)
        out.append(
            AgentReport(
                entrant.name,
                entrant.spec,
                len(entrant.entries),
                seat_games,
                decided * len(entrant.entries),
                losses[k],
                reasons[k],
                behaviour.counts_of(k),
            )
        )
    return out


def _illegal(entrant: Entrant, seat: int, game: int, action: Any, config: GameConfig, mask: np.ndarray) -> ArenaError:
    """The error for an agent's illegal action, with the move it decodes to."""
    from cockroach_env.env import raw_env

    enc = encoding_for(config)
    try:
        index = int(action)
        if index != action:
            raise ValueError
    except (TypeError, ValueError):
        return ArenaError(
            f"agent {entrant.name!r} (seat player_{seat}, game {game}) returned {action!r}; expected an "
            f"integer action in [0, {enc.num_actions})"
        )
    if not 0 <= index < enc.num_actions:
        return ArenaError(
            f"agent {entrant.name!r} (seat player_{seat}, game {game}) returned action {index}, out of range "
            f"[0, {enc.num_actions})"
        )
    move = raw_env(config=config).decode(index, actor=f"player_{seat}")
    legal = int(np.count_nonzero(mask))
    return ArenaError(
        f"agent {entrant.name!r} (seat player_{seat}, game {game}) returned illegal action {index} = {move}; "
        f"the action mask allows {legal} action(s) now"
    )


def _legal_action(action: Any, mask: np.ndarray) -> bool:
    try:
        index = int(action)
    except (TypeError, ValueError):
        return False
    return index == action and 0 <= index < len(mask) and bool(mask[index])


def _mixture_members(config: GameConfig, seed: int, chunk, entrants: list[Entrant], of_entry: np.ndarray) -> np.ndarray:
    """``(G, N)``: the member of a mixture entrant sitting at each seat of each game of ``chunk`` (-1 for other
    entrants).
    """
    from training.core.mixture import is_mixture

    n = config.num_players
    members = np.full((len(chunk), n), -1, np.int64)
    mixtures = [k for k, e in enumerate(entrants) if is_mixture(e.agent)]
    if not mixtures:
        return members
    for g, game in enumerate(chunk):
        for seat, entry in enumerate(seat_entries(n, game.rotation)):
            entrant = entrants[of_entry[entry]]
            if of_entry[entry] in mixtures:
                members[g, seat] = entrant.agent.draw_member(np.random.default_rng([seed, 104729, game.index, entry]))
    return members


def _run_aec(config, seed, chunk, entrants, of_entry, behaviour, bar) -> list[GameRecord]:
    """Play a chunk of games on AEC envs in lock step: one decision per unfinished game per step."""
    from cockroach_env.env import raw_env

    n = config.num_players
    envs = []
    for game in chunk:
        env = raw_env(config=config)
        env.reset(options=reset_options(deal_for(config, seed, game.deal), config, env.possible_agents))
        envs.append(env)
    seat_entrant = np.array([of_entry[seat_entries(n, g.rotation)] for g in chunk])  # (G, N)
    seat_member = _mixture_members(config, seed, chunk, entrants, of_entry)
    records: list[GameRecord | None] = [None] * len(chunk)
    active = list(range(len(chunk)))
    while active:
        games, actors, actions = [], [], []
        still = []
        for k in active:
            env = envs[k]
            seat = env.game.current
            entrant = entrants[seat_entrant[k, seat]]
            observation = env.observe(env.agent_selection)
            member = seat_member[k, seat]
            action = (entrant.agent.members[member] if member >= 0 else entrant.agent).act(observation)
            if not _legal_action(action, observation["action_mask"]):
                raise _illegal(entrant, seat, chunk[k].index, action, config, observation["action_mask"])
            env.step(int(action))
            games.append(chunk[k].index)
            actors.append(seat_entrant[k, seat])
            actions.append(int(action))
            game_over = env.game.over or any(env.truncations.values())
            if game_over:
                records[k] = GameRecord(
                    chunk[k].index,
                    chunk[k].deal,
                    chunk[k].rotation,
                    env.game.loser,
                    env.game.loss_reason,
                    env.game.steps,
                )
            else:
                still.append(k)
        behaviour.update(np.array(games), np.array(actors), np.array(actions))
        if bar is not None:
            bar.update(len(active) - len(still))
        active = still
    return records  # type: ignore[return-value]


def _run_batched(config, seed, chunk, entrants, of_entry, behaviour, bar) -> list[GameRecord]:
    """Play a chunk of games on ``BatchedGames``; games that end are left idle until all have ended."""
    from cockroach_env.batched import BatchedGames

    n = config.num_players
    size = len(chunk)
    games = BatchedGames(config, batch_size=size, seed=seed)
    step = games.reset(deals=[deal_for(config, seed, g.deal) for g in chunk])
    seat_entrant = np.array([of_entry[seat_entries(n, g.rotation)] for g in chunk])
    seat_member = _mixture_members(config, seed, chunk, entrants, of_entry)
    records: list[GameRecord | None] = [None] * size
    active = np.ones(size, dtype=bool)
    steps = np.zeros(size, np.int64)
    rows = np.arange(size)
    while active.any():
        to_act = step.to_act
        acting = seat_entrant[rows, to_act]
        actions = step.action_mask.argmax(1).astype(np.int64)  # idle games: any legal action
        for k, entrant in enumerate(entrants):
            mine = np.flatnonzero(active & (acting == k))
            if mine.size == 0:
                continue
            chosen = _batch_actions(
                entrant.agent, seat_member[mine, to_act[mine]], step.observation[mine], step.action_mask[mine]
            )
            if chosen.shape != (mine.size,):
                raise ArenaError(
                    f"agent {entrant.name!r}: act_batch returned shape {chosen.shape} for {mine.size} "
                    f"observations; expected ({mine.size},)"
                )
            for j, b in enumerate(mine):
                if not _legal_action(chosen[j], step.action_mask[b]):
                    raise _illegal(entrant, int(to_act[b]), chunk[b].index, chosen[j], config, step.action_mask[b])
            actions[mine] = chosen
        live = np.flatnonzero(active)
        behaviour.update(live + chunk[0].index, acting[live], actions[live])
        step = games.step(actions)
        steps[live] += 1
        ended = live[step.done[live]]
        for b in ended:
            loser = int(step.loser[b])
            reason = LOSS_REASONS[int(step.loss_reason[b])] if loser >= 0 else None
            records[b] = GameRecord(
                chunk[b].index, chunk[b].deal, chunk[b].rotation, loser if loser >= 0 else None, reason, int(steps[b])
            )
        active[ended] = False
        if bar is not None and ended.size:
            bar.update(int(ended.size))
    return records  # type: ignore[return-value]


def _batch_actions(agent: Any, members: np.ndarray, observations: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """``agent.act_batch``, or for a mixture each drawn member's ``act_batch`` on its own rows (``members``: -1 for a
    plain agent).
    """
    if members.size == 0 or members[0] < 0:
        return np.asarray(agent.act_batch(observations, masks))
    chosen = np.zeros(len(members), np.int64)
    for member in np.unique(members):
        rows = np.flatnonzero(members == member)
        chosen[rows] = np.asarray(agent.members[member].act_batch(observations[rows], masks[rows])).reshape(-1)
    return chosen


def reset_options(deal: Deal, config: GameConfig, agents: Sequence[str]) -> dict[str, Any]:
    """AEC ``reset`` options that replay ``deal`` exactly (cards not dealt are the removed ones)."""
    names = config.cards.identities
    by_name = lambda row: {names[c]: int(k) for c, k in enumerate(row) if k}  # noqa: E731
    return {
        "starter": agents[deal.starter],
        "hands": {agent: by_name(row) for agent, row in zip(agents, deal.hands)},
        "collections": {agent: by_name(row) for agent, row in zip(agents, deal.collections)},
        "penalty_deck": [names[c] for c in deal.penalty_deck],
    }


# ---------------------------------------------------------------------------- league
def play_league(
    pool: Sequence[Any],
    config: GameConfig | None = None,
    games: int = 200,
    seed: int = 0,
    duplicate: bool = True,
    engine: str = "auto",
    batch_size: int = 1024,
    progress: bool | None = False,
    workers: Any = None,
) -> MatchResult:
    """Round robin: a match of ``games`` games at every table of ``num_players`` distinct agents of ``pool``.

    Returns per-agent reports pooled over all tables, and OpenSkill Plackett-Luce
    ratings over every game (the loser last, the others tied), rated in schedule order.
    ``workers`` (a ``training.core.distributed`` executor) plays the tables as parallel tasks,
    with the same result; every agent of ``pool`` must then be loadable where the tasks run.
    An agent object of ``pool`` sits at each table as a copy of it as given (a task gets a
    pickled one), so that no table's draws depend on the tables played before it.
    """
    config = config if config is not None else GameConfig()
    seed = _check_arguments(config, seed, duplicate)
    pool = expand_lineup(list(pool))
    names = [p if isinstance(p, str) else label_of(p) for p in pool]
    if len(set(names)) != len(names):
        raise ArenaError(f"the league pool repeats agents {names}; list each agent once")
    if len(pool) < config.num_players:
        raise ArenaError(
            f"a league of {config.num_players}-player games needs at least {config.num_players} agents in the "
            f"pool, got {len(pool)}"
        )
    tables = list(itertools.combinations(range(len(pool)), config.num_players))
    started = time.perf_counter()
    played: list[tuple[list[str], str | None]] = []
    records: list[GameRecord] = []
    totals: dict[str, AgentReport] = {}
    engines = set()
    n = config.num_players
    jobs = []
    for t, table in enumerate(tables):
        table_seed = int(np.random.SeedSequence([seed, t]).generate_state(1)[0] % 2**31)
        jobs.append(
            (
                [pool[i] for i in table],
                config,
                games,
                table_seed,
                duplicate,
                engine,
                batch_size,
                progress if workers is None else False,
            )
        )
    results = (
        workers.map(play_match, jobs)
        if workers is not None
        else (play_match(_table_copies(job[0]), *job[1:]) for job in jobs)
    )
    for t, (table, result) in enumerate(zip(tables, results)):
        engines.add(result.engine)
        table_names = [names[i] for i in table]
        for record in result.records:
            seats = seat_entries(n, record.rotation)
            loser = None if record.loser_seat is None else table_names[seats[record.loser_seat]]
            played.append((table_names, loser))
            record.table = t
            records.append(record)
        for name, report in zip(table_names, result.agents):
            _accumulate(totals, name, report)
    ratings = plackett_luce_ratings(names, played)
    agents = [totals[name] for name in names]
    league = {"tables": [[names[i] for i in table] for table in tables]}
    engine_used = engines.pop() if len(engines) == 1 else "mixed"
    return MatchResult(
        config, seed, engine_used, duplicate, names, agents, records, time.perf_counter() - started, league, ratings
    )


def _table_copies(lineup: list[Any]) -> list[Any]:
    """A league table's lineup with each agent object copied as it was given (names stay names), as a Ray task receives
    it.
    """
    copies = []
    for agent in lineup:
        try:
            copies.append(agent if isinstance(agent, str) else copy.deepcopy(agent))
        except Exception as error:  # noqa: BLE001 - any failure to copy is reported with the agent
            raise ArenaError(
                f"agent {label_of(agent)!r} cannot be copied for each league table ({type(error).__name__}: "
                f"{error}); expected an agent that copy.deepcopy can copy, or its name or checkpoint path"
            ) from error
    return copies


def _accumulate(totals: dict[str, AgentReport], name: str, report: AgentReport) -> None:
    if name not in totals:
        totals[name] = AgentReport(
            name, report.spec, 1, 0, 0, 0, {r: 0 for r in LOSS_REASONS}, {k: 0 for k in Behaviour.FIELDS}
        )
    total = totals[name]
    total.games += report.games
    total.decided += report.decided
    total.losses += report.losses
    for reason, count in report.loss_reasons.items():
        total.loss_reasons[reason] += count
    for key, count in report.counts.items():
        total.counts[key] += count
