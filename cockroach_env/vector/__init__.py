"""Vector environments over the batched engine: one learner seat per game, the other seats played inside."""

from cockroach_env.vector.opponents import GROUP, Opponents, agent_sources, resolve_agent
from cockroach_env.vector.seated import INFO_KEYS, SeatedGames, SeatStep

__all__ = ["GROUP", "INFO_KEYS", "Opponents", "SeatStep", "SeatedGames", "agent_sources", "resolve_agent"]
