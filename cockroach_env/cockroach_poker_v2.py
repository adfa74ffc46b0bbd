"""Cockroach Poker, version 2 of the env: ``cockroach_poker_v2.env()``.

PettingZoo's convention (``pettingzoo.classic.tictactoe_v3``): the module's name carries the
env's version, so code written for one contract names it; ``cockroach_env.env`` is the
latest version. The env, its spaces and its version history are documented in
``cockroach_env.env``.

```python
from cockroach_env import cockroach_poker_v2

env = cockroach_poker_v2.env(num_players=4)
env.reset(seed=0)
```
"""

from cockroach_env.engine import LOSS_REASONS
from cockroach_env.env import INFO_DEFAULTS, IllegalActionError, Move, env, raw_env

__all__ = ["env", "raw_env", "Move", "IllegalActionError", "INFO_DEFAULTS", "LOSS_REASONS"]
