"""The training algorithms: PPO, NFSP (around PPO), PSRO (+ meta-solvers), CFR (+ its tree solver),
NashConv descent and distillation.
"""
