"""Play Cockroach Poker in the browser against the agents, and replay saved games.

``cockroach-play`` (``play.cli``) serves the game (``play.server``: FastAPI and
uvicorn, the extra ``[play]``); ``cockroach-replay`` (``play.replay``) turns a saved
game record into one offline HTML page. This package sits above ``training``: seats
are loaded with ``training.load_agent`` through the arena's agent specs.
"""
