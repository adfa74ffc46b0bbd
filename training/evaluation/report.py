"""Readable terminal tables of arena results (``MatchResult.table()``, ``cockroach-eval``).

Below the arena and the command line: it reads a result's fields and imports neither.
"""

from __future__ import annotations

from cockroach_env.config import GameConfig
from cockroach_env.engine import LOSS_REASONS


def describe_config(config: GameConfig) -> str:
    """``4-player classic``, with the options that differ from that size's defaults."""
    default = GameConfig(num_players=config.num_players, edition=config.edition)
    changed = [f"{k}={v}" for k, v in config.to_dict().items() if getattr(default, k) != v]
    return f"{config.num_players}-player {config.edition}" + (f" ({', '.join(changed)})" if changed else "")


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def format_result(result) -> str:
    """The readable terminal table of a match or league result (a ``training.evaluation.arena.MatchResult``)."""
    config = result.config
    n = config.num_players
    if result.league is not None:
        head = f"league of {len(result.agents)} agents, {len(result.league['tables'])} tables, {result.games} games"
    else:
        deals = (
            f"{result.games // n} duplicate deals x {n} seat rotations"
            if result.duplicate
            else "fresh deals, seats rotated"
        )
        head = f"{result.games} games ({deals})"
    lines = [f"{describe_config(config)}: {head}, seed {result.seed}, {result.engine} engine, {result.seconds:.1f} s"]
    columns = [
        "agent",
        "seats",
        "games",
        "loss rate",
        "95% CI",
        *LOSS_REASONS,
        "false offer",
        "false pass",
        "call acc",
        "peek rate",
        "cards/game",
    ]
    rows = []
    for a in result.agents:
        lo, hi = a.loss_rate_ci95
        b = a.behaviour
        cards = b["cards_collected_per_game"]
        decided = a.decided > 0  # no game with a loser (every one cut by max_steps): no rate to show
        rows.append(
            [
                a.name,
                str(a.seats),
                str(a.games),
                _pct(a.loss_rate) if decided else "-",
                f"[{_pct(lo)}, {_pct(hi)}]" if decided else "-",
            ]
            + [str(a.loss_reasons.get(r, 0)) for r in LOSS_REASONS]
            + [
                _pct(b["false_offer_rate"]),
                _pct(b["false_pass_rate"]),
                _pct(b["call_accuracy"]),
                _pct(b["peek_rate"]),
                "-" if cards is None else f"{cards:.2f}",
            ]
        )
    lines += _grid(columns, rows)
    lines.append(
        f"parity (an agent as good as the table): {_pct(1 / n)} loss rate"
        + (f"; {result.truncated} game(s) truncated without a loser" if result.truncated else "")
    )
    if result.league is not None:
        lines.append("")
        lines.append("OpenSkill Plackett-Luce ratings (ordinal = mu - 3 sigma):")
        lines += _grid(
            ["rank", "agent", "mu", "sigma", "ordinal", "games"],
            [
                [str(i + 1), r.name, f"{r.mu:.2f}", f"{r.sigma:.2f}", f"{r.ordinal:.2f}", str(r.games)]
                for i, r in enumerate(result.ratings)
            ],
        )
    return "\n".join(lines)


def _grid(columns: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(c), *(len(r[i]) for r in rows)) if rows else len(c) for i, c in enumerate(columns)]

    def fmt(cells: list[str]) -> str:
        return "  ".join(cell.ljust(w) if i == 0 else cell.rjust(w) for i, (cell, w) in enumerate(zip(cells, widths)))

    return [fmt(columns), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows]
