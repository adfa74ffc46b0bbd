"""Reference agents and the agent protocol.

>>> import baselines
>>> agent = baselines.make("heuristic", config, seed=0)
>>> action = agent.act(observation)        # {"observation", "action_mask"} -> int

See ``baselines.agent`` for the protocol and ``docs/agents.md`` for a guide.
"""

from baselines.agent import Agent, AgentProtocol
from baselines.counter import CounterAgent
from baselines.heuristic import HeuristicAgent, HeuristicParams
from baselines.registry import make, names, register, unregister
from baselines.scripted import BlufferAgent, HonestAgent, RandomAgent

__all__ = [
    "Agent",
    "AgentProtocol",
    "BlufferAgent",
    "CounterAgent",
    "HeuristicAgent",
    "HeuristicParams",
    "HonestAgent",
    "RandomAgent",
    "make",
    "names",
    "register",
    "unregister",
]
