"""Evaluation: the arena, its reports and ratings, exact evaluation on a game tree, exploitability,
edges, saved games and the Stable-Baselines3 agent loader.
"""
